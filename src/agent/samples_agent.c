/*
 * samples_agent: cpu=samples as a collector (collector.h). The sampler
 * (src/sampler/sampler.c) puts raw stacks in the queue from its signal handler;
 * the agent thread drains them into cpu_collector (tick); a dump writes
 * CPU SAMPLES, and a snapshot gives the whole stacks as a profile.
 *
 * Threads that existed before sampling started (at VMInit: the JDK's own;
 * at attach: all of them) never pass ThreadStart, so they are sampled
 * through timers made for their kernel thread ids (/proc/self/task). The JNIEnv of a Java
 * thread lives inside HotSpot's JavaThread at a fixed offset, and
 * java.lang.Thread's `eetop` field holds that JavaThread's address: the
 * offset measured once on the current thread turns every thread's eetop
 * into its JNIEnv, by which the sampler's handler finds the thread's serial
 * (sampler_name_thread).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cpu/cpu_collector.h"
#include "../cpu/native_libs.h"
#include "../cpu/native_names.h"
#include "../cpu/sample_queue.h"
#include "../sampler/sampler.h"
#include "collector.h"
#include "events.h"
#include "java_code.h"
#include "heap_dump.h"
#include "jvmti_support.h"
#include "samples_agent.h"
#include "vthread_mounts.h"

/* How often the agent thread drains the samples and checks the signal. */
#define SAMPLES_TICK_MS 20
/* native=y: how often (in ticks) threads that are not Java threads, which
 * start and end without an event, and newly loaded libraries are looked for:
 * a GC worker the JVM starts is sampled from at most 100 ms on. */
#define RESCAN_TICKS 5

/* cpu=samples' state: made at its first start, kept across stop/start. */
static struct {
    int             initialised;      /* queue, collector and handler exist */
    int             running;
    int             interval_ms;
    int             walk_depth;       /* frames the handler walks */
    int             depth, lineno, per_thread, keep_stacks;
    sample_queue    queue;
    int             recompiled;       /* compiled code thrown away once after an attach */
    /* Its methods, in two rounds (recompile_for_debug_info, the comment above it). */
    struct {
        atomic_int         collecting;  /* a thread is in GenerateEvents, listing into `compiled`: */
        _Atomic(pthread_t) collector;   /* this one */
        struct {
            jmethodID *methods;
            size_t     n, cap;
        } compiled;
        struct {
            jmethodID    *methods;     /* on a stack before the first round, of a class to retransform; sorted */
            jint         *owner;       /* the index of its class among those */
            atomic_uchar *again;       /* compiled again since the watch went on */
            size_t        n;
            atomic_int    on;
            atomic_int    readers;     /* events looking into the arrays */
            atomic_llong  last_ns;     /* when the JIT last compiled a method */
        } watch;
    } recompiling;
    int             vt_support;       /* can_support_virtual_threads was granted */
    int             vt_mounts;        /* thread=y: samples charged per virtual thread */
    int             native;           /* native=y: every thread, native frames */
    cpu_collector  *counts;           /* the samples, counted */
    unsigned        ticks;
} cpu;

/* ------------------------------------------------------------ JNIEnvs */

/* Every thread alive now: JNIEnv -> serial, through Thread.eetop. */
void samples_name_threads(JNIEnv *jni)
{
    jclass thread_class = (*jni)->FindClass(jni, "java/lang/Thread");
    jfieldID eetop = thread_class ? (*jni)->GetFieldID(jni, thread_class, "eetop", "J") : NULL;
    jmethodID current = thread_class ? (*jni)->GetStaticMethodID(jni, thread_class, "currentThread",
                                                                  "()Ljava/lang/Thread;") : NULL;
    jobject me = current ? (*jni)->CallStaticObjectMethod(jni, thread_class, current) : NULL;
    if ((*jni)->ExceptionCheck(jni) || me == NULL || eetop == NULL) {
        (*jni)->ExceptionClear(jni);
        fprintf(stderr, "hprof: warning: Thread.eetop not found in this JDK: samples of threads "
                "that existed before sampling started are charged to no thread (thread=y)\n");
        return;
    }
    jlong my_top = (*jni)->GetLongField(jni, me, eetop);
    intptr_t offset = (intptr_t)jni - (intptr_t)my_top;
    jint n = 0;
    jthread *threads = NULL;

    if (my_top != 0 && !jvmti_failed((*hprof_jvmti)->GetAllThreads(hprof_jvmti, &n, &threads), "GetAllThreads")) {
        jvmti_hold_locals(jni, n);
        for (jint i = 0; i < n; i++) {
            jlong top = (*jni)->GetLongField(jni, threads[i], eetop);
            serial_t serial = thread_serial_of(threads[i]);
            if (top != 0 && serial != 0)
                sampler_name_thread((const void *)(intptr_t)(top + offset), serial);
            (*jni)->DeleteLocalRef(jni, threads[i]);
        }
        jvmti_free(threads);
        sampler_names_complete(1);
    }
    (*jni)->DeleteLocalRef(jni, me);
    (*jni)->DeleteLocalRef(jni, thread_class);
}

/* Sampling on, for every thread there is: named for the handler first (it
 * finds a thread's serial by its JNIEnv), then a timer each. At a start, and
 * when the signal moves (check_signal_owner). -1 (errno) if the threads
 * could not be listed. */
