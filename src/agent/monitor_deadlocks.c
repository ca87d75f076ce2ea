/*
 * monitor_deadlocks.c: monitor=y's DEADLOCKS. The wait-for graph of a
 * thread snapshot (thread -> owner of the lock it waits for) has one edge
 * per thread at most: its cycles (src/monitor/deadlock.c) are kept only
 * when read again the same, then once more with their threads suspended.
 * Written at each dump, counted for deadlock=. See monitor_parts.h.
 */
#include "monitor_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../monitor/deadlock.h"
#include "jvmti_support.h"

/* Whether `thread` owns `monitor` now. */
static int owns_monitor(JNIEnv *jni, jthread thread, jobject monitor)
{
    jint n = 0;
    jobject *owned = NULL;
    int found = 0;
    if ((*hprof_jvmti)->GetOwnedMonitorInfo(hprof_jvmti, thread, &n, &owned) != JVMTI_ERROR_NONE)
        return 0;
    for (jint j = 0; j < n; j++) {
        found = found || (*jni)->IsSameObject(jni, owned[j], monitor);
        (*jni)->DeleteLocalRef(jni, owned[j]);
    }
    jvmti_free(owned);
    return found;
}

/* Whether `t` still waits for `lock` owned by `owner`, read now
 * (monitor_wait_target: safe on a suspended thread). */
static int still_waits(JNIEnv *jni, jthread t, jobject lock, jobject owner)
{
    jint state = 0;
    if ((*hprof_jvmti)->GetThreadState(hprof_jvmti, t, &state) != JVMTI_ERROR_NONE)
        return 0;
    jobject now = NULL, now_owner = NULL;
    int kind = monitor_wait_target(jni, t, state, &now, &now_owner);
    if (kind == 1 && now_owner == NULL && owns_monitor(jni, owner, now))   /* a virtual owner */
        now_owner = (*jni)->NewLocalRef(jni, owner);
    int same = now && now_owner && (*jni)->IsSameObject(jni, now, lock) && (*jni)->IsSameObject(jni, now_owner, owner);
    if (now)
        (*jni)->DeleteLocalRef(jni, now);
    if (now_owner)
        (*jni)->DeleteLocalRef(jni, now_owner);
    return same;
}

/* Whether every member of the cycle still waits for its lock held by the
 * next member. */
static int cycle_reads_same(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        const thread_snapshot *a = &s->t[ids[i] - 1];
        if (!still_waits(jni, a->thread, a->lock, a->owner))
            return 0;
    }
    return 1;
}

/* The snapshot is read thread by thread while threads move on, so a cycle in
 * it may be an artefact (one lock read with two owners at two moments). A
 * real deadlock does not move: keep a cycle only if its locks are distinct
 * objects and every member, read again now, still waits for the same lock
 * held by the same thread. ids: 1 + indexes in the snapshot. */
static int cycle_confirmed(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        const thread_snapshot *a = &s->t[ids[i] - 1];
        if (a->lock == NULL || a->owner == NULL)
            return 0;
        for (uint32_t j = i + 1; j < len; j++)
            if ((*jni)->IsSameObject(jni, a->lock, s->t[ids[j] - 1].lock))
                return 0;
    }
    return cycle_reads_same(jni, s, ids, len);
}

/* A cycle read twice may still be an artefact: every read is of one thread at
 * one moment, and threads handing locks over all the time can line up the
 * same way twice (seen once in CI, deadlock_no_false_positive: a deadlock=
 * dump whose own check then found no cycle). Suspend the members and read
 * them again: a suspended thread cannot take or release a lock, so once all
 * are held still, what the reads say holds at one instant, and a cycle then
 * is a deadlock. Members that were not blocked stop for a few microseconds;
 * those of a real deadlock were not running anyway. A thread someone else
 * had suspended is read but left suspended.
 *
 * can_suspend is a capability only one JVMTI environment may hold at a time
 * (HotSpot): held from start-up it would keep a debugger loaded after us
 * (-agentlib:jdwp) from starting. So it is taken here and given back at once.
 * When another agent holds it, the cycle must read the same three more times,
 * 20 ms apart (a real deadlock does not move; threads that line up by chance
 * do not stay lined up). */
