/*
 * times_agent: cpu=times. Every class is rewritten as it loads (and those
 * loaded before VMInit are retransformed) so that each method calls the
 * tracker (src/agent/java/java/lang/HprofTracker.java) at entry and exit;
 * the tracker keeps per-thread shadow stacks and counters in Java memory.
 * tracker_agent.c does the rewriting; this file gives the tracker its
 * cpu=times natives and turns its counters into the CPU TIME section.
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

/* Start-up (Agent_OnLoad): the settings of the report. */
void times_agent_enable(const times_config *config);
/* VMInit, once tracker_agent has rewritten the loaded classes: start counting. */
void times_agent_vm_init(JNIEnv *jni, jclass tracker);
/* ThreadEnd, on the ending thread. */
void times_agent_thread_end(JNIEnv *jni);
/* Write CPU TIME (ms); `final` stops counting afterwards (VMDeath). */
void times_agent_dump(text_writer *w, JNIEnv *jni, int final);

#endif
