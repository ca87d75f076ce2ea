/*
 * monitor_parks.c: monitor=y's parks on java.util.concurrent locks. Every
 * LockSupport.park* and Condition.await ends in the native Unsafe.park with
 * the thread's parkBlocker naming the lock: the native is bound to a
 * wrapper that times the real park (wrapped_park). The JDK binds it before
 * VMInit, so the early binds are recorded and the bind is made again from
 * a ClassPrepare in boot code; until then, and for good if that fails,
 * breakpoints on LockSupport.setBlocker and setCurrentBlocker time the
 * parks. Virtual threads' parks are monitor_vthreads.c's. See
 * monitor_parts.h.
 */
#include "monitor_parts.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "jvmti_support.h"

monitor_park_state mon_parks;

typedef void (JNICALL *park_fn)(JNIEnv *env, jobject unsafe, jboolean absolute, jlong time);

#define MAX_EARLY_BINDS 4096
typedef struct early_bind { jmethodID method; void *address; } early_bind;

/* What only this file reads: Unsafe.park's bind. Unsafe.park(boolean, long)
 * as the JVM implements it, and the binds seen before VMInit: the JDK binds
 * Unsafe's natives in the primordial phase, when JVMTI cannot name a method
 * yet; the binds are kept (id, address) and named at VMInit. */
static struct {
    serial_t        unsafe_class;  /* class serial of jdk.internal.misc.Unsafe, whose frames traces skip */
    jmethodID       unsafe_park;   /* Unsafe.park(boolean, long), once found among the early binds */
    int             wrap_pending;  /* found: bind it at the next ClassPrepare in boot code */
    int             binds_wanted;  /* NativeMethodBind wanted (from OnLoad to VMInit) */
    park_fn         original_park;
    early_bind      early_binds[MAX_EARLY_BINDS];
    uint32_t        n_early_binds;
    pthread_mutex_t binds_lock;
} parks = { .binds_lock = PTHREAD_MUTEX_INITIALIZER };


/* A thread's parks on the same lock object within this time share the stack
 * walked for the first of them: the walk is most of the wrapper's cost, and
 * a thread that parks again and again on one lock does so from the same
 * place. Park times and counts stay exact; only which trace they go to is
 * sampled. HSQLDB (bench/run db, 42k parks/s), share of the JVM's CPU
 * samples spent in the agent: a JVMTI walk each 1 ms 6.0%, AsyncGetCallTrace
 * each 1 ms 3.4% (walks 1.6%), each 4 ms 2.4% (walks 0.7%): perf
 * record -F 2000, samples with an agent frame outside Unsafe_Park. */
#define PARK_STACK_REUSE_NS 4000000u


/* The kind of a park on blocker (see block_kind): on an
 * AbstractOwnableSynchronizer, contention; on anything else, a wait. */
block_kind monitor_park_kind(JNIEnv *jni, jobject blocker)
{
    return mon_parks.aos_class && (*jni)->IsInstanceOf(jni, blocker, mon_parks.aos_class) ? BLOCK_PARK : BLOCK_PARK_WAIT;
}

/* LockSupport.park(blocker) calls setBlocker(t, blocker), parks, then calls
 * setBlocker(t, null); Condition.await brackets its wait the same way with
 * setCurrentBlocker(this) ... setCurrentBlocker(null) around plain park()s.
 * At a breakpoint on either setter's entry, an empty parkBlocker means
 * "about to block", a set one means "done blocking on it". */