static int sample_every_thread(JNIEnv *jni)
{
    samples_name_threads(jni);
    sampler_start();
    return sampler_start_every_thread() < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ events */

/* AsyncGetCallTrace can only name methods whose jmethodIDs exist: making
 * them when a class is prepared (GetClassMethods) is what lets the signal
 * handler report a frame instead of failing. */
static void prepare_method_ids(jvmtiEnv *jvmti, jclass klass)
{
    jint count = 0;
    jmethodID *methods = NULL;
    jvmtiError err = (*jvmti)->GetClassMethods(jvmti, klass, &count, &methods);
    if (err == JVMTI_ERROR_NONE)
        jvmti_free(methods);
    else if (err != JVMTI_ERROR_CLASS_NOT_PREPARED)
        jvmti_failed(err, "GetClassMethods");
}

/* How many collectors sample stacks now (cpu=samples, wall=): method ids
 * are made while any does. */
static atomic_int method_id_users;

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)jni; (void)thread;
    if (atomic_load(&method_id_users) > 0)
        prepare_method_ids(jvmti, klass);
}

/* Wanted only because AsyncGetCallTrace needs ClassLoad events on. */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)jvmti; (void)jni; (void)thread; (void)klass;
}

/* Wanted only because, while CompiledMethodLoad events are on, HotSpot's JIT
 * records debug information at every instruction (as with
 * -XX:+DebugNonSafepoints): without it, a sample in inlined code would be
 * blamed on the enclosing method at the nearest safepoint. */
static void note_compiled(jmethodID method);

static void JNICALL on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                            const void *code_addr, jint map_length,
                                            const jvmtiAddrLocationMap *map, const void *compile_info)
{
    (void)jvmti; (void)code_size; (void)code_addr;
    (void)map_length; (void)map; (void)compile_info;
    note_compiled(method);     /* listed only while collecting_here() */
}

/* ------------------------------------------------------------ collector */

static int wanted(const hprof_options *opt) { return opt->cpu == CPU_SAMPLES; }

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    /* thread=y: which virtual thread a carrier runs (vthread_mounts). */
    if (env->opt->thread)
        cpu.vt_support = jvmti_want_virtual_threads(potential, caps);
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    caps->can_generate_compiled_method_load_events = potential->can_generate_compiled_method_load_events;
    if (!potential->can_generate_compiled_method_load_events)
        env->limit("cpu=samples: this JVM cannot report compiled methods; samples in inlined code "
                   "may be attributed to the enclosing method");
    else if (env->live && potential->can_retransform_classes)
        caps->can_retransform_classes = 1;   /* recompile_for_debug_info */
    else if (env->live)
        env->limit("cpu=samples: methods the JIT compiled before the attach have debug information "
                   "at safepoints only, until they are compiled again; samples in code they inlined "
                   "may be charged to the enclosing method");
    return 0;
}

int samples_subscribe_method_ids(void)
{
    static int subscribed;         /* once for cpu=samples and wall= together */
    if (subscribed)
        return 0;
    subscribed = 1;
    return events_subscribe(JVMTI_EVENT_CLASS_LOAD, EVENT_FN(on_class_load)) |
           events_subscribe(JVMTI_EVENT_CLASS_PREPARE, EVENT_FN(on_class_prepare));
}

int samples_want_method_ids(JNIEnv *jni)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    atomic_fetch_add(&method_id_users, 1);
    if (events_want(jvmti, JVMTI_EVENT_CLASS_LOAD) != 0 || events_want(jvmti, JVMTI_EVENT_CLASS_PREPARE) != 0)
        return -1;
    jint nclasses = 0;
    jclass *classes = NULL;
    if (!jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &nclasses, &classes), "GetLoadedClasses")) {
        jvmti_hold_locals(jni, nclasses);
        for (jint i = 0; i < nclasses; i++) {
            prepare_method_ids(jvmti, classes[i]);
            (*jni)->DeleteLocalRef(jni, classes[i]);
        }
        jvmti_free(classes);
    }
    return 0;
}

void samples_unwant_method_ids(void)
{
    atomic_fetch_sub(&method_id_users, 1);
    events_unwant(hprof_jvmti, JVMTI_EVENT_CLASS_LOAD);
    events_unwant(hprof_jvmti, JVMTI_EVENT_CLASS_PREPARE);
}

static int subscribe(const collector_env *env)
{
    (void)env;
    return samples_subscribe_method_ids() | java_code_subscribe() |
           events_subscribe(JVMTI_EVENT_COMPILED_METHOD_LOAD, EVENT_FN(on_compiled_method_load));
}

