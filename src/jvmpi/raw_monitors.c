/*
 * raw_monitors: the agent's raw monitors. Each is a JVMTI raw monitor plus
 * what JVMTI does not tell about one: its owner, entry count and the threads
 * waiting to enter it or to be notified. That bookkeeping gives MONITOR_DUMP
 * its JVMPI_MONITOR_RAW records and the RAW_MONITOR_CONTENDED_* events
 * (not for monitors whose name starts with '_', as the specification says).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

static struct {
    pthread_mutex_t    lock;       /* guards every monitor's bookkeeping and the list */
    jvmpi_raw_monitor *all;
} raw = { .lock = PTHREAD_MUTEX_INITIALIZER };

static JNIEnv *env_here(void) {
    JNIEnv *jni = NULL;
    if (jvmpi_vm == NULL || (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) != JNI_OK) return NULL;
    return jni;
}

static void list_add(JNIEnv **list, int *n, JNIEnv *env) {
    if (env != NULL && *n < JVMPI_RAW_WAITERS) list[(*n)++] = env;
}

static void list_remove(JNIEnv **list, int *n, JNIEnv *env) {
    for (int i = 0; i < *n; i++)
        if (list[i] == env) { list[i] = list[--*n]; return; }
}

static void post_raw(jint type, jvmpi_raw_monitor *m, JNIEnv *env) {
    if (m->name[0] == '_' || !jvmpi_enabled(type) || env == NULL) return;
    JVMPI_Event e = jvmpi_event(type, env);
    e.u.raw_monitor.name = m->name;
    e.u.raw_monitor.id = (JVMPI_RawMonitor)m;
    jvmpi_notify(&e);
}

JVMPI_RawMonitor jvmpi_raw_create(char *name) {
    jvmpi_raw_monitor *m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    m->name = strdup(name ? name : "");
    if (m->name == NULL ||
        jvmpi_failed((*jvmpi_jvmti)->CreateRawMonitor(jvmpi_jvmti, m->name, &m->id), "CreateRawMonitor")) {
        free(m->name);
        free(m);
        return NULL;
    }
    pthread_mutex_lock(&raw.lock);
    m->next = raw.all;
    raw.all = m;
    pthread_mutex_unlock(&raw.lock);
    return (JVMPI_RawMonitor)m;
}

void jvmpi_raw_enter(JVMPI_RawMonitor handle) {
    jvmpi_raw_monitor *m = (jvmpi_raw_monitor *)handle;
    if (m == NULL) return;
    JNIEnv *env = env_here();
    pthread_mutex_lock(&raw.lock);
    int contended = m->owner != NULL && m->owner != env;
    if (contended) list_add(m->entering, &m->n_entering, env);
    pthread_mutex_unlock(&raw.lock);
    if (contended) post_raw(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, m, env);
    if (jvmpi_failed((*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, m->id), "RawMonitorEnter")) return;
    pthread_mutex_lock(&raw.lock);
    if (contended) list_remove(m->entering, &m->n_entering, env);
    m->owner = env;
    m->entries++;
    pthread_mutex_unlock(&raw.lock);
    if (contended) post_raw(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED, m, env);
}

void jvmpi_raw_exit(JVMPI_RawMonitor handle) {
    jvmpi_raw_monitor *m = (jvmpi_raw_monitor *)handle;
    if (m == NULL) return;
    JNIEnv *env = env_here();
    pthread_mutex_lock(&raw.lock);
    int last = m->entries <= 1, others_wait = m->n_entering > 0;
    if (m->entries > 0) m->entries--;
    if (last) m->owner = NULL;
    pthread_mutex_unlock(&raw.lock);
    jvmpi_failed((*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, m->id), "RawMonitorExit");
    if (last && others_wait) post_raw(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT, m, env);
}

/* Waiting gives the monitor up, whatever the entry count, until notified. */
void jvmpi_raw_wait(JVMPI_RawMonitor handle, jlong ms) {
    jvmpi_raw_monitor *m = (jvmpi_raw_monitor *)handle;
    if (m == NULL) return;
    JNIEnv *env = env_here();
    pthread_mutex_lock(&raw.lock);
    int entries = m->entries;
    m->owner = NULL;
    m->entries = 0;
    list_add(m->notified, &m->n_notified, env);
    pthread_mutex_unlock(&raw.lock);
    jvmtiError err = (*jvmpi_jvmti)->RawMonitorWait(jvmpi_jvmti, m->id, ms);
    if (err != JVMTI_ERROR_INTERRUPT) jvmpi_failed(err, "RawMonitorWait");
    pthread_mutex_lock(&raw.lock);
    list_remove(m->notified, &m->n_notified, env);
    m->owner = env;
    m->entries = entries;
    pthread_mutex_unlock(&raw.lock);
}

void jvmpi_raw_notify_all(JVMPI_RawMonitor handle) {
    jvmpi_raw_monitor *m = (jvmpi_raw_monitor *)handle;
    if (m != NULL) jvmpi_failed((*jvmpi_jvmti)->RawMonitorNotifyAll(jvmpi_jvmti, m->id), "RawMonitorNotifyAll");
}

void jvmpi_raw_destroy(JVMPI_RawMonitor handle) {
    jvmpi_raw_monitor *m = (jvmpi_raw_monitor *)handle;
    if (m == NULL) return;
    pthread_mutex_lock(&raw.lock);
    for (jvmpi_raw_monitor **p = &raw.all; *p != NULL; p = &(*p)->next)
        if (*p == m) { *p = m->next; break; }
    pthread_mutex_unlock(&raw.lock);
    jvmpi_failed((*jvmpi_jvmti)->DestroyRawMonitor(jvmpi_jvmti, m->id), "DestroyRawMonitor");
    free(m->name);
    free(m);
}

void jvmpi_raw_each(void (*fn)(const jvmpi_raw_monitor *m, void *context), void *context) {
    pthread_mutex_lock(&raw.lock);
    for (jvmpi_raw_monitor *m = raw.all; m != NULL; m = m->next) fn(m, context);
    pthread_mutex_unlock(&raw.lock);
}
