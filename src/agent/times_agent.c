/*
 * times_agent: cpu=times, a collector (collector.h). Every class is
 * rewritten as it loads (and those loaded before the start are
 * retransformed) so that each method calls the tracker
 * (src/agent/java/java/lang/HprofTracker.java) at entry and exit; the
 * tracker keeps per-thread shadow stacks and counters in Java memory.
 * tracker_agent.c does the rewriting; this file gives the tracker its
 * cpu=times natives and turns its counters into the CPU TIME section, or
 * for cpu=old into the old prof format (old_prof_writer.h), as HPROF did:
 * the same timing with traces of two frames (callee, caller) whatever
 * depth= says. The counters only grow: a reset keeps a copy of them as a baseline, and
 * reports show the difference.
 *
 * With pprof=, flamegraph= or collapsed= (cpu=times only), the tracker keys
 * its counters by whole stacks instead: its key depth is STACK_MAX_FRAMES,
 * and the number it stores for a key (what trace() returns) is the key's
 * whole stack (stack_table.h), which remembers its depth= TRACE, or minus
 * that TRACE when the stack table is full. Counts are kept by that number;
 * a dump merges them by TRACE for CPU TIME and keeps the same counts by
 * stack for the snapshot.
 */
#include "collector.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../snapshot/stack_profile.h"
#include "../core/trace_builder.h"
#include "../cpu/thread_cpu.h"
#include "../cpu/times_table.h"
#include "../output/old_prof_writer.h"
#include "events.h"
#include "jvmti_support.h"
#include "stack_walk_fast.h"
#include "tracker_agent.h"
#include "vthread_clock.h"

/* The report's settings (from the first start). */
typedef struct times_config {
    int depth, lineno, per_thread;
    int old_prof;                    /* cpu=old: the old prof format, depth 2 */
    int jdk_calls;                   /* jdk= (JDK_CALLS_*; boundary: HprofThreadState.boundary) */
    int full_stacks;                 /* keys are whole stacks (see above) */
    double cutoff;
} times_config;

static struct {
    times_config    cfg;
    jclass          tracker;         /* global ref; set once counting starts */
    jmethodID       thread_end, snapshot;
    jfieldID        engaged;
    trace_builder   builder;
    pthread_mutex_t lock;            /* guards retired */
    times_table     retired;         /* totals of threads that ended */
    times_table     baseline;        /* cumulative counts at the last reset */
    int             epoch;           /* HprofTracker.engaged while running */
    int             running;
    int             vt_end;          /* VirtualThreadEnd offered (JDK 21+) */
    int             vthread_clocks;  /* virtual threads timed by their own clocks (vthread_clock.h) */
    jfieldID        thread_tid;      /* java.lang.Thread.tid, when virtual threads are timed */
    profile        *dumped_profile;  /* of the rows the last dump wrote (stack_profile_keep) */
} cpu_times = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A carrier's virtual threads' ends. `ended_tid`: Thread.tid of the
 * virtual thread that ended last on this carrier: the JDK's code after its
 * VirtualThreadEnd (unmounting it) still runs with it as
 * Thread.currentThread(), and must not give it a new state. */
static _Thread_local struct {
    int   retiring;                  /* a virtual thread's state is being retired (on_virtual_thread_end) */
    jlong ended_tid;
} vthread_end;

/* ------------------------------------------------------------ natives */

/* Is the calling thread one of the JVM's service threads: of the "system"
 * thread group (the one without a parent: Reference Handler, Finalizer,
 * Signal Dispatcher, the secondary finalizers of System.runFinalization) or
 * of the JDK's "InnocuousThreadGroup" (Common-Cleaner, every Cleaner's
 * thread; JDK 25's common ForkJoinPool has a group of its own)? Such a thread does
 * not record the JDK's own methods (HprofThreadState.service). */