/* After an attach, code the JIT compiled before CompiledMethodLoad was on
 * has debug information at safepoints only: samples in it are charged to
 * whatever the nearest safepoint's record says (on the demo, 29% of an
 * attached profile went to ArraysSupport.newLength, which a profile from
 * start-up puts below 1%). So the classes of every method compiled now are
 * retransformed, unchanged: HotSpot then throws away the compiled code of
 * their methods (and of the methods that inlined them), and the JIT compiles
 * it again, now with debug information at every instruction. The price is a
 * warm-up: the program runs partly interpreted for a moment.
 *
 * Except in a frame that is running at that moment. HotSpot deoptimizes it
 * (its code is thrown away under it) and it goes on in the interpreter, in
 * the method it was in, which the retransformation made "old": the JIT
 * never compiles an old method (CompileBroker::compile_method: "RedefineClasses()
 * has replaced this method; just return"), so the frame stays interpreted
 * until it returns. A call that returns within milliseconds does not mind;
 * a loop that runs as long as the program, in the code the JIT compiled for
 * it on stack replacement, stays interpreted for good: HotColdLoop's (the
 * hot/cold loop run as one long call) ran several times slower, with 10-19% of
 * its samples on hot instead of 99%.
 *
 * So the classes go in two rounds. First those with no method on any
 * thread's stack. If the JVM recorded no dependencies for redefinition
 * until now (JDK 17: its first redefinition, no agent since start-up),
 * HotSpot then throws away all compiled code, not only theirs
 * (VM_RedefineClasses::flush_dependent_code): the running frames are
 * deoptimized too, but in methods that are not old, and the JIT compiles
 * them again, loops included. If it did record them (JDK 25 does from
 * start-up: -XX:+AlwaysRecordEvolDependencies, experimental, on by
 * default), only the code that depends on those classes goes. Then the
 * classes with a method on a stack: one of whose methods there the JIT
 * compiled again meanwhile (a frame of it left the code from before) is
 * left alone, the others are retransformed, whatever that costs a frame of
 * theirs that runs long (on JDK 25, such a loop stays interpreted as
 * before): nothing else open to an agent that came late has compiled code
 * thrown away (breakpoints, which would without making methods old, can
 * only be had at start-up), and most frames return soon.
 *
 * The compiled methods come from GenerateEvents(COMPILED_METHOD_LOAD), which
 * posts one event per compiled method on this thread, into `compiled`.
 * Meanwhile the JIT's compiler threads post their own events for what they
 * compile now (with full debug information, since the event is on): those
 * are not collected, so `compiled` has one writer (two made a realloc race,
 * an uninitialized jmethodID seen under ASan after an attach on JDK 17);
 * from the first round on they are looked up in `watch`, which does not
 * change while it is on. From collecting_begin to collecting_end, the
 * compiled methods the collecting thread's GenerateEvents posts are listed
 * into `compiled` (the thread is part of cpu's state: the events come on
 * compiler threads too). */
static void collecting_begin(void)
{
    atomic_store(&cpu.recompiling.collector, pthread_self());
    atomic_store(&cpu.recompiling.collecting, 1);
}

static void collecting_end(void)
{
    atomic_store(&cpu.recompiling.collecting, 0);
}

/* Is this event one that GenerateEvents posts on the collecting thread? */
static int collecting_here(void)
{
    return atomic_load(&cpu.recompiling.collecting) &&
           pthread_equal(atomic_load(&cpu.recompiling.collector), pthread_self());
}

/* Between the rounds, which sampling waits for: until each class of the
 * second round has a method from a stack compiled again; or none has after
 * RECOMPILE_FIRST_MS (a loop the first round deoptimized is compiled again
 * within tens of milliseconds: it threw away only the code that depended
 * on its classes); or the JIT has compiled nothing for RECOMPILE_QUIET_MS
 * (what the first round made it compile again, it has); or after
 * RECOMPILE_WAIT_MS. */
#define RECOMPILE_FIRST_MS 200
#define RECOMPILE_QUIET_MS 100
#define RECOMPILE_WAIT_MS  500


static long long monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const jmethodID *)a, y = (uintptr_t)*(const jmethodID *)b;
    return x < y ? -1 : x > y;
}

static void note_compiled(jmethodID method)
{
    if (!collecting_here()) {
        /* The JIT compiled `method` just now. */
        atomic_fetch_add(&cpu.recompiling.watch.readers, 1);
        if (atomic_load(&cpu.recompiling.watch.on)) {
            atomic_store(&cpu.recompiling.watch.last_ns, monotonic_ns());
            jmethodID *hit = bsearch(&method, cpu.recompiling.watch.methods, cpu.recompiling.watch.n, sizeof *cpu.recompiling.watch.methods, by_address);
            if (hit)
                atomic_store_explicit(&cpu.recompiling.watch.again[hit - cpu.recompiling.watch.methods], 1, memory_order_relaxed);
        }
        atomic_fetch_sub(&cpu.recompiling.watch.readers, 1);
        return;
    }
    if (cpu.recompiling.compiled.n == cpu.recompiling.compiled.cap) {
        size_t cap = cpu.recompiling.compiled.cap ? cpu.recompiling.compiled.cap * 2 : 1024;
        jmethodID *m = realloc(cpu.recompiling.compiled.methods, cap * sizeof *m);
        if (m == NULL)
            return;
        cpu.recompiling.compiled.methods = m;
        cpu.recompiling.compiled.cap = cap;
    }
    cpu.recompiling.compiled.methods[cpu.recompiling.compiled.n++] = method;
}

/* The methods in the frames of every thread now, sorted, each once
 * (malloc'd; NULL if none). Platform threads only: GetAllThreads does not
 * list virtual threads, and a mounted one's frames are not its carrier's. */
