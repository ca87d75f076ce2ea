/* deadlock.c: see deadlock.h. */
#include "deadlock.h"

#include <stdlib.h>
#include <string.h>

static int by_thread(const void *a, const void *b)
{
    const waiter *x = a, *y = b;
    return (x->thread > y->thread) - (x->thread < y->thread);
}

/* Index of thread id in the sorted graph, or -1. */
static long find(const waiter *sorted, uint32_t n, uint32_t id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sorted[mid].thread < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && sorted[lo].thread == id ? (long)lo : -1;
}

uint32_t find_deadlocks(const waiter *graph, uint32_t n, uint32_t *cycles)
{
    if (n == 0)
        return 0;
    waiter *g = malloc(n * sizeof *g);
    /* state: 0 unvisited, 1 on the current path, 2 done */
    unsigned char *state = calloc(n, 1);
    uint32_t *path = malloc(n * sizeof *path);
    if (g == NULL || state == NULL || path == NULL) {
        free(g);
        free(state);
        free(path);
        return 0;
    }
    memcpy(g, graph, n * sizeof *g);
    qsort(g, n, sizeof *g, by_thread);

    /* Pass 1: walk from every node; a walk that meets its own path has
     * found a cycle: mark its nodes (state 3). Other visited nodes: 2. */
    for (uint32_t start = 0; start < n; start++) {
        if (state[start])
            continue;
        uint32_t len = 0;
        long cur = (long)start;
        while (cur >= 0 && state[cur] == 0) {
            state[cur] = 1;
            path[len++] = (uint32_t)cur;
            cur = g[cur].waits_for ? find(g, n, g[cur].waits_for) : -1;
        }
        long cycle_at = cur >= 0 && state[cur] == 1 ? cur : -1;
        int on_cycle = 0;
        for (uint32_t i = 0; i < len; i++) {
            if ((long)path[i] == cycle_at)
                on_cycle = 1;
            state[path[i]] = on_cycle ? 3 : 2;
        }
    }
    /* Pass 2: in id order, the first node met of each cycle is its smallest:
     * write the cycle from there, following the edges. */
    uint32_t found = 0, out = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (state[i] != 3)
            continue;
        uint32_t len_pos = out++, len = 0;
        long cur = (long)i;
        do {
            cycles[out++] = g[cur].thread;
            state[cur] = 4;                 /* written */
            len++;
            cur = find(g, n, g[cur].waits_for);
        } while (cur != (long)i);
        cycles[len_pos] = len;
        found++;
    }
    free(g);
    free(state);
    free(path);
    return found;
}
