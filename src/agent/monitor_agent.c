/* monitor_agent.c: see monitor_agent.h. */
#include "monitor_agent.h"
#include "collector.h"
#include "events.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bci/opcodes.h"
#include "../core/stack_profile.h"
#include "../core/idmap.h"
#include "../monitor/deadlock.h"
#include "../monitor/monitor_table.h"
#include "../monitor/vthread_pending.h"
#include "../options/jvm_args.h"
#include "jvmti_support.h"

#define PARK_SKIP_MAX 6

static struct {
    monitor_config cfg;
    trace_builder  traces;
    jmethodID      set_blocker;   /* LockSupport.setBlocker(Thread, Object) */
    jmethodID      set_current_blocker;  /* LockSupport.setCurrentBlocker(Object) */
    jfieldID       park_blocker;  /* Thread.parkBlocker */
    jclass         aos_class;     /* AbstractOwnableSynchronizer (global ref) */
    jfieldID       aos_owner;     /* AbstractOwnableSynchronizer.exclusiveOwnerThread */
    serial_t       lock_support;  /* class serial of LockSupport, whose frames traces skip */
    serial_t       unsafe_class;  /* class serial of jdk.internal.misc.Unsafe, skipped too */
    int            park_wrapped;  /* Unsafe.park is bound to wrapped_park: no breakpoints */
    jmethodID      unsafe_park;   /* Unsafe.park(boolean, long), once found among the early binds */
    int            wrap_pending;  /* found: bind it at the next ClassPrepare in boot code */
    int            running;
    int            inspect;       /* owned and contended monitors can be asked for */
    int            binds_wanted;  /* NativeMethodBind wanted (from OnLoad to VMInit) */
    int            made;          /* first start done */
    int            breakpoints;   /* Breakpoint events wanted */
    int            debugger_loads;/* breakpoints left to a debugger agent (debugger_needs_breakpoints) */
    int            deadlock_ms;   /* deadlock=: the tick's period */
    uint32_t       reported;      /* deadlock cycles in the last dump */
    serial_t       park_skip[PARK_SKIP_MAX]; /* LockSupport, Unsafe, VirtualThread, and the */
    int            n_park_skip;   /* JDK's classes between: the frames park traces leave out */
    /* Virtual threads (JDK 21 and later; see README "How monitor=y works"). */
    jclass         vthread_class; /* java.lang.VirtualThread (global ref), NULL before JDK 21 */
    jfieldID       thread_tid;    /* Thread.tid: the key of their pending episodes */
    jmethodID      vt_park[2];    /* VirtualThread.park(), parkNanos(long) */
    jlocation      vt_exits[2][8];/* their `return` instructions */
    int            vt_n_exits[2];
    int            vt_breakpoints;/* set: virtual threads' parks are timed by them */
    /* Without breakpoints (after an attach, beside a debugger): timed from
     * the unmount of a parking virtual thread to its mount, events of an
     * environment of monitor=y's own (vt_mount_events_on). */
    jvmtiEnv      *vt_mount_env;
    int            vt_mounts;     /* set: virtual threads' parks are timed by them */
    jfieldID       vt_state;      /* VirtualThread.state, */
    jint           vt_parking[2]; /* PARKING and TIMED_PARKING in it (-1: none): a yield that failed */
    atomic_int     vt_callers_looked; /* looks for the JDK's frames between LockSupport and
                                       * VirtualThread (skip_park_callers); 16: done */
    uint64_t       vt_pinned;     /* parks of virtual threads that stayed on their carrier */
    uint64_t       vt_pinned_ns;
    int            vt_monitors_pin; /* JDK 21-23 (no VirtualThread.BLOCKING): a virtual thread
                                     * blocked in a monitor never unmounts (vt_monitor_pins) */
    uint64_t       vt_pinned_monitor;    /* contended enters and waits that stayed on their carrier */
    uint64_t       vt_pinned_monitor_ns;
    atomic_ullong  vt_unnamed;    /* thread=y: episodes of virtual threads beyond VTHREADS_NAMED_MAX */
} mon;

/* Unsafe.park(boolean, long) as the JVM implements it, and the binds seen
 * before VMInit. The JDK binds Unsafe's natives in the primordial phase, when
 * JVMTI cannot name a method yet; the binds are kept (id, address) and named
 * at VMInit. */
typedef void (JNICALL *park_fn)(JNIEnv *env, jobject unsafe, jboolean absolute, jlong time);
static park_fn original_park;

#define MAX_EARLY_BINDS 4096
static struct { jmethodID method; void *address; } early_binds[MAX_EARLY_BINDS];
static uint32_t n_early_binds;
static pthread_mutex_t binds_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Per-thread timing: every monitor event is delivered on the thread concerned. */
typedef struct monitor_tls {
    uint64_t enter_start;
    serial_t enter_trace, enter_class;
    stack_id enter_stack;
    uint64_t wait_start;
    serial_t wait_trace, wait_class;
    stack_id wait_stack;
    uint64_t park_start;
    serial_t park_trace;
    stack_id park_stack;
    park_lock park_locks[PARK_LOCKS_KEPT];   /* wrapper path */
    unsigned  park_locks_next;
} monitor_tls;

/* A thread's parks on the same lock object within this time share the stack
 * walked for the first of them: the walk is most of the wrapper's cost, and
 * a thread that parks again and again on one lock does so from the same
 * place. Park times and counts stay exact; only which trace they go to is
 * sampled. HSQLDB (bench/run db, 42k parks/s), share of the JVM's CPU
 * samples spent in the agent: a JVMTI walk each 1 ms 6.0%, AsyncGetCallTrace
 * each 1 ms 3.4% (walks 1.6%), each 4 ms 2.4% (walks 0.7%): perf
 * record -F 2000, samples with an agent frame outside Unsafe_Park. */
#define PARK_STACK_REUSE_NS 4000000u

static __thread monitor_tls mtls;

/* The object each thread is waiting on in Object.wait: MONITOR DUMP needs
 * it for monitors nobody owns, and from JDK 23 on
 * GetCurrentContendedMonitor no longer returns it. Global refs, set at
 * MonitorWait, dropped at MonitorWaited; a map from the thread's key to a
 * slot of `refs`, so it holds the threads waiting now, not every thread
 * ever seen (threads come and go: an array by serial grew by 8 bytes a
 * thread). A platform thread's key is its serial; a virtual thread's is
 * its tid with the top bit set (most have no serial while they wait: a
 * dump names those it lists). At most WAIT_OBJECTS_MAX threads: beyond,
 * a dump lacks what the others wait on. */
#define WAIT_KEY_OF_VTHREAD(tid) ((uint64_t)(tid) | (UINT64_C(1) << 63))
#define WAIT_OBJECTS_MAX (1u << 18)
static struct {
    pthread_mutex_t lock;
    idmap           slot_of;       /* key -> 1 + index in refs */
    jobject        *refs;
    uint32_t       *free;          /* unused indexes of refs */
    uint32_t        n, cap, nfree;
} wait_objects = { PTHREAD_MUTEX_INITIALIZER, {NULL, NULL, 0, 0}, NULL, NULL, 0, 0, 0 };

/* A free index of wait_objects.refs, or UINT32_MAX (out of memory); lock held. */
static uint32_t wait_objects_take_slot(void)
{
    if (wait_objects.nfree > 0)
        return wait_objects.free[--wait_objects.nfree];
    if (wait_objects.n == WAIT_OBJECTS_MAX)
        return UINT32_MAX;
    if (wait_objects.n == wait_objects.cap) {
        uint32_t cap = wait_objects.cap ? 2 * wait_objects.cap : 64;
        jobject *refs = realloc(wait_objects.refs, cap * sizeof *refs);
        if (refs == NULL)
            return UINT32_MAX;
        wait_objects.refs = refs;
        uint32_t *free_list = realloc(wait_objects.free, cap * sizeof *free_list);
        if (free_list == NULL)
            return UINT32_MAX;
        wait_objects.free = free_list;
        wait_objects.cap = cap;
    }
    return wait_objects.n++;
}

static void set_waiting_on(JNIEnv *jni, uint64_t key, jobject object)
{
    if (key < THREAD_SERIAL_BASE)
        return;                 /* an unnamed thread (the agent's own) */
    jobject ref = object ? (*jni)->NewGlobalRef(jni, object) : NULL;
    jobject old = NULL;
    pthread_mutex_lock(&wait_objects.lock);
    uint32_t slot = idmap_get(&wait_objects.slot_of, key);
    if (slot) {
        old = wait_objects.refs[slot - 1];
        if (ref) {
            wait_objects.refs[slot - 1] = ref;
            ref = NULL;
        } else {
            idmap_remove(&wait_objects.slot_of, key);
            wait_objects.free[wait_objects.nfree++] = slot - 1;
        }
    } else if (ref) {
        uint32_t i = wait_objects_take_slot();
        if (i != UINT32_MAX && idmap_put(&wait_objects.slot_of, key, i + 1) == 0) {
            wait_objects.refs[i] = ref;
            ref = NULL;
        } else if (i != UINT32_MAX) {
            wait_objects.free[wait_objects.nfree++] = i;
        }
    }
    pthread_mutex_unlock(&wait_objects.lock);
    if (old)
        (*jni)->DeleteGlobalRef(jni, old);
    if (ref)
        (*jni)->DeleteGlobalRef(jni, ref);     /* no room to keep it */
}

/* A local ref to the object the thread of `key` waits on, or NULL. */
static jobject get_waiting_on(JNIEnv *jni, uint64_t key)
{
    jobject local = NULL;
    pthread_mutex_lock(&wait_objects.lock);
    uint32_t slot = idmap_get(&wait_objects.slot_of, key);
    if (slot)
        local = (*jni)->NewLocalRef(jni, wait_objects.refs[slot - 1]);
    pthread_mutex_unlock(&wait_objects.lock);
    return local;
}

/* The kind of a park on blocker (see block_kind): on an
 * AbstractOwnableSynchronizer, contention; on anything else, a wait. */
