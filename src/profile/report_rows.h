/*
 * report_rows: what collectors hand to the writers of reports, and nothing
 * else: rows keyed by the shared tables' serials (a trace, a class, a whole
 * stack) with their counts. The collectors (cpu/, heap/, monitor/) produce
 * them; output/ presents them in any format without knowing a collector, and
 * the front end (build/hprof), which has no collector, names categories and
 * states through the same inline helpers.
 */
#ifndef HPROF_REPORT_ROWS_H
#define HPROF_REPORT_ROWS_H

#include <stdint.h>

#include "../core/stack_table.h"
#include "../core/tables.h"

/* ---- cpu=samples and wall= (cpu/cpu_collector.h) ---- */

/* What a thread was doing when a wall= sample found it, from its frames
 * and whether it was inside a system call. */
enum {
    CPU_STATE_RUNNING = 0,        /* on a CPU */
    CPU_STATE_SLEEPING,           /* Thread.sleep */
    CPU_STATE_WAITING,            /* Object.wait */
    CPU_STATE_PARKED,             /* LockSupport.park (java.util.concurrent's locks, queues) */
    CPU_STATE_BLOCKED,            /* waiting to enter a monitor (synchronized) */
    CPU_STATE_SYSCALL,            /* blocked in a system call: I/O, a native library's wait */
    CPU_STATE_RUNNABLE,           /* ready to run, but mostly waiting for a CPU (SAMPLE_RUNNABLE) */
    CPU_STATES
};
static inline const char *cpu_state_name(int state)
{
    static const char *const names[CPU_STATES] = { "running", "sleeping", "waiting", "parked", "blocked",
                                                   "syscall", "runnable" };
    return state >= 0 && state < CPU_STATES ? names[state] : "running";
}

/* Where the CPU went, by what the sampled thread was doing: the summary a
 * report opens with. */
enum {
    CPU_CATEGORY_JAVA = 0,        /* a Java thread in Java code */
    CPU_CATEGORY_GC,              /* the garbage collector's threads */
    CPU_CATEGORY_JIT,             /* the JIT compilers' threads */
    CPU_CATEGORY_VM,              /* the JVM's other threads, and Java threads inside libjvm.so */
    CPU_CATEGORY_NATIVE,          /* native code: JNI libraries, libc, threads native code started */
    CPU_CATEGORY_UNKNOWN,         /* no frame could be had */
    CPU_CATEGORY_KERNEL,          /* a Java thread in the kernel (a system call, a page fault) */
    CPU_CATEGORIES
};
/* Rows of a summary: categories (cpu=samples) or states (wall=). */
#define CPU_SUMMARY_ROWS 8
/* Inline: the text writer names categories in build/hprof too, which has no
 * collector. */
static inline const char *cpu_category_name(int category)
{
    switch (category) {
    case CPU_CATEGORY_JAVA:   return "Java";
    case CPU_CATEGORY_GC:     return "GC";
    case CPU_CATEGORY_JIT:    return "JIT compiler";
    case CPU_CATEGORY_VM:     return "VM";
    case CPU_CATEGORY_NATIVE: return "native";
    case CPU_CATEGORY_KERNEL: return "kernel";
    default:                  return "unknown";
    }
}
typedef struct cpu_thread_count {
    serial_t thread;
    uint64_t count;
} cpu_thread_count;

typedef struct cpu_summary {
    uint64_t          total;
    uint64_t          by_category[CPU_SUMMARY_ROWS];   /* wall=: by state (CPU_STATE_*) */
    cpu_thread_count *threads;    /* by count, descending (malloc'd: cpu_summary_free) */
    uint32_t          nthreads;
} cpu_summary;

/* Samples per trace (CPU SAMPLES, WALL SAMPLES). */
typedef struct cpu_row {
    serial_t trace;
    uint64_t count;
} cpu_row;

/* ---- cpu=times (cpu/times_table.h) ---- */

typedef struct times_row {
    serial_t trace;
    uint64_t calls;
    uint64_t cpu_ns;        /* self: the trace's own time, callees excluded (CPU TIME) */
    uint64_t total_ns;      /* callees included (cpu=old's time column) */
} times_row;

/* ---- heap=sites (heap/site_table.h): one per (trace, class), subsites summed ---- */

typedef struct site_row {
    serial_t trace, class_serial;
    stack_id stack;                 /* site_stack_rows only; 0 in site_rows */
    uint64_t live_bytes, live_objs, alloc_bytes, alloc_objs;
} site_row;

/* ---- monitor=y (monitor/monitor_table.h) ---- */

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

#endif
