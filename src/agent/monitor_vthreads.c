/*
 * monitor_vthreads.c: monitor=y's virtual threads (JDK 21 and later). A
 * virtual thread that blocks is unmounted and resumes on whichever carrier
 * is free, so its episodes (contended enters, waits, parks) are kept by
 * Thread.tid (src/monitor/vthread_pending.c), not per OS thread. It does
 * not park through Unsafe.park: breakpoints at the entry and the returns of
 * VirtualThread.park and parkNanos time its parks, or, without breakpoints
 * (after an attach, beside a debugger), its unmount and next mount. See
 * monitor_parts.h.
 */
#include "monitor_parts.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../bci/opcodes.h"
#include "events.h"
#include "jvmti_support.h"

monitor_vthread_state mon_vthreads = { .pending = VT_PENDING_INIT };

/* What only this file reads. */
static struct {
    jfieldID      thread_tid;        /* Thread.tid: the key of their pending episodes */
    jmethodID     park[2];           /* VirtualThread.park(), parkNanos(long) */
    jlocation     exits[2][8];       /* their `return` instructions */
    int           n_exits[2];
    /* Without breakpoints (after an attach, beside a debugger): timed from
     * the unmount of a parking virtual thread to its mount, events of an
     * environment of monitor=y's own (vt_mount_events_on). */
    jvmtiEnv     *mount_env;
    jfieldID      state;             /* VirtualThread.state, */
    jint          parking[2];        /* PARKING and TIMED_PARKING in it (-1: none): a yield that failed */
    atomic_int    callers_looked;    /* looks for the JDK's frames between LockSupport and
                                      * VirtualThread (skip_park_callers); 16: done */
    uint64_t      pinned;            /* parks of virtual threads that stayed on their carrier */
    uint64_t      pinned_ns;
    int           monitors_pin;      /* JDK 21-23 (no VirtualThread.BLOCKING): a virtual thread
                                      * blocked in a monitor never unmounts (vt_monitor_pins) */
    uint64_t      pinned_monitor;    /* contended enters and waits that stayed on their carrier */
    uint64_t      pinned_monitor_ns;
    atomic_ullong unnamed;           /* thread=y: episodes of virtual threads beyond VTHREADS_NAMED_MAX */
} vthreads;

/* The tid of `thread` if it is a virtual thread, else 0 (a platform thread:
 * its episodes stay on one OS thread, in monitor_events.c's and
 * monitor_parks.c's per-thread state). */
uint64_t monitor_vthread_tid(JNIEnv *jni, jthread thread)
{
    if (mon_vthreads.vthread_class == NULL || vthreads.thread_tid == NULL || thread == NULL ||
        !(*jni)->IsInstanceOf(jni, thread, mon_vthreads.vthread_class))
        return 0;
    jlong tid = (*jni)->GetLongField(jni, thread, vthreads.thread_tid);
    return tid > 0 ? (uint64_t)tid : 0;
}

/* Whether a virtual thread about to block entering or waiting on a
 * monitor stays mounted, blocking its carrier (pinned): always before JDK
 * 24; from JDK 24 (JEP 491) only when it cannot unmount, under a native
 * frame (JNI's MonitorEnter in a native method too) or a class initializer,
 * both of which the VM entered from C. A wait's own native (Object.wait0)
 * is on top and does not count. The JVM also pins in rarer cases JVMTI does
 * not show (the JDK's own critical sections, a monitor held from JNI while
 * blocking elsewhere): those stay ordinary rows. The walk is of the whole
 * stack, at an event where the thread blocks. */
static int vt_monitor_pins(vt_what what)
{
    return vthreads.monitors_pin || stack_has_vm_entry_here(what == VT_WAIT) == 1;
}

/* Begin a virtual thread's episode: its stack and lock now, before it blocks.
 * With MONITOR DUMP and deadlock detection on, the episode keeps a weak
 * reference to the thread: virtual threads are not among GetAllThreads',
 * and the pending episodes are how a dump finds those that are blocked. */