static block_kind park_kind(JNIEnv *jni, jobject blocker)
{
    return mon.aos_class && (*jni)->IsInstanceOf(jni, blocker, mon.aos_class) ? BLOCK_PARK : BLOCK_PARK_WAIT;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace where `thread` is now, and its whole stack into *stack when
 * kept (stack may be NULL). Event callbacks run on the thread concerned
 * (current = 1: JVMTI walks the caller's own stack, no handshake); parks
 * leave LockSupport's and Unsafe's frames out. */
/* A walk that failed (GetStackTrace refuses a thread the VM is tearing down,
 * with WRONG_PHASE on JDK 25) still gets a real TRACE: the empty one, as
 * HPROF's "<empty>". A row must never name trace 0, which no file defines. */
static serial_t trace_or_empty(serial_t trace, serial_t thread_serial, stack_id *stack)
{
    return trace ? trace : trace_build(&mon.traces, thread_serial, NULL, 0, stack);
}

static serial_t trace_of_thread(jthread thread, int current, int park, serial_t thread_serial, stack_id *stack)
{
    serial_t trace = stack_trace_of(&mon.traces, current ? NULL : thread, park ? mon.park_skip : NULL,
                                    park ? mon.n_park_skip : 0, thread_serial, stack);
    return trace_or_empty(trace, thread_serial, stack);
}

static serial_t trace_here(jthread thread, int current, int park, stack_id *stack)
{
    serial_t thread_serial = !mon.cfg.per_thread ? 0 : current ? thread_serial_of_self(thread)
                                                               : thread_serial_of(thread);
    return trace_of_thread(thread, current, park, thread_serial, stack);
}

/* The same for a thread blocked entering a monitor: placed at the
 * monitorenter, or at the call of a synchronized method
 * (stack_trace_entering). */
static serial_t trace_entering(jthread thread, int current, serial_t thread_serial, stack_id *stack)
{
    return trace_or_empty(stack_trace_entering(&mon.traces, current ? NULL : thread, thread_serial, stack),
                          thread_serial, stack);
}

/* The tid of `thread` if it is a virtual thread, else 0 (a platform thread:
 * its episodes stay on one OS thread, in mtls). */
static uint64_t vthread_tid(JNIEnv *jni, jthread thread)
{
    if (mon.vthread_class == NULL || mon.thread_tid == NULL || thread == NULL ||
        !(*jni)->IsInstanceOf(jni, thread, mon.vthread_class))
        return 0;
    jlong tid = (*jni)->GetLongField(jni, thread, mon.thread_tid);
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
    return mon.vt_monitors_pin || stack_has_vm_entry_here(what == VT_WAIT) == 1;
}

/* Begin a virtual thread's episode: its stack and lock now, before it blocks.
 * With MONITOR DUMP and deadlock detection on, the episode keeps a weak
 * reference to the thread: virtual threads are not among GetAllThreads',
 * and the pending episodes are how a dump finds those that are blocked. */
static void vt_begin(JNIEnv *jni, uint64_t tid, vt_what what, jthread thread, jobject lock, block_kind kind)
{
    vt_episode e, replaced;
    memset(&e, 0, sizeof e);
    /* The clock first: the thread is in front of the lock from here, and
     * naming it and walking its stack take time (more on a loaded machine),
     * which the program waits too. */
    e.start = now_ns();
    e.lock_class = class_serial_of_object(jni, lock);
    e.kind = kind;
    /* thread=y: the rows of the first VTHREADS_NAMED_MAX virtual threads are
     * their own; beyond, they have no thread (vt_unnamed counts them). */
    serial_t who = 0;
    if (mon.cfg.per_thread && (who = vthread_serial_bounded(jni, thread)) == 0)
        atomic_fetch_add_explicit(&mon.vt_unnamed, 1, memory_order_relaxed);
    e.trace = what == VT_ENTER ? trace_entering(thread, 1, who, &e.stack)
                               : trace_of_thread(thread, 1, what == VT_PARK, who, &e.stack);
    /* A park's pinning is known only when it parks (wrapped_park). */
    e.pinned = what != VT_PARK && vt_monitor_pins(what);
    e.ref = mon.inspect ? (*jni)->NewWeakGlobalRef(jni, thread) : NULL;
    int rc = vt_pending_begin(tid, what, &e, &replaced);
    if (rc == 1 && replaced.ref)
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)replaced.ref);
    else if (rc < 0 && e.ref)                  /* full: not timed (vt_pending_dropped) */
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)e.ref);
}

/* End it, on whichever carrier the virtual thread runs now. */
static void vt_end(JNIEnv *jni, uint64_t tid, vt_what what)
{
    vt_episode e;
    if (!vt_pending_end(tid, what, &e))
        return;
    uint64_t blocked = now_ns() - e.start;
    monitor_table_add(e.trace, e.stack, e.lock_class, (block_kind)e.kind, blocked);
    if (e.pinned) {                         /* its carrier was blocked too: MONITOR PINNED TIME */
        monitor_table_add(e.trace, e.stack, e.lock_class, BLOCK_PINNED, blocked);
        if (what != VT_PARK) {              /* parks are counted by wrapped_park */
            __atomic_add_fetch(&mon.vt_pinned_monitor, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&mon.vt_pinned_monitor_ns, blocked, __ATOMIC_RELAXED);
        }
    }
    if (e.ref)
        (*jni)->DeleteWeakGlobalRef(jni, (jweak)e.ref);
}

/* ---------------------------------------------------------------- events */

/* The stack and class are taken before the thread blocks, not after: work
 * done after the lock is acquired would lengthen everyone's wait. */
static void JNICALL on_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
    (void)jvmti;
    if (!mon.running)
        return;
    uint64_t tid = vthread_tid(jni, thread);
    if (tid) {
        vt_begin(jni, tid, VT_ENTER, thread, object, BLOCK_ENTER);
        return;
    }
    uint64_t start = now_ns();      /* first, as in vt_begin */
    mtls.enter_class = class_serial_of_object(jni, object);
    mtls.enter_stack = 0;
    mtls.enter_trace = trace_entering(thread, 1, !mon.cfg.per_thread ? 0 : thread_serial_of_self(thread),
                                      &mtls.enter_stack);
    mtls.enter_start = start;
}

static void JNICALL on_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
    (void)jvmti; (void)object;
    uint64_t tid = vthread_tid(jni, thread);
    if (tid) {
        vt_end(jni, tid, VT_ENTER);
        return;
    }
    if (mtls.enter_start) {
        monitor_table_add(mtls.enter_trace, mtls.enter_stack, mtls.enter_class, BLOCK_ENTER,
                          now_ns() - mtls.enter_start);
        mtls.enter_start = 0;
    }
}

static void JNICALL on_wait(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jlong timeout)
{
    (void)jvmti;
    (void)timeout;
    if (!mon.running)
        return;
    uint64_t tid = vthread_tid(jni, thread);
    if (tid) {
        vt_begin(jni, tid, VT_WAIT, thread, object, BLOCK_WAIT);
        if (mon.inspect)
            set_waiting_on(jni, WAIT_KEY_OF_VTHREAD(tid), object);
        return;
    }
    mtls.wait_class = class_serial_of_object(jni, object);
    mtls.wait_stack = 0;
    mtls.wait_trace = trace_here(thread, 1, 0, &mtls.wait_stack);
    set_waiting_on(jni, thread_serial_of(thread), object);
    mtls.wait_start = now_ns();
}

static void JNICALL on_waited(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                              jboolean timed_out)
{
    (void)jvmti; (void)object; (void)timed_out;
    uint64_t tid = vthread_tid(jni, thread);
    if (tid) {
        vt_end(jni, tid, VT_WAIT);
        if (mon.inspect)
            set_waiting_on(jni, WAIT_KEY_OF_VTHREAD(tid), NULL);
        return;
    }
    set_waiting_on(jni, thread_serial_of(thread), NULL);
    if (mtls.wait_start) {
        monitor_table_add(mtls.wait_trace, mtls.wait_stack, mtls.wait_class, BLOCK_WAIT,
                          now_ns() - mtls.wait_start);
        mtls.wait_start = 0;
    }
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
    mon.vt_callers_looked++;
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
        if (c == mon.lock_support)
            reached = 1;
        int known = 0;
        for (int i = 0; i < mon.n_park_skip; i++)
            known |= mon.park_skip[i] == c;
        if (c && !known && !reached && n_found < PARK_SKIP_MAX)
            found[n_found++] = c;
    }
    /* Not reached: this park was not LockSupport's, and its frames say
     * nothing about the others' (looked at again, 16 times at most). */
    if (reached && !failed) {
        mon.vt_callers_looked = 16;
        for (int i = 0; i < n_found && mon.n_park_skip < PARK_SKIP_MAX; i++) {
            mon.park_skip[mon.n_park_skip] = found[i];
            __atomic_store_n(&mon.n_park_skip, mon.n_park_skip + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&looking);
}

/* A virtual thread's park on blocker begins (at the entry of
 * VirtualThread.park, or at its unmount). */
static void vt_park_begins(jvmtiEnv *jvmti, JNIEnv *jni, uint64_t tid, jthread thread, jobject blocker)
{
    if (mon.vt_callers_looked < 16)
        skip_park_callers(jvmti, jni, thread);
    vt_begin(jni, tid, VT_PARK, thread, blocker, park_kind(jni, blocker));
}

/* LockSupport.park(blocker) calls setBlocker(t, blocker), parks, then calls
 * setBlocker(t, null); Condition.await brackets its wait the same way with
 * setCurrentBlocker(this) ... setCurrentBlocker(null) around plain park()s.
 * At a breakpoint on either setter's entry, an empty parkBlocker means
 * "about to block", a set one means "done blocking on it". */
/* A virtual thread parks in VirtualThread.park() or parkNanos(long) (it
 * yields its continuation instead of calling Unsafe.park): a breakpoint at
 * their entry begins the episode, with the thread's parkBlocker naming the
 * lock as for platform threads, and breakpoints at their `return`
 * instructions end it, after the thread was mounted again, on whichever
 * carrier. An exception thrown out of park leaves the episode pending until
 * the thread's next park restarts it. */
static void vt_park_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jlocation location)
{
    uint64_t tid = vthread_tid(jni, thread);
    if (tid == 0)
        return;
    if (location != 0) {
        vt_end(jni, tid, VT_PARK);
        return;
    }
    if (!mon.running || mon.park_blocker == NULL)
        return;
    jobject blocker = (*jni)->GetObjectField(jni, thread, mon.park_blocker);
    if (blocker == NULL)                    /* sleep, or park() outside any blocker: not a lock */
        return;
    vt_park_begins(jvmti, jni, tid, thread, blocker);
    (*jni)->DeleteLocalRef(jni, blocker);
}

