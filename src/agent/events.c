/* events.c: see events.h. */
#include "events.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "jvmti_support.h"

#define MAX_SUBSCRIBERS 8
/* The events handled here go up to JDK 21's VirtualThreadEnd. */
#define EVENT_MAX 88
#define EVENT_SLOTS (EVENT_MAX - JVMTI_MIN_EVENT_TYPE_VAL + 1)

/* jvmtiEventCallbacks as JDK 21 lays it out: JDK 17's, then
 * VirtualThreadStart (87) and VirtualThreadEnd (88). A JVM copies as much of
 * it as it knows (JDK 17: the first part). */
typedef struct callbacks_jdk21 {
    jvmtiEventCallbacks jdk17;
    void (JNICALL *VirtualThreadStart)(jvmtiEnv *j, JNIEnv *e, jthread t);
    void (JNICALL *VirtualThreadEnd)(jvmtiEnv *j, JNIEnv *e, jthread t);
} callbacks_jdk21;

/* Subscribers per event. Written before events_install (under `lock`), and
 * read by the installed callbacks without a lock: an entry is complete
 * before its count is published. */
static struct {
    pthread_mutex_t lock;
    event_fn        fn[EVENT_SLOTS][MAX_SUBSCRIBERS];
    _Atomic int     count[EVENT_SLOTS];
    int             wanted[EVENT_SLOTS];   /* events_want minus events_unwant */
} hub = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define SLOT(ev) ((ev) - JVMTI_MIN_EVENT_TYPE_VAL)

/* One fan-out callback per event: call every subscriber with the same
 * arguments, cast back to the event's own function type. */
#define FAN_OUT(event, member, params, args)                                              \
    static void JNICALL fan_##member params                                               \
    {                                                                                      \
        int n = hub.count[SLOT(event)];                                                    \
        for (int i = 0; i < n; i++)                                                        \
            ((__typeof__(((jvmtiEventCallbacks *)0)->member))hub.fn[SLOT(event)][i]) args; \
    }

static void JNICALL fan_VirtualThreadEnd(jvmtiEnv *j, JNIEnv *e, jthread t)
{
    int n = hub.count[SLOT(EVENT_VIRTUAL_THREAD_END)];
    for (int i = 0; i < n; i++)
        ((void (JNICALL *)(jvmtiEnv *, JNIEnv *, jthread))hub.fn[SLOT(EVENT_VIRTUAL_THREAD_END)][i])(j, e, t);
}

FAN_OUT(JVMTI_EVENT_VM_INIT, VMInit, (jvmtiEnv *j, JNIEnv *e, jthread t), (j, e, t))
FAN_OUT(JVMTI_EVENT_VM_DEATH, VMDeath, (jvmtiEnv *j, JNIEnv *e), (j, e))
FAN_OUT(JVMTI_EVENT_THREAD_START, ThreadStart, (jvmtiEnv *j, JNIEnv *e, jthread t), (j, e, t))
FAN_OUT(JVMTI_EVENT_THREAD_END, ThreadEnd, (jvmtiEnv *j, JNIEnv *e, jthread t), (j, e, t))
FAN_OUT(JVMTI_EVENT_CLASS_LOAD, ClassLoad, (jvmtiEnv *j, JNIEnv *e, jthread t, jclass k), (j, e, t, k))
FAN_OUT(JVMTI_EVENT_CLASS_PREPARE, ClassPrepare, (jvmtiEnv *j, JNIEnv *e, jthread t, jclass k), (j, e, t, k))
FAN_OUT(JVMTI_EVENT_DATA_DUMP_REQUEST, DataDumpRequest, (jvmtiEnv *j), (j))
FAN_OUT(JVMTI_EVENT_COMPILED_METHOD_LOAD, CompiledMethodLoad,
        (jvmtiEnv *j, jmethodID m, jint size, const void *addr, jint map_len,
         const jvmtiAddrLocationMap *map, const void *info),
        (j, m, size, addr, map_len, map, info))
FAN_OUT(JVMTI_EVENT_COMPILED_METHOD_UNLOAD, CompiledMethodUnload,
        (jvmtiEnv *j, jmethodID m, const void *addr), (j, m, addr))
FAN_OUT(JVMTI_EVENT_DYNAMIC_CODE_GENERATED, DynamicCodeGenerated,
        (jvmtiEnv *j, const char *name, const void *addr, jint length), (j, name, addr, length))