void monitor_vthread_begin(JNIEnv *jni, uint64_t tid, vt_what what, jthread thread, jobject lock, block_kind kind)
{
    vt_episode e, replaced;
    memset(&e, 0, sizeof e);
    /* The clock first: the thread is in front of the lock from here, and
     * naming it and walking its stack take time (more on a loaded machine),
     * which the program waits too. */
    e.start = monitor_now_ns();
    e.lock_class = class_serial_of_object(jni, lock);
    e.kind = kind;
    /* thread=y: the rows of the first VTHREADS_NAMED_MAX virtual threads are
     * their own; beyond, they have no thread (vt_unnamed counts them). */
    serial_t who = 0;
    if (mon_common.cfg.per_thread && (who = vthread_serial_bounded(jni, thread)) == 0)
        atomic_fetch_add_explicit(&vthreads.unnamed, 1, memory_order_relaxed);
    e.trace = what == VT_ENTER ? monitor_trace_entering(thread, 1, who, &e.stack)
                               : monitor_trace_of_thread(thread, 1, what == VT_PARK, who, &e.stack);
    /* A park's pinning is known only when it parks (wrapped_park). */
    e.pinned = what != VT_PARK && vt_monitor_pins(what);
    e.ref = mon_common.inspect ? (*jni)->NewWeakGlobalRef(jni, thread) : NULL;
    int rc = vt_pending_begin(&mon_vthreads.pending, tid, what, &e, &replaced);
    if (rc == 1 && replaced.ref)
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)replaced.ref);
    else if (rc < 0 && e.ref)                  /* full: not timed (vt_pending_dropped) */
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)e.ref);
}

/* End it, on whichever carrier the virtual thread runs now. */
void monitor_vthread_end(JNIEnv *jni, uint64_t tid, vt_what what)
{
    vt_episode e;
    if (!vt_pending_end(&mon_vthreads.pending, tid, what, &e))
        return;
    uint64_t blocked = monitor_now_ns() - e.start;
    monitor_table_add(mon_common.table, e.trace, e.stack, e.lock_class, (block_kind)e.kind, blocked);
    if (e.pinned) {                         /* its carrier was blocked too: MONITOR PINNED TIME */
        monitor_table_add(mon_common.table, e.trace, e.stack, e.lock_class, BLOCK_PINNED, blocked);
        if (what != VT_PARK) {              /* parks are counted by wrapped_park */
            __atomic_add_fetch(&vthreads.pinned_monitor, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&vthreads.pinned_monitor_ns, blocked, __ATOMIC_RELAXED);
        }
    }
    if (e.ref)
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)e.ref);
}

/* The frames between a virtual thread's park and LockSupport's (the JDK's
 * JavaLangAccess implementation, System$2.parkVirtualThread; on JDK 21 also
 * jdk.internal.misc.VirtualThreads), looked at once, from the top of the
 * parking thread's stack: their classes join park_skip, so that park traces
 * begin at the caller of LockSupport as platform threads' do. */
static void skip_park_callers(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    /* One thread looks at a time; the others' parks go on without waiting. */
    static pthread_mutex_t looking = PTHREAD_MUTEX_INITIALIZER;
    if (pthread_mutex_trylock(&looking) != 0)
        return;
    serial_t found[PARK_SKIP_MAX];
    int n_found = 0, reached = 0, failed = 0;
    vthreads.callers_looked++;
    for (jint depth = 0; depth < 8 && !reached; depth++) {
        jmethodID method = NULL;
        jlocation at;
        jclass holder = NULL;
        if ((*jvmti)->GetFrameLocation(jvmti, thread, depth, &method, &at) != JVMTI_ERROR_NONE ||
            (*jvmti)->GetMethodDeclaringClass(jvmti, method, &holder) != JVMTI_ERROR_NONE) {
            failed = 1;
            break;
        }
        serial_t c = class_serial_of_klass(holder);
        (*jni)->DeleteLocalRef(jni, holder);
        if (c == mon_parks.lock_support)
            reached = 1;
        int known = 0;
        for (int i = 0; i < mon_parks.n_skip; i++)
            known |= mon_parks.skip[i] == c;
        if (c && !known && !reached && n_found < PARK_SKIP_MAX)
            found[n_found++] = c;
    }
    /* Not reached: this park was not LockSupport's, and its frames say
     * nothing about the others' (looked at again, 16 times at most). */
    if (reached && !failed) {
        vthreads.callers_looked = 16;
        for (int i = 0; i < n_found; i++)
            monitor_parks_skip_class(found[i]);
    }
    pthread_mutex_unlock(&looking);
}

/* A virtual thread's park on blocker begins (at the entry of
 * VirtualThread.park, or at its unmount). */
static void vt_park_begins(jvmtiEnv *jvmti, JNIEnv *jni, uint64_t tid, jthread thread, jobject blocker)
{
    if (vthreads.callers_looked < 16)
        skip_park_callers(jvmti, jni, thread);
    monitor_vthread_begin(jni, tid, VT_PARK, thread, blocker, monitor_park_kind(jni, blocker));
}