static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                  jlocation location)
{
    if (mon.vt_breakpoints && (method == mon.vt_park[0] || method == mon.vt_park[1])) {
        vt_park_breakpoint(jvmti, jni, thread, location);
        return;
    }
    if ((method != mon.set_blocker && method != mon.set_current_blocker) || mon.park_blocker == NULL ||
        mon.park_wrapped || !mon.running)
        return;
    /* A virtual thread's park: timed by the breakpoints on VirtualThread
     * (this thread may resume on another carrier, mtls cannot time it). */
    if (mon.vthread_class && (*jni)->IsInstanceOf(jni, thread, mon.vthread_class))
        return;
    jobject blocker = (*jni)->GetObjectField(jni, thread, mon.park_blocker);
    if (blocker == NULL) {
        /* About to block: the stack now, so that nothing is added to the
         * hand-over of the lock after the thread is woken. */
        mtls.park_stack = 0;
        mtls.park_trace = trace_here(thread, 1, 1, &mtls.park_stack);
        mtls.park_start = now_ns();
        return;
    }
    if (mtls.park_start) {
        uint64_t parked = now_ns() - mtls.park_start;
        mtls.park_start = 0;
        monitor_table_add(mtls.park_trace, mtls.park_stack, class_serial_of_object(jni, blocker),
                          park_kind(jni, blocker), parked);
    }
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
    if (jni == NULL || vthread == NULL || (unmount && !mon.running))
        return;
    jobject blocker = (*jni)->GetObjectField(jni, vthread, mon.park_blocker);
    if (blocker == NULL)                    /* not a park on a lock, nor back from one */
        return;
    uint64_t tid = vthread_tid(jni, vthread);
    if (tid && unmount) {
        vt_park_begins(hprof_jvmti, jni, tid, vthread, blocker);
    } else if (tid) {
        jint state = (*jni)->GetIntField(jni, vthread, mon.vt_state);
        vt_episode e;
        if (state != mon.vt_parking[0] && state != mon.vt_parking[1])
            vt_end(jni, tid, VT_PARK);
        else if (!mon.park_wrapped && vt_pending_end(tid, VT_PARK, &e) && e.ref)
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

/* Unsafe.park, wrapped: every LockSupport.park* and Condition.await ends
 * here with the thread's parkBlocker already set (setBlocker or
 * setCurrentBlocker ran before). Timing the park itself costs two clock reads
 * and a stack walk, against two JVMTI breakpoint events (which keep
 * setBlocker interpreted) on the fallback path. */
static void JNICALL wrapped_park(JNIEnv *env, jobject unsafe, jboolean absolute, jlong time)
{
    jthread thread = NULL;
    jobject blocker = NULL;
    if (!mon.running) {                    /* stopped: the bind stays, the timing goes */
        original_park(env, unsafe, absolute, time);
        return;
    }
    if ((*hprof_jvmti)->GetCurrentThread(hprof_jvmti, &thread) == JVMTI_ERROR_NONE && thread) {
        uint64_t tid = mon.vt_breakpoints || mon.vt_mounts ? vthread_tid(env, thread) : 0;
        if (tid) {
            /* A virtual thread that could not yield parks its carrier
             * (VirtualThread.parkOnCarrierThread): pinned. The breakpoints
             * on VirtualThread.park time the whole park, this only counts;
             * timed by the unmount instead, the episode ends here. */
            uint64_t t0 = now_ns();
            original_park(env, unsafe, absolute, time);
            if (vt_pending_mark_pinned(tid, VT_PARK)) {
                __atomic_add_fetch(&mon.vt_pinned, 1, __ATOMIC_RELAXED);
                __atomic_add_fetch(&mon.vt_pinned_ns, now_ns() - t0, __ATOMIC_RELAXED);
                if (mon.vt_mounts)
                    vt_end(env, tid, VT_PARK);
            }
            (*env)->DeleteLocalRef(env, thread);
            return;
        }
        blocker = (*env)->GetObjectField(env, thread, mon.park_blocker);
    }
    if (blocker == NULL) {                 /* park() outside any blocker: not a lock */
        original_park(env, unsafe, absolute, time);
        if (thread)
            (*env)->DeleteLocalRef(env, thread);
        return;
    }
    /* Everything about the lock before blocking, so that nothing slows the
     * hand-over after wake-up: one IsSameObject when it is a recent one. */
    park_lock *e = NULL;
    for (int i = 0; i < PARK_LOCKS_KEPT && !e; i++)
        if (mtls.park_locks[i].lock && (*env)->IsSameObject(env, blocker, mtls.park_locks[i].lock))
            e = &mtls.park_locks[i];
    if (e == NULL) {
        e = &mtls.park_locks[mtls.park_locks_next++ % PARK_LOCKS_KEPT];
        if (e->lock)
            (*env)->DeleteWeakGlobalRef(env, e->lock);
        e->lock = (*env)->NewWeakGlobalRef(env, blocker);   /* NULL: not remembered, still timed */
        e->lock_class = class_serial_of_object(env, blocker);
        e->kind = park_kind(env, blocker);
        e->trace = 0;
        e->stack = 0;
    }
    uint64_t start = now_ns();
    if (e->trace == 0 || start - e->walked >= PARK_STACK_REUSE_NS) {
        /* AsyncGetCallTrace from this native, and the thread's own cache of
         * park stacks: 64 slots, parks come from a few places. */
        serial_t thread_serial = mon.cfg.per_thread ? thread_serial_of(NULL) : 0;
        int cached_frames = mon.traces.full_stacks ? STACK_MAX_FRAMES : mon.traces.depth;
        e->trace = stack_trace_here_skipping(env, &mon.traces,
                                             thread_trace_cache(TRACE_CACHE_MONITOR, 6, cached_frames),
                                             mon.park_skip, mon.n_park_skip, thread_serial, &e->stack, NULL);
        e->trace = trace_or_empty(e->trace, thread_serial, &e->stack);
        e->walked = start;
        start = now_ns();
    }
    serial_t trace = e->trace, lock_class = e->lock_class;
    stack_id stack = e->stack;
    block_kind kind = (block_kind)e->kind;
    original_park(env, unsafe, absolute, time);
    uint64_t parked = now_ns() - start;
    if (!(*env)->ExceptionCheck(env))
        monitor_table_add(trace, stack, lock_class, kind, parked);
    (*env)->DeleteLocalRef(env, blocker);
    (*env)->DeleteLocalRef(env, thread);
}

static void thread_end(JNIEnv *jni, jthread thread)
{
    (void)thread;
    for (int i = 0; i < PARK_LOCKS_KEPT; i++)
        if (mtls.park_locks[i].lock) {
            (*jni)->DeleteWeakGlobalRef(jni, mtls.park_locks[i].lock);
            mtls.park_locks[i].lock = NULL;
        }
}

static void JNICALL on_native_bind(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                   void *address, void **new_address_ptr)
{
    (void)jvmti; (void)jni; (void)thread; (void)new_address_ptr;
    pthread_mutex_lock(&binds_lock);
    if (n_early_binds < MAX_EARLY_BINDS) {
        early_binds[n_early_binds].method = method;
        early_binds[n_early_binds].address = address;
        n_early_binds++;
    }
    pthread_mutex_unlock(&binds_lock);
}

/* At VMInit: find Unsafe.park's implementation among the early binds.
 * Returns 1 if found (the bind itself waits for monitor_agent_class_prepare). */
static int find_unsafe_park(jvmtiEnv *jvmti, JNIEnv *jni)
{
    if (mon.binds_wanted) {
        events_unwant(jvmti, JVMTI_EVENT_NATIVE_METHOD_BIND);
        mon.binds_wanted = 0;
    }
    jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
    if (unsafe == NULL) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    mon.unsafe_class = class_serial_of_klass(unsafe);
    jmethodID park = (*jni)->GetMethodID(jni, unsafe, "park", "(ZJ)V");
    (*jni)->ExceptionClear(jni);
    (*jni)->DeleteLocalRef(jni, unsafe);
    void *address = NULL;
    pthread_mutex_lock(&binds_lock);
    for (uint32_t i = 0; park && i < n_early_binds; i++)
        if (early_binds[i].method == park)
            address = early_binds[i].address;   /* the last bind wins, as in the JVM */
    pthread_mutex_unlock(&binds_lock);
    if (address == NULL)
        return 0;
    original_park = (park_fn)address;
    mon.unsafe_park = park;
    return 1;
}

static int lookup_failed(JNIEnv *jni, const void *found, const char *what);

/* The breakpoints on LockSupport's setters off (the wrapper times the parks
 * instead, or monitor=y stopped). */
static void clear_park_breakpoints(jvmtiEnv *jvmti)
{
    if (mon.set_blocker)
        (*jvmti)->ClearBreakpoint(jvmti, mon.set_blocker, 0);
    if (mon.set_current_blocker)
        (*jvmti)->ClearBreakpoint(jvmti, mon.set_current_blocker, 0);
    if (!mon.vt_breakpoints)                /* still wanted for virtual threads' parks */
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_BREAKPOINT, NULL),
                     "SetEventNotificationMode (Breakpoint off)");
}

/* The breakpoints on VirtualThread's parks off (monitor=y stopped). */
static void clear_vthread_breakpoints(jvmtiEnv *jvmti)
{
    if (!mon.vt_breakpoints)
        return;
    for (int m = 0; m < 2; m++) {
        (*jvmti)->ClearBreakpoint(jvmti, mon.vt_park[m], 0);
        for (int i = 0; i < mon.vt_n_exits[m]; i++)
            (*jvmti)->ClearBreakpoint(jvmti, mon.vt_park[m], mon.vt_exits[m][i]);
    }
    mon.vt_breakpoints = 0;
    if (mon.park_wrapped || !(mon.set_blocker || mon.set_current_blocker))
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
    if (mon.vt_state == NULL) {
        mon.vt_state = (*jni)->GetFieldID(jni, mon.vthread_class, "state", "I");
        for (int i = 0; i < 2 && mon.vt_state; i++) {
            /* VirtualThread's own constants: their values change between JDKs. */
            jfieldID f = (*jni)->GetStaticFieldID(jni, mon.vthread_class, i ? "TIMED_PARKING" : "PARKING", "I");
            (*jni)->ExceptionClear(jni);
            mon.vt_parking[i] = f ? (*jni)->GetStaticIntField(jni, mon.vthread_class, f) : -1;
        }
        (*jni)->ExceptionClear(jni);
        if (mon.vt_state == NULL || mon.vt_parking[0] < 0) {
            mon.vt_state = NULL;
            return -1;
        }
    }
    if (mon.vt_mount_env == NULL && (mon.vt_mount_env = jvmti_virtual_thread_env(hprof_vm)) == NULL)
        return -1;
    if (jvmti_mount_events_on(mon.vt_mount_env, (jvmtiExtensionEvent)on_vt_mount,
                              (jvmtiExtensionEvent)on_vt_unmount) != 0)
        return -1;
    mon.vt_mounts = 1;
    return 0;
}

/* Virtual threads (JDK 21 and later): their contended enters and waits are
 * told apart by Thread.tid (vthread_tid), their parks timed by breakpoints
 * on VirtualThread.park and parkNanos (vt_park_breakpoint) or, without
 * breakpoints, by their unmounts and mounts (vt_mount_events_on). Says once
 * what is not timed when something is missing. */
