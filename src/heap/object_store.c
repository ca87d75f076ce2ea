/* object_store: see object_store.h. */
#include "object_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Past this many unswept entries (about 75 MB with their OopStorage slots),
 * a thread retiring a chunk sweeps a few itself. */
#define YOUNG_HELP  (4u << 20)
#define HELP_CHUNKS 4
/* Old chunks are swept again when they hold twice their entries after the
 * last such sweep, plus this many. */
#define OLD_SLACK   (1u << 20)

/* A handle is kept as a 32-bit offset, in HANDLE_ALIGN units, from its
 * chunk's base (the first handle written to it): 8 bytes an entry instead
 * of 12. HotSpot's weak handles are 8-byte slots of OopStorage blocks
 * (malloc'ed), tagged alike in their low bit, so any two differ by a
 * multiple of 8, and the offset reaches +-16 GB. A handle that does not fit
 * (only seen with made-up handles) starts a new chunk. */
#define HANDLE_ALIGN 8

typedef struct store_chunk {
    struct store_chunk *next, *prev;     /* active list: both; young and old: next */
    atomic_uint used;                    /* entries written; published with release */
    unsigned    stamp;                   /* GCs seen when retired */
    uintptr_t   base;                    /* set with the first entry */
    int32_t     offset[OBJECT_STORE_CHUNK];
    subsite_t   subsite[OBJECT_STORE_CHUNK];
} store_chunk;

static struct {
    pthread_mutex_t lock;           /* active, young and their counts */
    pthread_mutex_t sweep_lock;     /* old and fill: one sweeper at a time */
    store_chunk    *active;         /* chunks threads are filling */
    store_chunk    *young, *young_tail;  /* retired, oldest first */
    size_t          young_entries;
    store_chunk    *old;            /* chunks of entries that survived a sweep: full
                                       unless a handle did not fit (see pack) */
    store_chunk    *fill;           /* survivors being packed; not full */
    atomic_size_t   old_entries;    /* in old and fill */
    size_t          old_base;       /* old_entries after the last sweep of old */
    unsigned        old_swept_at;   /* GCs seen then */
    atomic_uint     gcs;
    atomic_uint     generation;     /* object_store_free: threads' chunks forgotten */
    atomic_size_t   chunks, released;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER, .sweep_lock = PTHREAD_MUTEX_INITIALIZER };

static __thread store_chunk *mine;
static __thread unsigned     mine_generation;

static unsigned used_of(store_chunk *c)
{
    return atomic_load_explicit(&c->used, memory_order_acquire);
}

static void *handle_at(const store_chunk *c, unsigned i)
{
    return (void *)(c->base + (uintptr_t)((intptr_t)c->offset[i] * HANDLE_ALIGN));
}

/* 1 if handle fits in c, its offset in *offset; an empty chunk takes any
 * handle as its base. */
static int offset_in(store_chunk *c, unsigned used, void *handle, int32_t *offset)
{
    if (used == 0)
        c->base = (uintptr_t)handle;
    intptr_t d = (intptr_t)((uintptr_t)handle - c->base);  /* two's complement difference */
    if (d % HANDLE_ALIGN != 0 || d / HANDLE_ALIGN < INT32_MIN || d / HANDLE_ALIGN > INT32_MAX)
        return 0;
    *offset = (int32_t)(d / HANDLE_ALIGN);
    return 1;
}

static store_chunk *chunk_new(void)
{
    store_chunk *c = malloc(sizeof *c);
    if (c == NULL)
        return NULL;
    c->next = c->prev = NULL;
    atomic_init(&c->used, 0);
    c->stamp = 0;
    c->base = 0;
    atomic_fetch_add(&st.chunks, 1);
    return c;
}

static void chunk_free(store_chunk *c)
{
    free(c);
    atomic_fetch_sub(&st.chunks, 1);
}

/* ------------------------------------------------------------ sweeping */

/* Releases c's dead entries and moves the rest to its front (sweep_lock). */
static void compact(store_chunk *c, const object_store_ops *ops, void *ctx)
{
    unsigned n = used_of(c), kept = 0;
    size_t released = 0;
    for (unsigned i = 0; i < n; i++) {
        void *h = handle_at(c, i);
        if (ops->dead(ctx, h)) {
            ops->release(ctx, h);
            released++;
            continue;
        }
        c->offset[kept] = c->offset[i];          /* same chunk, same base */
        c->subsite[kept] = c->subsite[i];
        kept++;
    }
    atomic_store_explicit(&c->used, kept, memory_order_relaxed);
    atomic_fetch_add(&st.released, released);
}

/* fill joins the old list, full or not. */
static void close_fill(void)
{
    st.fill->next = st.old;
    st.old = st.fill;
    st.fill = NULL;
}

