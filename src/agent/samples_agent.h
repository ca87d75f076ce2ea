/*
 * samples_agent: what cpu=samples shares with wall=, which samples through
 * the same handler (src/sampler/sampler.c).
 */
#ifndef HPROF_SAMPLES_AGENT_H
#define HPROF_SAMPLES_AGENT_H

#include <jni.h>

#include "../cpu/cpu_collector.h"

/* Name every Java thread alive for the sampler's handler (JNIEnv -> thread
 * serial, sampler_name_thread), then say the names are complete. */
void samples_name_threads(JNIEnv *jni);

/* AsyncGetCallTrace names only methods whose jmethodIDs exist, and walks
 * only while ClassLoad events are on: a collector that samples stacks
 * subscribes (once, any of them) and wants method ids while it runs. */
int  samples_subscribe_method_ids(void);
int  samples_want_method_ids(JNIEnv *jni);
void samples_unwant_method_ids(void);

/* Virtual threads (JDK 21+): counts' stacks of a mounted virtual thread end
 * at its entry, not in its carrier's scheduler frames (cpu_collector.h's
 * stack ends). Nothing on JDKs without virtual threads. */
void samples_set_stack_ends(JNIEnv *jni, cpu_collector *counts);

#endif
