/* vthread_mounts.c: see vthread_mounts.h. */
#include "vthread_mounts.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../cpu/sampler.h"
#include "jvmti_support.h"

static const char MOUNT_ID[] = "com.sun.hotspot.events.VirtualThreadMount";
static const char UNMOUNT_ID[] = "com.sun.hotspot.events.VirtualThreadUnmount";

static jint mount_index = -1, unmount_index = -1;
static atomic_ullong unnamed;

/* The serial of a virtual thread being mounted (vthread_serial_bounded),
 * or 0, counted. */
static uint32_t serial_for(JNIEnv *jni, jthread vthread)
{
    serial_t serial = vthread_serial_bounded(jni, vthread);
    if (serial == 0)
        atomic_fetch_add_explicit(&unnamed, 1, memory_order_relaxed);
    return serial;
}

/* Extension events are called as jvmtiExtensionEvent, a variadic type:
 * (jvmtiEnv *, JNIEnv *, jthread virtual_thread). */
static void JNICALL on_mount(jvmtiEnv *jvmti, ...)
{
    (void)jvmti;
    va_list ap;
    va_start(ap, jvmti);
    JNIEnv *jni = va_arg(ap, JNIEnv *);
    jthread vthread = va_arg(ap, jthread);
    va_end(ap);
    sampler_set_mounted(jni && vthread ? serial_for(jni, vthread) : 0);
}

static void JNICALL on_unmount(jvmtiEnv *jvmti, ...)
{
    (void)jvmti;
    sampler_set_mounted(0);
}

static void free_event_infos(jvmtiEnv *jvmti, jvmtiExtensionEventInfo *events, jint n)
{
    for (jint i = 0; i < n; i++) {
        for (jint p = 0; p < events[i].param_count; p++)
            jvmti_free(events[i].params[p].name);
        jvmti_free(events[i].params);
        jvmti_free(events[i].id);
        jvmti_free(events[i].short_description);
    }
    (void)jvmti;
    jvmti_free(events);
}

int vthread_mounts_start(jvmtiEnv *jvmti)
{
    if (mount_index < 0) {
        jint n = 0;
        jvmtiExtensionEventInfo *events = NULL;
        if (jvmti_failed((*jvmti)->GetExtensionEvents(jvmti, &n, &events), "GetExtensionEvents"))
            return -1;
        for (jint i = 0; i < n; i++) {
            if (strcmp(events[i].id, MOUNT_ID) == 0)
                mount_index = events[i].extension_event_index;
            else if (strcmp(events[i].id, UNMOUNT_ID) == 0)
                unmount_index = events[i].extension_event_index;
        }
        free_event_infos(jvmti, events, n);
        if (mount_index < 0 || unmount_index < 0) {
            mount_index = unmount_index = -1;
            fprintf(stderr, "hprof: warning: cpu=samples: thread=y: this JVM does not tell which virtual "
                    "thread a carrier runs (no %s event): samples of virtual threads are charged to "
                    "their carrier thread\n", MOUNT_ID);
            return -1;
        }
    }
    if (jvmti_failed((*jvmti)->SetExtensionEventCallback(jvmti, mount_index, (jvmtiExtensionEvent)on_mount),
                     "SetExtensionEventCallback (VirtualThreadMount)"))
        return -1;
    if (jvmti_failed((*jvmti)->SetExtensionEventCallback(jvmti, unmount_index,
                                                         (jvmtiExtensionEvent)on_unmount),
                     "SetExtensionEventCallback (VirtualThreadUnmount)")) {
        (*jvmti)->SetExtensionEventCallback(jvmti, mount_index, NULL);
        return -1;
    }
    /* HotSpot posts them to an environment that also enabled them, by
     * their index as the event type. */
    if (jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)mount_index, NULL),
                     "SetEventNotificationMode (VirtualThreadMount)") ||
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)unmount_index, NULL),
                     "SetEventNotificationMode (VirtualThreadUnmount)")) {
        vthread_mounts_stop(jvmti);
        return -1;
    }
    return 0;
}

void vthread_mounts_stop(jvmtiEnv *jvmti)
{
    if (mount_index < 0)
        return;
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, (jvmtiEvent)mount_index, NULL);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, (jvmtiEvent)unmount_index, NULL);
    (*jvmti)->SetExtensionEventCallback(jvmti, mount_index, NULL);
    (*jvmti)->SetExtensionEventCallback(jvmti, unmount_index, NULL);
}

uint64_t vthread_mounts_unnamed(void)
{
    return atomic_load(&unnamed);
}