static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                  jlocation location)
{
    monitor_park_tls *mine = &monitor_thread_here()->parks;
    (void)jvmti;
    (void)location;
    if ((method != mon_parks.set_blocker && method != mon_parks.set_current_blocker) || mon_parks.park_blocker == NULL ||
        mon_parks.park_wrapped || !mon_common.running)
        return;
    /* A virtual thread's park: timed by the breakpoints on VirtualThread
     * (this thread may resume on another carrier, its thread-local words cannot time it). */
    if (mon_vthreads.vthread_class && (*jni)->IsInstanceOf(jni, thread, mon_vthreads.vthread_class))
        return;
    jobject blocker = (*jni)->GetObjectField(jni, thread, mon_parks.park_blocker);
    if (blocker == NULL) {
        /* About to block: the stack now, so that nothing is added to the
         * hand-over of the lock after the thread is woken. */
        mine->park_stack = 0;
        mine->park_trace = monitor_trace_here(thread, 1, 1, &mine->park_stack);
        mine->park_start = monitor_now_ns();
        return;
    }
    if (mine->park_start) {
        uint64_t parked = monitor_now_ns() - mine->park_start;
        mine->park_start = 0;
        monitor_table_add(mon_common.table, mine->park_trace, mine->park_stack, class_serial_of_object(jni, blocker),
                          monitor_park_kind(jni, blocker), parked);
    }
    (*jni)->DeleteLocalRef(jni, blocker);
}

/* Unsafe.park, wrapped: every LockSupport.park* and Condition.await ends
 * here with the thread's parkBlocker already set (setBlocker or
 * setCurrentBlocker ran before). Timing the park itself costs two clock reads
 * and a stack walk, against two JVMTI breakpoint events (which keep
 * setBlocker interpreted) on the fallback path. */
static void JNICALL wrapped_park(JNIEnv *env, jobject unsafe, jboolean absolute, jlong time)
{
    monitor_park_tls *mine = &monitor_thread_here()->parks;
    jthread thread = NULL;
    jobject blocker = NULL;
    if (!mon_common.running) {                    /* stopped: the bind stays, the timing goes */
        parks.original_park(env, unsafe, absolute, time);
        return;
    }
    if ((*hprof_jvmti)->GetCurrentThread(hprof_jvmti, &thread) == JVMTI_ERROR_NONE && thread) {
        uint64_t tid = mon_vthreads.breakpoints || mon_vthreads.mounts ? monitor_vthread_tid(env, thread) : 0;
        if (tid) {
            /* A virtual thread that could not yield parks its carrier
             * (VirtualThread.parkOnCarrierThread): pinned. */
            uint64_t t0 = monitor_now_ns();
            parks.original_park(env, unsafe, absolute, time);
            monitor_vthread_parked_carrier(env, tid, t0);
            (*env)->DeleteLocalRef(env, thread);
            return;
        }
        blocker = (*env)->GetObjectField(env, thread, mon_parks.park_blocker);
    }
    if (blocker == NULL) {                 /* park() outside any blocker: not a lock */
        parks.original_park(env, unsafe, absolute, time);
        if (thread)
            (*env)->DeleteLocalRef(env, thread);
        return;
    }
    /* Everything about the lock before blocking, so that nothing slows the
     * hand-over after wake-up: one IsSameObject when it is a recent one. */
    park_lock *e = NULL;
    for (int i = 0; i < PARK_LOCKS_KEPT && !e; i++)
        if (mine->park_locks[i].lock && (*env)->IsSameObject(env, blocker, mine->park_locks[i].lock))
            e = &mine->park_locks[i];
    if (e == NULL) {
        e = &mine->park_locks[mine->park_locks_next++ % PARK_LOCKS_KEPT];
        if (e->lock)
            (*env)->DeleteWeakGlobalRef(env, e->lock);
        e->lock = (*env)->NewWeakGlobalRef(env, blocker);   /* NULL: not remembered, still timed */
        e->lock_class = class_serial_of_object(env, blocker);
        e->kind = monitor_park_kind(env, blocker);
        e->trace = 0;
        e->stack = 0;
    }
    uint64_t start = monitor_now_ns();
    if (e->trace == 0 || start - e->walked >= PARK_STACK_REUSE_NS) {
        /* AsyncGetCallTrace from this native, and the thread's own cache of
         * park stacks: 64 slots, parks come from a few places. */
        serial_t thread_serial = mon_common.cfg.per_thread ? thread_serial_of(NULL) : 0;
        int cached_frames = mon_common.traces.full_stacks ? STACK_MAX_FRAMES : mon_common.traces.depth;
        e->trace = stack_trace_here_skipping(env, &mon_common.traces,
                                             thread_trace_cache(TRACE_CACHE_MONITOR, 6, cached_frames),
                                             mon_parks.skip, mon_parks.n_skip, thread_serial, &e->stack, NULL);
        e->trace = monitor_trace_or_empty(e->trace, thread_serial, &e->stack);
        e->walked = start;
        start = monitor_now_ns();
    }
    serial_t trace = e->trace, lock_class = e->lock_class;
    stack_id stack = e->stack;
    block_kind kind = (block_kind)e->kind;
    parks.original_park(env, unsafe, absolute, time);
    uint64_t parked = monitor_now_ns() - start;
    if (!(*env)->ExceptionCheck(env))
        monitor_table_add(mon_common.table, trace, stack, lock_class, kind, parked);
    (*env)->DeleteLocalRef(env, blocker);
    (*env)->DeleteLocalRef(env, thread);
}

