/*
 * monitor_parts: what the files of monitor=y share, and nobody else (the
 * collector itself, monitor_collector, is declared in collector.h). One
 * file per concern; each owns its state and is the only one to write it,
 * the others read what they need of it here:
 *
 *   monitor_agent.c     the collector: capabilities, start, stop, tick,
 *                       dump, reset, status (owns mon_common)
 *   monitor_traces.c    the traces of a thread that blocks (placed at the
 *                       monitorenter; parks without LockSupport's frames)
 *   monitor_events.c    contended `synchronized` enters and Object.wait
 *                       (JVMTI monitor events), and the object each thread
 *                       waits on, for MONITOR DUMP
 *   monitor_parks.c     parks on java.util.concurrent locks: Unsafe.park
 *                       wrapped, or breakpoints on LockSupport's setters
 *                       (owns mon_parks)
 *   monitor_vthreads.c  virtual threads: their episodes kept by tid, their
 *                       parks (breakpoints on VirtualThread.park, or their
 *                       unmounts and mounts) (owns mon_vthreads)
 *   monitor_threads.c   a snapshot of the threads and of the lock each one
 *                       waits for, read by the dump and the deadlock search
 *   monitor_dump.c      MONITOR DUMP (threads, monitors, owners, waiters)
 *   monitor_deadlocks.c DEADLOCKS: cycles found, confirmed, written, counted
 *   monitor_output.c    MONITOR TIME, WAIT TIME and PINNED TIME, and the
 *                       lock and wait profiles (pprof=, jfr=, ...)
 */
#ifndef HPROF_MONITOR_PARTS_H
#define HPROF_MONITOR_PARTS_H

#include <jni.h>
#include <jvmti.h>
#include <stdint.h>
#include <time.h>

#include "../core/trace_builder.h"
#include "../monitor/monitor_table.h"
#include "../monitor/vthread_pending.h"
#include "../output/text_writer.h"
#include "../profile/profile.h"
#include "collector.h"
#include "monitor_agent.h"

/* Per-thread timing of the thread's contended enter and wait. */
typedef struct monitor_event_tls {
    uint64_t enter_start;
    serial_t enter_trace, enter_class;
    stack_id enter_stack;
    uint64_t wait_start;
    serial_t wait_trace, wait_class;
    stack_id wait_stack;
} monitor_event_tls;

/* The locks a thread parked on last (threads alternate between a few: with
 * one remembered, 59% of HSQLDB's parks still walked their stack). Small:
 * all of the library's TLS lives in glibc's static TLS surplus. */
#define PARK_LOCKS_KEPT 4

/* One of them: the blocker (a weak reference, so that the cache keeps no lock
 * alive), what JVMTI calls would say of it again (class, kind), and the stack
 * last walked for a park on it. */
typedef struct park_lock {
    jweak    lock;
    serial_t lock_class;
    serial_t trace;
    stack_id stack;                 /* whole stack, when kept */
    uint64_t walked;
    int      kind;                  /* block_kind */
} park_lock;

/* Per-thread timing of the thread's parks (the breakpoints' path: start,
 * trace, stack; the wrapper's: the locks last parked on). */
typedef struct monitor_park_tls {
    uint64_t park_start;
    serial_t park_trace;
    stack_id park_stack;
    park_lock park_locks[PARK_LOCKS_KEPT];   /* wrapper path */
    unsigned  park_locks_next;
} monitor_park_tls;

/* A thread's words for monitor=y, one thread-local object (monitor_events.c
 * holds it): its contended enter and wait (monitor_events.c), its parks
 * (monitor_parks.c). */
typedef struct monitor_thread {
    monitor_event_tls events;
    monitor_park_tls  parks;
} monitor_thread;
monitor_thread *monitor_thread_here(void);

/* ---------------------------------------------------------------- monitor_agent.c */

/* What every part reads: written by the collector at its start and stop. */
typedef struct monitor_common {
    monitor_config cfg;
    trace_builder  traces;
    monitor_table *table;          /* blocked time per trace, made at the first start */
    int            running;
    int            inspect;        /* owned and contended monitors can be asked for */
    int            debugger_loads; /* breakpoints left to a debugger agent (debugger_needs_breakpoints) */
} monitor_common;
extern monitor_common mon_common;

static inline uint64_t monitor_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- monitor_traces.c */

/* Every part that times or lists a blocked thread needs its trace: */

/* trace, or the empty trace when the walk failed (a row never names trace 0). */
serial_t monitor_trace_or_empty(serial_t trace, serial_t thread_serial, stack_id *stack);
/* Where `thread` is now (current = 1: the caller's own stack); park = 1 leaves the park frames out. */
serial_t monitor_trace_of_thread(jthread thread, int current, int park, serial_t thread_serial, stack_id *stack);
/* The same, the thread's serial found as thread=y wants it. */
serial_t monitor_trace_here(jthread thread, int current, int park, stack_id *stack);
/* A thread blocked entering a monitor: placed at the monitorenter or the call. */
serial_t monitor_trace_entering(jthread thread, int current, serial_t thread_serial, stack_id *stack);

/* ---------------------------------------------------------------- monitor_events.c */

/* The key of a virtual thread in the objects threads wait on (a platform thread's is its serial). */
#define WAIT_KEY_OF_VTHREAD(tid) ((uint64_t)(tid) | (UINT64_C(1) << 63))

/* The collector subscribes the four JVMTI monitor events here. 0, or -1. */
int monitor_events_subscribe(void);
/* For MONITOR DUMP: a local ref to the object the thread of `key` waits on in Object.wait, or NULL. */
jobject monitor_waiting_on(JNIEnv *jni, uint64_t key);

/* ---------------------------------------------------------------- monitor_parks.c */

