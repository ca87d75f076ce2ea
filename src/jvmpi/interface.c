/*
 * interface: the JVMPI_Interface functions the agent calls, each mapped to
 * JVMTI as the transition article describes, or emulated where JVMTI has no
 * equivalent (ThreadHasRun, DisableGC/EnableGC, GetThreadObject, ...).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer.h"
#include "../agent/jvmti_support.h"
#include "../agent/stack_walk_fast.h"
#include "../options/jvm_args.h"

atomic_int jvmpi_live;

/* What the agent asked of the interface. */
typedef struct agent_requests {
    /* Which events the agent enabled: all off at start-up (the specification). */
    atomic_int enabled[JVMPI_MAX_EVENT_TYPE_VAL + 1];
    atomic_int gc_disabled;     /* DisableGC's nesting (below) */
} agent_requests;

static agent_requests requested;

int jvmpi_enabled(jint event_type) {
    return event_type > 0 && event_type <= JVMPI_MAX_EVENT_TYPE_VAL && atomic_load(&requested.enabled[event_type]);
}

/* The events the specification defines (the numbers between are unused). */
static int is_defined(jint e) {
    return (e >= JVMPI_EVENT_METHOD_ENTRY && e <= JVMPI_EVENT_INSTRUCTION_START) ||
           (e >= JVMPI_EVENT_THREAD_START && e <= JVMPI_EVENT_GC_FINISH && e != 36);
}

/* Dumps are only ever requested (the specification). */
static int is_dump(jint e) {
    return e == JVMPI_EVENT_HEAP_DUMP || e == JVMPI_EVENT_MONITOR_DUMP || e == JVMPI_EVENT_OBJECT_DUMP;
}

/* Every defined event answers JVMPI_SUCCESS, posted or not: agents of the
 * time stopped enabling at the first refusal. What is never posted is
 * listed in the README. */
static JNIEnv *current_jni(void);

static jint switch_event(jint event_type, int on) {
    if (!is_defined(event_type)) return JVMPI_NOT_AVAILABLE;
    if (is_dump(event_type)) return JVMPI_NOT_AVAILABLE;
    /* The JVM makes array classes without a ClassPrepare (Made[] makes
     * Base[] too, with no object of it), so the layer announces them late:
     * at the first OBJECT_ALLOC that names one, or before a heap dump. An
     * agent that switches CLASS_LOAD off and then asks for a heap dump
     * (HPROF at JVM_SHUT_DOWN) would meet ids it was never told of, where
     * a JVMPI VM had announced each class as it made it: the late ones come
     * now, while the agent still listens. */
    JNIEnv *jni = NULL;
    if (!on && event_type == JVMPI_EVENT_CLASS_LOAD && jvmpi_enabled(event_type) && atomic_load(&jvmpi_live) &&
        (jni = current_jni()) != NULL)
        jvmpi_announce_loaded_classes(jni);
    int was = atomic_exchange(&requested.enabled[event_type], on);
    if (was == on) return JVMPI_SUCCESS;
    if (jvmpi_translate_switch(event_type, on) != JVMPI_SUCCESS) {
        atomic_store(&requested.enabled[event_type], was);
        return JVMPI_FAIL;
    }
    return JVMPI_SUCCESS;
}

static jint enable_event(jint event_type, void *arg) { (void)arg; return switch_event(event_type, 1); }
static jint disable_event(jint event_type, void *arg) { (void)arg; return switch_event(event_type, 0); }

static JNIEnv *current_jni(void) {
    JNIEnv *jni = NULL;
    if (jvmpi_vm == NULL || (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) != JNI_OK) return NULL;
    return jni;
}

static jint request_class_load(JNIEnv *jni, jobjectID class_id) {
    jobject klass = jvmpi_object_of(jni, class_id);
    if (klass == NULL) {
        if (jvmpi_diagnostics())
            fprintf(stderr, "jvmpi: RequestEvent(CLASS_LOAD, %p): no such object (freed?)\n", (void *)class_id);
        return JVMPI_FAIL;
    }
    jobjectID id = jvmpi_post_class_load(jni, (jclass)klass, 1);
    if (id != class_id && jvmpi_diagnostics())
        fprintf(stderr, "jvmpi: RequestEvent(CLASS_LOAD, %p): the object found %s\n", (void *)class_id,
                id == NULL ? "is not a prepared class, or was not read" : "has another id");
    (*jni)->DeleteLocalRef(jni, klass);
    return JVMPI_SUCCESS;
}