static jmethodID *methods_on_stacks(JNIEnv *jni, size_t *count)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jint nthreads = 0, room = 0;
    jthread *threads = NULL;
    jvmtiFrameInfo *frames = NULL;
    jmethodID *all = NULL;
    size_t n = 0, cap = 0;
    *count = 0;
    if (jvmti_failed((*jvmti)->GetAllThreads(jvmti, &nthreads, &threads), "GetAllThreads"))
        return NULL;
    jvmti_hold_locals(jni, nthreads);
    for (jint t = 0; t < nthreads; t++) {
        jint depth = 0, got = 0;
        jvmtiError err = (*jvmti)->GetFrameCount(jvmti, threads[t], &depth);
        /* Counted, then walked: frames the stack gained in between would be
         * its oldest ones missing, so a walk that fills every slot is made
         * again with more. */
        for (jint want = depth + 64; err == JVMTI_ERROR_NONE && depth > 0; want *= 2) {
            if (want > room) {
                jvmtiFrameInfo *f = realloc(frames, (size_t)want * sizeof *f);
                if (f == NULL) {
                    err = JVMTI_ERROR_OUT_OF_MEMORY;
                    break;
                }
                frames = f;
                room = want;
            }
            err = (*jvmti)->GetStackTrace(jvmti, threads[t], 0, want, frames, &got);
            if (got < want)
                break;
        }
        if (err == JVMTI_ERROR_NONE && got > 0 && n + (size_t)got > cap) {
            size_t more = cap ? cap : 1024;
            while (more < n + (size_t)got)
                more *= 2;
            jmethodID *m = realloc(all, more * sizeof *m);
            if (m == NULL)
                err = JVMTI_ERROR_OUT_OF_MEMORY;
            else {
                all = m;
                cap = more;
            }
        }
        if (err == JVMTI_ERROR_NONE)
            for (jint i = 0; i < got; i++)
                all[n++] = frames[i].method;
        else if (err != JVMTI_ERROR_THREAD_NOT_ALIVE)     /* it ended meanwhile */
            jvmti_failed(err, "GetFrameCount/GetStackTrace (recompile)");
        (*jni)->DeleteLocalRef(jni, threads[t]);
    }
    jvmti_free(threads);
    free(frames);
    if (n == 0) {
        free(all);
        return NULL;
    }
    qsort(all, n, sizeof *all, by_address);
    size_t u = 1;
    for (size_t i = 1; i < n; i++)
        if (all[i] != all[u - 1])
            all[u++] = all[i];
    *count = u;
    return all;
}

/* RetransformClasses of the classes whose round is `r`. */
static void retransform_round(const jclass *classes, const unsigned char *round, jint n, unsigned char r)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jclass *some = malloc((n ? (size_t)n : 1) * sizeof *some);
    jint k = 0;
    for (jint j = 0; some && j < n; j++)
        if (round[j] == r)
            some[k++] = classes[j];
    if (k > 0)
        jvmti_failed((*jvmti)->RetransformClasses(jvmti, k, some),
                     r == 1 ? "RetransformClasses (recompile)" : "RetransformClasses (recompile, classes on a stack)");
    free(some);
}

/* Between the rounds (see RECOMPILE_FIRST_MS). */
static void wait_for_the_jit(const unsigned char *round, jint n)
{
    long long begin = monotonic_ns();
    unsigned char *again = malloc(n ? (size_t)n : 1);
    for (;;) {
        struct timespec pause = { 0, 10 * 1000000L };
        nanosleep(&pause, NULL);
        long long now = monotonic_ns();
        if (now - begin >= RECOMPILE_WAIT_MS * 1000000LL ||
            now - atomic_load(&cpu.recompiling.watch.last_ns) >= RECOMPILE_QUIET_MS * 1000000LL || again == NULL)
            break;
        memset(again, 0, n ? (size_t)n : 1);
        int any = 0;
        for (size_t w = 0; w < cpu.recompiling.watch.n; w++)
            if (atomic_load_explicit(&cpu.recompiling.watch.again[w], memory_order_relaxed))
                again[cpu.recompiling.watch.owner[w]] = any = 1;
        int waiting = 0;
        for (jint j = 0; j < n && !waiting; j++)
            waiting = round[j] == 2 && !again[j];
        if (!waiting || (!any && now - begin >= RECOMPILE_FIRST_MS * 1000000LL))
            break;
    }
    free(again);
}

/* `listed`: `compiled` was filled already, by java_code_want's own
 * GenerateEvents (one pass over the code cache instead of two). */
