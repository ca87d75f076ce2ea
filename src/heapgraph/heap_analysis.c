#include "heap_analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dominators.h"

/* qsort_r, which may not be given a NULL array even when empty */
static void sort_array(void *a, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *context)
{
    if (n > 1)
        qsort_r(a, n, size, cmp, context);
}


static int oom(const heap_graph *g, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: out of memory analysing the heap dump", g->path);
    return -1;
}

/* Shortest paths from the virtual root (breadth-first): path_parent. */
static int shortest_paths(heap_analysis *a)
{
    const heap_graph *g = a->g;
    uint32_t n = g->nnodes;
    uint32_t *queue = malloc((size_t)n * sizeof *queue);
    a->path_parent = malloc((size_t)n * sizeof *a->path_parent);
    if (queue == NULL || a->path_parent == NULL) {
        free(queue);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        a->path_parent[i] = HG_NONE;
    uint32_t head = 0, tail = 0;
    a->path_parent[0] = 0;
    {
        for (uint32_t e = g->edge_start[0]; e < g->edge_start[1]; e++)
            if (a->path_parent[g->edges[e]] == HG_NONE) {
                a->path_parent[g->edges[e]] = 0;
                queue[tail++] = g->edges[e];
            }
        while (head < tail) {
            uint32_t v = queue[head++];
            for (uint32_t e = g->edge_start[v]; e < g->edge_start[v + 1]; e++) {
                uint32_t w = g->edges[e];
                if (g->weak && (g->weak[e / 8] >> (e % 8) & 1))
                    continue;
                if (a->path_parent[w] == HG_NONE) {
                    a->path_parent[w] = v;
                    queue[tail++] = w;
                }
            }
        }
    }
    free(queue);
    return 0;
}

/* VisualVM's retained size of a class (HprofHeap.computeRetainedSizeByClass):
 * the sum of the retained sizes of its instances (instances and arrays, not
 * class objects) that no instance of the same class dominates. Walks the
 * dominator tree depth first, counting per class the instances on the way
 * down. */
static int class_retained(heap_analysis *a, const uint32_t *order, uint32_t norder)
{
    heap_graph *g = a->g;
    uint32_t n = g->nnodes;
    uint32_t *child_start = calloc((size_t)n + 1, sizeof *child_start);
    uint32_t *children = malloc((size_t)(norder ? norder : 1) * sizeof *children);
    uint32_t *on_path = calloc(g->nclasses ? g->nclasses : 1, sizeof *on_path);
    uint32_t *stack = malloc((size_t)(norder ? norder : 1) * sizeof *stack);
    uint32_t *next = malloc((size_t)n * sizeof *next);
    uint32_t *on_site = g->site_of ? calloc(g->ntraces, sizeof *on_site) : NULL;
    int rc = -1;
    if (child_start == NULL || children == NULL || on_path == NULL || stack == NULL || next == NULL
        || (g->site_of && on_site == NULL))
        goto out;
    for (uint32_t i = 1; i < norder; i++)
        child_start[a->idom[order[i]] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        child_start[v + 1] += child_start[v];
    for (uint32_t v = 0; v < n; v++)
        next[v] = child_start[v];
    for (uint32_t i = 1; i < norder; i++) {
        uint32_t v = order[i];
        children[next[a->idom[v]]++] = v;
    }
    for (uint32_t v = 0; v < n; v++)
        next[v] = child_start[v];
    uint32_t depth = 0;
    stack[depth++] = 0;
    while (depth > 0) {
        uint32_t v = stack[depth - 1];
        if (next[v] < child_start[v + 1]) {
            uint32_t w = children[next[v]++];
            uint32_t k = g->class_of[w];
            if (g->kind[w] != HG_CLASS) {
                if (on_path[k]++ == 0)
                    g->classes[k].retained += a->retained[w];
            }
            if (on_site && g->site_of[w] != HG_NONE && on_site[g->site_of[w]]++ == 0)
                a->site_retained[g->site_of[w]] += a->retained[w];
            stack[depth++] = w;
            continue;
        }
        depth--;
        if (v != 0 && g->kind[v] != HG_CLASS)
            on_path[g->class_of[v]]--;
        if (v != 0 && on_site && g->site_of[v] != HG_NONE)
            on_site[g->site_of[v]]--;
    }
    rc = 0;
out:
    free(child_start);
    free(children);
    free(on_path);
    free(stack);
    free(next);
    free(on_site);
    return rc;
}

int heap_analyze(heap_graph *g, heap_analysis *a, hg_progress progress, void *ctx, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->g = g;
    uint32_t n = g->nnodes;
    a->idom = malloc((size_t)n * sizeof *a->idom);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    a->retained = calloc(n, sizeof *a->retained);
    if (a->idom == NULL || order == NULL || a->retained == NULL) {
        free(order);
        return oom(g, err, errlen);
    }
    if (g->site_of) {
        a->site_count = calloc(g->ntraces, sizeof *a->site_count);
        a->site_shallow = calloc(g->ntraces, sizeof *a->site_shallow);
        a->site_retained = calloc(g->ntraces, sizeof *a->site_retained);
        if (a->site_count == NULL || a->site_shallow == NULL || a->site_retained == NULL) {
            free(order);
            return oom(g, err, errlen);
        }
    }
    /* the histogram counts instances and arrays; class objects are classes */
    for (uint32_t i = 1; i < n; i++) {
        if (g->kind[i] == HG_CLASS)
            continue;
        hg_class *k = &g->classes[g->class_of[i]];
        if (a->site_count && g->site_of[i] != HG_NONE) {
            a->site_count[g->site_of[i]]++;
            a->site_shallow[g->site_of[i]] += g->size[i];
        }
        k->count++;
        k->shallow_total += g->size[i];
        a->objects++;
        a->bytes += g->size[i];
    }
    /* reachable without weak references first (the paths); dominators
     * over those objects, weak references counted as referrers */
    if (progress)
        progress(ctx, "paths", 0);
    if (shortest_paths(a) != 0) {
        free(order);
        return oom(g, err, errlen);
    }
    if (progress)
        progress(ctx, "dominators", 0.3);
    uint32_t norder = 0;
    /* the edges are not needed after this: the paths are known */
    free(g->weak);
    g->weak = NULL;
    int rc = dominators_compute(n, g->edge_start, &g->edges, 1, a->path_parent, a->idom, order, &norder);
    if (rc != 0) {
        free(order);
        return oom(g, err, errlen);
    }
    a->nreachable = norder ? norder - 1 : 0;
    for (uint32_t i = 0; i < norder; i++)
        a->retained[order[i]] = g->size[order[i]];
    for (uint32_t i = norder; i-- > 1;)
        a->retained[a->idom[order[i]]] += a->retained[order[i]];
    a->reachable_bytes = a->retained[0];
    if (progress)
        progress(ctx, "retained sizes by class", 0.5);
    if (class_retained(a, order, norder) != 0) {
        free(order);
        return oom(g, err, errlen);
    }
    free(order);
    return 0;
}

void heap_analysis_free(heap_analysis *a)
{
    free(a->idom);
    free(a->retained);
    free(a->path_parent);
    free(a->site_count);
    free(a->site_shallow);
    free(a->site_retained);
    memset(a, 0, sizeof *a);
}

uint32_t heap_top_objects(const heap_analysis *a, uint32_t max, uint32_t *out)
{
    const heap_graph *g = a->g;
    uint32_t n = g->nnodes;
    if (max == 0 || n < 2)
        return 0;
    /* a sole holder: all it retains but itself is one object's retained set */
    unsigned char *sole = calloc(n, 1);
    if (sole == NULL)
        return 0;
    for (uint32_t v = 1; v < n; v++) {
        uint32_t d = a->idom[v];
        if (d != DOM_UNREACHED && d != 0 && a->retained[v] + g->size[d] == a->retained[d])
            sole[d] = 1;
    }
    /* a min-heap of the max largest */
    uint32_t count = 0;
    for (uint32_t v = 1; v < n; v++) {
        if (a->idom[v] == DOM_UNREACHED || sole[v] || a->retained[v] == 0)
            continue;
        uint64_t r = a->retained[v];
        if (count < max) {
            uint32_t i = count++;
            while (i > 0 && a->retained[out[(i - 1) / 2]] > r) {
                out[i] = out[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            out[i] = v;
        } else if (r > a->retained[out[0]]) {
            uint32_t i = 0;
            for (;;) {
                uint32_t l = 2 * i + 1, s = l + 1, m = i;
                uint64_t mr = r;
                if (l < count && a->retained[out[l]] < mr) {
                    m = l;
                    mr = a->retained[out[l]];
                }
                if (s < count && a->retained[out[s]] < mr)
                    m = s;
                if (m == i)
                    break;
                out[i] = out[m];
                i = m;
            }
            out[i] = v;
        }
    }
    free(sole);
    /* largest first */
    for (uint32_t i = 1; i < count; i++) {
        uint32_t v = out[i], j = i;
        while (j > 0 && (a->retained[out[j - 1]] < a->retained[v]
                         || (a->retained[out[j - 1]] == a->retained[v] && out[j - 1] > v))) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = v;
    }
    return count;
}

static int by_retained(const void *x, const void *y, void *context)
{
    const heap_analysis *analysis = context;
    const hg_class *a = &analysis->g->classes[*(const uint32_t *)x];
    const hg_class *b = &analysis->g->classes[*(const uint32_t *)y];
    if (a->retained != b->retained)
        return a->retained < b->retained ? 1 : -1;
    if (a->shallow_total != b->shallow_total)
        return a->shallow_total < b->shallow_total ? 1 : -1;
    return strcmp(a->name, b->name);
}

uint32_t *heap_classes_by_retained(const heap_analysis *a, uint32_t *n)
{
    const heap_graph *g = a->g;
    uint32_t *ks = malloc((size_t)(g->nclasses ? g->nclasses : 1) * sizeof *ks);
    *n = 0;
    if (ks == NULL)
        return NULL;
    for (uint32_t i = 0; i < g->nclasses; i++)
        if (g->classes[i].count > 0)
            ks[(*n)++] = i;
    sort_array(ks, *n, sizeof *ks, by_retained, (void *)a);
    return ks;
}
