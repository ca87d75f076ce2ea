/*
 * Fuzz target for heap=all's patching of the JVM's heap dump
 * (src/output/hprof_patch_traces.c): the objects' trace serials set in
 * place. The file is the JVM's, but one cut short (a full disk, a killed
 * dumper) or of another layout must be refused or patched within its
 * records: never read or written out of bounds, never grown, and only the
 * four bytes of a trace serial changed per object record seen.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/hprof_patch_traces.h"

const char fuzz_target_name[] = "fuzz_patch_traces";
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.2", "\0\0\0\x08", "\x1c", "\x0c", "\x2c", "\x20", "\x21", "\x22", "\x23", "\x05", "\x01",
    "\x03", "\x0a", "\x02", NULL
};

static unsigned long refused, malformed, abandoned, patched, objects;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "files: %lu patched, %lu malformed, %lu abandoned, %lu refused; %lu objects", patched,
             malformed, abandoned, refused, objects);
}

/* Sets odd ids' traces, abandons at an id ending in 0xEE. */
static int trace_of(void *ctx, const hpt_object *o, uint32_t *trace)
{
    (void)ctx;
    FUZZ_CHECK(o->kind == HPT_INSTANCE || o->kind == HPT_OBJ_ARRAY || o->kind == HPT_PRIM_ARRAY);
    FUZZ_CHECK(o->kind != HPT_PRIM_ARRAY || (o->elem_type >= 4 && o->elem_type <= 11));
    if ((o->id & 0xFF) == 0xEE)
        return -1;
    if ((o->id & 1) == 0)
        return 0;
    *trace = 0xA5A5A5A5u;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);   /* its own size: ASan sees any access past it */
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    hpt_result r;
    int rc = hpt_patch_traces(copy, size, trace_of, NULL, &r);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == -1 || rc == -2);
    FUZZ_CHECK(r.patched <= r.objects);
    FUZZ_CHECK(rc >= 0 || r.offset <= size);
    size_t changed = 0;
    for (size_t i = 0; i < size; i++)
        changed += copy[i] != data[i];
    FUZZ_CHECK(changed <= r.patched * 4);
    FUZZ_CHECK(rc != 1 || changed == 0);
    free(copy);
    objects += r.objects;
    if (rc == 1) refused++;
    else if (rc == -1) malformed++;
    else if (rc == -2) abandoned++;
    else patched++;
    return 0;
}
