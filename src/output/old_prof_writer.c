/* old_prof_writer.c: see old_prof_writer.h. */
#include "old_prof_writer.h"

#include <stdlib.h>
#include <string.h>

#include "../core/tables.h"

/* Most calls first; ties by time, then trace serial, so that the order
 * does not depend on the table's layout. */
static int by_calls(const void *a, const void *b)
{
    const times_row *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return x->trace < y->trace ? -1 : x->trace > y->trace;
}

/* "pkg.Class.method(descriptor)" of a frame, as HPROF printed a prof line's
 * method (the class's Java name, the JVM descriptor). */
static void write_method(profile_tables *tables, FILE *out, serial_t frame)
{
    serial_t method = 0;
    int32_t line;
    method_info mi;
    if (frame_get(tables, frame, &method, &line) != 0 || method_get(tables, method, &mi) != 0)
        fputs("<unknown>.<unknown>", out);
    else
        fprintf(out, "%s.%s%s", mi.class_name, mi.name, mi.signature);
}

int old_prof_write(profile_tables *tables, FILE *out, const times_row *rows, uint32_t n)
{
    times_row *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (sorted == NULL)
        return -1;
    if (n)
        memcpy(sorted, rows, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_calls);
    fputs(OLD_PROF_HEADER "\n", out);
    for (uint32_t i = 0; i < n && sorted[i].calls > 0; i++) {
        serial_t thread = 0;
        const serial_t *frames = NULL;
        uint32_t depth = 0;
        if (trace_get(tables, sorted[i].trace, &thread, &frames, &depth) != 0)
            depth = 0;
        fprintf(out, "%llu ", (unsigned long long)sorted[i].calls);
        if (depth >= 1)
            write_method(tables, out, frames[0]);
        else
            fputs("<unknown callee>", out);
        fputc(' ', out);
        if (depth >= 2)
            write_method(tables, out, frames[1]);
        else
            fputs("<unknown caller>", out);
        fprintf(out, " %llu\n", (unsigned long long)((sorted[i].total_ns + 500000) / 1000000));
    }
    free(sorted);
    return 0;
}