static jint request_thread_start(JNIEnv *jni, jobjectID thread_id) {
    jvmpi_thread *t = jvmpi_thread_with_object(jni, thread_id);
    if (t == NULL) return JVMPI_FAIL;
    jvmpi_post_thread_start(jni, t, 1);
    return JVMPI_SUCCESS;
}

static jint request_event(jint event_type, void *arg) {
    JNIEnv *jni = current_jni();
    if (jni == NULL || !atomic_load(&jvmpi_live)) return JVMPI_FAIL;
    switch (event_type) {
    case JVMPI_EVENT_CLASS_LOAD:   return request_class_load(jni, (jobjectID)arg);
    case JVMPI_EVENT_THREAD_START: return request_thread_start(jni, (jobjectID)arg);
    case JVMPI_EVENT_OBJECT_ALLOC: return jvmpi_request_object_alloc(jni, (jobjectID)arg);
    case JVMPI_EVENT_HEAP_DUMP:    return jvmpi_request_heap_dump(jni, (const JVMPI_HeapDumpArg *)arg);
    case JVMPI_EVENT_MONITOR_DUMP: return jvmpi_request_monitor_dump(jni);
    case JVMPI_EVENT_OBJECT_DUMP:  return jvmpi_request_object_dump(jni, (jobjectID)arg);
    default:                       return JVMPI_NOT_AVAILABLE;
    }
}

/* ------------------------------------------------------------ stacks */

/* A constructor of the class being constructed or of one of its
 * superclasses: a frame of `new`'s own making, not the allocating method
 * (the <init> of another class that allocates in its constructor is). */
static int is_own_constructor(JNIEnv *jni, const jvmpi_lineage *constructing, jmethodID method,
                              const jvmpi_frame_facts *facts) {
    if (!facts->is_init) return 0;
    for (int i = 0; i < constructing->n; i++)
        if (constructing->ids[i] == facts->declaring) return 1;
    if (constructing->complete) return 0;
    /* a lineage longer than the one kept: JNI answers */
    jclass declaring = NULL;
    if ((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &declaring) != JVMTI_ERROR_NONE) return 0;
    int own = (*jni)->IsAssignableFrom(jni, constructing->klass, declaring);
    (*jni)->DeleteLocalRef(jni, declaring);
    return own;
}

/* Frames asked of JVMTI at once: a trace's depth plus what is likely left
 * out on top (the tracker's two, and in an OBJECT_ALLOC Object.<init> and a
 * few constructors); more only if that was not enough. HotSpot walks as
 * many frames as asked for, compiled ones decoded, and that walk was most
 * of a GetCallTrace. */
enum { SKIP_MAX = 2, CONSTRUCTORS_LIKELY = 3, CONSTRUCTORS_MAX = 64, FRAMES_ON_STACK = 64 };

/* The thread's top want frames: from the tracker's native call on this
 * thread (here: its JNIEnv) by the cheap walk where it names every frame
 * (it gives a native frame's location as -3), else by JVMTI. */
static int walk_frames(JNIEnv *here, jthread thread, jint want, jvmtiFrameInfo *frames, jint *n) {
    if (here != NULL && jvmpi_in_tracker_call && want <= FRAMES_ON_STACK) {
        frame_ref refs[FRAMES_ON_STACK];
        if (stack_walk_here(here, refs, want, n)) {
            for (jint i = 0; i < *n; i++) {
                frames[i].method = (jmethodID)refs[i].method;
                frames[i].location = refs[i].bci < 0 ? -1 : refs[i].bci;
            }
            return 1;
        }
    }
    return !jvmpi_failed((*jvmpi_jvmti)->GetStackTrace(jvmpi_jvmti, thread, 0, want, frames, n), "GetStackTrace");
}

