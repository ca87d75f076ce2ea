/*
 * agent.c: the JVMTI agent's entry points and event glue.
 *
 * Data flows one way: JVM events and SIGPROF samples -> collectors (cpu,
 * monitor) -> shared tables (core) -> writers (output). This file only wires
 * them:
 *   Agent_OnLoad   parse options, open the output, ask for capabilities and
 *                  events, install the sampler's signal handler;
 *   VMInit         register the threads that already exist, create the
 *                  jmethodIDs of loaded classes, start the agent thread;
 *   ThreadStart/End  give each thread a serial and a CPU-time timer;
 *   ClassPrepare   create jmethodIDs early (AsyncGetCallTrace cannot);
 *   DataDumpRequest (SIGQUIT) and VMDeath  write a dump.
 * monitor=y's events live in monitor_agent.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/tables.h"
#include "../cpu/cpu_collector.h"
#include "../cpu/sample_queue.h"
#include "../cpu/sampler.h"
#include "../options/options.h"
#include "../output/collapsed_writer.h"
#include "../output/text_writer.h"
#include "../output/output_file.h"
#include "jvmti_support.h"
#include "monitor_agent.h"
#include "times_agent.h"
#include "tracker_agent.h"
#include "heap_agent.h"
#include "heap_dump.h"
#include "../output/hprof_binary.h"

#define AGENT_THREAD_NAME "HPROF agent"
#define DRAIN_PERIOD_MS   20

static struct {
    hprof_options  opt;
    char           options_text[1024];
    FILE          *out;
    char           out_path[OPTIONS_PATH_MAX + 64];
    text_writer    text;
    hb_writer      bin;               /* format=b */
    int            binary;
    sample_queue   queue;
    int            sampling;          /* cpu=samples is on */
    int            monitoring;        /* monitor=y is on */
    int            timing;            /* cpu=times is on */
    heap_config    heap;              /* heap=: sites and/or dump */
    int            tracking;          /* the tracker rewrites classes (cpu=times, exact heap=sites) */
    atomic_uint    deadlocks_reported; /* cycles in the last dump (read by the agent thread) */
    pthread_mutex_t dump_lock;        /* one dump at a time; guards out and text */
    int            finished;          /* VMDeath wrote the last dump */
    int            write_failed;      /* a write to file= failed: the file is incomplete */
    atomic_int     drain_stop;
    sem_t          drain_wake;
    sem_t          drain_done;
    int            drain_running;
} agent = { .dump_lock = PTHREAD_MUTEX_INITIALIZER };

/* ------------------------------------------------------------------- dumps */

/* Samples the handler had to drop are turned into rows of their own. */
static void collect_losses(void)
{
    cpu_collector_add_lost("buffer_full", atomic_exchange(&sampler_lost.buffer_full, 0));
    cpu_collector_add_lost("unregistered_thread", atomic_exchange(&sampler_lost.unregistered, 0));
}

static void write_collapsed(void)
{
    const char *path = agent.opt.collapsed;
    char tmp[OPTIONS_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "hprof: cannot write collapsed=%s: %s\n", path, strerror(errno));
        return;
    }
    int bad = collapsed_write(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "hprof: cannot write collapsed=%s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
}

