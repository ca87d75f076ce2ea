/*
 * cpu_collector: turns raw samples into counts per stack trace.
 *
 * The agent thread calls cpu_collector_drain every few milliseconds: each raw
 * sample's jmethodIDs are resolved to method serials (through a resolver the
 * agent supplies, so this file needs no JVMTI and is unit-tested with a fake),
 * frames and traces are interned in the shared tables, and a count is kept
 * per trace serial. Samples AsyncGetCallTrace could not walk are counted per
 * reason under pseudo methods of the class [unwalkable], so they show up in
 * every report as rows of their own instead of vanishing.
 *
 * For pprof=, flamegraph= and collapsed= the whole walked stack (up to
 * CPU_MAX_FRAMES, with line numbers: stack_table.h) is counted too.
 *
 * A collector is an instance (cpu=samples has one, wall= another): all its
 * functions are thread-safe (one mutex each) and never called from a handler.
 */
#ifndef HPROF_CPU_COLLECTOR_H
#define HPROF_CPU_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "../core/tables.h"
#include "../profile/profile.h"
#include "../profile/report_rows.h"
#include "sample_queue.h"

/* Most frames recorded per sample (AsyncGetCallTrace walks no deeper). */
#define CPU_MAX_FRAMES 256

typedef struct cpu_collector cpu_collector;

typedef struct cpu_collector_config {
    int      depth;            /* frames per TRACE (depth=) */
    int      lineno;           /* line numbers in frames (lineno=) */
    int      per_thread;       /* traces carry the thread serial (thread=) */
    profile_tables *tables;    /* where methods, frames, traces and threads go (not owned) */
    int      keep_stacks;      /* count whole stacks (pprof=, flamegraph=, collapsed=) */
    method_resolver resolve;
    void    *resolve_context;
    /* Native walks (sampler_native): the method of a native frame's address
     * (SAMPLE_TAG_NATIVE_PC), and the thread serial of a thread that is not
     * a Java thread, by its kernel thread id. NULL: no native frames. */
    serial_t (*resolve_native)(profile_tables *tables, uint64_t pc, void *context);
    serial_t (*os_thread)(profile_tables *tables, int32_t tid, void *context);
    /* The code a sample's java_pc lies in (CODE_* of code_map.h; for
     * compiled code, its method's jmethodID in *method), to mark the top
     * Java frames interpreted, compiled or inlined. NULL: not known. */
    int      (*java_code)(uint64_t pc, uint64_t *method, void *context);
    /* wall=: each stack gets, below its last frame, the thread's state
     * as the pseudo frame [state].<name> (cpu_state_name). */
    int      wall_states;
} cpu_collector_config;

/* The category of a thread that is not a Java thread, by its OS name
 * ("GC Thread#0", "C2 CompilerThre", "VM Thread"). */
int cpu_category_of_thread_name(const char *name);


/* Samples since the start (or the last reset) by category (by state with
 * wall_states) and by thread, whatever thread= says. 0, or -1 when out of
 * memory. */
int  cpu_collector_summary(cpu_collector *c, cpu_summary *out);
void cpu_summary_free(cpu_summary *summary);


/* NULL when out of memory. */
cpu_collector *cpu_collector_new(const cpu_collector_config *config);
void cpu_collector_free(cpu_collector *c);
/* The bytes the collector's counts hold (by trace, by whole stack, by thread). */
size_t cpu_collector_bytes(cpu_collector *c);

/* Where stacks end (JDK 21+ virtual threads: AsyncGetCallTrace walks from a
 * mounted virtual thread's frames on into its carrier's, Continuation
 * .enterSpecial and the scheduler's): at `entry` (kept: VirtualThread.run),
 * or just above `boundary` (not kept: Continuation.enterSpecial, reached
 * first when the frames below the top ones are still frozen in the heap
 * after a remount: HotSpot thaws them lazily). A sample charged to a
 * virtual thread whose walk meets `carrier_only` (VirtualThread
 * .runContinuation, which only carriers run) before either is its
 * carrier's: taken between the mount and the thread's first frame, or
 * after its last and before the unmount; it goes to the carrier, whole.
 * Samples recorded from now on are cut there. NULL: none. */
void cpu_collector_set_stack_ends(cpu_collector *c, const void *entry, const void *boundary, const void *carrier_only);

/* Move every published sample out of the queue; returns how many. */
uint32_t cpu_collector_drain(cpu_collector *c, sample_queue *q);

/* Add samples lost before they could be walked (buffer full, ...): they get
 * a row of their own under [unwalkable].<reason>. */
void cpu_collector_add_lost(cpu_collector *c, const char *reason, uint64_t count);

/* Rows ordered by count (descending, then trace serial); *total = all samples.
 * Caller frees *rows. Returns 0, or -1 when out of memory. */
int cpu_collector_rows(cpu_collector *c, cpu_row **rows, uint32_t *n, uint64_t *total);

/* Self samples per method: the rows' counts summed by the method of each
 * trace's top frame, the `max` largest into out (descending, then method
 * serial); returns how many. For the live summary of net=. */
typedef struct cpu_method_count {
    serial_t method;
    uint64_t count;
} cpu_method_count;
uint32_t cpu_top_methods(profile_tables *tables, const cpu_row *rows, uint32_t n, cpu_method_count *out, uint32_t max);

/* Zero every count (traces and stacks keep their serials): `reset`. */
void cpu_collector_reset(cpu_collector *c);

/* Count whole stacks from now on, or stop (a later start of an attached
 * agent asks for pprof=, flamegraph= or collapsed= when the first did not):
 * the profile then holds the samples since. The queue must carry frames
 * deep enough (the caller's business). */
void cpu_collector_set_keep_stacks(cpu_collector *c, int keep);

/* The whole stacks counted so far (keep_stacks) as a new profile `title`
 * ("CPU samples"): values samples/count and <time_type>/nanoseconds (count
 * * interval_ns; time_type "cpu" or "wall"), period interval_ns. Its sample
 * total equals the CPU SAMPLES total. NULL when out of memory; the caller
 * frees it. */
profile *cpu_collector_profile(cpu_collector *c, const char *title, const char *time_type, int64_t interval_ns);

/* Name of an AsyncGetCallTrace failure code ("GC_active", ...), or of a
 * sampler's stop code (positive: "native_read_failed", ...). */
const char *cpu_failure_reason(int32_t code);

#endif
