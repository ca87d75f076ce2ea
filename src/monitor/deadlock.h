/*
 * deadlock: finds every cycle in a wait-for graph of threads.
 *
 * Each thread waits for at most one lock (a monitor it is blocked entering,
 * or a java.util.concurrent lock it is parked on), and each such lock has at
 * most one exclusive owner, so the graph "thread -> owner of the lock it
 * waits for" has out-degree <= 1: its cycles are disjoint and each is found
 * by following the edges from a node until a node repeats. Threads that wait
 * on a deadlocked thread but are not on the cycle are not deadlocked
 * themselves in this report (as `jcmd Thread.print` reports cycles only).
 * Pure C, no JVMTI: the agent builds the graph from JVMTI and JNI.
 */
#ifndef HPROF_DEADLOCK_H
#define HPROF_DEADLOCK_H

#include <stdint.h>

typedef struct waiter {
    uint32_t thread;       /* an id (the thread serial) */
    uint32_t waits_for;    /* id of the thread owning the lock it waits for; 0: none */
} waiter;

/* Writes the cycles into `cycles` as runs of thread ids, each run preceded
 * by its length: [len, id, id, ..., len, id, ...]. Each cycle starts at its
 * smallest id, and cycles are ordered by that id, so results are stable.
 * `cycles` must hold 2 * n entries. Returns the number of cycles. */
uint32_t find_deadlocks(const waiter *graph, uint32_t n, uint32_t *cycles);

#endif