/* format=b: CPU SAMPLES (0x0D), after the traces it names. */
static void write_binary_samples(const cpu_row *rows, uint32_t n, uint64_t total)
{
    hb_sample *s = malloc((n ? n : 1) * sizeof *s);
    if (s == NULL) {
        fprintf(stderr, "hprof: out of memory while writing CPU SAMPLES\n");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        s[i] = (hb_sample){ (uint32_t)(rows[i].count > UINT32_MAX ? UINT32_MAX : rows[i].count), rows[i].trace };
    heap_dump_binary_new_records(&agent.bin);
    hb_cpu_samples(&agent.bin, (uint32_t)(total > UINT32_MAX ? UINT32_MAX : total), s, n);
    free(s);
}

/* One dump: the sections (cumulative), and every record they refer to. */
static void dump(const char *why)
{
    pthread_mutex_lock(&agent.dump_lock);
    if (agent.finished || agent.out == NULL) {
        pthread_mutex_unlock(&agent.dump_lock);
        return;
    }
    if (agent.opt.verbose)
        fprintf(stderr, "Dumping %s%s%s%s (%s) ...",
                agent.sampling ? "CPU usage by sampling running threads"
                : agent.timing ? "CPU usage by timing methods" : "",
                agent.monitoring ? (agent.sampling || agent.timing ? ", and monitors" : "monitors") : "",
                agent.heap.sites ? (agent.sampling || agent.timing || agent.monitoring ? ", allocation sites"
                                                                                    : "allocation sites") : "",
                agent.heap.dump ? (agent.sampling || agent.timing || agent.monitoring || agent.heap.sites
                                   ? ", and the heap" : "the heap") : "",
                why);

    uint64_t total = 0;
    if (agent.sampling) {
        cpu_collector_drain(&agent.queue);
        collect_losses();
        cpu_row *rows = NULL;
        uint32_t n = 0;
        if (cpu_collector_rows(&rows, &n, &total) == 0) {
            if (agent.binary)
                write_binary_samples(rows, n, total);
            else {
                text_write_new_records(&agent.text);
                text_write_cpu_samples(&agent.text, rows, n, total, agent.opt.cutoff, time(NULL));
            }
            free(rows);
        } else {
            fprintf(stderr, "hprof: out of memory while writing CPU SAMPLES\n");
        }
    }
    uint32_t deadlocks = 0;
    JNIEnv *jni = NULL;
    if ((agent.monitoring || agent.timing || agent.heap.dump) &&
        (*hprof_vm)->GetEnv(hprof_vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK)
        jni = NULL;
    if (agent.timing && jni) {
        text_write_new_records(&agent.text);
        times_agent_dump(&agent.text, jni, strcmp(why, "exit") == 0);
    }
    if (agent.monitoring && jni)
        deadlocks = monitor_agent_dump(&agent.text, jni);
    if (agent.heap.sites || agent.heap.dump)
        heap_agent_collect();
    if (agent.heap.sites) {
        if (agent.binary) {
            heap_dump_binary_new_records(&agent.bin);
            heap_agent_write_sites_binary(&agent.bin);
        } else {
            text_write_new_records(&agent.text);
            heap_agent_write_sites(&agent.text);
        }
    }
    if (agent.heap.dump && jni) {
        heap_dump_target target = { agent.opt.format, &agent.text, &agent.bin, agent.out_path };
        heap_dump_write(jni, &target, agent.opt.depth, agent.opt.lineno);
    }
    /* Threads and traces met while writing the sections. */
    if (!agent.binary)
        text_write_new_records(&agent.text);

    if (fflush(agent.out) != 0 || ferror(agent.out) || (agent.binary && agent.bin.error)) {
        int e = agent.binary && agent.bin.error ? agent.bin.error : errno;
        if (!agent.write_failed)
            fprintf(stderr, "\nhprof: error writing %s (file=): %s; the file is incomplete\n", agent.out_path,
                    strerror(e));
        agent.write_failed = 1;
        clearerr(agent.out);
    }
    if (agent.sampling && agent.opt.collapsed[0])
        write_collapsed();
    if (agent.opt.verbose) {
        if (agent.sampling)
            fprintf(stderr, " done (%llu samples; %llu of them walked from the caller of a stub, "
                    "%llu at the interrupted PC instead of the instruction before it).\n",
                    (unsigned long long)total,
                    (unsigned long long)atomic_load(&sampler_lost.recovered_from_caller),
                    (unsigned long long)atomic_load(&sampler_lost.at_interrupted_pc));
        else
            fprintf(stderr, " done.\n");
        if (agent.monitoring)
            fprintf(stderr, "hprof: monitor=y: %s\n", monitor_agent_park_method());
    }
    if (deadlocks)
        fprintf(stderr, "hprof: %u deadlock%s found: see DEADLOCKS in %s\n", deadlocks,
                deadlocks == 1 ? "" : "s", agent.out_path);
    atomic_store(&agent.deadlocks_reported, deadlocks);
    pthread_mutex_unlock(&agent.dump_lock);
}

/* ------------------------------------------------------------ drain thread */

/* The agent's own Java thread: drains samples every 20 ms (cpu=samples) and
 * looks for deadlocks every deadlock= ms (monitor=y), dumping when it finds
 * more cycles than the last dump reported. */
static void JNICALL drain_thread(jvmtiEnv *jvmti, JNIEnv *jni, void *arg)
{
    (void)jvmti;
    (void)arg;
    int period_ms = agent.sampling ? DRAIN_PERIOD_MS : agent.opt.deadlock_ms;
    long since_check_ms = 0;
    while (!atomic_load(&agent.drain_stop)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += period_ms / 1000;
        ts.tv_nsec += (long)(period_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (sem_timedwait(&agent.drain_wake, &ts) != 0 && errno == EINTR)
            ;
        if (atomic_load(&agent.drain_stop))
            break;
        if (agent.sampling)
            cpu_collector_drain(&agent.queue);
        since_check_ms += period_ms;
        if (agent.opt.deadlock_ms && since_check_ms >= agent.opt.deadlock_ms) {
            since_check_ms = 0;
            if (monitor_agent_count_deadlocks(jni) > atomic_load(&agent.deadlocks_reported))
                dump("deadlock");
        }
    }
    sem_post(&agent.drain_done);
}

static void start_drain_thread(JNIEnv *jni)
{
    jclass thread_class = (*jni)->FindClass(jni, "java/lang/Thread");
    jmethodID init = thread_class ? (*jni)->GetMethodID(jni, thread_class, "<init>",
                                                         "(Ljava/lang/String;)V") : NULL;
    jstring name = init ? (*jni)->NewStringUTF(jni, AGENT_THREAD_NAME) : NULL;
    jobject thread = name ? (*jni)->NewObject(jni, thread_class, init, name) : NULL;
    if (thread == NULL) {
        (*jni)->ExceptionClear(jni);
        fprintf(stderr, "hprof: cannot create the sample drain thread; samples will be "
                "collected at dumps only\n");
        return;
    }
    if (!jvmti_failed((*hprof_jvmti)->RunAgentThread(hprof_jvmti, thread, drain_thread, NULL,
                                                     JVMTI_THREAD_MIN_PRIORITY),
                      "RunAgentThread"))
        agent.drain_running = 1;
    (*jni)->DeleteLocalRef(jni, name);
    (*jni)->DeleteLocalRef(jni, thread);
    (*jni)->DeleteLocalRef(jni, thread_class);
}

static void stop_drain_thread(void)
{
    if (!agent.drain_running)
        return;
    atomic_store(&agent.drain_stop, 1);
    sem_post(&agent.drain_wake);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    while (sem_timedwait(&agent.drain_done, &ts) != 0 && errno == EINTR)
        ;
    agent.drain_running = 0;
}

/* ----------------------------------------------------------------- threads */

/* Give a thread its serial (kept in JVMTI thread-local storage for ThreadEnd). */
static serial_t register_thread(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    jvmtiThreadInfo info;
    memset(&info, 0, sizeof info);
    if (jvmti_failed((*jvmti)->GetThreadInfo(jvmti, thread, &info), "GetThreadInfo"))
        return 0;
    char *group_name = NULL;
    if (info.thread_group) {
        jvmtiThreadGroupInfo group;
        memset(&group, 0, sizeof group);
        if ((*jvmti)->GetThreadGroupInfo(jvmti, info.thread_group, &group) == JVMTI_ERROR_NONE) {
            group_name = group.name;
            if (group.parent)
                (*jni)->DeleteLocalRef(jni, group.parent);
        }
        (*jni)->DeleteLocalRef(jni, info.thread_group);
    }
    if (info.context_class_loader)
        (*jni)->DeleteLocalRef(jni, info.context_class_loader);

    serial_t serial = 0;
    if (info.name == NULL || strcmp(info.name, AGENT_THREAD_NAME) != 0) {
        /* obj=: HPROF printed an object id; ours is derived from the serial. */
        serial = thread_add(info.name, group_name, 0);
        if (serial) {
            jvmti_failed((*jvmti)->SetThreadLocalStorage(jvmti, thread,
                                                         (void *)(uintptr_t)serial),
                         "SetThreadLocalStorage");
            thread_serial_remember(jni, thread, serial);
        }
    }
    jvmti_free(info.name);
    jvmti_free(group_name);
    return serial;
}

static void start_sampling_current(JNIEnv *jni, serial_t serial)
{
    if (agent.sampling && serial && sampler_thread_start(jni, serial) != 0)
        fprintf(stderr, "hprof: cannot create a CPU timer for thread %u: %s; it will not be "
                "sampled\n", serial, strerror(errno));
}

/* VMInit registers the threads that exist then, and HotSpot posts
 * ThreadStart for the main thread after VMInit too: keep its serial. */
static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    serial_t serial = thread_serial_of(thread);
    if (serial == 0)
        serial = register_thread(jvmti, jni, thread);
    start_sampling_current(jni, serial);
}

static void JNICALL on_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    (void)jvmti;
    sampler_thread_end();
    if (agent.timing)
        times_agent_thread_end(jni);
    if (agent.heap.sites)
        heap_agent_thread_end(jni);
    if (agent.monitoring)
        monitor_agent_thread_end(jni);
    serial_t serial = thread_serial_of(thread);
    if (serial)
        thread_mark_ended(serial);
}

/* ----------------------------------------------------------------- classes */

/* AsyncGetCallTrace can only name methods whose jmethodIDs exist: making
 * them when a class is prepared (GetClassMethods) is what lets the signal
 * handler report a frame instead of failing. */
static void prepare_method_ids(jvmtiEnv *jvmti, jclass klass)
{
    jint count = 0;
    jmethodID *methods = NULL;
    jvmtiError err = (*jvmti)->GetClassMethods(jvmti, klass, &count, &methods);
    if (err == JVMTI_ERROR_NONE)
        jvmti_free(methods);
    else if (err != JVMTI_ERROR_CLASS_NOT_PREPARED)
        jvmti_failed(err, "GetClassMethods");
}

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    if (agent.sampling)
        prepare_method_ids(jvmti, klass);
    if (agent.monitoring)
        monitor_agent_class_prepare(jvmti, jni, thread);
}

