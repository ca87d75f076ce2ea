/*
 * agent.c: the orchestrator (orchestrator.h). It owns the agent's state
 * machine and walks the product's list of collectors (collector.h) instead
 * of naming each feature; libhprof.so (hprof_agent.c) and libjvmpi.so
 * (src/jvmpi/collector.c) are each a product on it:
 *
 *   none ──OnLoad──> loaded ──VMInit──> running ⇄ stopped ──VMDeath──> finished
 *     └───────────────Agent_OnAttach (start)────┘
 *
 * Entry points:
 *   Agent_OnLoad    -agentpath at start-up: options, capabilities, the
 *                   output file, subscriptions; collectors start at VMInit.
 *   Agent_OnAttach  the first load into a running JVM starts the agent the
 *                   same way, in the live phase; every later load of the
 *                   same library (`hprof start|stop|dump|reset|status <pid>`
 *                   or `jcmd <pid> JVMTI.agent_load <path> "<command>,..."`)
 *                   carries a command, run on the agent's own thread.
 *   DataDumpRequest (SIGQUIT) asks the agent thread for a dump; VMDeath
 *                   writes the last one.
 *
 * The agent thread (a JVMTI agent thread, "HPROF agent") runs commands and
 * dumps, and ticks the collectors that ask for it (cpu=samples drains its
 * queue every 20 ms; monitor=y looks for deadlocks). So a dump never runs on
 * an application thread, and sampling goes on while it runs.
 *
 * Beside it: agent_report.c (the report file, and net='s listener),
 * agent_dump.c (a dump into the report, the whole-stack outputs, loop='s
 * periods), agent_commands.c (the commands a later load carries);
 * agent_internal.h what they share.
 */
#include "agent_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/tables.h"
#include "../options/command_reply.h"
#include "events.h"
#include "jvmti_support.h"

const char *const agent_state_names[] = { "not loaded", "loaded", "running", "stopped", "finished" };

orchestrator_state agent = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                             .finished = PTHREAD_COND_INITIALIZER };

profile_tables *agent_tables(void)
{
    return agent.tables;
}

/* ------------------------------------------------------------ messages */

/* A message for the user: to the command's reply when a command is running
 * (the `hprof` command prints it), else to the JVM's standard error. */
static void vsay(const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (agent.reply) {
        size_t used = strlen(agent.reply);
        snprintf(agent.reply + used, REPLY_MAX - used, "%s\n", line);
    } else {
        fprintf(stderr, "%s\n", line);
    }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* Collectors call it under agent.lock (dump, reset) or at start-up. */
void agent_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void agent_progress(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = strlen(line);
    line[len] = '\n';
    line[len + 1] = '\0';
    /* Set while a command's work runs on the agent thread, which calls this. */
    const char *path = agent.progress_path;
    if (path != NULL && path[0])
        command_reply_send(path, line);
    else if (write(2, line, len + 1) < 0) { /* nothing to do */ }
}

/* collector_env.limit: said once per start, and kept for the report header. */
static void note_limit(const char *what)
{
    if (strstr(agent.limits, what) == NULL) {
        size_t used = strlen(agent.limits);
        snprintf(agent.limits + used, sizeof agent.limits - used, "%s%s", used ? "\n" : "", what);
    }
    say("%s: note: %s", agent.product->name, what);
}

/* ------------------------------------------------------------ threads */

/* Give a thread its serial (jvmti_support's thread_register), not the agent's own. */
static serial_t register_thread(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    (void)jvmti;
    return thread_register(jni, thread, agent.product->thread_name);
}

/* Threads alive now that have no serial yet (at VMInit: the JDK's own; at
 * attach: every one). */
static void register_existing_threads(jvmtiEnv *jvmti, JNIEnv *jni)
{
    jint n = 0;
    jthread *threads = NULL;
    if (jvmti_failed((*jvmti)->GetAllThreads(jvmti, &n, &threads), "GetAllThreads"))
        return;
    jvmti_hold_locals(jni, n);
    for (jint i = 0; i < n; i++) {
        if (thread_serial_of(threads[i]) == 0)
            register_thread(jvmti, jni, threads[i]);
        (*jni)->DeleteLocalRef(jni, threads[i]);
    }
    jvmti_free(threads);
}

/* HotSpot posts ThreadStart for the main thread after VMInit, which already
 * registered it: keep its serial. */
static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    serial_t serial = thread_serial_of(thread);
    if (serial == 0)
        serial = register_thread(jvmti, jni, thread);
    /* Every collector hears of it, running or not: one that is starting
     * (it listed the threads already) must not miss this one. */
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (collector_at(i)->thread_start)
            collector_at(i)->thread_start(jni, thread, serial);
}

