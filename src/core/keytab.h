/*
 * keytab: an interning table from byte-string keys to dense indexes.
 *
 * Every table of the profiler (strings, classes, methods, frames, traces,
 * threads) needs the same thing: "give me the stable number of this key,
 * creating it if new". keytab does exactly that and nothing else; the typed
 * tables in tables.c keep their payload in parallel arrays indexed by the
 * dense index, and turn the index into an HPROF serial number.
 *
 * Properties:
 *  - indexes are dense, start at 0 and never change (serial = base + index);
 *  - keys are copied into the table, so callers may pass stack buffers;
 *    a stored key never moves, so a pointer from keytab_key stays valid
 *    (and its bytes unchanged) until keytab_free, even after the owner's
 *    lock is dropped;
 *  - bounded: at most `max_entries` keys; keytab_intern returns
 *    KEYTAB_FULL past that, and callers count what they could not record;
 *  - not thread-safe by itself and never used from a signal handler:
 *    the owning table serialises access with its own mutex.
 */
#ifndef HPROF_KEYTAB_H
#define HPROF_KEYTAB_H

#include <stddef.h>
#include <stdint.h>

#define KEYTAB_FULL   UINT32_MAX   /* returned when max_entries is reached or memory ran out */

typedef struct keytab {
    uint32_t   count;        /* keys stored; also the next index */
    uint32_t   max_entries;  /* hard bound on count */
    uint32_t   bucket_mask;  /* buckets - 1; buckets is a power of two */
    uint32_t  *buckets;      /* index + 1 of the entry, 0 = empty (open addressing) */
    uint32_t  *hashes;       /* hash of each entry, by index */
    const char **keys;       /* each entry's key, by index; never moves once stored */
    uint32_t  *key_lengths;  /* length of each key, by index */
    uint32_t   entries_cap;  /* allocated length of the by-index arrays */
    struct keytab_chunk *chunks;  /* arena holding the key bytes */
    size_t     chunk_used;   /* bytes used in chunks (the newest chunk) */
    size_t     chunk_bytes;  /* bytes malloc'ed for all chunks, headers included */
} keytab;

void     keytab_init(keytab *t, uint32_t max_entries);
void     keytab_free(keytab *t);

/* Index of `key`, adding it if absent. *created (may be NULL) tells which. */
uint32_t keytab_intern(keytab *t, const void *key, uint32_t len, int *created);
/* Index of `key` or KEYTAB_FULL if absent. */
uint32_t keytab_find(const keytab *t, const void *key, uint32_t len);
/* The stored key of an index (not NUL-terminated unless the caller stored a NUL). */
const void *keytab_key(const keytab *t, uint32_t index, uint32_t *len);

uint32_t keytab_hash(const void *key, uint32_t len);

/* Bytes malloc'ed by every keytab of the process right now (buckets, by-index
 * arrays, key arenas): the agent's interning tables, for `status`. Counted at
 * each allocation and free, not estimated; safe from any thread. */
size_t   keytab_bytes_held(void);

#endif
