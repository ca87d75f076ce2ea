/*
 * monitor_threads: a snapshot of the threads, for MONITOR DUMP
 * (monitor_dump.c) and the deadlock search (monitor_deadlocks.c), which
 * both read it: every platform thread the agent knows and the blocked
 * virtual threads (bounded), each with its state, its trace and the lock it
 * waits for with that lock's owner. Internal to monitor=y (monitor_parts.h).
 */
#ifndef HPROF_MONITOR_THREADS_H
#define HPROF_MONITOR_THREADS_H

#include "monitor_parts.h"

/* Virtual threads a dump lists, at most (there may be millions): those
 * blocked longest, then the owners of locks that listed threads wait for. */
#define VT_LISTED_MAX 256

typedef struct thread_snapshot {
    jthread  thread;
    serial_t serial;               /* 0: a virtual thread not named yet (monitor_threads_name) */
    int      is_virtual;
    serial_t trace;
    jint     state;
    /* what it waits for, for the deadlock graph */
    jobject  owner;                /* the thread owning that lock (local ref), or NULL */
    uint32_t waits_for;            /* 1 + the owner's index in the snapshot; 0: none, or not in it */
    serial_t lock_class;
    jobject  lock;                 /* the monitor or park blocker (local ref) */
    int      parked;
    /* A virtual thread's monitors (GetOwnedMonitorInfo): GetObjectMonitorUsage
     * names no virtual thread as owner or waiter (JDK 23 and later). */
    jobject *owned;
    jint     n_owned;
} thread_snapshot;

/* A snapshot: the platform threads, then the virtual threads listed. */
typedef struct thread_snapshots {
    thread_snapshot *t;
    uint32_t n, cap;
    uint32_t vt_blocked;           /* virtual threads seen blocked (pending episodes) */
    uint32_t vt_listed;            /* of them in t[] */
    uint32_t vt_owners;            /* other virtual threads in t[]: owners of a lock */
} thread_snapshots;

/* Snapshot every thread the agent knows, and virtual threads (bounded),
 * with their traces when with_traces. Local refs: inside the caller's
 * frame. 0, or -1 on failure. */
int  monitor_threads_snapshot(JNIEnv *jni, thread_snapshots *s, int with_traces);
void monitor_threads_free(thread_snapshots *s);
/* Serials for the snapshot's virtual threads (a dump names them). */
void monitor_threads_name(JNIEnv *jni, thread_snapshots *s);
/* The deadlock search reads a thread's lock again: what a thread in
 * `state` waits for (1: a monitor, 2: a park blocker; 0: neither), and its
 * owner; JVMTI and JNI reads only (safe on a suspended thread). */
int  monitor_wait_target(JNIEnv *jni, jthread thread, jint state, jobject *lock, jobject *owner);
/* MONITOR DUMP looks owners up: the listed virtual thread owning `monitor`, or -1. */
long monitor_virtual_owner_of(JNIEnv *jni, const thread_snapshots *s, jobject monitor);
/* MONITOR DUMP keeps to the snapshot's threads: the one of serial `id`, or NULL. */
const thread_snapshot *monitor_snapshot_member(const thread_snapshots *s, serial_t id);
/* At a dump (monitor_dump.c): DEADLOCKS of the named snapshot into w; the cycles found. */
uint32_t monitor_write_deadlocks(text_writer *w, JNIEnv *jni, const thread_snapshots *s, time_t now);

#endif
