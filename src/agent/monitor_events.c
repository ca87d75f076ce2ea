/*
 * monitor_events.c: monitor=y's contended `synchronized` enters
 * (MonitorContendedEnter/Entered) and Object.wait (MonitorWait/Waited),
 * timed with CLOCK_MONOTONIC, each delivered on the thread concerned; a
 * virtual thread's are episodes of monitor_vthreads.c. Also the object each
 * thread waits on in Object.wait, which MONITOR DUMP reads. See
 * monitor_parts.h.
 */
#include "monitor_parts.h"

#include <pthread.h>
#include <stdlib.h>

#include "../core/idmap.h"
#include "events.h"
#include "jvmti_support.h"

/* This thread's words for monitor=y: one thread-local object for the files
 * of the collector (monitor_parts.h). */
static __thread monitor_thread this_thread;

monitor_thread *monitor_thread_here(void) { return &this_thread; }


/* The object each thread is waiting on in Object.wait: MONITOR DUMP needs
 * it for monitors nobody owns, and from JDK 23 on
 * GetCurrentContendedMonitor no longer returns it. Global refs, set at
 * MonitorWait, dropped at MonitorWaited; a map from the thread's key to a
 * slot of `refs`, so it holds the threads waiting now, not every thread
 * ever seen (threads come and go: an array by serial grew by 8 bytes a
 * thread). A platform thread's key is its serial; a virtual thread's is
 * its tid with the top bit set (most have no serial while they wait: a
 * dump names those it lists). At most WAIT_OBJECTS_MAX threads: beyond,
 * a dump lacks what the others wait on. */
#define WAIT_OBJECTS_MAX (1u << 18)
static struct {
    pthread_mutex_t lock;
    idmap           slot_of;       /* key -> 1 + index in refs */
    jobject        *refs;
    uint32_t       *free;          /* unused indexes of refs */
    uint32_t        n, cap, nfree;
} wait_objects = { PTHREAD_MUTEX_INITIALIZER, {NULL, NULL, 0, 0}, NULL, NULL, 0, 0, 0 };

/* A free index of wait_objects.refs, or UINT32_MAX (out of memory); lock held. */
static uint32_t wait_objects_take_slot(void)
{
    if (wait_objects.nfree > 0)
        return wait_objects.free[--wait_objects.nfree];
    if (wait_objects.n == WAIT_OBJECTS_MAX)
        return UINT32_MAX;
    if (wait_objects.n == wait_objects.cap) {
        uint32_t cap = wait_objects.cap ? 2 * wait_objects.cap : 64;
        jobject *refs = realloc(wait_objects.refs, cap * sizeof *refs);
        if (refs == NULL)
            return UINT32_MAX;
        wait_objects.refs = refs;
        uint32_t *free_list = realloc(wait_objects.free, cap * sizeof *free_list);
        if (free_list == NULL)
            return UINT32_MAX;
        wait_objects.free = free_list;
        wait_objects.cap = cap;
    }
    return wait_objects.n++;
}

static void set_waiting_on(JNIEnv *jni, uint64_t key, jobject object)
{
    if (key < THREAD_SERIAL_BASE)
        return;                 /* an unnamed thread (the agent's own) */
    jobject ref = object ? (*jni)->NewGlobalRef(jni, object) : NULL;
    jobject old = NULL;
    pthread_mutex_lock(&wait_objects.lock);
    uint32_t slot = idmap_get(&wait_objects.slot_of, key);
    if (slot) {
        old = wait_objects.refs[slot - 1];
        if (ref) {
            wait_objects.refs[slot - 1] = ref;
            ref = NULL;
        } else {
            idmap_remove(&wait_objects.slot_of, key);
            wait_objects.free[wait_objects.nfree++] = slot - 1;
        }
    } else if (ref) {
        uint32_t i = wait_objects_take_slot();
        if (i != UINT32_MAX && idmap_put(&wait_objects.slot_of, key, i + 1) == 0) {
            wait_objects.refs[i] = ref;
            ref = NULL;
        } else if (i != UINT32_MAX) {
            wait_objects.free[wait_objects.nfree++] = i;
        }
    }
    pthread_mutex_unlock(&wait_objects.lock);
    if (old)
        (*jni)->DeleteGlobalRef(jni, old);
    if (ref)
        (*jni)->DeleteGlobalRef(jni, ref);     /* no room to keep it */
}

