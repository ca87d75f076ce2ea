/* object_store: see object_store.h. */
#include "object_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Past this many unswept entries (about 55 MB with their OopStorage slots),
 * a thread retiring a chunk sweeps a few itself. */
#define YOUNG_HELP  (4u << 20)
#define HELP_CHUNKS 4
/* Old chunks are swept again when they hold twice their entries after the
 * last such sweep, plus this many. */
#define OLD_SLACK   (1u << 20)

/* ------------------------------------------------------------ entries
 *
 * A chunk is a byte stream of entries, each two varints (7 bits a byte, low
 * group first): the zigzag-coded difference from the entry before of the
 * handle's slot (the handle shifted right by 3) and of the subsite. The
 * first entry's differences are from 0.
 *
 * Why: a young object holds its entry until the GC after it, and on
 * programs that allocate hundreds of MB between GCs that is most of what
 * the agent adds to the process (JDK 25, H2: about 6 million objects). As
 * fixed fields an entry was 12 bytes, then 8 (the handle as an offset from
 * the chunk's first one); here it is about 2-3. HotSpot's weak handles are
 * 8-byte slots of OopStorage blocks: one thread's handles are mostly a slot
 * or a few apart (one byte), and a thread's allocations in a row mostly
 * have subsites interned together (one or two bytes). Any handle can be
 * coded; one chunk's handles share their 3 low bits (HotSpot tags every
 * weak handle alike), and one that does not starts a new chunk.
 *
 * A stream is read from its start only. Removing entries (a sweep) and
 * moving them to the front of their chunk (packing) rewrite it in place:
 * the writer never overtakes the reader, because the varint of a sum of
 * differences is never longer than those of its terms together
 * (zigzag(a + b) <= zigzag(a) + zigzag(b) + 2 < 2^(7p+1) + 1 when the
 * longer term has p groups: at most p + 1 groups). */

#define ENTRY_MAX   15                  /* 10 bytes for a 64-bit difference, 5 for a 32-bit one */
#define CHUNK_BYTES (8192u - 64u)       /* a chunk's entries; with its header, 8 KB */
#define RECENT_STEP 256                 /* each thread's marks in its own chunk */

typedef struct store_chunk {
    struct store_chunk *next, *prev;     /* active list: both; young and old: next */
    atomic_uint bytes;                   /* of data written; published with release */
    atomic_uint entries;                 /* in those bytes */
    unsigned    stamp;                   /* GCs seen when retired */
    unsigned    tag;                     /* the low 3 bits of every handle here */
    uint64_t    last_slot;               /* the last entry's, to append after it */
    subsite_t   last_subsite;
    unsigned char data[CHUNK_BYTES];
} store_chunk;

_Static_assert(sizeof(store_chunk) <= 8192, "a chunk with its header is at most 8 KB");

static uint64_t zigzag(int64_t d)
{
    return ((uint64_t)d << 1) ^ (0 - ((uint64_t)d >> 63));
}

static int64_t unzigzag(uint64_t z)
{
    return (int64_t)((z >> 1) ^ (0 - (z & 1)));
}

