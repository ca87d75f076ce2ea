/*
 * toggler: enables and disables events while the program runs, written to
 * the JVMPI specification alone.
 *
 * At JVM_OnLoad it enables every event number from 1 to
 * JVMPI_MAX_EVENT_TYPE_VAL and disables them again, noting the answers,
 * then enables CLASS_LOAD, METHOD_ENTRY and METHOD_EXIT. When the program
 * enters JvmpiCalls.b() it disables METHOD_ENTRY and CLASS_LOAD; when it
 * leaves JvmpiCalls.c() it enables them again.
 *
 * Options: out=FILE. Writes:
 *   enable success S not_available N fail F dumps_not_available D
 *   disable success S not_available N fail F
 *   method NAME entries E exits X           (JvmpiCalls' methods, at JVM_SHUT_DOWN)
 *   late_class_loads L late_before_enable B (CLASS_LOADs of JvmpiCalls$Late,
 *                                           and how many came while disabled)
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

#define MAX_METHODS 64

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static struct { jmethodID id; char name[64]; long entries, exits; } methods[MAX_METHODS];
static int n_methods;
static volatile int disabled;          /* between b() and the end of c() */
static long late_loads, late_while_disabled;

static int find(jmethodID id) {
    for (int i = 0; i < n_methods; i++)
        if (methods[i].id == id) return i;
    return -1;
}

static void class_load(JVMPI_Event *e) {
    const char *name = e->u.class_load.class_name;
    jvmpi->RawMonitorEnter(lock);
    if (strcmp(name, "JvmpiCalls$Late") == 0) {
        late_loads++;
        if (disabled) late_while_disabled++;
    }
    if (strcmp(name, "JvmpiCalls") == 0)
        for (jint i = 0; i < e->u.class_load.num_methods && n_methods < MAX_METHODS; i++) {
            methods[n_methods].id = e->u.class_load.methods[i].method_id;
            snprintf(methods[n_methods].name, sizeof methods[n_methods].name, "%s",
                     e->u.class_load.methods[i].method_name);
            n_methods++;
        }
    jvmpi->RawMonitorExit(lock);
}

static void method(JVMPI_Event *e, int entry) {
    int i = find(e->u.method.method_id);
    if (i < 0) return;
    jvmpi->RawMonitorEnter(lock);
    if (entry) methods[i].entries++;
    else methods[i].exits++;
    jvmpi->RawMonitorExit(lock);
    if (entry && strcmp(methods[i].name, "b") == 0) {
        disabled = 1;
        jvmpi->DisableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL);
        jvmpi->DisableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    }
    if (!entry && strcmp(methods[i].name, "c") == 0) {
        disabled = 0;
        jvmpi->EnableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL);
        jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    }
}

static void shut_down(void) {
    jvmpi->RawMonitorEnter(lock);
    for (int i = 0; i < n_methods; i++)
        if (methods[i].entries || methods[i].exits)
            fprintf(out, "method %s entries %ld exits %ld\n", methods[i].name, methods[i].entries, methods[i].exits);
    fprintf(out, "late_class_loads %ld late_before_enable %ld\n", late_loads, late_while_disabled);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e); break;
    case JVMPI_EVENT_METHOD_ENTRY:  method(e, 1); break;
    case JVMPI_EVENT_METHOD_EXIT:   method(e, 0); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    default: break;
    }
}

/* Switch every event number on (or off), counting the answers. */
static void switch_all(const char *what, jint (*fn)(jint, void *)) {
    int success = 0, not_available = 0, fail = 0, dumps = 0;
    for (jint e = 1; e <= JVMPI_MAX_EVENT_TYPE_VAL; e++) {
        jint r = fn(e, NULL);
        if (r == JVMPI_SUCCESS) success++;
        else if (r == JVMPI_NOT_AVAILABLE) not_available++;
        else fail++;
        if ((e == JVMPI_EVENT_HEAP_DUMP || e == JVMPI_EVENT_MONITOR_DUMP || e == JVMPI_EVENT_OBJECT_DUMP) &&
            r == JVMPI_NOT_AVAILABLE) dumps++;
    }
    fprintf(out, "%s success %d not_available %d fail %d", what, success, not_available, fail);
    if (fn == jvmpi->EnableEvent) fprintf(out, " dumps_not_available %d", dumps);
    fprintf(out, "\n");
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if (options == NULL || strncmp(options, "out=", 4) != 0 || (out = fopen(options + 4, "w")) == NULL) {
        fprintf(stderr, "toggler: option out=FILE\n");
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_toggler");
    switch_all("enable", jvmpi->EnableEvent);
    switch_all("disable", jvmpi->DisableEvent);
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_EXIT,
                                   JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
