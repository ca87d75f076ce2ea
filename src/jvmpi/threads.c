/*
 * threads: JVMPI names a thread by its JNIEnv *. Each thread the layer meets
 * gets a record, found for the calling thread in a C thread-local variable
 * (no lock, no JVMTI call: METHOD_ENTRY handlers ask for it on every call;
 * a platform thread keeps its OS thread for life) and for another thread
 * through a list under a lock.
 *
 * A thread is announced (THREAD_START) the first time it is seen: at its
 * JVMTI ThreadStart, or, for threads that started before the layer was
 * loaded or before THREAD_START was enabled, at its first event. So the
 * defining event always comes before the thread appears in another event,
 * as the specification promises.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

static struct {
    pthread_mutex_t lock;
    jvmpi_thread   *all;          /* every live record */
} threads = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The calling thread's words; initial-exec (see jvmpi_in_layer): its record
 * is asked for on every METHOD_ENTRY/EXIT. */
static _Thread_local jvmpi_thread_words words __attribute__((tls_model("initial-exec")));

jvmpi_thread_words *jvmpi_words(void) { return &words; }

jvmpi_thread *jvmpi_thread_current(void) { return words.record; }

static jvmpi_thread *make_record(JNIEnv *jni) {
    jthread thread = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetCurrentThread(jvmpi_jvmti, &thread), "GetCurrentThread")) return NULL;
    jvmpi_thread *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->env = jni;
    int was = jvmpi_in_layer;             /* the layer's own reference: no JNI_GLOBALREF_ALLOC */
    jvmpi_in_layer = 1;
    t->thread = (*jni)->NewGlobalRef(jni, thread);
    jvmpi_in_layer = was;
    (*jni)->DeleteLocalRef(jni, thread);
    words.record = t;
    pthread_mutex_lock(&threads.lock);
    t->next = threads.all;
    threads.all = t;
    pthread_mutex_unlock(&threads.lock);
    return t;
}

/* A native thread attaching to the JVM runs its Thread's constructor (Java
 * code, with method events) before it is alive: it has no name yet, so it
 * is announced, and its events posted, from its JVMTI ThreadStart on. */
static int is_started(void) {
    jint state = 0;
    return (*jvmpi_jvmti)->GetThreadState(jvmpi_jvmti, NULL, &state) == JVMTI_ERROR_NONE &&
           (state & JVMTI_THREAD_STATE_ALIVE);
}

jvmpi_thread *jvmpi_thread_here(JNIEnv *jni) {
    jvmpi_thread *t = words.record;
    if (t != NULL && t->env == jni) return t;
    if (!atomic_load(&jvmpi_live) || jni == NULL) return NULL;   /* no Thread objects to speak of yet */
    if (!is_started()) return NULL;
    t = make_record(jni);
    if (t != NULL && jvmpi_enabled(JVMPI_EVENT_THREAD_START)) jvmpi_post_thread_start(jni, t, 0);
    return t;
}

jvmpi_thread *jvmpi_thread_of(JNIEnv *env) {
    jvmpi_thread *t = NULL;
    pthread_mutex_lock(&threads.lock);
    for (t = threads.all; t != NULL && t->env != env; t = t->next) {}
    pthread_mutex_unlock(&threads.lock);
    return t;
}

int jvmpi_threads_snapshot(JNIEnv *jni, JNIEnv **envs, jthread *thread_refs, int max) {
    int n = 0;
    pthread_mutex_lock(&threads.lock);
    for (jvmpi_thread *t = threads.all; t != NULL && n < max; t = t->next) {
        if (t->thread == NULL) continue;
        envs[n] = t->env;
        thread_refs[n] = (*jni)->NewLocalRef(jni, t->thread);
        if (thread_refs[n] != NULL) n++;
    }
    pthread_mutex_unlock(&threads.lock);
    return n;
}