/* Enabled only because AsyncGetCallTrace needs ClassLoad events on. */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)jvmti; (void)jni; (void)thread; (void)klass;
}

/* Enabled only because, while CompiledMethodLoad events are on, HotSpot's
 * JIT records debug information at every instruction (as with
 * -XX:+DebugNonSafepoints): without it, a sample in inlined code would be
 * blamed on the enclosing method at the nearest safepoint. */
static void JNICALL on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                            const void *code_addr, jint map_length,
                                            const jvmtiAddrLocationMap *map, const void *compile_info)
{
    (void)jvmti; (void)method; (void)code_size; (void)code_addr;
    (void)map_length; (void)map; (void)compile_info;
}

/* ------------------------------------------------------------------ events */

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    /* Threads started before the live phase got no ThreadStart event. */
    jint nthreads = 0;
    jthread *threads = NULL;
    if (!jvmti_failed((*jvmti)->GetAllThreads(jvmti, &nthreads, &threads), "GetAllThreads")) {
        for (jint i = 0; i < nthreads; i++) {
            if (thread_serial_of(threads[i]) == 0)
                register_thread(jvmti, jni, threads[i]);
            (*jni)->DeleteLocalRef(jni, threads[i]);
        }
        jvmti_free(threads);
    }
    /* This is the main thread: sample it from here on. */
    start_sampling_current(jni, thread_serial_of(thread));

    jint nclasses = 0;
    jclass *classes = NULL;
    if (!jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &nclasses, &classes), "GetLoadedClasses")) {
        for (jint i = 0; i < nclasses; i++) {
            prepare_method_ids(jvmti, classes[i]);
            (*jni)->DeleteLocalRef(jni, classes[i]);
        }
        jvmti_free(classes);
    }
    if (agent.monitoring)
        monitor_agent_vm_init(jvmti, jni);
    if (agent.tracking) {
        jclass tracker = tracker_agent_vm_init(jvmti, jni);
        if (tracker && agent.timing)
            times_agent_vm_init(jni, tracker);
        if (agent.heap.sites)
            heap_agent_vm_init(jni, tracker);
    } else if (agent.heap.sites) {
        heap_agent_vm_init(jni, NULL);
    }
    if (agent.sampling || agent.opt.deadlock_ms)
        start_drain_thread(jni);
}

