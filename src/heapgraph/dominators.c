/*
 * Lengauer-Tarjan, "A fast algorithm for finding dominators in a flowgraph"
 * (1979), with the simple eval/link and path compression done with an
 * explicit stack. Work is in preorder numbers 1..count (0: none).
 */
#include "dominators.h"

#include <stdlib.h>

typedef struct lt {
    uint32_t *semi, *label, *ancestor, *parent, *vertex, *dom, *bucket, *next, *stack;
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

int dominators_compute(uint32_t n, const uint32_t *start, const uint32_t *edges,
                       const unsigned char *excluded, uint32_t *idom, uint32_t *order, uint32_t *norder)
{
    if (n == 0) {
        if (norder)
            *norder = 0;
        return 0;
    }
    size_t slots = (size_t)n + 1;
    uint32_t *num = calloc(n, sizeof *num);              /* node -> preorder number */
    uint32_t *pred_start = calloc(slots + 1, sizeof *pred_start);
    lt t;
    uint32_t **arrays[] = { &t.semi, &t.label, &t.ancestor, &t.parent, &t.vertex, &t.dom,
                            &t.bucket, &t.next, &t.stack };
    int ok = num != NULL && pred_start != NULL;
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        *arrays[i] = calloc(slots, sizeof(uint32_t));
        ok = ok && *arrays[i] != NULL;
    }
    uint32_t *edge_pos = NULL, *preds = NULL;
    if (!ok)
        goto out;

    /* depth-first preorder from node 0; stack holds nodes, edge_pos their next edge */
    edge_pos = malloc((size_t)n * sizeof *edge_pos);
    if (edge_pos == NULL) {
        ok = 0;
        goto out;
    }
    uint32_t count = 0, depth = 0;
    num[0] = ++count;
    t.vertex[count] = 0;
    t.stack[depth++] = 0;
    edge_pos[0] = start[0];
    while (depth > 0) {
        uint32_t v = t.stack[depth - 1];
        if (edge_pos[v] == start[v + 1]) {
            depth--;
            continue;
        }
        uint32_t w = edges[edge_pos[v]++];
        if (num[w] != 0 || (excluded && excluded[w]))
            continue;
        num[w] = ++count;
        t.vertex[count] = w;
        t.parent[count] = num[v];
        edge_pos[w] = start[w];
        t.stack[depth++] = w;
    }
    free(edge_pos);
    edge_pos = NULL;

    /* predecessors in number space, of reached nodes only */
    for (uint32_t v = 0; v < n; v++)
        if (num[v])
            for (uint32_t e = start[v]; e < start[v + 1]; e++)
                if (num[edges[e]])
                    pred_start[num[edges[e]] + 1]++;
    for (uint32_t i = 1; i <= count + 1 && i < slots + 1; i++)
        pred_start[i] += pred_start[i - 1];
    uint64_t npreds = pred_start[count + 1 < slots ? count + 1 : slots];
    preds = malloc((npreds ? npreds : 1) * sizeof *preds);
    if (preds == NULL) {
        ok = 0;
        goto out;
    }
    /* fill using next[] as a cursor per number */
    for (uint32_t i = 1; i <= count; i++)
        t.next[i] = pred_start[i];
    for (uint32_t v = 0; v < n; v++)
        if (num[v])
            for (uint32_t e = start[v]; e < start[v + 1]; e++) {
                uint32_t w = num[edges[e]];
                if (w)
                    preds[t.next[w]++] = num[v];
            }
    for (uint32_t i = 1; i <= count; i++) {
        t.semi[i] = i;
        t.label[i] = i;
        t.next[i] = 0;
    }

    for (uint32_t w = count; w >= 2; w--) {
        for (uint32_t e = pred_start[w]; e < pred_start[w + 1]; e++) {
            uint32_t u = eval(&t, preds[e]);
            if (t.semi[u] < t.semi[w])
                t.semi[w] = t.semi[u];
        }
        /* w into the bucket of its semidominator */
        t.next[w] = t.bucket[t.semi[w]];
        t.bucket[t.semi[w]] = w;
        uint32_t p = t.parent[w];
        t.ancestor[w] = p;
        for (uint32_t v = t.bucket[p]; v != 0; v = t.next[v]) {
            uint32_t u = eval(&t, v);
            t.dom[v] = t.semi[u] < t.semi[v] ? u : p;
        }
        t.bucket[p] = 0;
    }
    for (uint32_t w = 2; w <= count; w++)
        if (t.dom[w] != t.semi[w])
            t.dom[w] = t.dom[t.dom[w]];
    t.dom[1] = 1;

    for (uint32_t v = 0; v < n; v++)
        idom[v] = DOM_UNREACHED;
    for (uint32_t i = 1; i <= count; i++)
        idom[t.vertex[i]] = t.vertex[t.dom[i]];
    if (order)
        for (uint32_t i = 1; i <= count; i++)
            order[i - 1] = t.vertex[i];
    if (norder)
        *norder = count;
out:
    free(num);
    free(pred_start);
    free(edge_pos);
    free(preds);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(*arrays[i]);
    return ok ? 0 : -1;
}
