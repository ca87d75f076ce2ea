/* cpu_collector.c: see cpu_collector.h. */
#include "cpu_collector.h"
#include "../core/stack_profile.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_collector_config cfg;

/* counts[serial - EMPTY_TRACE_SERIAL]: the empty trace, then every trace. */
static uint64_t *counts;
static uint32_t  counts_cap;
static uint64_t  total;

/* The summary (cpu_collector_summary): samples by category, and by thread
 * (thread_counts[serial - THREAD_SERIAL_BASE]; serial 0 in no_thread). */
static uint64_t  category_counts[CPU_CATEGORIES];
static uint64_t *thread_counts;
static uint32_t  thread_counts_cap;
static uint64_t  no_thread;

/* Whole stacks (stack_table.h) -> count: stack_counts[id - 1]; samples
 * whose stack the table could not keep are in unkept_stacks. */
static uint64_t *stack_counts;
static uint32_t  stack_counts_cap;
static uint64_t  unkept_stacks;

/* HotSpot's AsyncGetCallTrace failure codes 0, -1, ... -10 (forte.cpp). */
static const char *const asgct_failures[] = {
    "no_Java_frame", "no_class_load", "GC_active", "unknown_not_Java",
    "not_walkable_not_Java", "unknown_Java", "not_walkable_Java", "unknown_state",
    "thread_exit", "deopt", "safepoint",
};
#define ASGCT_CODES ((int32_t)(sizeof asgct_failures / sizeof asgct_failures[0]))

/* The sampler's own codes: SAMPLER_STOP_* (1, 2, ...) and SAMPLER_NO_NATIVE_FRAME. */
static const char *const stop_reasons[] = {
    "native_read_failed", "native_no_unwind_info", "native_depth_limit", "native_unknown_code",
};
#define STOP_CODES ((int32_t)(sizeof stop_reasons / sizeof stop_reasons[0]))

const char *cpu_failure_reason(int32_t code)
{
    if (code <= 0 && code > -ASGCT_CODES)
        return asgct_failures[-code];
    if (code >= 1 && code <= STOP_CODES)
        return stop_reasons[code - 1];
    if (code == SAMPLER_NO_NATIVE_FRAME)
        return "native_unknown_code";
    return "unknown_failure";
}

/* HotSpot's names for its threads, as the kernel keeps them (15 characters:
 * "C2 CompilerThread0" is "C2 CompilerThre"). */
static const char *const gc_thread_prefixes[] = {
    "GC Thread", "G1 ", "ZWorker", "ZDriver", "ZDirector", "ZStat", "ZUnmap", "ZUncommit", "XWorker",
    "XDriver", "Shenandoah", "Parallel GC", "Conc#", "SATB", "PLAB",
};
static const char *const jit_thread_prefixes[] = {
    "C1 Compiler", "C2 Compiler", "JVMCI", "Sweeper", "CompilerThre",
};
static const char *const vm_thread_prefixes[] = {
    "VM Thread", "VM Periodic", "Service Thread", "Monitor Deflat", "Notification", "Signal Dispatch",
    "JFR ", "Attach Listen", "Common-Cleaner", "Reference Handl", "Finalizer",
};