static void find_virtual_threads(jvmtiEnv *jvmti, JNIEnv *jni)
{
    if (mon.vthread_class == NULL) {
        jclass vt = (*jni)->FindClass(jni, "java/lang/VirtualThread");
        if (vt == NULL) {                   /* JDK 17: no virtual threads */
            (*jni)->ExceptionClear(jni);
            return;
        }
        mon.thread_tid = thread_tid_field(jni);
        if (lookup_failed(jni, mon.thread_tid, "Thread.tid"))
            mon.thread_tid = NULL;
        /* JEP 491's state of a virtual thread unmounted in a monitor (JDK 24). */
        mon.vt_monitors_pin = (*jni)->GetStaticFieldID(jni, vt, "BLOCKING", "I") == NULL;
        (*jni)->ExceptionClear(jni);
        mon.vt_park[0] = (*jni)->GetMethodID(jni, vt, "park", "()V");
        (*jni)->ExceptionClear(jni);
        mon.vt_park[1] = (*jni)->GetMethodID(jni, vt, "parkNanos", "(J)V");
        (*jni)->ExceptionClear(jni);
        serial_t vt_serial = class_serial_of_klass(vt);
        if (vt_serial && mon.n_park_skip < PARK_SKIP_MAX)
            mon.park_skip[mon.n_park_skip++] = vt_serial;
        mon.vthread_class = mon.thread_tid ? (*jni)->NewGlobalRef(jni, vt) : NULL;
        (*jni)->DeleteLocalRef(jni, vt);
        if (mon.vthread_class == NULL)
            return;
    }
    if (mon.vt_breakpoints || mon.vt_mounts || mon.park_blocker == NULL)
        return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    const char *missing = NULL;
    if (mon.debugger_loads)
        missing = "breakpoints are left to the debugger";
    else if ((*jvmti)->GetCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_generate_breakpoint_events ||
             !caps.can_get_bytecodes)
        missing = "breakpoints and byte codes are not offered to this agent";
    else if (mon.vt_park[0] == NULL || mon.vt_park[1] == NULL)
        missing = "VirtualThread.park()/parkNanos(long) not found in this JDK";
    for (int m = 0; m < 2 && !missing; m++) {
        mon.vt_n_exits[m] = void_returns(jvmti, mon.vt_park[m], mon.vt_exits[m], 8);
        if (mon.vt_n_exits[m] <= 0)
            missing = "the returns of VirtualThread.park could not be found";
    }
    int set = 0;
    for (int m = 0; m < 2 && !missing; m++) {
        if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon.vt_park[m], 0), "SetBreakpoint (VirtualThread.park)"))
            missing = "breakpoint refused";
        for (int i = 0; i < mon.vt_n_exits[m] && !missing; i++)
            if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon.vt_park[m], mon.vt_exits[m][i]),
                             "SetBreakpoint (VirtualThread.park return)"))
                missing = "breakpoint refused";
        set = 1;
    }
    if (!missing && jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT,
                                                                    NULL), "SetEventNotificationMode (Breakpoint)"))
        missing = "breakpoint events refused";
    if (missing) {
        if (set) {
            mon.vt_breakpoints = 1;         /* so that clear_vthread_breakpoints clears what was set */
            clear_vthread_breakpoints(jvmti);
        }
        if (vt_mount_events_on(jni) == 0)
            return;
        fprintf(stderr, "hprof: warning: monitor=y: %s, and this JVM does not tell when a virtual thread "
                "is unmounted: parks of virtual threads on java.util.concurrent locks are not timed\n", missing);
        return;
    }
    mon.vt_breakpoints = 1;
}


/* HotSpot warns on stdout when a platform class's native is re-bound from
 * code outside the boot loader, and the agent must print nothing there. So
 * the bind is made from inside a ClassPrepare event whose current Java frame
 * belongs to the boot loader (class loading code: it comes right after
 * VMInit, when the launcher loads the main class). Until then the breakpoints
 * time the parks; once bound, they are cleared. */
static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)klass;
    if (!mon.wrap_pending)
        return;
    jmethodID top = NULL;
    jlocation location;
    jclass holder = NULL;
    jobject loader = NULL;
    if ((*jvmti)->GetFrameLocation(jvmti, thread, 0, &top, &location) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetMethodDeclaringClass(jvmti, top, &holder) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetClassLoader(jvmti, holder, &loader) != JVMTI_ERROR_NONE || loader != NULL) {
        if (loader)
            (*jni)->DeleteLocalRef(jni, loader);
        if (holder)
            (*jni)->DeleteLocalRef(jni, holder);
        return;                             /* not in boot code: wait for the next one */
    }
    (*jni)->DeleteLocalRef(jni, holder);
    mon.wrap_pending = 0;
    events_unwant(jvmti, JVMTI_EVENT_CLASS_PREPARE);   /* ours; cpu=samples may keep it on */
    jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
    JNINativeMethod wrapper = { "park", "(ZJ)V", (void *)wrapped_park };
    if (unsafe == NULL || (*jni)->RegisterNatives(jni, unsafe, &wrapper, 1) != 0) {
        (*jni)->ExceptionClear(jni);
        if (unsafe)
            (*jni)->DeleteLocalRef(jni, unsafe);
        return;                             /* the breakpoints stay */
    }
    (*jni)->DeleteLocalRef(jni, unsafe);
    mon.park_wrapped = 1;
    clear_park_breakpoints(jvmti);
}

/* ---------------------------------------------------------------- set-up */

/* Breakpoints are a capability HotSpot gives one JVMTI environment only,
 * and only at start-up: a debugger agent (JDWP) loading after ours would
 * refuse to start without them, and one loaded before holds them already.
 * When the JVM's options load one, they are left to it (1), said once. */
static int debugger_needs_breakpoints(const collector_env *env, int virtual_threads)
{
    char debugger[300];
    if (env->live || !jvm_loads_debugger(debugger, sizeof debugger))
        return 0;
    char line[1024];
    snprintf(line, sizeof line, "monitor=y: a debugger loads in this JVM (%s) and breakpoints are left to it "
             "(HotSpot gives them to one agent only): %s", debugger,
             virtual_threads ? "parks of virtual threads are timed from their unmounts to their mounts, and "
                               "parks on java.util.concurrent locks are not timed if Unsafe.park cannot be "
                               "wrapped"
                             : "parks on java.util.concurrent locks are not timed if Unsafe.park cannot be "
                               "wrapped");
    env->limit(line);
    return 1;
}

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    if (!potential->can_generate_monitor_events || !potential->can_get_monitor_info) {
        fprintf(stderr, "hprof: monitor=y needs JVMTI monitor events and monitor information, "
                "which this JVM does not offer\n");
        return -1;
    }
    caps->can_generate_monitor_events = 1;
    caps->can_get_monitor_info = 1;
    /* Which monitors a thread owns and waits for: HotSpot grants these only
     * at start-up. Without them, MONITOR DUMP and deadlock detection are left
     * out; contention and waits are still timed. */
    mon.inspect = potential->can_get_owned_monitor_info && potential->can_get_current_contended_monitor;
    if (mon.inspect) {
        caps->can_get_owned_monitor_info = 1;
        caps->can_get_current_contended_monitor = 1;
    } else {
        env->limit("monitor=y: this JVM tells which monitors a thread owns or waits for only to an agent "
                   "loaded at start-up: MONITOR DUMP and DEADLOCKS are left out after an attach "
                   "(contention and waits are timed)");
    }
    /* Frames with source files and line numbers, in traces and whole stacks. */
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    /* Virtual threads: JVMTI's support for them (events and functions on
     * virtual threads), and the byte codes of VirtualThread.park (where to
     * put the breakpoints that time their parks). */
    int virtual_threads = jvmti_want_virtual_threads(potential, caps);
    caps->can_get_bytecodes = potential->can_get_bytecodes;
    mon.debugger_loads = debugger_needs_breakpoints(env, virtual_threads);
    if (!mon.debugger_loads)
        caps->can_generate_breakpoint_events = potential->can_generate_breakpoint_events;
    caps->can_tag_objects = potential->can_tag_objects;   /* class serials cached in tags */
    caps->can_generate_native_method_bind_events = potential->can_generate_native_method_bind_events;
    if (!potential->can_generate_breakpoint_events && !mon.debugger_loads)
        env->limit(env->live ? "monitor=y: this JVM offers breakpoints only at start-up: platform threads' "
                               "parks on java.util.concurrent locks are not timed after an attach (contended "
                               "synchronized, waits and virtual threads' parks are)"
                             : "monitor=y: no breakpoint events in this JVM: parking on "
                               "java.util.concurrent locks is not timed");
    return 0;
}

/* Look a JNI member up; a missing one (another JDK's layout) disables just the
 * feature that needs it. */
static int lookup_failed(JNIEnv *jni, const void *found, const char *what)
{
    if (found != NULL && !(*jni)->ExceptionCheck(jni))
        return 0;
    (*jni)->ExceptionClear(jni);
    fprintf(stderr, "hprof: warning: %s not found in this JDK: parking on java.util.concurrent "
            "locks is not timed, and such locks are left out of deadlock detection\n", what);
    return 1;
}

