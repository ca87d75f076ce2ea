/*
 * heap_scan_edges: pass 3 of heap_scan (heap_scan.c): each object's kind,
 * class, shallow size and allocation site, and its references as dense node
 * indexes, appended in node order (one array with a start per node).
 */
#include "heap_scan_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ pass 3 */

typedef struct edge_sink {
    scan     *s;
    size_t    cap, weak_cap;
} edge_sink;

static int add_edge(edge_sink *e, uint64_t id, int weak)
{
    if (id == 0)
        return 0;
    heap_graph *g = e->s->g;
    uint32_t to = heap_graph_node(g, id);
    if (to == HG_NONE) {
        g->dangling++;
        return 0;
    }
    if (g->nedges >= UINT32_MAX - 1)
        return heap_scan_fail_at(e->s, 0, "more than 4 billion references");
    if (grow((void **)&g->edges, &e->cap, (size_t)g->nedges, sizeof *g->edges) != 0)
        return heap_scan_out_of_memory(e->s);
    if (weak) {
        size_t bytes = (size_t)(g->nedges / 8 + 1);
        if (bytes > e->weak_cap) {
            size_t ncap = bytes * 2 + 64;
            unsigned char *w = realloc(g->weak, ncap);
            if (w == NULL)
                return heap_scan_out_of_memory(e->s);
            memset(w + e->weak_cap, 0, ncap - e->weak_cap);
            g->weak = w;
            e->weak_cap = ncap;
        }
        g->weak[g->nedges / 8] |= (unsigned char)(1u << (g->nedges % 8));
    }
    g->edges[g->nedges++] = to;
    return 0;
}

static const char *const PRIM_ARRAY_NAMES[12] = {
    [4] = "boolean[]", [5] = "char[]", [6] = "float[]", [7] = "double[]", [8] = "byte[]",
    [9] = "short[]", [10] = "int[]", [11] = "long[]"
};

/* The class of a primitive array type (checked in pass 1), looked up once:
 * stored plus one, 0 meaning not looked up yet. */
static uint32_t prim_class(scan *s, unsigned type)
{
    if (s->prim_classes[type] == 0) {
        s->prim_classes[type] = HG_NONE;
        for (uint32_t i = 0; i < s->g->nclasses; i++)
            if (strcmp(s->g->classes[i].name, PRIM_ARRAY_NAMES[type]) == 0) {
                s->prim_classes[type] = i + 1;
                break;
            }
    }
    return s->prim_classes[type] == HG_NONE ? HG_NONE : s->prim_classes[type] - 1;
}

/* A class for objects whose class the dump does not hold (a primitive
 * array type HotSpot did not dump as a class). */
static uint32_t synthetic_class(scan *s, const char *name)
{
    heap_graph *g = s->g;
    for (uint32_t i = 0; i < g->nclasses; i++)
        if (g->classes[i].id == 0 && strcmp(g->classes[i].name, name) == 0)
            return i;
    if (grow((void **)&g->classes, &s->classes_cap, g->nclasses, sizeof *g->classes) != 0)
        return HG_NONE;
    g->classes[g->nclasses] = (hg_class){ .name = name, .node = HG_NONE, .super = HG_NONE,
                                          .layout_done = 1 };
    return g->nclasses++;
}

/* At most how many references the graph will hold (so that the edge array
 * is allocated once, not doubled past the need): roots, instances' reference
 * fields and class, object arrays' non-null elements, classes' statics. */
static uint64_t count_edges(scan *s)
{
    const heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    uint64_t n = g->nroots;
    uint32_t step = g->nnodes / 50 + 1;
    for (uint32_t i = 1; i < g->nnodes; i++) {
        if (s->progress && i % step == 0)
            s->progress(s->progress_ctx, "counting references", (double)i / g->nnodes);
        const unsigned char *rec = g->bytes + heap_graph_at(g, i);
        if (rec[0] == HG_INSTANCE) {
            uint32_t k = heap_graph_class_by_id(g, be(rec + 1 + idn + 4, idn));
            n += 1 + (k != HG_NONE ? g->classes[k].nrefs : 0);
        } else if (rec[0] == HG_OBJ_ARRAY) {
            uint32_t len = (uint32_t)be(rec + 1 + idn + 4, 4);
            const unsigned char *elems = rec + 1 + 2u * idn + 8;
            for (uint32_t x = 0; x < len; x++)
                n += be(elems + (size_t)x * idn, idn) != 0;
        } else if (rec[0] == HG_CLASS) {
            uint32_t k = heap_graph_class_by_id(g, g->ids[i]);
            if (k == HG_NONE)
                continue;
            cursor statics, fields;
            heap_scan_class_sections(g, &g->classes[k], &statics, &fields);
            n += be(statics.p, 2);
        }
    }
    return n;
}

