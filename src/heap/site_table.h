/*
 * site_table: allocation sites for heap=sites, the part that needs no JVM.
 *
 * A site, as HPROF reports it, is (trace, class). Internally the table keeps
 * "subsites": (trace, whole stack, class, object size); the whole stack
 * (stack_table.h) is 0 unless pprof=, flamegraph= or collapsed= asked for
 * whole stacks, and the trace is derived from it then. All objects of a subsite have the
 * same size, so an object's JVMTI tag only has to name its subsite (see
 * heap_tags.h) for a heap census (or JVMTI ObjectFree), which gives nothing
 * but the tag, to know how many bytes are live (or died). Instances of a
 * class always have one size; arrays split into one subsite per length met
 * at that site.
 *
 * Counting is lock-free: site_count_alloc and site_count_free are atomic
 * increments on the subsite, safe from any thread including a GC-time
 * callback. Interning a new subsite takes a mutex. Subsites live
 * in chunks that never move, so a subsite number stays valid for the life of
 * the table. Bounded: at most max_subsites (site_intern returns 0 after).
 */
#ifndef HPROF_SITE_TABLE_H
#define HPROF_SITE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/stack_table.h"
#include "../core/tables.h"
#include "../profile/report_rows.h"

typedef uint32_t subsite_t;          /* 0: none (table full) */

/* The largest subsite number a tag can hold (heap_tags.h): 2^30 - 1. */
#define SUBSITE_MAX ((1u << 30) - 1)

int  site_table_init(uint32_t max_subsites);   /* 0 on success */
void site_table_free(void);
/* Bytes the table holds now (slot array, chunk index, chunks made): for `status`. */
size_t site_table_bytes(void);

/* The subsite of (trace, stack, class, size), created if new; 0 when full.
 * Each thread keeps a cache of its last subsites (8 KB, malloc'ed at its
 * first call): site_table_thread_end frees the calling thread's. */
subsite_t site_intern(serial_t trace, stack_id stack, serial_t class_serial, uint64_t size);
void site_table_thread_end(void);

/* One object of subsite s allocated / freed. Async-safe: atomics only. */
void site_count_alloc(subsite_t s);
void site_count_free(subsite_t s);

/* What a subsite stands for (0 on success). */
int  site_get(subsite_t s, serial_t *trace, serial_t *class_serial, uint64_t *size);
uint32_t site_subsite_count(void);
/* Objects the agent saw allocated but could not record (table full, a tag
 * that could not be set): counted, and reported under the table. */
void     site_count_lost(uint64_t n);
uint64_t site_lost(void);

/* `reset`: from now on rows count only objects allocated after this call
 * (allocated and live alike); subsites already handed out stay valid (for
 * site_get) and name the same sites; the table does not grow at a reset. */
void site_table_reset(void);

/* A census of the live objects, by the single thread that writes a report
 * while the JVM walks the heap: begin zeroes every subsite's count, add
 * counts one object found. From then on, rows take "live" from the last
 * census instead of allocations minus ObjectFree events: the JVM posts
 * those lazily, and some arrive after the report (seen on JDK 17 and 25). */
void site_census_begin(void);
void site_census_add(subsite_t s);

/* ---- report rows: one per (trace, class), subsites summed ---- */

/* Rows ordered by live bytes, then allocated bytes, then trace and class
 * (so the order is stable), malloc'ed into *rows; totals summed over all rows.
 *
 * sample_interval 0: the counts are exact. Otherwise each counted object is
 * one sample of JVMTI SampledObjectAlloc taken about every sample_interval
 * bytes: an object of size s was sampled with probability
 * p = 1 - exp(-s / interval), so each sample stands for 1/p objects (and
 * s/p bytes), the unbiased estimate. -1 when out of memory. */
int site_rows(uint64_t sample_interval, site_row **rows, uint32_t *n, site_row *totals);

/* The same counts by whole stack: one row per subsite (so per (stack,
 * class, size)), unordered and unmerged, weighted and rounded exactly as
 * site_rows weighs and rounds them, so that their sums agree with its
 * rows' to the object and byte. -1 when out of memory. */
int site_stack_rows(uint64_t sample_interval, site_row **rows, uint32_t *n);
/* Such rows merged in place into site_rows' rows (one per (trace, class),
 * stack 0, ordered, *n their number) and their totals: so a dump can write
 * SITES and a whole-stack profile from one reading of the counters. */
void site_rows_merge(site_row *rows, uint32_t *n, site_row *totals);

/* The estimate's weight of one sample of an object of `size` bytes
 * (1 when sample_interval is 0). Exposed for tests. */
double site_sample_weight(uint64_t size, uint64_t sample_interval);

#endif