static jlong is_service_thread(JNIEnv *jni) {
    jvmtiThreadInfo ti;
    memset(&ti, 0, sizeof ti);
    if ((*hprof_jvmti)->GetThreadInfo(hprof_jvmti, NULL, &ti) != JVMTI_ERROR_NONE) return 0;
    jlong service = 0;
    if (ti.thread_group != NULL) {
        jvmtiThreadGroupInfo gi;
        memset(&gi, 0, sizeof gi);
        if ((*hprof_jvmti)->GetThreadGroupInfo(hprof_jvmti, ti.thread_group, &gi) == JVMTI_ERROR_NONE) {
            service = gi.parent == NULL || (gi.name != NULL && strcmp(gi.name, "InnocuousThreadGroup") == 0);
            jvmti_free(gi.name);
            if (gi.parent) (*jni)->DeleteLocalRef(jni, gi.parent);
        }
        (*jni)->DeleteLocalRef(jni, ti.thread_group);
    }
    if (ti.context_class_loader) (*jni)->DeleteLocalRef(jni, ti.context_class_loader);
    jvmti_free(ti.name);
    return service;
}

/* The natives of cpu=times (bound by tracker_agent.c). */

JNIEXPORT jboolean JNICALL Java_java_lang_HprofTracker_register(JNIEnv *jni, jclass cls, jthread thread,
                                                              jlongArray info) {
    (void)cls;
    if (cpu_times.tracker == NULL || atomic_load(&tracker_linking)) return JNI_FALSE;
    /* A virtual thread runs the JDK's code before its VirtualThreadStart and
     * after its VirtualThreadEnd (when its state was retired), where JVMTI
     * sees only the carrier: no state then (one made after the end would
     * never be retired, one per virtual thread; its stacks are the carrier's). */
    int is_virtual = cpu_times.vthread_clocks && vthread_clock_is_virtual(jni, thread);
    /* The end is told by the carrier (ended_virtual_thread), not asked of
     * JVMTI: GetThreadLocalStorage of a virtual thread that had ended made
     * HotSpot a new JvmtiThreadState for it, with empty storage, so the
     * check passed, and every virtual thread left a state behind (20,000
     * states alive after 20,000 had ended: vthread_many_times); it also
     * took a sixth of the carriers' time, under a contended lock. Those
     * that have not started yet get a state, retired at their end. */
    if (is_virtual && (*jni)->GetLongField(jni, thread, cpu_times.thread_tid) == vthread_end.ended_tid) return JNI_FALSE;
    jlong v[5] = { 0, 0, 0, is_virtual, 0 };  /* a virtual thread: its own clock, no page, not a service thread */
    if (!is_virtual) {
        v[0] = (jlong)(uintptr_t)thread_cpu_page();
        v[1] = (jlong)syscall(SYS_gettid);
        v[2] = is_service_thread(jni);
        /* A carrier's time while it runs virtual threads is theirs (their
         * own clocks count it): its state subtracts it. */
        v[4] = cpu_times.vthread_clocks ? (jlong)(uintptr_t)vthread_clock_lent_word() : 0;
    }
    (*jni)->SetLongArrayRegion(jni, info, 0, 5, v);
    return JNI_TRUE;
}

JNIEXPORT jlong JNICALL Java_java_lang_HprofTracker_cpuTime(JNIEnv *jni, jclass cls) {
    (void)jni; (void)cls;
    return (jlong)thread_cpu_exact();
}

/* A virtual thread's own CPU time (vthread_clock.h): not its carrier's. */
JNIEXPORT jlong JNICALL Java_java_lang_HprofTracker_virtualCpuTime(JNIEnv *jni, jclass cls, jthread thread) {
    (void)jni; (void)cls;
    if (atomic_load(&tracker_linking) || thread == NULL) return -1;
    return vthread_clock_now(jni, thread);
}

/* Linux's clock id for another thread's CPU clock (CPUCLOCK_SCHED, per thread). */
JNIEXPORT jlong JNICALL Java_java_lang_HprofTracker_cpuTimeOf(JNIEnv *jni, jclass cls, jint tid) {
    (void)jni; (void)cls;
    struct timespec ts;
    clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6u);
    if (tid <= 0 || clock_gettime(id, &ts) != 0) return 0;
    return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

