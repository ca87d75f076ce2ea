/* keytab.c: see keytab.h. Open addressing with linear probing, load <= 1/2;
 * key bytes live in an arena of chunks that never move. */
#include "keytab.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (64 * 1024)

struct keytab_chunk {
    struct keytab_chunk *next;
    size_t size;
    char bytes[];
};

/* FNV-1a, then a final mix: short keys (pointers, a few serials) dominate.
 * The table re-checks whole keys, so a weak hash costs time, not truth. */
uint32_t keytab_hash(const void *key, uint32_t len)
{
    const unsigned char *p = key;
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    h ^= h >> 15;
    h *= 0x2c1b3c6dU;
    h ^= h >> 12;
    return h;
}

/* Bytes every keytab of the process holds (keytab_bytes_held, for `status`
 * and AGENT MEMORY): one count for all, so a process-wide static. */
static _Atomic size_t bytes_held;

size_t keytab_bytes_held(void)
{
    return atomic_load_explicit(&bytes_held, memory_order_relaxed);
}

/* What t holds now; each allocating call adds the difference it made. A
 * by-index realloc that failed midway may leave one array a step larger than
 * entries_cap says until the next growth: at most 12 bytes an entry unseen. */
static size_t footprint(const keytab *t)
{
    size_t buckets = t->buckets ? ((size_t)t->bucket_mask + 1) * sizeof *t->buckets : 0;
    size_t by_index = (size_t)t->entries_cap * (sizeof *t->hashes + sizeof *t->keys + sizeof *t->key_lengths);
    return buckets + by_index + t->chunk_bytes;
}

void keytab_init(keytab *t, uint32_t max_entries)
{
    memset(t, 0, sizeof *t);
    t->max_entries = max_entries;
}

void keytab_free(keytab *t)
{
    atomic_fetch_sub_explicit(&bytes_held, footprint(t), memory_order_relaxed);
    struct keytab_chunk *c = t->chunks;
    while (c) {
        struct keytab_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(t->buckets);
    free(t->hashes);
    free(t->keys);
    free(t->key_lengths);
    memset(t, 0, sizeof *t);
}

static int key_equals(const keytab *t, uint32_t index, const void *key, uint32_t len)
{
    return t->key_lengths[index] == len && memcmp(t->keys[index], key, len) == 0;
}

uint32_t keytab_find(const keytab *t, const void *key, uint32_t len)
{
    if (t->buckets == NULL)
        return KEYTAB_FULL;
    uint32_t h = keytab_hash(key, len);
    for (uint32_t b = h & t->bucket_mask;; b = (b + 1) & t->bucket_mask) {
        uint32_t slot = t->buckets[b];
        if (slot == 0)
            return KEYTAB_FULL;
        if (t->hashes[slot - 1] == h && key_equals(t, slot - 1, key, len))
            return slot - 1;
    }
}

static int rehash(keytab *t, uint32_t nbuckets)
{
    uint32_t *nb = calloc(nbuckets, sizeof *nb);
    if (nb == NULL)
        return -1;
    uint32_t mask = nbuckets - 1;
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t b = t->hashes[i] & mask;
        while (nb[b] != 0)
            b = (b + 1) & mask;
        nb[b] = i + 1;
    }
    free(t->buckets);
    t->buckets = nb;
    t->bucket_mask = mask;
    return 0;
}

static int grow_entries(keytab *t)
{
    uint32_t ncap = t->entries_cap ? t->entries_cap * 2 : 64;
    uint32_t *h = realloc(t->hashes, ncap * sizeof *h);
    if (h == NULL) return -1;
    t->hashes = h;
    const char **k = realloc(t->keys, ncap * sizeof *k);
    if (k == NULL) return -1;
    t->keys = k;
    uint32_t *l = realloc(t->key_lengths, ncap * sizeof *l);
    if (l == NULL) return -1;
    t->key_lengths = l;
    t->entries_cap = ncap;
    return 0;
}

/* Room for len bytes in the arena; a key longer than a chunk gets a chunk of its own. */
static char *arena_alloc(keytab *t, size_t len)
{
    /* 8-byte alignment: trace keys are read back as arrays of uint32_t/uint64_t. */
    t->chunk_used = (t->chunk_used + 7) & ~(size_t)7;
    if (t->chunks == NULL || t->chunk_used + len > t->chunks->size) {
        size_t size = len > CHUNK_SIZE ? len : CHUNK_SIZE;
        struct keytab_chunk *c = malloc(sizeof *c + size);
        if (c == NULL)
            return NULL;
        c->size = size;
        t->chunk_bytes += sizeof *c + size;
        c->next = t->chunks;
        t->chunks = c;
        t->chunk_used = 0;
    }
    char *p = t->chunks->bytes + t->chunk_used;
    t->chunk_used += len;
    return p;
}

static uint32_t intern(keytab *t, const void *key, uint32_t len, int *created);

uint32_t keytab_intern(keytab *t, const void *key, uint32_t len, int *created)
{
    size_t before = footprint(t);
    uint32_t index = intern(t, key, len, created);
    size_t after = footprint(t);
    if (after != before)    /* tables only grow until keytab_free */
        atomic_fetch_add_explicit(&bytes_held, after - before, memory_order_relaxed);
    return index;
}

static uint32_t intern(keytab *t, const void *key, uint32_t len, int *created)
{
    if (created)
        *created = 0;
    uint32_t found = keytab_find(t, key, len);
    if (found != KEYTAB_FULL)
        return found;
    if (t->count >= t->max_entries || t->count >= UINT32_MAX / 4)
        return KEYTAB_FULL;

    /* Keep the load factor at most 1/2 so probes stay short. */
    if (t->buckets == NULL || (uint64_t)(t->count + 1) * 2 > (uint64_t)t->bucket_mask + 1) {
        uint32_t nbuckets = t->buckets ? (t->bucket_mask + 1) * 2 : 128;
        if (rehash(t, nbuckets) != 0)
            return KEYTAB_FULL;
    }
    if (t->count == t->entries_cap && grow_entries(t) != 0)
        return KEYTAB_FULL;
    char *stored = arena_alloc(t, len ? len : 1);
    if (stored == NULL)
        return KEYTAB_FULL;
    if (len)
        memcpy(stored, key, len);

    uint32_t index = t->count++;
    uint32_t h = keytab_hash(key, len);
    t->keys[index] = stored;
    t->key_lengths[index] = len;
    t->hashes[index] = h;

    uint32_t b = h & t->bucket_mask;
    while (t->buckets[b] != 0)
        b = (b + 1) & t->bucket_mask;
    t->buckets[b] = index + 1;
    if (created)
        *created = 1;
    return index;
}

const void *keytab_key(const keytab *t, uint32_t index, uint32_t *len)
{
    if (index >= t->count)
        return NULL;
    if (len)
        *len = t->key_lengths[index];
    return t->keys[index];
}
