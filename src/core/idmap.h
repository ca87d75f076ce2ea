/*
 * idmap: a map from 64-bit keys to 32-bit ids. The writers over a profile
 * use it for (parent node, name) -> tree node and (system name, file) ->
 * pprof function; the agent for thread serial -> slot (tables.c), Thread.tid
 * -> serial (jvmti_support.c) and thread -> the object it waits on
 * (monitor_events.c), whose entries come and go with threads. Open
 * addressing, doubled at half load; removal moves the rest of a probe run
 * back (no tombstones), so a map of entries that come and go stays at twice
 * the most it held at once. Not thread-safe: callers lock. Pure C.
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
/* Remove key if present. */
void idmap_remove(idmap *m, uint64_t key);
void idmap_free(idmap *m);

#endif