jobject monitor_waiting_on(JNIEnv *jni, uint64_t key)
{
    jobject local = NULL;
    pthread_mutex_lock(&wait_objects.lock);
    uint32_t slot = idmap_get(&wait_objects.slot_of, key);
    if (slot)
        local = (*jni)->NewLocalRef(jni, wait_objects.refs[slot - 1]);
    pthread_mutex_unlock(&wait_objects.lock);
    return local;
}

/* The stack and class are taken before the thread blocks, not after: work
 * done after the lock is acquired would lengthen everyone's wait. */
static void JNICALL on_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
    monitor_event_tls *mine = &monitor_thread_here()->events;
    (void)jvmti;
    if (!mon_common.running)
        return;
    uint64_t tid = monitor_vthread_tid(jni, thread);
    if (tid) {
        monitor_vthread_begin(jni, tid, VT_ENTER, thread, object, BLOCK_ENTER);
        return;
    }
    uint64_t start = monitor_now_ns();      /* first, as in monitor_vthread_begin */
    mine->enter_class = class_serial_of_object(jni, object);
    mine->enter_stack = 0;
    mine->enter_trace = monitor_trace_entering(thread, 1, !mon_common.cfg.per_thread ? 0 : thread_serial_of_self(thread),
                                      &mine->enter_stack);
    mine->enter_start = start;
}

static void JNICALL on_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
    monitor_event_tls *mine = &monitor_thread_here()->events;
    (void)jvmti; (void)object;
    uint64_t tid = monitor_vthread_tid(jni, thread);
    if (tid) {
        monitor_vthread_end(jni, tid, VT_ENTER);
        return;
    }
    if (mine->enter_start) {
        monitor_table_add(mon_common.table, mine->enter_trace, mine->enter_stack, mine->enter_class, BLOCK_ENTER,
                          monitor_now_ns() - mine->enter_start);
        mine->enter_start = 0;
    }
}

static void JNICALL on_wait(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jlong timeout)
{
    monitor_event_tls *mine = &monitor_thread_here()->events;
    (void)jvmti;
    (void)timeout;
    if (!mon_common.running)
        return;
    uint64_t tid = monitor_vthread_tid(jni, thread);
    if (tid) {
        monitor_vthread_begin(jni, tid, VT_WAIT, thread, object, BLOCK_WAIT);
        if (mon_common.inspect)
            set_waiting_on(jni, WAIT_KEY_OF_VTHREAD(tid), object);
        return;
    }
    mine->wait_class = class_serial_of_object(jni, object);
    mine->wait_stack = 0;
    mine->wait_trace = monitor_trace_here(thread, 1, 0, &mine->wait_stack);
    set_waiting_on(jni, thread_serial_of(thread), object);
    mine->wait_start = monitor_now_ns();
}

static void JNICALL on_waited(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                              jboolean timed_out)
{
    monitor_event_tls *mine = &monitor_thread_here()->events;
    (void)jvmti; (void)object; (void)timed_out;
    uint64_t tid = monitor_vthread_tid(jni, thread);
    if (tid) {
        monitor_vthread_end(jni, tid, VT_WAIT);
        if (mon_common.inspect)
            set_waiting_on(jni, WAIT_KEY_OF_VTHREAD(tid), NULL);
        return;
    }
    set_waiting_on(jni, thread_serial_of(thread), NULL);
    if (mine->wait_start) {
        monitor_table_add(mon_common.table, mine->wait_trace, mine->wait_stack, mine->wait_class, BLOCK_WAIT,
                          monitor_now_ns() - mine->wait_start);
        mine->wait_start = 0;
    }
}

int monitor_events_subscribe(void)
{
    static const event_subscription subs[] = {
        { JVMTI_EVENT_MONITOR_CONTENDED_ENTER, EVENT_FN(on_contended_enter) },
        { JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, EVENT_FN(on_contended_entered) },
        { JVMTI_EVENT_MONITOR_WAIT, EVENT_FN(on_wait) },
        { JVMTI_EVENT_MONITOR_WAITED, EVENT_FN(on_waited) },
    };
    return events_subscribe_all(subs, sizeof subs / sizeof subs[0]);
}
