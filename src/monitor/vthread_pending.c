/* vthread_pending.c: see vthread_pending.h. */
#include "vthread_pending.h"

#include <pthread.h>
#include <stdlib.h>

struct vt_slot {
    uint64_t   key;            /* tid * 4 + what + 1; 0: empty */
    vt_episode e;
};
typedef struct vt_slot slot;

void vt_pending_init(vt_pending *pending)
{
    *pending = (vt_pending)VT_PENDING_INIT;
}

static uint64_t key_of(uint64_t tid, vt_what what)
{
    return tid * 4u + (uint64_t)what + 1u;
}

static uint32_t home_of(uint64_t key, uint32_t size)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (size - 1);
}

/* The slot holding key, or the empty slot where it would go (cap > 0). */
static uint32_t find_locked(vt_pending *pending, uint64_t key)
{
    uint32_t j = home_of(key, pending->cap);
    while (pending->slots[j].key != 0 && pending->slots[j].key != key)
        j = (j + 1) & (pending->cap - 1);
    return j;
}

static int grow_locked(vt_pending *pending)
{
    uint32_t ncap = pending->cap ? pending->cap * 2 : 256;
    if (ncap > VT_PENDING_MAX)
        return -1;
    slot *n = calloc(ncap, sizeof *n);
    if (n == NULL)
        return -1;
    for (uint32_t i = 0; i < pending->cap; i++) {
        if (pending->slots[i].key == 0)
            continue;
        uint32_t j = home_of(pending->slots[i].key, ncap);
        while (n[j].key != 0)
            j = (j + 1) & (ncap - 1);
        n[j] = pending->slots[i];
    }
    free(pending->slots);
    pending->slots = n;
    pending->cap = ncap;
    return 0;
}

int vt_pending_begin(vt_pending *pending, uint64_t tid, vt_what what, const vt_episode *e, vt_episode *replaced)
{
    uint64_t key = key_of(tid, what);
    int rc = 0;
    pthread_mutex_lock(&pending->lock);
    uint32_t j = pending->cap ? find_locked(pending, key) : 0;
    if (pending->cap == 0 || pending->slots[j].key != key) {
        /* A new one: at most half full, or 3/4 once VT_PENDING_MAX is
         * reached (probes stay short, an empty slot is always left). */
        if ((pending->used + 1) * 2 > pending->cap)
            (void)grow_locked(pending);
        if (pending->cap == 0 || (uint64_t)(pending->used + 1) * 4 > (uint64_t)pending->cap * 3) {
            pending->dropped++;
            rc = -1;
            goto out;
        }
        j = find_locked(pending, key);
        pending->used++;
    } else {
        if (replaced)
            *replaced = pending->slots[j].e;
        rc = 1;
    }
    pending->slots[j].key = key;
    pending->slots[j].e = *e;
out:
    pthread_mutex_unlock(&pending->lock);
    return rc;
}

/* Remove slot j, moving later entries of its probe run back (no tombstones). */
static void remove_locked(vt_pending *pending, uint32_t j)
{
    uint32_t i = j;
    for (;;) {
        pending->slots[i].key = 0;
        uint32_t k = i;
        for (;;) {
            k = (k + 1) & (pending->cap - 1);
            if (pending->slots[k].key == 0)
                goto done;
            uint32_t h = home_of(pending->slots[k].key, pending->cap);
            /* slots[k] may fill the hole at i unless its home lies
             * cyclically in (i, k]. */
            int stays = i <= k ? (h > i && h <= k) : (h > i || h <= k);
            if (!stays)
                break;
        }
        pending->slots[i] = pending->slots[k];
        i = k;
    }
done:
    pending->used--;
}

/* The slot of a pending episode, or -1. */
static int64_t pending_locked(vt_pending *pending, uint64_t tid, vt_what what)
{
    uint64_t key = key_of(tid, what);
    if (pending->cap == 0)
        return -1;
    uint32_t j = find_locked(pending, key);
    return pending->slots[j].key == key ? (int64_t)j : -1;
}

int vt_pending_end(vt_pending *pending, uint64_t tid, vt_what what, vt_episode *out)
{
    pthread_mutex_lock(&pending->lock);
    int64_t j = pending_locked(pending, tid, what);
    if (j >= 0) {
        *out = pending->slots[j].e;
        remove_locked(pending, (uint32_t)j);
    }
    pthread_mutex_unlock(&pending->lock);
    return j >= 0;
}

int vt_pending_mark_pinned(vt_pending *pending, uint64_t tid, vt_what what)
{
    pthread_mutex_lock(&pending->lock);
    int64_t j = pending_locked(pending, tid, what);
    if (j >= 0)
        pending->slots[j].e.pinned = 1;
    pthread_mutex_unlock(&pending->lock);
    return j >= 0;
}

/* out[0..n) as a max-heap on start: out[0] is the newest kept. */
static void sift_down(vt_listed *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && h[l].start > h[big].start)
            big = l;
        if (r < n && h[r].start > h[big].start)
            big = r;
        if (big == i)
            return;
        vt_listed t = h[i];
        h[i] = h[big];
        h[big] = t;
        i = big;
    }
}

static void sift_up(vt_listed *h, uint32_t i)
{
    while (i > 0 && h[(i - 1) / 2].start < h[i].start) {
        vt_listed t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

uint32_t vt_pending_oldest(vt_pending *pending, unsigned whats, vt_listed *out, uint32_t max, uint32_t *matching,
                           void *(*keep)(void *ctx, void *ref), void *ctx)
{
    uint32_t n = 0, count = 0;
    pthread_mutex_lock(&pending->lock);
    for (uint32_t i = 0; i < pending->cap; i++) {
        if (pending->slots[i].key == 0)
            continue;
        vt_what what = (vt_what)((pending->slots[i].key - 1) % 4);
        if (!(whats & (1u << what)) || pending->slots[i].e.ref == NULL)
            continue;
        count++;
        vt_listed item = { (pending->slots[i].key - 1) / 4, pending->slots[i].e.start, what, pending->slots[i].e.ref };
        if (n < max) {
            out[n] = item;
            sift_up(out, n++);
        } else if (max > 0 && item.start < out[0].start) {
            out[0] = item;
            sift_down(out, n, 0);
        }
    }
    /* Heap sort: oldest first. */
    for (uint32_t k = n; k > 1; k--) {
        vt_listed t = out[0];
        out[0] = out[k - 1];
        out[k - 1] = t;
        sift_down(out, k - 1, 0);
    }
    uint32_t kept = 0;
    for (uint32_t k = 0; k < n; k++) {
        out[k].ref = keep(ctx, out[k].ref);
        if (out[k].ref)
            out[kept++] = out[k];
    }
    pthread_mutex_unlock(&pending->lock);
    if (matching)
        *matching = count;
    return kept;
}

uint32_t vt_pending_count(vt_pending *pending)
{
    pthread_mutex_lock(&pending->lock);
    uint32_t n = pending->used;
    pthread_mutex_unlock(&pending->lock);
    return n;
}

uint64_t vt_pending_dropped(vt_pending *pending)
{
    pthread_mutex_lock(&pending->lock);
    uint64_t n = pending->dropped;
    pthread_mutex_unlock(&pending->lock);
    return n;
}

void vt_pending_free(vt_pending *pending)
{
    pthread_mutex_lock(&pending->lock);
    free(pending->slots);
    pending->slots = NULL;
    pending->cap = pending->used = 0;
    pending->dropped = 0;
    pthread_mutex_unlock(&pending->lock);
}
