/* vthread_mounts.c: see vthread_mounts.h. */
#include "vthread_mounts.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../sampler/sampler.h"
#include "jvmti_support.h"

static const char MOUNT_ID[] = "com.sun.hotspot.events.VirtualThreadMount";

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

int vthread_mounts_start(jvmtiEnv *jvmti)
{
    if (jvmti_mount_events_on(jvmti, (jvmtiExtensionEvent)on_mount, (jvmtiExtensionEvent)on_unmount) != 0) {
        fprintf(stderr, "hprof: warning: cpu=samples: thread=y: this JVM does not tell which virtual "
                "thread a carrier runs (no %s event): samples of virtual threads are charged to "
                "their carrier thread\n", MOUNT_ID);
        return -1;
    }
    return 0;
}

void vthread_mounts_stop(jvmtiEnv *jvmti)
{
    jvmti_mount_events_off(jvmti);
}

uint64_t vthread_mounts_unnamed(void)
{
    return atomic_load(&unnamed);
}