/* A virtual thread parks in VirtualThread.park() or parkNanos(long) (it
 * yields its continuation instead of calling Unsafe.park): a breakpoint at
 * their entry begins the episode, with the thread's parkBlocker naming the
 * lock as for platform threads, and breakpoints at their `return`
 * instructions end it, after the thread was mounted again, on whichever
 * carrier. An exception thrown out of park leaves the episode pending until
 * the thread's next park restarts it. */
static void vt_park_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jlocation location)
{
    uint64_t tid = monitor_vthread_tid(jni, thread);
    if (tid == 0)
        return;
    if (location != 0) {
        monitor_vthread_end(jni, tid, VT_PARK);
        return;
    }
    if (!mon_common.running || mon_parks.park_blocker == NULL)
        return;
    jobject blocker = (*jni)->GetObjectField(jni, thread, mon_parks.park_blocker);
    if (blocker == NULL)                    /* sleep, or park() outside any blocker: not a lock */
        return;
    vt_park_begins(jvmti, jni, tid, thread, blocker);
    (*jni)->DeleteLocalRef(jni, blocker);
}

/* Without breakpoints: HotSpot posts VirtualThreadUnmount on the carrier
 * as a virtual thread begins to yield (VirtualThread.yieldContinuation, the
 * thread still mounted, its stack whole) and VirtualThreadMount when it has
 * been mounted again, on whichever carrier. A park on a lock is an unmount
 * with the thread's parkBlocker set (sleeps, Thread.yield and monitors
 * leave it empty): the episode begins. At the mount that follows it ends;
 * or, when the yield failed (the thread is pinned to its carrier: still
 * PARKING), not yet: it now parks its carrier in Unsafe.park
 * (VirtualThread.parkOnCarrierThread), whose wrapper ends it.
 * ap: the events' arguments after the jvmtiEnv (jvmtiExtensionEvent is
 * variadic): JNIEnv *, jthread virtual_thread. */
static void vt_mount_event(va_list ap, int unmount)
{
    JNIEnv *jni = va_arg(ap, JNIEnv *);
    jthread vthread = va_arg(ap, jthread);
    if (jni == NULL || vthread == NULL || (unmount && !mon_common.running))
        return;
    jobject blocker = (*jni)->GetObjectField(jni, vthread, mon_parks.park_blocker);
    if (blocker == NULL)                    /* not a park on a lock, nor back from one */
        return;
    uint64_t tid = monitor_vthread_tid(jni, vthread);
    if (tid && unmount) {
        vt_park_begins(hprof_jvmti, jni, tid, vthread, blocker);
    } else if (tid) {
        jint state = (*jni)->GetIntField(jni, vthread, vthreads.state);
        vt_episode e;
        if (state != vthreads.parking[0] && state != vthreads.parking[1])
            monitor_vthread_end(jni, tid, VT_PARK);
        else if (!mon_parks.park_wrapped && vt_pending_end(&mon_vthreads.pending, tid, VT_PARK, &e) && e.ref)
            (*jni)->DeleteWeakGlobalRef(jni, (jweak)e.ref);   /* pinned, no wrapper to end it: not timed */
    }
    (*jni)->DeleteLocalRef(jni, blocker);
}

static void JNICALL on_vt_unmount(jvmtiEnv *jvmti, ...)
{
    va_list ap;
    va_start(ap, jvmti);
    vt_mount_event(ap, 1);
    va_end(ap);
}

static void JNICALL on_vt_mount(jvmtiEnv *jvmti, ...)
{
    va_list ap;
    va_start(ap, jvmti);
    vt_mount_event(ap, 0);
    va_end(ap);
}

/* The breakpoints on VirtualThread's parks off (monitor=y stopped). */
static void clear_vthread_breakpoints(jvmtiEnv *jvmti)
{
    if (!mon_vthreads.breakpoints)
        return;
    for (int m = 0; m < 2; m++) {
        (*jvmti)->ClearBreakpoint(jvmti, vthreads.park[m], 0);
        for (int i = 0; i < vthreads.n_exits[m]; i++)
            (*jvmti)->ClearBreakpoint(jvmti, vthreads.park[m], vthreads.exits[m][i]);
    }
    mon_vthreads.breakpoints = 0;
    if (!monitor_parks_breakpoints_set())
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_BREAKPOINT, NULL),
                     "SetEventNotificationMode (Breakpoint off)");
}

