/*
 * heap_html: `hprof heap DUMP --html -o FILE`: one self-contained page (no
 * network): the leak suspects with their paths, an expandable dominator
 * tree, the class histogram. The data is one JSON object in the page; the
 * script (heap_page.js) and style sheet (heap_page.css) are embedded at build
 * time (build/heap_page_assets.c).
 *
 * Bounded for any dump: the tree holds at most HTML_NODES objects (the
 * largest retained first, expanded in that order), at most
 * HTML_CHILDREN children of one object (the rest summed in an "N more" row)
 * and HTML_DEPTH levels (a linked list of a million nodes would otherwise
 * take all the rows: no one opens it a thousand levels down); the histogram
 * at most HTML_CLASSES classes (largest retained first).
 */
#include "heap_analysis.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap_domtree.h"
#include "heap_suspects.h"

#define HTML_NODES    20000
#define HTML_CHILDREN 100
#define HTML_CLASSES  5000
#define HTML_DEPTH    64

extern const unsigned char heap_page_js[], heap_page_css[];
extern const unsigned heap_page_js_len, heap_page_css_len;

static void write_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out);  break;
        case '>': fputs("&gt;", out);  break;
        default:  fputc(*s, out);
        }
    }
}

/* One row of the page's tree: a dump object and, once expanded, where its
 * shown children begin among the rows. */
typedef struct tree_row {
    uint32_t node;
    int32_t  first;         /* -1: children not in the page */
    uint32_t shown, depth;
    uint64_t more_count, more_retained;
} tree_row;

typedef struct row_heap {   /* rows waiting to be expanded, largest retained on top */
    uint32_t       *rows;
    uint32_t        n;
    const tree_row *all;
    const uint64_t *retained;
} row_heap;

static uint64_t heap_key(const row_heap *h, uint32_t i)
{
    return h->retained[h->all[h->rows[i]].node];
}

static void heap_push(row_heap *h, uint32_t row)
{
    uint32_t i = h->n++;
    h->rows[i] = row;
    while (i > 0 && heap_key(h, (i - 1) / 2) < heap_key(h, i)) {
        uint32_t p = (i - 1) / 2, t = h->rows[p];
        h->rows[p] = h->rows[i];
        h->rows[i] = t;
        i = p;
    }
}

static uint32_t heap_pop(row_heap *h)
{
    uint32_t top = h->rows[0];
    h->rows[0] = h->rows[--h->n];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_key(h, l) > heap_key(h, m))
            m = l;
        if (r < h->n && heap_key(h, r) > heap_key(h, m))
            m = r;
        if (m == i)
            break;
        uint32_t t = h->rows[m];
        h->rows[m] = h->rows[i];
        h->rows[i] = t;
        i = m;
    }
    return top;
}

/* The rows of the page's tree: node 0 (the GC roots) first. */
static tree_row *tree_rows(const heap_analysis *a, const heap_domtree *t, uint32_t *nrows)
{
    tree_row *rows = calloc(HTML_NODES, sizeof *rows);
    row_heap h = { .rows = malloc(HTML_NODES * sizeof(uint32_t)), .all = rows, .retained = a->retained };
    if (rows == NULL || h.rows == NULL) {
        free(rows);
        free(h.rows);
        return NULL;
    }
    uint32_t n = 1;
    rows[0].first = -1;
    heap_push(&h, 0);
    while (h.n > 0) {
        uint32_t r = heap_pop(&h), v = rows[r].node;
        uint32_t nchildren = heap_domtree_count(t, v);
        uint32_t shown = nchildren < HTML_CHILDREN ? nchildren : HTML_CHILDREN;
        if (nchildren == 0 || n + shown > HTML_NODES || rows[r].depth >= HTML_DEPTH)
            continue;
        rows[r].first = (int32_t)n;
        rows[r].shown = shown;
        for (uint32_t i = 0; i < nchildren; i++) {
            uint32_t w = t->child[t->start[v] + i];
            if (i >= shown) {
                rows[r].more_count++;
                rows[r].more_retained += a->retained[w];
                continue;
            }
            rows[n].node = w;
            rows[n].first = -1;
            rows[n].depth = rows[r].depth + 1;
            if (heap_domtree_count(t, w) > 0)
                heap_push(&h, n);
            n++;
        }
    }
    free(h.rows);
    *nrows = n;
    return rows;
}

