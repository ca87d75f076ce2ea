/*
 * trace_builder: raw frames (a method id and a byte-code index each, as
 * AsyncGetCallTrace and JVMTI GetStackTrace give them) -> frame and trace
 * serials in the shared tables, honouring depth=, lineno= and thread=.
 * Every collector that records stacks (cpu samples, monitor events, later
 * allocation sites) goes through here, so a trace means the same everywhere.
 */
#ifndef HPROF_TRACE_BUILDER_H
#define HPROF_TRACE_BUILDER_H

#include <stdint.h>

#include "stack_table.h"
#include "tables.h"

/* Same layout as HotSpot's ASGCT_CallFrame { jint lineno; jmethodID method_id; }:
 * `bci` is the byte-code index for Java frames, -3 for native frames. */
typedef struct frame_ref {
    int32_t     bci;
    const void *method;     /* a jmethodID */
} frame_ref;

#define BCI_NATIVE (-3)

/* Resolve a method id to a method serial of these tables (registering it), 0 on failure. */
typedef serial_t (*method_resolver)(profile_tables *tables, const void *method, void *context);

typedef struct trace_builder {
    int             depth;        /* frames kept in the trace */
    int             lineno;       /* line numbers in frames */
    int             full_stacks;  /* walk up to STACK_MAX_FRAMES and keep whole stacks too
                                   * (pprof=, flamegraph=, collapsed=) */
    profile_tables *tables;       /* where methods, frames and traces go */
    method_resolver resolve;
    void           *context;
} trace_builder;

/* The trace of frames[0..n) (callee first), cut to depth. thread_serial is
 * stored in the trace (0 for traces shared by all threads). If stack_out
 * is not NULL it receives the whole stack of the n frames (stack_table.h,
 * made with this trace; 0 when that table is full), with line numbers
 * whatever lineno= says; an unresolvable method becomes the pseudo method
 * [unwalkable].unresolved_method in both. Returns 0 when a table is full. */
serial_t trace_build(const trace_builder *b, serial_t thread_serial, const frame_ref *frames,
                     uint32_t n, stack_id *stack_out);

/* The same, each frame of the whole stack marked with how it ran
 * (JAVA_RUN_*, java_runs[i] for frames[i]; NULL: all unknown). Frames that
 * differ only in that are different frames of whole stacks; TRACEs do not
 * see it. */
serial_t trace_build_with_runs(const trace_builder *b, serial_t thread_serial, const frame_ref *frames,
                               const uint8_t *java_runs, uint32_t n, stack_id *stack_out);

/* The method [unwalkable].<reason>, for samples without a usable stack. */
serial_t pseudo_method(profile_tables *tables, const char *reason);

#define TRACE_BUILDER_MAX_FRAMES 1024

#endif
