/* cpu_collector.c: see cpu_collector.h. */
#include "cpu_collector.h"
#include "../core/keytab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACKS (1u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_collector_config cfg;

/* counts[serial - EMPTY_TRACE_SERIAL]: the empty trace, then every trace. */
static uint64_t *counts;
static uint32_t  counts_cap;
static uint64_t  total;

/* Whole stacks (method serials, callee first) -> count, for collapsed output. */
static keytab    stacks;
static uint64_t *stack_counts;
static uint32_t  stack_counts_cap;

/* HotSpot's AsyncGetCallTrace failure codes 0, -1, ... -10 (forte.cpp). */
static const char *const asgct_failures[] = {
    "no_Java_frame", "no_class_load", "GC_active", "unknown_not_Java",
    "not_walkable_not_Java", "unknown_Java", "not_walkable_Java", "unknown_state",
    "thread_exit", "deopt", "safepoint",
};
#define ASGCT_CODES ((int32_t)(sizeof asgct_failures / sizeof asgct_failures[0]))

const char *cpu_failure_reason(int32_t code)
{
    if (code <= 0 && code > -ASGCT_CODES)
        return asgct_failures[-code];
    return "unknown_failure";
}

int cpu_collector_init(const cpu_collector_config *config)
{
    pthread_mutex_lock(&lock);
    cfg = *config;
    total = 0;
    keytab_init(&stacks, MAX_STACKS);
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
    keytab_free(&stacks);
    free(stack_counts);
    stack_counts = NULL;
    stack_counts_cap = 0;
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

static void count_stack(const serial_t *methods, uint32_t n, uint64_t count)
{
    uint32_t idx = keytab_intern(&stacks, methods, n * (uint32_t)sizeof *methods, NULL);
    if (idx == KEYTAB_FULL || grow_u64(&stack_counts, &stack_counts_cap, idx) != 0)
        return;
    stack_counts[idx] += count;
}

static void count_pseudo(serial_t thread, const char *reason, uint64_t count)
{
    serial_t m = pseudo_method(reason);
    serial_t f = m ? frame_intern(m, LINE_UNKNOWN) : 0;
    serial_t trace = f ? trace_intern(cfg.per_thread ? thread : 0, &f, 1) : 0;
    count_trace(trace, count);
    if (cfg.keep_stacks && m)
        count_stack(&m, 1, count);
}

void cpu_collector_add_lost(const char *reason, uint64_t count)
{
    if (count == 0)
        return;
    pthread_mutex_lock(&lock);
    count_pseudo(0, reason, count);
    pthread_mutex_unlock(&lock);
}

static void record(const raw_sample *s, uint32_t max_frames)
{
    uint64_t weight = s->weight ? s->weight : 1;
    serial_t thread = s->thread_serial;
    if (s->num_frames <= 0) {
        count_pseudo(thread, cpu_failure_reason(s->num_frames), weight);
        return;
    }
    uint32_t n = (uint32_t)s->num_frames;
    if (n > max_frames)
        n = max_frames;
    if (n > CPU_MAX_FRAMES)
        n = CPU_MAX_FRAMES;
    trace_builder b = { cfg.depth, cfg.lineno, cfg.resolve, cfg.resolve_context };
    serial_t methods[CPU_MAX_FRAMES];
    serial_t trace = trace_build(&b, cfg.per_thread ? thread : 0, s->frames, n,
                                 cfg.keep_stacks ? methods : NULL);
    count_trace(trace, weight);     /* trace 0 (a table full): in the total only */
    if (cfg.keep_stacks)
        count_stack(methods, n, weight);
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
    total = 0;
    pthread_mutex_unlock(&lock);
}

void cpu_collector_each_stack(stack_visitor fn, void *arg)
{
    serial_t root_first[CPU_MAX_FRAMES];
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < stacks.count; i++) {
        uint32_t len = 0;
        const serial_t *callee_first = keytab_key(&stacks, i, &len);
        uint32_t n = len / (uint32_t)sizeof *callee_first;
        for (uint32_t j = 0; j < n; j++)
            root_first[j] = callee_first[n - 1 - j];
        if (i < stack_counts_cap && stack_counts[i])
            fn(root_first, n, stack_counts[i], arg);
    }
    pthread_mutex_unlock(&lock);
}