/* The thread table's side of a thread's end: marked ended (a later dump
 * writes its THREAD END), and out of the tid -> serial map. */
static void thread_ends(JNIEnv *jni, jthread thread)
{
    serial_t serial = thread_serial_of(thread);
    if (serial) {
        thread_mark_ended(agent_tables(), serial);
        thread_serial_forget(jni, thread);
    }
}

/* Every collector ever started hears of a thread's end: each drops what it
 * keeps per thread, and cpu=times takes the thread's totals. */
static void JNICALL on_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    (void)jvmti;
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->thread_end)
            collector_at(i)->thread_end(jni, thread);
    thread_ends(jni, thread);
}

/* Virtual threads get no ThreadEnd. Those given a serial (named by
 * cpu=samples at their mount, or by a MONITOR DUMP that found them
 * blocked) end here, so that a later dump says THREAD END and thread=n
 * forgets them in time like platform threads; those without one (most)
 * cost a map look-up. */
static void JNICALL on_virtual_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
    (void)jvmti;
    thread_ends(jni, vthread);
}

/* ------------------------------------------------------------ start, stop */

/* Capabilities of the collectors these options want, added to the agent's
 * environment (at start-up, or in the live phase, where HotSpot offers
 * fewer: each collector says what it must do without). */
int agent_add_capabilities(const hprof_options *opt)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities potential, caps;
    memset(&caps, 0, sizeof caps);
    if (jvmti_failed((*jvmti)->GetPotentialCapabilities(jvmti, &potential), "GetPotentialCapabilities"))
        return -1;
    collector_env env = { opt, agent.live, note_limit, agent.tables };
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (collector_at(i)->wanted(opt) && collector_at(i)->capabilities(&env, &potential, &caps) != 0) {
            say("%s: %s cannot run in this JVM (see above)", agent.product->name, collector_at(i)->name);
            return -1;
        }
    if (jvmti_failed((*jvmti)->AddCapabilities(jvmti, &caps), "AddCapabilities"))
        return -1;
    /* Only where a collector wanted it (it could name virtual threads): the
     * capability alone has a cost at every mount on some JDKs. */
    if (jvmti_has_virtual_threads(&caps))
        agent.vthread_ends = 1;
    return 0;
}

/* The orchestrator's own events, and each wanted collector's. */
int agent_subscribe(const hprof_options *opt)
{
    static const struct { jvmtiEvent ev; int always; } own[] = {
        { JVMTI_EVENT_THREAD_START, 1 }, { JVMTI_EVENT_THREAD_END, 1 }, { JVMTI_EVENT_DATA_DUMP_REQUEST, 1 },
        { JVMTI_EVENT_VM_DEATH, 1 },
    };
    collector_env env = { opt, agent.live, note_limit, agent.tables };
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (collector_at(i)->wanted(opt) && collector_at(i)->subscribe &&
            collector_at(i)->subscribe(&env) != 0)
            return -1;
    if (agent.vthread_ends && events_subscribe(EVENT_VIRTUAL_THREAD_END, EVENT_FN(on_virtual_thread_end)) != 0)
        return -1;
    if (events_install(hprof_jvmti) != 0)
        return -1;
    static int own_wanted, vthread_ends_wanted;
    if (!own_wanted) {
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
            if (events_want(hprof_jvmti, own[i].ev) != 0)
                return -1;
        own_wanted = 1;
    }
    if (agent.vthread_ends && !vthread_ends_wanted) {
        if (events_want(hprof_jvmti, EVENT_VIRTUAL_THREAD_END) != 0)
            return -1;
        vthread_ends_wanted = 1;
    }
    return 0;
}

