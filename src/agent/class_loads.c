/*
 * class_loads: why each class was loaded. At each JVMTI ClassLoad (posted on
 * the loading thread when the class has just been defined, before it is
 * linked) the loading thread's stack becomes the class's load trace in the
 * shared tables (class_set_load_trace), which the LOAD CLASS, CLASS DUMP and
 * CLS records of heap=dump carry, as HPROF's did.
 *
 * ClassLoad rather than ClassPrepare: a class is prepared when it is first
 * linked, which for a class loaded with ClassLoader.loadClass can be much
 * later and elsewhere (its first use); the load is what the call asked for.
 *
 * The frames on top that only carry the load out are left out, so a trace
 * begins in the code whose execution asked for the class: the `new Foo()`,
 * the Class.forName or loadClass call, the lambda's call site. Those are the
 * frames of class loaders (java.lang.ClassLoader and its subclasses, the
 * JDK's own loaders in jdk.internal.loader), of java.lang.Class (forName),
 * of reflection and of java.lang.invoke (a lambda's class is spun and
 * defined there), and the JDK's helpers between them (see
 * machinery_by_name). Without that, at depth=4 every class the application
 * loader loads had the same four frames of BuiltinClassLoader.
 *
 * Wanted only where a record carries the trace (heap=dump, heap=all, and
 * heap=sites with format=b, whose LOAD CLASS records do): other runs do not
 * turn the event on for this and pay nothing.
 */
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "events.h"
#include "jvmti_support.h"

/* Frames walked: depth= frames kept below up to this many left out. A load
 * from the class path under the application loader is about 15-20 frames of
 * loaders deep (JDK 17 and 25): the first walk takes depth= + FIRST_MARGIN
 * (JVMTI's GetStackTrace costs per frame), a second one deeper only when
 * that was not enough. */
enum { FIRST_MARGIN = 24, MACHINERY_MARGIN = 64, WALK_FRAMES = 256 + MACHINERY_MARGIN, MEMO_SLOTS = 1024 };

/* Whether a method is class-loading machinery, remembered by jmethodID
 * (HotSpot never reuses one for another method): a load walks the same few
 * dozen loader methods each time. Direct-mapped; a collision only asks again. */
typedef struct machinery_memo {
    jmethodID method;            /* NULL: empty */
    int       machinery;
} machinery_memo;

static struct {
    atomic_int      on;
    trace_builder   builder;
    int             per_thread;  /* thread=y: traces carry the loading thread */
    jclass          class_loader; /* global reference to java.lang.ClassLoader */
    atomic_uint     traced;      /* classes given a trace, for `status` */
    atomic_ullong   handler_ns;  /* thread CPU time in on_class_load, for verbose=all */
    pthread_mutex_t memo_lock;
    machinery_memo  memo[MEMO_SLOTS];
} loads = { .memo_lock = PTHREAD_MUTEX_INITIALIZER };

/* Classes of the JDK that carry out a load for someone else, by their Java
 * names (as frames name them): a whole package when it ends in '.', a class
 * and its nested classes when it ends in '$', else one class. */
static int machinery_by_name(const char *name)
{
    static const char *const names[] = {
        "java.lang.invoke.", "jdk.internal.loader.", "jdk.internal.reflect.", "java.lang.reflect.",
        "sun.invoke.", "java.lang.Class", "java.lang.Class$", "java.lang.ClassLoader$",
        "java.lang.System$", "java.security.AccessController", "java.security.SecureClassLoader$",
        "java.net.URLClassLoader$", "jdk.internal.misc.Unsafe",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        char last = names[i][n - 1];
        if (last == '.' || last == '$' ? strncmp(name, names[i], n) == 0 : strcmp(name, names[i]) == 0)
            return 1;
    }
    return 0;
}

/* A class loader's own method: its class is java.lang.ClassLoader or a
 * subclass (the JDK's, URLClassLoader, or the application's). */
