/*
 * monitor_table: blocked time per (stack trace, lock class, kind), for HPROF's
 * MONITOR TIME section.
 *
 * Three ways a thread waits on a lock feed it: a contended `synchronized`
 * enter (JVMTI MonitorContendedEnter/Entered), Object.wait (MonitorWait/
 * Waited) and parking on a java.util.concurrent lock (LockSupport.park with a
 * blocker). Times are nanoseconds from a monotonic clock; the writer shows ms.
 * Pure C and thread-safe (a mutex per shard); no JVMTI here. A table is the
 * caller's (monitor=y's in mon_common).
 */
#ifndef HPROF_MONITOR_TABLE_H
#define HPROF_MONITOR_TABLE_H

#include <stdint.h>

#include "../core/stack_table.h"
#include "../core/tables.h"
#include "../profile/report_rows.h"

typedef struct monitor_table monitor_table;

/* An empty table, NULL if out of memory; monitor_table_free frees it. A NULL
 * table has no rows and keeps nothing. */
monitor_table *monitor_table_new(void);
void monitor_table_free(monitor_table *table);

/* One blocking episode of `nanos`, at trace and (when whole stacks are
 * kept for pprof=, flamegraph=, collapsed=; else 0) its whole stack.
 * Returns 0, -1 when the table is full (the time still counts in the total). */
int  monitor_table_add(monitor_table *table, serial_t trace, stack_id stack, serial_t lock_class, block_kind kind, uint64_t nanos);

/* Rows ordered by time (descending, then trace); *total_nanos over all rows.
 * Caller frees *rows. */
int  monitor_table_rows(monitor_table *table, monitor_row **rows, uint32_t *n, uint64_t *total_nanos);

/* The same episodes by whole stack: one row per (trace, stack, class,
 * kind), unordered; what monitor_table_rows merges. Caller frees *rows. */
int  monitor_table_stack_rows(monitor_table *table, monitor_row **rows, uint32_t *n, uint64_t *total_nanos);
/* Such rows merged in place as monitor_table_rows gives them: one per
 * (trace, class, kind), stack 0, ordered; *n becomes their number. So a
 * dump can write the report and a whole-stack profile from one reading. */
void monitor_rows_merge(monitor_row *rows, uint32_t *n);

/* Zero every row (keys stay; rows with no episode since are left out): `reset`. */
void monitor_table_reset(monitor_table *table);

const char *block_kind_name(block_kind kind);   /* "enter", "wait", "park", "park-wait", "pinned" */

#endif