void monitor_parks_thread_end(JNIEnv *jni)
{
    monitor_park_tls *mine = &monitor_thread_here()->parks;
    for (int i = 0; i < PARK_LOCKS_KEPT; i++)
        if (mine->park_locks[i].lock) {
            (*jni)->DeleteWeakGlobalRef(jni, mine->park_locks[i].lock);
            mine->park_locks[i].lock = NULL;
        }
}

static void JNICALL on_native_bind(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                   void *address, void **new_address_ptr)
{
    (void)jvmti; (void)jni; (void)thread; (void)new_address_ptr;
    pthread_mutex_lock(&parks.binds_lock);
    if (parks.n_early_binds < MAX_EARLY_BINDS) {
        parks.early_binds[parks.n_early_binds].method = method;
        parks.early_binds[parks.n_early_binds].address = address;
        parks.n_early_binds++;
    }
    pthread_mutex_unlock(&parks.binds_lock);
}

/* At VMInit: find Unsafe.park's implementation among the early binds.
 * Returns 1 if found (the bind itself waits for monitor_agent_class_prepare). */
static int find_unsafe_park(jvmtiEnv *jvmti, JNIEnv *jni)
{
    if (parks.binds_wanted) {
        events_unwant(jvmti, JVMTI_EVENT_NATIVE_METHOD_BIND);
        parks.binds_wanted = 0;
    }
    jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
    if (unsafe == NULL) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    parks.unsafe_class = class_serial_of_klass(unsafe);
    jmethodID park = (*jni)->GetMethodID(jni, unsafe, "park", "(ZJ)V");
    (*jni)->ExceptionClear(jni);
    (*jni)->DeleteLocalRef(jni, unsafe);
    void *address = NULL;
    pthread_mutex_lock(&parks.binds_lock);
    for (uint32_t i = 0; park && i < parks.n_early_binds; i++)
        if (parks.early_binds[i].method == park)
            address = parks.early_binds[i].address;   /* the last bind wins, as in the JVM */
    pthread_mutex_unlock(&parks.binds_lock);
    if (address == NULL)
        return 0;
    parks.original_park = (park_fn)address;
    parks.unsafe_park = park;
    return 1;
}

/* The breakpoints on LockSupport's setters off (the wrapper times the parks
 * instead, or monitor=y stopped). */
static void clear_park_breakpoints(jvmtiEnv *jvmti)
{
    if (mon_parks.set_blocker)
        (*jvmti)->ClearBreakpoint(jvmti, mon_parks.set_blocker, 0);
    if (mon_parks.set_current_blocker)
        (*jvmti)->ClearBreakpoint(jvmti, mon_parks.set_current_blocker, 0);
    if (!mon_vthreads.breakpoints)                /* still wanted for virtual threads' parks */
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_BREAKPOINT, NULL),
                     "SetEventNotificationMode (Breakpoint off)");
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
    if (!parks.wrap_pending)
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
    parks.wrap_pending = 0;
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
    mon_parks.park_wrapped = 1;
    clear_park_breakpoints(jvmti);
}

