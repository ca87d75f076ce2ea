/* analyze_common.c: what the analysis commands share (see analyze.h). */
#include "analyze.h"

#include <stdarg.h>
#include <string.h>

int analyze_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hprof: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (hprof help lists the commands)\n");
    va_end(ap);
    return ANALYZE_USAGE;
}

hprof_data *analyze_read(const char *path)
{
    char err[512];
    hprof_data *d = hprof_data_read(path, err, sizeof err);
    if (d == NULL)
        fprintf(stderr, "hprof: %s\n", err);
    return d;
}

int analyze_pick_kind(const hprof_data *d, const char *name)
{
    int first = -1, present = 0;
    for (int k = 0; k < HD_KINDS; k++) {
        if (!d->profiles[k])
            continue;
        present++;
        if (first < 0)
            first = k;
        if (name && strcmp(name, hd_kind_name((hd_kind)k)) == 0)
            return k;
    }
    if (name) {
        fprintf(stderr, "hprof: %s has no %s profile (--profile cpu|times|alloc|monitor|wait)\n",
                d->path, name);
        return -1;
    }
    if (first < 0)
        fprintf(stderr, "hprof: %s holds no profile (no CPU SAMPLES, CPU TIME, SITES or MONITOR "
                "section)\n", d->path);
    else if (present > 1)
        fprintf(stderr, "hprof: %s holds %d profiles; taking %s (choose with --profile)\n", d->path,
                present, hd_kind_name((hd_kind)first));
    return first;
}

const char *analyze_thousands(int64_t v, char *buf, size_t size)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t at = 0;
    if (v < 0 && at + 1 < size)
        buf[at++] = '-';
    for (int i = 0; i < n && at + 1 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0 && at + 1 < size)
            buf[at++] = ',';
        if (at + 1 < size)
            buf[at++] = digits[i];
    }
    buf[at] = '\0';
    return buf;
}