FAN_OUT(JVMTI_EVENT_MONITOR_CONTENDED_ENTER, MonitorContendedEnter,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o), (j, e, t, o))
FAN_OUT(JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, MonitorContendedEntered,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o), (j, e, t, o))
FAN_OUT(JVMTI_EVENT_MONITOR_WAIT, MonitorWait,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o, jlong timeout), (j, e, t, o, timeout))
FAN_OUT(JVMTI_EVENT_MONITOR_WAITED, MonitorWaited,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o, jboolean timed_out), (j, e, t, o, timed_out))
FAN_OUT(JVMTI_EVENT_BREAKPOINT, Breakpoint,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m, jlocation l), (j, e, t, m, l))
FAN_OUT(JVMTI_EVENT_SINGLE_STEP, SingleStep,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m, jlocation l), (j, e, t, m, l))
FAN_OUT(JVMTI_EVENT_NATIVE_METHOD_BIND, NativeMethodBind,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m, void *addr, void **new_addr),
        (j, e, t, m, addr, new_addr))
FAN_OUT(JVMTI_EVENT_VM_OBJECT_ALLOC, VMObjectAlloc,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o, jclass k, jlong size), (j, e, t, o, k, size))
FAN_OUT(JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, SampledObjectAlloc,
        (jvmtiEnv *j, JNIEnv *e, jthread t, jobject o, jclass k, jlong size), (j, e, t, o, k, size))
FAN_OUT(JVMTI_EVENT_OBJECT_FREE, ObjectFree, (jvmtiEnv *j, jlong tag), (j, tag))
FAN_OUT(JVMTI_EVENT_GARBAGE_COLLECTION_START, GarbageCollectionStart, (jvmtiEnv *j), (j))
FAN_OUT(JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, GarbageCollectionFinish, (jvmtiEnv *j), (j))

/* ClassFileLoadHook is chained: a subscriber that rewrites the class hands
 * its bytes to the next one; an intermediate version no one returns is freed. */
static void JNICALL fan_ClassFileLoadHook(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
                                          const char *name, jobject domain, jint len,
                                          const unsigned char *data, jint *new_len,
                                          unsigned char **new_data)
{
    int n = hub.count[SLOT(JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)];
    const unsigned char *cur = data;
    jint cur_len = len;
    unsigned char *ours = NULL;             /* JVMTI-allocated version made by a subscriber */
    for (int i = 0; i < n; i++) {
        jint out_len = 0;
        unsigned char *out = NULL;
        ((jvmtiEventClassFileLoadHook)hub.fn[SLOT(JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)][i])(
            jvmti, jni, redefined, loader, name, domain, cur_len, cur, &out_len, &out);
        if (out == NULL)
            continue;
        if (ours)
            (*jvmti)->Deallocate(jvmti, ours);
        ours = out;
        cur = out;
        cur_len = out_len;
    }
    if (ours) {
        *new_data = ours;
        *new_len = cur_len;
    }
}

/* The fan-out callback of each handled event, for events_install. */
static void set_callback(callbacks_jdk21 *all, jvmtiEvent ev)
{
    jvmtiEventCallbacks *cb = &all->jdk17;
    if ((int)ev == (int)EVENT_VIRTUAL_THREAD_END) {
        all->VirtualThreadEnd = fan_VirtualThreadEnd;
        return;
    }
    switch (ev) {
    case JVMTI_EVENT_VM_INIT: cb->VMInit = fan_VMInit; break;
    case JVMTI_EVENT_VM_DEATH: cb->VMDeath = fan_VMDeath; break;
    case JVMTI_EVENT_THREAD_START: cb->ThreadStart = fan_ThreadStart; break;
    case JVMTI_EVENT_THREAD_END: cb->ThreadEnd = fan_ThreadEnd; break;
    case JVMTI_EVENT_CLASS_FILE_LOAD_HOOK: cb->ClassFileLoadHook = fan_ClassFileLoadHook; break;
    case JVMTI_EVENT_CLASS_LOAD: cb->ClassLoad = fan_ClassLoad; break;
    case JVMTI_EVENT_CLASS_PREPARE: cb->ClassPrepare = fan_ClassPrepare; break;
    case JVMTI_EVENT_DATA_DUMP_REQUEST: cb->DataDumpRequest = fan_DataDumpRequest; break;
    case JVMTI_EVENT_COMPILED_METHOD_LOAD: cb->CompiledMethodLoad = fan_CompiledMethodLoad; break;
    case JVMTI_EVENT_COMPILED_METHOD_UNLOAD: cb->CompiledMethodUnload = fan_CompiledMethodUnload; break;
    case JVMTI_EVENT_DYNAMIC_CODE_GENERATED: cb->DynamicCodeGenerated = fan_DynamicCodeGenerated; break;
    case JVMTI_EVENT_MONITOR_CONTENDED_ENTER: cb->MonitorContendedEnter = fan_MonitorContendedEnter; break;
    case JVMTI_EVENT_MONITOR_CONTENDED_ENTERED: cb->MonitorContendedEntered = fan_MonitorContendedEntered; break;
    case JVMTI_EVENT_MONITOR_WAIT: cb->MonitorWait = fan_MonitorWait; break;
    case JVMTI_EVENT_MONITOR_WAITED: cb->MonitorWaited = fan_MonitorWaited; break;
    case JVMTI_EVENT_BREAKPOINT: cb->Breakpoint = fan_Breakpoint; break;
    case JVMTI_EVENT_SINGLE_STEP: cb->SingleStep = fan_SingleStep; break;
    case JVMTI_EVENT_NATIVE_METHOD_BIND: cb->NativeMethodBind = fan_NativeMethodBind; break;
    case JVMTI_EVENT_VM_OBJECT_ALLOC: cb->VMObjectAlloc = fan_VMObjectAlloc; break;
    case JVMTI_EVENT_SAMPLED_OBJECT_ALLOC: cb->SampledObjectAlloc = fan_SampledObjectAlloc; break;
    case JVMTI_EVENT_OBJECT_FREE: cb->ObjectFree = fan_ObjectFree; break;
    case JVMTI_EVENT_GARBAGE_COLLECTION_START: cb->GarbageCollectionStart = fan_GarbageCollectionStart; break;
    case JVMTI_EVENT_GARBAGE_COLLECTION_FINISH: cb->GarbageCollectionFinish = fan_GarbageCollectionFinish; break;
    default: break;
    }
}