static int has_prefix(const char *name, const char *const *prefixes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

int cpu_category_of_thread_name(const char *name)
{
#define PREFIXES(a) a, sizeof a / sizeof a[0]
    if (has_prefix(name, PREFIXES(gc_thread_prefixes)))
        return CPU_CATEGORY_GC;
    if (has_prefix(name, PREFIXES(jit_thread_prefixes)))
        return CPU_CATEGORY_JIT;
    if (has_prefix(name, PREFIXES(vm_thread_prefixes)))
        return CPU_CATEGORY_VM;
#undef PREFIXES
    return CPU_CATEGORY_NATIVE;
}

int cpu_collector_init(const cpu_collector_config *config)
{
    pthread_mutex_lock(&lock);
    cfg = *config;
    total = 0;
    unkept_stacks = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

void cpu_collector_free(void)
{
    pthread_mutex_lock(&lock);
    free(counts);
    counts = NULL;
    counts_cap = 0;
    total = 0;
    unkept_stacks = 0;
    free(stack_counts);
    stack_counts = NULL;
    stack_counts_cap = 0;
    free(thread_counts);
    thread_counts = NULL;
    thread_counts_cap = 0;
    memset(category_counts, 0, sizeof category_counts);
    no_thread = 0;
    pthread_mutex_unlock(&lock);
}

static int grow_u64(uint64_t **a, uint32_t *cap, uint32_t index)
{
    if (index < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : 1024;
    while (ncap <= index)
        ncap *= 2;
    uint64_t *n = realloc(*a, (size_t)ncap * sizeof *n);
    if (n == NULL)
        return -1;
    memset(n + *cap, 0, (size_t)(ncap - *cap) * sizeof *n);
    *a = n;
    *cap = ncap;
    return 0;
}

/* Count `count` samples on a trace; called with the lock held. */
static void count_trace(serial_t trace, uint64_t count)
{
    total += count;
    if (trace == 0 || grow_u64(&counts, &counts_cap, trace - EMPTY_TRACE_SERIAL) != 0)
        return;     /* trace table or memory full: still in the total */
    counts[trace - EMPTY_TRACE_SERIAL] += count;
}

static void count_stack(stack_id stack, uint64_t count)
{
    if (stack == 0 || grow_u64(&stack_counts, &stack_counts_cap, stack - 1) != 0)
        unkept_stacks += count;      /* still in the snapshot, as [unwalkable].stack_table_full */
    else
        stack_counts[stack - 1] += count;
}

static void count_pseudo(serial_t thread, const char *reason, uint64_t count)
{
    serial_t m = pseudo_method(reason);
    serial_t f = m ? frame_intern(m, LINE_UNKNOWN) : 0;
    serial_t thread_serial = cfg.per_thread ? thread : 0;
    serial_t trace = f ? trace_intern(thread_serial, &f, 1) : 0;
    count_trace(trace, count);
    if (cfg.keep_stacks) {
        stack_frame whole = { m, LINE_UNKNOWN };
        count_stack(m ? stack_intern(thread_serial, &whole, 1, trace) : 0, count);
    }
}

static void count_summary(serial_t thread, int category, uint64_t weight);

void cpu_collector_add_lost(const char *reason, uint64_t count)
{
    if (count == 0)
        return;
    pthread_mutex_lock(&lock);
    count_summary(0, CPU_CATEGORY_UNKNOWN, count);
    count_pseudo(0, reason, count);
    pthread_mutex_unlock(&lock);
}

/* cpu_collector_set_stack_ends; under the lock */
static const void *stack_entry, *stack_boundary, *stack_carrier_only;

void cpu_collector_set_stack_ends(const void *entry, const void *boundary, const void *carrier_only)
{
    pthread_mutex_lock(&lock);
    stack_entry = entry;
    stack_boundary = boundary;
    stack_carrier_only = carrier_only;
    pthread_mutex_unlock(&lock);
}

/* The resolver trace_build calls for every frame of a sample: Java frames
 * go to the agent's resolver, native frames to its native one, stop frames
 * become [unwalkable].<reason>. */
static serial_t resolve_frame(const void *method, void *context)
{
    (void)context;
    switch (SAMPLE_FRAME_TAG(method)) {
    case SAMPLE_TAG_NATIVE_PC:
        return cfg.resolve_native ? cfg.resolve_native(SAMPLE_FRAME_VALUE(method), cfg.resolve_context) : 0;
    case SAMPLE_TAG_STOP:
        return pseudo_method(cpu_failure_reason((int32_t)(uint32_t)SAMPLE_FRAME_VALUE(method)));
    default:
        return cfg.resolve(method, cfg.resolve_context);
    }
}

/* Functions a thread's native stack legitimately ends in: a walk that stops
 * in unknown code above one of them has reached the thread's root. */
static int is_thread_root(serial_t method)
{
    static const char *const roots[] = { "start_thread", "clone", "clone3", "__clone", "__clone3",
                                         "_start", "__libc_start_main", "__libc_start_call_main" };
    method_info mi;
    if (method == 0 || method_get(method, &mi) != 0 || mi.kind == FRAME_KIND_JAVA)
        return 0;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strcmp(mi.name, roots[i]) == 0)
            return 1;
    return 0;
}

/* The category of a sample: by the thread for threads that are not Java
 * threads, by the top frame's kind for Java threads. */
static int category_of(serial_t thread, int java_thread, const sample_frame *top, uint32_t n)
{
    if (!java_thread) {
        thread_info ti;
        return thread && thread_get(thread, &ti) == 0 ? cpu_category_of_thread_name(ti.name) : CPU_CATEGORY_NATIVE;
    }
    if (n == 0)
        return CPU_CATEGORY_UNKNOWN;
    if (SAMPLE_FRAME_TAG(top->method) != SAMPLE_TAG_NATIVE_PC)
        return SAMPLE_FRAME_TAG(top->method) == SAMPLE_TAG_STOP ? CPU_CATEGORY_UNKNOWN : CPU_CATEGORY_JAVA;
    method_info mi;
    serial_t m = resolve_frame(top->method, NULL);
    if (m == 0 || method_get(m, &mi) != 0)
        return CPU_CATEGORY_NATIVE;
    return mi.kind == FRAME_KIND_JVM ? CPU_CATEGORY_VM : CPU_CATEGORY_NATIVE;
}

static void count_summary(serial_t thread, int category, uint64_t weight)
{
    category_counts[category] += weight;
    if (thread == 0 || thread < THREAD_SERIAL_BASE)
        no_thread += weight;
    else if (grow_u64(&thread_counts, &thread_counts_cap, thread - THREAD_SERIAL_BASE) == 0)
        thread_counts[thread - THREAD_SERIAL_BASE] += weight;
}

static void record(const raw_sample *s, uint32_t max_frames)
{
    uint64_t weight = s->weight ? s->weight : 1;
    serial_t thread = s->thread_serial;
    int java_thread = thread != 0 || s->os_tid == 0;
    if (thread == 0 && s->os_tid != 0 && cfg.os_thread)
        thread = cfg.os_thread(s->os_tid, cfg.resolve_context);
    if (s->num_frames <= 0) {
        count_summary(thread, java_thread ? CPU_CATEGORY_UNKNOWN : category_of(thread, 0, NULL, 0), weight);
        count_pseudo(thread, cpu_failure_reason(s->num_frames), weight);
        return;
    }
    uint32_t n = (uint32_t)s->num_frames;
    if (n > max_frames)
        n = max_frames;
    if (n > CPU_MAX_FRAMES)
        n = CPU_MAX_FRAMES;
    for (uint32_t i = 0; (stack_entry || stack_boundary) && i < n; i++) {
        if (s->frames[i].method == stack_entry) {
            n = i + 1;                  /* the frames below are the carrier's */
        } else if (s->frames[i].method == stack_boundary && i > 0) {
            n = i;                      /* this one too */
        } else if (s->frames[i].method == stack_carrier_only && stack_carrier_only && s->carrier_serial) {
            thread = s->carrier_serial; /* no frame of the virtual thread on top */
            break;
        }
    }
    /* A native stack that ends just above the thread's start function is
     * whole, however the walk ended there (glibc's clone3 says "no caller"
     * in its call-frame rules): the stop frame goes. */
    const void *last = s->frames[n - 1].method;
    if (n >= 2 && SAMPLE_FRAME_TAG(last) == SAMPLE_TAG_STOP && (int32_t)(uint32_t)SAMPLE_FRAME_VALUE(last) > 0 &&
        is_thread_root(resolve_frame(s->frames[n - 2].method, NULL)))
        n--;
    count_summary(thread, category_of(thread, java_thread, &s->frames[0], n), weight);
    trace_builder b = { .depth = cfg.depth, .lineno = cfg.lineno, .full_stacks = cfg.keep_stacks,
                        .resolve = resolve_frame, .context = NULL };
    stack_id stack = 0;
    serial_t trace = trace_build(&b, cfg.per_thread ? thread : 0, s->frames, n,
                                 cfg.keep_stacks ? &stack : NULL);
    count_trace(trace, weight);     /* trace 0 (a table full): in the total only */
    if (cfg.keep_stacks)
        count_stack(stack, weight);
}

uint32_t cpu_collector_drain(sample_queue *q)
{
    uint32_t drained = 0;
    pthread_mutex_lock(&lock);
    raw_sample *s;
    while ((s = sample_queue_peek(q)) != NULL) {
        record(s, q->max_frames);
        sample_queue_release(q, s);
        drained++;
    }
    pthread_mutex_unlock(&lock);
    return drained;
}

static int compare_rows(const void *a, const void *b)
{
    const cpu_row *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->trace > y->trace) - (x->trace < y->trace);
}

int cpu_collector_rows(cpu_row **rows, uint32_t *n, uint64_t *total_out)
{
    pthread_mutex_lock(&lock);
    uint32_t used = 0;
    for (uint32_t i = 0; i < counts_cap; i++)
        used += counts[i] != 0;
    cpu_row *r = malloc((used ? used : 1) * sizeof *r);
    if (r == NULL) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < counts_cap; i++) {
        if (counts[i]) {
            r[k].trace = EMPTY_TRACE_SERIAL + i;
            r[k].count = counts[i];
            k++;
        }
    }
    *total_out = total;
    pthread_mutex_unlock(&lock);
    qsort(r, k, sizeof *r, compare_rows);
    *rows = r;
    *n = k;
    return 0;
}