static void recompile_for_debug_info(JNIEnv *jni, int listed)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmti)->GetCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_retransform_classes ||
        !caps.can_generate_compiled_method_load_events) {
        free(cpu.recompiling.compiled.methods);
        memset(&cpu.recompiling.compiled, 0, sizeof cpu.recompiling.compiled);
        return;
    }
    if (!listed) {
        collecting_begin();
        jvmti_failed((*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD), "GenerateEvents");
        collecting_end();
    }
    /* Their classes, once each (by class serial), that can be retransformed. */
    jclass *classes = calloc(cpu.recompiling.compiled.n ? cpu.recompiling.compiled.n : 1, sizeof *classes);
    serial_t *serials = calloc(cpu.recompiling.compiled.n ? cpu.recompiling.compiled.n : 1, sizeof *serials);
    jint n = 0;
    for (size_t i = 0; classes && serials && i < cpu.recompiling.compiled.n; i++) {
        jclass k = NULL;
        jboolean modifiable = JNI_FALSE;
        if ((*jvmti)->GetMethodDeclaringClass(jvmti, cpu.recompiling.compiled.methods[i], &k) != JVMTI_ERROR_NONE || k == NULL)
            continue;
        serial_t serial = class_serial_of_klass(k);
        int dup = 0;
        for (jint j = 0; j < n && !dup; j++)
            dup = serials[j] == serial;
        if (dup || serial == 0 || (*jvmti)->IsModifiableClass(jvmti, k, &modifiable) != JVMTI_ERROR_NONE ||
            !modifiable) {
            (*jni)->DeleteLocalRef(jni, k);
            continue;
        }
        classes[n] = (*jni)->NewGlobalRef(jni, k);
        (*jni)->DeleteLocalRef(jni, k);
        if (classes[n])
            serials[n++] = serial;
    }
    /* Round 1, or 2 for a class with a method on a stack (which is watched). */
    unsigned char *round = malloc(n ? (size_t)n : 1);
    size_t nstack = 0;
    jmethodID *stack = round ? methods_on_stacks(jni, &nstack) : NULL;
    cpu.recompiling.watch.methods = malloc((nstack ? nstack : 1) * sizeof *cpu.recompiling.watch.methods);
    cpu.recompiling.watch.owner = malloc((nstack ? nstack : 1) * sizeof *cpu.recompiling.watch.owner);
    cpu.recompiling.watch.again = calloc(nstack ? nstack : 1, sizeof *cpu.recompiling.watch.again);
    cpu.recompiling.watch.n = 0;
    if (round)
        memset(round, 1, n ? (size_t)n : 1);
    for (size_t i = 0; cpu.recompiling.watch.methods && cpu.recompiling.watch.owner && cpu.recompiling.watch.again && i < nstack; i++) {
        jclass k = NULL;
        if ((*jvmti)->GetMethodDeclaringClass(jvmti, stack[i], &k) != JVMTI_ERROR_NONE || k == NULL)
            continue;
        serial_t serial = class_serial_of_klass(k);
        (*jni)->DeleteLocalRef(jni, k);
        for (jint j = 0; j < n; j++)
            if (serials[j] == serial && serial != 0) {
                round[j] = 2;
                cpu.recompiling.watch.methods[cpu.recompiling.watch.n] = stack[i];     /* in order: `stack` is sorted */
                cpu.recompiling.watch.owner[cpu.recompiling.watch.n++] = j;
                break;
            }
    }
    free(stack);
    if (round) {
        atomic_store(&cpu.recompiling.watch.on, 1);
        retransform_round(classes, round, n, 1);
        if (cpu.recompiling.watch.n > 0) {
            atomic_store(&cpu.recompiling.watch.last_ns, monotonic_ns());
            wait_for_the_jit(round, n);
        }
        atomic_store(&cpu.recompiling.watch.on, 0);
        while (atomic_load(&cpu.recompiling.watch.readers) > 0) {
            struct timespec pause = { 0, 100000L };
            nanosleep(&pause, NULL);
        }
        /* Its frames left the code from before the attach: left alone. */
        for (size_t w = 0; w < cpu.recompiling.watch.n; w++)
            if (atomic_load_explicit(&cpu.recompiling.watch.again[w], memory_order_relaxed))
                round[cpu.recompiling.watch.owner[w]] = 0;
        retransform_round(classes, round, n, 2);
    }
    free(cpu.recompiling.watch.methods);
    free(cpu.recompiling.watch.owner);
    free(cpu.recompiling.watch.again);
    cpu.recompiling.watch.methods = NULL;
    cpu.recompiling.watch.owner = NULL;
    cpu.recompiling.watch.again = NULL;
    cpu.recompiling.watch.n = 0;
    for (jint j = 0; j < n; j++)
        (*jni)->DeleteGlobalRef(jni, classes[j]);
    free(round);
    free(classes);
    free(serials);
    free(cpu.recompiling.compiled.methods);
    memset(&cpu.recompiling.compiled, 0, sizeof cpu.recompiling.compiled);
    cpu.recompiled = 1;
}

/* Queue size: about 250 ms of samples from every CPU at the chosen interval,
 * so the drain thread (every 20 ms) has ample slack even on a loaded
 * machine (100 ms lost 10% of a run's samples with wall=1 beside
 * interval=1 and 8 busy threads on 2 cores). */
static size_t queue_capacity(int interval_ms)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    size_t cap = (size_t)cpus * (size_t)(250 / interval_ms + 1);
    return cap < 256 ? 256 : cap > 65536 ? 65536 : cap;
}

/* Made once: the handler, once installed, reads the queue for the life of
 * the process; a later start with other options keeps what cannot change
 * under it (interval, engine, walk depth) and says so. */