static int handled(jvmtiEvent ev)
{
    callbacks_jdk21 probe;
    memset(&probe, 0, sizeof probe);
    set_callback(&probe, ev);
    static const callbacks_jdk21 none;
    return memcmp(&probe, &none, sizeof probe) != 0;
}

int events_subscribe(jvmtiEvent ev, event_fn fn)
{
    if ((int)ev < JVMTI_MIN_EVENT_TYPE_VAL || (int)ev > EVENT_MAX || !handled(ev)) {
        fprintf(stderr, "hprof: internal error: event %d has no fan-out\n", (int)ev);
        return -1;
    }
    pthread_mutex_lock(&hub.lock);
    int n = hub.count[SLOT(ev)], rc = 0;
    for (int i = 0; i < n; i++)
        if (hub.fn[SLOT(ev)][i] == fn)
            goto out;                         /* subscribed already (a second start) */
    if (n == MAX_SUBSCRIBERS) {
        fprintf(stderr, "hprof: internal error: too many subscribers to event %d\n", (int)ev);
        rc = -1;
        goto out;
    }
    hub.fn[SLOT(ev)][n] = fn;
    hub.count[SLOT(ev)] = n + 1;              /* published after the entry */
out:
    pthread_mutex_unlock(&hub.lock);
    return rc;
}

int events_subscribe_all(const event_subscription *subs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (events_subscribe(subs[i].ev, subs[i].fn) != 0)
            return -1;
    return 0;
}

int events_install(jvmtiEnv *jvmti)
{
    callbacks_jdk21 cb;
    memset(&cb, 0, sizeof cb);
    pthread_mutex_lock(&hub.lock);
    for (int ev = JVMTI_MIN_EVENT_TYPE_VAL; ev <= EVENT_MAX; ev++)
        if (hub.count[SLOT(ev)])
            set_callback(&cb, (jvmtiEvent)ev);
    pthread_mutex_unlock(&hub.lock);
    return jvmti_failed((*jvmti)->SetEventCallbacks(jvmti, &cb.jdk17, (jint)sizeof cb), "SetEventCallbacks")
           ? -1 : 0;
}

int events_want(jvmtiEnv *jvmti, jvmtiEvent ev)
{
    pthread_mutex_lock(&hub.lock);
    int rc = 0;
    if (hub.wanted[SLOT(ev)]++ == 0 &&
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, ev, NULL),
                     "SetEventNotificationMode (enable)")) {
        hub.wanted[SLOT(ev)]--;
        rc = -1;
    }
    pthread_mutex_unlock(&hub.lock);
    return rc;
}

void events_unwant(jvmtiEnv *jvmti, jvmtiEvent ev)
{
    pthread_mutex_lock(&hub.lock);
    if (hub.wanted[SLOT(ev)] > 0 && --hub.wanted[SLOT(ev)] == 0)
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, ev, NULL),
                     "SetEventNotificationMode (disable)");
    pthread_mutex_unlock(&hub.lock);
}