static void find_lock_support(jvmtiEnv *jvmti, JNIEnv *jni)
{
    jclass thread_class = (*jni)->FindClass(jni, "java/lang/Thread");
    if (lookup_failed(jni, thread_class, "java.lang.Thread"))
        return;
    mon.park_blocker = (*jni)->GetFieldID(jni, thread_class, "parkBlocker", "Ljava/lang/Object;");
    (*jni)->DeleteLocalRef(jni, thread_class);
    if (lookup_failed(jni, mon.park_blocker, "Thread.parkBlocker")) {
        mon.park_blocker = NULL;
        return;
    }
    jclass aos = (*jni)->FindClass(jni, "java/util/concurrent/locks/AbstractOwnableSynchronizer");
    if (!lookup_failed(jni, aos, "AbstractOwnableSynchronizer")) {
        mon.aos_owner = (*jni)->GetFieldID(jni, aos, "exclusiveOwnerThread", "Ljava/lang/Thread;");
        if (!lookup_failed(jni, mon.aos_owner, "AbstractOwnableSynchronizer.exclusiveOwnerThread"))
            mon.aos_class = (*jni)->NewGlobalRef(jni, aos);
        (*jni)->DeleteLocalRef(jni, aos);
    }
    jclass lock_support = (*jni)->FindClass(jni, "java/util/concurrent/locks/LockSupport");
    if (lookup_failed(jni, lock_support, "LockSupport"))
        return;
    mon.set_blocker = (*jni)->GetStaticMethodID(jni, lock_support, "setBlocker",
                                                "(Ljava/lang/Thread;Ljava/lang/Object;)V");
    if (lookup_failed(jni, mon.set_blocker, "LockSupport.setBlocker(Thread, Object)")) {
        mon.set_blocker = NULL;
        (*jni)->DeleteLocalRef(jni, lock_support);
        return;
    }
    mon.lock_support = class_serial_of_klass(lock_support);
    /* setCurrentBlocker is public and only used to bracket waits (JDK 17+);
     * without it Condition.await goes untimed, which is said once. */
    mon.set_current_blocker = (*jni)->GetStaticMethodID(jni, lock_support, "setCurrentBlocker",
                                                        "(Ljava/lang/Object;)V");
    if (mon.set_current_blocker == NULL || (*jni)->ExceptionCheck(jni)) {
        (*jni)->ExceptionClear(jni);
        mon.set_current_blocker = NULL;
        fprintf(stderr, "hprof: warning: LockSupport.setCurrentBlocker not found: "
                "Condition.await is not timed on this JDK\n");
    }
    (*jni)->DeleteLocalRef(jni, lock_support);

    /* Breakpoints on the two setters time the parks until Unsafe.park can be
     * bound to wrapped_park (monitor_agent_class_prepare), and for good if it
     * cannot (it costs more: see README). */
    /* Virtual threads first: looking their classes up prepares classes,
     * which must not meet a pending bind (on_class_prepare) from here. */
    if (mon.unsafe_class == 0) {
        jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
        if (unsafe) {
            mon.unsafe_class = class_serial_of_klass(unsafe);
            (*jni)->DeleteLocalRef(jni, unsafe);
        }
        (*jni)->ExceptionClear(jni);
    }
    if (mon.n_park_skip == 0) {
        mon.park_skip[0] = mon.lock_support;
        mon.park_skip[1] = mon.unsafe_class;
        mon.n_park_skip = 2;
    }
    find_virtual_threads(jvmti, jni);
    /* The bind waits for a ClassPrepare in boot code (on_class_prepare). */
    if (!mon.park_wrapped && !mon.wrap_pending && find_unsafe_park(jvmti, jni) &&
        events_want(jvmti, JVMTI_EVENT_CLASS_PREPARE) == 0)
        mon.wrap_pending = 1;
    if (mon.park_wrapped)
        return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmti)->GetCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_generate_breakpoint_events) {
        mon.set_blocker = NULL;             /* no breakpoints: park_method says so */
        mon.set_current_blocker = NULL;
        return;
    }
    if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon.set_blocker, 0), "SetBreakpoint (LockSupport)"))
        mon.set_blocker = NULL;
    if (mon.set_current_blocker &&
        jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon.set_current_blocker, 0),
                     "SetBreakpoint (LockSupport.setCurrentBlocker)"))
        mon.set_current_blocker = NULL;
    if ((mon.set_blocker || mon.set_current_blocker) &&
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT, NULL),
                     "SetEventNotificationMode (Breakpoint)")) {
        mon.set_blocker = NULL;
        mon.set_current_blocker = NULL;
    }
}

static const char *park_method(void)
{
    if (mon.park_wrapped)
        return "parks timed in a wrapper of Unsafe.park";
    if (mon.set_blocker || mon.set_current_blocker)
        return "parks timed by breakpoints on LockSupport";
    return "parks of platform threads not timed";
}

/* ---------------------------------------------------------------- dumps */

/* What a thread is doing, in MONITOR DUMP's letters. */
static const char *status_of(jint state)
{
    if (!(state & JVMTI_THREAD_STATE_ALIVE))
        return "Z";
    if (state & JVMTI_THREAD_STATE_SUSPENDED)
        return "S";
    if (state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER)
        return "MW";
    if (state & JVMTI_THREAD_STATE_IN_OBJECT_WAIT)
        return "CW";
    if (state & JVMTI_THREAD_STATE_PARKED)
        return "P";
    if (state & JVMTI_THREAD_STATE_SLEEPING)
        return "SL";
    return "R";
}

/* Virtual threads a dump lists, at most (there may be millions): those
 * blocked longest, then the owners of locks that listed threads wait for. */
#define VT_LISTED_MAX 256

typedef struct thread_snapshot {
    jthread  thread;
    serial_t serial;               /* 0: a virtual thread not named yet (name_snapshot) */
    int      is_virtual;
    serial_t trace;
    jint     state;
    /* what it waits for, for the deadlock graph */
    jobject  owner;                /* the thread owning that lock (local ref), or NULL */
    uint32_t waits_for;            /* 1 + the owner's index in the snapshot; 0: none, or not in it */
    serial_t lock_class;
    jobject  lock;                 /* the monitor or park blocker (local ref) */
    int      parked;
    /* A virtual thread's monitors (GetOwnedMonitorInfo): GetObjectMonitorUsage
     * names no virtual thread as owner or waiter (JDK 23 and later). */
    jobject *owned;
    jint     n_owned;
} thread_snapshot;

/* A snapshot: the platform threads, then the virtual threads listed. */
typedef struct thread_snapshots {
    thread_snapshot *t;
    uint32_t n, cap;
    uint32_t vt_blocked;           /* virtual threads seen blocked (pending episodes) */
    uint32_t vt_listed;            /* of them in t[] */
    uint32_t vt_owners;            /* other virtual threads in t[]: owners of a lock */
} thread_snapshots;

/* What a thread in `state` waits for: the monitor it is blocked entering
 * (1) or the blocker it is parked on (2), and that lock's owner (local
 * refs, or NULL); 0: neither. JVMTI and JNI reads only, no lock of the
 * agent's: cycle_frozen calls it on suspended threads, which may have been
 * stopped holding one. */
static int wait_target(JNIEnv *jni, jthread thread, jint state, jobject *lock, jobject *owner)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    *lock = NULL;
    *owner = NULL;
    if (state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) {
        jobject monitor = NULL;
        if ((*jvmti)->GetCurrentContendedMonitor(jvmti, thread, &monitor) != JVMTI_ERROR_NONE || monitor == NULL)
            return 0;
        jvmtiMonitorUsage usage;
        memset(&usage, 0, sizeof usage);
        if ((*jvmti)->GetObjectMonitorUsage(jvmti, monitor, &usage) != JVMTI_ERROR_NONE) {
            (*jni)->DeleteLocalRef(jni, monitor);
            return 0;
        }
        jvmti_free(usage.waiters);
        jvmti_free(usage.notify_waiters);
        *lock = monitor;
        *owner = usage.owner;
        return 1;
    }
    if ((state & JVMTI_THREAD_STATE_PARKED) && mon.park_blocker && mon.aos_class) {
        jobject blocker = (*jni)->GetObjectField(jni, thread, mon.park_blocker);
        if (blocker == NULL)
            return 0;
        *lock = blocker;
        if ((*jni)->IsInstanceOf(jni, blocker, mon.aos_class))
            *owner = (*jni)->GetObjectField(jni, blocker, mon.aos_owner);
        return 2;
    }
    return 0;
}

/* The lock a blocked or parked thread waits for, and its owner. */
static void find_wait(JNIEnv *jni, thread_snapshot *t)
{
    int kind = wait_target(jni, t->thread, t->state, &t->lock, &t->owner);
    if (kind == 0)
        return;
    t->lock_class = class_serial_of_object(jni, t->lock);
    t->parked = kind == 2;
}

static void read_thread(JNIEnv *jni, thread_snapshot *t, int with_traces)
{
    if ((*hprof_jvmti)->GetThreadState(hprof_jvmti, t->thread, &t->state) != JVMTI_ERROR_NONE)
        t->state = 0;
    if (with_traces && (t->state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER))
        t->trace = trace_entering(t->thread, 0, !mon.cfg.per_thread ? 0 : thread_serial_of(t->thread), NULL);
    else if (with_traces)
        t->trace = trace_here(t->thread, 0, 0, NULL);
    find_wait(jni, t);
    if (t->is_virtual &&
        (*hprof_jvmti)->GetOwnedMonitorInfo(hprof_jvmti, t->thread, &t->n_owned, &t->owned) != JVMTI_ERROR_NONE) {
        t->owned = NULL;
        t->n_owned = 0;
    }
}

/* The listed virtual thread owning `monitor`, or -1 (see thread_snapshot.owned). */
static long virtual_owner_of(JNIEnv *jni, const thread_snapshots *s, jobject monitor)
{
    for (uint32_t k = 0; monitor && k < s->n; k++)
        for (jint j = 0; j < s->t[k].n_owned; j++)
            if ((*jni)->IsSameObject(jni, s->t[k].owned[j], monitor))
                return (long)k;
    return -1;
}

/* Whether `thread` owns `monitor` now. */
static int owns_monitor(JNIEnv *jni, jthread thread, jobject monitor)
{
    jint n = 0;
    jobject *owned = NULL;
    int found = 0;
    if ((*hprof_jvmti)->GetOwnedMonitorInfo(hprof_jvmti, thread, &n, &owned) != JVMTI_ERROR_NONE)
        return 0;
    for (jint j = 0; j < n; j++) {
        found = found || (*jni)->IsSameObject(jni, owned[j], monitor);
        (*jni)->DeleteLocalRef(jni, owned[j]);
    }
    jvmti_free(owned);
    return found;
}

static void free_snapshot(thread_snapshots *s)
{
    for (uint32_t i = 0; s->t && i < s->n; i++)
        jvmti_free(s->t[i].owned);
    free(s->t);
    s->t = NULL;
}

/* The index of `thread` in the snapshot, or -1. */
static long index_of(JNIEnv *jni, const thread_snapshots *s, jobject thread)
{
    for (uint32_t k = 0; thread && k < s->n; k++)
        if ((*jni)->IsSameObject(jni, s->t[k].thread, thread))
            return (long)k;
    return -1;
}

static void *local_ref_of(void *jni, void *weak)
{
    JNIEnv *env = jni;
    return (*env)->NewLocalRef(env, (jweak)weak);   /* NULL: collected */
}

/* The blocked virtual threads, those blocked longest first (their pending
 * episodes: see vt_begin), one entry each. */
