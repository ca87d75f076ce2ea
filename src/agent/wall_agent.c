/*
 * wall_agent: wall= as a collector (collector.h): where every thread's time
 * goes, on the CPU or off it.
 *
 * A ticker thread of its own (a plain pthread, no JVM thread) wakes every
 * wall= interval and sends the sampling signal (sampler.c) to a bounded
 * batch of the process's threads, round robin; each signal's sample stands
 * for as many intervals as the thread waits between two of its turns, so a
 * thread's samples add up to its lifetime whatever the thread count, and
 * 1,000 idle threads cost the same per tick as 16. The handler walks the
 * thread as it walks a CPU sample (Java frames, native frames with
 * native=y) into this collector's queue, noting whether the thread was
 * inside a system call; the agent thread drains the queue into a
 * cpu_collector of its own, which gives each stack its state (running,
 * sleeping, waiting, parked, blocked, syscall: cpu_collector.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../cpu/cpu_collector.h"
#include "../cpu/native_libs.h"
#include "../cpu/native_names.h"
#include "../cpu/sample_queue.h"
#include "../sampler/sampler.h"
#include "collector.h"
#include "java_code.h"
#include "jvmti_support.h"
#include "samples_agent.h"

/* Threads signalled per tick: the bound on the ticker's cost per tick. */
#define WALL_THREADS_PER_TICK 16
/* How often (in ticks) the ticker lists the process's threads again. */
#define WALL_RELIST_TICKS 10
#define WALL_TICK_MS 50

static struct {
    int             initialised;
    int             running;
    int             interval_ms;
    int             native;
    int             keep_stacks;      /* pprof=, flamegraph=, collapsed= */
    sample_queue    queue;
    cpu_collector  *counts;
    pthread_t       ticker;
    atomic_int      ticker_stop;
    int             ticker_started;
    atomic_ullong   signals_sent;
    unsigned        ticks;
} wall;

/* ------------------------------------------------------------ ticker */

/* The ticker's own view of the threads: relisted every few ticks, since
 * threads that are not Java threads come and go without an event. */
typedef struct ticker_threads {
    pid_t *tids;
    size_t n;
    size_t next;                   /* round robin: the first of the next batch */
} ticker_threads;

static void relist(ticker_threads *t, pid_t self)
{
    size_t n = 0;
    pid_t *tids = sampler_list_threads(&n);
    if (tids == NULL)
        return;                    /* keep the old list */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (tids[i] != self)
            tids[kept++] = tids[i];
    free(t->tids);
    t->tids = tids;
    t->n = kept;
    t->next = 0;
}

static void add_ms(struct timespec *ts, int ms)
{
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    ts->tv_sec += ms / 1000 + ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* One tick: the next batch. With n threads and at most
 * WALL_THREADS_PER_TICK a tick, a round of `ticks` = ceil(n / per tick)
 * ticks visits every thread exactly once (ceil(n / ticks) a tick, the
 * last tick of a round fewer), so each sample stands for exactly `ticks`
 * intervals and a thread's samples add up to its lifetime. */
static void signal_batch(ticker_threads *t)
{
    if (t->n == 0)
        return;
    size_t ticks = (t->n + WALL_THREADS_PER_TICK - 1) / WALL_THREADS_PER_TICK;
    size_t per_tick = (t->n + ticks - 1) / ticks;
    for (size_t i = 0; i < per_tick && t->next < t->n; i++) {
        pid_t tid = t->tids[t->next++];
        if (sampler_wall_signal(tid, (uint32_t)ticks) == 0)
            atomic_fetch_add_explicit(&wall.signals_sent, 1, memory_order_relaxed);
        /* ESRCH: it ended since the list was made; the next list drops it. */
    }
    if (t->next >= t->n)
        t->next = 0;               /* the round is over */
}

static void *ticker_main(void *arg)
{
    (void)arg;
    pid_t self = (pid_t)syscall(SYS_gettid);
    ticker_threads threads = { NULL, 0, 0 };
    unsigned next_list = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (unsigned tick = 0; !atomic_load(&wall.ticker_stop); tick++) {
        /* A new list at a round's start, at most every few ticks: a thread
         * started meanwhile waits for it, one that ended is skipped. */
        if (threads.next == 0 && tick >= next_list) {
            relist(&threads, self);
            next_list = tick + WALL_RELIST_TICKS;
        }
        signal_batch(&threads);
        add_ms(&next, wall.interval_ms);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
    }
    free(threads.tids);
    return NULL;
}

/* ------------------------------------------------------------ collector */

static int wanted(const hprof_options *opt) { return opt->wall_ms > 0; }

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    (void)env;
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    /* java_code: how the top Java frames ran */
    caps->can_generate_compiled_method_load_events = potential->can_generate_compiled_method_load_events;
    return 0;
}

/* Queue size: every batch of 100 ms, with room for the drain's 50 ms ticks. */
static size_t queue_capacity(int interval_ms)
{
    size_t cap = (size_t)WALL_THREADS_PER_TICK * (size_t)(200 / interval_ms + 1);
    return cap < 256 ? 256 : cap > 16384 ? 16384 : cap;
}

