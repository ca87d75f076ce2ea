/*
 * Fuzz target for `hprof heap` (src/heapgraph): an HPROF heap dump read in
 * place, its dominators, retained sizes and paths, and both reports. A dump
 * may be truncated or hostile: it is analysed, or refused with a message
 * naming the file, never read or written out of bounds.
 *
 * Built with -DFUZZ_HEAP_TEXT (fuzz_heap_text): the same on HPROF text heap
 * dumps (src/heapgraph/heap_text.c), made into binary records first, within
 * the bound given.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph/heap_analysis.h"
#include "heapgraph/heap_text.h"

#ifdef FUZZ_HEAP_TEXT
const char fuzz_target_name[] = "fuzz_heap_text";
/* The records' words, the ROOT kinds, field layouts. */
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.1, created x\n", "--------\n", "HEAP DUMP BEGIN\n", "HEAP DUMP END\n", "THREAD START (",
    "id = ", "name=\"", "\", group=\"", "TRACE 300001:\n", "\t<empty>\n", "ROOT ", "CLS ", "OBJ ", "ARR ",
    "(sz=", ", trace=", ", class=", "@", ", nelems=", ", elem type=", "byte)", "(name=", "(kind=<thread>, id=",
    "(kind=<Java stack>, thread=", ", frame=", "(kind=<JNI global ref>", "(kind=<system class>",
    "\tsuper\t\t", "\tstatic ", "\treferent\t", "\t[0]\t\t", "java.lang.ref.Reference", ":Native method)",
    NULL
};
#else
const char fuzz_target_name[] = "fuzz_heap";
/* Record tags, heap dump sub-tags, basic types, id sizes. */
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.2", "\0\0\0\x08", "\0\0\0\4", "\x01", "\x02", "\x04", "\x05", "\x0c", "\x1c",
    "\x2c", "\x20", "\x21", "\x22", "\x23", "\xff", "\x03", "\x08", "\x0b", "\x7f\xff\xff\xff",
    "\xff\xff\xff\xff", "referent", "java/lang/ref/Reference", "java/lang/String", "[B", NULL
};
#endif

static unsigned long analysed, refused;
static FILE *devnull;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "dumps: %lu analysed, %lu refused", analysed, refused);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
        abort();
    unsigned char *bytes = malloc(size ? size : 1);    /* exactly sized, for ASan */
    if (bytes == NULL)
        abort();
    memcpy(bytes, data, size);
    char err[512];
#ifdef FUZZ_HEAP_TEXT
    unsigned char *binary = NULL;
    heap_graph *g = heap_text_read_memory(bytes, size, "fuzz-input", (uint64_t)size * 16 + 65536, &binary, err,
                                          sizeof err);
#else
    heap_graph *g = heap_graph_read(bytes, size, "fuzz-input", NULL, NULL, err, sizeof err);
#endif
    if (g == NULL) {
        FUZZ_CHECK(strncmp(err, "fuzz-input: ", 12) == 0);
        refused++;
    } else {
        heap_analysis a;
        if (heap_analyze(g, &a, NULL, NULL, err, sizeof err) == 0) {
            /* an object retains no more than its dominator does */
            for (uint32_t v = 1; v < g->nnodes; v++)
                FUZZ_CHECK(a.idom[v] == UINT32_MAX || a.retained[v] <= a.retained[a.idom[v]]);
            FUZZ_CHECK(heap_write_text(&a, 5, NULL, devnull) == 0);
            FUZZ_CHECK(heap_write_json(&a, 5, NULL, devnull) == 0);
            FUZZ_CHECK(heap_write_html(&a, devnull) == 0);
            heap_baseline self;
            FUZZ_CHECK(heap_baseline_of(&a, &self) == 0);
            FUZZ_CHECK(heap_write_text(&a, 5, &self, devnull) == 0);
            heap_baseline_free(&self);
            heap_analysis_free(&a);
            analysed++;
        }
        heap_graph_free(g);
    }
#ifdef FUZZ_HEAP_TEXT
    free(binary);
#endif
    free(bytes);
    return 0;
}
