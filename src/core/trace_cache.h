/*
 * trace_cache: raw frames -> trace serial, remembered per thread.
 *
 * Interning a trace costs a lookup per frame (method, line, frame) and one
 * for the trace, each in a table behind a mutex. A thread that allocates in
 * a loop asks for the same few traces millions of times; this cache answers
 * them with one hash and one compare of the raw frames (method id, bci) as
 * the JVM gave them.
 *
 * Direct-mapped: a new trace replaces whatever shared its slot. One cache
 * belongs to one thread and is not locked. The mapping it keeps depends on
 * the trace_builder that made the serials (depth=, lineno=), so a cache
 * serves one builder only. A builder that keeps whole stacks (stack_table.h)
 * caches each trace with its stack. Pure C: no JVMTI.
 */
#ifndef HPROF_TRACE_CACHE_H
#define HPROF_TRACE_CACHE_H

#include <stdint.h>

#include "tables.h"
#include "trace_builder.h"

typedef struct trace_cache trace_cache;

/* A cache of 2^log2_slots traces of up to max_frames frames each; longer
 * stacks are never cached. NULL when out of memory. */
trace_cache *trace_cache_new(unsigned log2_slots, uint32_t max_frames);
void         trace_cache_free(trace_cache *c);

/* The trace serial remembered for exactly these frames and thread serial,
 * 0 if none; *stack (may be NULL) gets the whole stack remembered with it. */
serial_t trace_cache_get(const trace_cache *c, serial_t thread_serial, const frame_ref *frames, uint32_t n,
                         stack_id *stack);

/* Remember trace and its whole stack (0 when not kept) for these frames
 * (nothing if n > max_frames or trace is 0). */
void trace_cache_put(trace_cache *c, serial_t thread_serial, const frame_ref *frames, uint32_t n, serial_t trace,
                     stack_id stack);

#endif