/* Look a JNI member up; a missing one (another JDK's layout) disables just the
 * feature that needs it. */
int monitor_lookup_failed(JNIEnv *jni, const void *found, const char *what)
{
    if (found != NULL && !(*jni)->ExceptionCheck(jni))
        return 0;
    (*jni)->ExceptionClear(jni);
    fprintf(stderr, "hprof: warning: %s not found in this JDK: parking on java.util.concurrent "
            "locks is not timed, and such locks are left out of deadlock detection\n", what);
    return 1;
}

void monitor_parks_start(jvmtiEnv *jvmti, JNIEnv *jni)
{
    jclass thread_class = (*jni)->FindClass(jni, "java/lang/Thread");
    if (monitor_lookup_failed(jni, thread_class, "java.lang.Thread"))
        return;
    mon_parks.park_blocker = (*jni)->GetFieldID(jni, thread_class, "parkBlocker", "Ljava/lang/Object;");
    (*jni)->DeleteLocalRef(jni, thread_class);
    if (monitor_lookup_failed(jni, mon_parks.park_blocker, "Thread.parkBlocker")) {
        mon_parks.park_blocker = NULL;
        return;
    }
    jclass aos = (*jni)->FindClass(jni, "java/util/concurrent/locks/AbstractOwnableSynchronizer");
    if (!monitor_lookup_failed(jni, aos, "AbstractOwnableSynchronizer")) {
        mon_parks.aos_owner = (*jni)->GetFieldID(jni, aos, "exclusiveOwnerThread", "Ljava/lang/Thread;");
        if (!monitor_lookup_failed(jni, mon_parks.aos_owner, "AbstractOwnableSynchronizer.exclusiveOwnerThread"))
            mon_parks.aos_class = (*jni)->NewGlobalRef(jni, aos);
        (*jni)->DeleteLocalRef(jni, aos);
    }
    jclass lock_support = (*jni)->FindClass(jni, "java/util/concurrent/locks/LockSupport");
    if (monitor_lookup_failed(jni, lock_support, "LockSupport"))
        return;
    mon_parks.set_blocker = (*jni)->GetStaticMethodID(jni, lock_support, "setBlocker",
                                                "(Ljava/lang/Thread;Ljava/lang/Object;)V");
    if (monitor_lookup_failed(jni, mon_parks.set_blocker, "LockSupport.setBlocker(Thread, Object)")) {
        mon_parks.set_blocker = NULL;
        (*jni)->DeleteLocalRef(jni, lock_support);
        return;
    }
    mon_parks.lock_support = class_serial_of_klass(lock_support);
    /* setCurrentBlocker is public and only used to bracket waits (JDK 17+);
     * without it Condition.await goes untimed, which is said once. */
    mon_parks.set_current_blocker = (*jni)->GetStaticMethodID(jni, lock_support, "setCurrentBlocker",
                                                        "(Ljava/lang/Object;)V");
    if (mon_parks.set_current_blocker == NULL || (*jni)->ExceptionCheck(jni)) {
        (*jni)->ExceptionClear(jni);
        mon_parks.set_current_blocker = NULL;
        fprintf(stderr, "hprof: warning: LockSupport.setCurrentBlocker not found: "
                "Condition.await is not timed on this JDK\n");
    }
    (*jni)->DeleteLocalRef(jni, lock_support);

    /* Breakpoints on the two setters time the parks until Unsafe.park can be
     * bound to wrapped_park (monitor_agent_class_prepare), and for good if it
     * cannot (it costs more: see README). */
    /* Virtual threads first: looking their classes up prepares classes,
     * which must not meet a pending bind (on_class_prepare) from here. */
    if (parks.unsafe_class == 0) {
        jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
        if (unsafe) {
            parks.unsafe_class = class_serial_of_klass(unsafe);
            (*jni)->DeleteLocalRef(jni, unsafe);
        }
        (*jni)->ExceptionClear(jni);
    }
    if (mon_parks.n_skip == 0) {
        mon_parks.skip[0] = mon_parks.lock_support;
        mon_parks.skip[1] = parks.unsafe_class;
        mon_parks.n_skip = 2;
    }
    monitor_vthreads_start(jvmti, jni);
    /* The bind waits for a ClassPrepare in boot code (on_class_prepare). */
    if (!mon_parks.park_wrapped && !parks.wrap_pending && find_unsafe_park(jvmti, jni) &&
        events_want(jvmti, JVMTI_EVENT_CLASS_PREPARE) == 0)
        parks.wrap_pending = 1;
    if (mon_parks.park_wrapped)
        return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmti)->GetCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_generate_breakpoint_events) {
        mon_parks.set_blocker = NULL;             /* no breakpoints: park_method says so */
        mon_parks.set_current_blocker = NULL;
        return;
    }
    if (jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon_parks.set_blocker, 0), "SetBreakpoint (LockSupport)"))
        mon_parks.set_blocker = NULL;
    if (mon_parks.set_current_blocker &&
        jvmti_failed((*jvmti)->SetBreakpoint(jvmti, mon_parks.set_current_blocker, 0),
                     "SetBreakpoint (LockSupport.setCurrentBlocker)"))
        mon_parks.set_current_blocker = NULL;
    if ((mon_parks.set_blocker || mon_parks.set_current_blocker) &&
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT, NULL),
                     "SetEventNotificationMode (Breakpoint)")) {
        mon_parks.set_blocker = NULL;
        mon_parks.set_current_blocker = NULL;
    }
}

