/*
 * monitors: the Java monitor events, from JVMTI's.
 *
 *   MONITOR_CONTENDED_ENTER / ENTERED, MONITOR_WAIT / WAITED: JVMTI's own
 *     (WAITED's timeout is the time waited, timed from WAIT: JVMTI says
 *     only whether the wait timed out).
 *   MONITOR_CONTENDED_EXIT: JVMTI has no such event. What the layer knows
 *     for certain: when thread B, blocked on a monitor that thread A owned
 *     as B began to wait, enters it, A has let it go while B waited. So at
 *     B's CONTENDED_ENTERED the layer posts A's CONTENDED_EXIT, env_id A,
 *     on B's thread (after the fact, before B's ENTERED). If another waiter
 *     C entered the monitor in between, it is C who let it go to B (C had
 *     it while B waited): the layer keeps, per monitor, the last thread that
 *     entered it after contending, and a count of such entries. An owner
 *     that took the monitor without contending and gave it to a waiter is
 *     not seen when another owner came before it: exits can be missed, none
 *     is made up.
 *   MONITOR_DUMP's wait-only monitors: JVMTI (JDK 23 and later) no longer
 *     gives the monitor a thread waits on in Object.wait as its contended
 *     monitor, so the layer notes it from JVMTI MonitorWait / MonitorWaited,
 *     which it watches from the start.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../agent/events.h"
#include "layer.h"

static jlong now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (jlong)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ contended exits */

/* Per monitor (by id, direct-mapped: a collision forgets an older one,
 * which can only make an exit be missed): the last thread that entered it
 * after contending, and how many such entries there were. */
#define MONITOR_SLOTS 4096
typedef struct monitor_slot { jobjectID object; JNIEnv *last_contender; unsigned long entries; } monitor_slot;
/* Per monitor, the last contended entry (direct-mapped, by id). */
typedef struct contention_slots {
    monitor_slot slots[MONITOR_SLOTS];
    pthread_mutex_t slots_lock;
} contention_slots;

static contention_slots contended = {
    .slots_lock = PTHREAD_MUTEX_INITIALIZER,
};

static monitor_slot *slot_of(jobjectID object) {
    monitor_slot *s = &contended.slots[((uintptr_t)object >> 3) % MONITOR_SLOTS];
    if (s->object != object) {
        s->object = object;
        s->last_contender = NULL;
        s->entries = 0;
    }
    return s;
}

/* CONTENDED_ENTER: who owns it now, and how many contended entries came before. */
static void note_owner(JNIEnv *jni, jvmpi_thread *t, jobject object, jobjectID id) {
    jvmtiMonitorUsage usage;
    memset(&usage, 0, sizeof usage);
    t->contended_owner = NULL;
    if ((*jvmpi_jvmti)->GetObjectMonitorUsage(jvmpi_jvmti, object, &usage) == JVMTI_ERROR_NONE) {
        jvmpi_thread *owner = usage.owner ? jvmpi_thread_with_object(jni, jvmpi_id_of(usage.owner)) : NULL;
        t->contended_owner = owner ? owner->env : NULL;
        if (usage.owner) (*jni)->DeleteLocalRef(jni, usage.owner);
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)usage.waiters);
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)usage.notify_waiters);
    }
    pthread_mutex_lock(&contended.slots_lock);
    t->contended_entries = slot_of(id)->entries;
    pthread_mutex_unlock(&contended.slots_lock);
}

/* CONTENDED_ENTERED: the exit it followed, posted first. */
static void post_exit_before(JNIEnv *jni, jvmpi_thread *t, jobjectID id) {
    pthread_mutex_lock(&contended.slots_lock);
    monitor_slot *s = slot_of(id);
    JNIEnv *released_by = s->entries != t->contended_entries && s->last_contender ? s->last_contender
                                                                                   : t->contended_owner;
    s->last_contender = jni;
    s->entries++;
    pthread_mutex_unlock(&contended.slots_lock);
    t->contended_owner = NULL;
    if (released_by == NULL || released_by == jni || !jvmpi_enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_CONTENDED_EXIT, released_by);
    e.u.monitor.object = id;
    jvmpi_notify(&e);
}

/* ------------------------------------------------------------ JVMTI's events */

static int exits_wanted(void) { return jvmpi_enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT); }

static void JNICALL on_contended_enter(jvmtiEnv *j, JNIEnv *jni, jthread thread, jobject o) {
    (void)j; (void)thread;
    int enter = jvmpi_enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTER);
    jvmpi_thread *t = enter || exits_wanted() ? jvmpi_thread_here(jni) : NULL;
    if (t == NULL) return;
    jobjectID id = jvmpi_id_of(o);
    if (exits_wanted()) note_owner(jni, t, o, id);
    if (!enter) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_CONTENDED_ENTER, jni);
    e.u.monitor.object = id;
    jvmpi_notify(&e);
}