static void JNICALL on_data_dump_request(jvmtiEnv *jvmti)
{
    (void)jvmti;
    dump("SIGQUIT");
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
    (void)jvmti;
    if (agent.sampling)
        sampler_stop();
    stop_drain_thread();
    if (agent.opt.doe)
        dump("exit");
    if (agent.heap.sites)
        heap_agent_stop(jni);
    pthread_mutex_lock(&agent.dump_lock);
    agent.finished = 1;
    if (agent.binary && hb_close(&agent.bin) != 0)
        agent.write_failed = 1;
    if (agent.out) {
        if (fclose(agent.out) != 0)
            agent.write_failed = 1;
        agent.out = NULL;
        /* A profile cut short (disk full, file size limit) would mislead
         * the tools that read it: remove it rather than leave it corrupt. */
        if (agent.write_failed) {
            if (unlink(agent.out_path) == 0)
                fprintf(stderr, "hprof: could not write all of %s (file=); the incomplete file was "
                        "removed. Free some space or choose another file= and run again.\n", agent.out_path);
            else
                fprintf(stderr, "hprof: could not write all of %s (file=); it is incomplete\n", agent.out_path);
        }
    }
    pthread_mutex_unlock(&agent.dump_lock);
}

/* ------------------------------------------------------------------ set-up */

