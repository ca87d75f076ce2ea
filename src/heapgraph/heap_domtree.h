/*
 * heap_domtree: the dominator tree of a heap_analysis as lists of children,
 * each node's largest retained first: what the leak suspects and the HTML
 * page walk down. 8 bytes a node; made after the analysis, when the graph's
 * edges are gone.
 */
#ifndef HPROF_HEAP_DOMTREE_H
#define HPROF_HEAP_DOMTREE_H

#include "heap_analysis.h"

typedef struct heap_domtree {
    uint32_t *start;    /* [nnodes + 1]: node v's children are child[start[v] .. start[v + 1]) */
    uint32_t *child;
} heap_domtree;

/* 0, or -1 when memory runs out. */
int heap_domtree_make(const heap_analysis *a, heap_domtree *t);
void heap_domtree_free(heap_domtree *t);

static inline uint32_t heap_domtree_count(const heap_domtree *t, uint32_t v)
{
    return t->start[v + 1] - t->start[v];
}

#endif