int heap_scan_read_edges(scan *s)
{
    heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    edge_sink e = { .s = s };
    uint64_t bound = count_edges(s);
    if (bound >= UINT32_MAX - 1)
        return heap_scan_fail_at(s, 0, "more than 4 billion references");
    e.cap = (size_t)bound + 1;
    if ((g->edges = malloc(e.cap * sizeof *g->edges)) == NULL)
        return heap_scan_out_of_memory(s);
    g->kind = malloc(g->nnodes);
    g->class_of = malloc((size_t)g->nnodes * sizeof *g->class_of);
    g->size = malloc((size_t)g->nnodes * sizeof *g->size);
    g->edge_start = malloc(((size_t)g->nnodes + 1) * sizeof *g->edge_start);
    if (g->kind == NULL || g->class_of == NULL || g->size == NULL || g->edge_start == NULL)
        return heap_scan_out_of_memory(s);
    g->kind[0] = 0;
    g->class_of[0] = HG_NONE;
    g->size[0] = 0;
    g->edge_start[0] = 0;
    /* the virtual root: every GC root's object */
    for (uint32_t r = 0; r < g->nroots; r++)
        if (g->roots[r].node != HG_NONE) {
            if (grow((void **)&g->edges, &e.cap, (size_t)g->nedges, sizeof *g->edges) != 0)
                return heap_scan_out_of_memory(s);
            g->edges[g->nedges++] = g->roots[r].node;
        }
    g->root_edges = (uint32_t)g->nedges;
    const unsigned char *end = g->bytes + g->len;
    uint32_t step = g->nnodes / 50 + 1;
    for (uint32_t i = 1; i < g->nnodes; i++) {
        g->edge_start[i] = (uint32_t)g->nedges;
        size_t at = heap_graph_at(g, i);
        cursor c = { g->bytes + at + 1, end };
        int ok = 1;
        unsigned tag = g->bytes[at];
        uint32_t k = HG_NONE, size = 0;
        if (tag == HG_CLASS) {
            if (g->java_lang_class == HG_NONE
                && (g->java_lang_class = synthetic_class(s, "java.lang.Class")) == HG_NONE)
                return heap_scan_out_of_memory(s);
            uint32_t self = heap_graph_class_by_id(g, g->ids[i]);
            if (self == HG_NONE)
                return heap_scan_fail_at(s, at, "class dump 0x%llx shares its id with another object",
                               (unsigned long long)g->ids[i]);
            const hg_class *kc = &g->classes[self];
            k = g->java_lang_class;
            size = k != HG_NONE ? g->classes[k].shallow : g->min_instance;
            cursor statics, fields;
            heap_scan_class_sections(g, kc, &statics, &fields);
            uint32_t n = (uint32_t)get(&statics, 2, &ok);
            for (uint32_t f = 0; f < n && ok; f++) {
                get(&statics, idn, &ok);
                unsigned type = (unsigned)get(&statics, 1, &ok);
                uint64_t v = get(&statics, (size_t)value_size(g, type), &ok);
                if (type == TYPE_OBJECT && add_edge(&e, v, 0) != 0)
                    return -1;
            }
        } else if (tag == HG_INSTANCE) {
            get(&c, idn + 4, &ok);
            uint64_t class_id = get(&c, idn, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            k = heap_graph_class_by_id(g, class_id);
            if (k == HG_NONE)
                return heap_scan_fail_at(s, at, "instance 0x%llx of class 0x%llx, which the dump does not hold",
                               (unsigned long long)g->ids[i], (unsigned long long)class_id);
            const hg_class *kc = &g->classes[k];
            if (kc->value_bytes > n)
                return heap_scan_fail_at(s, at, "instance of %s holds %u bytes of values, its class's fields "
                               "take %u", kc->name, n, kc->value_bytes);
            size = kc->shallow;
            /* an instance refers to its class, as VisualVM's graph has it */
            if (add_edge(&e, class_id, 0) != 0)
                return -1;
            for (uint32_t r = 0; r < kc->nrefs; r++)
                if (add_edge(&e, be(c.p + g->refs[kc->first_ref + r].offset, idn),
                             g->refs[kc->first_ref + r].weak) != 0)
                    return -1;
        } else if (tag == HG_OBJ_ARRAY) {
            get(&c, idn + 4, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            uint64_t class_id = get(&c, idn, &ok);
            k = heap_graph_class_by_id(g, class_id);
            if (k == HG_NONE && (k = synthetic_class(s, "java.lang.Object[]")) == HG_NONE)
                return heap_scan_out_of_memory(s);
            size = align8((uint64_t)g->min_instance + 4 + (uint64_t)n * g->oop_size);
            for (uint32_t x = 0; x < n; x++)
                if (add_edge(&e, be(c.p + (size_t)x * idn, idn), 0) != 0)
                    return -1;
        } else {
            get(&c, idn + 4, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            unsigned type = (unsigned)get(&c, 1, &ok);
            k = prim_class(s, type);
            if (k == HG_NONE) {
                if ((k = synthetic_class(s, PRIM_ARRAY_NAMES[type])) == HG_NONE)
                    return heap_scan_out_of_memory(s);
                s->prim_classes[type] = k + 1;
            }
            size = align8((uint64_t)g->min_instance + 4 + (uint64_t)n * (uint32_t)value_size(g, type));
        }
        if (tag != HG_CLASS && g->ntraces > 0) {
            uint32_t t = heap_graph_search(g->traces, g->ntraces, sizeof *g->traces, offsetof(hg_trace, serial), 4,
                                           be(g->bytes + at + 1 + idn, 4));
            if (t != HG_NONE && g->traces[t].nframes > 0) {
                if (g->site_of == NULL) {
                    if ((g->site_of = malloc((size_t)g->nnodes * sizeof *g->site_of)) == NULL)
                        return heap_scan_out_of_memory(s);
                    for (uint32_t x = 0; x < g->nnodes; x++)
                        g->site_of[x] = HG_NONE;
                }
                g->site_of[i] = t;
            }
        }
        g->kind[i] = (unsigned char)tag;
        g->class_of[i] = k;
        g->size[i] = size;
        if (s->progress && i % step == 0)
            s->progress(s->progress_ctx, "references", (double)i / g->nnodes);
    }
    g->edge_start[g->nnodes] = (uint32_t)g->nedges;
    if (g->weak) {
        /* the bitmap covers every edge */
        size_t bytes = (size_t)(g->nedges / 8 + 1);
        if (bytes > e.weak_cap) {
            unsigned char *w = realloc(g->weak, bytes);
            if (w == NULL)
                return heap_scan_out_of_memory(s);
            memset(w + e.weak_cap, 0, bytes - e.weak_cap);
            g->weak = w;
        }
    }
    return 0;
}
