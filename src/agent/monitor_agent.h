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
 *  - virtual threads (JDK 21+): their episodes kept by Thread.tid, not per
 *    carrier (they resume on another one); their parks timed by breakpoints
 *    on VirtualThread.park/parkNanos (entry and returns);
 *  - at each dump: MONITOR TIME, MONITOR DUMP (threads, owners, waiters) and
 *    DEADLOCKS (cycles through monitors and ownable synchronizers).
 *
 * monitor_agent.c is the collector; the files doing each part are listed
 * in monitor_parts.h.
 */
#ifndef HPROF_MONITOR_AGENT_H
#define HPROF_MONITOR_AGENT_H

#include <jni.h>
#include <jvmti.h>


typedef struct monitor_config {
    int    depth;
    int    lineno;
    int    per_thread;
    double cutoff;
} monitor_config;

/* The collector, monitor_collector, is declared in collector.h. */

#endif
