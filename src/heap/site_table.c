/* site_table.c: see site_table.h. */
#include "site_table.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)

typedef struct subsite {
    serial_t         trace, class_serial;
    stack_id         stack;          /* whole stack (0: not kept) */
    uint64_t         size;
    _Atomic uint64_t allocs, frees;
    uint64_t         seen;           /* live objects found by the last census */
} subsite;

/* A subsite_t is the subsite's number (1, 2, ...) in its low 30 bits
 * (SUBSITE_MAX) and, above them, the reset it was handed out after (the
 * epoch, modulo 4). A reset zeroes every subsite's counts in place and keeps
 * them for the same sites, so that resets (one per loop= period) do not make
 * the table grow; the epoch bits tell the census which objects were tracked
 * before the reset (the object store keeps the few in chunks threads were
 * filling) so that they are not counted live again. */
#define EPOCH_SHIFT 30
#define EPOCH_MASK  3u

static uint32_t number_of(subsite_t s)
{
    return s & SUBSITE_MAX;
}

static struct {
    pthread_mutex_t   lock;          /* guards interning: slots, count, chunk creation */
    subsite *_Atomic *chunks;        /* chunk i holds subsites i*CHUNK_SIZE .. ; read without the lock */
    uint32_t          max_chunks;
    uint32_t          max_subsites;
    _Atomic uint32_t  count;         /* subsites made; numbers are 1..count */
    uint32_t         *slots;         /* open addressing: subsite numbers, 0 = empty */
    uint32_t          slot_mask;
    _Atomic uint64_t  lost;
    int               census;        /* site_census_begin ran: rows use `seen` for live */
    _Atomic uint32_t  epoch;         /* resets so far (its low bits are in every subsite_t handed out) */
    _Atomic uint32_t  generation;    /* bumped by init, free and reset: threads' caches go stale */
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Each thread's last subsites, by key: most allocations repeat a few sites,
 * and the table's lock is every allocating thread's (8 threads of an SQL
 * database spent about 4% of their CPU waiting for it). An entry is good
 * while the table's generation has not moved: a reset makes subsites anew. */
#define TCACHE_SIZE 256
typedef struct tcache_entry {
    serial_t  trace, class_serial;
    stack_id  stack;
    uint64_t  size;
    subsite_t subsite;
    uint32_t  generation;
} tcache_entry;
/* Allocated at a thread's first interning (static TLS has no room for 8 KB
 * in a library loaded at run time), freed by site_table_thread_end. */
static __thread tcache_entry *tcache;

void site_table_thread_end(void)
{
    free(tcache);
    tcache = NULL;
}

static subsite *subsite_at(subsite_t s)
{
    uint32_t n = number_of(s);
    if (n == 0 || table.chunks == NULL || n > atomic_load_explicit(&table.count, memory_order_acquire))
        return NULL;
    subsite *chunk = atomic_load_explicit(&table.chunks[(n - 1) >> CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[(n - 1) & (CHUNK_SIZE - 1)] : NULL;
}

int site_table_init(uint32_t max_subsites)
{
    site_table_free();
    if (max_subsites == 0 || max_subsites > SUBSITE_MAX)
        max_subsites = SUBSITE_MAX;
    table.max_subsites = max_subsites;
    table.max_chunks = (max_subsites + CHUNK_SIZE - 1) / CHUNK_SIZE;
    table.chunks = calloc(table.max_chunks, sizeof *table.chunks);
    table.slot_mask = 1023;
    table.slots = calloc(table.slot_mask + 1, sizeof *table.slots);
    if (table.chunks == NULL || table.slots == NULL) {
        site_table_free();
        return -1;
    }
    return 0;
}

size_t site_table_bytes(void)
{
    pthread_mutex_lock(&table.lock);
    size_t bytes = 0;
    if (table.chunks) {
        bytes += (size_t)table.max_chunks * sizeof *table.chunks;
        for (uint32_t i = 0; i < table.max_chunks; i++)
            if (atomic_load(&table.chunks[i]))
                bytes += (size_t)CHUNK_SIZE * sizeof(subsite);
    }
    if (table.slots)
        bytes += ((size_t)table.slot_mask + 1) * sizeof *table.slots;
    pthread_mutex_unlock(&table.lock);
    return bytes;
}

void site_table_free(void)
{
    if (table.chunks)
        for (uint32_t i = 0; i < table.max_chunks; i++)
            free(atomic_load(&table.chunks[i]));
    free(table.chunks);
    free(table.slots);
    table.chunks = NULL;
    table.slots = NULL;
    table.max_chunks = 0;
    atomic_store(&table.count, 0);
    atomic_store(&table.lost, 0);
    table.census = 0;
    table.epoch = 0;
    atomic_fetch_add(&table.generation, 1);
}

static uint32_t hash_key(serial_t trace, stack_id stack, serial_t class_serial, uint64_t size)
{
    uint64_t h = (uint64_t)trace * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)stack * 0x94D049BB133111EBull;
    h ^= (uint64_t)class_serial * 0xC2B2AE3D27D4EB4Full;
    h ^= size * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* Doubles the slot array (lock held); -1 if out of memory. */
static int grow_slots(void)
{
    uint32_t mask = table.slot_mask * 2 + 1;
    uint32_t *slots = calloc((size_t)mask + 1, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (uint32_t i = 0; i <= table.slot_mask; i++) {
        uint32_t s = table.slots[i];
        if (s == 0)
            continue;
        subsite *e = subsite_at(s);
        uint32_t j = hash_key(e->trace, e->stack, e->class_serial, e->size) & mask;
        while (slots[j])
            j = (j + 1) & mask;
        slots[j] = s;
    }
    free(table.slots);
    table.slots = slots;
    table.slot_mask = mask;
    return 0;
}

static subsite_t intern_locked(uint32_t hash, serial_t trace, stack_id stack, serial_t class_serial,
                               uint64_t size);

/* Subsite number n as handed out now. */
static subsite_t handle_of(uint32_t n)
{
    return n ? n | ((atomic_load_explicit(&table.epoch, memory_order_relaxed) & EPOCH_MASK) << EPOCH_SHIFT) : 0;
}

/* Handed out since the last reset? */
static int current(subsite_t s)
{
    return (s >> EPOCH_SHIFT) == (atomic_load_explicit(&table.epoch, memory_order_relaxed) & EPOCH_MASK);
}

subsite_t site_intern(serial_t trace, stack_id stack, serial_t class_serial, uint64_t size)
{
    if (table.slots == NULL)
        return 0;
    uint32_t hash = hash_key(trace, stack, class_serial, size);
    /* Generation 0 is never current (init bumps it), so a zeroed entry misses. */
    uint32_t generation = atomic_load_explicit(&table.generation, memory_order_acquire);
    if (tcache == NULL)
        tcache = calloc(TCACHE_SIZE, sizeof *tcache);     /* if NULL: no cache, the lock each time */
    tcache_entry *c = tcache ? &tcache[hash & (TCACHE_SIZE - 1)] : NULL;
    if (c && c->generation == generation && c->trace == trace && c->stack == stack &&
        c->class_serial == class_serial && c->size == size)
        return c->subsite;
    subsite_t made = intern_locked(hash, trace, stack, class_serial, size);
    if (made && c)
        *c = (tcache_entry){ trace, class_serial, stack, size, made, generation };
    return made;
}

static subsite_t intern_locked(uint32_t hash, serial_t trace, stack_id stack, serial_t class_serial,
                               uint64_t size)
{
    pthread_mutex_lock(&table.lock);
    uint32_t j = hash & table.slot_mask;
    for (uint32_t s; (s = table.slots[j]) != 0; j = (j + 1) & table.slot_mask) {
        subsite *e = subsite_at(s);
        if (e->trace == trace && e->stack == stack && e->class_serial == class_serial && e->size == size) {
            pthread_mutex_unlock(&table.lock);
            return handle_of(s);
        }
    }
    subsite_t made = 0;
    uint32_t n = atomic_load(&table.count);
    if (n >= table.max_subsites)
        goto out;
    uint32_t chunk = n >> CHUNK_BITS;                    /* the new subsite n+1 goes at index n */
    if (atomic_load(&table.chunks[chunk]) == NULL) {
        subsite *mem = calloc(CHUNK_SIZE, sizeof *mem);
        if (mem == NULL)
            goto out;
        atomic_store_explicit(&table.chunks[chunk], mem, memory_order_release);
    }
    subsite *e = &atomic_load(&table.chunks[chunk])[n & (CHUNK_SIZE - 1)];
    e->trace = trace;
    e->stack = stack;
    e->class_serial = class_serial;
    e->size = size;
    made = n + 1;
    table.slots[j] = made;
    atomic_store_explicit(&table.count, made, memory_order_release);
    /* Keep the load under one half so that probes stay short. */
    if ((uint64_t)made * 2 > table.slot_mask && grow_slots() != 0) {
        /* Still correct, only slower: the table fills up before failing. */
    }
out:
    pthread_mutex_unlock(&table.lock);
    return handle_of(made);
}

void site_count_alloc(subsite_t s)
{
    subsite *e = subsite_at(s);
    if (e)
        atomic_fetch_add_explicit(&e->allocs, 1, memory_order_relaxed);
}

/* An object from before the last reset is not counted (see EPOCH_SHIFT). */
void site_count_free(subsite_t s)
{
    subsite *e = current(s) ? subsite_at(s) : NULL;
    if (e)
        atomic_fetch_add_explicit(&e->frees, 1, memory_order_relaxed);
}

int site_get(subsite_t s, serial_t *trace, serial_t *class_serial, uint64_t *size)
{
    subsite *e = subsite_at(s);
    if (e == NULL)
        return -1;
    if (trace) *trace = e->trace;
    if (class_serial) *class_serial = e->class_serial;
    if (size) *size = e->size;
    return 0;
}

void site_census_begin(void)
{
    uint32_t n = atomic_load(&table.count);
    for (subsite_t s = 1; s <= n; s++)
        subsite_at(s)->seen = 0;
    table.census = 1;
}

void site_census_add(subsite_t s)
{
    subsite *e = current(s) ? subsite_at(s) : NULL;
    if (e)
        e->seen++;
}

uint32_t site_subsite_count(void) { return atomic_load(&table.count); }
void     site_count_lost(uint64_t n) { atomic_fetch_add(&table.lost, n); }
uint64_t site_lost(void) { return atomic_load(&table.lost); }

/* Every subsite's counts zeroed in place, the same subsites kept for the
 * same sites (the table does not grow at each reset), and the epoch moved on:
 * objects tracked before keep their handles, which the census and frees now
 * ignore, so after a reset "allocated" and "live" both count only objects
 * allocated since. An increment racing with the zeroing may be lost. */
void site_table_reset(void)
{
    pthread_mutex_lock(&table.lock);
    atomic_fetch_add(&table.epoch, 1);
    atomic_fetch_add(&table.generation, 1);
    uint32_t n = atomic_load(&table.count);
    for (uint32_t k = 1; k <= n; k++) {
        subsite *e = subsite_at(k);
        atomic_store_explicit(&e->allocs, 0, memory_order_relaxed);
        atomic_store_explicit(&e->frees, 0, memory_order_relaxed);
        e->seen = 0;
    }
    atomic_store(&table.lost, 0);
    pthread_mutex_unlock(&table.lock);
}

double site_sample_weight(uint64_t size, uint64_t sample_interval)
{
    if (sample_interval == 0 || size == 0)
        return 1.0;
    /* -expm1(-x) = 1 - e^-x without cancellation for small objects. */
    double p = -expm1(-(double)size / (double)sample_interval);
    return p > 0.0 ? 1.0 / p : 1.0;
}

static int row_order(const void *pa, const void *pb)
{
    const site_row *a = pa, *b = pb;
    if (a->live_bytes != b->live_bytes) return a->live_bytes > b->live_bytes ? -1 : 1;
    if (a->alloc_bytes != b->alloc_bytes) return a->alloc_bytes > b->alloc_bytes ? -1 : 1;
    if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
    if (a->class_serial != b->class_serial) return a->class_serial < b->class_serial ? -1 : 1;
    return 0;
}

static int key_order(const void *pa, const void *pb)
{
    const site_row *a = pa, *b = pb;
    if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
    if (a->class_serial != b->class_serial) return a->class_serial < b->class_serial ? -1 : 1;
    return 0;
}

/* One row per subsite counted since the last reset, weighted (see
 * site_rows); *n rows, malloc'ed. NULL when out of memory. */
static site_row *weighted_subsites(uint64_t sample_interval, uint32_t *n_out)
{
    uint32_t n = atomic_load_explicit(&table.count, memory_order_acquire);
    site_row *rows = malloc(((size_t)n + 1) * sizeof *rows);
    if (rows == NULL)
        return NULL;
    uint32_t k = 0;
    for (subsite_t s = 1; s <= n; s++) {
        subsite *e = subsite_at(s);
        uint64_t allocs = atomic_load_explicit(&e->allocs, memory_order_relaxed);
        uint64_t frees = atomic_load_explicit(&e->frees, memory_order_relaxed);
        if (allocs == 0)
            continue;
        /* A free counted before its allocation (another thread's increment
         * not yet visible) must not make "live" wrap around. */
        uint64_t live = table.census ? (e->seen < allocs ? e->seen : allocs) : frees < allocs ? allocs - frees : 0;
        double w = site_sample_weight(e->size, sample_interval);
        site_row r = { .trace = e->trace, .class_serial = e->class_serial, .stack = e->stack };
        r.alloc_objs = (uint64_t)llround((double)allocs * w);
        r.live_objs = (uint64_t)llround((double)live * w);
        r.alloc_bytes = r.alloc_objs * e->size;
        r.live_bytes = r.live_objs * e->size;
        rows[k++] = r;
    }
    *n_out = k;
    return rows;
}

int site_stack_rows(uint64_t sample_interval, site_row **rows, uint32_t *n)
{
    *rows = weighted_subsites(sample_interval, n);
    return *rows ? 0 : -1;
}

void site_rows_merge(site_row *rows, uint32_t *n, site_row *totals)
{
    memset(totals, 0, sizeof *totals);
    /* Subsites of one (trace, class) merged: sizes, and whole stacks. */
    qsort(rows, *n, sizeof *rows, key_order);
    uint32_t m = 0;
    for (uint32_t i = 0; i < *n; i++) {
        if (m > 0 && key_order(&rows[m - 1], &rows[i]) == 0) {
            rows[m - 1].live_bytes += rows[i].live_bytes;
            rows[m - 1].live_objs += rows[i].live_objs;
            rows[m - 1].alloc_bytes += rows[i].alloc_bytes;
            rows[m - 1].alloc_objs += rows[i].alloc_objs;
        } else {
            rows[m] = rows[i];
            rows[m++].stack = 0;
        }
    }
    for (uint32_t i = 0; i < m; i++) {
        totals->live_bytes += rows[i].live_bytes;
        totals->live_objs += rows[i].live_objs;
        totals->alloc_bytes += rows[i].alloc_bytes;
        totals->alloc_objs += rows[i].alloc_objs;
    }
    qsort(rows, m, sizeof *rows, row_order);
    *n = m;
}

int site_rows(uint64_t sample_interval, site_row **rows, uint32_t *n, site_row *totals)
{
    if (site_stack_rows(sample_interval, rows, n) != 0)
        return -1;
    site_rows_merge(*rows, n, totals);
    return 0;
}