static int init_once(const collector_env *env)
{
    const hprof_options *opt = env->opt;
    if (cpu.initialised) {
        /* Whole stacks can be turned on or off at a later start when the
         * samples are walked deep enough (always after an attach). */
        int want_stacks = options_want_stacks(opt);
        if (want_stacks != cpu.keep_stacks && cpu.walk_depth == CPU_MAX_FRAMES) {
            cpu.keep_stacks = want_stacks;
            cpu_collector_set_keep_stacks(cpu.counts, want_stacks);
        }
        if (opt->interval_ms != cpu.interval_ms || opt->depth != cpu.depth || opt->lineno != cpu.lineno ||
            opt->thread != cpu.per_thread || want_stacks != cpu.keep_stacks || opt->native != cpu.native)
            env->limit("cpu=samples: interval=, depth=, lineno=, thread=, native= and, for an agent loaded "
                       "at start-up, whether whole stacks are kept (pprof=, flamegraph=, collapsed=) keep "
                       "the values of the first start (the samples already counted use them)");
        return 0;
    }
    char err[512];
    cpu.interval_ms = opt->interval_ms;
    cpu.depth = opt->depth;
    cpu.lineno = opt->lineno;
    cpu.per_thread = opt->thread;
    cpu.keep_stacks = options_want_stacks(opt);
    /* Without whole-stack outputs, walking deeper than depth= is wasted work;
     * but an attached agent may be asked for them at a later start
     * (`hprof start P ...,flamegraph=`), so it walks deep from the first. */
    cpu.walk_depth = cpu.keep_stacks || env->live ? CPU_MAX_FRAMES : opt->depth > 0 ? opt->depth : 1;
    cpu.native = opt->native;
    cpu_collector_config cc = {
        .depth = opt->depth, .lineno = opt->lineno, .per_thread = opt->thread,
        .keep_stacks = cpu.keep_stacks, .tables = env->tables, .resolve = resolve_method,
        .resolve_native = cpu.native ? native_frame_method : NULL,
        .os_thread = cpu.native ? os_thread_serial : NULL,
        .java_code = java_code_find,
    };
    if (sample_queue_init(&cpu.queue, queue_capacity(opt->interval_ms), (uint32_t)cpu.walk_depth) != 0 ||
        (cpu.counts = cpu_collector_new(&cc)) == NULL) {
        fprintf(stderr, "hprof: out of memory starting cpu=samples\n");
        return -1;
    }
    sampler_engine engine = opt->sampler == 'p' ? SAMPLER_PERF : opt->sampler == 't' ? SAMPLER_TIMER : SAMPLER_AUTO;
    sampler_native(cpu.native);      /* before the engine: kernel call chains with native walks */
    if (sampler_init(hprof_vm, &cpu.queue, opt->interval_ms, (uint32_t)cpu.walk_depth, engine, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (cpu.native) {
        /* The objects' symbols and call-frame rules are read before the
         * first signal, so that the handler can walk native frames from it. */
        native_libs_refresh();
        sampler_native(1);
    }
    cpu.initialised = 1;
    return 0;
}

/* Virtual threads (JDK 21+): a mounted one's stack ends at its entry,
 * VirtualThread.run, not in the carrier's scheduler frames below it; with
 * thread=y its samples are its own (vthread_mounts). */
void samples_set_stack_ends(JNIEnv *jni, cpu_collector *counts)
{
    jclass vt = (*jni)->FindClass(jni, "java/lang/VirtualThread");
    if (vt == NULL) {                       /* JDK 17: none */
        (*jni)->ExceptionClear(jni);
        return;
    }
    jmethodID run = (*jni)->GetMethodID(jni, vt, "run", "(Ljava/lang/Runnable;)V");
    (*jni)->ExceptionClear(jni);
    jmethodID run_continuation = (*jni)->GetMethodID(jni, vt, "runContinuation", "()V");
    (*jni)->ExceptionClear(jni);
    jclass cont = (*jni)->FindClass(jni, "jdk/internal/vm/Continuation");
    (*jni)->ExceptionClear(jni);
    jmethodID enter = cont ? (*jni)->GetStaticMethodID(jni, cont, "enterSpecial",
                                                       "(Ljdk/internal/vm/Continuation;ZZ)V") : NULL;
    (*jni)->ExceptionClear(jni);
    if (run == NULL || enter == NULL)
        fprintf(stderr, "hprof: warning: cpu=samples: VirtualThread.run(Runnable) or Continuation.enterSpecial "
                "not found in this JDK: stacks of virtual threads may go on into their carrier's frames\n");
    cpu_collector_set_stack_ends(counts, run, enter, run_continuation);
    if (cont)
        (*jni)->DeleteLocalRef(jni, cont);
    (*jni)->DeleteLocalRef(jni, vt);
}

static void find_virtual_threads(JNIEnv *jni)
{
    samples_set_stack_ends(jni, cpu.counts);
    jclass vt = (*jni)->FindClass(jni, "java/lang/VirtualThread");
    if (vt == NULL) {                       /* JDK 17: none */
        (*jni)->ExceptionClear(jni);
        return;
    }
    (*jni)->DeleteLocalRef(jni, vt);
    if (cpu.per_thread && !cpu.vt_mounts) {
        if (!cpu.vt_support)
            fprintf(stderr, "hprof: warning: cpu=samples: thread=y: this JVM offers no virtual-thread support "
                    "to the agent: samples of virtual threads are charged to their carrier thread\n");
        else
            cpu.vt_mounts = vthread_mounts_start(hprof_jvmti) == 0;
    }
}

static int start(const collector_env *env, JNIEnv *jni)
{
    if (init_once(env) != 0)
        return -1;
    jvmtiEnv *jvmti = hprof_jvmti;
    cpu.running = 1;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmti)->GetCapabilities(jvmti, &caps) == JVMTI_ERROR_NONE && caps.can_generate_compiled_method_load_events)
        events_want(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
    if (samples_want_method_ids(jni) != 0)
        return -1;
    /* At an attach both the code map and the recompilation need the list of
     * compiled methods: the map's GenerateEvents, when it makes one, fills
     * `compiled` as it goes (its events reach on_compiled_method_load too). */
    int recompile = env->live && !cpu.recompiled, listed = 0;
    if (cpu.keep_stacks) {
        if (recompile)
            collecting_begin();
        listed = java_code_want(jvmti) == 1 && recompile;   /* without it, frames' runs are unknown */
        collecting_end();
    }
    if (recompile)
        recompile_for_debug_info(jni, listed);
    find_virtual_threads(jni);
    if (sample_every_thread(jni) < 0)
        fprintf(stderr, "hprof: cannot list this process's threads (/proc/self/task): %s; only threads "
                "started from now on are sampled\n", strerror(errno));
    return 0;
}

/* Called for every thread start while cpu=samples exists (running or not):
 * a thread that starts while sampling is being set up (after the threads
 * were listed, before its own timer could be made) is named for the
 * handler, which may meet it through the timer made from outside. */
static void thread_start(JNIEnv *jni, jthread thread, serial_t serial)
{
    (void)thread;
    if (!cpu.initialised || !serial)
        return;
    sampler_jvm_thread_here();
    int rc = cpu.running ? sampler_thread_start(jni, serial) : 0;
    if (rc < 0)
        fprintf(stderr, "hprof: cannot create a CPU timer for thread %u: %s; it will not be "
                "sampled\n", serial, strerror(errno));
    else if (rc == 0)
        sampler_name_thread(jni, serial);
}

static void thread_end(JNIEnv *jni, jthread thread)
{
    (void)thread;
    sampler_thread_end();
    if (cpu.initialised)
        sampler_name_thread(jni, 0);      /* if it was named: its JNIEnv may serve another thread */
}

/* A library that installs its own handler on our signal after the agent
 * started (SIGPROF is the usual one) would get our timers' signals from then
 * on, and we no more samples. Checked every tick: the signal is left to it,
 * sampling moves to a free real-time signal, and the user is told once. */
static void check_signal_owner(JNIEnv *jni)
{
    void *who = NULL;
    if (!cpu.running || !sampler_handler_replaced(&who))
        return;
    Dl_info info;
    memset(&info, 0, sizeof info);
    const char *where = dladdr(who, &info) && info.dli_fname ? info.dli_fname : "an unknown library";
    int from = 0, to = 0;
    int moved = sampler_move_signal(&from, &to) == 0;
    int listed = moved && sample_every_thread(jni) == 0;
    if (moved && listed)
        fprintf(stderr, "hprof: cpu=samples: the handler of signal %d (%s) was replaced after sampling began "
                "(by %s); the signal is left to it and sampling moves to signal %d (SIGRTMIN+%d). Its "
                "handler got this agent's timer signals for up to %d ms\n",
                from, from == SIGPROF ? "SIGPROF" : "a real-time signal", where, to, to - SIGRTMIN, SAMPLES_TICK_MS);
    else if (to < 0)
        fprintf(stderr, "hprof: cpu=samples: the handler of signal %d was replaced after sampling began "
                "(by %s) and no real-time signal is free: sampling stops here (the samples so far are "
                "kept)\n", from, where);
    else
        fprintf(stderr, "hprof: cpu=samples: the handler of signal %d was replaced after sampling began "
                "(by %s); sampling moved to signal %d, but this process's threads could not be listed "
                "(/proc/self/task): only threads started from now on are sampled\n", from, where, to);
}

/* native=y: threads started without an event get their timers, those that
 * ended lose them (and their names end), new libraries are read. */
static void rescan(void)
{
    pid_t *live = NULL;
    size_t n = 0;
    native_libs_refresh();
    if (sampler_rescan_threads(&live, &n) >= 0 && live != NULL) {
        cpu_collector_drain(cpu.counts, &cpu.queue);   /* samples of ended threads are named first */
        os_threads_reconcile(agent_tables(), live, n);
    }
    free(live);
}

static int tick(JNIEnv *jni)
{
    check_signal_owner(jni);
    cpu_collector_drain(cpu.counts, &cpu.queue);
    if (cpu.native && cpu.running && ++cpu.ticks % RESCAN_TICKS == 0)
        rescan();
    return 0;
}

/* Samples the handler had to drop are turned into rows of their own. */
static void collect_losses(void)
{
    cpu_collector_add_lost(cpu.counts, "buffer_full", atomic_exchange(&sampler_lost.buffer_full, 0));
}

static void dump(dump_target *t, JNIEnv *jni)
{
    (void)jni;
    if (!cpu.initialised)
        return;
    cpu_collector_drain(cpu.counts, &cpu.queue);
    collect_losses();
    cpu_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    if (cpu_collector_rows(cpu.counts, &rows, &n, &total) != 0) {
        fprintf(stderr, "hprof: out of memory while writing CPU SAMPLES\n");
        return;
    }
    /* native=y: where the CPU went by category and thread, for a file with room for it. */
    cpu_summary summary;
    int summarized = cpu.native && cpu_collector_summary(cpu.counts, &summary) == 0;
    report_cpu_samples(&t->report, rows, n, total, summarized ? &summary : NULL, cpu.interval_ms, time(NULL));
    if (summarized)
        cpu_summary_free(&summary);
    free(rows);
    uint64_t unnamed = vthread_mounts_unnamed();
    if (cpu.vt_mounts && (unnamed || t->verbose)) {
        char line[256];
        snprintf(line, sizeof line, "hprof: cpu=samples: thread=y: %u virtual threads have a THREAD of their own; "
                 "%llu mounts of virtual threads beyond the first %u were charged to their carrier thread",
                 vthreads_named(), (unsigned long long)unnamed, VTHREADS_NAMED_MAX);
        dump_note(t, line);
    }
    /* The sampler's own counters: for its developers (verbose=all, and
     * `status`), not in every run's stderr. */
    if (t->verbose > 1) {
        char line[256];
        snprintf(line, sizeof line, "hprof: cpu=samples: %llu samples, %llu of them walked from the caller "
                 "of a stub, %llu at the interrupted PC instead of the instruction before it",
                 (unsigned long long)total, (unsigned long long)atomic_load(&sampler_lost.recovered_from_caller),
                 (unsigned long long)atomic_load(&sampler_lost.at_interrupted_pc));
        dump_note(t, line);
    }
}

/* Zero what the last dump counted. The queue is not drained first: what
 * waits in it (at most a tick's samples) was not in that dump, and counts
 * in the next, so that loop='s periods, each a dump then a reset, add up to
 * every sample. Likewise buffer_full, taken into the counts at each dump. */
static void reset(JNIEnv *jni)
{
    (void)jni;
    if (!cpu.initialised)
        return;
    atomic_store(&sampler_lost.taken, 0);
    atomic_store(&sampler_lost.recovered_from_caller, 0);
    atomic_store(&sampler_lost.at_interrupted_pc, 0);
    cpu_collector_reset(cpu.counts);
}

static void stop(JNIEnv *jni)
{
    (void)jni;
    if (!cpu.running)
        return;
    cpu.running = 0;
    sampler_stop();
    if (cpu.vt_mounts) {
        vthread_mounts_stop(hprof_jvmti);
        cpu.vt_mounts = 0;
    }
    cpu_collector_drain(cpu.counts, &cpu.queue);
    samples_unwant_method_ids();
    if (cpu.keep_stacks)
        java_code_unwant(hprof_jvmti);
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*hprof_jvmti)->GetCapabilities(hprof_jvmti, &caps) == JVMTI_ERROR_NONE &&
        caps.can_generate_compiled_method_load_events)
        events_unwant(hprof_jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
}

