/* monitor_threads.c: see monitor_threads.h. */
#include "monitor_threads.h"

#include <stdlib.h>
#include <string.h>

#include "jvmti_support.h"

/* What a thread in `state` waits for: the monitor it is blocked entering
 * (1) or the blocker it is parked on (2), and that lock's owner (local
 * refs, or NULL); 0: neither. JVMTI and JNI reads only, no lock of the
 * agent's: cycle_frozen calls it on suspended threads, which may have been
 * stopped holding one. */
int monitor_wait_target(JNIEnv *jni, jthread thread, jint state, jobject *lock, jobject *owner)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    *lock = NULL;
    *owner = NULL;
    if (state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) {
        jobject monitor = NULL;
        if ((*jvmti)->GetCurrentContendedMonitor(jvmti, thread, &monitor) != JVMTI_ERROR_NONE || monitor == NULL)
            return 0;
        jvmtiMonitorUsage usage;
        memset(&usage, 0, sizeof usage);
        if ((*jvmti)->GetObjectMonitorUsage(jvmti, monitor, &usage) != JVMTI_ERROR_NONE) {
            (*jni)->DeleteLocalRef(jni, monitor);
            return 0;
        }
        jvmti_free(usage.waiters);
        jvmti_free(usage.notify_waiters);
        *lock = monitor;
        *owner = usage.owner;
        return 1;
    }
    if ((state & JVMTI_THREAD_STATE_PARKED) && mon_parks.park_blocker && mon_parks.aos_class) {
        jobject blocker = (*jni)->GetObjectField(jni, thread, mon_parks.park_blocker);
        if (blocker == NULL)
            return 0;
        *lock = blocker;
        if ((*jni)->IsInstanceOf(jni, blocker, mon_parks.aos_class))
            *owner = (*jni)->GetObjectField(jni, blocker, mon_parks.aos_owner);
        return 2;
    }
    return 0;
}

/* The lock a blocked or parked thread waits for, and its owner. */
static void find_wait(JNIEnv *jni, thread_snapshot *t)
{
    int kind = monitor_wait_target(jni, t->thread, t->state, &t->lock, &t->owner);
    if (kind == 0)
        return;
    t->lock_class = class_serial_of_object(jni, t->lock);
    t->parked = kind == 2;
}

static void read_thread(JNIEnv *jni, thread_snapshot *t, int with_traces)
{
    if ((*hprof_jvmti)->GetThreadState(hprof_jvmti, t->thread, &t->state) != JVMTI_ERROR_NONE)
        t->state = 0;
    if (with_traces && (t->state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER))
        t->trace = monitor_trace_entering(t->thread, 0, !mon_common.cfg.per_thread ? 0 : thread_serial_of(t->thread), NULL);
    else if (with_traces)
        t->trace = monitor_trace_here(t->thread, 0, 0, NULL);
    find_wait(jni, t);
    if (t->is_virtual &&
        (*hprof_jvmti)->GetOwnedMonitorInfo(hprof_jvmti, t->thread, &t->n_owned, &t->owned) != JVMTI_ERROR_NONE) {
        t->owned = NULL;
        t->n_owned = 0;
    }
}

/* The listed virtual thread owning `monitor`, or -1 (see thread_snapshot.owned). */
long monitor_virtual_owner_of(JNIEnv *jni, const thread_snapshots *s, jobject monitor)
{
    for (uint32_t k = 0; monitor && k < s->n; k++)
        for (jint j = 0; j < s->t[k].n_owned; j++)
            if ((*jni)->IsSameObject(jni, s->t[k].owned[j], monitor))
                return (long)k;
    return -1;
}

void monitor_threads_free(thread_snapshots *s)
{
    for (uint32_t i = 0; s->t && i < s->n; i++)
        jvmti_free(s->t[i].owned);
    free(s->t);
    s->t = NULL;
}

/* The index of `thread` in the snapshot, or -1. */
static long index_of(JNIEnv *jni, const thread_snapshots *s, jobject thread)
{
    for (uint32_t k = 0; thread && k < s->n; k++)
        if ((*jni)->IsSameObject(jni, s->t[k].thread, thread))
            return (long)k;
    return -1;
}

static void *local_ref_of(void *jni, void *weak)
{
    JNIEnv *env = jni;
    return (*env)->NewLocalRef(env, (jweak)weak);   /* NULL: collected */
}

