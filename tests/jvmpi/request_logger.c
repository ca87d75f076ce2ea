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

#define MAX_THREADS 256

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static struct { JNIEnv *env; char name[64]; } threads[MAX_THREADS];
static int n_threads;
static long dumps, resets;

static const char *name_of(JNIEnv *env) {
    for (int i = 0; i < n_threads; i++)
        if (threads[i].env == env) return threads[i].name;
    return "?";
}

static void thread_start(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (n_threads < MAX_THREADS) {
        threads[n_threads].env = e->u.thread_start.thread_env_id;
        snprintf(threads[n_threads].name, sizeof threads[n_threads].name, "%s",
                 e->u.thread_start.thread_name ? e->u.thread_start.thread_name : "");
        n_threads++;
    }
    jvmpi->RawMonitorExit(lock);
}

static void request(JVMPI_Event *e, const char *what, long *count) {
    jvmpi->RawMonitorEnter(lock);
    ++*count;
    fprintf(out, "%s %ld thread %s\n", what, *count, name_of(e->env_id));
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
