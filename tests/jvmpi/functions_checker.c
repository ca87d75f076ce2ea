/*
 * functions_checker: the interface functions on threads the program keeps
 * in known states, written to the JVMPI specification alone. It enables the
 * thread, class, GC, monitor and data-dump events, and at JVM_INIT_DONE
 * starts a thread of its own (CreateSystemThread) that, once the program's
 * threads are in place, checks and writes to out=FILE one line each:
 *   status spinner|sleeper|blocked STATUS   GetThreadStatus
 *   raw_contention enter E entered D exit X  RAW_MONITOR_CONTENDED_* on monitor
 *                                           "checker raw": held by the checker
 *                                           while a second agent thread enters
 *   monitor_dump java OK|BAD raw OK|BAD status OK|BAD
 *                                           MONITOR_DUMP: main owns a monitor
 *                                           once that blocked waits to enter;
 *                                           the agent's raw monitor, held by
 *                                           the asking thread once; blocked's
 *                                           status MONITOR_WAIT in the dump
 *   trace spinner METHOD:LINE               GetCallTrace of the suspended spinner
 *   has_run spinner|sleeper 0|1             ThreadHasRun between two suspensions
 *   thread_object SAME|DIFFERENT            GetThreadObject vs THREAD_START's thread_id
 *   method_class SAME|DIFFERENT             GetMethodClass(spin) vs JvmpiCalls' class id
 *   cpu_time OK|LOW                         GetCurrentThreadCpuTime over ~50 ms of CPU
 *   tls_other SAME|DIFFERENT                thread-local storage of another thread
 *   run_gc OK|NONE                          RunGC posts GC_START/GC_FINISH
 *   data_dump OK|NONE                       SIGQUIT posts DATA_DUMP_REQUEST
 *   contended blocked SEEN|NONE             MONITOR_CONTENDED_ENTER by blocked
 *   wait waiter TIMEOUT waited SAME|NONE MS MONITOR_WAIT/WAITED of waiter: the
 *                                           timeout asked, the same object, the
 *                                           time waited
 * and then calls ProfilerExit(42).
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;

enum { SPINNER, SLEEPER, BLOCKED, WAITER, MAIN, WATCHED };
static const char *const watched_names[WATCHED] = { "spinner", "sleeper", "blocked", "waiter", "main" };
static struct { JNIEnv *env; jobjectID object; } watched[WATCHED];

static jmethodID spin_method;
static jobjectID calls_class;
static long gc_starts, data_dumps;
static jobjectID contended_object, wait_object, waited_object;
static jlong wait_timeout = -1, waited_ms = -1;

static int watched_index(JNIEnv *env) {
    for (int i = 0; i < WATCHED; i++)
        if (watched[i].env == env && env != NULL) return i;
    return -1;
}

static void thread_start(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    for (int i = 0; i < WATCHED; i++)
        if (strcmp(e->u.thread_start.thread_name, watched_names[i]) == 0) {
            watched[i].env = e->u.thread_start.thread_env_id;
            watched[i].object = e->u.thread_start.thread_id;
        }
    jvmpi->RawMonitorExit(lock);
}

static void class_load(JVMPI_Event *e) {
    if (strcmp(e->u.class_load.class_name, "JvmpiCalls") != 0) return;
    calls_class = e->u.class_load.class_id;
    for (jint i = 0; i < e->u.class_load.num_methods; i++)
        if (strcmp(e->u.class_load.methods[i].method_name, "spin") == 0)
            spin_method = e->u.class_load.methods[i].method_id;
}

static void monitor_event(JVMPI_Event *e) {
    int who = watched_index(e->env_id);
    jvmpi->RawMonitorEnter(lock);
    if (e->event_type == JVMPI_EVENT_MONITOR_CONTENDED_ENTER && who == BLOCKED)
        contended_object = e->u.monitor.object;
    if (e->event_type == JVMPI_EVENT_MONITOR_WAIT && who == WAITER) {
        wait_object = e->u.monitor_wait.object;
        wait_timeout = e->u.monitor_wait.timeout;
    }
    if (e->event_type == JVMPI_EVENT_MONITOR_WAITED && who == WAITER) {
        waited_object = e->u.monitor_wait.object;
        waited_ms = e->u.monitor_wait.timeout;
    }
    jvmpi->RawMonitorExit(lock);
}

static void pause_ms(jlong ms);
static int java_ok, raw_ok, dump_status_ok;

/* Raw monitor contention: the checker holds `contended_raw` while a thread
 * of its own (CreateSystemThread) enters it. */
static JVMPI_RawMonitor contended_raw;
static volatile int contender_started, contender_done;
static int raw_enters, raw_entereds, raw_exits;

static void contender(void *arg) {
    (void)arg;
    contender_started = 1;
    jvmpi->RawMonitorEnter(contended_raw);
    jvmpi->RawMonitorExit(contended_raw);
    contender_done = 1;
}