jint jvmpi_call_trace_skipping(JVMPI_CallTrace *trace, jint depth) {
    if (trace == NULL) return 0;
    trace->num_frames = 0;
    if (depth <= 0 || trace->frames == NULL) return 0;
    /* the calling thread's own trace without the threads' lock: the common case */
    jvmpi_thread *here = jvmpi_thread_current();
    jvmpi_thread *t = here != NULL && here->env == trace->env_id ? here : jvmpi_thread_of(trace->env_id);
    if (t == NULL || t->thread == NULL) return 0;
    /* In an OBJECT_ALLOC posted from Object.<init>, this thread's trace
     * starts at the allocating method, as a JVMPI VM's did (it posted at
     * `new`): the object's constructors, at most CONSTRUCTORS_MAX deep, are
     * left out too. */
    JNIEnv *jni = t == here ? trace->env_id : NULL;
    const jvmpi_lineage *constructing = jni != NULL ? jvmpi_constructing() : NULL;
    jint most = depth + SKIP_MAX + (constructing != NULL ? CONSTRUCTORS_MAX : 0);
    jint want = depth + SKIP_MAX + (constructing != NULL ? CONSTRUCTORS_LIKELY : 0);
    if (want > most) want = most;
    jvmtiFrameInfo on_stack[FRAMES_ON_STACK], *frames = on_stack;
    jint n = 0, first = 0;
    for (;;) {
        if (want > FRAMES_ON_STACK) {
            if (frames != on_stack) free(frames);
            frames = calloc((size_t)want, sizeof *frames);
            if (frames == NULL) return 0;
        }
        if (!walk_frames(jni, t->thread, want, frames, &n)) {
            n = 0;
            break;
        }
        /* The tracker's frames are on top in a METHOD_ENTRY/EXIT handler:
         * they are the layer's, not the program's. */
        first = 0;
        jvmpi_frame_facts facts;
        while (first < n && first < SKIP_MAX) {
            jvmpi_frame_facts_of(frames[first].method, -1, 1, &facts);
            if (!facts.is_tracker) break;
            first++;
        }
        if (constructing != NULL)
            while (first < n - 1) {
                jvmpi_frame_facts_of(frames[first].method, -1, 1, &facts);
                if (!is_own_constructor(jni, constructing, frames[first].method, &facts)) break;
                first++;
            }
        /* the stack goes on beyond what was asked, and depth frames are not
         * there yet past those left out: ask again for enough */
        jint enough = first + depth + (constructing != NULL && first == n - 1 ? 1 : 0);
        if (n < want || n >= enough || want >= most) break;
        want = enough < most ? enough : most;
    }
    for (jint i = first; i < n && trace->num_frames < depth; i++) {
        JVMPI_CallFrame *f = &trace->frames[trace->num_frames++];
        jvmpi_frame_facts facts;
        jvmpi_frame_facts_of(frames[i].method, frames[i].location, 0, &facts);
        f->method_id = frames[i].method;
        f->lineno = frames[i].location < 0 ? -1 : facts.line;
    }
    if (frames != on_stack) free(frames);
    return first;
}

void jvmpi_call_trace(JVMPI_CallTrace *trace, jint depth) { jvmpi_call_trace_skipping(trace, depth); }

/* ------------------------------------------------------------ exit */

/* The VM exits with the agent's code, through System.exit so that it
 * shuts down as any Java exit would (JVM_SHUT_DOWN included). */
static void profiler_exit(jint code) {
    JNIEnv *jni = current_jni();
    if (jni != NULL && atomic_load(&jvmpi_live)) {
        jclass system = (*jni)->FindClass(jni, "java/lang/System");
        jmethodID exit_m = system ? (*jni)->GetStaticMethodID(jni, system, "exit", "(I)V") : NULL;
        if (exit_m != NULL) (*jni)->CallStaticVoidMethod(jni, system, exit_m, code);
    }
    /* Not in a Java thread, before the live phase (JVM_OnLoad: JCov's `help`
     * prints its usage, then exits), or System.exit failed. A JVMPI VM left
     * through exit(), which flushes C's streams: what the agent printed stays. */
    fflush(NULL);
    _exit((int)code);
}

/* ------------------------------------------------------------ threads */

static jlong current_thread_cpu_time(void) {
    jlong ns = 0;
    if (jvmpi_failed((*jvmpi_jvmti)->GetCurrentThreadCpuTime(jvmpi_jvmti, &ns), "GetCurrentThreadCpuTime"))
        return 0;
    return ns;
}

/* can_suspend, held from the agent's first SuspendThread on (1), or not to
 * be had (0). HotSpot lets one JVMTI environment hold it at a time, and a
 * debugger (-agentlib:jdwp) does not start without it: taken at start-up,
 * it kept a debugger listed after the layer from starting. A JVMPI agent
 * suspends Java threads, which exist once every agent has loaded, so asking
 * then leaves it to a debugger if there is one; said once if so. */
static int may_suspend(void) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int asked, held;
    pthread_mutex_lock(&lock);
    if (!asked) {
        asked = 1;
        jvmtiCapabilities caps;
        memset(&caps, 0, sizeof caps);
        caps.can_suspend = 1;
        held = (*jvmpi_jvmti)->AddCapabilities(jvmpi_jvmti, &caps) == JVMTI_ERROR_NONE;
        char debugger[300], holder[340] = "another JVMTI agent";
        if (!held && jvm_loads_debugger(debugger, sizeof debugger))
            snprintf(holder, sizeof holder, "the debugger (%s)", debugger);
        if (!held)
            fprintf(stderr, "jvmpi: note: SuspendThread, SuspendThreadList and ResumeThread do nothing in this "
                    "JVM: HotSpot lets one JVMTI agent at a time suspend threads, and %s holds that\n", holder);
    }
    pthread_mutex_unlock(&lock);
    return held;
}

