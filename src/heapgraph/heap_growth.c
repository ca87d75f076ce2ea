/*
 * heap_growth: `hprof heap NEW --baseline OLD`: what grew by class, and by
 * allocation site, between two dumps. Classes are matched by name (class ids
 * and loaders differ from one JVM, or one dump, to the next), sites by their
 * frames (trace serials differ too).
 */
#include "heap_analysis.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *x, const void *y)
{
    return strcmp(((const heap_class_row *)x)->name, ((const heap_class_row *)y)->name);
}

int heap_class_rows_of(const heap_analysis *a, heap_class_rows *out)
{
    const heap_graph *g = a->g;
    out->n = 0;
    out->rows = calloc(g->nclasses ? g->nclasses : 1, sizeof *out->rows);
    if (out->rows == NULL)
        return -1;
    for (uint32_t i = 0; i < g->nclasses; i++) {
        const hg_class *k = &g->classes[i];
        if (k->count == 0)
            continue;
        heap_class_row *r = &out->rows[out->n];
        if ((r->name = strdup(k->name)) == NULL) {
            heap_class_rows_free(out);
            return -1;
        }
        r->count = k->count;
        r->shallow = k->shallow_total;
        r->retained = k->retained;
        out->n++;
    }
    heap_rows_merge(out);
    return 0;
}

void heap_rows_merge(heap_class_rows *out)
{
    if (out->n > 1)
        qsort(out->rows, out->n, sizeof *out->rows, by_name);
    /* one row per name */
    uint32_t w = 0;
    for (uint32_t i = 0; i < out->n; i++) {
        if (w > 0 && strcmp(out->rows[w - 1].name, out->rows[i].name) == 0) {
            out->rows[w - 1].count += out->rows[i].count;
            out->rows[w - 1].shallow += out->rows[i].shallow;
            out->rows[w - 1].retained += out->rows[i].retained;
            free(out->rows[i].name);
        } else {
            out->rows[w++] = out->rows[i];
        }
    }
    out->n = w;
}

int heap_baseline_of(const heap_analysis *a, heap_baseline *out)
{
    memset(out, 0, sizeof *out);
    out->has_sites = a->site_count != NULL;
    if (heap_class_rows_of(a, &out->classes) != 0 || (out->has_sites && heap_site_rows_of(a, &out->sites) != 0)) {
        heap_baseline_free(out);
        return -1;
    }
    return 0;
}

void heap_baseline_free(heap_baseline *b)
{
    heap_class_rows_free(&b->classes);
    heap_class_rows_free(&b->sites);
}

void heap_class_rows_free(heap_class_rows *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        free(r->rows[i].name);
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}

typedef struct growth {
    const char *name;
    int64_t     count, shallow, retained;
} growth;

static int by_retained_growth(const void *x, const void *y)
{
    const growth *a = x, *b = y;
    if (a->retained != b->retained)
        return a->retained < b->retained ? 1 : -1;
    if (a->shallow != b->shallow)
        return a->shallow < b->shallow ? 1 : -1;
    return strcmp(a->name, b->name);
}

static const char *signed_thousands(int64_t v, char *buf, size_t size)
{
    char digits[40];
    heap_thousands(v < 0 ? (uint64_t)-v : (uint64_t)v, digits, sizeof digits);
    snprintf(buf, size, "%s%s", v < 0 ? "-" : "+", digits);
    return buf;
}

/* The rows that changed from old to now, largest retained growth first: *n set. */
static growth *changes(const heap_class_rows *now, const heap_class_rows *old, uint32_t *count)
{
    growth *gs = calloc((size_t)now->n + old->n + 1, sizeof *gs);
    if (gs == NULL)
        return NULL;
    /* a merge of the two sorted lists */
    uint32_t n = 0, i = 0, j = 0;
    while (i < now->n || j < old->n) {
        int c = i == now->n ? 1 : j == old->n ? -1 : strcmp(now->rows[i].name, old->rows[j].name);
        const heap_class_row *new_row = c <= 0 ? &now->rows[i++] : NULL;
        const heap_class_row *old_row = c >= 0 ? &old->rows[j++] : NULL;
        growth *gr = &gs[n];
        gr->name = new_row ? new_row->name : old_row->name;
        gr->count = (int64_t)(new_row ? new_row->count : 0) - (int64_t)(old_row ? old_row->count : 0);
        gr->shallow = (int64_t)(new_row ? new_row->shallow : 0) - (int64_t)(old_row ? old_row->shallow : 0);
        gr->retained = (int64_t)(new_row ? new_row->retained : 0) - (int64_t)(old_row ? old_row->retained : 0);
        if (gr->count != 0 || gr->shallow != 0 || gr->retained != 0)
            n++;
    }
    if (n > 1)
        qsort(gs, n, sizeof *gs, by_retained_growth);
    *count = n;
    return gs;
}

