/*
 * ref_table: a bounded map from 64-bit keys to pointers, in stripes that
 * lock apart, for many threads at once. The JVMPI layer (src/jvmpi/ids.c)
 * keeps an object's JNI weak reference under its id (its JVMTI tag) in one,
 * so that finding an object by id is a look-up, not a scan of every tagged
 * object.
 *
 * Each stripe is an idmap (key -> index) over dense arrays of keys and
 * pointers (a removal moves the last entry into the hole), at most
 * max_entries / REF_TABLE_STRIPES entries. A full stripe first sweeps (the
 * caller's drop_if_gone drops what it no longer needs, such as weak
 * references whose object died), at most once per quarter of its size of
 * puts since its last sweep, so a stripe that stays full costs a few drop
 * checks per put, not a sweep each; then refuses (the caller must cope).
 * Pure C: the pointers are the caller's.
 */
#ifndef HPROF_REF_TABLE_H
#define HPROF_REF_TABLE_H

#include <pthread.h>
#include <stdint.h>

#include "idmap.h"

#define REF_TABLE_STRIPES 64

typedef struct ref_stripe {
    pthread_mutex_t lock;
    idmap     index;          /* key -> position + 1 in keys/refs */
    uint64_t *keys;
    void    **refs;
    uint32_t  count, capacity, max;
    uint32_t  puts_since_sweep;
    int       swept;          /* it has swept once */
} ref_stripe;

typedef struct ref_table {
    ref_stripe stripes[REF_TABLE_STRIPES];
} ref_table;

/* 1 if the caller dropped ref (it is then removed), 0 to keep it. */
typedef int (*ref_drop_fn)(void *ref, void *ctx);

void ref_table_init(ref_table *t, uint32_t max_entries);
/* Every entry handed to drop (its result ignored), the memory freed. */
void ref_table_free(ref_table *t, ref_drop_fn drop, void *ctx);

/* The key's stripe, locked; every ref_stripe_ call below needs it locked. */
ref_stripe *ref_table_lock(ref_table *t, uint64_t key);
void ref_table_unlock(ref_stripe *s);

/* The pointer under key, NULL if none. */
void *ref_stripe_get(const ref_stripe *s, uint64_t key);
/* Store ref under key (ref not NULL). 0 stored, 1 the key was there (its
 * pointer kept: the caller keeps ref), -1 full (after a due sweep) or out
 * of memory. */
int ref_stripe_put(ref_stripe *s, uint64_t key, void *ref, ref_drop_fn drop_if_gone, void *ctx);
/* 0 if a put now would be refused without a sweep being due (the stripe
 * is full): the caller need not make the pointer. */
int ref_stripe_may_put(const ref_stripe *s);
/* Remove key: its pointer, NULL if none. */
void *ref_stripe_take(ref_stripe *s, uint64_t key);

/* Entries in all stripes (locks each in turn). */
uint64_t ref_table_count(ref_table *t);

#endif
