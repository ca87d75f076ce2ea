/*
 * monitor_agent: monitor=y, the JVMTI side of lock profiling.
 *
 *  - contended `synchronized` enters (MonitorContendedEnter/Entered) and
 *    Object.wait (MonitorWait/Waited), timed with CLOCK_MONOTONIC;
 *  - parking on java.util.concurrent locks: a breakpoint on the first
 *    byte code of LockSupport.setBlocker, which park(blocker) calls once to
 *    set the blocker and once to clear it. At the second call the thread's
 *    parkBlocker field still holds the blocker, which names the lock class
 *    (no local-variable access, no class rewriting);
 *  - at each dump: MONITOR TIME, MONITOR DUMP (threads, owners, waiters) and
 *    DEADLOCKS (cycles through monitors and ownable synchronizers).
 */
#ifndef HPROF_MONITOR_AGENT_H
#define HPROF_MONITOR_AGENT_H

#include <jni.h>
#include <jvmti.h>

#include "../output/text_writer.h"

typedef struct monitor_config {
    int    depth;
    int    lineno;
    int    per_thread;
    double cutoff;
} monitor_config;

/* Ask for what monitor=y needs; -1 (with a message) if the JVM lacks it. */
int  monitor_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
void monitor_agent_callbacks(jvmtiEventCallbacks *cb);
int  monitor_agent_enable(jvmtiEnv *jvmti, const monitor_config *config);
/* At VMInit: find LockSupport.setBlocker and set the breakpoint. */
void monitor_agent_vm_init(jvmtiEnv *jvmti, JNIEnv *jni);
/* From ClassPrepare: bind Unsafe.park to the agent's wrapper once the thread
 * runs boot-loader code (see monitor_agent.c). */
/* ThreadEnd, on the ending thread: drop its references to recent park locks. */
void monitor_agent_thread_end(JNIEnv *jni);
void monitor_agent_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);
/* Write MONITOR TIME, MONITOR DUMP and DEADLOCKS. Returns the number of deadlock cycles. */
uint32_t monitor_agent_dump(text_writer *w, JNIEnv *jni);
/* How j.u.c. parks are being timed, for messages. */
const char *monitor_agent_park_method(void);
/* Deadlock cycles now (for the periodic check). */
uint32_t monitor_agent_count_deadlocks(JNIEnv *jni);

#endif
