/*
 * vthread_pending: the blocking episodes virtual threads have begun and not
 * yet ended, by (thread id, what).
 *
 * A virtual thread that blocks (parks, or enters a contended monitor on
 * JDK 24 and later) is unmounted from its carrier and later resumes on
 * whichever carrier is free: the event that ends an episode runs on another
 * OS thread than the one that began it, so per-OS-thread storage (the
 * platform threads' way) mixes episodes of different virtual threads up.
 * They are kept here instead, by java.lang.Thread's tid (unique for the
 * life of the VM). Open addressing with linear probing and backward-shift
 * deletion, grown by doubling up to VT_PENDING_MAX entries (bounded memory:
 * an episode begun when the table is full is not timed, and counted).
 * Thread-safe (one mutex). Pure C, no JVMTI. One table is one vt_pending,
 * the caller's (monitor=y keeps one in mon_vthreads).
 */
#ifndef HPROF_VTHREAD_PENDING_H
#define HPROF_VTHREAD_PENDING_H

#include <pthread.h>
#include <stdint.h>

#include "../core/stack_table.h"
#include "../core/tables.h"

/* What kind of episode: a thread can be in one of each at once (a monitor
 * re-entered after Object.wait is an enter inside a wait). */
typedef enum { VT_ENTER = 0, VT_WAIT = 1, VT_PARK = 2 } vt_what;

#define VT_PENDING_MAX (1u << 18)

typedef struct vt_episode {
    uint64_t start;            /* CLOCK_MONOTONIC ns */
    serial_t trace, lock_class;
    stack_id stack;
    int      kind;             /* block_kind */
    int      pinned;           /* blocked on its carrier (not unmounted) */
    void    *ref;              /* the caller's: a weak reference to the thread, or NULL */
} vt_episode;

/* The table: open addressing under one lock. VT_PENDING_INIT or
 * vt_pending_init makes an empty one; vt_pending_free empties it. */
typedef struct vt_pending {
    pthread_mutex_t lock;
    struct vt_slot *slots;
    uint32_t cap;
    uint32_t used;
    uint64_t dropped;
} vt_pending;
#define VT_PENDING_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }
void vt_pending_init(vt_pending *pending);

/* Begin (or restart) the episode `what` of thread tid. 0, 1 when it
 * replaced a pending one (copied into *replaced when not NULL, so that the
 * caller can free its ref), or -1 when full or out of memory (the episode
 * is not kept). */
int  vt_pending_begin(vt_pending *pending, uint64_t tid, vt_what what, const vt_episode *e, vt_episode *replaced);
/* End it: 1 and *out if it was pending (and is removed), else 0. */
int  vt_pending_end(vt_pending *pending, uint64_t tid, vt_what what, vt_episode *out);
/* Mark a pending episode as pinned; 1 if it was pending. */
int  vt_pending_mark_pinned(vt_pending *pending, uint64_t tid, vt_what what);
/* One of the episodes vt_pending_oldest lists. */
typedef struct vt_listed {
    uint64_t tid;
    uint64_t start;
    vt_what  what;
    void    *ref;              /* what `keep` returned for the episode's ref */
} vt_listed;

/* The (at most) `max` pending episodes whose kind is in `whats` (bits
 * 1 << what) and whose ref is set, begun longest ago, oldest first, into
 * out[]; *matching (may be NULL) counts all of those kinds pending. keep is
 * called on each listed episode's ref while the table is locked (the ref
 * cannot be freed meanwhile) and its result stored: NULL leaves the episode
 * out. A thread in two episodes is listed twice. */
uint32_t vt_pending_oldest(vt_pending *pending, unsigned whats, vt_listed *out, uint32_t max, uint32_t *matching,
                           void *(*keep)(void *ctx, void *ref), void *ctx);
/* Episodes pending now, and those not kept because the table was full. */
uint32_t vt_pending_count(vt_pending *pending);
uint64_t vt_pending_dropped(vt_pending *pending);
void vt_pending_free(vt_pending *pending);

#endif
