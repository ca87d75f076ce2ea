#include "heap_domtree.h"

#include <stdlib.h>

#include "dominators.h"

/* Nodes by their retained size (context: the sizes), largest first. */
static int by_retained(const void *x, const void *y, void *context)
{
    const uint64_t *retained = context;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (retained[a] != retained[b])
        return retained[a] < retained[b] ? 1 : -1;
    return a < b ? -1 : a > b;
}

int heap_domtree_make(const heap_analysis *a, heap_domtree *t)
{
    uint32_t n = a->g->nnodes;
    t->start = calloc((size_t)n + 1, sizeof *t->start);
    t->child = malloc((size_t)(n ? n : 1) * sizeof *t->child);
    uint32_t *next = malloc((size_t)(n ? n : 1) * sizeof *next);
    if (t->start == NULL || t->child == NULL || next == NULL) {
        free(next);
        heap_domtree_free(t);
        return -1;
    }
    for (uint32_t v = 1; v < n; v++)
        if (a->idom[v] != DOM_UNREACHED)
            t->start[a->idom[v] + 1]++;
    for (uint32_t v = 0; v < n; v++) {
        t->start[v + 1] += t->start[v];
        next[v] = t->start[v];
    }
    for (uint32_t v = 1; v < n; v++)
        if (a->idom[v] != DOM_UNREACHED)
            t->child[next[a->idom[v]]++] = v;
    free(next);
    for (uint32_t v = 0; v < n; v++)
        if (heap_domtree_count(t, v) > 1)
            qsort_r(t->child + t->start[v], heap_domtree_count(t, v), sizeof *t->child, by_retained,
                    (void *)a->retained);
    return 0;
}

void heap_domtree_free(heap_domtree *t)
{
    free(t->start);
    free(t->child);
    t->start = t->child = NULL;
}
