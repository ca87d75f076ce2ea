/*
 * request_logger: DATA_DUMP_REQUEST and DATA_RESET_REQUEST, written to the
 * JVMPI specification alone. It learns threads' names from THREAD_START and
 * writes to out=FILE, at once, a line per request:
 *   dump|reset N thread NAME      (N: the requests of that kind so far;
 *                                  NAME: the posting thread's, "?" if it was
 *                                  never announced)
 * and at JVM_SHUT_DOWN: requests dump D reset R
 * Options: out=FILE
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static long dumps, resets;

static void thread_start(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    agent_thread_started(e);
    jvmpi->RawMonitorExit(lock);
}

static void request(JVMPI_Event *e, const char *what, long *count) {
    jvmpi->RawMonitorEnter(lock);
    ++*count;
    fprintf(out, "%s %ld thread %s\n", what, *count, agent_thread_name(e->env_id));
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_THREAD_START:        thread_start(e); break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:   request(e, "dump", &dumps); break;
    case JVMPI_EVENT_DATA_RESET_REQUEST:  request(e, "reset", &resets); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        jvmpi->RawMonitorEnter(lock);
        fprintf(out, "requests dump %ld reset %ld\n", dumps, resets);
        fflush(out);
        jvmpi->RawMonitorExit(lock);
        break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if ((out = agent_open_out(options, "request_logger: options out=FILE")) == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_request_logger");
    static const jint events[] = { JVMPI_EVENT_THREAD_START, JVMPI_EVENT_DATA_DUMP_REQUEST,
                                   JVMPI_EVENT_DATA_RESET_REQUEST, JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
