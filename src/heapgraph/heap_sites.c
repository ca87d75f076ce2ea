/*
 * heap_sites: retained bytes by allocation site, for dumps whose objects
 * carry their allocation's stack trace (the agent's heap=all): which code
 * allocated what is held, and how much it holds.
 */
#include "heap_analysis.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SITE_FRAMES 3       /* frames shown of each site's trace */

/* Sites by their retained size (context: the analysis), largest first. */
static int by_retained(const void *x, const void *y, void *context)
{
    const heap_analysis *analysis = context;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    uint64_t ra = analysis->site_retained[a], rb = analysis->site_retained[b];
    if (ra != rb)
        return ra < rb ? 1 : -1;
    return a < b ? -1 : a > b;
}

int heap_write_sites(const heap_analysis *a, uint32_t top, int json, FILE *out)
{
    const heap_graph *g = a->g;
    if (a->site_count == NULL)
        return 0;
    uint32_t *ts = malloc((size_t)g->ntraces * sizeof *ts);
    if (ts == NULL)
        return -1;
    uint32_t n = 0;
    for (uint32_t t = 0; t < g->ntraces; t++)
        if (a->site_count[t] > 0)
            ts[n++] = t;
    qsort_r(ts, n, sizeof *ts, by_retained, (void *)a);
    char frame[512], b1[32], b2[32], b3[32];
    if (json)
        fputs(",\n \"sites\": [", out);
    else
        fprintf(out, "\nRetained by allocation site (the objects' stack traces), top %u of %u:\n%16s %16s %12s  %s\n",
                top < n ? top : n, n, "retained", "shallow", "count", "trace: frames, callee first");
    for (uint32_t i = 0; i < n && i < top; i++) {
        uint32_t t = ts[i];
        const hg_trace *tr = &g->traces[t];
        if (json) {
            fprintf(out, "%s  {\"trace\": %u, \"count\": %" PRIu64 ", \"shallow\": %" PRIu64 ", \"retained\": %"
                    PRIu64 ", \"frames\": [", i ? ",\n" : "\n", tr->serial, a->site_count[t], a->site_shallow[t],
                    a->site_retained[t]);
            for (uint32_t d = 0; d < tr->nframes; d++) {
                if (d)
                    fputs(", ", out);
                heap_json_string(out, heap_graph_trace_frame_text(g, t, d, frame, sizeof frame));
            }
            fputs("]}", out);
        } else {
            fprintf(out, "%16s %16s %12s  %u:", heap_thousands(a->site_retained[t], b1, sizeof b1),
                    heap_thousands(a->site_shallow[t], b2, sizeof b2), heap_thousands(a->site_count[t], b3, sizeof b3),
                    tr->serial);
            for (uint32_t d = 0; d < tr->nframes && d < SITE_FRAMES; d++)
                fprintf(out, "%s%s", d ? " <- " : " ", heap_graph_trace_frame_text(g, t, d, frame, sizeof frame));
            fputc('\n', out);
        }
    }
    if (json)
        fputc(']', out);
    free(ts);
    return 0;
}

int heap_site_rows_of(const heap_analysis *a, heap_class_rows *out)
{
    const heap_graph *g = a->g;
    out->n = 0;
    out->rows = calloc(g->ntraces ? g->ntraces : 1, sizeof *out->rows);
    if (out->rows == NULL)
        return -1;
    char frame[512];
    for (uint32_t t = 0; a->site_count != NULL && t < g->ntraces; t++) {
        if (a->site_count[t] == 0)
            continue;
        const hg_trace *tr = &g->traces[t];
        size_t len = 0, cap = 64;
        char *name = malloc(cap);
        for (uint32_t d = 0; name != NULL && d < tr->nframes; d++) {
            size_t fl = strlen(heap_graph_trace_frame_text(g, t, d, frame, sizeof frame));
            if (len + fl + 2 > cap) {
                cap = 2 * (len + fl + 2);
                char *bigger = realloc(name, cap);
                if (bigger == NULL) {
                    free(name);
                    name = NULL;
                    break;
                }
                name = bigger;
            }
            if (d)
                name[len++] = '\n';
            memcpy(name + len, frame, fl);
            len += fl;
        }
        if (name == NULL) {
            heap_class_rows_free(out);
            return -1;
        }
        name[len] = '\0';
        heap_class_row *r = &out->rows[out->n++];
        r->name = name;
        r->count = a->site_count[t];
        r->shallow = a->site_shallow[t];
        r->retained = a->site_retained[t];
    }
    heap_rows_merge(out);
    return 0;
}
