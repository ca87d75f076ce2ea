/*
 * compiled_logger: COMPILED_METHOD_LOAD of one method, written to the JVMPI
 * specification alone.
 *
 * Options: out=FILE,method=NAME (a method of class JvmpiCalls). Writes at
 * JVM_SHUT_DOWN:
 *   compiled NAME loads N code OK|BAD lines L in_range R
 * (loads: events for the method; code OK: every load had an address and a
 * size; lines: line table entries over all loads; in_range: those within the
 * method's start_lineno..end_lineno from CLASS_LOAD, and with an offset
 * inside the code)
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char method_name[128];
static jmethodID watched;
static jint first_line, last_line;
static long loads, bad_code, lines, in_range;

static void class_load(JVMPI_Event *e) {
    if (strcmp(e->u.class_load.class_name, "JvmpiCalls") != 0) return;
    for (jint i = 0; i < e->u.class_load.num_methods; i++)
        if (strcmp(e->u.class_load.methods[i].method_name, method_name) == 0) {
            watched = e->u.class_load.methods[i].method_id;
            first_line = e->u.class_load.methods[i].start_lineno;
            last_line = e->u.class_load.methods[i].end_lineno;
        }
}

static void compiled(JVMPI_Event *e) {
    if (watched == NULL || e->u.compiled_method_load.method_id != watched) return;
    jvmpi->RawMonitorEnter(lock);
    loads++;
    if (e->u.compiled_method_load.code_addr == NULL || e->u.compiled_method_load.code_size <= 0) bad_code++;
    for (jint i = 0; i < e->u.compiled_method_load.lineno_table_size; i++) {
        JVMPI_Lineno *l = &e->u.compiled_method_load.lineno_table[i];
        lines++;
        if (l->lineno >= first_line && l->lineno <= last_line && l->offset >= 0 &&
            l->offset < e->u.compiled_method_load.code_size)
            in_range++;
    }
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:           class_load(e); break;
    case JVMPI_EVENT_COMPILED_METHOD_LOAD: compiled(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        jvmpi->RawMonitorEnter(lock);
        fprintf(out, "compiled %s loads %ld code %s lines %ld in_range %ld\n", method_name, loads,
                bad_code ? "BAD" : "OK", lines, in_range);
        fflush(out);
        jvmpi->RawMonitorExit(lock);
        break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    const char *m = options ? strstr(options, ",method=") : NULL;
    if (options == NULL || strncmp(options, "out=", 4) != 0 || m == NULL) {
        fprintf(stderr, "compiled_logger: options out=FILE,method=NAME\n");
        return JNI_ERR;
    }
    snprintf(method_name, sizeof method_name, "%s", m + strlen(",method="));
    char path[1024];
    snprintf(path, sizeof path, "%.*s", (int)(m - options - 4), options + 4);
    if ((out = fopen(path, "w")) == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_compiled_logger");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_COMPILED_METHOD_LOAD,
                                   JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