/* Live start (VMInit, attach, or `start` after `stop`): the collectors of
 * agent.opt start; then the tracker rewrites the loaded classes for those
 * that need it, once for all. */
int agent_start_collectors(JNIEnv *jni)
{
    register_existing_threads(hprof_jvmti, jni);
    collector_env env = { &agent.opt, agent.live, note_limit, agent.tables };
    int failed = 0;
    for (size_t i = 0; i < agent.product->n_collectors; i++) {
        agent.active[i] = collector_at(i)->wanted(&agent.opt);
        if (!agent.active[i])
            continue;
        if (collector_at(i)->start(&env, jni) != 0) {
            say("%s: %s could not start (see the message above)", agent.product->name, collector_at(i)->name);
            agent.active[i] = 0;
            failed = 1;
            continue;
        }
        agent.made[i] = 1;
    }
    if (agent.product->after_start && agent.product->after_start(jni, agent.state == AGENT_STOPPED) != 0)
        failed = 1;
    agent.state = AGENT_RUNNING;
    agent.started = time(NULL);
    agent.period_due_ms = net_now_ms() + agent.opt.loop_ms;
    agent_report_header(&agent.report);
    return failed ? -1 : 0;
}

void agent_stop_collectors(JNIEnv *jni)
{
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.active[i] && collector_at(i)->stop)
            collector_at(i)->stop(jni);
    if (agent.product->after_stop)
        agent.product->after_stop(jni);
    agent.state = AGENT_STOPPED;
    agent.stopped_at = time(NULL);
}

void agent_reset_collectors(JNIEnv *jni)
{
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->reset)
            collector_at(i)->reset(jni);
}

/* ------------------------------------------------------------ agent thread */

static int any_tick(void)
{
    if (agent.state != AGENT_RUNNING)
        return 0;
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.active[i] && collector_at(i)->tick)
            return 1;
    return 0;
}

static void finish_run(JNIEnv *jni);

/* Set on the agent thread (orchestrator_own_thread). */
static _Thread_local int on_agent_thread;

int orchestrator_own_thread(void)
{
    return on_agent_thread;
}

static void JNICALL agent_thread(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)jvmti;
    (void)arg;
    on_agent_thread = 1;
    int net_waiting = 0;
    pthread_mutex_lock(&agent.lock);
    while (!agent.thread_stop) {
        if (agent.pending == NULL && !agent.dump_requested && !agent.exit_requested) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ms = any_tick() || net_waiting ? TICK_MS : 1000;
            if (agent_period_left_ms() < ms)
                ms = (long)agent_period_left_ms();
            ts.tv_nsec += ms * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&agent.wake, &agent.lock, &ts);
        }
        if (agent.thread_stop)
            break;
        if (agent.exit_requested) {
            agent.exit_taken = 1;
            pthread_cond_broadcast(&agent.finished);
            finish_run(jni);
            break;
        }
        if (agent.pending) {
            command *c = agent.pending;
            if (agent.pending_async)
                agent.reply = NULL;             /* its messages go to standard error */
            c->rc = agent_run_command(c, jni);
            c->done = 1;
            agent.pending = NULL;
            agent.pending_async = 0;
            pthread_cond_broadcast(&agent.finished);
        }
        if (agent.dump_requested) {
            agent.dump_requested = 0;
            agent_dump_into(&agent.report, "SIGQUIT", 0, jni);
        }
        if (agent_period_left_ms() == 0)
            agent_period_end(jni);
        int want_dump = 0;
        for (size_t i = 0; agent.state == AGENT_RUNNING && i < agent.product->n_collectors; i++)
            if (agent.active[i] && collector_at(i)->tick)
                want_dump |= collector_at(i)->tick(jni);
        if (want_dump)
            agent_dump_into(&agent.report, "deadlock", 0, jni);
        net_waiting = agent_report_net_tick();
    }
    agent.thread_exited = 1;
    pthread_cond_broadcast(&agent.finished);
    pthread_mutex_unlock(&agent.lock);
}

