/*
 * java_code: the agent's code_map (src/cpu/code_map.h) of the JVM's code
 * cache, kept from JVMTI's CompiledMethodLoad / CompiledMethodUnload and
 * DynamicCodeGenerated events, for cpu=samples and wall= to tell how the
 * top Java frames of a sample ran (interpreted, compiled, inlined).
 *
 * Subscribe before events_install; want while a collector runs (the first
 * user makes the map and asks the JVM to describe the code it already has,
 * GenerateEvents); the map stays after the last unwant, only no longer
 * updated, and is emptied again at the next want.
 */
#ifndef HPROF_JAVA_CODE_H
#define HPROF_JAVA_CODE_H

#include <stdint.h>

#include <jvmti.h>

int  java_code_subscribe(void);
/* 1 when this call asked the JVM to describe its compiled code (the first
 * user: one CompiledMethodLoad per compiled method, posted on the calling
 * thread before it returns), 0 when the map was on already, -1 after a
 * message (collectors go on without frame runs). */
int  java_code_want(jvmtiEnv *jvmti);
void java_code_unwant(jvmtiEnv *jvmti);

/* cpu_collector_config.java_code: CODE_* of pc, and a compiled method's jmethodID. */
int java_code_find(uint64_t pc, uint64_t *method, void *context);

#endif
