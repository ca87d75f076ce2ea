/*
 * monitor_logger: MONITOR_CONTENDED_ENTER / ENTERED / EXIT and a
 * MONITOR_DUMP, written to the JVMPI specification alone (section 4.4's
 * format: u1 record type, u4 big-endian counts, ids and JNIEnvs as native
 * pointers). It learns threads' names from THREAD_START; of the contended
 * events it keeps those on the object thread "blocked" contended for, and
 * at JVM_SHUT_DOWN (JvmpiCalls monitors: "waiter" is in Object.wait) asks
 * for a MONITOR_DUMP. Writes to out=FILE:
 *   enter THREAD N / entered THREAD N / exit THREAD N     (THREAD: the event's
 *                                    env_id's name; N: events on blocked's object)
 *   order OK|BAD                     exit before blocked's entered
 *   monitor_dump waiter RECORDS      JAVA records listing "waiter" among the
 *                                    threads waiting to be notified
 * Options: out=FILE
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static jobjectID contended;             /* the object "blocked" contended for */
static long enters, entereds, exits, order_bad;
static char enter_by[64], entered_by[64], exit_by[64];
static long waiter_records = -1;

static void thread_start(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    agent_thread_started(e);
    jvmpi->RawMonitorExit(lock);
}

static void contention(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    const char *who = agent_thread_name(e->env_id);
    jobjectID object = e->u.monitor.object;
    if (e->event_type == JVMPI_EVENT_MONITOR_CONTENDED_ENTER && strcmp(who, "blocked") == 0) contended = object;
    if (contended != NULL && object == contended) {
        if (e->event_type == JVMPI_EVENT_MONITOR_CONTENDED_ENTER) { enters++; snprintf(enter_by, sizeof enter_by, "%s", who); }
        if (e->event_type == JVMPI_EVENT_MONITOR_CONTENDED_ENTERED) {
            entereds++;
            snprintf(entered_by, sizeof entered_by, "%s", who);
            if (exits == 0) order_bad++;
        }
        if (e->event_type == JVMPI_EVENT_MONITOR_CONTENDED_EXIT) { exits++; snprintf(exit_by, sizeof exit_by, "%s", who); }
    }
    jvmpi->RawMonitorExit(lock);
}

static uint32_t u4(const unsigned char **p) {
    uint32_t v = (uint32_t)(*p)[0] << 24 | (uint32_t)(*p)[1] << 16 | (uint32_t)(*p)[2] << 8 | (*p)[3];
    *p += 4;
    return v;
}
static void *pointer(const unsigned char **p) {
    void *v;
    memcpy(&v, *p, sizeof v);
    *p += sizeof v;
    return v;
}

/* JAVA: object, owner, u4 entries, u4 n + n waiting to enter, u4 n + n to be
 * notified. RAW: name, id, owner, u4 entries, the same two lists. */
static void monitor_dump(JVMPI_Event *e) {
    const unsigned char *p = (const unsigned char *)e->u.monitor_dump.begin;
    const unsigned char *end = (const unsigned char *)e->u.monitor_dump.end;
    waiter_records = 0;
    while (p < end) {
        unsigned type = *p++;
        if (type == (unsigned)JVMPI_MONITOR_RAW) { pointer(&p); pointer(&p); }
        else if (type == (unsigned)JVMPI_MONITOR_JAVA) pointer(&p);
        else { waiter_records = -2; return; }
        pointer(&p);
        u4(&p);
        for (uint32_t n = u4(&p); n > 0; n--) pointer(&p);
        int listed = 0;
        for (uint32_t n = u4(&p); n > 0; n--) listed |= strcmp(agent_thread_name(pointer(&p)), "waiter") == 0;
        if (type == (unsigned)JVMPI_MONITOR_JAVA && listed) waiter_records++;
    }
}

static void shut_down(void) {
    jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL);
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "enter %s %ld\n", enter_by, enters);
    fprintf(out, "entered %s %ld\n", entered_by, entereds);
    fprintf(out, "exit %s %ld\n", exit_by, exits);
    fprintf(out, "order %s\n", order_bad ? "BAD" : "OK");
    fprintf(out, "monitor_dump waiter %ld\n", waiter_records);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_THREAD_START: thread_start(e); break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT: contention(e); break;
    case JVMPI_EVENT_MONITOR_DUMP | JVMPI_REQUESTED_EVENT: monitor_dump(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if ((out = agent_open_out(options, "monitor_logger: options out=FILE")) == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_monitor_logger");
    static const jint events[] = { JVMPI_EVENT_THREAD_START, JVMPI_EVENT_MONITOR_CONTENDED_ENTER,
                                   JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, JVMPI_EVENT_MONITOR_CONTENDED_EXIT,
                                   JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
