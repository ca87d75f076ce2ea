/*
 * method_counter: the JVMPI specification's own example (section 1.5), a
 * per-thread method counter kept in JVMPI thread-local storage, grown to
 * count, per thread, the entries and exits of the methods of one class.
 * Written to the specification alone.
 *
 * Options: out=FILE,class=NAME[,entry2] (NAME in internal form, e.g.
 * JvmpiCalls); entry2: METHOD_ENTRY2 too.
 * Writes to FILE, when each thread ends (or at JVM_SHUT_DOWN for one that
 * has not):
 *   thread NAME total N
 *   method NAME METHOD entries E exits X
 *   entry2 NAME METHOD objects O nulls N  (METHOD_ENTRY2: with an object, without)
 * and, the first time a thread enters a method called "leaf", its call
 * trace: trace NAME METHOD:LINE METHOD:LINE ...
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METHODS 64

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char class_name[256];

/* The methods of the class watched, from its CLASS_LOAD. */
static struct { jmethodID id; char name[64]; } methods[MAX_METHODS];
static int n_methods;

typedef struct counter {
    char name[128];
    long total;                        /* the specification's counter */
    long entries[MAX_METHODS], exits[MAX_METHODS];
    long with_object[MAX_METHODS], without_object[MAX_METHODS];
    int  traced;
    int  written;
} counter;

static int method_index(jmethodID id) {
    for (int i = 0; i < n_methods; i++)
        if (methods[i].id == id) return i;
    return -1;
}

static const char *method_name(jmethodID id) {
    int i = method_index(id);
    return i < 0 ? "?" : methods[i].name;
}

static void thread_start(JVMPI_Event *e) {
    counter *c = calloc(1, sizeof *c);
    if (c == NULL) return;
    snprintf(c->name, sizeof c->name, "%s", e->u.thread_start.thread_name);
    jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, c);
}

static void write_counter(counter *c) {
    if (c == NULL || c->written) return;
    c->written = 1;
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "thread %s total %ld\n", c->name, c->total);
    for (int i = 0; i < n_methods; i++)
        if (c->entries[i] || c->exits[i])
            fprintf(out, "method %s %s entries %ld exits %ld\n", c->name, methods[i].name, c->entries[i],
                    c->exits[i]);
    for (int i = 0; i < n_methods; i++)
        if (c->with_object[i] || c->without_object[i])
            fprintf(out, "entry2 %s %s objects %ld nulls %ld\n", c->name, methods[i].name, c->with_object[i],
                    c->without_object[i]);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void thread_end(JVMPI_Event *e) {
    counter *c = jvmpi->GetThreadLocalStorage(e->env_id);
    write_counter(c);
    jvmpi->SetThreadLocalStorage(e->env_id, NULL);
    free(c);
}

static void class_load(JVMPI_Event *e) {
    if (strcmp(e->u.class_load.class_name, class_name) != 0) return;
    jvmpi->RawMonitorEnter(lock);
    for (int i = 0; i < e->u.class_load.num_methods && n_methods < MAX_METHODS; i++) {
        methods[n_methods].id = e->u.class_load.methods[i].method_id;
        snprintf(methods[n_methods].name, sizeof methods[n_methods].name, "%s",
                 e->u.class_load.methods[i].method_name);
        n_methods++;
    }
    jvmpi->RawMonitorExit(lock);
}

static void write_trace(counter *c, JNIEnv *env) {
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace trace = { env, 0, frames };
    jvmpi->GetCallTrace(&trace, 4);
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "trace %s", c->name);
    for (int i = 0; i < trace.num_frames; i++)
        fprintf(out, " %s:%d", method_name(frames[i].method_id), (int)frames[i].lineno);
    fprintf(out, "\n");
    jvmpi->RawMonitorExit(lock);
}

static void method_event(JVMPI_Event *e, int entry) {
    counter *c = jvmpi->GetThreadLocalStorage(e->env_id);
    if (c == NULL) return;
    int i = method_index(e->u.method.method_id);
    if (entry) c->total++;
    if (i < 0) return;
    if (entry) c->entries[i]++;
    else c->exits[i]++;
    if (entry && !c->traced && strcmp(methods[i].name, "leaf") == 0) {
        c->traced = 1;
        write_trace(c, e->env_id);
    }
}

static void method_entry2(JVMPI_Event *e) {
    counter *c = jvmpi->GetThreadLocalStorage(e->env_id);
    int i = method_index(e->u.method_entry2.method_id);
    if (c == NULL || i < 0) return;
    if (e->u.method_entry2.obj_id != NULL) c->with_object[i]++;
    else c->without_object[i]++;
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_THREAD_START: thread_start(e); break;
    case JVMPI_EVENT_THREAD_END:   thread_end(e); break;
    case JVMPI_EVENT_CLASS_LOAD:   class_load(e); break;
    case JVMPI_EVENT_METHOD_ENTRY: method_event(e, 1); break;
    case JVMPI_EVENT_METHOD_EXIT:  method_event(e, 0); break;
    case JVMPI_EVENT_METHOD_ENTRY2: method_entry2(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        write_counter(jvmpi->GetThreadLocalStorage(e->env_id));
        fclose(out);
        out = fopen("/dev/null", "w");
        break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    char path[1024];
    if (options == NULL || !agent_option(options, "out=", path, sizeof path) ||
        !agent_option(options, "class=", class_name, sizeof class_name)) {
        fprintf(stderr, "method_counter: options out=FILE,class=NAME\n");
        return JNI_ERR;
    }
    out = fopen(path, "w");
    if (out == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_method_counter");
    static const jint events[] = { JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_CLASS_LOAD,
                                   JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_EXIT, JVMPI_EVENT_JVM_SHUT_DOWN };
    if (agent_enable(jvmpi, events, AGENT_COUNT(events)) != JNI_OK) return JNI_ERR;
    if (strstr(options, "entry2") != NULL && jvmpi->EnableEvent(JVMPI_EVENT_METHOD_ENTRY2, NULL) != JVMPI_SUCCESS)
        return JNI_ERR;
    return JNI_OK;
}
