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
 * Thread-safe (one mutex). Pure C, no JVMTI.
 */
#ifndef HPROF_VTHREAD_PENDING_H
#define HPROF_VTHREAD_PENDING_H

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
} vt_episode;

/* Begin (or restart) the episode `what` of thread tid. 0, or -1 when full
 * or out of memory (the episode is not kept). */
int  vt_pending_begin(uint64_t tid, vt_what what, const vt_episode *e);
/* End it: 1 and *out if it was pending (and is removed), else 0. */
int  vt_pending_end(uint64_t tid, vt_what what, vt_episode *out);
/* Mark a pending episode as pinned; 1 if it was pending. */
int  vt_pending_mark_pinned(uint64_t tid, vt_what what);
/* Episodes pending now, and those not kept because the table was full. */
uint32_t vt_pending_count(void);
uint64_t vt_pending_dropped(void);
void vt_pending_free(void);

#endif