/* The `return` instructions of a void method, by its byte codes. */
static int void_returns(jvmtiEnv *jvmti, jmethodID method, jlocation *out, int max)
{
    jint len = 0;
    unsigned char *code = NULL;
    if (jvmti_failed((*jvmti)->GetBytecodes(jvmti, method, &len, &code), "GetBytecodes (VirtualThread.park)"))
        return -1;
    uint32_t at[8];
    int n = bytecode_void_returns(code, (uint32_t)len, at, max < 8 ? max : 8);
    jvmti_free(code);
    for (int i = 0; i < n; i++)
        out[i] = (jlocation)at[i];
    return n;
}

/* Without breakpoints, the unmounts and mounts of virtual threads time
 * their parks (on_vt_unmount): 0, or -1 where this JVM does not post them. */
static int vt_mount_events_on(JNIEnv *jni)
{
    if (vthreads.state == NULL) {
        vthreads.state = (*jni)->GetFieldID(jni, mon_vthreads.vthread_class, "state", "I");
        for (int i = 0; i < 2 && vthreads.state; i++) {
            /* VirtualThread's own constants: their values change between JDKs. */
            jfieldID f = (*jni)->GetStaticFieldID(jni, mon_vthreads.vthread_class, i ? "TIMED_PARKING" : "PARKING", "I");
            (*jni)->ExceptionClear(jni);
            vthreads.parking[i] = f ? (*jni)->GetStaticIntField(jni, mon_vthreads.vthread_class, f) : -1;
        }
        (*jni)->ExceptionClear(jni);
        if (vthreads.state == NULL || vthreads.parking[0] < 0) {
            vthreads.state = NULL;
            return -1;
        }
    }
    if (vthreads.mount_env == NULL && (vthreads.mount_env = jvmti_virtual_thread_env(hprof_vm)) == NULL)
        return -1;
    if (jvmti_mount_events_on(vthreads.mount_env, (jvmtiExtensionEvent)on_vt_mount,
                              (jvmtiExtensionEvent)on_vt_unmount) != 0)
        return -1;
    mon_vthreads.mounts = 1;
    return 0;
}

/* Virtual threads (JDK 21 and later): their contended enters and waits are
 * told apart by Thread.tid (vthread_tid), their parks timed by breakpoints
 * on VirtualThread.park and parkNanos (vt_park_breakpoint) or, without
 * breakpoints, by their unmounts and mounts (vt_mount_events_on). Says once
 * what is not timed when something is missing. */
void monitor_vthreads_start(jvmtiEnv *jvmti, JNIEnv *jni)
{
    if (mon_vthreads.vthread_class == NULL) {
        jclass vt = (*jni)->FindClass(jni, "java/lang/VirtualThread");
        if (vt == NULL) {                   /* JDK 17: no virtual threads */
            (*jni)->ExceptionClear(jni);
            return;
        }
        vthreads.thread_tid = thread_tid_field(jni);
        if (monitor_lookup_failed(jni, vthreads.thread_tid, "Thread.tid"))
            vthreads.thread_tid = NULL;
        /* JEP 491's state of a virtual thread unmounted in a monitor (JDK 24). */
        vthreads.monitors_pin = (*jni)->GetStaticFieldID(jni, vt, "BLOCKING", "I") == NULL;
        (*jni)->ExceptionClear(jni);
        vthreads.park[0] = (*jni)->GetMethodID(jni, vt, "park", "()V");
        (*jni)->ExceptionClear(jni);
        vthreads.park[1] = (*jni)->GetMethodID(jni, vt, "parkNanos", "(J)V");
        (*jni)->ExceptionClear(jni);
        serial_t vt_serial = class_serial_of_klass(vt);
        if (vt_serial)
            monitor_parks_skip_class(vt_serial);
        mon_vthreads.vthread_class = vthreads.thread_tid ? (*jni)->NewGlobalRef(jni, vt) : NULL;
        (*jni)->DeleteLocalRef(jni, vt);
        if (mon_vthreads.vthread_class == NULL)
            return;
    }
    if (mon_vthreads.breakpoints || mon_vthreads.mounts || mon_parks.park_blocker == NULL)
        return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    const char *missing = NULL;
    if (mon_common.debugger_loads)
        missing = "breakpoints are left to the debugger";
    else if ((*jvmti)->GetCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_generate_breakpoint_events ||
             !caps.can_get_bytecodes)
        missing = "breakpoints and byte codes are not offered to this agent";
    else if (vthreads.park[0] == NULL || vthreads.park[1] == NULL)
        missing = "VirtualThread.park()/parkNanos(long) not found in this JDK";
    for (int m = 0; m < 2 && !missing; m++) {
        vthreads.n_exits[m] = void_returns(jvmti, vthreads.park[m], vthreads.exits[m], 8);
        if (vthreads.n_exits[m] <= 0)
            missing = "the returns of VirtualThread.park could not be found";
    }
    int set = 0;
    for (int m = 0; m < 2 && !missing; m++) {
        if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, vthreads.park[m], 0), "SetBreakpoint (VirtualThread.park)"))
            missing = "breakpoint refused";
        for (int i = 0; i < vthreads.n_exits[m] && !missing; i++)
            if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, vthreads.park[m], vthreads.exits[m][i]),
                             "SetBreakpoint (VirtualThread.park return)"))
                missing = "breakpoint refused";
        set = 1;
    }
    if (!missing && jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT,
                                                                    NULL), "SetEventNotificationMode (Breakpoint)"))
        missing = "breakpoint events refused";
    if (missing) {
        if (set) {
            mon_vthreads.breakpoints = 1;         /* so that clear_vthread_breakpoints clears what was set */
            clear_vthread_breakpoints(jvmti);
        }
        if (vt_mount_events_on(jni) == 0)
            return;
        fprintf(stderr, "hprof: warning: monitor=y: %s, and this JVM does not tell when a virtual thread "
                "is unmounted: parks of virtual threads on java.util.concurrent locks are not timed\n", missing);
        return;
    }
    mon_vthreads.breakpoints = 1;
}