JNIEXPORT jint JNICALL Java_java_lang_HprofTracker_trace(JNIEnv *jni, jclass cls, jthread thread) {
    (void)cls;
    if (atomic_load(&tracker_linking)) return 0;
    /* Around a virtual thread's mounts the Java thread is the virtual one
     * while JVMTI's is still (or already) the carrier: the walk would name
     * the key with the carrier's stack, for every thread that makes it. */
    if (cpu_times.vthread_clocks && thread != NULL && vthread_clock_is_virtual(jni, thread) && !jvmti_is_current(jni, thread))
        return 0;
    serial_t thread_serial = cpu_times.cfg.per_thread ? thread_serial_of(NULL) : 0;
    stack_id stack = 0;
    /* The cheap walk (see heap_agent's record): on a virtual thread,
     * GetStackTrace would hold up every carrier's mounts while it runs. */
    serial_t trace = stack_trace_here_skipping(jni, &cpu_times.builder, NULL, tracker_classes, 2, thread_serial,
                                               cpu_times.cfg.full_stacks ? &stack : NULL, NULL);
    if (trace > INT32_MAX || stack > INT32_MAX) return 0;
    return !cpu_times.cfg.full_stacks ? (jint)trace : stack ? (jint)stack : -(jint)trace;
}

/* A thread's tracker ran out of key space (HprofThreadState.keysFull): the
 * key under which its calls of stacks not seen before are counted, the
 * pseudo method [unwalkable].tracker_keys_full, encoded as trace() encodes
 * a stack. Said once on stderr: those calls lose their stacks. */
JNIEXPORT jint JNICALL Java_java_lang_HprofTracker_keysFullTrace(JNIEnv *jni, jclass cls) {
    (void)jni; (void)cls;
    if (atomic_load(&tracker_linking)) return 0;
    static atomic_int said;
    if (!atomic_exchange(&said, 1))
        fprintf(stderr, "hprof: cpu=times: a thread made more distinct stacks than the tracker keeps "
                        "(1M stacks or 16M frames); calls of its new stacks are counted under "
                        "[unwalkable].tracker_keys_full (a smaller depth= keeps fewer)\n");
    serial_t m = pseudo_method(agent_tables(), "tracker_keys_full");
    serial_t f = m ? frame_intern(agent_tables(), m, LINE_UNKNOWN) : 0;
    serial_t thread_serial = cpu_times.cfg.per_thread ? thread_serial_of(NULL) : 0;
    serial_t trace = f ? trace_intern(agent_tables(), thread_serial, &f, 1) : 0;
    if (trace == 0 || trace > INT32_MAX) return 0;
    if (!cpu_times.cfg.full_stacks) return (jint)trace;
    stack_frame whole = { m, LINE_UNKNOWN, JAVA_RUN_UNKNOWN };
    stack_id stack = stack_intern(agent_tables(), thread_serial, &whole, 1, trace);
    return stack && stack <= INT32_MAX ? (jint)stack : -(jint)trace;
}

/* The TRACE of a tracker key's number (see the top of this file), and its
 * whole stack (0: none kept). */
static serial_t trace_of_key(serial_t key, stack_id *stack) {
    *stack = 0;
    if (!cpu_times.cfg.full_stacks) return key;
    int32_t k = (int32_t)key;
    if (k < 0) return (serial_t)-(int64_t)k;
    serial_t trace = 0;
    if (stack_get(agent_tables(), (stack_id)k, NULL, NULL, NULL, &trace) != 0) return 0;
    *stack = (stack_id)k;
    return trace;
}

static uint64_t nonnegative(jlong v) { return v > 0 ? (uint64_t)v : 0; }

