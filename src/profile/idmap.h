/*
 * idmap: a map from 64-bit keys to 32-bit ids, for the writers over a
 * profile: (parent node, name) -> tree node, (system name, file) -> pprof
 * function. Open addressing, doubled at half load. Pure C.
 */
#ifndef HPROF_IDMAP_H
#define HPROF_IDMAP_H

#include <stdint.h>

typedef struct idmap {
    uint64_t *keys;
    uint32_t *ids;        /* 0: empty slot (ids stored are >= 1) */
    uint32_t  capacity;   /* a power of two, or 0 */
    uint32_t  count;
} idmap;

/* The id stored for key, or 0. */
uint32_t idmap_get(const idmap *m, uint64_t key);
/* Store id (>= 1) for key, replacing any. 0, or -1 when out of memory. */
int idmap_put(idmap *m, uint64_t key, uint32_t id);
void idmap_free(idmap *m);

#endif