static int cycle_frozen(JNIEnv *jni, const thread_snapshots *s, const uint32_t *ids, uint32_t len)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities suspend;
    memset(&suspend, 0, sizeof suspend);
    suspend.can_suspend = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &suspend) != JVMTI_ERROR_NONE) {
        for (int round = 0; round < 3; round++) {
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
            if (!cycle_reads_same(jni, s, ids, len))
                return 0;
        }
        return 1;
    }
    jthread *threads = calloc(len, sizeof *threads);
    jvmtiError *results = calloc(len, sizeof *results);
    int frozen = threads != NULL && results != NULL;
    for (uint32_t i = 0; frozen && i < len; i++)
        threads[i] = s->t[ids[i] - 1].thread;
    if (frozen && (*jvmti)->SuspendThreadList(jvmti, (jint)len, threads, results) != JVMTI_ERROR_NONE)
        frozen = 0;
    else if (frozen) {
        for (uint32_t i = 0; i < len; i++)
            frozen = frozen && (results[i] == JVMTI_ERROR_NONE || results[i] == JVMTI_ERROR_THREAD_SUSPENDED);
        frozen = frozen && cycle_reads_same(jni, s, ids, len);
        /* Resume only those this call suspended. */
        uint32_t n = 0;
        for (uint32_t i = 0; i < len; i++)
            if (results[i] == JVMTI_ERROR_NONE)
                threads[n++] = threads[i];
        if (n > 0 && (*jvmti)->ResumeThreadList(jvmti, (jint)n, threads, results) != JVMTI_ERROR_NONE)
            fprintf(stderr, "hprof: monitor=y: ResumeThreadList failed after a deadlock check\n");
    }
    free(threads);
    free(results);
    if ((*jvmti)->RelinquishCapabilities(jvmti, &suspend) != JVMTI_ERROR_NONE)
        fprintf(stderr, "hprof: monitor=y: could not give the can_suspend capability back\n");
    return frozen;
}

/* Confirmed deadlock cycles of the snapshot, as find_deadlocks lays them
 * out, with 1 + snapshot indexes as thread ids. */
static uint32_t deadlock_cycles(JNIEnv *jni, const thread_snapshots *s, uint32_t **cycles_out)
{
    uint32_t n = s->n;
    waiter *graph = calloc(n ? n : 1, sizeof *graph);
    uint32_t *cycles = calloc(2 * (size_t)(n ? n : 1), sizeof *cycles);
    uint32_t confirmed = 0;
    if (graph && cycles) {
        for (uint32_t i = 0; i < n; i++) {
            graph[i].thread = i + 1;
            graph[i].waits_for = s->t[i].waits_for;
        }
        uint32_t found = find_deadlocks(graph, n, cycles);
        /* Compact in place: confirmed cycles move to the front. */
        uint32_t in = 0, out = 0;
        for (uint32_t c = 0; c < found; c++) {
            uint32_t len = cycles[in];
            if (cycle_confirmed(jni, s, cycles + in + 1, len) &&
                cycle_frozen(jni, s, cycles + in + 1, len)) {
                memmove(cycles + out, cycles + in, (len + 1) * sizeof *cycles);
                out += len + 1;
                confirmed++;
            }
            in += len + 1;
        }
    }
    free(graph);
    if (cycles_out)
        *cycles_out = cycles;
    else
        free(cycles);
    return confirmed;
}

uint32_t monitor_count_deadlocks(JNIEnv *jni)
{
    if (!mon_common.inspect)
        return 0;
    if ((*jni)->PushLocalFrame(jni, 64 + 8 * VT_LISTED_MAX) != 0) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    thread_snapshots s;
    uint32_t found = monitor_threads_snapshot(jni, &s, 0) == 0 ? deadlock_cycles(jni, &s, NULL) : 0;
    monitor_threads_free(&s);
    (*jni)->PopLocalFrame(jni, NULL);
    return found;
}