/* The thread's CPU clock is read even when it cannot be suspended: ThreadHasRun still tells. */
static jint suspend_thread_result(JNIEnv *env) {
    jvmpi_thread *t = jvmpi_thread_of(env);
    if (t == NULL) return JVMPI_FAIL;
    jlong cpu = 0;
    (*jvmpi_jvmti)->GetThreadCpuTime(jvmpi_jvmti, t->thread, &cpu);
    t->cpu_at_suspend[0] = t->cpu_at_suspend[1];
    t->cpu_at_suspend[1] = cpu;
    if (!may_suspend()) return JVMPI_FAIL;
    return jvmpi_failed((*jvmpi_jvmti)->SuspendThread(jvmpi_jvmti, t->thread), "SuspendThread") ? JVMPI_FAIL
                                                                                                : JVMPI_SUCCESS;
}

static void suspend_thread(JNIEnv *env) { (void)suspend_thread_result(env); }

static jint resume_thread_result(JNIEnv *env) {
    jvmpi_thread *t = jvmpi_thread_of(env);
    if (t == NULL || !may_suspend()) return JVMPI_FAIL;
    return jvmpi_failed((*jvmpi_jvmti)->ResumeThread(jvmpi_jvmti, t->thread), "ResumeThread") ? JVMPI_FAIL
                                                                                              : JVMPI_SUCCESS;
}

static void resume_thread(JNIEnv *env) { (void)resume_thread_result(env); }

/* Used CPU between the last two suspensions: JVMTI has no ThreadHasRun,
 * but the thread's CPU clock tells. */
static jboolean thread_has_run(JNIEnv *env) {
    jvmpi_thread *t = jvmpi_thread_of(env);
    return t != NULL && t->cpu_at_suspend[1] > t->cpu_at_suspend[0] ? JNI_TRUE : JNI_FALSE;
}

jint jvmpi_thread_status(JNIEnv *env) {
    jvmpi_thread *t = jvmpi_thread_of(env);
    jint state = 0;
    if (t == NULL || jvmpi_failed((*jvmpi_jvmti)->GetThreadState(jvmpi_jvmti, t->thread, &state), "GetThreadState"))
        return JVMPI_THREAD_RUNNABLE;
    jint status = JVMPI_THREAD_RUNNABLE;
    if (state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) status = JVMPI_THREAD_MONITOR_WAIT;
    else if (state & JVMTI_THREAD_STATE_WAITING) status = JVMPI_THREAD_CONDVAR_WAIT;
    if (state & JVMTI_THREAD_STATE_SUSPENDED) status |= JVMPI_THREAD_SUSPENDED;
    if (state & JVMTI_THREAD_STATE_INTERRUPTED) status |= JVMPI_THREAD_INTERRUPTED;
    return status;
}

struct system_thread { void (*run)(void *); };

static void JNICALL run_system_thread(jvmtiEnv *jvmti, JNIEnv *jni, void *arg) {
    (void)jvmti;
    struct system_thread s = *(struct system_thread *)arg;
    free(arg);
    jvmpi_thread_here(jni);           /* announced before it runs the agent's code */
    s.run(NULL);
}

static jint create_system_thread(char *name, jint priority, void (*f)(void *)) {
    JNIEnv *jni = current_jni();
    if (jni == NULL || f == NULL || !atomic_load(&jvmpi_live)) return JNI_ERR;
    jclass k = (*jni)->FindClass(jni, "java/lang/Thread");
    jmethodID init = k ? (*jni)->GetMethodID(jni, k, "<init>", "(Ljava/lang/String;)V") : NULL;
    jstring jname = init ? (*jni)->NewStringUTF(jni, name ? name : "JVMPI agent") : NULL;
    jthread thread = jname ? (*jni)->NewObject(jni, k, init, jname) : NULL;
    if (thread == NULL) {
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        return JNI_ERR;
    }
    struct system_thread *s = malloc(sizeof *s);
    if (s == NULL) return JNI_ERR;
    s->run = f;
    if (priority < JVMTI_THREAD_MIN_PRIORITY || priority > JVMTI_THREAD_MAX_PRIORITY)
        priority = JVMTI_THREAD_NORM_PRIORITY;
    if (jvmpi_failed((*jvmpi_jvmti)->RunAgentThread(jvmpi_jvmti, thread, run_system_thread, s, priority),
                     "RunAgentThread")) {
        free(s);
        return JNI_ERR;
    }
    return JNI_OK;
}