static void raw_event(JVMPI_Event *e) {
    if (e->u.raw_monitor.id != contended_raw || strcmp(e->u.raw_monitor.name, "checker raw") != 0) return;
    if (e->event_type == JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER) raw_enters++;
    if (e->event_type == JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED) raw_entereds++;
    if (e->event_type == JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT) raw_exits++;
}

static void check_raw_contention(void) {
    contended_raw = jvmpi->RawMonitorCreate("checker raw");
    jvmpi->RawMonitorEnter(contended_raw);
    jvmpi->CreateSystemThread("contender", JVMPI_NORMAL_PRIORITY, contender);
    for (int i = 0; i < 500 && !(contender_started && raw_enters); i++) pause_ms(10);
    jvmpi->RawMonitorExit(contended_raw);
    for (int i = 0; i < 500 && !contender_done; i++) pause_ms(10);
    fprintf(out, "raw_contention enter %d entered %d exit %d\n", raw_enters, raw_entereds, raw_exits);
    jvmpi->RawMonitorDestroy(contended_raw);
}

static uint32_t get_u4(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void *get_pointer(const char *p) {
    void *v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A list: u4 count, then that many JNIEnv *; is env among them? */
static const char *read_env_list(const char *p, JNIEnv *env, int *found) {
    uint32_t n = get_u4(p);
    p += 4;
    for (uint32_t i = 0; i < n; i++, p += sizeof(void *))
        if (get_pointer(p) == env) *found = 1;
    return p;
}

static void monitor_dump(JVMPI_Event *e) {
    const char *p = e->u.monitor_dump.begin, *end = e->u.monitor_dump.end;
    while (p < end) {
        int type = (unsigned char)*p++;
        const char *raw_name = NULL;
        if (type == JVMPI_MONITOR_RAW) {
            raw_name = get_pointer(p);
            p += 2 * sizeof(void *);                 /* name, raw monitor id */
        } else {
            p += sizeof(void *);                     /* object id */
        }
        JNIEnv *owner = get_pointer(p);
        p += sizeof(void *);
        uint32_t entries = get_u4(p);
        p += 4;
        int blocked_enters = 0, unused = 0;
        p = read_env_list(p, watched[BLOCKED].env, &blocked_enters);
        p = read_env_list(p, NULL, &unused);
        if (type == JVMPI_MONITOR_JAVA && owner == watched[MAIN].env && entries == 1 && blocked_enters) java_ok = 1;
        if (type == JVMPI_MONITOR_RAW && strcmp(raw_name, "_functions_checker") == 0 && owner == e->env_id &&
            entries == 1)
            raw_ok = 1;
    }
    for (jint i = 0; i < e->u.monitor_dump.num_traces; i++)
        if (e->u.monitor_dump.traces[i].env_id == watched[BLOCKED].env &&
            e->u.monitor_dump.threads_status[i] == JVMPI_THREAD_MONITOR_WAIT)
            dump_status_ok = 1;
}

static void pause_ms(jlong ms) {
    jvmpi->RawMonitorEnter(lock);
    jvmpi->RawMonitorWait(lock, ms);
    jvmpi->RawMonitorExit(lock);
}

static const char *status_name(jint status) {
    switch (status & ~(JVMPI_THREAD_SUSPENDED | JVMPI_THREAD_INTERRUPTED)) {
    case JVMPI_THREAD_RUNNABLE:     return "RUNNABLE";
    case JVMPI_THREAD_MONITOR_WAIT: return "MONITOR_WAIT";
    case JVMPI_THREAD_CONDVAR_WAIT: return "CONDVAR_WAIT";
    default:                        return "?";
    }
}

/* Up to 10 s for the program's threads to be where it puts them. */
static int wait_for_program(void) {
    for (int tries = 0; tries < 1000; tries++) {
        int known = 1;
        for (int i = 0; i < WATCHED; i++) known &= watched[i].env != NULL;
        if (known && jvmpi->GetThreadStatus(watched[BLOCKED].env) == JVMPI_THREAD_MONITOR_WAIT &&
            jvmpi->GetThreadStatus(watched[SLEEPER].env) == JVMPI_THREAD_CONDVAR_WAIT && waited_object != NULL)
            return 0;
        pause_ms(10);
    }
    return -1;
}

static int has_run(JNIEnv *env) {
    jvmpi->SuspendThread(env);
    jvmpi->ResumeThread(env);
    pause_ms(100);
    jvmpi->SuspendThread(env);
    int ran = jvmpi->ThreadHasRun(env) == JNI_TRUE;
    jvmpi->ResumeThread(env);
    return ran;
}

static void check_trace(void) {
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace trace = { watched[SPINNER].env, 0, frames };
    jvmpi->SuspendThread(watched[SPINNER].env);
    jvmpi->GetCallTrace(&trace, 4);
    jvmpi->ResumeThread(watched[SPINNER].env);
    fprintf(out, "trace spinner %s:%d\n",
            trace.num_frames > 0 && frames[0].method_id == spin_method ? "spin" : "other",
            trace.num_frames > 0 ? (int)frames[0].lineno : -1);
}

static void check_cpu_time(void) {
    jlong start = jvmpi->GetCurrentThreadCpuTime(), now = start;
    volatile unsigned long x = 0;
    for (long rounds = 0; (now = jvmpi->GetCurrentThreadCpuTime()) - start < 50000000 && rounds < 100000; rounds++)
        for (int i = 0; i < 100000; i++) x += (unsigned long)i;
    fprintf(out, "cpu_time %s\n", now - start >= 50000000 ? "OK" : "LOW");
}

static void check_events(void) {
    long before = gc_starts;
    jvmpi->RunGC();
    fprintf(out, "run_gc %s\n", gc_starts > before ? "OK" : "NONE");
    kill(getpid(), SIGQUIT);
    for (int i = 0; i < 500 && data_dumps == 0; i++) pause_ms(10);
    fprintf(out, "data_dump %s\n", data_dumps > 0 ? "OK" : "NONE");
    jvmpi->DisableGC();
    jobjectID lock_holder_object = contended_object;
    fprintf(out, "contended blocked %s\n", lock_holder_object == NULL ? "NONE" : "SEEN");
    fprintf(out, "wait waiter %ld waited %s %ld\n", (long)wait_timeout,
            wait_object != NULL && wait_object == waited_object ? "SAME" : "NONE", (long)waited_ms);
    jvmpi->EnableGC();
}

static void checker(void *arg) {
    (void)arg;
    if (wait_for_program() != 0) {
        fprintf(out, "the program's threads never got in place\n");
        fflush(out);
        jvmpi->ProfilerExit(3);
        return;
    }
    const int statuses[] = { SPINNER, SLEEPER, BLOCKED };
    for (int i = 0; i < 3; i++)
        fprintf(out, "status %s %s\n", watched_names[statuses[i]],
                status_name(jvmpi->GetThreadStatus(watched[statuses[i]].env)));
    check_raw_contention();
    jvmpi->RawMonitorEnter(lock);
    jint dumped = jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL);
    jvmpi->RawMonitorExit(lock);
    fprintf(out, "monitor_dump java %s raw %s status %s\n", dumped == JVMPI_SUCCESS && java_ok ? "OK" : "BAD",
            raw_ok ? "OK" : "BAD", dump_status_ok ? "OK" : "BAD");
    check_trace();
    fprintf(out, "has_run spinner %d\n", has_run(watched[SPINNER].env));
    fprintf(out, "has_run sleeper %d\n", has_run(watched[SLEEPER].env));
    jvmpi->DisableGC();
    fprintf(out, "thread_object %s\n",
            jvmpi->GetThreadObject(watched[SPINNER].env) == watched[SPINNER].object ? "SAME" : "DIFFERENT");
    fprintf(out, "method_class %s\n", jvmpi->GetMethodClass(spin_method) == calls_class ? "SAME" : "DIFFERENT");
    jvmpi->EnableGC();
    check_cpu_time();
    static int marker;
    jvmpi->SetThreadLocalStorage(watched[SPINNER].env, &marker);
    fprintf(out, "tls_other %s\n", jvmpi->GetThreadLocalStorage(watched[SPINNER].env) == &marker ? "SAME" : "DIFFERENT");
    check_events();
    fflush(out);
    jvmpi->ProfilerExit(42);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_THREAD_START:  thread_start(e); break;
    case JVMPI_EVENT_MONITOR_DUMP | JVMPI_REQUESTED_EVENT: monitor_dump(e); break;
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e); break;
    case JVMPI_EVENT_GC_START:      gc_starts++; break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        jvmpi->RawMonitorEnter(lock);
        data_dumps++;
        jvmpi->RawMonitorNotifyAll(lock);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_MONITOR_WAIT:
    case JVMPI_EVENT_MONITOR_WAITED: monitor_event(e); break;
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT: raw_event(e); break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        if (jvmpi->CreateSystemThread("jvmpi checker", JVMPI_NORMAL_PRIORITY, checker) != JNI_OK)
            fprintf(stderr, "functions_checker: CreateSystemThread failed\n");
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        fprintf(out, "shutdown\n");
        fflush(out);
        break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if (options == NULL || strncmp(options, "out=", 4) != 0 || (out = fopen(options + 4, "w")) == NULL) {
        fprintf(stderr, "functions_checker: option out=FILE\n");
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_functions_checker");
    static const jint events[] = { JVMPI_EVENT_THREAD_START, JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_GC_START,
                                   JVMPI_EVENT_DATA_DUMP_REQUEST, JVMPI_EVENT_MONITOR_CONTENDED_ENTER,
                                   JVMPI_EVENT_MONITOR_WAIT, JVMPI_EVENT_MONITOR_WAITED,
                                   JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN,
                                   JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED,
                                   JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