static void status(char *line, size_t size)
{
    cpu_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    if (cpu.initialised) {
        cpu_collector_drain(cpu.counts, &cpu.queue);
        collect_losses();
        if (cpu_collector_rows(cpu.counts, &rows, &n, &total) == 0)
            free(rows);
    }
    /* "taken" is the signal handler's own count: with nothing in flight it
     * equals the samples recorded, losses included (bench/soak checks it). */
    size_t objects = 0, symbols = 0, rules = 0, bytes = 0;
    if (cpu.native)
        native_libs_stats(&objects, &symbols, &rules, &bytes);
    snprintf(line, size, "cpu=samples: %s, %llu samples in %u traces (%llu taken by the signal handler, "
             "%llu walked from the caller of a stub, %llu at the interrupted PC), "
             "every %d ms of CPU (%s); native=%s: %zu objects, %zu symbols, %zu frame rules (%.1f MB)",
             cpu.running ? "sampling" : "stopped", (unsigned long long)total, n,
             (unsigned long long)atomic_load(&sampler_lost.taken),
             (unsigned long long)atomic_load(&sampler_lost.recovered_from_caller),
             (unsigned long long)atomic_load(&sampler_lost.at_interrupted_pc), cpu.interval_ms,
             cpu.initialised ? sampler_engine_name() : "-", cpu.native ? "y" : "n", objects, symbols, rules,
             (double)bytes / 1e6);
}