JNIEXPORT void JNICALL Java_java_lang_HprofTracker_retire(JNIEnv *jni, jclass cls, jintArray serials,
                                                          jlongArray calls, jlongArray cpu, jlongArray total,
                                                          jint n, jint tid) {
    (void)cls; (void)tid;
    if (atomic_load(&tracker_linking)) return;
    jint *s = (*jni)->GetIntArrayElements(jni, serials, NULL);
    jlong *c = (*jni)->GetLongArrayElements(jni, calls, NULL);
    jlong *t = (*jni)->GetLongArrayElements(jni, cpu, NULL);
    jlong *all = (*jni)->GetLongArrayElements(jni, total, NULL);
    if (s && c && t && all) {
        jint len = (*jni)->GetArrayLength(jni, serials);
        if ((*jni)->GetArrayLength(jni, calls) < len) len = (*jni)->GetArrayLength(jni, calls);
        if ((*jni)->GetArrayLength(jni, cpu) < len) len = (*jni)->GetArrayLength(jni, cpu);
        if ((*jni)->GetArrayLength(jni, total) < len) len = (*jni)->GetArrayLength(jni, total);
        if (n > len) n = len;
        pthread_mutex_lock(&cpu_times.lock);
        for (jint i = 0; i < n; i++)
            if (times_table_add(&cpu_times.retired, (serial_t)s[i], (uint64_t)c[i], nonnegative(t[i]),
                                nonnegative(all[i])) != 0) {
                fprintf(stderr, "hprof: cpu=times: out of memory; a thread's totals are lost\n");
                break;
            }
        pthread_mutex_unlock(&cpu_times.lock);
    }
    if (s) (*jni)->ReleaseIntArrayElements(jni, serials, s, JNI_ABORT);
    if (c) (*jni)->ReleaseLongArrayElements(jni, calls, c, JNI_ABORT);
    if (t) (*jni)->ReleaseLongArrayElements(jni, cpu, t, JNI_ABORT);
    if (all) (*jni)->ReleaseLongArrayElements(jni, total, all, JNI_ABORT);
    if (!vthread_end.retiring)
        thread_cpu_close();                /* the carrier's counter serves its other virtual threads */
}

/* ------------------------------------------------------------ collector */

static int wanted(const hprof_options *opt) { return opt->cpu == CPU_TIMES || opt->cpu == CPU_OLD; }

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps) {
    (void)env;
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    /* VirtualThreadEnd: a virtual thread's state is handed over there (they
     * get no ThreadEnd). */
    cpu_times.vt_end = jvmti_want_virtual_threads(potential, caps);
    if (env->live)
        env->limit("cpu=times: calls already running at the attach are not timed (their methods run "
                   "the old code until they return); every call made after it is");
    return tracker_agent_capabilities(potential, caps);
}

static void JNICALL on_virtual_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);

static int subscribe(const collector_env *env) {
    (void)env;
    if (cpu_times.vt_end && events_subscribe(EVENT_VIRTUAL_THREAD_END, EVENT_FN(on_virtual_thread_end)) != 0)
        return -1;
    return tracker_agent_subscribe();
}

