/* vthread_clock: see vthread_clock.h. */
#include "vthread_clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/thread_cpu.h"
#include "jvmti_support.h"

/* One virtual thread's clock. Only events and calls on that virtual thread
 * touch it, and it runs on one carrier at a time: no lock. */
typedef struct vthread_time {
    jlong spent;                 /* CPU ns of its mounts that ended */
    jlong mounted_at;            /* the carrier's CPU ns at its mount; -1 while unmounted */
} vthread_time;

/* `ended`: the storage of a virtual thread that ended: code it runs after
 * its VirtualThreadEnd (the JDK's clean-up in VirtualThread.run) is not its own. */
static struct {
    jvmtiEnv    *env;            /* this module's: its thread-local storage holds the clocks */
    jclass       virtual_class;  /* java.lang.VirtualThread (global reference) */
    int          on;
    vthread_time ended;
} clocks;

/* `lent`: CPU ns this OS thread, a carrier, spent running virtual threads
 * (between their mounts and unmounts): theirs, not the carrier's. Every
 * virtual thread's span counts, with a clock or not (one running since
 * before an attach has none until it calls instrumented code). */
static _Thread_local struct {
    jlong lent;
    jlong mounted_at;            /* the carrier's CPU ns at the mount of the virtual thread it runs; -1 if none */
} this_carrier = { .mounted_at = -1 };

jlong *vthread_clock_lent_word(void)
{
    return &this_carrier.lent;
}

/* The calling OS thread's (the carrier's) CPU time, ns. */
static jlong carrier_cpu(void)
{
    return (jlong)thread_cpu_now();
}

static vthread_time *clock_of(jthread vthread)
{
    void *data = NULL;
    if ((*clocks.env)->GetThreadLocalStorage(clocks.env, vthread, &data) != JVMTI_ERROR_NONE)
        return NULL;
    return data;
}

/* Extension events are called as jvmtiExtensionEvent, a variadic type:
 * (jvmtiEnv *, JNIEnv *, jthread virtual_thread). Its clock, if it has one. */
static vthread_time *clock_of_event(va_list ap)
{
    (void)va_arg(ap, JNIEnv *);
    jthread vthread = va_arg(ap, jthread);
    vthread_time *t = vthread ? clock_of(vthread) : NULL;
    return t != &clocks.ended ? t : NULL;
}

static void JNICALL on_mount(jvmtiEnv *jvmti, ...)
{
    va_list ap;
    va_start(ap, jvmti);
    vthread_time *t = clock_of_event(ap);
    va_end(ap);
    this_carrier.mounted_at = carrier_cpu();
    if (t)
        t->mounted_at = this_carrier.mounted_at;
}

static void JNICALL on_unmount(jvmtiEnv *jvmti, ...)
{
    va_list ap;
    va_start(ap, jvmti);
    vthread_time *t = clock_of_event(ap);
    va_end(ap);
    jlong now = carrier_cpu();
    if (t && t->mounted_at >= 0) {
        t->spent += now - t->mounted_at;
        t->mounted_at = -1;
    }
    if (this_carrier.mounted_at >= 0) {
        /* Read by the carrier's tracker state (a plain volatile read in Java). */
        __atomic_store_n(&this_carrier.lent, this_carrier.lent + (now - this_carrier.mounted_at),
                         __ATOMIC_RELEASE);
        this_carrier.mounted_at = -1;
    }
}

int vthread_clock_start(JavaVM *vm, JNIEnv *jni)
{
    if (clocks.env == NULL) {
        jclass vt = (*jni)->FindClass(jni, "java/lang/VirtualThread");
        if (vt == NULL) {                   /* JDK 17: no virtual threads */
            (*jni)->ExceptionClear(jni);
            return -1;
        }
        jvmtiEnv *env = jvmti_virtual_thread_env(vm);
        if (env == NULL) {
            (*jni)->DeleteLocalRef(jni, vt);
            return -1;
        }
        clocks.virtual_class = (*jni)->NewGlobalRef(jni, vt);
        (*jni)->DeleteLocalRef(jni, vt);
        clocks.env = env;
    }
    if (clocks.on)
        return 0;
    if (jvmti_mount_events_on(clocks.env, (jvmtiExtensionEvent)on_mount, (jvmtiExtensionEvent)on_unmount) != 0) {
        fprintf(stderr, "hprof: warning: cpu=times: this JVM does not tell when a virtual thread is mounted "
                "(no VirtualThreadMount event): a virtual thread's time is its carrier's, other virtual "
                "threads' included\n");
        return -1;
    }
    clocks.on = 1;
    return 0;
}

void vthread_clock_stop(void)
{
    if (clocks.on)
        jvmti_mount_events_off(clocks.env);
    clocks.on = 0;
}

int vthread_clock_is_virtual(JNIEnv *jni, jthread thread)
{
    return clocks.virtual_class != NULL && thread != NULL &&
           (*jni)->IsInstanceOf(jni, thread, clocks.virtual_class) == JNI_TRUE;
}

jlong vthread_clock_now(JNIEnv *jni, jthread vthread)
{
    if (!clocks.on)
        return -1;
    /* The current thread's storage (NULL): HotSpot reads it directly, where
     * naming the thread costs a handshake-safe look-up on every call. It is
     * the virtual thread's while JVMTI sees it mounted; around its mounts
     * JVMTI's current thread is the carrier, whose storage here is always
     * empty: that is checked before a clock is made. */
    void *data = NULL;
    if ((*clocks.env)->GetThreadLocalStorage(clocks.env, NULL, &data) != JVMTI_ERROR_NONE || data == &clocks.ended)
        return -1;
    vthread_time *t = data;
    jlong now = carrier_cpu();
    if (t == NULL) {
        if (!jvmti_is_current(jni, vthread))
            return -1;
        /* Its first reading: it is mounted now, and its time starts here. */
        t = malloc(sizeof *t);
        if (t == NULL)
            return -1;
        t->spent = 0;
        t->mounted_at = now;
        if ((*clocks.env)->SetThreadLocalStorage(clocks.env, NULL, t) != JVMTI_ERROR_NONE) {
            free(t);
            return -1;
        }
    }
    return t->spent + (t->mounted_at >= 0 ? now - t->mounted_at : 0);
}

void vthread_clock_end(jthread vthread)
{
    if (clocks.env == NULL)
        return;
    vthread_time *t = clock_of(vthread);
    if ((*clocks.env)->SetThreadLocalStorage(clocks.env, vthread, &clocks.ended) == JVMTI_ERROR_NONE && t != &clocks.ended)
        free(t);
}
