/*
 * object_store: the objects heap=sites tracks, one entry per allocation: a
 * weak handle to the object and its subsite (site_table.h). The live census
 * counts the entries whose object is still there; a heap dump tags those
 * objects with their subsites.
 *
 * Why not JVMTI object tags, which did this before: HotSpot keeps tags in a
 * hash table of C-heap entries behind one lock, and every SetTag first
 * searches it. On JDK 17 the table is also rehashed after each GC that moves
 * objects (it hashes by address) and swept of dead entries by the Service
 * Thread, holding that lock. On Jython (about 60 million objects) 48% of the
 * process's CPU went to the table (find 22%, malloc 8.5%, dead-entry removal
 * 5.5%, rehash 3%): 54 s of CPU against 6 s without the agent. A JNI weak
 * global reference costs one OopStorage slot and no search, and an entry
 * here is written in order: 22.5 s for the same run (before sweeping).
 *
 * Entries go in chunks of 8 KB, each a stream of entries of about 2-3 bytes
 * (differences from the entry before, as varints: see object_store.c), for
 * a young object holds its entry until the GC after it, and a program may
 * allocate millions between GCs. Each thread appends to its own chunk, with no
 * lock; a full chunk is retired to the "young" list, stamped with the number
 * of GCs seen so far. Weak handles are cleared only by a GC, so a sweep
 * (object_store_sweep, on the agent thread after a GC) looks only at young
 * chunks retired before the last GC: dead entries are released, survivors
 * copied densely into "old" chunks. Old chunks are swept again only when they
 * have doubled since their last sweep, so the sweeping costs O(allocations)
 * and dead entries never hold more than about as much memory as live ones.
 * If the sweeper falls behind, a thread retiring a chunk sweeps some itself.
 *
 * The handles are opaque: the caller's ops say whether a handle's object is
 * gone and release a handle (JNI for the agent, plain memory in the unit
 * tests). Pure C: no JNI here.
 */
#ifndef HPROF_OBJECT_STORE_H
#define HPROF_OBJECT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "site_table.h"

typedef struct object_store_ops {
    int  (*dead)(void *ctx, void *handle);        /* 1: its object was collected */
    void (*release)(void *ctx, void *handle);     /* the handle is dropped */
} object_store_ops;

/* One allocation on the calling thread. 0 when kept; -1 when out of memory,
 * and then the handle is not kept (the caller releases it). May sweep some
 * young chunks with ops/ctx when the sweeper is behind. */
int  object_store_add(const object_store_ops *ops, void *ctx, void *handle, subsite_t s);

/* The calling thread will add no more: its chunk is retired (ThreadEnd). */
void object_store_thread_end(void);

/* A GC finished: atomics only, safe in a GarbageCollectionFinish callback. */
void object_store_gc_done(void);

/* The sweeper's pass: young chunks retired before the last GC, and the old
 * ones when they have doubled. Returns the entries released. */
size_t object_store_sweep(const object_store_ops *ops, void *ctx);

/* Every entry whose object is still there, after releasing those gone (call
 * it after a forced GC): visit(arg, handle, subsite). Entries threads are
 * adding meanwhile may or may not be visited. */
void object_store_each(const object_store_ops *ops, void *ctx,
                       void (*visit)(void *arg, void *handle, subsite_t s), void *arg);

/* The calling thread's last `max` entries: 1 if match(ctx, handle, subsite)
 * holds for one of them. */
int  object_store_recent(int (*match)(void *ctx, void *handle, subsite_t s), void *ctx, unsigned max);

/* Every entry released (`reset`), except those in chunks threads are
 * filling, which cannot be touched while they add. */
void object_store_clear(const object_store_ops *ops, void *ctx);

typedef struct object_store_stats {
    size_t entries;          /* in all chunks (live or not yet swept) */
    size_t young_entries;    /* retired, not yet swept */
    size_t chunks;           /* chunks allocated */
    size_t bytes;            /* their memory */
    size_t released;         /* entries released since the start */
} object_store_stats;
object_store_stats object_store_stats_now(void);

/* Everything freed, handles released with ops (unit tests; a stopped agent
 * keeps its store). Not while threads add. */
void object_store_free(const object_store_ops *ops, void *ctx);

#endif
