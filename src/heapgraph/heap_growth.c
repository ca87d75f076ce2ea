/*
 * heap_growth: `hprof heap NEW --baseline OLD`: what grew by class between
 * two dumps. Classes are matched by name (class ids and loaders differ from
 * one JVM, or one dump, to the next).
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
    return 0;
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

int heap_write_growth(const heap_analysis *a, const heap_class_rows *baseline, uint32_t top, int json, FILE *out)
{
    heap_class_rows now;
    if (heap_class_rows_of(a, &now) != 0)
        return -1;
    growth *gs = calloc((size_t)now.n + baseline->n + 1, sizeof *gs);
    if (gs == NULL) {
        heap_class_rows_free(&now);
        return -1;
    }
    /* a merge of the two sorted lists */
    uint32_t n = 0, i = 0, j = 0;
    while (i < now.n || j < baseline->n) {
        int c = i == now.n ? 1 : j == baseline->n ? -1 : strcmp(now.rows[i].name, baseline->rows[j].name);
        const heap_class_row *new_row = c <= 0 ? &now.rows[i++] : NULL;
        const heap_class_row *old_row = c >= 0 ? &baseline->rows[j++] : NULL;
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
    char b1[48], b2[48], b3[48];
    if (json) {
        fputs(",\n \"growth\": [", out);
        for (uint32_t k = 0; k < n; k++) {
            fputs(k ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
            heap_json_string(out, gs[k].name);
            fprintf(out, ", \"count\": %" PRId64 ", \"shallow\": %" PRId64 ", \"retained\": %" PRId64 "}",
                    gs[k].count, gs[k].shallow, gs[k].retained);
        }
        fputc(']', out);
    } else {
        fprintf(out, "\nGrowth since the baseline by class, largest retained growth first (top %u of %u "
                "classes that changed):\n", top < n ? top : n, n);
        fprintf(out, "%16s %16s %12s  %s\n", "retained", "shallow", "count", "class");
        for (uint32_t k = 0; k < n && k < top; k++)
            fprintf(out, "%16s %16s %12s  %s\n", signed_thousands(gs[k].retained, b1, sizeof b1),
                    signed_thousands(gs[k].shallow, b2, sizeof b2), signed_thousands(gs[k].count, b3, sizeof b3),
                    gs[k].name);
    }
    free(gs);
    heap_class_rows_free(&now);
    return 0;
}
