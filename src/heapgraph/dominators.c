/*
 * Semidominators as in Lengauer and Tarjan, "A fast algorithm for finding
 * dominators in a flowgraph" (1979), with the simple eval/link and path
 * compression done with an explicit stack; immediate dominators from them
 * as in Georgiadis' Semi-NCA (the nearest common ancestor walk LLVM uses),
 * which needs no buckets. Work is in preorder numbers 1..count (0: none).
 */
#include "dominators.h"

#include <stdlib.h>

typedef struct lt {
    uint32_t *semi, *label, *ancestor, *parent, *stack;
} lt;

/* The vertex of least semidominator on the compressed path up from v. */
static uint32_t eval(lt *t, uint32_t v)
{
    if (t->ancestor[v] == 0)
        return v;
    uint32_t depth = 0;
    for (uint32_t x = v; t->ancestor[t->ancestor[x]] != 0; x = t->ancestor[x])
        t->stack[depth++] = x;
    while (depth > 0) {
        uint32_t x = t->stack[--depth];
        uint32_t a = t->ancestor[x];
        if (t->semi[t->label[a]] < t->semi[t->label[x]])
            t->label[x] = t->label[a];
        t->ancestor[x] = t->ancestor[a];
    }
    return t->label[v];
}

int dominators_compute(uint32_t n, const uint32_t *start, uint32_t **edges_p, int free_edges,
                       const uint32_t *reach, uint32_t *idom, uint32_t *order, uint32_t *norder)
{
    if (n == 0) {
        if (norder)
            *norder = 0;
        return 0;
    }
    size_t slots = (size_t)n + 1;
    const uint32_t *edges = *edges_p;
    /* Memory is what limits the heaps this can take: the caller's idom
     * holds each node's preorder number until the end, its order the
     * vertex of each number (order[i - 1]: number i), and the ancestors
     * hold the depth-first search's next edge before they are needed. */
    uint32_t *num = idom;
    uint32_t *own_order = order ? NULL : malloc((size_t)n * sizeof *own_order);
    uint32_t *vertex = order ? order : own_order;
    uint32_t *pred_start = calloc(slots + 1, sizeof *pred_start);
    lt t = { 0 };
    /* the search's arrays now; the others once the edges may be gone */
    uint32_t **arrays[] = { &t.ancestor, &t.parent, &t.stack, &t.semi, &t.label };
    int ok = vertex != NULL && pred_start != NULL;
    for (size_t i = 0; i < 3; i++) {
        *arrays[i] = calloc(slots, sizeof(uint32_t));
        ok = ok && *arrays[i] != NULL;
    }
    uint32_t *preds = NULL;
    if (!ok)
        goto out;
#define VERTEX(i) vertex[(i) - 1]

    /* depth-first preorder from node 0; the stack holds numbers, ancestor[] their next edge */
    for (uint32_t v = 0; v < n; v++)
        num[v] = 0;
    uint32_t count = 0, depth = 0;
    num[0] = ++count;
    VERTEX(count) = 0;
    t.stack[depth++] = count;
    t.ancestor[count] = start[0];
    while (depth > 0) {
        uint32_t vn = t.stack[depth - 1], v = VERTEX(vn);
        if (t.ancestor[vn] == start[v + 1]) {
            depth--;
            continue;
        }
        uint32_t w = edges[t.ancestor[vn]++];
        if (num[w] != 0 || (reach && reach[w] == DOM_UNREACHED))
            continue;
        num[w] = ++count;
        VERTEX(count) = w;
        t.parent[count] = vn;
        t.ancestor[count] = start[w];
        t.stack[depth++] = count;
    }
    for (uint32_t i = 1; i <= count; i++)
        t.ancestor[i] = 0;

    /* predecessors in number space, of reached nodes only */
    for (uint32_t i = 1; i <= count; i++) {
        uint32_t v = VERTEX(i);
        for (uint32_t e = start[v]; e < start[v + 1]; e++)
            if (num[edges[e]])
                pred_start[num[edges[e]] + 1]++;
    }
    for (uint32_t i = 1; i <= count + 1; i++)
        pred_start[i] += pred_start[i - 1];
    uint64_t npreds = pred_start[count + 1];
    preds = malloc((npreds ? npreds : 1) * sizeof *preds);
    if (preds == NULL) {
        ok = 0;
        goto out;
    }
    /* filled with stack[] as each number's cursor */
    for (uint32_t i = 1; i <= count; i++)
        t.stack[i] = pred_start[i];
    for (uint32_t i = 1; i <= count; i++) {
        uint32_t v = VERTEX(i);
        for (uint32_t e = start[v]; e < start[v + 1]; e++) {
            uint32_t w = num[edges[e]];
            if (w)
                preds[t.stack[w]++] = i;
        }
    }
    if (free_edges) {
        free(*edges_p);
        *edges_p = NULL;
        edges = NULL;
    }
    for (size_t i = 3; i < sizeof arrays / sizeof arrays[0]; i++) {
        *arrays[i] = calloc(slots, sizeof(uint32_t));
        ok = ok && *arrays[i] != NULL;
    }
    if (!ok)
        goto out;
    /* num[] is not needed until the end: dom[] lives in it, shifted by one */
#define DOM(i) idom[(i) - 1]
    for (uint32_t i = 1; i <= count; i++) {
        t.semi[i] = i;
        t.label[i] = i;
    }

    /* semidominators, in reverse preorder, with eval and link */
    for (uint32_t w = count; w >= 2; w--) {
        for (uint32_t e = pred_start[w]; e < pred_start[w + 1]; e++) {
            uint32_t u = eval(&t, preds[e]);
            if (t.semi[u] < t.semi[w])
                t.semi[w] = t.semi[u];
        }
        t.ancestor[w] = t.parent[w];
    }
    /* immediate dominators in preorder (Semi-NCA): the nearest ancestor of
     * w's parent, in the dominator tree so far, numbered at most semi(w).
     * No buckets: two arrays fewer than Lengauer-Tarjan's second step. */
    DOM(1) = 1;
    for (uint32_t w = 2; w <= count; w++) {
        uint32_t d = t.parent[w];
        while (d > t.semi[w])
            d = DOM(d);
        DOM(w) = d;
    }

    /* each number's idom as a node, in semi[] (done with), then into idom[] */
    for (uint32_t i = 1; i <= count; i++)
        t.semi[i] = VERTEX(DOM(i));
    for (uint32_t v = 0; v < n; v++)
        idom[v] = DOM_UNREACHED;
    for (uint32_t i = 1; i <= count; i++)
        idom[VERTEX(i)] = t.semi[i];
    if (norder)
        *norder = count;
#undef VERTEX
#undef DOM
out:
    free(own_order);
    free(pred_start);
    free(preds);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(*arrays[i]);
    return ok ? 0 : -1;
}