static void start_agent_thread(JNIEnv *jni)
{
    jclass thread_class = (*jni)->FindClass(jni, "java/lang/Thread");
    jmethodID init = thread_class ? (*jni)->GetMethodID(jni, thread_class, "<init>", "(Ljava/lang/String;)V") : NULL;
    jstring name = init ? (*jni)->NewStringUTF(jni, agent.product->thread_name) : NULL;
    jobject thread = name ? (*jni)->NewObject(jni, thread_class, init, name) : NULL;
    if (thread == NULL) {
        (*jni)->ExceptionClear(jni);
        say("%s: cannot create the agent thread; commands are not taken and data is written at "
            "exit only", agent.product->name);
        return;
    }
    if (!jvmti_failed((*hprof_jvmti)->RunAgentThread(hprof_jvmti, thread, agent_thread, NULL,
                                                     JVMTI_THREAD_MIN_PRIORITY), "RunAgentThread"))
        agent.thread_running = 1;
    (*jni)->DeleteLocalRef(jni, name);
    (*jni)->DeleteLocalRef(jni, thread);
    (*jni)->DeleteLocalRef(jni, thread_class);
}

/* Called with agent.lock held; gives it up while waiting. */
static void stop_agent_thread(void)
{
    if (!agent.thread_running)
        return;
    agent.thread_stop = 1;
    pthread_cond_broadcast(&agent.wake);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    while (!agent.thread_exited && pthread_cond_timedwait(&agent.finished, &agent.lock, &ts) == 0)
        ;
    agent.thread_running = 0;
}

/* ------------------------------------------------------------ JVM events */

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    (void)jvmti;
    (void)thread;
    pthread_mutex_lock(&agent.lock);
    if (agent_start_collectors(jni) != 0)
        fprintf(stderr, "%s: some collectors could not start (see above)\n", agent.product->name);
    start_agent_thread(jni);
    pthread_mutex_unlock(&agent.lock);
}

static void JNICALL on_data_dump_request(jvmtiEnv *jvmti)
{
    (void)jvmti;
    pthread_mutex_lock(&agent.lock);
    if (agent.thread_running) {
        agent.dump_requested = 1;
        pthread_cond_broadcast(&agent.wake);
    } else {
        JNIEnv *jni = NULL;
        if ((*hprof_vm)->GetEnv(hprof_vm, (void **)&jni, JNI_VERSION_1_8) == JNI_OK)
            agent_dump_into(&agent.report, "SIGQUIT", 0, jni);
    }
    pthread_mutex_unlock(&agent.lock);
}

/* The end of the run (agent.lock held, the agent thread stopped or the
 * caller): the last dump, then the file closed. */
static void finish_run(JNIEnv *jni)
{
    int collected = agent.state == AGENT_RUNNING || agent.state == AGENT_STOPPED;
    if (collected) {
        if (agent.product->before_last_dump)
            agent.product->before_last_dump(jni);
        if (agent.opt.doe)
            agent_dump_into(&agent.report, "exit", 1, jni);
    }
    /* net=: a listener that did not take it all gets it written locally. */
    if (agent_report_deliver() != 0 && collected && agent.opt.doe)
        agent_dump_into(&agent.report, "exit", 1, jni);
    if (collected && agent.product->after_last_dump)
        agent.product->after_last_dump(jni);
    agent.state = AGENT_FINISHED;
    agent.reply = NULL;
    agent_report_close(&agent.report);
    /* The last period's files are written: loop_keep= counts them too. */
    series_period drop;
    if (agent.opt.loop_ms && series_next(&agent.series, time(NULL), &drop))
        agent_delete_period(drop);
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
    (void)jvmti;
    pthread_mutex_lock(&agent.lock);
    stop_agent_thread();
    finish_run(jni);
    pthread_mutex_unlock(&agent.lock);
}