/* Called by the orchestrator after dump(), which drained the queue. */
static profile *snapshot(JNIEnv *jni)
{
    (void)jni;
    if (!cpu.initialised || !cpu.keep_stacks)
        return NULL;
    return cpu_collector_profile(cpu.counts, "CPU samples", "cpu", (int64_t)cpu.interval_ms * 1000000);
}

/* "samples <total>" and the top methods by self samples,
 * "method <count> <class>.<name>", for net='s live summary. */
static void live_summary(char *text, size_t size)
{
    cpu_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    cpu_method_count top[10];
    uint32_t ntop = 0;
    if (cpu.initialised) {
        cpu_collector_drain(cpu.counts, &cpu.queue);
        if (cpu_collector_rows(cpu.counts, &rows, &n, &total) != 0)
            return;
        ntop = cpu_top_methods(agent_tables(), rows, n, top, sizeof top / sizeof top[0]);
        free(rows);
    }
    size_t used = (size_t)snprintf(text, size, "samples %llu\n", (unsigned long long)total);
    for (uint32_t i = 0; i < ntop && used < size; i++) {
        method_info mi;
        if (top[i].method == 0 || method_get(agent_tables(), top[i].method, &mi) != 0)
            mi = (method_info){ .class_name = "<unknown>", .name = "<no frames>" };
        used += (size_t)snprintf(text + used, size - used, "method %llu %s.%s\n",
                                 (unsigned long long)top[i].count, mi.class_name, mi.name);
    }
}

const collector cpu_samples_collector = {
    .name = "cpu=samples", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe,
    .start = start, .thread_start = thread_start, .thread_end = thread_end,
    .tick_ms = SAMPLES_TICK_MS, .tick = tick, .dump = dump, .reset = reset, .stop = stop, .status = status,
    .profile_kind = "cpu", .snapshot = snapshot,
    .live_summary = live_summary,
};