static int start(const collector_env *env, JNIEnv *jni) {
    jclass tracker = tracker_agent_define(jni, env->live);
    if (tracker == NULL) return -1;
    int old_prof = env->opt->cpu == CPU_OLD;
    /* HPROF timed cpu=old's calls with traces of 2 frames, whatever depth=
     * said (depth= still applies to the other sections' traces). */
    int trace_depth = old_prof ? 2 : env->opt->depth;
    if (cpu_times.tracker == NULL) {
        cpu_times.cfg.depth = trace_depth;
        cpu_times.cfg.old_prof = old_prof;
        cpu_times.cfg.lineno = env->opt->lineno;
        cpu_times.cfg.per_thread = env->opt->thread;
        cpu_times.cfg.full_stacks = !old_prof && options_want_stacks(env->opt);
        cpu_times.cfg.jdk_calls = env->opt->jdk_calls;
        cpu_times.builder.depth = trace_depth;
        cpu_times.builder.full_stacks = cpu_times.cfg.full_stacks;
        cpu_times.builder.lineno = env->opt->lineno;
        cpu_times.builder.tables = env->tables;
        cpu_times.builder.resolve = resolve_method;
        times_table_init(&cpu_times.retired);
        times_table_init(&cpu_times.baseline);
        jfieldID depth = (*jni)->GetStaticFieldID(jni, tracker, "depth", "I");
        if (tracker_jni_failed(jni, depth, "finding HprofTracker.depth")) return -1;
        cpu_times.engaged = (*jni)->GetStaticFieldID(jni, tracker, "engaged", "I");
        if (tracker_jni_failed(jni, cpu_times.engaged, "finding HprofTracker.engaged")) return -1;
        cpu_times.thread_end = (*jni)->GetStaticMethodID(jni, tracker, "threadEnd", "()V");
        if (tracker_jni_failed(jni, cpu_times.thread_end, "finding HprofTracker.threadEnd")) return -1;
        cpu_times.snapshot = (*jni)->GetStaticMethodID(jni, tracker, "snapshot", "()[J");
        if (tracker_jni_failed(jni, cpu_times.snapshot, "finding HprofTracker.snapshot")) return -1;
        (*jni)->SetStaticIntField(jni, tracker, depth,
                                  cpu_times.cfg.full_stacks ? STACK_MAX_FRAMES : cpu_times.cfg.depth > 0 ? cpu_times.cfg.depth : 1);
        /* thread=y: a trace names its thread, so each thread names its own keys. */
        jfieldID share = (*jni)->GetStaticFieldID(jni, tracker, "shareNames", "Z");
        if (tracker_jni_failed(jni, share, "finding HprofTracker.shareNames")) return -1;
        (*jni)->SetStaticBooleanField(jni, tracker, share, cpu_times.cfg.per_thread ? JNI_FALSE : JNI_TRUE);
        jfieldID boundary = (*jni)->GetStaticFieldID(jni, tracker, "jdkBoundary", "Z");
        if (tracker_jni_failed(jni, boundary, "finding HprofTracker.jdkBoundary")) return -1;
        (*jni)->SetStaticBooleanField(jni, tracker, boundary,
                                      cpu_times.cfg.jdk_calls == JDK_CALLS_BOUNDARY ? JNI_TRUE : JNI_FALSE);
        cpu_times.tracker = tracker;
    } else if (trace_depth != cpu_times.cfg.depth || env->opt->thread != cpu_times.cfg.per_thread || old_prof != cpu_times.cfg.old_prof ||
               (!old_prof && options_want_stacks(env->opt) != cpu_times.cfg.full_stacks) ||
               env->opt->jdk_calls != cpu_times.cfg.jdk_calls) {
        env->limit("cpu=times|old: cpu=, depth=, thread=, jdk= and whole stacks (pprof=, flamegraph=, "
                   "collapsed=) keep the values of the first start");
    }
    stack_walk_fast_init();              /* the tracker's trace(): the cheap walk */
    cpu_times.cfg.cutoff = env->opt->cutoff;
    /* A new number each start: threads drop shadow stacks from before a stop. */
    cpu_times.epoch = cpu_times.epoch + 1 > 0 ? cpu_times.epoch + 1 : 1;
    /* Before counting starts: a virtual thread's first call must find its clock. */
    if (cpu_times.vt_end)
        cpu_times.vthread_clocks = vthread_clock_start(hprof_vm, jni) == 0;
    if (cpu_times.vthread_clocks && cpu_times.thread_tid == NULL && (cpu_times.thread_tid = thread_tid_field(jni)) == NULL) {
        cpu_times.vthread_clocks = 0;
        fprintf(stderr, "hprof: cpu=times: java.lang.Thread has no field tid; virtual threads are timed "
                        "on their carriers' clocks\n");
    }
    (*jni)->SetStaticIntField(jni, tracker, cpu_times.engaged, cpu_times.epoch);
    cpu_times.running = 1;
    tracker_agent_filter(&env->opt->include, &env->opt->exclude, cpu_times.cfg.jdk_calls == JDK_CALLS_NONE);
    tracker_agent_say_each(env->opt->verbose > 1);   /* else tracker_agent_apply says how many */
    tracker_agent_want(1, -1);
    if (cpu_times.vt_end)
        events_want(hprof_jvmti, EVENT_VIRTUAL_THREAD_END);
    return 0;
}

