/* collapsed.c: see collapsed.h.
 *
 * Lines are merged by their text, not by frame ids: frames that differ only
 * in line number or signature show the same name, and a thread is not a
 * frame. So every frame is mapped to a frame of its shown name in a scratch
 * profile with no threads, whose merging of equal stacks does the rest. */
#include "collapsed.h"

#include <inttypes.h>
#include <stdlib.h>

#include "strtab.h"

/* The scratch profile: one frame per distinct shown name, stacks merged over threads. */
static profile *merge_by_name(const profile *p, uint32_t value_index)
{
    profile_value_type type = profile_value(p, value_index);
    profile *merged = profile_new(profile_title(p), &type, 1);
    strtab names;
    strtab_init(&names);
    uint32_t *name_of = NULL, *frame_of = NULL;
    int ok = merged != NULL && strtab_add_frame_names(&names, p, &name_of, 0) == 0 &&
             (frame_of = calloc((size_t)profile_frame_count(p) + 1, sizeof *frame_of)) != NULL;
    for (uint32_t id = 1; ok && id <= profile_frame_count(p); id++)
        ok = (frame_of[id] = profile_frame_id(merged, "", strtab_get(&names, name_of[id]), "", "", 0)) != 0;
    profile_sample s;
    uint32_t stack[PROFILE_MAX_DEPTH];
    for (uint32_t i = 0; ok && profile_sample_get(p, i, &s) == 0; i++) {
        for (uint32_t d = 0; d < s.depth; d++)
            stack[d] = frame_of[s.frames[d]];
        ok = profile_add(merged, stack, s.depth, NULL, &s.values[value_index]) == 0;
    }
    free(frame_of);
    free(name_of);
    strtab_free(&names);
    if (!ok) {
        profile_free(merged);
        return NULL;
    }
    return merged;
}

/* A frame name as one field of the line: ';' would split it, a line break
 * end the line. */
static void write_frame(const char *name, FILE *out)
{
    for (; *name; name++)
        fputc(*name == ';' || *name == '\n' || *name == '\r' ? '_' : *name, out);
}

static void write_line(const profile *merged, const profile_sample *s, FILE *out)
{
    if (s->depth == 0)
        write_frame(COLLAPSED_EMPTY_STACK, out);
    for (uint32_t d = s->depth; d-- > 0;) {          /* root first */
        write_frame(profile_frame_get(merged, s->frames[d])->method, out);
        if (d > 0)
            fputc(';', out);
    }
    fprintf(out, " %" PRId64 "\n", s->values[0]);
}

int collapsed_write_profile(const profile *p, uint32_t value_index, FILE *out)
{
    if (value_index >= profile_value_count(p))
        return -1;
    profile *merged = merge_by_name(p, value_index);
    if (merged == NULL)
        return -1;
    profile_sample s;
    for (uint32_t i = 0; profile_sample_get(merged, i, &s) == 0; i++)
        if (s.values[0] != 0)
            write_line(merged, &s, out);
    profile_free(merged);
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