/* exit() without VMDeath: when the main thread dies of an OutOfMemoryError
 * with the heap still full, the launcher's DestroyJavaVM cannot allocate
 * its thread object and returns, the process exits, and the JVM never
 * posts VMDeath. The VM is still alive then, and so is the agent thread (a
 * Java thread of its own): it writes the last dump while this waits. */
#define EXIT_DUMP_WAIT_S  600
/* exit() may also come from a thread the agent thread waits for (a JVM
 * exiting from inside a VM operation): if the agent thread has not taken the
 * request by then, the process goes on exiting without the dump. */
#define EXIT_TAKEN_WAIT_S 10
static int wait_finished(int seconds, const int *done)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    while (!*done && !agent.thread_exited)
        if (pthread_cond_timedwait(&agent.finished, &agent.lock, &ts) != 0)
            return -1;
    return 0;
}

static void on_process_exit(void)
{
    pthread_mutex_lock(&agent.lock);
    if ((agent.state == AGENT_RUNNING || agent.state == AGENT_STOPPED) && agent.thread_running &&
        !agent.thread_exited) {
        if (agent.opt.verbose)
            fprintf(stderr, "%s: the process is exiting without the JVM's end (an OutOfMemoryError?); "
                    "writing the last dump now\n", agent.product->name);
        agent.exit_requested = 1;
        pthread_cond_broadcast(&agent.wake);
        if (wait_finished(EXIT_TAKEN_WAIT_S, &agent.exit_taken) != 0 ||
            wait_finished(EXIT_DUMP_WAIT_S, &agent.thread_exited) != 0)
            fprintf(stderr, "%s: the last dump did not finish in time; %s may be incomplete\n",
                    agent.product->name, agent.report.out ? agent.report.path : "its data");
    }
    pthread_mutex_unlock(&agent.lock);
}

/* ------------------------------------------------------------ loading */

/* Parse and check a load's options: the command, then HPROF's options.
 * at_start_up: Agent_OnLoad's, which is a start whatever the product takes
 * at run time. */
static int parse_load(const agent_product *product, const char *options, command *c, int first, int at_start_up,
                      char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (command_parse(options, &c->req, err, errlen) != 0)
        return -1;
    if (first && product->attach_refused) {
        snprintf(err, errlen, "%s: %s", product->name, product->attach_refused);
        return -1;
    }
    if (!at_start_up && !(product->commands & PRODUCT_COMMAND(c->req.command))) {
        snprintf(err, errlen, "%s: '%s' %s", product->name, command_name(c->req.command),
                 product->commands_refused);
        return -1;
    }
    if (!product->report && c->req.options[0]) {
        snprintf(err, errlen, "%s: '%s' takes no options here (%.200s): there is no report of its own to "
                 "write", product->name, command_name(c->req.command), c->req.options);
        return -1;
    }
    if (options_parse(c->req.options, &c->opt, err, errlen) != 0 ||
        command_check(&c->req, &c->opt, err, errlen) != 0)
        return -1;
    if (first && c->req.command != COMMAND_START && !c->opt.help) {
        snprintf(err, errlen, "%s: '%s': %s is not running in this JVM; start it first "
                 "(hprof attach <pid> [options])", product->name, command_name(c->req.command), product->name);
        return -1;
    }
    if (c->req.command == COMMAND_START && options_check_implemented(&c->opt, err, errlen) != 0)
        return -1;
    return 0;
}

