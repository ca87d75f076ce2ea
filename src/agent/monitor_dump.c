/*
 * monitor_dump.c: monitor=y's MONITOR DUMP at each dump: every thread (by
 * serial) with its trace and status, and every monitor a thread owns or
 * wants, with its owner, entry count, threads waiting to enter and threads
 * waiting to be notified; virtual threads as the snapshot lists them. Then
 * DEADLOCKS (monitor_deadlocks.c) from the same snapshot. See
 * monitor_parts.h.
 */
#include "monitor_threads.h"

#include <stdlib.h>
#include <string.h>

#include "jvmti_support.h"

/* What a thread is doing, in MONITOR DUMP's letters. */
static const char *status_of(jint state)
{
    if (!(state & JVMTI_THREAD_STATE_ALIVE))
        return "Z";
    if (state & JVMTI_THREAD_STATE_SUSPENDED)
        return "S";
    if (state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER)
        return "MW";
    if (state & JVMTI_THREAD_STATE_IN_OBJECT_WAIT)
        return "CW";
    if (state & JVMTI_THREAD_STATE_PARKED)
        return "P";
    if (state & JVMTI_THREAD_STATE_SLEEPING)
        return "SL";
    return "R";
}

static int listed_in(const serial_t *list, uint32_t n, serial_t serial)
{
    for (uint32_t j = 0; j < n; j++)
        if (list[j] == serial)
            return 1;
    return 0;
}

/* Serials of threads, those of the snapshot only: a thread that started
 * after the snapshot has no THREAD line in this dump (seen once in CI: a
 * waiter registered between GetAllThreads and GetObjectMonitorUsage), nor
 * has a virtual thread beyond the listed ones. Leaves out those in
 * except[0..n_except); returns how many were appended to lists[*used..cap). */
static uint32_t append_serials(serial_t *lists, size_t *used, size_t cap, const jthread *threads,
                               jint count, const serial_t *except, uint32_t n_except, const thread_snapshots *s)
{
    size_t start = *used;
    for (jint i = 0; i < count && *used < cap; i++) {
        serial_t id = thread_serial_of(threads[i]);
        if (monitor_snapshot_member(s, id) != NULL && !listed_in(except, n_except, id))
            lists[(*used)++] = id;
    }
    return (uint32_t)(*used - start);
}

/* The key of a snapshot's thread in wait_objects. */
static uint64_t wait_key(JNIEnv *jni, const thread_snapshot *t)
{
    return t->is_virtual ? WAIT_KEY_OF_VTHREAD(monitor_vthread_tid(jni, t->thread)) : t->serial;
}