static unsigned put_varint(unsigned char *p, uint64_t v)
{
    unsigned n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

static uint64_t get_varint(const unsigned char *p, unsigned *pos)
{
    uint64_t v = 0;
    unsigned shift = 0;
    unsigned char b;
    do {
        b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    return v;
}

/* (slot, s) after (last_slot, last_s) at p: its length. Slots are below
 * 2^61, so their difference is exact in 64 bits. */
static unsigned encode(unsigned char *p, uint64_t slot, subsite_t s, uint64_t last_slot, subsite_t last_s)
{
    unsigned n = put_varint(p, zigzag((int64_t)(slot - last_slot)));
    return n + put_varint(p + n, zigzag((int64_t)s - (int64_t)last_s));
}

/* Reads a chunk's entries in order. */
typedef struct cursor {
    const store_chunk *c;
    unsigned  pos, end;
    unsigned  index;                     /* entries read */
    uint64_t  slot;                      /* the entry just read */
    subsite_t subsite;
} cursor;

static void cursor_start(cursor *k, const store_chunk *c, unsigned end)
{
    k->c = c;
    k->pos = 0;
    k->end = end;
    k->index = 0;
    k->slot = 0;
    k->subsite = 0;
}

static int cursor_next(cursor *k)
{
    if (k->pos >= k->end)
        return 0;
    k->slot += (uint64_t)unzigzag(get_varint(k->c->data, &k->pos));
    k->subsite = (subsite_t)((int64_t)k->subsite + unzigzag(get_varint(k->c->data, &k->pos)));
    k->index++;
    return 1;
}

static void *cursor_handle(const cursor *k)
{
    return (void *)(uintptr_t)(k->slot << 3 | k->c->tag);
}

/* Rewrites a chunk from its front, in place (see above). */
typedef struct rewriter {
    store_chunk *c;
    unsigned     pos, entries;
    uint64_t     slot;
    subsite_t    subsite;
} rewriter;

static void rewrite_put(rewriter *w, uint64_t slot, subsite_t s)
{
    w->pos += encode(w->c->data + w->pos, slot, s, w->slot, w->subsite);
    w->slot = slot;
    w->subsite = s;
    w->entries++;
}

static void rewrite_end(rewriter *w)
{
    w->c->last_slot = w->slot;
    w->c->last_subsite = w->subsite;
    atomic_store_explicit(&w->c->entries, w->entries, memory_order_relaxed);
    atomic_store_explicit(&w->c->bytes, w->pos, memory_order_relaxed);
}

/* Appends (handle, s) to c's end: 1, or 0 when it does not fit (no room, or
 * another tag). Only the thread filling c, or the sweeper for `fill`. */
static int append(store_chunk *c, void *handle, subsite_t s)
{
    uintptr_t h = (uintptr_t)handle;
    unsigned n = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    if (n == 0) {
        c->tag = (unsigned)(h & 7);
        c->last_slot = 0;
        c->last_subsite = 0;
    } else if ((h & 7) != c->tag) {
        return 0;
    }
    unsigned char spare[ENTRY_MAX];
    unsigned char *p = n + ENTRY_MAX <= CHUNK_BYTES ? c->data + n : spare;
    unsigned len = encode(p, h >> 3, s, c->last_slot, c->last_subsite);
    if (p == spare) {
        if (n + len > CHUNK_BYTES)
            return 0;
        memcpy(c->data + n, spare, len);
    }
    c->last_slot = h >> 3;
    c->last_subsite = s;
    atomic_store_explicit(&c->entries, atomic_load_explicit(&c->entries, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&c->bytes, n + len, memory_order_release);
    return 1;
}

/* ------------------------------------------------------------ the store */

static struct {
    pthread_mutex_t lock;           /* active, young and their counts */
    pthread_mutex_t sweep_lock;     /* old and fill: one sweeper at a time */
    store_chunk    *active;         /* chunks threads are filling */
    store_chunk    *young, *young_tail;  /* retired, oldest first */
    size_t          young_entries;
    store_chunk    *old;            /* chunks of entries that survived a sweep */
    store_chunk    *fill;           /* survivors being packed; not full */
    atomic_size_t   old_entries;    /* in old and fill */
    size_t          old_base;       /* old_entries after the last sweep of old */
    unsigned        old_swept_at;   /* GCs seen then */
    atomic_uint     gcs;
    atomic_uint     generation;     /* object_store_free: threads' chunks forgotten */
    atomic_size_t   chunks, released;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER, .sweep_lock = PTHREAD_MUTEX_INITIALIZER };

/* Each thread's chunk, and marks in it every RECENT_STEP entries (the last
 * two), where object_store_recent starts reading. */
typedef struct recent_mark {
    unsigned  index, pos;
    uint64_t  slot;
    subsite_t subsite;
} recent_mark;

static _Thread_local struct {
    store_chunk *chunk;
    unsigned generation;
    recent_mark marks[2]; /* [1] the latest */
    unsigned nmarks;
} this_thread;

static unsigned bytes_of(store_chunk *c)
{
    return atomic_load_explicit(&c->bytes, memory_order_acquire);
}

static unsigned entries_of(store_chunk *c)
{
    return atomic_load_explicit(&c->entries, memory_order_relaxed);
}

static store_chunk *chunk_new(void)
{
    store_chunk *c = malloc(sizeof *c);
    if (c == NULL)
        return NULL;
    c->next = c->prev = NULL;
    atomic_init(&c->bytes, 0);
    atomic_init(&c->entries, 0);
    c->stamp = 0;
    c->tag = 0;
    c->last_slot = 0;
    c->last_subsite = 0;
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
    cursor k;
    cursor_start(&k, c, bytes_of(c));
    rewriter w = { c, 0, 0, 0, 0 };
    size_t released = 0;
    while (cursor_next(&k)) {
        void *h = cursor_handle(&k);
        if (ops->dead(ctx, h)) {
            ops->release(ctx, h);
            released++;
            continue;
        }
        rewrite_put(&w, k.slot, k.subsite);
    }
    rewrite_end(&w);
    atomic_fetch_add(&st.released, released);
}

/* fill joins the old list. */
static void close_fill(void)
{
    st.fill->next = st.old;
    st.old = st.fill;
    st.fill = NULL;
}

/* A compacted chunk's entries join the old ones, packed densely: they fill
 * up `fill`, and what is left of c moves to its front and c becomes the
 * next fill. No allocation, so a sweep cannot fail (sweep_lock). */
static void pack(store_chunk *c)
{
    unsigned n = entries_of(c);
    atomic_fetch_add(&st.old_entries, n);
    if (n == 0) {
        chunk_free(c);
        return;
    }
    if (st.fill && st.fill->tag != c->tag)
        close_fill();
    if (st.fill == NULL) {
        st.fill = c;
        return;
    }
    cursor k;
    cursor_start(&k, c, bytes_of(c));
    while (cursor_next(&k)) {
        if (append(st.fill, cursor_handle(&k), k.subsite))
            continue;
        close_fill();
        rewriter w = { c, 0, 0, 0, 0 };
        do
            rewrite_put(&w, k.slot, k.subsite);
        while (cursor_next(&k));
        rewrite_end(&w);
        st.fill = c;
        return;
    }
    chunk_free(c);
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
    st.young_entries -= entries_of(c);
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
    if (this_thread.chunk && this_thread.generation != atomic_load_explicit(&st.generation, memory_order_relaxed))
        this_thread.chunk = NULL;
    return this_thread.chunk;
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
    unsigned n = entries_of(c);
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

/* After an entry added to the thread's chunk c: a mark every RECENT_STEP. */
static void mark_if_due(store_chunk *c)
{
    unsigned e = entries_of(c);
    if (e % RECENT_STEP != 0)
        return;
    this_thread.marks[0] = this_thread.marks[1];
    this_thread.marks[1] = (recent_mark){ e, atomic_load_explicit(&c->bytes, memory_order_relaxed), c->last_slot,
                              c->last_subsite };
    this_thread.nmarks++;
}

int object_store_add(const object_store_ops *ops, void *ctx, void *handle, subsite_t s)
{
    store_chunk *c = my_chunk();
    if (c && append(c, handle, s)) {
        mark_if_due(c);
        return 0;
    }
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
    this_thread.chunk = c = fresh;
    this_thread.generation = atomic_load_explicit(&st.generation, memory_order_relaxed);
    this_thread.nmarks = 0;
    if (behind && pthread_mutex_trylock(&st.sweep_lock) == 0) {
        sweep_young(ops, ctx, HELP_CHUNKS);
        pthread_mutex_unlock(&st.sweep_lock);
    }
    if (c == NULL)
        return -1;
    append(c, handle, s);                /* an empty chunk takes any entry */
    mark_if_due(c);
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
    this_thread.chunk = NULL;
}

int object_store_recent(int (*match)(void *ctx, void *handle, subsite_t s), void *ctx, unsigned max)
{
    store_chunk *c = my_chunk();
    if (c == NULL)
        return 0;
    unsigned n = entries_of(c), from = n > max ? n - max : 0;
    cursor k;
    cursor_start(&k, c, atomic_load_explicit(&c->bytes, memory_order_relaxed));
    const recent_mark *start = this_thread.nmarks >= 1 && this_thread.marks[1].index <= from ? &this_thread.marks[1]
                             : this_thread.nmarks >= 2 && this_thread.marks[0].index <= from ? &this_thread.marks[0] : NULL;
    if (start) {
        k.pos = start->pos;
        k.index = start->index;
        k.slot = start->slot;
        k.subsite = start->subsite;
    }
    while (cursor_next(&k))
        if (k.index > from && match(ctx, cursor_handle(&k), k.subsite))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ census, clear */

static void visit_all(store_chunk *c, void (*visit)(void *arg, void *handle, subsite_t s), void *arg)
{
    cursor k;
    cursor_start(&k, c, bytes_of(c));
    while (cursor_next(&k))
        visit(arg, cursor_handle(&k), k.subsite);
}

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
        visit_all(c, visit, arg);
    if (st.fill)
        visit_all(st.fill, visit, arg);
    for (store_chunk *c = st.active; c; c = c->next) {
        cursor k;
        cursor_start(&k, c, bytes_of(c));
        while (cursor_next(&k))
            if (!ops->dead(ctx, cursor_handle(&k)))
                visit(arg, cursor_handle(&k), k.subsite);
    }
    pthread_mutex_unlock(&st.lock);
    pthread_mutex_unlock(&st.sweep_lock);
}

static void release_list(store_chunk *list, const object_store_ops *ops, void *ctx)
{
    while (list) {
        store_chunk *c = list;
        list = c->next;
        cursor k;
        cursor_start(&k, c, bytes_of(c));
        while (cursor_next(&k))
            ops->release(ctx, cursor_handle(&k));
        atomic_fetch_add(&st.released, k.index);
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
    this_thread.chunk = NULL;
}

object_store_stats object_store_stats_now(void)
{
    object_store_stats s = { 0, 0, 0, 0, 0 };
    pthread_mutex_lock(&st.lock);
    s.young_entries = st.young_entries;
    for (store_chunk *c = st.active; c; c = c->next)
        s.entries += entries_of(c);
    pthread_mutex_unlock(&st.lock);
    s.entries += s.young_entries + atomic_load(&st.old_entries);
    s.chunks = atomic_load(&st.chunks);
    s.bytes = s.chunks * sizeof(store_chunk);
    s.released = atomic_load(&st.released);
    return s;
}