/* A compacted chunk's entries join the old ones, packed densely: they fill
 * up `fill`, and what is left of c becomes the next fill. No allocation,
 * so a sweep cannot fail (sweep_lock). An entry whose handle does not fit
 * fill's base (never with HotSpot's handles) closes fill early. */
static void pack(store_chunk *c)
{
    unsigned n = used_of(c);
    atomic_fetch_add(&st.old_entries, n);
    if (n == 0) {
        chunk_free(c);
        return;
    }
    if (st.fill == NULL) {
        st.fill = c;
        return;
    }
    unsigned f = used_of(st.fill), moved = 0;
    while (f < OBJECT_STORE_CHUNK && moved < n) {
        unsigned from = n - 1 - moved;
        int32_t offset;
        if (!offset_in(st.fill, f, handle_at(c, from), &offset))
            break;
        st.fill->offset[f] = offset;
        st.fill->subsite[f] = c->subsite[from];
        f++;
        moved++;
    }
    atomic_store_explicit(&st.fill->used, f, memory_order_relaxed);
    atomic_store_explicit(&c->used, n - moved, memory_order_relaxed);
    if (moved == n) {
        chunk_free(c);
        if (f == OBJECT_STORE_CHUNK)
            close_fill();
    } else {
        close_fill();                    /* full, or the next entry does not fit */
        st.fill = c;
    }
}

/* The oldest young chunk if `all` or retired before the last GC (lock). */
static store_chunk *young_take(int all)
{
    store_chunk *c = st.young;
    if (c == NULL || (!all && c->stamp == atomic_load_explicit(&st.gcs, memory_order_relaxed)))
        return NULL;
    st.young = c->next;
    if (st.young == NULL)
        st.young_tail = NULL;
    st.young_entries -= used_of(c);
    c->next = NULL;
    return c;
}

/* Sweeps up to max young chunks retired before the last GC (sweep_lock). */
static void sweep_young(const object_store_ops *ops, void *ctx, size_t max)
{
    for (size_t k = 0; k < max; k++) {
        pthread_mutex_lock(&st.lock);
        store_chunk *c = young_take(0);
        pthread_mutex_unlock(&st.lock);
        if (c == NULL)
            return;
        compact(c, ops, ctx);
        pack(c);
    }
}

/* Every old entry checked again (sweep_lock). */
static void sweep_old(const object_store_ops *ops, void *ctx)
{
    store_chunk *list = st.old, *fill = st.fill;
    st.old = st.fill = NULL;
    atomic_store(&st.old_entries, 0);
    if (fill) {
        fill->next = list;
        list = fill;
    }
    while (list) {
        store_chunk *c = list;
        list = c->next;
        c->next = NULL;
        compact(c, ops, ctx);
        pack(c);
    }
    st.old_base = atomic_load(&st.old_entries);
}

size_t object_store_sweep(const object_store_ops *ops, void *ctx)
{
    pthread_mutex_lock(&st.sweep_lock);
    size_t before = atomic_load(&st.released);
    sweep_young(ops, ctx, SIZE_MAX);
    unsigned gcs = atomic_load(&st.gcs);
    if (gcs != st.old_swept_at && atomic_load(&st.old_entries) > 2 * st.old_base + OLD_SLACK) {
        sweep_old(ops, ctx);
        st.old_swept_at = gcs;
    }
    size_t released = atomic_load(&st.released) - before;
    pthread_mutex_unlock(&st.sweep_lock);
    return released;
}