const char *monitor_parks_method(void)
{
    if (mon_parks.park_wrapped)
        return "parks timed in a wrapper of Unsafe.park";
    if (mon_parks.set_blocker || mon_parks.set_current_blocker)
        return "parks timed by breakpoints on LockSupport";
    return "parks of platform threads not timed";
}

void monitor_parks_skip_class(serial_t klass)
{
    if (mon_parks.n_skip < PARK_SKIP_MAX) {
        mon_parks.skip[mon_parks.n_skip] = klass;
        __atomic_store_n(&mon_parks.n_skip, mon_parks.n_skip + 1, __ATOMIC_RELEASE);
    }
}

int monitor_parks_breakpoints_set(void)
{
    return !mon_parks.park_wrapped && (mon_parks.set_blocker || mon_parks.set_current_blocker);
}

void monitor_parks_stop(jvmtiEnv *jvmti)
{
    if (monitor_parks_breakpoints_set())
        clear_park_breakpoints(jvmti);
}

int monitor_parks_subscribe(const collector_env *env, int first_start)
{
    static const event_subscription subs[] = {
        { JVMTI_EVENT_BREAKPOINT, EVENT_FN(on_breakpoint) },
        { JVMTI_EVENT_NATIVE_METHOD_BIND, EVENT_FN(on_native_bind) },
        { JVMTI_EVENT_CLASS_PREPARE, EVENT_FN(on_class_prepare) },
    };
    if (events_subscribe_all(subs, sizeof subs / sizeof subs[0]) != 0)
        return -1;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if (!env->live && first_start && !parks.binds_wanted &&
        (*hprof_jvmti)->GetCapabilities(hprof_jvmti, &caps) == JVMTI_ERROR_NONE &&
        caps.can_generate_native_method_bind_events && events_want(hprof_jvmti, JVMTI_EVENT_NATIVE_METHOD_BIND) == 0)
        parks.binds_wanted = 1;
    return 0;
}
