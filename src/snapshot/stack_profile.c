/* stack_profile.c: see stack_profile.h. */
#include "stack_profile.h"

#include <stdio.h>
#include <string.h>

_Static_assert((int)JAVA_RUN_INTERPRETED == (int)PROFILE_RUN_INTERPRETED &&
               (int)JAVA_RUN_COMPILED == (int)PROFILE_RUN_COMPILED &&
               (int)JAVA_RUN_INLINED == (int)PROFILE_RUN_INLINED, "stack frames hand their run to profiles as is");

/* The profile frame of one stack frame; 0 when out of memory. */
static uint32_t frame_of(profile_tables *tables, profile *p, const stack_frame *f)
{
    method_info mi;
    if (method_get(tables, f->method, &mi) != 0)
        return profile_frame_id(p, "[unwalkable]", "unknown_method", "", "", PROFILE_LINE_UNKNOWN);
    int32_t line = f->line > 0 ? f->line : f->line == LINE_NATIVE ? PROFILE_LINE_NATIVE : PROFILE_LINE_UNKNOWN;
    /* A native function is named as C and C++ programmers know it, without
     * the "[object]" class; the object is its file (pprof's filename). */
    if (mi.kind == FRAME_KIND_KERNEL) {
        /* async-profiler's and flamegraph.pl's mark of a kernel frame */
        char name[600];
        snprintf(name, sizeof name, "%s_[k]", mi.name);
        return profile_frame_id(p, "", name, "", "kernel", line);
    }
    if (mi.kind != FRAME_KIND_JAVA)
        return profile_frame_id(p, "", mi.name, "", mi.source_file ? mi.source_file : "", line);
    /* JAVA_RUN_* and PROFILE_RUN_* are the same numbers. */
    return profile_frame_id_run(p, mi.class_name, mi.name, mi.signature, mi.source_file, line, (int32_t)f->run);
}

int stack_profile_frames(profile_tables *tables, profile *p, stack_id id, uint32_t *ids, thread_info *thread_out)
{
    serial_t thread = 0;
    const stack_frame *frames = NULL;
    uint32_t depth = 0;
    thread_out->name[0] = '\0';
    if (id == 0 || stack_get(tables, id, &thread, &frames, &depth, NULL) != 0) {
        ids[0] = profile_frame_id(p, "[unwalkable]", "stack_table_full", "", "", PROFILE_LINE_UNKNOWN);
        return ids[0] ? 1 : -1;
    }
    for (uint32_t i = 0; i < depth; i++)
        if ((ids[i] = frame_of(tables, p, &frames[i])) == 0)
            return -1;
    if (thread == 0 || thread_get(tables, thread, thread_out) != 0)
        thread_out->name[0] = '\0';
    return (int)depth;
}

int stack_profile_add(profile_tables *tables, profile *p, stack_id id, const char *leaf, const char *leaf_note, const int64_t *values)
{
    uint32_t ids[STACK_MAX_FRAMES + 1];
    uint32_t n = 0;
    if (leaf && (ids[n++] = profile_frame_id(p, "", leaf, leaf_note, "", PROFILE_LINE_UNKNOWN)) == 0)
        return -1;
    thread_info thread;
    int depth = stack_profile_frames(tables, p, id, ids + n, &thread);
    return depth < 0 ? -1 : profile_add(p, ids, n + (uint32_t)depth, thread.name, values);
}

profile *stack_profile_of_rows(profile_tables *tables, const char *title, const profile_value_type *types, uint32_t nvalues,
                               uint32_t shown, const void *rows, uint32_t n, stack_row_fn row)
{
    profile *p = profile_new(title, types, nvalues);
    if (p)
        profile_set_default_value(p, shown);
    for (uint32_t i = 0; p && i < n; i++) {
        stack_id stack = 0;
        const char *leaf = NULL, *leaf_note = NULL;
        int64_t values[PROFILE_MAX_VALUES] = { 0 };
        row(rows, i, &stack, &leaf, &leaf_note, values);
        if (stack_profile_add(tables, p, stack, leaf, leaf_note, values) != 0) {
            profile_free(p);
            p = NULL;
        }
    }
    return p;
}

void stack_profile_keep(profile **slot, profile *p)
{
    profile_free(*slot);
    *slot = p;
}

profile *stack_profile_take(profile **slot)
{
    profile *p = *slot;
    *slot = NULL;
    return p;
}