static int setup_jvmti(void)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities potential, caps;
    memset(&caps, 0, sizeof caps);
    if (jvmti_failed((*jvmti)->GetPotentialCapabilities(jvmti, &potential),
                     "GetPotentialCapabilities"))
        return -1;
    caps.can_get_line_numbers = potential.can_get_line_numbers;
    caps.can_get_source_file_name = potential.can_get_source_file_name;
    caps.can_generate_compiled_method_load_events = potential.can_generate_compiled_method_load_events;
    if (agent.sampling && !potential.can_generate_compiled_method_load_events)
        fprintf(stderr, "hprof: warning: this JVM cannot report compiled methods; samples in "
                "inlined code may be attributed to the enclosing method\n");
    if (agent.monitoring && monitor_agent_capabilities(&potential, &caps) != 0)
        return -1;
    if (agent.tracking && tracker_agent_capabilities(&potential, &caps) != 0)
        return -1;
    if ((agent.heap.sites || agent.heap.dump) && heap_agent_capabilities(&agent.heap, &potential, &caps) != 0)
        return -1;
    if (jvmti_failed((*jvmti)->AddCapabilities(jvmti, &caps), "AddCapabilities"))
        return -1;

    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = on_vm_init;
    cb.VMDeath = on_vm_death;
    cb.ThreadStart = on_thread_start;
    cb.ThreadEnd = on_thread_end;
    cb.ClassLoad = on_class_load;
    cb.ClassPrepare = on_class_prepare;
    cb.CompiledMethodLoad = on_compiled_method_load;
    cb.DataDumpRequest = on_data_dump_request;
    if (agent.monitoring)
        monitor_agent_callbacks(&cb);
    if (agent.tracking)
        tracker_agent_callbacks(&cb);
    heap_agent_callbacks(&agent.heap, &cb);
    if (jvmti_failed((*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb), "SetEventCallbacks"))
        return -1;

    /* Exact heap=sites walks a stack per allocation, monitor=y one per park
     * (at most): with AsyncGetCallTrace when the JVM has it (see
     * stack_trace_here). */
    int fast_walks = ((agent.heap.sites && !agent.heap.sample_interval) || agent.monitoring) &&
                     stack_walk_fast_init() == 0;
    jvmtiEvent events[] = {
        JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
        JVMTI_EVENT_THREAD_END, JVMTI_EVENT_DATA_DUMP_REQUEST, JVMTI_EVENT_CLASS_LOAD,
        JVMTI_EVENT_CLASS_PREPARE, JVMTI_EVENT_COMPILED_METHOD_LOAD,
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        /* ClassLoad (needed by AsyncGetCallTrace) serves the sampler and
         * the stack walks of exact heap=sites and of monitor=y's parks;
         * CompiledMethodLoad (debug info at every instruction) only the
         * sampler. */
        if (events[i] == JVMTI_EVENT_COMPILED_METHOD_LOAD &&
            (!agent.sampling || !caps.can_generate_compiled_method_load_events))
            continue;
        if (events[i] == JVMTI_EVENT_CLASS_LOAD && !agent.sampling && !fast_walks)
            continue;
        if (jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, events[i], NULL),
                         "SetEventNotificationMode"))
            return -1;
    }
    if (agent.timing) {
        times_config tc = { agent.opt.depth, agent.opt.lineno, agent.opt.thread, agent.opt.cutoff };
        times_agent_enable(&tc);
    }
    if ((agent.heap.sites || agent.heap.dump) && heap_agent_enable(jvmti, &agent.heap) != 0)
        return -1;
    if (agent.tracking) {
        tracker_config trc = { agent.timing, agent.heap.sites && !agent.heap.sample_interval };
        if (tracker_agent_enable(jvmti, &trc) != 0)
            return -1;
    }
    if (agent.monitoring) {
        monitor_config mc = { agent.opt.depth, agent.opt.lineno, agent.opt.thread, agent.opt.cutoff };
        if (monitor_agent_enable(jvmti, &mc) != 0)
            return -1;
    }
    return 0;
}

