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
#include "../options/class_filter.h"

typedef struct tracker_config {
    atomic_int times;          /* cpu=times: calls at method entry and exit */
    atomic_int allocations;    /* heap=sites exact: calls at every allocation */
} tracker_config;

int  tracker_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
int  tracker_agent_subscribe(void);
/* Define the tracker in java.base and bind its natives, the first time
 * (live: loaded by an attach, when HotSpot does not look natives up in
 * this library yet, so they are registered).
 * Returns the tracker class (a global ref) or NULL after saying why on
 * stderr. The collectors then set their own switches in it. */
jclass tracker_agent_define(JNIEnv *jni, int live);
/* What classes should get from now on (-1: leave that part as it is); the
 * loaded classes follow at the next tracker_agent_apply. */
void tracker_agent_want(int times, int allocations);
/* Whether each class that cannot be rewritten or retransformed is said on
 * stderr (by default it is); off, tracker_agent_apply says how many. */
void tracker_agent_say_each(int on);
/* cpu=times' include= and exclude= (options.h), and jdk=none (leave_jdk:
 * no class of the boot or platform loader): the classes whose methods get
 * entry and exit calls from now on (n 0: no such option); the loaded
 * classes follow at the next tracker_agent_apply. */
void tracker_agent_filter(const class_filter *include, const class_filter *exclude, int leave_jdk);
/* The patterns of those that no class loaded so far has matched, as
 * "exclude=com.exmple.*, ..." into buf (cut to size); how many. */
int  tracker_agent_unmatched(char *buf, size_t size);
/* Retransform the loaded classes if what is wanted changed since the last
 * call: instrumented, or restored to their original bytes when nothing is
 * wanted. The orchestrator calls it once after starting or stopping
 * collectors. -1 after a message. */
int  tracker_agent_apply(jvmtiEnv *jvmti, JNIEnv *jni);
/* Classes rewritten (or restored) by the last apply. */
unsigned tracker_agent_rewritten(void);

/* Set while the natives are being bound by calling each once: a native
 * called then must return at once. */
extern atomic_int tracker_linking;
/* The tracker's two classes, left out of traces. */
extern serial_t tracker_classes[2];

/* A JNI call that returned NULL or threw: say what failed, clear it, 1. */
int tracker_jni_failed(JNIEnv *jni, const void *result, const char *what);

#endif