/* A site's name is its frames joined by newlines: a JSON list of them, or
 * (text) the first SITE_FRAMES joined by " <- ". */
#define SITE_FRAMES 3

static void write_frames(FILE *out, const char *name, int json)
{
    int d = 0;
    if (json)
        fputc('[', out);
    for (const char *p = name; *p && (json || d < SITE_FRAMES); d++) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char frame[600];
        snprintf(frame, sizeof frame, "%.*s", (int)(len < sizeof frame - 1 ? len : sizeof frame - 1), p);
        if (json) {
            if (d)
                fputs(", ", out);
            heap_json_string(out, frame);
        } else {
            fprintf(out, "%s%s", d ? " <- " : "", frame);
        }
        p += len + (e != NULL);
    }
    if (json)
        fputc(']', out);
}

static void write_changes(const growth *gs, uint32_t n, uint32_t top, int sites, int json, FILE *out)
{
    char b1[48], b2[48], b3[48];
    if (json) {
        fputs(sites ? ",\n \"site_growth\": [" : ",\n \"growth\": [", out);
        for (uint32_t k = 0; k < n; k++) {
            fputs(k ? ",\n  {" : "\n  {", out);
            if (sites) {
                fputs("\"frames\": ", out);
                write_frames(out, gs[k].name, 1);
            } else {
                fputs("\"name\": ", out);
                heap_json_string(out, gs[k].name);
            }
            fprintf(out, ", \"count\": %" PRId64 ", \"shallow\": %" PRId64 ", \"retained\": %" PRId64 "}",
                    gs[k].count, gs[k].shallow, gs[k].retained);
        }
        fputc(']', out);
        return;
    }
    fprintf(out, "\nGrowth since the baseline by %s, largest retained growth first (top %u of %u "
            "%s that changed):\n", sites ? "allocation site" : "class", top < n ? top : n, n,
            sites ? "sites" : "classes");
    fprintf(out, "%16s %16s %12s  %s\n", "retained", "shallow", "count", sites ? "frames, callee first" : "class");
    for (uint32_t k = 0; k < n && k < top; k++) {
        fprintf(out, "%16s %16s %12s  ", signed_thousands(gs[k].retained, b1, sizeof b1),
                signed_thousands(gs[k].shallow, b2, sizeof b2), signed_thousands(gs[k].count, b3, sizeof b3));
        if (sites)
            write_frames(out, gs[k].name, 0);
        else
            fputs(gs[k].name, out);
        fputc('\n', out);
    }
}

int heap_write_growth(const heap_analysis *a, const heap_baseline *baseline, uint32_t top, int json, FILE *out)
{
    heap_class_rows now = { 0 }, now_sites = { 0 };
    int with_sites = baseline->has_sites && a->site_count != NULL;
    uint32_t n = 0, nsites = 0;
    growth *gs = NULL, *site_gs = NULL;
    int rc = -1;
    if (heap_class_rows_of(a, &now) != 0 || (with_sites && heap_site_rows_of(a, &now_sites) != 0))
        goto out;
    if ((gs = changes(&now, &baseline->classes, &n)) == NULL
        || (with_sites && (site_gs = changes(&now_sites, &baseline->sites, &nsites)) == NULL))
        goto out;
    write_changes(gs, n, top, 0, json, out);
    if (with_sites)
        write_changes(site_gs, nsites, top, 1, json, out);
    else if (!json && (baseline->has_sites || a->site_count != NULL))
        fprintf(out, "\n(No growth by allocation site: the %s dump's objects carry no allocation traces.)\n",
                baseline->has_sites ? "new" : "baseline");
    rc = 0;
out:
    free(gs);
    free(site_gs);
    heap_class_rows_free(&now);
    heap_class_rows_free(&now_sites);
    return rc;
}
