/*
 * tracker_agent: byte-code insertion for cpu=times and exact heap=sites.
 * Every class is rewritten as it loads (src/bci), and those loaded before
 * VMInit are retransformed, so that methods call the tracker
 * (src/agent/java/java/lang/HprofTracker.java):
 *   cpu=times    methodEntry/methodExit/methodCount in every method;
 *   heap=sites   objectInit in java.lang.Object.<init>, newArray after every
 *                array allocation.
 * This file defines the tracker in java.base with the boot loader, binds its
 * natives (each collector exports its own: times_agent.c, heap_agent.c) and
 * drives the rewriting. The collectors turn the calls into reports.
 */
#ifndef HPROF_TRACKER_AGENT_H
#define HPROF_TRACKER_AGENT_H

#include <jni.h>
#include <jvmti.h>
#include <stdatomic.h>

#include "../core/tables.h"

typedef struct tracker_config {
    int times;          /* cpu=times: calls at method entry and exit */
    int allocations;    /* heap=sites exact: calls at every allocation */
} tracker_config;

int  tracker_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
void tracker_agent_callbacks(jvmtiEventCallbacks *cb);
int  tracker_agent_enable(jvmtiEnv *jvmti, const tracker_config *config);
/* VMInit: define the tracker, bind its natives, rewrite what is loaded.
 * Returns the tracker class (a global ref) or NULL after saying why on
 * stderr. The collectors then set their own switches in it. */
jclass tracker_agent_vm_init(jvmtiEnv *jvmti, JNIEnv *jni);

/* Set while the natives are being bound by calling each once: a native
 * called then must return at once. */
extern atomic_int tracker_linking;
/* The tracker's two classes, left out of traces. */
extern serial_t tracker_classes[2];

/* A JNI call that returned NULL or threw: say what failed, clear it, 1. */
int tracker_jni_failed(JNIEnv *jni, const void *result, const char *what);

#endif