static void add_blocked_virtual_threads(JNIEnv *jni, thread_snapshots *s, int with_traces)
{
    vt_listed listed[VT_LISTED_MAX];
    unsigned whats = (1u << VT_ENTER) | (1u << VT_WAIT) | (1u << VT_PARK);
    uint32_t n = vt_pending_oldest(whats, listed, VT_LISTED_MAX, &s->vt_blocked, local_ref_of, jni);
    for (uint32_t i = 0; i < n; i++) {
        int again = 0;                      /* an enter inside a wait: listed twice */
        for (uint32_t j = 0; j < i && !again; j++)
            again = listed[j].tid == listed[i].tid;
        if (again || s->n == s->cap) {
            (*jni)->DeleteLocalRef(jni, (jobject)listed[i].ref);
            continue;
        }
        thread_snapshot *t = &s->t[s->n++];
        t->thread = (jthread)listed[i].ref;
        t->serial = thread_serial_of(t->thread);
        t->is_virtual = 1;
        read_thread(jni, t, with_traces);
        s->vt_listed++;
    }
    /* Owners that are virtual threads not listed yet (running, or blocked
     * beyond the bound): a lock's owner must have its THREAD line. */
    for (uint32_t i = 0; i < s->n && s->vt_owners < VT_LISTED_MAX && s->n < s->cap; i++) {
        jobject owner = s->t[i].owner;
        if (owner == NULL || !(*jni)->IsInstanceOf(jni, owner, mon.vthread_class) || index_of(jni, s, owner) >= 0)
            continue;
        thread_snapshot *t = &s->t[s->n++];
        t->thread = (*jni)->NewLocalRef(jni, owner);
        t->serial = thread_serial_of(t->thread);
        t->is_virtual = 1;
        read_thread(jni, t, with_traces);
        s->vt_owners++;
    }
}

/* Snapshot every thread the agent knows, and virtual threads (bounded).
 * Local refs: inside the caller's frame. 0, or -1 on failure. */
static int snapshot_threads(JNIEnv *jni, thread_snapshots *s, int with_traces)
{
    jint n = 0;
    jthread *threads = NULL;
    memset(s, 0, sizeof *s);
    if (jvmti_failed((*hprof_jvmti)->GetAllThreads(hprof_jvmti, &n, &threads), "GetAllThreads"))
        return -1;
    s->cap = (uint32_t)(n > 0 ? n : 0) + (mon.vthread_class ? 2 * VT_LISTED_MAX : 0) + 1;
    s->t = calloc(s->cap, sizeof *s->t);
    if (s->t == NULL) {
        jvmti_free(threads);
        return -1;
    }
    for (jint i = 0; i < n; i++) {
        serial_t serial = thread_serial_of(threads[i]);
        if (serial == 0)
            continue;                       /* the agent's own thread */
        thread_snapshot *t = &s->t[s->n++];
        t->thread = threads[i];
        t->serial = serial;
        read_thread(jni, t, with_traces);
    }
    jvmti_free(threads);
    if (mon.vthread_class)
        add_blocked_virtual_threads(jni, s, with_traces);
    for (uint32_t i = 0; i < s->n; i++) {
        thread_snapshot *t = &s->t[i];
        if (t->lock && !t->parked && t->owner == NULL) {     /* a monitor: a virtual owner? */
            long k = virtual_owner_of(jni, s, t->lock);
            t->owner = k >= 0 ? s->t[k].thread : NULL;
        }
    }
    for (uint32_t i = 0; i < s->n; i++) {
        long k = index_of(jni, s, s->t[i].owner);
        s->t[i].waits_for = k >= 0 ? (uint32_t)k + 1 : 0;
    }
    return 0;
}

/* Serials for the snapshot's virtual threads (registered now: they get no
 * ThreadStart); those that cannot be named are left out of the dump. */
static void name_snapshot(JNIEnv *jni, thread_snapshots *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->t[i].serial == 0)
            s->t[i].serial = thread_register(jni, s->t[i].thread, NULL);
}

static const thread_snapshot *member_of(const thread_snapshots *s, serial_t id)
{
    for (uint32_t k = 0; id && k < s->n; k++)
        if (s->t[k].serial == id)
            return &s->t[k];
    return NULL;
}

/* Whether `t` still waits for `lock` owned by `owner`, read now
 * (wait_target: safe on a suspended thread). */
static int still_waits(JNIEnv *jni, jthread t, jobject lock, jobject owner)
{
    jint state = 0;
    if ((*hprof_jvmti)->GetThreadState(hprof_jvmti, t, &state) != JVMTI_ERROR_NONE)
        return 0;
    jobject now = NULL, now_owner = NULL;
    int kind = wait_target(jni, t, state, &now, &now_owner);
    if (kind == 1 && now_owner == NULL && owns_monitor(jni, owner, now))   /* a virtual owner */
        now_owner = (*jni)->NewLocalRef(jni, owner);
    int same = now && now_owner && (*jni)->IsSameObject(jni, now, lock) && (*jni)->IsSameObject(jni, now_owner, owner);
    if (now)
        (*jni)->DeleteLocalRef(jni, now);
    if (now_owner)
        (*jni)->DeleteLocalRef(jni, now_owner);
    return same;
}

/* Whether every member of the cycle still waits for its lock held by the
 * next member. */
static int cycle_reads_same(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        const thread_snapshot *a = &s->t[ids[i] - 1];
        if (!still_waits(jni, a->thread, a->lock, a->owner))
            return 0;
    }
    return 1;
}

/* The snapshot is read thread by thread while threads move on, so a cycle in
 * it may be an artefact (one lock read with two owners at two moments). A
 * real deadlock does not move: keep a cycle only if its locks are distinct
 * objects and every member, read again now, still waits for the same lock
 * held by the same thread. ids: 1 + indexes in the snapshot. */
static int cycle_confirmed(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        const thread_snapshot *a = &s->t[ids[i] - 1];
        if (a->lock == NULL || a->owner == NULL)
            return 0;
        for (uint32_t j = i + 1; j < len; j++)
            if ((*jni)->IsSameObject(jni, a->lock, s->t[ids[j] - 1].lock))
                return 0;
    }
    return cycle_reads_same(jni, s, ids, len);
}

/* A cycle read twice may still be an artefact: every read is of one thread at
 * one moment, and threads handing locks over all the time can line up the
 * same way twice (seen once in CI, deadlock_no_false_positive: a deadlock=
 * dump whose own check then found no cycle). Suspend the members and read
 * them again: a suspended thread cannot take or release a lock, so once all
 * are held still, what the reads say holds at one instant, and a cycle then
 * is a deadlock. Members that were not blocked stop for a few microseconds;
 * those of a real deadlock were not running anyway. A thread someone else
 * had suspended is read but left suspended.
 *
 * can_suspend is a capability only one JVMTI environment may hold at a time
 * (HotSpot): held from start-up it would keep a debugger loaded after us
 * (-agentlib:jdwp) from starting. So it is taken here and given back at once.
 * When another agent holds it, the cycle must read the same three more times,
 * 20 ms apart (a real deadlock does not move; threads that line up by chance
 * do not stay lined up). */
static int cycle_frozen(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities suspend;
    memset(&suspend, 0, sizeof suspend);
    suspend.can_suspend = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &suspend) != JVMTI_ERROR_NONE) {
        for (int round = 0; round < 3; round++) {
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
            if (!cycle_reads_same(jni, s, ids, len))
                return 0;
        }
        return 1;
    }
    jthread *threads = calloc(len, sizeof *threads);
    jvmtiError *results = calloc(len, sizeof *results);
    int frozen = threads != NULL && results != NULL;
    for (uint32_t i = 0; frozen && i < len; i++)
        threads[i] = s->t[ids[i] - 1].thread;
    if (frozen && (*jvmti)->SuspendThreadList(jvmti, (jint)len, threads, results) != JVMTI_ERROR_NONE)
        frozen = 0;
    else if (frozen) {
        for (uint32_t i = 0; i < len; i++)
            frozen = frozen && (results[i] == JVMTI_ERROR_NONE || results[i] == JVMTI_ERROR_THREAD_SUSPENDED);
        frozen = frozen && cycle_reads_same(jni, s, ids, len);
        /* Resume only those this call suspended. */
        uint32_t n = 0;
        for (uint32_t i = 0; i < len; i++)
            if (results[i] == JVMTI_ERROR_NONE)
                threads[n++] = threads[i];
        if (n > 0 && (*jvmti)->ResumeThreadList(jvmti, (jint)n, threads, results) != JVMTI_ERROR_NONE)
            fprintf(stderr, "hprof: monitor=y: ResumeThreadList failed after a deadlock check\n");
    }
    free(threads);
    free(results);
    if ((*jvmti)->RelinquishCapabilities(jvmti, &suspend) != JVMTI_ERROR_NONE)
        fprintf(stderr, "hprof: monitor=y: could not give the can_suspend capability back\n");
    return frozen;
}

/* Confirmed deadlock cycles of the snapshot, as find_deadlocks lays them
 * out, with 1 + snapshot indexes as thread ids. */
static uint32_t deadlock_cycles(JNIEnv *jni, const thread_snapshots *s, uint32_t **cycles_out)
{
    uint32_t n = s->n;
    waiter *graph = calloc(n ? n : 1, sizeof *graph);
    uint32_t *cycles = calloc(2 * (size_t)(n ? n : 1), sizeof *cycles);
    uint32_t confirmed = 0;
    if (graph && cycles) {
        for (uint32_t i = 0; i < n; i++) {
            graph[i].thread = i + 1;
            graph[i].waits_for = s->t[i].waits_for;
        }
        uint32_t found = find_deadlocks(graph, n, cycles);
        /* Compact in place: confirmed cycles move to the front. */
        uint32_t in = 0, out = 0;
        for (uint32_t c = 0; c < found; c++) {
            uint32_t len = cycles[in];
            if (cycle_confirmed(jni, s, cycles + in + 1, len) &&
                cycle_frozen(jni, s, cycles + in + 1, len)) {
                memmove(cycles + out, cycles + in, (len + 1) * sizeof *cycles);
                out += len + 1;
                confirmed++;
            }
            in += len + 1;
        }
    }
    free(graph);
    if (cycles_out)
        *cycles_out = cycles;
    else
        free(cycles);
    return confirmed;
}

static uint32_t count_deadlocks(JNIEnv *jni)
{
    if (!mon.inspect)
        return 0;
    if ((*jni)->PushLocalFrame(jni, 64 + 8 * VT_LISTED_MAX) != 0) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    thread_snapshots s;
    uint32_t found = snapshot_threads(jni, &s, 0) == 0 ? deadlock_cycles(jni, &s, NULL) : 0;
    free_snapshot(&s);
    (*jni)->PopLocalFrame(jni, NULL);
    return found;
}

static int listed_in(const serial_t *list, uint32_t n, serial_t serial)
{
    for (uint32_t j = 0; j < n; j++)
        if (list[j] == serial)
            return 1;
    return 0;
}

/* Serials of threads, those of the snapshot only: a thread that started
 * after the snapshot has no THREAD line in this dump (seen once in CI: a
 * waiter registered between GetAllThreads and GetObjectMonitorUsage), nor
 * has a virtual thread beyond the listed ones. Leaves out those in
 * except[0..n_except); returns how many were appended to lists[*used..cap). */