static int machinery_by_class(JNIEnv *jni, jmethodID method)
{
    jclass declaring = NULL;
    if ((*hprof_jvmti)->GetMethodDeclaringClass(hprof_jvmti, method, &declaring) != JVMTI_ERROR_NONE ||
        declaring == NULL)
        return 0;
    int loader = (*jni)->IsAssignableFrom(jni, declaring, loads.class_loader) == JNI_TRUE;
    (*jni)->DeleteLocalRef(jni, declaring);
    return loader;
}

static int is_machinery(JNIEnv *jni, jmethodID method)
{
    uintptr_t h = (uintptr_t)method;
    machinery_memo *slot = &loads.memo[((h ^ (h >> 10)) >> 3) & (MEMO_SLOTS - 1)];
    pthread_mutex_lock(&loads.memo_lock);
    int known = slot->method == method, machinery = slot->machinery;
    pthread_mutex_unlock(&loads.memo_lock);
    if (known)
        return machinery;
    method_info mi;
    serial_t m = resolve_method(loads.builder.tables, method, NULL);
    if (m == 0 || method_get(loads.builder.tables, m, &mi) != 0)
        return 0;                            /* unknown: kept, as [unwalkable] would be */
    machinery = machinery_by_name(mi.class_name) || machinery_by_class(jni, method);
    pthread_mutex_lock(&loads.memo_lock);
    *slot = (machinery_memo){ method, machinery };
    pthread_mutex_unlock(&loads.memo_lock);
    return machinery;
}

/* The calling thread's top frames, up to depth= + margin: 0, or -1. */
static int walk(jvmtiFrameInfo *info, jint margin, jint *count)
{
    jint want = loads.builder.depth + margin;
    if (want > WALK_FRAMES)
        want = WALK_FRAMES;
    return (*hprof_jvmti)->GetStackTrace(hprof_jvmti, NULL, 0, want, info, count) == JVMTI_ERROR_NONE ? 0 : -1;
}

static jint machinery_on_top(JNIEnv *jni, const jvmtiFrameInfo *info, jint count)
{
    jint first = 0;
    while (first < count && is_machinery(jni, info[first].method))
        first++;
    return first;
}

static void trace_class_load(JNIEnv *jni, jthread thread, serial_t class_serial)
{
    jvmtiFrameInfo info[WALK_FRAMES];
    jint count = 0;
    if (walk(info, FIRST_MARGIN, &count) != 0)
        return;
    jint first = machinery_on_top(jni, info, count);
    if (count == loads.builder.depth + FIRST_MARGIN && count - first < loads.builder.depth) {
        if (walk(info, MACHINERY_MARGIN, &count) != 0)
            return;
        first = machinery_on_top(jni, info, count);
    }
    uint32_t n = (uint32_t)(count - first);
    if (n > (uint32_t)loads.builder.depth)
        n = (uint32_t)loads.builder.depth;
    /* No frame of the program: the JVM's own load (at a thread's start,
     * say), or machinery all the way down. The class keeps the empty trace. */
    if (n == 0)
        return;
    frame_ref frames[WALK_FRAMES];
    for (uint32_t i = 0; i < n; i++) {
        const jvmtiFrameInfo *f = &info[first + (jint)i];
        frames[i] = (frame_ref){ f->location < 0 ? BCI_NATIVE : (int32_t)f->location, f->method };
    }
    serial_t thread_serial = loads.per_thread ? thread_serial_of_self(thread) : 0;
    serial_t trace = trace_build(&loads.builder, thread_serial, frames, n, NULL);
    if (trace && class_set_load_trace(agent_tables(), class_serial, trace))
        atomic_fetch_add_explicit(&loads.traced, 1, memory_order_relaxed);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)jvmti;
    if (!atomic_load_explicit(&loads.on, memory_order_acquire))
        return;
    uint64_t t0 = thread_cpu_ns();
    serial_t class_serial = class_serial_of_klass(klass);
    /* Not again once its first load was recorded (or marked as before the start). */
    if (class_serial && class_load_trace(agent_tables(), class_serial) == 0)
        trace_class_load(jni, thread, class_serial);
    atomic_fetch_add_explicit(&loads.handler_ns, thread_cpu_ns() - t0, memory_order_relaxed);
}

