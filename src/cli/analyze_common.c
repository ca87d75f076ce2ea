/* analyze_common.c: what the analysis commands share (see analyze.h). */
#include "analyze.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../output/output_file.h"
#include "../profile/flamegraph_writer.h"

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

/* The value of an option that takes one, or NULL (said) when it is the last argument. */
static const char *option_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        analyze_usage("%s wants a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int analyze_parse_args(const char *command, int argc, char **argv, int max_files, analyze_args *a)
{
    memset(a, 0, sizeof *a);
    a->top = ANALYZE_DEFAULT_TOP;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char **value = strcmp(arg, "--to") == 0 ? &a->to
                           : strcmp(arg, "-o") == 0 ? &a->out
                           : strcmp(arg, "--profile") == 0 ? &a->profile : NULL;
        if (value) {
            if ((*value = option_value(argc, argv, &i)) == NULL)
                return ANALYZE_USAGE;
        } else if (strcmp(arg, "--top") == 0) {
            const char *n = option_value(argc, argv, &i);
            if (n == NULL || (a->top = atoi(n)) <= 0)
                return analyze_usage("%s: --top wants a positive number", command);
        } else if (strcmp(arg, "--html") == 0) {
            a->html = 1;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return analyze_usage("%s: unknown option '%s'", command, arg);
        } else if (a->nfiles == max_files) {
            return analyze_usage("%s: one file too many: '%s'", command, arg);
        } else {
            a->files[a->nfiles++] = arg;
        }
    }
    return 0;
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

FILE *analyze_create_output(const char *path, int private_data)
{
    char err[1024];
    int fd = output_file_create(path, OUTPUT_CREATE_TRUNC, private_data, "-o", "", err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    FILE *out = fdopen(fd, "w");
    if (out == NULL) {
        fprintf(stderr, "hprof: %s: cannot write: %s\n", path, strerror(errno));
        close(fd);
    }
    return out;
}

int analyze_holds_heap_dump(const hprof_data *d)
{
    return d->heap_dumps > 0 || d->text_heap_dumps > 0;
}

int analyze_write_page(const char *path, int private_data, const char *title,
                       const flamegraph_section *sections, uint32_t n)
{
    FILE *out = analyze_create_output(path, private_data);
    if (out == NULL)
        return ANALYZE_ERROR;
    int bad = flamegraph_write_page(out, title, sections, n) != 0;
    bad |= fclose(out) != 0;
    if (bad)
        fprintf(stderr, "hprof: %s: not written completely\n", path);
    return bad ? ANALYZE_ERROR : ANALYZE_OK;
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

const char *analyze_graph_note(const hprof_data *d, const profile *p, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    uint32_t at_max = 0, max = 0;
    if (hd_stacks_cut(d, &max, &at_max))
        used += (size_t)snprintf(buf + used, size - used,
                                 "Stacks in this file stop at %u frames (depth=): their callers are missing, so "
                                 "a method can show under several roots with its time split among them. "
                                 "Profile with a deeper depth=, or write flamegraph= or pprof= (whole stacks). ",
                                 max);
    /* Samples whose stack names why it could not be had. */
    int64_t all = 0, lost = 0;
    profile_sample s;
    uint32_t value = profile_default_value(p);
    for (uint32_t i = 0; profile_sample_get(p, i, &s) == 0; i++) {
        all += s.values[value];
        for (uint32_t f = 0; f < s.depth; f++)
            if (strcmp(profile_frame_get(p, s.frames[f])->class_name, "[unwalkable]") == 0) {
                lost += s.values[value];
                break;
            }
    }
    if (all > 0 && lost * 100 >= all && used < size)
        snprintf(buf + used, size - used, "%.1f%% of the samples have no whole stack: their [unwalkable] frames "
                 "say why.", 100.0 * (double)lost / (double)all);
    return buf[0] ? buf : NULL;
}