static uint32_t append_serials(serial_t *lists, size_t *used, size_t cap, const jthread *threads,
                               jint count, const serial_t *except, uint32_t n_except, const thread_snapshots *s)
{
    size_t start = *used;
    for (jint i = 0; i < count && *used < cap; i++) {
        serial_t id = thread_serial_of(threads[i]);
        if (member_of(s, id) != NULL && !listed_in(except, n_except, id))
            lists[(*used)++] = id;
    }
    return (uint32_t)(*used - start);
}

/* The key of a snapshot's thread in wait_objects. */
static uint64_t wait_key(JNIEnv *jni, const thread_snapshot *t)
{
    return t->is_virtual ? WAIT_KEY_OF_VTHREAD(vthread_tid(jni, t->thread)) : t->serial;
}

/* Unique monitors owned or wanted by the snapshot's threads, with their usage. */
static uint32_t collect_monitors(JNIEnv *jni, const thread_snapshots *s,
                                 dump_monitor **out, serial_t **lists_out, char ***sigs_out)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    const thread_snapshot *snap = s->t;
    uint32_t n = s->n;
    uint32_t cap = 16, count = 0;
    jobject *objects = malloc(cap * sizeof *objects);
    /* What each thread waits on in Object.wait (local refs), read once:
     * the monitors' notify lists below need the virtual threads' again. */
    jobject *waited_of = calloc(n ? n : 1, sizeof *waited_of);
    if (objects == NULL || waited_of == NULL) {
        free(objects);
        free(waited_of);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (snap[i].serial == 0)
            continue;                              /* not named: not in the dump */
        jint owned_n = 0;
        jobject *owned = NULL;
        jobject contended = NULL;
        if ((*jvmti)->GetOwnedMonitorInfo(jvmti, snap[i].thread, &owned_n, &owned) != JVMTI_ERROR_NONE) {
            owned_n = 0;
            owned = NULL;
        }
        if ((*jvmti)->GetCurrentContendedMonitor(jvmti, snap[i].thread, &contended) != JVMTI_ERROR_NONE)
            contended = NULL;
        jobject waited = (snap[i].state & JVMTI_THREAD_STATE_IN_OBJECT_WAIT) ? get_waiting_on(jni, wait_key(jni, &snap[i]))
                                                                         : NULL;
        waited_of[i] = waited;
        for (jint j = 0; j <= owned_n + 1; j++) {
            jobject o = j < owned_n ? owned[j] : j == owned_n ? contended : waited;
            if (o == NULL)
                continue;
            int seen = 0;
            for (uint32_t k = 0; k < count && !seen; k++)
                seen = (*jni)->IsSameObject(jni, objects[k], o);
            if (seen)
                continue;
            if (count == cap) {
                jobject *grown = realloc(objects, 2 * cap * sizeof *grown);
                if (grown == NULL)
                    break;
                objects = grown;
                cap *= 2;
            }
            objects[count++] = o;
        }
        jvmti_free(owned);
    }

    dump_monitor *monitors = calloc(count ? count : 1, sizeof *monitors);
    char **sigs = calloc(count ? count : 1, sizeof *sigs);
    /* All waiter lists in one array: at most every thread in every list. */
    size_t list_cap = (size_t)(count ? count : 1) * 2 * (n ? n : 1);
    serial_t *lists = malloc(list_cap * sizeof *lists);
    size_t used = 0;
    uint32_t written = 0;
    for (uint32_t k = 0; monitors && sigs && lists && k < count; k++) {
        jvmtiMonitorUsage usage;
        memset(&usage, 0, sizeof usage);
        if ((*jvmti)->GetObjectMonitorUsage(jvmti, objects[k], &usage) != JVMTI_ERROR_NONE)
            continue;
        jclass klass = (*jni)->GetObjectClass(jni, objects[k]);
        char *sig = NULL;
        if (klass == NULL || (*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) != JVMTI_ERROR_NONE)
            sig = NULL;
        dump_monitor *m = &monitors[written];
        sigs[written] = sig ? strdup(sig) : strdup("<unknown>");
        jvmti_free(sig);
        m->class_signature = sigs[written];
        m->owner = usage.owner ? thread_serial_of(usage.owner) : 0;
        m->entry_count = usage.entry_count;
        if (m->owner && member_of(s, m->owner) == NULL) {
            m->owner = 0;                          /* not in the snapshot: see append_serials */
            m->entry_count = 0;
        }
        long vt_owner = usage.owner ? -1 : virtual_owner_of(jni, s, objects[k]);
        if (vt_owner >= 0 && snap[vt_owner].serial) {
            m->owner = snap[vt_owner].serial;
            m->entry_count = -1;                   /* JVMTI does not count a virtual owner's entries */
        }
        /* Before JDK 23 GetObjectMonitorUsage also lists the threads in
         * Object.wait among those waiting to enter: leave them out there. */
        m->waiting_to_be_notified = lists + used;
        m->n_notify = append_serials(lists, &used, list_cap, usage.notify_waiters,
                                     usage.notify_waiter_count, NULL, 0, s);
        /* Virtual threads in its Object.wait (JDK 23 on: not among
         * usage.notify_waiters). */
        for (uint32_t i = 0; i < n && used < list_cap; i++) {
            const thread_snapshot *t = &snap[i];
            if (t->is_virtual && t->serial && waited_of[i] != NULL &&
                (*jni)->IsSameObject(jni, waited_of[i], objects[k]) &&
                !listed_in(m->waiting_to_be_notified, m->n_notify, t->serial)) {
                lists[used++] = t->serial;
                m->n_notify++;
            }
        }
        m->waiting_to_enter = lists + used;
        m->n_enter = append_serials(lists, &used, list_cap, usage.waiters, usage.waiter_count,
                                    m->waiting_to_be_notified, m->n_notify, s);
        /* Virtual threads blocked entering it (not among usage.waiters). */
        for (uint32_t i = 0; i < n && used < list_cap; i++) {
            const thread_snapshot *t = &snap[i];
            if (!t->is_virtual || !t->serial || t->parked || t->lock == NULL ||
                !(t->state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) ||
                !(*jni)->IsSameObject(jni, t->lock, objects[k]))
                continue;
            if (!listed_in(m->waiting_to_enter, m->n_enter, t->serial)) {
                lists[used++] = t->serial;
                m->n_enter++;
            }
        }
        jvmti_free(usage.waiters);
        jvmti_free(usage.notify_waiters);
        written++;
    }
    free(objects);
    free(waited_of);
    *out = monitors;
    *lists_out = lists;
    *sigs_out = sigs;
    return written;
}

/* A MONITOR row by whole stack as a profile row: the lock's class is a
 * frame above the stack that blocked (as in async-profiler's lock
 * profiles). Contention (contended enters, parks on locks: MONITOR TIME)
 * and waits (Object.wait, other parks: MONITOR WAIT TIME) are profiles of
 * their own, "lock" and "wait", so that idle threads do not drown the
 * contention and a flame graph of either shows one kind of time. */
static void lock_profile_row(const void *rows, uint32_t i, stack_id *stack, const char **leaf, const char **note,
                             int64_t *values)
{
    const monitor_row *r = (const monitor_row *)rows + i;
    const char *cls = class_java_name(r->lock_class);
    *stack = r->stack;
    *leaf = cls ? cls : "<unknown lock>";
    *note = r->kind == BLOCK_PARK || r->kind == BLOCK_PARK_WAIT ? "park" : NULL;   /* jfr=: jdk.ThreadPark */
    values[0] = (int64_t)r->count;
    values[1] = (int64_t)r->nanos;
}

/* Value types and titles as the front end's profiles of MONITOR TIME and
 * MONITOR WAIT TIME (src/reader/hprof_data.c) have them. */
static profile *profile_of_rows(const monitor_row *rows, uint32_t n, int waits)
{
    static const profile_value_type contention[] = { { "contentions", "count" }, { "delay", "nanoseconds" } };
    static const profile_value_type wait[] = { { "waits", "count" }, { "delay", "nanoseconds" } };
    return stack_profile_of_rows(waits ? "Monitor waits" : "Lock contention", waits ? wait : contention, 2, 1,
                                 rows, n, lock_profile_row);
}

/* The rows for which keep() is true moved to the front: how many they
 * are. Order is not kept. */
static uint32_t rows_first(monitor_row *rows, uint32_t n, int (*keep)(const monitor_row *r))
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++)
        if (keep(&rows[i])) {
            monitor_row r = rows[kept];
            rows[kept++] = rows[i];
            rows[i] = r;
        }
    return kept;
}

/* BLOCK_PINNED rows repeat time that other rows have: in no profile. */
static int row_not_pinned(const monitor_row *r)
{
    return r->kind != BLOCK_PINNED;
}

static int row_is_contention(const monitor_row *r)
{
    return block_kind_is_contention(r->kind);
}

/* The profiles of the rows the last dump wrote (stack_profile_keep). */
static profile *dumped_profile, *dumped_waits;

static void keep_profiles(monitor_row *rows, uint32_t n)
{
    uint32_t kept = rows_first(rows, n, row_not_pinned);
    uint32_t contention = rows_first(rows, kept, row_is_contention);
    stack_profile_keep(&dumped_profile, profile_of_rows(rows, contention, 0));
    stack_profile_keep(&dumped_waits, profile_of_rows(rows + contention, kept - contention, 1));
}

static profile *snapshot(JNIEnv *jni)
{
    (void)jni;
    return stack_profile_take(&dumped_profile);
}

static profile *wait_snapshot(JNIEnv *jni)
{
    (void)jni;
    return stack_profile_take(&dumped_waits);
}

/* Each cycle rotated to start at its smallest thread serial (as the graph's
 * cycles start at their smallest id), so that reports are stable. */
static void rotate_to_smallest(deadlock_member *members, const uint32_t *sizes, uint32_t n_cycles)
{
    deadlock_member *m = members;
    for (uint32_t c = 0; c < n_cycles; m += sizes[c++]) {
        uint32_t len = sizes[c], low = 0;
        for (uint32_t i = 1; i < len; i++)
            if (m[i].thread < m[low].thread)
                low = i;
        for (uint32_t r = 0; r < low; r++) {         /* short cycles: rotate by one, low times */
            deadlock_member first = m[0];
            memmove(m, m + 1, (len - 1) * sizeof *m);
            m[len - 1] = first;
        }
    }
}

