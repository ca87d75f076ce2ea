/*
 * monitor_table: blocked time per (stack trace, lock class, kind), for HPROF's
 * MONITOR TIME section.
 *
 * Three ways a thread waits on a lock feed it: a contended `synchronized`
 * enter (JVMTI MonitorContendedEnter/Entered), Object.wait (MonitorWait/
 * Waited) and parking on a java.util.concurrent lock (LockSupport.park with a
 * blocker). Times are nanoseconds from a monotonic clock; the writer shows ms.
 * Pure C and thread-safe (one mutex); no JVMTI here.
 */
#ifndef HPROF_MONITOR_TABLE_H
#define HPROF_MONITOR_TABLE_H

#include <stdint.h>

#include "../core/stack_table.h"
#include "../core/tables.h"

/* Contention (MONITOR TIME): a contended `synchronized` enter, or parking on
 * a lock-like synchronizer (an AbstractOwnableSynchronizer: ReentrantLock,
 * ReentrantReadWriteLock, Semaphore, ...). Waiting (MONITOR WAIT TIME):
 * Object.wait, or parking on anything else (Condition.await, futures, idle
 * pool threads), which would otherwise drown contention in idle time. */
typedef enum { BLOCK_ENTER = 0, BLOCK_WAIT = 1, BLOCK_PARK = 2, BLOCK_PARK_WAIT = 3,
               BLOCK_PINNED = 4 } block_kind;
/* BLOCK_PINNED: a virtual thread blocked while pinned to its carrier (the
 * carrier blocked with it). Such an episode is added twice: under its own
 * kind, so that MONITOR TIME and MONITOR WAIT TIME stay whole, and as
 * BLOCK_PINNED for MONITOR PINNED TIME. */

static inline int block_kind_is_contention(block_kind k)
{
    return k == BLOCK_ENTER || k == BLOCK_PARK;
}

/* Which section a row belongs to: MONITOR_SECTION_CONTENTION (MONITOR
 * TIME), _WAIT (MONITOR WAIT TIME) or _PINNED (MONITOR PINNED TIME). */
enum { MONITOR_SECTION_WAIT = 0, MONITOR_SECTION_CONTENTION = 1, MONITOR_SECTION_PINNED = 2 };
static inline int block_kind_section(block_kind k)
{
    return k == BLOCK_PINNED ? MONITOR_SECTION_PINNED
         : block_kind_is_contention(k) ? MONITOR_SECTION_CONTENTION : MONITOR_SECTION_WAIT;
}

typedef struct monitor_row {
    serial_t   trace;          /* where the thread blocked */
    stack_id   stack;          /* its whole stack (monitor_table_stack_rows only), or 0 */
    serial_t   lock_class;     /* class serial of the monitor or the park blocker */
    block_kind kind;
    uint64_t   count;          /* blocking episodes */
    uint64_t   nanos;          /* total time blocked */
} monitor_row;

int  monitor_table_init(void);
void monitor_table_free(void);

/* One blocking episode of `nanos`, at trace and (when whole stacks are
 * kept for pprof=, flamegraph=, collapsed=; else 0) its whole stack.
 * Returns 0, -1 when the table is full (the time still counts in the total). */
int  monitor_table_add(serial_t trace, stack_id stack, serial_t lock_class, block_kind kind, uint64_t nanos);

/* Rows ordered by time (descending, then trace); *total_nanos over all rows.
 * Caller frees *rows. */
int  monitor_table_rows(monitor_row **rows, uint32_t *n, uint64_t *total_nanos);

/* The same episodes by whole stack: one row per (trace, stack, class,
 * kind), unordered; what monitor_table_rows merges. Caller frees *rows. */
int  monitor_table_stack_rows(monitor_row **rows, uint32_t *n, uint64_t *total_nanos);
/* Such rows merged in place as monitor_table_rows gives them: one per
 * (trace, class, kind), stack 0, ordered; *n becomes their number. So a
 * dump can write the report and a whole-stack profile from one reading. */
void monitor_rows_merge(monitor_row *rows, uint32_t *n);

/* Zero every row (keys stay; rows with no episode since are left out): `reset`. */
void monitor_table_reset(void);

const char *block_kind_name(block_kind kind);   /* "enter", "wait", "park", "park-wait", "pinned" */

#endif