int heap_write_html(const heap_analysis *a, FILE *out)
{
    const heap_graph *g = a->g;
    heap_domtree t;
    heap_suspects s = { 0 };
    if (heap_domtree_make(a, &t) != 0)
        return -1;
    uint32_t nrows = 0, nk = 0;
    tree_row *rows = tree_rows(a, &t, &nrows);
    uint32_t *ks = heap_classes_by_retained(a, &nk);
    int rc = rows == NULL || ks == NULL || heap_find_suspects(a, &t, &s) != 0 ? -1 : 0;
    if (rc != 0)
        goto out;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>hprof heap: ", out);
    write_escaped(out, g->path);
    fputs("</title>\n<style>\n", out);
    fwrite(heap_page_css, 1, heap_page_css_len, out);
    fputs("</style></head>\n<body>\n<h1>hprof heap: ", out);
    write_escaped(out, g->path);
    fputs("</h1>\n<p id=\"summary\"></p>\n<p id=\"status\" data-state=\"loading\">The page needs JavaScript.</p>\n"
          "<h2>Leak suspects</h2>\n<div id=\"suspects\"></div>\n"
          "<h2>Dominator tree</h2>\n<p class=\"note\" id=\"tree-note\"></p>\n<div id=\"tree\"></div>\n"
          "<h2>Classes</h2>\n<p class=\"note\" id=\"classes-note\"></p>\n<table id=\"classes\"></table>\n", out);
    fputs("<script id=\"heap-data\" type=\"application/json\">\n{", out);
    fputs("\"path\": ", out);
    heap_json_text(out, g->path, 1);
    fprintf(out, ", \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"reachable\": %u, \"reachable_bytes\": %"
            PRIu64 ", \"roots\": %u, \"suspect_percent\": %d, \"node_limit\": %d, \"child_limit\": %d, "
            "\"depth_limit\": %d,\n", a->objects, a->bytes, a->nreachable, a->reachable_bytes, g->nroots,
            HEAP_SUSPECT_PERCENT, HTML_NODES, HTML_CHILDREN, HTML_DEPTH);
    /* rows: [class, id, shallow, retained, first child row (-1: none in the page), shown, more count,
     * more retained, children] */
    fputs("\"tree\": [", out);
    char name[300];
    for (uint32_t i = 0; i < nrows; i++) {
        const tree_row *r = &rows[i];
        uint32_t v = r->node;
        fputs(i ? ",\n[" : "\n[", out);
        if (v == 0)
            fputs("\"GC roots\", \"\"", out);
        else {
            heap_json_text(out, heap_object_class(g, v, name, sizeof name), 1);
            fprintf(out, ", \"0x%" PRIx64 "\"", heap_graph_id(g, v));
        }
        fprintf(out, ", %u, %" PRIu64 ", %" PRId32 ", %u, %" PRIu64 ", %" PRIu64 ", %u]", g->size[v], a->retained[v],
                r->first, r->shown, r->more_count, r->more_retained, heap_domtree_count(&t, v));
    }
    fprintf(out, "],\n\"class_count\": %u, \"classes\": [", nk);
    for (uint32_t i = 0; i < nk && i < HTML_CLASSES; i++) {
        const hg_class *k = &g->classes[ks[i]];
        fputs(i ? ",\n[" : "\n[", out);
        heap_json_text(out, k->name, 1);
        fprintf(out, ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", k->count, k->shallow_total, k->retained);
    }
    fputs("],\n\"suspects\": ", out);
    rc = heap_write_suspects(a, &s, HEAP_PATH_HTML, out);
    fputs("}\n</script>\n<script>\n", out);
    fwrite(heap_page_js, 1, heap_page_js_len, out);
    fputs("</script>\n</body></html>\n", out);
    if (ferror(out))
        rc = -1;
out:
    heap_suspects_free(&s);
    free(rows);
    free(ks);
    heap_domtree_free(&t);
    return rc;
}