#define PARK_SKIP_MAX 6

/* What the parts read of java.util.concurrent's locks (set up by find_lock_support). */
typedef struct monitor_park_state {
    jfieldID  park_blocker;        /* Thread.parkBlocker */
    jclass    aos_class;           /* AbstractOwnableSynchronizer (global ref) */
    jfieldID  aos_owner;           /* AbstractOwnableSynchronizer.exclusiveOwnerThread */
    jmethodID set_blocker;         /* LockSupport.setBlocker(Thread, Object): breakpoint set */
    jmethodID set_current_blocker; /* LockSupport.setCurrentBlocker(Object): breakpoint set */
    serial_t  lock_support;        /* class serial of LockSupport, whose frames traces skip */
    int       park_wrapped;        /* Unsafe.park is bound to wrapped_park: no breakpoints */
    serial_t  skip[PARK_SKIP_MAX]; /* LockSupport, Unsafe, VirtualThread, and the JDK's */
    int       n_skip;              /* classes between: the frames park traces leave out */
} monitor_park_state;
extern monitor_park_state mon_parks;

/* The collector subscribes; NativeMethodBind from OnLoad on (Unsafe.park is bound before VMInit). */
int monitor_parks_subscribe(const collector_env *env, int first_start);
/* The collector's start: LockSupport, Unsafe.park, virtual threads found, parks timed. */
void monitor_parks_start(jvmtiEnv *jvmti, JNIEnv *jni);
/* The collector's stop: the breakpoints on LockSupport off. */
void monitor_parks_stop(jvmtiEnv *jvmti);
/* thread_end: the thread's remembered park locks dropped. */
void monitor_parks_thread_end(JNIEnv *jni);
/* For the dump's and status' lines: how parks are timed. */
const char *monitor_parks_method(void);
/* Virtual threads' parks too: contention (an ownable synchronizer) or a wait. */
block_kind monitor_park_kind(JNIEnv *jni, jobject blocker);
/* Virtual threads' set-up too: a missing JNI member said once; 1 if missing. */
int monitor_lookup_failed(JNIEnv *jni, const void *found, const char *what);
/* Virtual threads' parks find more frames to skip (skip_park_callers). */
void monitor_parks_skip_class(serial_t klass);
/* Virtual threads' breakpoints share the Breakpoint event: is it still wanted by LockSupport's? */
int monitor_parks_breakpoints_set(void);

/* ---------------------------------------------------------------- monitor_vthreads.c */

/* What the parts read of virtual threads (JDK 21 and later). */
typedef struct monitor_vthread_state {
    jclass vthread_class;          /* java.lang.VirtualThread (global ref), NULL before JDK 21 */
    int    breakpoints;            /* set: their parks are timed by breakpoints on VirtualThread.park */
    int    mounts;                 /* set: their parks are timed from their unmounts to their mounts */
    vt_pending pending;            /* their episodes begun and not ended, by tid */
} monitor_vthread_state;
extern monitor_vthread_state mon_vthreads;

/* Every event handler asks: the tid of `thread` if it is a virtual thread, else 0. */
uint64_t monitor_vthread_tid(JNIEnv *jni, jthread thread);
/* Monitor events and parks of virtual threads begin and end their episodes here. */
void monitor_vthread_begin(JNIEnv *jni, uint64_t tid, vt_what what, jthread thread, jobject lock, block_kind kind);
void monitor_vthread_end(JNIEnv *jni, uint64_t tid, vt_what what);
/* Unsafe.park's wrapper, after a virtual thread parked its carrier (it could not yield). */
void monitor_vthread_parked_carrier(JNIEnv *env, uint64_t tid, uint64_t started_ns);
/* The collector subscribes their breakpoints (the Breakpoint event, shared with LockSupport's). */
int monitor_vthreads_subscribe(void);
/* Called by monitor_parks_start, before Unsafe.park's bind is pending: their classes and parks. */
void monitor_vthreads_start(jvmtiEnv *jvmti, JNIEnv *jni);
/* The collector's stop: their breakpoints and mount events off. */
void monitor_vthreads_stop(jvmtiEnv *jvmti);
/* The dump's verbose line about them, and the line on rows without a thread (0: none). */
void monitor_vthreads_note(char *line, size_t size);
int  monitor_vthreads_unnamed_note(char *line, size_t size);

/* ---------------------------------------------------------------- monitor_dump.c, monitor_deadlocks.c */

/* At a dump: MONITOR DUMP and DEADLOCKS into w; the number of deadlock cycles found. */
uint32_t monitor_write_dump(text_writer *w, JNIEnv *jni, time_t now);
/* deadlock=: how many confirmed cycles there are now. */
uint32_t monitor_count_deadlocks(JNIEnv *jni);

/* ---------------------------------------------------------------- monitor_output.c */

/* At a dump: MONITOR TIME, MONITOR WAIT TIME, MONITOR PINNED TIME into w, profiles kept. */
void monitor_write_times(text_writer *w, time_t now);
/* One thread of a deadlock cycle, as DEADLOCKS hands it to the lock profile. */
typedef struct monitor_deadlocked {
    serial_t thread;               /* its serial */
    serial_t lock_class;           /* the lock it waits for, held by the next thread of the cycle */
    int      parked;               /* an ownable synchronizer (1) or a monitor (0) */
    stack_id stack;                /* its whole stack */
} monitor_deadlocked;
/* DEADLOCKS (monitor_deadlocks.c) adds each cycle it wrote to the lock profile of the dump, for jfr=. */
void monitor_profile_deadlock(const monitor_deadlocked *threads, uint32_t n);
/* The collector's snapshots: the profiles of the last dump's rows (NULL: none). */
profile *monitor_take_lock_profile(void);
profile *monitor_take_wait_profile(void);

#endif
