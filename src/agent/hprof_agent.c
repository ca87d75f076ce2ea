/*
 * hprof_agent: libhprof.so's entry points, and what the profiler is to the
 * orchestrator (orchestrator.h): its collectors, a report file, every
 * command, and the class rewriting shared by cpu=times and heap=sites,
 * done once for all of them after they start or stop.
 */
#include <jni.h>
#include <jvmti.h>
#include <stdio.h>

#include "../sampler/sampler.h"
#include "heap_dump.h"
#include "jvmti_support.h"
#include "orchestrator.h"
#include "tracker_agent.h"

static const collector *const profiler_collectors[] = {
    &cpu_samples_collector, &cpu_times_collector, &heap_sites_collector, &heap_dump_collector,
    &monitor_collector, &wall_collector, &class_load_collector,
};

static void header_notes(const hprof_options *opt, char *notes, size_t size)
{
    if (opt->cpu == CPU_SAMPLES)
        snprintf(notes, size, "CPU samples: every %d ms of a thread's CPU time, driven by %s.", opt->interval_ms,
                 sampler_engine_name());
    else if (opt->cpu == CPU_TIMES)
        snprintf(notes, size, "CPU TIME: exact calls, and each thread's CPU time (ns, reported in ms) from calls "
                 "inserted at method entry and exit. On the JVM's service threads (Reference Handler, Finalizer, "
                 "Common-Cleaner) the JDK's own methods are not recorded; the user's code they run is.");
}

/* The tracker rewrites the loaded classes for the collectors that need it. */
static int after_start(JNIEnv *jni, int restart)
{
    if (tracker_agent_apply(hprof_jvmti, jni) != 0)
        return -1;
    if (restart && tracker_agent_rewritten())
        agent_say("hprof: %u classes instrumented again", tracker_agent_rewritten());
    return 0;
}

/* Classes rewritten for cpu=times or heap=sites get their own bytes back. */
static void after_stop(JNIEnv *jni)
{
    tracker_agent_apply(hprof_jvmti, jni);
    if (tracker_agent_rewritten())
        agent_say("hprof: %u classes restored to their original byte code", tracker_agent_rewritten());
}

/* No more samples while the last dump is written. */
static void before_last_dump(JNIEnv *jni)
{
    (void)jni;
    sampler_stop();
}

/* Allocations after the last dump are not counted. */
static void after_last_dump(JNIEnv *jni)
{
    heap_sites_collector.stop(jni);
}

static const agent_product profiler = {
    .name = "hprof",
    .thread_name = "HPROF agent",
    .jvmti_version = JVMTI_VERSION_1_2,
    .jvmti_missing = "this JVM does not provide JVMTI 1.2 or later",
    .collectors = profiler_collectors,
    .n_collectors = sizeof profiler_collectors / sizeof profiler_collectors[0],
    .report = 1,
    .commands = PRODUCT_COMMAND(COMMAND_START) | PRODUCT_COMMAND(COMMAND_STOP) | PRODUCT_COMMAND(COMMAND_DUMP) |
                PRODUCT_COMMAND(COMMAND_RESET) | PRODUCT_COMMAND(COMMAND_STATUS),
    .commands_refused = "",
    .header_notes = header_notes,
    .after_start = after_start,
    .after_stop = after_stop,
    .before_last_dump = before_last_dump,
    .after_last_dump = after_last_dump,
    .binary_new_records = heap_dump_binary_new_records,
};

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    return orchestrator_load(&profiler, vm, options);
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    return orchestrator_attach(&profiler, vm, options);
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
    (void)vm;
    /* The tables stay: a SIGPROF already queued may still run the handler,
     * which only reads preallocated state, until the process is gone. */
}