/* Queue size: about 100 ms of samples from every CPU at the chosen interval,
 * so the drain thread (every 20 ms) has ample slack. */
static size_t queue_capacity(int interval_ms)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    size_t per_cpu = (size_t)(100 / interval_ms + 1);
    size_t cap = (size_t)cpus * per_cpu;
    if (cap < 256)
        cap = 256;
    if (cap > 65536)
        cap = 65536;
    return cap;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    char err[1024];
    if (options_parse(options, &agent.opt, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }
    if (agent.opt.help) {
        fputs(options_usage(), stdout);   /* asked for: the one thing we print on stdout */
        fflush(stdout);
        exit(0);
    }
    if (options_check_implemented(&agent.opt, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }
    snprintf(agent.options_text, sizeof agent.options_text, "%s", options ? options : "");
    hprof_vm = vm;
    if ((*vm)->GetEnv(vm, (void **)&hprof_jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
        fprintf(stderr, "hprof: this JVM does not provide JVMTI 1.2 or later\n");
        return JNI_ERR;
    }

    if (output_file_open(agent.opt.file, agent.opt.force, agent.opt.format, &agent.out,
                         agent.out_path, sizeof agent.out_path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }
    if (agent.opt.collapsed[0] && output_file_check_writable(agent.opt.collapsed, "collapsed",
                                                             err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return JNI_ERR;
    }

    if (tables_init(NULL) != 0 || sem_init(&agent.drain_wake, 0, 0) != 0 ||
        sem_init(&agent.drain_done, 0, 0) != 0) {
        fprintf(stderr, "hprof: out of memory at start-up\n");
        return JNI_ERR;
    }

    if (agent.opt.cpu == CPU_SAMPLES) {
        /* Without collapsed output, walking deeper than depth= is wasted work. */
        uint32_t walk = agent.opt.collapsed[0] ? CPU_MAX_FRAMES
                      : (uint32_t)(agent.opt.depth > 0 ? agent.opt.depth : 1);
        cpu_collector_config cc = {
            .depth = agent.opt.depth,
            .lineno = agent.opt.lineno,
            .per_thread = agent.opt.thread,
            .keep_stacks = agent.opt.collapsed[0] != 0,
            .resolve = resolve_method,
            .resolve_context = NULL,
        };
        if (sample_queue_init(&agent.queue, queue_capacity(agent.opt.interval_ms), walk) != 0 ||
            cpu_collector_init(&cc) != 0) {
            fprintf(stderr, "hprof: out of memory at start-up\n");
            return JNI_ERR;
        }
        sampler_engine engine = agent.opt.sampler == 'p' ? SAMPLER_PERF
                              : agent.opt.sampler == 't' ? SAMPLER_TIMER : SAMPLER_AUTO;
        if (sampler_init(&agent.queue, agent.opt.interval_ms, walk, engine, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return JNI_ERR;
        }
        agent.sampling = 1;
    }
    agent.monitoring = agent.opt.monitor;
    agent.timing = agent.opt.cpu == CPU_TIMES;
    agent.heap = (heap_config){
        .sites = agent.opt.heap == HEAP_SITES || agent.opt.heap == HEAP_ALL,
        .dump = agent.opt.heap == HEAP_DUMP || agent.opt.heap == HEAP_ALL,
        .sample_interval = agent.opt.heap_sample,
        .depth = agent.opt.depth, .lineno = agent.opt.lineno, .per_thread = agent.opt.thread,
        .cutoff = agent.opt.cutoff,
    };
    agent.tracking = agent.timing || (agent.heap.sites && !agent.heap.sample_interval);
    char notes[256] = "";
    if (agent.sampling)
        snprintf(notes, sizeof notes, "CPU samples: every %d ms of a thread's CPU time, driven by %s.",
                 agent.opt.interval_ms, sampler_engine_name());
    else if (agent.timing)
        snprintf(notes, sizeof notes, "CPU TIME: exact calls, and each thread's CPU time (ns, "
                 "reported in ms) from calls inserted at method entry and exit.");
    text_writer_init(&agent.text, agent.out);
    agent.binary = agent.opt.format == 'b';
    if (agent.binary) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (hb_open(&agent.bin, agent.out, (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000, 0) != 0) {
            fprintf(stderr, "hprof: cannot write %s (file=): %s\n", agent.out_path, strerror(agent.bin.error));
            return JNI_ERR;
        }
    } else {
        text_write_header(&agent.text, time(NULL), agent.options_text, notes);
    }
    if (setup_jvmti() != 0) {
        fprintf(stderr, "hprof: cannot set up JVMTI (see the error above)\n");
        return JNI_ERR;
    }
    return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    (void)vm;
    (void)options;
    (void)reserved;
    fprintf(stderr, "hprof: loading into a running JVM (attach) is not supported by this "
            "version; start the JVM with -agentlib:hprof=... instead\n");
    return JNI_ERR;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
    (void)vm;
    /* The tables stay: a SIGPROF already queued may still run the handler,
     * which only reads preallocated state, until the process is gone. */
}