jvmpi_thread *jvmpi_thread_with_object(JNIEnv *jni, jobjectID id) {
    jvmpi_thread *t = NULL;
    pthread_mutex_lock(&threads.lock);
    for (t = threads.all; t != NULL; t = t->next)
        if (t->thread != NULL && jvmpi_id_of(t->thread) == id) break;
    pthread_mutex_unlock(&threads.lock);
    (void)jni;
    return t;
}

/* A string of the Thread's or ThreadGroup's getName(), copied into buf. */
static void name_of(JNIEnv *jni, jobject object, char *buf, size_t size) {
    buf[0] = '\0';
    if (object == NULL) return;
    jclass k = (*jni)->GetObjectClass(jni, object);
    jmethodID get_name = k ? (*jni)->GetMethodID(jni, k, "getName", "()Ljava/lang/String;") : NULL;
    jstring s = get_name ? (jstring)(*jni)->CallObjectMethod(jni, object, get_name) : NULL;
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    if (s != NULL) {
        const char *utf = (*jni)->GetStringUTFChars(jni, s, NULL);
        if (utf != NULL) {
            snprintf(buf, size, "%s", utf);
            (*jni)->ReleaseStringUTFChars(jni, s, utf);
        }
        (*jni)->DeleteLocalRef(jni, s);
    }
    if (k) (*jni)->DeleteLocalRef(jni, k);
}

void jvmpi_post_thread_start(JNIEnv *jni, jvmpi_thread *t, int requested) {
    jvmtiThreadInfo info;
    memset(&info, 0, sizeof info);
    if (jvmpi_failed((*jvmpi_jvmti)->GetThreadInfo(jvmpi_jvmti, t->thread, &info), "GetThreadInfo")) return;
    char group[256], parent[256] = "";
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    name_of(jni, info.thread_group, group, sizeof group);
    /* JVMPI's parent is the group's parent group (the thread's creator is
     * not recorded by the JVM). */
    if (info.thread_group != NULL) {
        jvmtiThreadGroupInfo g;
        memset(&g, 0, sizeof g);
        if ((*jvmpi_jvmti)->GetThreadGroupInfo(jvmpi_jvmti, info.thread_group, &g) == JVMTI_ERROR_NONE) {
            name_of(jni, g.parent, parent, sizeof parent);
            if (g.parent) (*jni)->DeleteLocalRef(jni, g.parent);
            (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)g.name);
        }
    }
    jvmpi_in_layer = was;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_THREAD_START | (requested ? JVMPI_REQUESTED_EVENT : 0), jni);
    e.u.thread_start.thread_name = info.name ? info.name : "";
    e.u.thread_start.group_name = group;
    e.u.thread_start.parent_name = parent;
    e.u.thread_start.thread_id = jvmpi_id_of(t->thread);
    e.u.thread_start.thread_env_id = t->env;
    t->started = 1;
    jvmpi_notify(&e);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)info.name);
    if (info.thread_group) (*jni)->DeleteLocalRef(jni, info.thread_group);
    if (info.context_class_loader) (*jni)->DeleteLocalRef(jni, info.context_class_loader);
}

static void forget(JNIEnv *jni, jvmpi_thread *t) {
    pthread_mutex_lock(&threads.lock);
    for (jvmpi_thread **p = &threads.all; *p != NULL; p = &(*p)->next)
        if (*p == t) { *p = t->next; break; }
    pthread_mutex_unlock(&threads.lock);
    words.record = NULL;
    int was = jvmpi_in_layer;             /* the layer's own reference: no JNI_GLOBALREF_FREE */
    jvmpi_in_layer = 1;
    if (t->thread) (*jni)->DeleteGlobalRef(jni, t->thread);
    jvmpi_in_layer = was;
    free(t->class_kinds);
    free(t->frame_memos);
    jvmpi_instructions_forget_thread(t->stepping);
    free(t);
}

void jvmpi_thread_end(JNIEnv *jni) {
    jvmpi_thread *t = words.record;
    if (t == NULL || t->env != jni) return;
    if (jvmpi_enabled(JVMPI_EVENT_THREAD_END)) {
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_THREAD_END, jni);
        jvmpi_notify(&e);
    }
    forget(jni, t);
}
