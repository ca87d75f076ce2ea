/*
 * times_agent: cpu=times. Every class is rewritten as it loads (and those
 * loaded before VMInit are retransformed) so that each method calls the
 * tracker (src/agent/java/java/lang/HprofTracker.java) at entry and exit;
 * the tracker keeps per-thread shadow stacks and counters in Java memory.
 * This file defines the tracker in java.base, gives it its natives, and
 * turns its counters into the CPU TIME section.
 */
#ifndef HPROF_TIMES_AGENT_H
#define HPROF_TIMES_AGENT_H

#include <jni.h>
#include <jvmti.h>

#include "../output/text_writer.h"

typedef struct times_config {
    int depth, lineno, per_thread;
    double cutoff;
} times_config;

int  times_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
void times_agent_callbacks(jvmtiEventCallbacks *cb);
int  times_agent_enable(jvmtiEnv *jvmti, const times_config *config);
/* VMInit: define the tracker, retransform what is loaded, start counting. */
void times_agent_vm_init(jvmtiEnv *jvmti, JNIEnv *jni);
/* ThreadEnd, on the ending thread. */
void times_agent_thread_end(JNIEnv *jni);
/* Write CPU TIME (ms); `final` stops counting afterwards (VMDeath). */
void times_agent_dump(text_writer *w, JNIEnv *jni, int final);

#endif
