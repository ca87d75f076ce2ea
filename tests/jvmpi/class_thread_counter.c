/*
 * class_thread_counter: counts CLASS_LOAD, THREAD_START/END and GC events,
 * written to the JVMPI specification alone.
 *
 * Options: out=FILE[,prefix=P][,fail][,usage]. `fail`: JVM_OnLoad returns JNI_ERR
 * (the loader must stop the JVM); `usage`: JVM_OnLoad prints a usage on
 * standard output and calls ProfilerExit(3), as JCov's `help` does. Writes to FILE:
 *   init                                    at JVM_INIT_DONE
 *   requested NAME                          RequestEvent(CLASS_LOAD) of
 *                                           java/lang/Object, at JVM_INIT_DONE
 *   class NAME source S interfaces I methods M (m1 m2 ...) statics (f ...) instances (f ...)
 *                                           for each class whose name starts with P
 *   start NAME group G                      THREAD_START
 *   end NAME                                THREAD_END (name from its THREAD_START)
 *   summary classes C duplicates D object O gc_start S gc_finish F unbalanced U
 *                                           at JVM_SHUT_DOWN
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char prefix[256];

/* Class ids seen (to find a class announced twice). */
static jobjectID *class_ids;
static long n_classes, cap_classes, duplicates, object_loads;
static jobjectID object_class;
static long gc_starts, gc_finishes, unbalanced;
static int in_gc;

/* Thread names by JNIEnv, from THREAD_START. */
static struct thread_name { JNIEnv *env; char name[128]; struct thread_name *next; } *names;

static void remember_class(jobjectID id) {
    for (long i = 0; i < n_classes; i++)
        if (class_ids[i] == id) { duplicates++; return; }
    if (n_classes == cap_classes) {
        cap_classes = cap_classes ? cap_classes * 2 : 1024;
        class_ids = realloc(class_ids, (size_t)cap_classes * sizeof *class_ids);
        if (class_ids == NULL) abort();
    }
    class_ids[n_classes++] = id;
}

static void write_fields(const char *what, JVMPI_Field *f, jint n) {
    fprintf(out, " %s (", what);
    for (jint i = 0; i < n; i++) fprintf(out, "%s%s:%s", i ? " " : "", f[i].field_name, f[i].field_signature);
    fprintf(out, ")");
}

static void class_load(JVMPI_Event *e, int requested) {
    jvmpi->RawMonitorEnter(lock);
    const char *name = e->u.class_load.class_name;
    if (requested) {
        fprintf(out, "requested %s\n", name);
    } else {
        remember_class(e->u.class_load.class_id);
        if (strcmp(name, "java/lang/Object") == 0) {
            object_loads++;
            object_class = e->u.class_load.class_id;
        }
    }
    if (!requested && prefix[0] && strncmp(name, prefix, strlen(prefix)) == 0) {
        fprintf(out, "class %s source %s interfaces %d methods %d (", name, e->u.class_load.source_name,
                (int)e->u.class_load.num_interfaces, (int)e->u.class_load.num_methods);
        for (jint i = 0; i < e->u.class_load.num_methods; i++)
            fprintf(out, "%s%s%s", i ? " " : "", e->u.class_load.methods[i].method_name,
                    e->u.class_load.methods[i].method_signature);
        fprintf(out, ")");
        write_fields("statics", e->u.class_load.statics, e->u.class_load.num_static_fields);
        write_fields("instances", e->u.class_load.instances, e->u.class_load.num_instance_fields);
        fprintf(out, "\n");
    }
    jvmpi->RawMonitorExit(lock);
}

static void thread_start(JVMPI_Event *e) {
    struct thread_name *t = calloc(1, sizeof *t);
    if (t == NULL) return;
    t->env = e->u.thread_start.thread_env_id;
    snprintf(t->name, sizeof t->name, "%s", e->u.thread_start.thread_name);
    jvmpi->RawMonitorEnter(lock);
    t->next = names;
    names = t;
    fprintf(out, "start %s group %s\n", t->name, e->u.thread_start.group_name);
    jvmpi->RawMonitorExit(lock);
}

static void thread_end(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    for (struct thread_name *t = names; t != NULL; t = t->next)
        if (t->env == e->env_id) { fprintf(out, "end %s\n", t->name); t->env = NULL; break; }
    jvmpi->RawMonitorExit(lock);
}

/* The specification: take the locks OBJECT_FREE needs at GC_START, release
 * them at GC_FINISH. */
static void gc_start(void) {
    jvmpi->RawMonitorEnter(lock);
    if (in_gc) unbalanced++;
    in_gc = 1;
    gc_starts++;
}

static void gc_finish(JVMPI_Event *e) {
    (void)e;
    if (!in_gc) unbalanced++;
    in_gc = 0;
    gc_finishes++;
    jvmpi->RawMonitorExit(lock);
}

static void init_done(void) {
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "init\n");
    jobjectID object = object_class;
    jvmpi->RawMonitorExit(lock);
    jvmpi->DisableGC();
    if (object == NULL || jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, object) != JVMPI_SUCCESS)
        fprintf(out, "request failed\n");
    jvmpi->EnableGC();
}

static void shut_down(void) {
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "summary classes %ld duplicates %ld object %ld gc_start %ld gc_finish %ld unbalanced %ld\n",
            n_classes, duplicates, object_loads, gc_starts, gc_finishes, unbalanced);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e, requested); break;
    case JVMPI_EVENT_THREAD_START:  thread_start(e); break;
    case JVMPI_EVENT_THREAD_END:    thread_end(e); break;
    case JVMPI_EVENT_GC_START:      gc_start(); break;
    case JVMPI_EVENT_GC_FINISH:     gc_finish(e); break;
    case JVMPI_EVENT_JVM_INIT_DONE: init_done(); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    char path[1024];
    if (options == NULL || strstr(options, "fail") != NULL) {
        fprintf(stderr, "class_thread_counter: asked to fail\n");
        return JNI_ERR;
    }
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1_1) < 0) return JNI_ERR;
    if (strstr(options, "usage") != NULL) {
        printf("class_thread_counter usage: out=FILE[,prefix=P][,fail][,usage]\n");
        jvmpi->ProfilerExit(3);
    }
    if (!agent_option(options, "out=", path, sizeof path) || (out = fopen(path, "w")) == NULL) return JNI_ERR;
    agent_option(options, "prefix=", prefix, sizeof prefix);
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_class_thread_counter");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END,
                                   JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH, JVMPI_EVENT_JVM_INIT_DONE,
                                   JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