static void set_thread_local_storage(JNIEnv *env, void *ptr) {
    jvmpi_thread *t = env == current_jni() ? jvmpi_thread_here(env) : jvmpi_thread_of(env);
    if (t != NULL) t->storage = ptr;
}

static void *get_thread_local_storage(JNIEnv *env) {
    /* the calling thread, without a lock: the common case */
    jvmpi_thread *here = jvmpi_thread_current();
    if (here != NULL && here->env == env) return here->storage;
    jvmpi_thread *t = jvmpi_thread_of(env);
    return t != NULL ? t->storage : NULL;
}

/* ------------------------------------------------------------ GC, ids */

/* JVMPI disabled GC so that ids would not move while an agent held them.
 * The layer's ids are tags, which never move: nothing to disable. The
 * nesting is kept so that RunGC can refuse inside DisableGC, as JVMPI did. */
static void disable_gc(void) { atomic_fetch_add(&requested.gc_disabled, 1); }
static void enable_gc(void) {
    if (atomic_fetch_sub(&requested.gc_disabled, 1) <= 0) atomic_fetch_add(&requested.gc_disabled, 1);
}
static void run_gc(void) {
    if (atomic_load(&requested.gc_disabled) > 0) {
        fprintf(stderr, "jvmpi: RunGC called between DisableGC and EnableGC: ignored (the specification "
                        "forbids it)\n");
        return;
    }
    jvmpi_gc_run(current_jni());
}

static jobjectID get_thread_object(JNIEnv *env) {
    jvmpi_thread *t = jvmpi_thread_of(env);
    return t != NULL ? jvmpi_id_of(t->thread) : NULL;
}

static jobjectID get_method_class(jmethodID method) {
    jclass klass = NULL;
    if (method == NULL ||
        jvmpi_failed((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &klass), "GetMethodDeclaringClass"))
        return NULL;
    jobjectID id = jvmpi_id_of(klass);
    JNIEnv *jni = current_jni();
    if (jni != NULL) (*jni)->DeleteLocalRef(jni, klass);
    return id;
}

static jobject id_to_jobject(jobjectID id) {
    JNIEnv *jni = current_jni();
    return jni != NULL ? jvmpi_object_of(jni, id) : NULL;
}

static jobjectID jobject_to_id(jobject object) { return jvmpi_id_of(object); }

static void suspend_thread_list(jint count, JNIEnv **list, jint *results) {
    for (jint i = 0; i < count; i++) {
        jint result = suspend_thread_result(list[i]);
        if (results) results[i] = result;
    }
}

static void resume_thread_list(jint count, JNIEnv **list, jint *results) {
    for (jint i = 0; i < count; i++) {
        jint result = resume_thread_result(list[i]);
        if (results) results[i] = result;
    }
}

JVMPI_Interface jvmpi_interface = {
    .version = JVMPI_VERSION_1_2,
    .NotifyEvent = NULL,
    .EnableEvent = enable_event,
    .DisableEvent = disable_event,
    .RequestEvent = request_event,
    .GetCallTrace = jvmpi_call_trace,
    .ProfilerExit = profiler_exit,
    .RawMonitorCreate = jvmpi_raw_create,
    .RawMonitorEnter = jvmpi_raw_enter,
    .RawMonitorExit = jvmpi_raw_exit,
    .RawMonitorWait = jvmpi_raw_wait,
    .RawMonitorNotifyAll = jvmpi_raw_notify_all,
    .RawMonitorDestroy = jvmpi_raw_destroy,
    .GetCurrentThreadCpuTime = current_thread_cpu_time,
    .SuspendThread = suspend_thread,
    .ResumeThread = resume_thread,
    .GetThreadStatus = jvmpi_thread_status,
    .ThreadHasRun = thread_has_run,
    .CreateSystemThread = create_system_thread,
    .SetThreadLocalStorage = set_thread_local_storage,
    .GetThreadLocalStorage = get_thread_local_storage,
    .DisableGC = disable_gc,
    .EnableGC = enable_gc,
    .RunGC = run_gc,
    .GetThreadObject = get_thread_object,
    .GetMethodClass = get_method_class,
    .jobjectID2jobject = id_to_jobject,
    .jobject2jobjectID = jobject_to_id,
    .SuspendThreadList = suspend_thread_list,
    .ResumeThreadList = resume_thread_list,
};
