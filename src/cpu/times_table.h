/*
 * times_table: cpu=times totals per trace (calls and CPU nanoseconds), the
 * part of cpu=times that needs no JVM: merged from threads that ended and
 * from snapshots of live ones, then sorted into CPU TIME rows.
 */
#ifndef HPROF_TIMES_TABLE_H
#define HPROF_TIMES_TABLE_H

#include <stdint.h>

#include "../core/tables.h"
#include "../profile/report_rows.h"


typedef struct times_table {
    times_row *slots;       /* open addressing by trace; trace 0 = empty */
    uint32_t   cap, n;
} times_table;

void times_table_init(times_table *t);
void times_table_free(times_table *t);
/* Adds to the trace's totals; -1 if out of memory (nothing added). */
int  times_table_add(times_table *t, serial_t trace, uint64_t calls, uint64_t cpu_ns, uint64_t total_ns);
/* A copy of src's rows added into dst. */
int  times_table_merge(times_table *dst, const times_table *src);
/* Rows ordered by CPU time (then calls, then trace), malloc'ed; total CPU ns. */
/* t -= baseline, per trace, clamped at 0 (cumulative counters read at a
 * `reset` and later: what happened since). -1 when out of memory. */
int  times_table_subtract(times_table *t, const times_table *baseline);
int  times_table_rows(const times_table *t, times_row **rows, uint32_t *n, uint64_t *total_ns);

#endif