static int compare_by_method(const void *a, const void *b)
{
    const cpu_method_count *x = a, *y = b;
    return (x->method > y->method) - (x->method < y->method);
}

static int compare_by_count(const void *a, const void *b)
{
    const cpu_method_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return compare_by_method(a, b);
}

uint32_t cpu_top_methods(const cpu_row *rows, uint32_t n, cpu_method_count *out, uint32_t max)
{
    cpu_method_count *all = malloc((n ? n : 1) * sizeof *all);
    if (all == NULL)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        serial_t thread, method = 0;
        const serial_t *frames;
        uint32_t nframes = 0;
        int32_t line;
        if (trace_get(rows[i].trace, &thread, &frames, &nframes) != 0 || nframes == 0 ||
            frame_get(frames[0], &method, &line) != 0)
            method = 0;                /* depth=0: no frames to name */
        all[i] = (cpu_method_count){ method, rows[i].count };
    }
    qsort(all, n, sizeof *all, compare_by_method);
    uint32_t merged = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (merged > 0 && all[merged - 1].method == all[i].method)
            all[merged - 1].count += all[i].count;
        else
            all[merged++] = all[i];
    }
    qsort(all, merged, sizeof *all, compare_by_count);
    uint32_t k = merged < max ? merged : max;
    memcpy(out, all, k * sizeof *out);
    free(all);
    return k;
}

