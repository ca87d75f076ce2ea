/* collapsed_writer.c: see collapsed_writer.h. */
#include "collapsed_writer.h"

#include "../core/tables.h"
#include "../cpu/cpu_collector.h"

static void write_stack(const serial_t *methods, uint32_t n, uint64_t count, void *arg)
{
    FILE *out = arg;
    for (uint32_t i = 0; i < n; i++) {
        method_info mi;
        if (method_get(methods[i], &mi) != 0)
            fprintf(out, "%s<unknown>", i ? ";" : "");
        else
            fprintf(out, "%s%s.%s", i ? ";" : "", mi.class_name, mi.name);
    }
    fprintf(out, " %llu\n", (unsigned long long)count);
}

int collapsed_write(FILE *out)
{
    cpu_collector_each_stack(write_stack, out);
    return ferror(out) ? -1 : 0;
}