/* A virtual thread ends (on itself, still mounted): its state goes to the
 * retired totals as at ThreadEnd, so that the tracker does not keep one per
 * virtual thread ever run (100,000 of them ran a 512 MB heap out). The
 * carrier's counter stays. */
static void JNICALL on_virtual_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
    (void)jvmti;
    if (cpu_times.tracker == NULL) return;
    vthread_end.retiring = 1;
    (*jni)->CallStaticVoidMethod(jni, cpu_times.tracker, cpu_times.thread_end);
    vthread_end.retiring = 0;
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    if (cpu_times.thread_tid) vthread_end.ended_tid = (*jni)->GetLongField(jni, thread, cpu_times.thread_tid);
    vthread_clock_end(thread);
}

static void thread_end(JNIEnv *jni, jthread thread) {
    (void)thread;
    if (cpu_times.tracker == NULL) { thread_cpu_close(); return; }
    (*jni)->CallStaticVoidMethod(jni, cpu_times.tracker, cpu_times.thread_end);
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    thread_cpu_close();
}

/* Every count since start-up: threads that ended, and the live ones' (each
 * call still running counted up to now). 0, or -1 when out of memory. */
static int cumulative(JNIEnv *jni, times_table *all) {
    pthread_mutex_lock(&cpu_times.lock);
    int bad = times_table_merge(all, &cpu_times.retired);
    pthread_mutex_unlock(&cpu_times.lock);
    jlongArray live = (*jni)->CallStaticObjectMethod(jni, cpu_times.tracker, cpu_times.snapshot);
    if ((*jni)->ExceptionCheck(jni)) {
        fprintf(stderr, "hprof: cpu=times: reading the live threads' counters failed:\n");
        (*jni)->ExceptionDescribe(jni);
        (*jni)->ExceptionClear(jni);
        live = NULL;
    }
    if (live) {
        jsize len = (*jni)->GetArrayLength(jni, live);
        jlong *v = (*jni)->GetLongArrayElements(jni, live, NULL);
        /* [trace, calls, self ns, total ns] per key (HprofThreadState.snapshotInto) */
        for (jsize i = 0; v && i + 3 < len && !bad; i += 4)
            bad = times_table_add(all, (serial_t)v[i], (uint64_t)v[i + 1], nonnegative(v[i + 2]),
                                  nonnegative(v[i + 3])) != 0;
        if (v) (*jni)->ReleaseLongArrayElements(jni, live, v, JNI_ABORT);
        (*jni)->DeleteLocalRef(jni, live);
    }
    return bad ? -1 : 0;
}

/* What happened since the last reset: the cumulative counts less those
 * read at the reset. */
static int since_reset(JNIEnv *jni, times_table *out) {
    return cumulative(jni, out) != 0 || times_table_subtract(out, &cpu_times.baseline) != 0 ? -1 : 0;
}

/* A row by tracker key as a profile row: calls, and CPU time (self). */
static void times_profile_row(const void *rows, uint32_t i, stack_id *stack, const char **leaf, const char **note,
                              int64_t *values) {
    (void)note;
    const times_row *r = (const times_row *)rows + i;
    trace_of_key(r->trace, stack);
    *leaf = NULL;
    values[0] = (int64_t)r->calls;
    values[1] = (int64_t)r->cpu_ns;
}

static profile *snapshot(JNIEnv *jni) {
    (void)jni;
    return stack_profile_take(&cpu_times.dumped_profile);
}

/* With whole stacks: keep by_key's counts as the snapshot's profile, and
 * turn by_key into a table by TRACE. 0, or -1 when out of memory. */