void cpu_collector_reset(void)
{
    pthread_mutex_lock(&lock);
    if (counts)
        memset(counts, 0, (size_t)counts_cap * sizeof *counts);
    if (stack_counts)
        memset(stack_counts, 0, (size_t)stack_counts_cap * sizeof *stack_counts);
    if (thread_counts)
        memset(thread_counts, 0, (size_t)thread_counts_cap * sizeof *thread_counts);
    memset(category_counts, 0, sizeof category_counts);
    no_thread = 0;
    total = 0;
    unkept_stacks = 0;
    pthread_mutex_unlock(&lock);
}

/* A copy of the whole-stack counts, taken under the lock, so that naming
 * frames (which takes the tables' locks) does not hold up the drain. */
static uint64_t *copy_stack_counts(uint32_t *n, uint64_t *unkept)
{
    pthread_mutex_lock(&lock);
    uint64_t *copy = malloc((stack_counts_cap ? stack_counts_cap : 1) * sizeof *copy);
    if (copy) {
        if (stack_counts_cap)
            memcpy(copy, stack_counts, (size_t)stack_counts_cap * sizeof *copy);
        *n = stack_counts_cap;
        *unkept = unkept_stacks;
    }
    pthread_mutex_unlock(&lock);
    return copy;
}

profile *cpu_collector_profile(int64_t interval_ns)
{
    static const profile_value_type types[] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
    uint32_t n = 0;
    uint64_t unkept = 0;
    uint64_t *counts_copy = copy_stack_counts(&n, &unkept);
    profile *p = counts_copy ? profile_new("CPU samples", types, 2) : NULL;
    if (p == NULL) {
        free(counts_copy);
        return NULL;
    }
    profile_set_period(p, types[1], interval_ns);
    int failed = 0;
    for (uint32_t i = 0; i <= n && !failed; i++) {
        uint64_t count = i < n ? counts_copy[i] : unkept;     /* i == n: stack 0 */
        int64_t values[2] = { (int64_t)count, (int64_t)count * interval_ns };
        if (count)
            failed = stack_profile_add(p, i < n ? i + 1 : 0, NULL, values) != 0;
    }
    free(counts_copy);
    if (failed) {
        profile_free(p);
        return NULL;
    }
    return p;
}

static int compare_thread_counts(const void *a, const void *b)
{
    const cpu_thread_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->thread > y->thread) - (x->thread < y->thread);
}

int cpu_collector_summary(cpu_summary *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&lock);
    uint32_t used = no_thread != 0;
    for (uint32_t i = 0; i < thread_counts_cap; i++)
        used += thread_counts[i] != 0;
    out->threads = malloc((used ? used : 1) * sizeof *out->threads);
    if (out->threads == NULL) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    for (uint32_t i = 0; i < thread_counts_cap; i++)
        if (thread_counts[i])
            out->threads[out->nthreads++] = (cpu_thread_count){ THREAD_SERIAL_BASE + i, thread_counts[i] };
    if (no_thread)
        out->threads[out->nthreads++] = (cpu_thread_count){ 0, no_thread };
    memcpy(out->by_category, category_counts, sizeof category_counts);
    for (int c = 0; c < CPU_CATEGORIES; c++)
        out->total += category_counts[c];
    pthread_mutex_unlock(&lock);
    qsort(out->threads, out->nthreads, sizeof *out->threads, compare_thread_counts);
    return 0;
}

void cpu_summary_free(cpu_summary *summary)
{
    free(summary->threads);
    summary->threads = NULL;
    summary->nthreads = 0;
}