/* Unique monitors owned or wanted by the snapshot's threads, with their usage. */
static uint32_t collect_monitors(JNIEnv *jni, const thread_snapshots *s,
                                 dump_monitor **out, serial_t **lists_out, char ***sigs_out)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    const thread_snapshot *snap = s->t;
    uint32_t n = s->n;
    uint32_t cap = 16, count = 0;
    jobject *objects = malloc(cap * sizeof *objects);
    /* What each thread waits on in Object.wait (local refs), read once:
     * the monitors' notify lists below need the virtual threads' again. */
    jobject *waited_of = calloc(n ? n : 1, sizeof *waited_of);
    if (objects == NULL || waited_of == NULL) {
        free(objects);
        free(waited_of);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (snap[i].serial == 0)
            continue;                              /* not named: not in the dump */
        jint owned_n = 0;
        jobject *owned = NULL;
        jobject contended = NULL;
        if ((*jvmti)->GetOwnedMonitorInfo(jvmti, snap[i].thread, &owned_n, &owned) != JVMTI_ERROR_NONE) {
            owned_n = 0;
            owned = NULL;
        }
        if ((*jvmti)->GetCurrentContendedMonitor(jvmti, snap[i].thread, &contended) != JVMTI_ERROR_NONE)
            contended = NULL;
        jobject waited = (snap[i].state & JVMTI_THREAD_STATE_IN_OBJECT_WAIT) ? monitor_waiting_on(jni, wait_key(jni, &snap[i]))
                                                                         : NULL;
        waited_of[i] = waited;
        for (jint j = 0; j <= owned_n + 1; j++) {
            jobject o = j < owned_n ? owned[j] : j == owned_n ? contended : waited;
            if (o == NULL)
                continue;
            int seen = 0;
            for (uint32_t k = 0; k < count && !seen; k++)
                seen = (*jni)->IsSameObject(jni, objects[k], o);
            if (seen)
                continue;
            if (count == cap) {
                jobject *grown = realloc(objects, 2 * cap * sizeof *grown);
                if (grown == NULL)
                    break;
                objects = grown;
                cap *= 2;
            }
            objects[count++] = o;
        }
        jvmti_free(owned);
    }

    dump_monitor *monitors = calloc(count ? count : 1, sizeof *monitors);
    char **sigs = calloc(count ? count : 1, sizeof *sigs);
    /* All waiter lists in one array: at most every thread in every list. */
    size_t list_cap = (size_t)(count ? count : 1) * 2 * (n ? n : 1);
    serial_t *lists = malloc(list_cap * sizeof *lists);
    size_t used = 0;
    uint32_t written = 0;
    for (uint32_t k = 0; monitors && sigs && lists && k < count; k++) {
        jvmtiMonitorUsage usage;
        memset(&usage, 0, sizeof usage);
        if ((*jvmti)->GetObjectMonitorUsage(jvmti, objects[k], &usage) != JVMTI_ERROR_NONE)
            continue;
        jclass klass = (*jni)->GetObjectClass(jni, objects[k]);
        char *sig = NULL;
        if (klass == NULL || (*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) != JVMTI_ERROR_NONE)
            sig = NULL;
        dump_monitor *m = &monitors[written];
        sigs[written] = sig ? strdup(sig) : strdup("<unknown>");
        jvmti_free(sig);
        m->class_signature = sigs[written];
        m->owner = usage.owner ? thread_serial_of(usage.owner) : 0;
        m->entry_count = usage.entry_count;
        if (m->owner && monitor_snapshot_member(s, m->owner) == NULL) {
            m->owner = 0;                          /* not in the snapshot: see append_serials */
            m->entry_count = 0;
        }
        long vt_owner = usage.owner ? -1 : monitor_virtual_owner_of(jni, s, objects[k]);
        if (vt_owner >= 0 && snap[vt_owner].serial) {
            m->owner = snap[vt_owner].serial;
            m->entry_count = -1;                   /* JVMTI does not count a virtual owner's entries */
        }
        /* Before JDK 23 GetObjectMonitorUsage also lists the threads in
         * Object.wait among those waiting to enter: leave them out there. */
        m->waiting_to_be_notified = lists + used;
        m->n_notify = append_serials(lists, &used, list_cap, usage.notify_waiters,
                                     usage.notify_waiter_count, NULL, 0, s);
        /* Virtual threads in its Object.wait (JDK 23 on: not among
         * usage.notify_waiters). */
        for (uint32_t i = 0; i < n && used < list_cap; i++) {
            const thread_snapshot *t = &snap[i];
            if (t->is_virtual && t->serial && waited_of[i] != NULL &&
                (*jni)->IsSameObject(jni, waited_of[i], objects[k]) &&
                !listed_in(m->waiting_to_be_notified, m->n_notify, t->serial)) {
                lists[used++] = t->serial;
                m->n_notify++;
            }
        }
        m->waiting_to_enter = lists + used;
        m->n_enter = append_serials(lists, &used, list_cap, usage.waiters, usage.waiter_count,
                                    m->waiting_to_be_notified, m->n_notify, s);
        /* Virtual threads blocked entering it (not among usage.waiters). */
        for (uint32_t i = 0; i < n && used < list_cap; i++) {
            const thread_snapshot *t = &snap[i];
            if (!t->is_virtual || !t->serial || t->parked || t->lock == NULL ||
                !(t->state & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) ||
                !(*jni)->IsSameObject(jni, t->lock, objects[k]))
                continue;
            if (!listed_in(m->waiting_to_enter, m->n_enter, t->serial)) {
                lists[used++] = t->serial;
                m->n_enter++;
            }
        }
        jvmti_free(usage.waiters);
        jvmti_free(usage.notify_waiters);
        written++;
    }
    free(objects);
    free(waited_of);
    *out = monitors;
    *lists_out = lists;
    *sigs_out = sigs;
    return written;
}

/* MONITOR DUMP of the named snapshot into w. */
static void write_monitor_dump(text_writer *w, JNIEnv *jni, const thread_snapshots *s)
{
    const thread_snapshot *snap = s->t;
    uint32_t n = s->n, listed = 0;
    dump_thread *threads = calloc(n ? n : 1, sizeof *threads);
    for (uint32_t i = 0; threads && i < n; i++) {
        if (snap[i].serial == 0)
            continue;
        threads[listed].thread = snap[i].serial;
        threads[listed].trace = snap[i].trace;
        threads[listed].status = status_of(snap[i].state);
        listed++;
    }
    dump_virtual_threads vt = { s->vt_blocked, s->vt_listed, s->vt_owners };
    dump_monitor *monitors = NULL;
    serial_t *lists = NULL;
    char **sigs = NULL;
    uint32_t nmon = collect_monitors(jni, s, &monitors, &lists, &sigs);
    if (threads && monitors)
        text_write_monitor_dump(w, threads, listed, monitors, nmon, mon_vthreads.vthread_class ? &vt : NULL);
    for (uint32_t i = 0; sigs && i < nmon; i++)
        free(sigs[i]);
    free(sigs);
    free(lists);
    free(monitors);
    free(threads);
}

uint32_t monitor_write_dump(text_writer *w, JNIEnv *jni, time_t now)
{
    if (!mon_common.inspect)
        return 0;
    if ((*jni)->PushLocalFrame(jni, 256 + 8 * VT_LISTED_MAX) != 0) {
        (*jni)->ExceptionClear(jni);
        return 0;
    }
    thread_snapshots s;
    uint32_t found = 0;
    if (monitor_threads_snapshot(jni, &s, 1) == 0) {
        monitor_threads_name(jni, &s);
        write_monitor_dump(w, jni, &s);
        found = monitor_write_deadlocks(w, jni, &s, now);
        monitor_threads_free(&s);
    }
    (*jni)->PopLocalFrame(jni, NULL);
    return found;
}