static void JNICALL on_contended_entered(jvmtiEnv *j, JNIEnv *jni, jthread thread, jobject o) {
    (void)j; (void)thread;
    int entered = jvmpi_enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED);
    jvmpi_thread *t = entered || exits_wanted() ? jvmpi_thread_here(jni) : NULL;
    if (t == NULL) return;
    jobjectID id = jvmpi_id_of(o);
    if (exits_wanted()) post_exit_before(jni, t, id);
    if (!entered) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, jni);
    e.u.monitor.object = id;
    jvmpi_notify(&e);
}

static void JNICALL on_wait(jvmtiEnv *j, JNIEnv *jni, jthread thread, jobject o, jlong timeout) {
    (void)j; (void)thread;
    jvmpi_thread *t = atomic_load(&jvmpi_live) ? jvmpi_thread_here(jni) : NULL;
    if (t == NULL) return;
    t->waiting_on = jvmpi_id_of(o);               /* for MONITOR_DUMP */
    t->wait_started_ms = now_ms();
    if (!jvmpi_enabled(JVMPI_EVENT_MONITOR_WAIT)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_WAIT, jni);
    e.u.monitor_wait.object = t->waiting_on;
    e.u.monitor_wait.timeout = timeout;
    jvmpi_notify(&e);
}

static void JNICALL on_waited(jvmtiEnv *j, JNIEnv *jni, jthread thread, jobject o, jboolean timed_out) {
    (void)j; (void)thread; (void)timed_out;
    jvmpi_thread *t = atomic_load(&jvmpi_live) ? jvmpi_thread_here(jni) : NULL;
    if (t == NULL) return;
    t->waiting_on = NULL;
    if (!jvmpi_enabled(JVMPI_EVENT_MONITOR_WAITED)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_WAITED, jni);
    e.u.monitor_wait.object = jvmpi_id_of(o);
    e.u.monitor_wait.timeout = t->wait_started_ms ? now_ms() - t->wait_started_ms : 0;
    jvmpi_notify(&e);
}

/* ------------------------------------------------------------ switching */

int jvmpi_monitors_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_MONITOR_CONTENDED_ENTER, EVENT_FN(on_contended_enter)) != 0 ||
           events_subscribe(JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, EVENT_FN(on_contended_entered)) != 0 ||
           events_subscribe(JVMTI_EVENT_MONITOR_WAIT, EVENT_FN(on_wait)) != 0 ||
           events_subscribe(JVMTI_EVENT_MONITOR_WAITED, EVENT_FN(on_waited)) != 0 ? -1 : 0;
}

/* Waits are watched from the start (MONITOR_DUMP needs them; a thread only
 * waits where the program calls Object.wait, so this costs little). */
int jvmpi_monitors_always(void) {
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmpi_jvmti)->GetCapabilities(jvmpi_jvmti, &caps) != JVMTI_ERROR_NONE || !caps.can_generate_monitor_events)
        return 0;
    return events_want(jvmpi_jvmti, JVMTI_EVENT_MONITOR_WAIT) != 0 ||
           events_want(jvmpi_jvmti, JVMTI_EVENT_MONITOR_WAITED) != 0 ? -1 : 0;
}

jint jvmpi_monitors_switch(jint event_type, int on) {
    /* CONTENDED_EXIT comes from the two contended events. */
    static const struct { jint jvmpi; jvmtiEvent a, b; } sources[] = {
        { JVMPI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTER, (jvmtiEvent)0 },
        { JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, (jvmtiEvent)0 },
        { JVMPI_EVENT_MONITOR_CONTENDED_EXIT, JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED },
        { JVMPI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAIT, (jvmtiEvent)0 },
        { JVMPI_EVENT_MONITOR_WAITED, JVMTI_EVENT_MONITOR_WAITED, (jvmtiEvent)0 },
    };
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        if (sources[i].jvmpi != event_type) continue;
        if (!on) {
            events_unwant(jvmpi_jvmti, sources[i].a);
            if (sources[i].b) events_unwant(jvmpi_jvmti, sources[i].b);
            return JVMPI_SUCCESS;
        }
        if (events_want(jvmpi_jvmti, sources[i].a) != 0) return JVMPI_FAIL;
        if (sources[i].b && events_want(jvmpi_jvmti, sources[i].b) != 0) {
            events_unwant(jvmpi_jvmti, sources[i].a);
            return JVMPI_FAIL;
        }
    }
    return JVMPI_SUCCESS;
}

int jvmpi_monitors_waited_on(JNIEnv *jni, const JNIEnv *const *envs, int n, jobject *objects, int max) {
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        jvmpi_thread *t = jvmpi_thread_of((JNIEnv *)envs[i]);
        jobjectID id = t ? t->waiting_on : NULL;
        jobject o = id ? jvmpi_object_of(jni, id) : NULL;
        if (o != NULL) objects[k++] = o;
    }
    return k;
}
