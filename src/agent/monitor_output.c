/*
 * monitor_output.c: monitor=y's rows at a dump: MONITOR TIME (contention),
 * MONITOR WAIT TIME and MONITOR PINNED TIME, and, with whole stacks, the
 * same rows as the "lock" and "wait" profiles of pprof=, flamegraph=,
 * collapsed= and jfr=. See monitor_parts.h.
 */
#include "monitor_parts.h"

#include <stdio.h>
#include <stdlib.h>

#include "../snapshot/stack_profile.h"
#include "jvmti_support.h"

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
    const char *cls = class_java_name(agent_tables(), r->lock_class);
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
    return stack_profile_of_rows(agent_tables(), waits ? "Monitor waits" : "Lock contention", waits ? wait : contention, 2, 1,
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
static struct {
    profile *contention;
    profile *waits;
} dumped;

static void keep_profiles(monitor_row *rows, uint32_t n)
{
    uint32_t kept = rows_first(rows, n, row_not_pinned);
    uint32_t contention = rows_first(rows, kept, row_is_contention);
    stack_profile_keep(&dumped.contention, profile_of_rows(rows, contention, 0));
    stack_profile_keep(&dumped.waits, profile_of_rows(rows + contention, kept - contention, 1));
}

/* A cycle onto the lock profile this dump kept (none without whole
 * stacks): the neutral form writers read (profile.h), by name and frames. */
void monitor_profile_deadlock(const monitor_deadlocked *threads, uint32_t n)
{
    if (dumped.contention == NULL || n == 0)
        return;
    profile_deadlock_thread *cycle = calloc(n, sizeof *cycle);
    uint32_t *frames = malloc((size_t)n * STACK_MAX_FRAMES * sizeof *frames);
    thread_info *named = malloc((size_t)n * sizeof *named);
    thread_info stack_thread;
    int ok = cycle && frames && named;
    for (uint32_t i = 0; ok && i < n; i++) {
        uint32_t *ids = frames + (size_t)i * STACK_MAX_FRAMES;
        int depth = stack_profile_frames(agent_tables(), dumped.contention, threads[i].stack, ids, &stack_thread);
        const char *lock = class_java_name(agent_tables(), threads[i].lock_class);
        if (thread_get(agent_tables(), threads[i].thread, &named[i]) != 0)
            snprintf(named[i].name, sizeof named[i].name, "thread %u", (unsigned)threads[i].thread);
        cycle[i] = (profile_deadlock_thread){ named[i].name, lock ? lock : "<unknown lock>", threads[i].parked, ids,
                                              depth > 0 ? (uint32_t)depth : 0 };
        ok = depth >= 0;
    }
    if (ok)
        ok = profile_add_deadlock(dumped.contention, cycle, n) == 0;
    if (!ok)
        fprintf(stderr, "hprof: monitor=y: out of memory: a deadlock cycle is left out of jfr=\n");
    free(cycle);
    free(frames);
    free(named);
}

profile *monitor_take_lock_profile(void)
{
    return stack_profile_take(&dumped.contention);
}

profile *monitor_take_wait_profile(void)
{
    return stack_profile_take(&dumped.waits);
}

void monitor_write_times(text_writer *w, time_t now)
{
    monitor_row *rows = NULL;
    uint32_t nrows = 0;
    uint64_t total = 0;
    if (monitor_table_stack_rows(mon_common.table, &rows, &nrows, &total) == 0) {
        if (mon_common.traces.full_stacks)
            keep_profiles(rows, nrows);
        monitor_rows_merge(rows, &nrows);
        text_write_monitor_time(w, "MONITOR TIME", MONITOR_SECTION_CONTENTION, rows, nrows, mon_common.cfg.cutoff, now);
        text_write_monitor_time(w, "MONITOR WAIT TIME", MONITOR_SECTION_WAIT, rows, nrows, mon_common.cfg.cutoff, now);
        if (mon_vthreads.vthread_class)
            text_write_monitor_time(w, "MONITOR PINNED TIME", MONITOR_SECTION_PINNED, rows, nrows,
                                    mon_common.cfg.cutoff, now);
        free(rows);
    }
}