/* The Breakpoint event is shared with LockSupport's (monitor_parks.c):
 * each looks at its own methods only. */
static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                  jlocation location)
{
    if (mon_vthreads.breakpoints && (method == vthreads.park[0] || method == vthreads.park[1]))
        vt_park_breakpoint(jvmti, jni, thread, location);
}

int monitor_vthreads_subscribe(void)
{
    return events_subscribe(JVMTI_EVENT_BREAKPOINT, EVENT_FN(on_breakpoint));
}

/* A virtual thread that could not yield parked its carrier in Unsafe.park
 * (VirtualThread.parkOnCarrierThread): pinned. The breakpoints on
 * VirtualThread.park time the whole park, this only counts; timed by the
 * unmount instead, the episode ends here. */
void monitor_vthread_parked_carrier(JNIEnv *env, uint64_t tid, uint64_t started_ns)
{
    if (vt_pending_mark_pinned(&mon_vthreads.pending, tid, VT_PARK)) {
        __atomic_add_fetch(&vthreads.pinned, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&vthreads.pinned_ns, monitor_now_ns() - started_ns, __ATOMIC_RELAXED);
        if (mon_vthreads.mounts)
            monitor_vthread_end(env, tid, VT_PARK);
    }
}

void monitor_vthreads_stop(jvmtiEnv *jvmti)
{
    clear_vthread_breakpoints(jvmti);
    if (mon_vthreads.mounts)
        jvmti_mount_events_off(vthreads.mount_env);
    mon_vthreads.mounts = 0;
}

void monitor_vthreads_note(char *line, size_t size)
{
    snprintf(line, size, "hprof: monitor=y: virtual threads: parks %s, %llu of them pinned to "
             "their carrier (%.3f s); %llu contended monitor enters and waits pinned (%.3f s, %s); "
             "%llu episodes not timed (more than %u pending)",
             mon_vthreads.breakpoints ? "timed by breakpoints on VirtualThread.park"
             : mon_vthreads.mounts ? "timed from their unmounts to their mounts" : "not timed",
             (unsigned long long)__atomic_load_n(&vthreads.pinned, __ATOMIC_RELAXED),
             (double)__atomic_load_n(&vthreads.pinned_ns, __ATOMIC_RELAXED) / 1e9,
             (unsigned long long)__atomic_load_n(&vthreads.pinned_monitor, __ATOMIC_RELAXED),
             (double)__atomic_load_n(&vthreads.pinned_monitor_ns, __ATOMIC_RELAXED) / 1e9,
             vthreads.monitors_pin ? "all of them: this JDK never unmounts in a monitor"
                                   : "under a native frame or a class initializer",
             (unsigned long long)vt_pending_dropped(&mon_vthreads.pending), VT_PENDING_MAX / 4 * 3);
}

int monitor_vthreads_unnamed_note(char *line, size_t size)
{
    uint64_t unnamed = atomic_load_explicit(&vthreads.unnamed, memory_order_relaxed);
    if (unnamed == 0)
        return 0;
    snprintf(line, size, "hprof: monitor=y: thread=y: %llu episodes of virtual threads beyond the first "
             "%u named have rows without a thread", (unsigned long long)unnamed, VTHREADS_NAMED_MAX);
    return 1;
}