/* The blocked virtual threads, those blocked longest first (their pending
 * episodes: see monitor_vthread_begin), one entry each. */
static void add_blocked_virtual_threads(JNIEnv *jni, thread_snapshots *s, int with_traces)
{
    vt_listed listed[VT_LISTED_MAX];
    unsigned whats = (1u << VT_ENTER) | (1u << VT_WAIT) | (1u << VT_PARK);
    uint32_t n = vt_pending_oldest(&mon_vthreads.pending, whats, listed, VT_LISTED_MAX, &s->vt_blocked, local_ref_of, jni);
    for (uint32_t i = 0; i < n; i++) {
        int again = 0;                      /* an enter inside a wait: listed twice */
        for (uint32_t j = 0; j < i && !again; j++)
            again = listed[j].tid == listed[i].tid;
        if (again || s->n == s->cap) {
            (*jni)->DeleteLocalRef(jni, (jobject)listed[i].ref);
            continue;
        }
        thread_snapshot *t = &s->t[s->n++];
        t->thread = (jthread)listed[i].ref;
        t->serial = thread_serial_of(t->thread);
        t->is_virtual = 1;
        read_thread(jni, t, with_traces);
        s->vt_listed++;
    }
    /* Owners that are virtual threads not listed yet (running, or blocked
     * beyond the bound): a lock's owner must have its THREAD line. */
    for (uint32_t i = 0; i < s->n && s->vt_owners < VT_LISTED_MAX && s->n < s->cap; i++) {
        jobject owner = s->t[i].owner;
        if (owner == NULL || !(*jni)->IsInstanceOf(jni, owner, mon_vthreads.vthread_class) || index_of(jni, s, owner) >= 0)
            continue;
        thread_snapshot *t = &s->t[s->n++];
        t->thread = (*jni)->NewLocalRef(jni, owner);
        t->serial = thread_serial_of(t->thread);
        t->is_virtual = 1;
        read_thread(jni, t, with_traces);
        s->vt_owners++;
    }
}

/* Snapshot every thread the agent knows, and virtual threads (bounded).
 * Local refs: inside the caller's frame. 0, or -1 on failure. */
int monitor_threads_snapshot(JNIEnv *jni, thread_snapshots *s, int with_traces)
{
    jint n = 0;
    jthread *threads = NULL;
    memset(s, 0, sizeof *s);
    if (jvmti_failed((*hprof_jvmti)->GetAllThreads(hprof_jvmti, &n, &threads), "GetAllThreads"))
        return -1;
    s->cap = (uint32_t)(n > 0 ? n : 0) + (mon_vthreads.vthread_class ? 2 * VT_LISTED_MAX : 0) + 1;
    s->t = calloc(s->cap, sizeof *s->t);
    if (s->t == NULL) {
        jvmti_free(threads);
        return -1;
    }
    for (jint i = 0; i < n; i++) {
        serial_t serial = thread_serial_of(threads[i]);
        if (serial == 0)
            continue;                       /* the agent's own thread */
        thread_snapshot *t = &s->t[s->n++];
        t->thread = threads[i];
        t->serial = serial;
        read_thread(jni, t, with_traces);
    }
    jvmti_free(threads);
    if (mon_vthreads.vthread_class)
        add_blocked_virtual_threads(jni, s, with_traces);
    for (uint32_t i = 0; i < s->n; i++) {
        thread_snapshot *t = &s->t[i];
        if (t->lock && !t->parked && t->owner == NULL) {     /* a monitor: a virtual owner? */
            long k = monitor_virtual_owner_of(jni, s, t->lock);
            t->owner = k >= 0 ? s->t[k].thread : NULL;
        }
    }
    for (uint32_t i = 0; i < s->n; i++) {
        long k = index_of(jni, s, s->t[i].owner);
        s->t[i].waits_for = k >= 0 ? (uint32_t)k + 1 : 0;
    }
    return 0;
}

/* Serials for the snapshot's virtual threads (registered now: they get no
 * ThreadStart); those that cannot be named are left out of the dump. */
void monitor_threads_name(JNIEnv *jni, thread_snapshots *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->t[i].serial == 0)
            s->t[i].serial = thread_register(jni, s->t[i].thread, NULL);
}

const thread_snapshot *monitor_snapshot_member(const thread_snapshots *s, serial_t id)
{
    for (uint32_t k = 0; id && k < s->n; k++)
        if (s->t[k].serial == id)
            return &s->t[k];
    return NULL;
}