static int by_trace(times_table *by_key) {
    if (!cpu_times.cfg.full_stacks) return 0;
    static const profile_value_type types[] = { { "calls", "count" }, { "cpu", "nanoseconds" } };
    times_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    if (times_table_rows(by_key, &rows, &n, &total) != 0) return -1;
    stack_profile_keep(&cpu_times.dumped_profile, stack_profile_of_rows(agent_tables(), "CPU time", types, 2, 1, rows, n, times_profile_row));
    times_table out;
    times_table_init(&out);
    int bad = 0;
    for (uint32_t i = 0; i < n && !bad; i++) {
        stack_id stack;
        bad = times_table_add(&out, trace_of_key(rows[i].trace, &stack), rows[i].calls, rows[i].cpu_ns,
                              rows[i].total_ns) != 0;
    }
    free(rows);
    times_table_free(by_key);
    *by_key = out;
    return bad ? -1 : 0;
}

static void dump(dump_target *t, JNIEnv *jni) {
    text_writer *text = report_text(&t->report);    /* CPU TIME: text only */
    if (cpu_times.tracker == NULL || text == NULL) return;
    times_table all;
    times_table_init(&all);
    times_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    if (!cpu_times.cfg.old_prof)
        text_write_new_records(text);
    if (since_reset(jni, &all) != 0 || by_trace(&all) != 0 || times_table_rows(&all, &rows, &n, &total) != 0 ||
        (cpu_times.cfg.old_prof && old_prof_write(agent_tables(), text->out, rows, n) != 0))
        fprintf(stderr, "hprof: out of memory while writing %s\n", cpu_times.cfg.old_prof ? "cpu=old's profile" : "CPU TIME");
    else if (!cpu_times.cfg.old_prof)
        text_write_cpu_times(text, rows, n, total, t->report.cutoff, time(NULL));
    free(rows);
    times_table_free(&all);
    char unmatched[512];
    if (t->verbose && tracker_agent_unmatched(unmatched, sizeof unmatched) > 0) {
        char line[640];
        snprintf(line, sizeof line, "hprof: cpu=times: no class loaded so far matches %s (a typo?)", unmatched);
        dump_note(t, line);
    }
    if (t->final) (*jni)->SetStaticIntField(jni, cpu_times.tracker, cpu_times.engaged, 0);
}

static void reset(JNIEnv *jni) {
    if (cpu_times.tracker == NULL) return;
    times_table now;
    times_table_init(&now);
    if (cumulative(jni, &now) != 0) {
        fprintf(stderr, "hprof: cpu=times: out of memory; counts not reset\n");
        times_table_free(&now);
        return;
    }
    times_table_free(&cpu_times.baseline);
    cpu_times.baseline = now;
}

static void stop(JNIEnv *jni) {
    if (!cpu_times.running) return;
    cpu_times.running = 0;
    (*jni)->SetStaticIntField(jni, cpu_times.tracker, cpu_times.engaged, 0);
    tracker_agent_want(0, -1);
    if (cpu_times.vt_end)
        events_unwant(hprof_jvmti, EVENT_VIRTUAL_THREAD_END);
    vthread_clock_stop();
}

static void status(char *line, size_t size) {
    JNIEnv *jni = NULL;
    uint64_t calls = 0, ns = 0;
    times_table all;
    times_table_init(&all);
    if (cpu_times.tracker && (*hprof_vm)->GetEnv(hprof_vm, (void **)&jni, JNI_VERSION_1_8) == JNI_OK &&
        since_reset(jni, &all) == 0)
        for (uint32_t i = 0; i < all.cap; i++) { calls += all.slots[i].calls; ns += all.slots[i].cpu_ns; }
    times_table_free(&all);
    snprintf(line, size, "%s: %s, %llu calls timed, %.3f s of CPU", cpu_times.cfg.old_prof ? "cpu=old" : "cpu=times",
             cpu_times.running ? "timing" : "stopped",
             (unsigned long long)calls, (double)ns / 1e9);
}

const collector cpu_times_collector = {
    .name = "cpu=times", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe,
    .start = start, .thread_end = thread_end, .dump = dump, .reset = reset, .stop = stop, .status = status,
    .profile_kind = "cpu", .snapshot = snapshot,
};