/* ------------------------------------------------------------ collector */

static int wanted(const hprof_options *opt)
{
    return opt->heap == HEAP_DUMP || opt->heap == HEAP_ALL || (opt->heap == HEAP_SITES && opt->format == 'b');
}

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    if (env->live)
        env->limit("class loading traces: classes loaded before the attach have none (trace 300000)");
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    return 0;
}

static int subscribe(const collector_env *env)
{
    (void)env;
    return events_subscribe(JVMTI_EVENT_CLASS_LOAD, EVENT_FN(on_class_load));
}

/* The classes loaded before the start keep the empty trace: HotSpot posts
 * ClassLoad again for some of them later, whose stack did not load them. */
static void mark_loaded_before(JNIEnv *jni)
{
    jint n = 0;
    jclass *classes = NULL;
    if (jvmti_failed((*hprof_jvmti)->GetLoadedClasses(hprof_jvmti, &n, &classes), "GetLoadedClasses"))
        return;
    jvmti_hold_locals(jni, n);
    for (jint i = 0; i < n; i++) {
        serial_t serial = class_serial_of_klass(classes[i]);
        if (serial)
            class_set_load_trace(agent_tables(), serial, EMPTY_TRACE_SERIAL);
        (*jni)->DeleteLocalRef(jni, classes[i]);
    }
    jvmti_free(classes);
}

static int start(const collector_env *env, JNIEnv *jni)
{
    if (loads.class_loader == NULL) {
        jclass local = (*jni)->FindClass(jni, "java/lang/ClassLoader");
        if (local)
            loads.class_loader = (*jni)->NewGlobalRef(jni, local);
        if ((*jni)->ExceptionCheck(jni))
            (*jni)->ExceptionClear(jni);
        if (local)
            (*jni)->DeleteLocalRef(jni, local);
        if (loads.class_loader == NULL) {
            fprintf(stderr, "hprof: class loading traces: java.lang.ClassLoader not found; classes keep "
                    "the empty trace\n");
            return 0;
        }
    }
    loads.builder = (trace_builder){ .depth = env->opt->depth, .lineno = env->opt->lineno,
                                     .tables = env->tables, .resolve = resolve_method };
    loads.per_thread = env->opt->thread;
    if (atomic_load(&loads.on))
        return 0;
    if (events_want(hprof_jvmti, JVMTI_EVENT_CLASS_LOAD) != 0)
        return -1;
    atomic_store_explicit(&loads.on, 1, memory_order_release);
    /* After the event is on, so that no class falls between the two: one
     * loaded meanwhile keeps whichever came first, its trace or the mark. */
    mark_loaded_before(jni);
    return 0;
}

static void stop(JNIEnv *jni)
{
    (void)jni;
    if (atomic_exchange(&loads.on, 0))
        events_unwant(hprof_jvmti, JVMTI_EVENT_CLASS_LOAD);
}

/* verbose=all: what the traces cost, at the last dump. */
static void dump(dump_target *t, JNIEnv *jni)
{
    (void)jni;
    if (t->verbose < 2 || !t->final)
        return;
    char line[200];
    snprintf(line, sizeof line, "hprof: class loading traces: %u classes, %.1f ms of CPU in ClassLoad events",
             atomic_load(&loads.traced), (double)atomic_load(&loads.handler_ns) / 1e6);
    dump_note(t, line);
}

static void status(char *line, size_t size)
{
    snprintf(line, size, "class loads: %s, %u classes given the stack that loaded them",
             atomic_load(&loads.on) ? "tracing" : "stopped", atomic_load(&loads.traced));
}

const collector class_load_collector = {
    .name = "class loading traces", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe,
    .start = start, .dump = dump, .stop = stop, .status = status,
};
