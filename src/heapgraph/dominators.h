/*
 * dominators: the immediate dominator of every node of a directed graph
 * reachable from node 0: Lengauer and Tarjan's semidominators (the simple
 * version, O(E log N)), then Semi-NCA for the immediate dominators (no
 * buckets; quadratic only on graphs heaps do not make), iterative
 * throughout: heaps hold chains of millions of objects, far deeper than a
 * C stack.
 *
 * The graph: successors of node v are (*edges)[start[v] .. start[v + 1]).
 * With free_edges, the edges are freed (and *edges set NULL) as soon as the
 * predecessors are known, before the algorithm's own arrays are made: the
 * peak of memory holds one of the two, not both.
 * Pure C; memory about 28 bytes a node and 4 an edge besides the graph and
 * the results.
 */
#ifndef HPROF_DOMINATORS_H
#define HPROF_DOMINATORS_H

#include <stdint.h>

#define DOM_UNREACHED UINT32_MAX

/* idom[v] for every node: node 0's is 0, an unreachable node's
 * DOM_UNREACHED. reach (may be NULL): nodes left out of the graph, with
 * the edges to them, are those whose reach[v] is DOM_UNREACHED. order (may be NULL): the reachable
 * nodes in depth-first preorder (a node's idom comes before it), *norder
 * their count. 0, or -1 when memory runs out. */
int dominators_compute(uint32_t n, const uint32_t *start, uint32_t **edges, int free_edges,
                       const uint32_t *reach, uint32_t *idom, uint32_t *order, uint32_t *norder);

#endif