void object_store_gc_done(void)
{
    atomic_fetch_add_explicit(&st.gcs, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ adding */

static store_chunk *my_chunk(void)
{
    if (mine && mine_generation != atomic_load_explicit(&st.generation, memory_order_relaxed))
        mine = NULL;
    return mine;
}

/* c leaves the active list for the young one, or is freed if empty (lock). */
static void retire(store_chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        st.active = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
    unsigned n = used_of(c);
    if (n == 0) {
        chunk_free(c);
        return;
    }
    c->stamp = atomic_load_explicit(&st.gcs, memory_order_relaxed);
    if (st.young_tail)
        st.young_tail->next = c;
    else
        st.young = c;
    st.young_tail = c;
    st.young_entries += n;
}

int object_store_add(const object_store_ops *ops, void *ctx, void *handle, subsite_t s)
{
    store_chunk *c = my_chunk();
    unsigned u = c ? atomic_load_explicit(&c->used, memory_order_relaxed) : 0;
    int32_t offset = 0;
    if (c == NULL || u == OBJECT_STORE_CHUNK || !offset_in(c, u, handle, &offset)) {
        store_chunk *fresh = chunk_new();
        pthread_mutex_lock(&st.lock);
        if (c)
            retire(c);
        if (fresh) {
            fresh->next = st.active;
            if (st.active)
                st.active->prev = fresh;
            st.active = fresh;
        }
        int behind = st.young_entries > YOUNG_HELP && st.young &&
                     st.young->stamp != atomic_load_explicit(&st.gcs, memory_order_relaxed);
        pthread_mutex_unlock(&st.lock);
        mine = c = fresh;
        mine_generation = atomic_load_explicit(&st.generation, memory_order_relaxed);
        if (behind && pthread_mutex_trylock(&st.sweep_lock) == 0) {
            sweep_young(ops, ctx, HELP_CHUNKS);
            pthread_mutex_unlock(&st.sweep_lock);
        }
        if (c == NULL)
            return -1;
        u = 0;
        offset_in(c, 0, handle, &offset);    /* the base: offset 0 */
    }
    c->offset[u] = offset;
    c->subsite[u] = s;
    atomic_store_explicit(&c->used, u + 1, memory_order_release);
    return 0;
}

void object_store_thread_end(void)
{
    store_chunk *c = my_chunk();
    if (c == NULL)
        return;
    pthread_mutex_lock(&st.lock);
    retire(c);
    pthread_mutex_unlock(&st.lock);
    mine = NULL;
}

int object_store_recent(int (*match)(void *ctx, void *handle, subsite_t s), void *ctx, unsigned max)
{
    store_chunk *c = my_chunk();
    if (c == NULL)
        return 0;
    unsigned n = atomic_load_explicit(&c->used, memory_order_relaxed);
    for (unsigned i = n; i > 0 && n - i < max; i--)
        if (match(ctx, handle_at(c, i - 1), c->subsite[i - 1]))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ census, clear */

void object_store_each(const object_store_ops *ops, void *ctx,
                       void (*visit)(void *arg, void *handle, subsite_t s), void *arg)
{
    pthread_mutex_lock(&st.sweep_lock);
    /* The lock is held throughout, so that no chunk moves from the active
     * list to the young one while both are read; threads filling a chunk
     * wait at its end. They wait in native code, so a GC can still run. */
    pthread_mutex_lock(&st.lock);
    for (store_chunk *c; (c = young_take(1)) != NULL;) {
        compact(c, ops, ctx);
        pack(c);
    }
    sweep_old(ops, ctx);
    st.old_swept_at = atomic_load(&st.gcs);
    for (store_chunk *c = st.old; c; c = c->next)
        for (unsigned i = 0, n = used_of(c); i < n; i++)
            visit(arg, handle_at(c, i), c->subsite[i]);
    if (st.fill)
        for (unsigned i = 0, n = used_of(st.fill); i < n; i++)
            visit(arg, handle_at(st.fill, i), st.fill->subsite[i]);
    for (store_chunk *c = st.active; c; c = c->next)
        for (unsigned i = 0, n = used_of(c); i < n; i++)
            if (!ops->dead(ctx, handle_at(c, i)))
                visit(arg, handle_at(c, i), c->subsite[i]);
    pthread_mutex_unlock(&st.lock);
    pthread_mutex_unlock(&st.sweep_lock);
}

static void release_list(store_chunk *list, const object_store_ops *ops, void *ctx)
{
    while (list) {
        store_chunk *c = list;
        list = c->next;
        for (unsigned i = 0, n = used_of(c); i < n; i++)
            ops->release(ctx, handle_at(c, i));
        atomic_fetch_add(&st.released, used_of(c));
        chunk_free(c);
    }
}

void object_store_clear(const object_store_ops *ops, void *ctx)
{
    pthread_mutex_lock(&st.sweep_lock);
    pthread_mutex_lock(&st.lock);
    store_chunk *young = st.young;
    st.young = st.young_tail = NULL;
    st.young_entries = 0;
    pthread_mutex_unlock(&st.lock);
    release_list(young, ops, ctx);
    if (st.fill)
        close_fill();
    release_list(st.old, ops, ctx);
    st.old = NULL;
    atomic_store(&st.old_entries, 0);
    st.old_base = 0;
    pthread_mutex_unlock(&st.sweep_lock);
}

void object_store_free(const object_store_ops *ops, void *ctx)
{
    object_store_clear(ops, ctx);
    pthread_mutex_lock(&st.lock);
    store_chunk *active = st.active;
    st.active = NULL;
    atomic_fetch_add(&st.generation, 1);
    pthread_mutex_unlock(&st.lock);
    release_list(active, ops, ctx);
    mine = NULL;
}

object_store_stats object_store_stats_now(void)
{
    object_store_stats s = { 0, 0, 0, 0, 0 };
    pthread_mutex_lock(&st.lock);
    s.young_entries = st.young_entries;
    for (store_chunk *c = st.active; c; c = c->next)
        s.entries += used_of(c);
    pthread_mutex_unlock(&st.lock);
    s.entries += s.young_entries + atomic_load(&st.old_entries);
    s.chunks = atomic_load(&st.chunks);
    s.bytes = s.chunks * sizeof(store_chunk);
    s.released = atomic_load(&st.released);
    return s;
}
