/* code_map.c: see code_map.h. A sorted array of ranges: lookups are a
 * binary search; an add or a remove moves the tail (a JIT installs some
 * thousands of methods, each once, so the copies stay cheap). */
#include "code_map.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct code_range {
    uint64_t start, end;       /* [start, end) */
    uint64_t method;
    int      kind;
} code_range;

struct code_map {
    pthread_mutex_t lock;
    code_range     *ranges;    /* sorted by start, none overlapping */
    uint32_t        n, cap;
};

code_map *code_map_new(void)
{
    code_map *m = calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void code_map_free(code_map *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->ranges);
    free(m);
}

/* The index of the first range whose end is above pc (n if none). */
static uint32_t first_ending_above(const code_map *m, uint64_t pc)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].end <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int code_map_add(code_map *m, uint64_t start, uint64_t size, int kind, uint64_t method)
{
    if (size == 0 || start + size < start || kind == CODE_NONE)
        return 0;
    uint64_t end = start + size;
    pthread_mutex_lock(&m->lock);
    uint32_t at = first_ending_above(m, start), past = at;
    while (past < m->n && m->ranges[past].start < end)
        past++;                              /* overlapped: stale, replaced */
    int rc = 0;
    if (past == at && m->n == m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 256;
        code_range *grown = m->n >= CODE_MAP_MAX ? NULL : realloc(m->ranges, cap * sizeof *grown);
        if (grown == NULL)
            rc = -1;
        else {
            m->ranges = grown;
            m->cap = cap;
        }
    }
    if (rc == 0) {
        /* Ranges [at, past) go, one comes in at `at`. */
        memmove(m->ranges + at + 1, m->ranges + past, (m->n - past) * sizeof *m->ranges);
        m->ranges[at] = (code_range){ start, end, method, kind };
        m->n = m->n - (past - at) + 1;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

void code_map_remove(code_map *m, uint64_t start)
{
    pthread_mutex_lock(&m->lock);
    uint32_t at = first_ending_above(m, start);
    if (at < m->n && m->ranges[at].start == start) {
        memmove(m->ranges + at, m->ranges + at + 1, (m->n - at - 1) * sizeof *m->ranges);
        m->n--;
    }
    pthread_mutex_unlock(&m->lock);
}

int code_map_find(code_map *m, uint64_t pc, uint64_t *method)
{
    int kind = CODE_NONE;
    pthread_mutex_lock(&m->lock);
    uint32_t at = first_ending_above(m, pc);
    if (at < m->n && m->ranges[at].start <= pc) {
        kind = m->ranges[at].kind;
        if (method)
            *method = m->ranges[at].method;
    }
    pthread_mutex_unlock(&m->lock);
    return kind;
}

void code_map_clear(code_map *m)
{
    pthread_mutex_lock(&m->lock);
    m->n = 0;
    pthread_mutex_unlock(&m->lock);
}

uint32_t code_map_count(code_map *m)
{
    pthread_mutex_lock(&m->lock);
    uint32_t n = m->n;
    pthread_mutex_unlock(&m->lock);
    return n;
}
