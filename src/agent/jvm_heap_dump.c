/* jvm_heap_dump: see jvm_heap_dump.h. */
#include "jvm_heap_dump.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "orchestrator.h"

/* The JVM's dumper says nothing while it runs (a VM operation, the agent
 * thread waits in JNI): a thread of ours reports how far its file has grown,
 * every 2 s of a long dump, as the agent's own walk does. */
typedef struct watch {
    const char     *path;
    pthread_mutex_t lock;
    pthread_cond_t  wake;
    int             done;
} watch;

static void *watch_file(void *arg)
{
    watch *w = arg;
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        next.tv_sec += 2;
        while (!w->done && pthread_cond_timedwait(&w->wake, &w->lock, &next) == 0) { }
        if (w->done)
            break;
        struct stat st;
        if (stat(w->path, &st) == 0)
            agent_progress("hprof: heap dump: %lld MB written by the JVM's dumper so far",
                           (long long)(st.st_size >> 20));
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* The pending exception, cleared, as its toString() in why. */
static void take_exception(JNIEnv *jni, const char *doing, char *why, size_t size)
{
    jthrowable e = (*jni)->ExceptionOccurred(jni);
    (*jni)->ExceptionClear(jni);
    snprintf(why, size, "%s failed", doing);
    if (e == NULL)
        return;
    jclass c = (*jni)->GetObjectClass(jni, e);
    jmethodID to_string = c ? (*jni)->GetMethodID(jni, c, "toString", "()Ljava/lang/String;") : NULL;
    jstring s = to_string ? (jstring)(*jni)->CallObjectMethod(jni, e, to_string) : NULL;
    if ((*jni)->ExceptionCheck(jni)) {
        (*jni)->ExceptionClear(jni);
        return;
    }
    const char *text = s ? (*jni)->GetStringUTFChars(jni, s, NULL) : NULL;
    if (text) {
        snprintf(why, size, "%s: %s", doing, text);
        (*jni)->ReleaseStringUTFChars(jni, s, text);
    }
}

/* The platform's HotSpotDiagnosticMXBean (a local reference) and its class
 * (in *bean_class), or NULL with the reason in why. */
static jobject diagnostic_bean(JNIEnv *jni, jclass *bean_class, char *why, size_t why_size)
{
    jclass factory = (*jni)->FindClass(jni, "java/lang/management/ManagementFactory");
    if (factory == NULL) {
        take_exception(jni, "finding java.lang.management.ManagementFactory", why, why_size);
        return NULL;
    }
    *bean_class = (*jni)->FindClass(jni, "com/sun/management/HotSpotDiagnosticMXBean");
    if (*bean_class == NULL) {
        take_exception(jni, "finding com.sun.management.HotSpotDiagnosticMXBean", why, why_size);
        return NULL;
    }
    jmethodID get = (*jni)->GetStaticMethodID(jni, factory, "getPlatformMXBean",
                                              "(Ljava/lang/Class;)Ljava/lang/management/PlatformManagedObject;");
    if (get == NULL) {
        take_exception(jni, "finding ManagementFactory.getPlatformMXBean", why, why_size);
        return NULL;
    }
    jobject bean = (*jni)->CallStaticObjectMethod(jni, factory, get, *bean_class);
    if ((*jni)->ExceptionCheck(jni) || bean == NULL) {
        take_exception(jni, "ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)", why, why_size);
        return NULL;
    }
    return bean;
}

/* A local frame pushed (the caller pops it), then the bean in it as
 * diagnostic_bean gives it (NULL with why set): 0; -1 when no frame could
 * be pushed (why set). */
static int bean_frame(JNIEnv *jni, jobject *bean, jclass *bean_class, char *why, size_t why_size)
{
    if ((*jni)->PushLocalFrame(jni, 16) != 0) {
        (*jni)->ExceptionClear(jni);
        snprintf(why, why_size, "out of memory for JNI local references");
        return -1;
    }
    *bean = diagnostic_bean(jni, bean_class, why, why_size);
    return 0;
}

int jvm_flag_is_true(JNIEnv *jni, const char *flag, char *why, size_t why_size)
{
    jclass bean_class = NULL;
    jobject bean = NULL;
    if (bean_frame(jni, &bean, &bean_class, why, why_size) != 0)
        return -1;
    int rc = -1;
    jmethodID get = bean ? (*jni)->GetMethodID(jni, bean_class, "getVMOption",
                                               "(Ljava/lang/String;)Lcom/sun/management/VMOption;") : NULL;
    jclass option_class = get ? (*jni)->FindClass(jni, "com/sun/management/VMOption") : NULL;
    jmethodID value = option_class ? (*jni)->GetMethodID(jni, option_class, "getValue", "()Ljava/lang/String;")
                                   : NULL;
    jstring name = value ? (*jni)->NewStringUTF(jni, flag) : NULL;
    jobject option = name ? (*jni)->CallObjectMethod(jni, bean, get, name) : NULL;
    jstring text = option && !(*jni)->ExceptionCheck(jni) ? (*jni)->CallObjectMethod(jni, option, value) : NULL;
    if (bean && (text == NULL || (*jni)->ExceptionCheck(jni))) {
        take_exception(jni, "HotSpotDiagnosticMXBean.getVMOption", why, why_size);
        goto out;
    }
    const char *chars = text ? (*jni)->GetStringUTFChars(jni, text, NULL) : NULL;
    if (chars) {
        rc = strcmp(chars, "true") == 0;
        (*jni)->ReleaseStringUTFChars(jni, text, chars);
    }
out:
    (*jni)->PopLocalFrame(jni, NULL);
    return rc;
}

int jvm_heap_dump(JNIEnv *jni, const char *path, int live, char *why, size_t why_size)
{
    jclass bean_class = NULL;
    jobject bean = NULL;
    if (bean_frame(jni, &bean, &bean_class, why, why_size) != 0)
        return -1;
    int rc = -1;
    if (bean == NULL)
        goto out;
    jmethodID dump = (*jni)->GetMethodID(jni, bean_class, "dumpHeap", "(Ljava/lang/String;Z)V");
    if (dump == NULL) {
        take_exception(jni, "finding HotSpotDiagnosticMXBean.dumpHeap", why, why_size);
        goto out;
    }
    jstring file = (*jni)->NewStringUTF(jni, path);
    if (file == NULL) {
        take_exception(jni, "NewStringUTF", why, why_size);
        goto out;
    }
    watch w = { path, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    pthread_t watcher;
    int watching = pthread_create(&watcher, NULL, watch_file, &w) == 0;   /* else no progress: no harm */
    (*jni)->CallVoidMethod(jni, bean, dump, file, live ? JNI_TRUE : JNI_FALSE);
    if (watching) {
        pthread_mutex_lock(&w.lock);
        w.done = 1;
        pthread_cond_signal(&w.wake);
        pthread_mutex_unlock(&w.lock);
        pthread_join(watcher, NULL);
    }
    if ((*jni)->ExceptionCheck(jni)) {
        take_exception(jni, "HotSpotDiagnosticMXBean.dumpHeap", why, why_size);
        goto out;
    }
    rc = 0;
out:
    (*jni)->PopLocalFrame(jni, NULL);
    return rc;
}
