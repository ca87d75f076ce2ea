/* trace_builder.c: see trace_builder.h. */
#include "trace_builder.h"

#include <stdint.h>
#include <string.h>

/* Why a stack could not be had, as pseudo methods of the class [unwalkable].
 * The first eleven are HotSpot's AsyncGetCallTrace codes 0, -1, ... -10
 * (forte.cpp); the rest are ours. Their method ids are 1..N: no jmethodID is
 * that small. */
static const char *const reasons[] = {
    "no_Java_frame", "no_class_load", "GC_active", "unknown_not_Java",
    "not_walkable_not_Java", "unknown_Java", "not_walkable_Java", "unknown_state",
    "thread_exit", "deopt", "safepoint",
    "unknown_failure", "unresolved_method", "buffer_full", "tracker_keys_full",
    "native_read_failed", "native_no_unwind_info", "native_depth_limit", "native_unknown_code",
};
#define REASON_COUNT (sizeof reasons / sizeof reasons[0])

static uint64_t reason_id(const char *reason)
{
    for (uint32_t i = 0; i < REASON_COUNT; i++)
        if (strcmp(reasons[i], reason) == 0)
            return 1 + i;
    return reason_id("unknown_failure");
}

serial_t pseudo_method(profile_tables *tables, const char *reason)
{
    uint64_t id = reason_id(reason);
    serial_t m = method_find(tables, id);
    if (m)
        return m;
    method_desc d = { 0 };
    d.class_serial = class_intern(tables, "L[unwalkable];");
    d.name = reasons[id - 1];
    return method_add(tables, id, &d);
}

/* The line of a frame as a trace shows it (lineno=), or always (whole stacks). */
static int32_t frame_line(profile_tables *tables, serial_t method, int32_t bci, int lineno)
{
    if (bci == BCI_NATIVE)
        return LINE_NATIVE;
    if (lineno)
        return method_line_of(tables, method, bci);
    return method_line_of(tables, method, -1) == LINE_NATIVE ? LINE_NATIVE : LINE_UNKNOWN;
}

serial_t trace_build(const trace_builder *b, serial_t thread_serial, const frame_ref *frames,
                     uint32_t n, stack_id *stack_out)
{
    return trace_build_with_runs(b, thread_serial, frames, NULL, n, stack_out);
}

serial_t trace_build_with_runs(const trace_builder *b, serial_t thread_serial, const frame_ref *frames,
                               const uint8_t *java_runs, uint32_t n, stack_id *stack_out)
{
    serial_t frame_serials[TRACE_BUILDER_MAX_FRAMES];
    stack_frame whole[STACK_MAX_FRAMES];
    if (n > TRACE_BUILDER_MAX_FRAMES)
        n = TRACE_BUILDER_MAX_FRAMES;
    uint32_t depth = b->depth < 0 ? 0 : (uint32_t)b->depth;
    if (depth > n)
        depth = n;
    uint32_t whole_n = stack_out ? (n < STACK_MAX_FRAMES ? n : STACK_MAX_FRAMES) : 0;
    uint32_t resolve_upto = whole_n > depth ? whole_n : depth;
    int full = 0;
    for (uint32_t i = 0; i < resolve_upto; i++) {
        serial_t m = b->resolve(b->tables, frames[i].method, b->context);
        if (m == 0)
            m = pseudo_method(b->tables, "unresolved_method");
        if (i < whole_n) {
            int32_t line = frame_line(b->tables, m, frames[i].bci, 1);
            whole[i] = (stack_frame){ m, line < (1 << 23) ? line : LINE_UNKNOWN,
                                      java_runs ? java_runs[i] : JAVA_RUN_UNKNOWN };
        }
        if (i >= depth)
            continue;
        frame_serials[i] = frame_intern(b->tables, m, frame_line(b->tables, m, frames[i].bci, b->lineno));
        if (frame_serials[i] == 0)
            full = 1;
    }
    serial_t trace = full ? 0 : trace_intern(b->tables, thread_serial, frame_serials, depth);
    if (stack_out)
        *stack_out = stack_intern(b->tables, thread_serial, whole, whole_n, trace);
    return trace;
}