static uint32_t write_sections(text_writer *w, JNIEnv *jni)
{
    time_t now = time(NULL);
    monitor_row *rows = NULL;
    uint32_t nrows = 0;
    uint64_t total = 0;
    if (monitor_table_stack_rows(&rows, &nrows, &total) == 0) {
        if (mon.traces.full_stacks)
            keep_profiles(rows, nrows);
        monitor_rows_merge(rows, &nrows);
        text_write_monitor_time(w, "MONITOR TIME", MONITOR_SECTION_CONTENTION, rows, nrows, mon.cfg.cutoff, now);
        text_write_monitor_time(w, "MONITOR WAIT TIME", MONITOR_SECTION_WAIT, rows, nrows, mon.cfg.cutoff, now);
        if (mon.vthread_class)
            text_write_monitor_time(w, "MONITOR PINNED TIME", MONITOR_SECTION_PINNED, rows, nrows,
                                    mon.cfg.cutoff, now);
        free(rows);
    }

    if (!mon.inspect)
        return 0;
    if ((*jni)->PushLocalFrame(jni, 256 + 8 * VT_LISTED_MAX) != 0) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    thread_snapshots s;
    uint32_t found = 0;
    if (snapshot_threads(jni, &s, 1) == 0) {
        name_snapshot(jni, &s);
        const thread_snapshot *snap = s.t;
        uint32_t n = s.n, listed = 0;
        dump_thread *threads = calloc(n ? n : 1, sizeof *threads);
        for (uint32_t i = 0; threads && i < n; i++) {
            if (snap[i].serial == 0)
                continue;
            threads[listed].thread = snap[i].serial;
            threads[listed].trace = snap[i].trace;
            threads[listed].status = status_of(snap[i].state);
            listed++;
        }
        dump_virtual_threads vt = { s.vt_blocked, s.vt_listed, s.vt_owners };
        dump_monitor *monitors = NULL;
        serial_t *lists = NULL;
        char **sigs = NULL;
        uint32_t nmon = collect_monitors(jni, &s, &monitors, &lists, &sigs);
        if (threads && monitors)
            text_write_monitor_dump(w, threads, listed, monitors, nmon, mon.vthread_class ? &vt : NULL);
        for (uint32_t i = 0; sigs && i < nmon; i++)
            free(sigs[i]);
        free(sigs);
        free(lists);
        free(monitors);
        free(threads);

        /* Cycles as runs of 1 + snapshot indexes: members by serial. A cycle
         * with a member that could not be named is left out. */
        uint32_t *cycles = NULL;
        uint32_t cycles_found = deadlock_cycles(jni, &s, &cycles);
        deadlock_member *members = calloc(n ? n : 1, sizeof *members);
        uint32_t *sizes = calloc(cycles_found ? cycles_found : 1, sizeof *sizes);
        if (cycles && members && sizes) {
            uint32_t at = 0, m = 0;
            for (uint32_t c = 0; c < cycles_found; c++) {
                uint32_t len = cycles[at++], first = m;
                int named = 1;
                for (uint32_t i = 0; i < len; i++, m++) {
                    const thread_snapshot *t = &snap[cycles[at++] - 1];
                    members[m].thread = t->serial;
                    members[m].trace = t->trace;
                    members[m].parked = t->parked;
                    members[m].lock_class = t->lock_class;
                    members[m].held_by = snap[t->waits_for - 1].serial;
                    named = named && t->serial != 0;
                }
                if (named)
                    sizes[found++] = len;
                else
                    m = first;
            }
            rotate_to_smallest(members, sizes, found);
            text_write_deadlocks(w, members, sizes, found, now);
        }
        free(cycles);
        free(members);
        free(sizes);
        free_snapshot(&s);
    }
    (*jni)->PopLocalFrame(jni, NULL);
    return found;
}

/* ---------------------------------------------------------------- collector */

static int wanted(const hprof_options *opt) { return opt->monitor; }

/* NativeMethodBind from OnLoad: Unsafe's natives are bound before VMInit
 * (see find_unsafe_park); after an attach they are bound already. */
static int subscribe(const collector_env *env)
{
    static const struct { jvmtiEvent ev; event_fn fn; } subs[] = {
        { JVMTI_EVENT_MONITOR_CONTENDED_ENTER, EVENT_FN(on_contended_enter) },
        { JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, EVENT_FN(on_contended_entered) },
        { JVMTI_EVENT_MONITOR_WAIT, EVENT_FN(on_wait) },
        { JVMTI_EVENT_MONITOR_WAITED, EVENT_FN(on_waited) },
        { JVMTI_EVENT_BREAKPOINT, EVENT_FN(on_breakpoint) },
        { JVMTI_EVENT_NATIVE_METHOD_BIND, EVENT_FN(on_native_bind) },
        { JVMTI_EVENT_CLASS_PREPARE, EVENT_FN(on_class_prepare) },
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (events_subscribe(subs[i].ev, subs[i].fn) != 0)
            return -1;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if (!env->live && !mon.made && !mon.binds_wanted &&
        (*hprof_jvmti)->GetCapabilities(hprof_jvmti, &caps) == JVMTI_ERROR_NONE &&
        caps.can_generate_native_method_bind_events && events_want(hprof_jvmti, JVMTI_EVENT_NATIVE_METHOD_BIND) == 0)
        mon.binds_wanted = 1;
    return 0;
}

static const jvmtiEvent monitor_events[] = {
    JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
    JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED,
};

static int start(const collector_env *env, JNIEnv *jni)
{
    if (!mon.made) {
        mon.cfg = (monitor_config){ env->opt->depth, env->opt->lineno, env->opt->thread, env->opt->cutoff };
        mon.traces.depth = env->opt->depth;
        mon.traces.lineno = env->opt->lineno;
        mon.traces.full_stacks = options_want_stacks(env->opt);
        mon.traces.resolve = resolve_method;
        mon.traces.context = NULL;
        monitor_table_init();
        mon.made = 1;
    } else if (options_want_stacks(env->opt) != mon.traces.full_stacks || env->opt->depth != mon.traces.depth) {
        env->limit("monitor=y: depth= and whether whole stacks are kept (pprof=, flamegraph=, "
                   "collapsed=) keep the values of the first start");
    }
    mon.cfg.cutoff = env->opt->cutoff;
    mon.deadlock_ms = env->opt->deadlock_ms;
    stack_walk_fast_init();                  /* park stacks: the cheap walk */
    for (size_t i = 0; i < sizeof monitor_events / sizeof monitor_events[0]; i++)
        if (events_want(hprof_jvmti, monitor_events[i]) != 0)
            return -1;
    mon.running = 1;
    find_lock_support(hprof_jvmti, jni);
    return 0;
}

static void stop(JNIEnv *jni)
{
    (void)jni;
    if (!mon.running)
        return;
    mon.running = 0;
    for (size_t i = 0; i < sizeof monitor_events / sizeof monitor_events[0]; i++)
        events_unwant(hprof_jvmti, monitor_events[i]);
    clear_vthread_breakpoints(hprof_jvmti);
    if (mon.vt_mounts)
        jvmti_mount_events_off(mon.vt_mount_env);
    mon.vt_mounts = 0;
    if (!mon.park_wrapped && (mon.set_blocker || mon.set_current_blocker))
        clear_park_breakpoints(hprof_jvmti);
}

/* deadlock=: look for cycles every deadlock_ms; a dump when there are more
 * than the last dump reported. */
static int tick(JNIEnv *jni)
{
    static long waited_ms;
    if (!mon.running || mon.deadlock_ms <= 0)
        return 0;
    waited_ms += 20;
    if (waited_ms < mon.deadlock_ms)
        return 0;
    waited_ms = 0;
    return count_deadlocks(jni) > mon.reported;
}

static void dump(dump_target *t, JNIEnv *jni)
{
    text_writer *text = report_text(&t->report);   /* the monitor sections: text only */
    if (!mon.made || text == NULL)
        return;
    uint32_t deadlocks = write_sections(text, jni);
    char line[OPTIONS_PATH_MAX + 128];
    if (t->verbose) {
        snprintf(line, sizeof line, "hprof: monitor=y: %s", park_method());
        dump_note(t, line);
        if (mon.vthread_class) {
            snprintf(line, sizeof line, "hprof: monitor=y: virtual threads: parks %s, %llu of them pinned to "
                     "their carrier (%.3f s); %llu contended monitor enters and waits pinned (%.3f s, %s); "
                     "%llu episodes not timed (more than %u pending)",
                     mon.vt_breakpoints ? "timed by breakpoints on VirtualThread.park"
                     : mon.vt_mounts ? "timed from their unmounts to their mounts" : "not timed",
                     (unsigned long long)__atomic_load_n(&mon.vt_pinned, __ATOMIC_RELAXED),
                     (double)__atomic_load_n(&mon.vt_pinned_ns, __ATOMIC_RELAXED) / 1e9,
                     (unsigned long long)__atomic_load_n(&mon.vt_pinned_monitor, __ATOMIC_RELAXED),
                     (double)__atomic_load_n(&mon.vt_pinned_monitor_ns, __ATOMIC_RELAXED) / 1e9,
                     mon.vt_monitors_pin ? "all of them: this JDK never unmounts in a monitor"
                                         : "under a native frame or a class initializer",
                     (unsigned long long)vt_pending_dropped(), VT_PENDING_MAX / 4 * 3);
            dump_note(t, line);
        }
    }
    uint64_t unnamed = atomic_load_explicit(&mon.vt_unnamed, memory_order_relaxed);
    if (unnamed) {
        snprintf(line, sizeof line, "hprof: monitor=y: thread=y: %llu episodes of virtual threads beyond the first "
                 "%u named have rows without a thread", (unsigned long long)unnamed, VTHREADS_NAMED_MAX);
        dump_note(t, line);
    }
    if (deadlocks) {
        snprintf(line, sizeof line, "hprof: %u deadlock%s found: see DEADLOCKS in %s", deadlocks,
                 deadlocks == 1 ? "" : "s", t->out_path);
        dump_note(t, line);
    }
    mon.reported = deadlocks;
}

static void reset(JNIEnv *jni)
{
    (void)jni;
    if (mon.made)
        monitor_table_reset();
}

static void status(char *line, size_t size)
{
    monitor_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0, episodes = 0;
    if (mon.made && monitor_table_rows(&rows, &n, &total) == 0) {
        for (uint32_t i = 0; i < n; i++) {
            if (rows[i].kind == BLOCK_PINNED)
                total -= rows[i].nanos;     /* counted under its own kind too */
            else
                episodes += rows[i].count;
        }
        free(rows);
    }
    snprintf(line, size, "monitor=y: %s, %llu blocking episodes, %.3f s blocked (%s)",
             mon.running ? "timing" : "stopped", (unsigned long long)episodes, (double)total / 1e9, park_method());
}

const collector monitor_collector = {
    .name = "monitor=y", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe,
    .start = start, .thread_end = thread_end, .tick_ms = 20, .tick = tick, .dump = dump,
    .reset = reset, .stop = stop, .status = status, .profile_kind = "lock", .snapshot = snapshot,
    .extra_kind = "wait", .extra_snapshot = wait_snapshot,
};