/* The first load, from OnLoad or OnAttach: everything up to the live start.
 * Nothing irreversible happens before the options and the file are known good. */
static int first_load(JavaVM *vm, const command *c, int live, char *err, size_t errlen)
{
    hprof_vm = vm;
    if ((*vm)->GetEnv(vm, (void **)&hprof_jvmti, agent.product->jvmti_version) != JNI_OK) {
        snprintf(err, errlen, "%s: %s", agent.product->name, agent.product->jvmti_missing);
        return -1;
    }
    agent.live = live;
    agent.opt = c->opt;
    snprintf(agent.options_text, sizeof agent.options_text, "%s", c->req.options);
    if (agent.opt.loop_ms && series_init(&agent.series, (long)getpid(), agent.opt.loop_keep, time(NULL)) != 0) {
        snprintf(err, errlen, "%s: out of memory for loop_keep=%u", agent.product->name, agent.opt.loop_keep);
        return -1;
    }
    if (agent_check_profile_outputs(&agent.opt, err, errlen) != 0)
        return -1;
    /* Made once and never freed: JVMTI callbacks of any thread may name
     * things until the process ends. A reload after a failed attach keeps it. */
    if (agent.tables == NULL && (agent.tables = profile_tables_new(NULL)) == NULL) {
        snprintf(err, errlen, "%s: out of memory at start-up", agent.product->name);
        return -1;
    }
    /* thread=n: no trace names a thread, so an ended thread is needed only
     * for its THREAD START/END lines; the last ENDED_THREADS_KEPT are held
     * (a dump writes the ends since the last one), older ones forgotten, so
     * a program that starts threads all the time does not make the agent
     * grow. thread=y: every trace names its thread; all are kept. */
    if (!agent.opt.thread)
        thread_keep_ended(agent_tables(), ENDED_THREADS_KEPT);
    if (agent_add_capabilities(&agent.opt) != 0) {
        snprintf(err, errlen, "%s: cannot set up JVMTI (see the error above)", agent.product->name);
        return -1;
    }
    if (agent.product->report && agent_report_open_main(&agent.report, &agent.opt, err, errlen) != 0)
        return -1;
    static const struct { jvmtiEvent ev; event_fn fn; } own[] = {
        { JVMTI_EVENT_VM_INIT, EVENT_FN(on_vm_init) }, { JVMTI_EVENT_VM_DEATH, EVENT_FN(on_vm_death) },
        { JVMTI_EVENT_THREAD_START, EVENT_FN(on_thread_start) }, { JVMTI_EVENT_THREAD_END, EVENT_FN(on_thread_end) },
        { JVMTI_EVENT_DATA_DUMP_REQUEST, EVENT_FN(on_data_dump_request) },
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if ((!live || own[i].ev != JVMTI_EVENT_VM_INIT) && events_subscribe(own[i].ev, own[i].fn) != 0)
            return -1;
    if (agent_subscribe(&agent.opt) != 0 || (!live && events_want(hprof_jvmti, JVMTI_EVENT_VM_INIT) != 0)) {
        snprintf(err, errlen, "%s: cannot set up JVMTI events (see the error above)", agent.product->name);
        return -1;
    }
    agent.state = AGENT_LOADED;
    static int exit_hook;       /* once: a reload after a failed attach comes here again */
    if (!exit_hook && atexit(on_process_exit) == 0)
        exit_hook = 1;
    return 0;
}

jint orchestrator_load(const agent_product *product, JavaVM *vm, const char *options)
{
    static command c;
    char err[1024];
    if (agent.state != AGENT_NONE) {
        /* -agentpath (or -agentlib) given twice: one library, one agent; the
         * second's options would silently replace the first's. (Read
         * without agent.lock: start-up is single-threaded.) */
        fprintf(stderr, "%s: the agent is loaded twice (-agentpath/-agentlib given twice: '%s' and '%s'); "
                "give all the options to one of them\n", product->name, agent.options_text, options ? options : "");
        return JNI_ERR;
    }
    agent.product = product;
    if (parse_load(product, options, &c, 0, 1, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }
    if (c.opt.help) {
        fputs(options_usage(), stdout);   /* asked for: the one thing we print on stdout */
        fflush(stdout);
        exit(0);
    }
    if (first_load(vm, &c, 0, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }
    return JNI_OK;
}

/* Keep the library loaded for the life of the process once it has done
 * anything: HotSpot unloads an agent whose Agent_OnAttach fails, and a
 * signal handler or an agent thread must never point into unmapped code. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr((void *)pin_library, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

jint orchestrator_attach(const agent_product *product, JavaVM *vm, const char *options)
{
    /* c: this load's command, parsed here; posted: the one the agent thread
     * runs, copied from c once the thread has finished the one before (the
     * first attach's start is not waited for). Both under agent.lock. */
    static command c, posted;
    static char reply[REPLY_MAX];
    char err[1024];
    reply[0] = '\0';
    pthread_mutex_lock(&agent.lock);
    int first = agent.state == AGENT_NONE;
    if (first)
        agent.product = product;
    int rc = -1;
    if (parse_load(product, options, &c, first, 0, err, sizeof err) != 0) {
        snprintf(reply, sizeof reply, "%s\n", err);
    } else if (c.opt.help) {
        snprintf(reply, sizeof reply, "%s", options_usage());
        rc = 0;
    } else if (first) {
        /* The collectors start on the agent thread, after this returns:
         * only then does HotSpot count the library among its agents and
         * look the tracker's natives up in it (cpu=times, heap=sites).
         * Everything that can be refused (options, capabilities, the file)
         * is checked here, and the answer says so. */
        agent.reply = reply;
        JNIEnv *jni = NULL;
        if (first_load(vm, &c, 1, err, sizeof err) != 0) {
            say("%s", err);
            agent_report_close(&agent.report);
            agent.state = AGENT_NONE;
        } else if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK) {
            say("%s: no JNI environment on the attach thread", product->name);
        } else {
            pin_library();
            start_agent_thread(jni);
            posted = c;
            posted.req.options[0] = '\0';      /* start with the options just set */
            agent.pending = &posted;
            agent.pending_async = 1;
            pthread_cond_broadcast(&agent.wake);
            say("%s: attached to JVM %d (%s), writing to %s", product->name, (int)getpid(),
                agent.options_text[0] ? agent.options_text : "defaults", agent.report.path);
            rc = agent.thread_running ? 0 : -1;
        }
        agent.reply = NULL;
    } else if (!agent.thread_running) {
        snprintf(reply, sizeof reply, "%s: the agent is %s and has no thread to run '%s'\n", product->name,
                 agent_state_names[agent.state], command_name(c.req.command));
    } else {
        /* The agent thread runs it; this (the Attach Listener) waits. */
        while (agent.pending && !agent.thread_exited)
            pthread_cond_wait(&agent.finished, &agent.lock);
        agent.reply = reply;
        posted = c;
        agent.progress_path = posted.req.reply;
        agent.pending = &posted;
        pthread_cond_broadcast(&agent.wake);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += COMMAND_WAIT_S;
        while (!posted.done && !agent.thread_exited &&
               pthread_cond_timedwait(&agent.finished, &agent.lock, &ts) == 0)
            ;
        if (posted.done)
            rc = posted.rc;
        else {
            agent.pending = NULL;
            say("%s: '%s' did not finish within %d s", product->name, command_name(c.req.command), COMMAND_WAIT_S);
        }
        agent.reply = NULL;
        agent.progress_path = NULL;
    }
    pthread_mutex_unlock(&agent.lock);
    command_reply_send(c.req.reply, reply);
    return rc == 0 ? JNI_OK : JNI_ERR;
}