/* Each cycle rotated to start at its smallest thread serial (as the graph's
 * cycles start at their smallest id), so that reports are stable. */
static void rotate_to_smallest(deadlock_member *members, const uint32_t *sizes, uint32_t n_cycles)
{
    deadlock_member *m = members;
    for (uint32_t c = 0; c < n_cycles; m += sizes[c++]) {
        uint32_t len = sizes[c], low = 0;
        for (uint32_t i = 1; i < len; i++)
            if (m[i].thread < m[low].thread)
                low = i;
        for (uint32_t r = 0; r < low; r++) {         /* short cycles: rotate by one, low times */
            deadlock_member first = m[0];
            memmove(m, m + 1, (len - 1) * sizeof *m);
            m[len - 1] = first;
        }
    }
}

/* The cycles written, with their threads' whole stacks, onto the dump's
 * lock profile (jfr= writes them as hprof.Deadlock). A deadlocked thread
 * does not move: its stack walked again is the one of its trace. */
static void profile_deadlocks(const thread_snapshots *s, const deadlock_member *members, const uint32_t *sizes,
                              uint32_t n_cycles)
{
    const deadlock_member *m = members;
    for (uint32_t c = 0; c < n_cycles; m += sizes[c++]) {
        monitor_deadlocked *cycle = calloc(sizes[c], sizeof *cycle);
        for (uint32_t i = 0; cycle && i < sizes[c]; i++) {
            const thread_snapshot *t = monitor_snapshot_member(s, m[i].thread);
            stack_id stack = 0;
            serial_t thread_serial = mon_common.cfg.per_thread ? m[i].thread : 0;
            if (t && (t->state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER))
                (void)monitor_trace_entering(t->thread, 0, thread_serial, &stack);
            else if (t)
                (void)monitor_trace_here(t->thread, 0, 0, &stack);
            cycle[i] = (monitor_deadlocked){ m[i].thread, m[i].lock_class, m[i].parked, stack };
        }
        if (cycle)
            monitor_profile_deadlock(cycle, sizes[c]);
        free(cycle);
    }
}

uint32_t monitor_write_deadlocks(text_writer *w, JNIEnv *jni, const thread_snapshots *s, time_t now)
{
    const thread_snapshot *snap = s->t;
    uint32_t n = s->n, found = 0;
    /* Cycles as runs of 1 + snapshot indexes: members by serial. A cycle
     * with a member that could not be named is left out. */
    uint32_t *cycles = NULL;
    uint32_t cycles_found = deadlock_cycles(jni, s, &cycles);
    deadlock_member *members = calloc(n ? n : 1, sizeof *members);
    uint32_t *sizes = calloc(cycles_found ? cycles_found : 1, sizeof *sizes);
    if (cycles && members && sizes) {
        uint32_t at = 0, m = 0;
        for (uint32_t c = 0; c < cycles_found; c++) {
            uint32_t len = cycles[at++], first = m;
            int named = 1;
            for (uint32_t i = 0; i < len; i++, m++) {
                const thread_snapshot *t = &snap[cycles[at++] - 1];
                members[m].thread = t->serial;
                members[m].trace = t->trace;
                members[m].parked = t->parked;
                members[m].lock_class = t->lock_class;
                members[m].held_by = snap[t->waits_for - 1].serial;
                named = named && t->serial != 0;
            }
            if (named)
                sizes[found++] = len;
            else
                m = first;
        }
        rotate_to_smallest(members, sizes, found);
        text_write_deadlocks(w, members, sizes, found, now);
        if (mon_common.traces.full_stacks)
            profile_deadlocks(s, members, sizes, found);
    }
    free(cycles);
    free(members);
    free(sizes);
    return found;
}
