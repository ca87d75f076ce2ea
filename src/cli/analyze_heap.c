/*
 * hprof heap DUMP [--top N] [--json | --html] [-o OUT] [--baseline OLD]:
 * retained sizes by class, leak suspects, the biggest objects and their
 * paths from GC roots, for an HPROF binary heap dump (ours or HotSpot's, gzip
 * or not) or our text one (format=a, through its binary form: heap_text.c), and what grew by class and by allocation site since OLD; --html,
 * one page with an expandable dominator tree. src/heapgraph does the work; this file reads the
 * arguments, reports progress past 2 s, and writes the answer.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../heapgraph/heap_analysis.h"
#include "../heapgraph/heap_file.h"
#include "../heapgraph/heap_text.h"

typedef struct progress_state {
    struct timespec  start;
    double           last;
    int              shown;
    const heap_file *file;
} progress_state;

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* On stderr, once the work has taken 2 s, then at most once a second.
 * Each call comes after a stretch of the file was read: its pages go. */
static void show_progress(void *ctx, const char *phase, double done)
{
    progress_state *p = ctx;
    heap_file_drop_pages(p->file);
    double t = since(&p->start);
    if (t < 2.0 || t - p->last < 1.0)
        return;
    p->last = t;
    p->shown = 1;
    fprintf(stderr, "hprof heap: %.0f s: %s (%.0f%%)\n", t, phase, done * 100.0);
}

/* One dump read and analysed: 0, or ANALYZE_ERROR said on stderr. */
typedef struct loaded {
    heap_file     file;
    heap_file     text;             /* a text dump's binary form */
    heap_graph   *g;
    heap_analysis a;
} loaded;

static int load(const char *path, progress_state *ps, loaded *l)
{
    char err[600];
    memset(l, 0, sizeof *l);
    ps->file = &l->file;
    if (heap_file_open(path, &l->file, err, sizeof err) != 0) {
        fprintf(stderr, "hprof: %s\n", err);
        return ANALYZE_ERROR;
    }
    if (heap_text_is(l->file.bytes, l->file.len)) {
        l->g = heap_text_read(l->file.bytes, l->file.len, path, show_progress, ps, &l->text, err, sizeof err);
        /* the graph reads the binary form: the text's pages can go */
        heap_file_close(&l->file);
        ps->file = &l->text;
    } else {
        l->g = heap_graph_read(l->file.bytes, l->file.len, path, show_progress, ps, err, sizeof err);
    }
    if (l->g == NULL) {
        fprintf(stderr, "hprof: %s\n", err);
        heap_file_close(&l->file);
        return ANALYZE_ERROR;
    }
    heap_file_drop_pages(ps->file);
    if (heap_analyze(l->g, &l->a, show_progress, ps, err, sizeof err) != 0) {
        fprintf(stderr, "hprof: %s\n", err);
        heap_analysis_free(&l->a);
        heap_graph_free(l->g);
        heap_file_close(&l->text);
        heap_file_close(&l->file);
        return ANALYZE_ERROR;
    }
    return ANALYZE_OK;
}

static void unload(loaded *l)
{
    heap_analysis_free(&l->a);
    heap_graph_free(l->g);
    heap_file_close(&l->text);
    heap_file_close(&l->file);
}

int analyze_heap(int argc, char **argv)
{
    const char *path = NULL, *out_path = NULL, *baseline_path = NULL;
    int json = 0, html = 0;
    long top = ANALYZE_DEFAULT_TOP;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--json") == 0) {
            json = 1;
        } else if (strcmp(arg, "--html") == 0) {
            html = 1;
        } else if (strcmp(arg, "--top") == 0 || strcmp(arg, "-o") == 0 || strcmp(arg, "--baseline") == 0) {
            if (i + 1 >= argc)
                return analyze_usage("heap: %s wants a value", arg);
            const char *v = argv[++i];
            if (arg[1] == 'o') {
                out_path = v;
            } else if (arg[2] == 'b') {
                baseline_path = v;
            } else {
                char *end;
                top = strtol(v, &end, 10);
                if (*end != '\0' || top <= 0 || top > 1000000)
                    return analyze_usage("heap: --top wants a number from 1 to 1000000, not '%s'", v);
            }
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return analyze_usage("heap: unknown option '%s' (--top N, --json, --html -o PAGE, -o OUT, --baseline OLD)", arg);
        } else if (path != NULL) {
            return analyze_usage("heap: one file too many: '%s'", arg);
        } else {
            path = arg;
        }
    }
    if (path == NULL)
        return analyze_usage("heap: which heap dump? (hprof heap DUMP [--top N] [--json | --html -o PAGE] "
                             "[--baseline OLD])");
    if (html && json)
        return analyze_usage("heap: --html and --json are two reports: ask for one at a time");
    if (html && out_path == NULL)
        return analyze_usage("heap: --html writes a page: name its file with -o PAGE.html");
    if (html && baseline_path)
        return analyze_usage("heap: the page shows one dump: --baseline goes with the text or --json report");

    progress_state ps = { .last = 0 };
    clock_gettime(CLOCK_MONOTONIC, &ps.start);
    /* the baseline first, kept as its classes and sites only */
    heap_baseline baseline = { 0 };
    loaded l;
    if (baseline_path) {
        if (load(baseline_path, &ps, &l) != ANALYZE_OK)
            return ANALYZE_ERROR;
        int rc = heap_baseline_of(&l.a, &baseline);
        unload(&l);
        if (rc != 0) {
            fprintf(stderr, "hprof: %s: out of memory\n", baseline_path);
            return ANALYZE_ERROR;
        }
    }
    int rc = load(path, &ps, &l);
    if (rc == ANALYZE_OK) {
        FILE *out = out_path ? analyze_create_output(out_path, 1) : stdout;
        if (out == NULL) {
            rc = ANALYZE_ERROR;
        } else {
            const heap_baseline *b = baseline_path ? &baseline : NULL;
            int w = html ? heap_write_html(&l.a, out)
                    : json ? heap_write_json(&l.a, (uint32_t)top, b, out) : heap_write_text(&l.a, (uint32_t)top, b, out);
            if ((out_path ? fclose(out) : fflush(out)) != 0 || w != 0) {
                fprintf(stderr, "hprof: writing %s failed\n", out_path ? out_path : "the report");
                rc = ANALYZE_ERROR;
            }
        }
        unload(&l);
    }
    if (ps.shown)
        fprintf(stderr, "hprof heap: done in %.1f s\n", since(&ps.start));
    heap_baseline_free(&baseline);
    return rc;
}