static int init_once(const collector_env *env)
{
    const hprof_options *opt = env->opt;
    if (wall.initialised) {
        if (opt->wall_ms != wall.interval_ms || opt->native != wall.native)
            env->limit("wall=: the interval and native= keep the values of the first start");
        if (options_want_stacks(opt) != wall.keep_stacks) {   /* its queue always carries whole stacks */
            wall.keep_stacks = options_want_stacks(opt);
            cpu_collector_set_keep_stacks(wall.counts, wall.keep_stacks);
        }
        return 0;
    }
    wall.interval_ms = opt->wall_ms;
    wall.native = opt->native;
    wall.keep_stacks = options_want_stacks(opt);
    uint32_t frames = CPU_MAX_FRAMES;
    cpu_collector_config cc = {
        .depth = opt->depth, .lineno = opt->lineno, .per_thread = opt->thread,
        .keep_stacks = options_want_stacks(opt), .tables = env->tables, .resolve = resolve_method,
        .resolve_native = wall.native ? native_frame_method : NULL,
        .os_thread = os_thread_serial, .wall_states = 1, .java_code = java_code_find,
    };
    char err[512];
    if (sample_queue_init(&wall.queue, queue_capacity(wall.interval_ms), frames) != 0 ||
        (wall.counts = cpu_collector_new(&cc)) == NULL) {
        fprintf(stderr, "hprof: out of memory starting wall=\n");
        return -1;
    }
    if (sampler_wall_init(hprof_vm, &wall.queue, frames, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (wall.native) {
        native_libs_refresh();
        sampler_native(1);
    }
    wall.initialised = 1;
    return 0;
}

static int subscribe(const collector_env *env)
{
    (void)env;
    return samples_subscribe_method_ids() | java_code_subscribe();
}

static int start(const collector_env *env, JNIEnv *jni)
{
    if (init_once(env) != 0 || samples_want_method_ids(jni) != 0)
        return -1;
    /* The handler finds a Java thread's serial by its JNIEnv. */
    samples_name_threads(jni);
    samples_set_stack_ends(jni, wall.counts);
    if (wall.keep_stacks)
        java_code_want(hprof_jvmti);     /* without it, frames' runs are unknown */
    atomic_store(&wall.ticker_stop, 0);
    sampler_wall_on(1);
    int rc = pthread_create(&wall.ticker, NULL, ticker_main, NULL);
    if (rc != 0) {
        sampler_wall_on(0);
        fprintf(stderr, "hprof: wall=: cannot start its ticker thread: %s\n", strerror(rc));
        return -1;
    }
    wall.ticker_started = 1;
    wall.running = 1;
    return 0;
}

static void thread_start(JNIEnv *jni, jthread thread, serial_t serial)
{
    (void)thread;
    if (wall.initialised)
        sampler_jvm_thread_here();
    if (wall.initialised && serial)
        sampler_name_thread(jni, serial);
}

static void thread_end(JNIEnv *jni, jthread thread)
{
    (void)thread;
    if (wall.initialised)
        sampler_name_thread(jni, 0);
}

static void drain(void)
{
    cpu_collector_drain(wall.counts, &wall.queue);
}

static int tick(JNIEnv *jni)
{
    (void)jni;
    drain();
    /* Libraries loaded since (a JNI library, libnio at the first socket):
     * their frames are walked from the next samples on. */
    if (wall.native && ++wall.ticks % 2 == 0)
        native_libs_refresh();
    return 0;
}

static void dump(dump_target *t, JNIEnv *jni)
{
    (void)jni;
    text_writer *text = report_text(&t->report);   /* WALL SUMMARY and SAMPLES: text only */
    if (!wall.initialised || text == NULL)
        return;
    drain();
    cpu_collector_add_lost(wall.counts, "buffer_full", atomic_exchange(&sampler_lost.wall_buffer_full, 0));
    cpu_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    cpu_summary summary;
    if (cpu_collector_rows(wall.counts, &rows, &n, &total) != 0 || cpu_collector_summary(wall.counts, &summary) != 0) {
        free(rows);
        fprintf(stderr, "hprof: out of memory while writing WALL SAMPLES\n");
        return;
    }
    text_write_new_records(text);
    text_write_wall_summary(text, &summary, wall.interval_ms, time(NULL));
    text_write_wall_samples(text, rows, n, total, t->report.cutoff, time(NULL));
    cpu_summary_free(&summary);
    free(rows);
}

/* Not drained first: see cpu=samples' reset (samples_agent.c). */
static void reset(JNIEnv *jni)
{
    (void)jni;
    if (!wall.initialised)
        return;
    cpu_collector_reset(wall.counts);
}

static void stop(JNIEnv *jni)
{
    (void)jni;
    if (!wall.running)
        return;
    wall.running = 0;
    atomic_store(&wall.ticker_stop, 1);
    if (wall.ticker_started)
        pthread_join(wall.ticker, NULL);
    wall.ticker_started = 0;
    sampler_wall_on(0);
    samples_unwant_method_ids();
    if (wall.keep_stacks)
        java_code_unwant(hprof_jvmti);
    drain();
}

static void status(char *line, size_t size)
{
    uint64_t total = 0;
    if (wall.initialised) {
        cpu_row *rows = NULL;
        uint32_t n = 0;
        drain();
        if (cpu_collector_rows(wall.counts, &rows, &n, &total) == 0)
            free(rows);
    }
    snprintf(line, size, "wall=: %s, %llu intervals of %d ms sampled (%llu signals sent)",
             wall.running ? "sampling" : "stopped", (unsigned long long)total, wall.interval_ms,
             (unsigned long long)atomic_load(&wall.signals_sent));
}

static profile *snapshot(JNIEnv *jni)
{
    (void)jni;
    if (!wall.initialised || !wall.keep_stacks)
        return NULL;
    return cpu_collector_profile(wall.counts, "Wall clock", "wall", (int64_t)wall.interval_ms * 1000000);
}

const collector wall_collector = {
    .name = "wall=", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe, .start = start,
    .thread_start = thread_start, .thread_end = thread_end, .tick_ms = WALL_TICK_MS, .tick = tick,
    .dump = dump, .reset = reset, .stop = stop, .status = status, .profile_kind = "wall", .snapshot = snapshot,
};
