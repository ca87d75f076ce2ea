/*
 * collector: the JVMPI layer as a collector (src/agent/collector.h) under
 * the profiler's orchestrator (src/agent/agent.c), which gives it what it
 * gives cpu=samples or monitor=y: capabilities and event subscriptions at
 * start-up, the live start at VMInit, every thread's start and end, the
 * agent thread, SIGQUIT and the run-time commands of `hprof` (and jcmd):
 *
 *   start         VMInit: CLASS_LOAD of the classes loaded so far, the
 *                 tracker, ARENA_NEW, the GC thread, JVM_INIT_DONE
 *   thread_start  THREAD_START (threads.c announces a thread once)
 *   thread_end    THREAD_END
 *   dump          SIGQUIT and `hprof dump`: DATA_DUMP_REQUEST; the last one,
 *                 as the VM ends: the collections not reported yet, then
 *                 JVM_SHUT_DOWN
 *   reset         `hprof reset`: DATA_RESET_REQUEST
 *   status        `hprof status`: which agent runs, what it takes
 *
 * The layer writes no report of its own (the JVMPI agent writes its own),
 * cannot start in a running JVM (JVMPI agents start in JVM_OnLoad, and
 * what they need from the start, CLASS_LOAD of every class and METHOD_ENTRY2's
 * receivers, cannot be had later), and has nothing to stop or restart.
 */
#include <stdio.h>
#include <unistd.h>

#include "../agent/jvmti_support.h"
#include "../agent/stack_walk_fast.h"
#include "layer.h"

static int jvmpi_wanted(const hprof_options *opt) { (void)opt; return 1; }

/* What the layer uses, where this JVM offers it; tags are a must (ids). */
static int jvmpi_capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps) {
    (void)env;
    jvmpi_jvmti = hprof_jvmti;             /* the orchestrator's environment is the layer's */
    caps->can_tag_objects = potential->can_tag_objects;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    /* can_suspend: asked for at the agent's first SuspendThread (interface.c:
     * may_suspend), so that a debugger listed after the layer gets it. */
    caps->can_get_current_thread_cpu_time = potential->can_get_current_thread_cpu_time;
    caps->can_get_thread_cpu_time = potential->can_get_thread_cpu_time;
    caps->can_generate_monitor_events = potential->can_generate_monitor_events;
    caps->can_generate_garbage_collection_events = potential->can_generate_garbage_collection_events;
    caps->can_generate_vm_object_alloc_events = potential->can_generate_vm_object_alloc_events;
    caps->can_generate_compiled_method_load_events = potential->can_generate_compiled_method_load_events;
    caps->can_generate_object_free_events = potential->can_generate_object_free_events;
    caps->can_get_owned_monitor_info = potential->can_get_owned_monitor_info;
    caps->can_get_current_contended_monitor = potential->can_get_current_contended_monitor;
    caps->can_get_monitor_info = potential->can_get_monitor_info;
    if (!caps->can_tag_objects) {
        fprintf(stderr, "jvmpi: this JVM cannot tag objects (JVMTI can_tag_objects): JVMPI object ids need it\n");
        return -1;
    }
    return jvmpi_methods_capabilities(potential, caps);
}

static int jvmpi_subscribe(const collector_env *env) {
    (void)env;
    if (jvmpi_translate_subscribe() != 0 || jvmpi_methods_subscribe() != 0 || jvmpi_allocs_subscribe() != 0 ||
        jvmpi_gc_subscribe() != 0 || jvmpi_monitors_subscribe() != 0 || jvmpi_instructions_subscribe() != 0)
        return -1;
    return jvmpi_hooks_setup(jvmpi_vm) != 0 || jvmpi_monitors_always() != 0 ? -1 : 0;
}

static int jvmpi_start(const collector_env *env, JNIEnv *jni) {
    (void)env;
    stack_walk_fast_init();                 /* GetCallTrace from the tracker's calls: the cheap walk */
    jvmpi_translate_start(jni);
    return 0;
}

static void jvmpi_thread_started(JNIEnv *jni, jthread thread, serial_t serial) {
    (void)thread; (void)serial;
    jvmpi_thread_here(jni);
}

/* Not for the orchestrator's own thread: it ends as the VM ends, at the
 * same time as JVM_SHUT_DOWN is posted on another thread, and an agent that
 * closes its files there met its THREAD_END still writing (heap corruption
 * under -Xcheck:jni on JDK 25, in two of this session's full test runs). */
static void jvmpi_thread_ended(JNIEnv *jni, jthread thread) {
    (void)thread;
    if (!orchestrator_own_thread()) jvmpi_thread_end(jni);
}

/* DATA_DUMP_REQUEST or DATA_RESET_REQUEST, on the agent thread (announced
 * as any thread is); what became of it, for the command's answer. */
static void post_request(JNIEnv *jni, jint event, const char *name, char *said, size_t size) {
    if (!jvmpi_enabled(event)) {
        snprintf(said, size, "jvmpi: the JVMPI agent %s has not enabled %s: nothing was posted",
                 jvmpi_agent_library(), name);
        return;
    }
    jvmpi_thread_here(jni);
    jvmpi_post_bare(jni, event);
    snprintf(said, size, "jvmpi: %s posted to the JVMPI agent %s (JVM %d)", name, jvmpi_agent_library(),
             (int)getpid());
}

static void jvmpi_dump(dump_target *target, JNIEnv *jni) {
    if (target->final) {
        jvmpi_translate_finish(jni);
        return;
    }
    char said[1024];
    post_request(jni, JVMPI_EVENT_DATA_DUMP_REQUEST, "DATA_DUMP_REQUEST", said, sizeof said);
    dump_note(target, said);
}

static void jvmpi_reset(JNIEnv *jni) {
    char said[1024];
    post_request(jni, JVMPI_EVENT_DATA_RESET_REQUEST, "DATA_RESET_REQUEST", said, sizeof said);
    agent_say("%s", said);
}

static void jvmpi_status(char *line, size_t size) {
    snprintf(line, size, "jvmpi: JVMPI agent %s; dump posts DATA_DUMP_REQUEST (%s), reset DATA_RESET_REQUEST (%s)",
             jvmpi_agent_library(),
             jvmpi_enabled(JVMPI_EVENT_DATA_DUMP_REQUEST) ? "enabled" : "not enabled by the agent",
             jvmpi_enabled(JVMPI_EVENT_DATA_RESET_REQUEST) ? "enabled" : "not enabled by the agent");
}

static const collector jvmpi_collector = {
    .name = "the JVMPI layer",
    .wanted = jvmpi_wanted,
    .capabilities = jvmpi_capabilities,
    .subscribe = jvmpi_subscribe,
    .start = jvmpi_start,
    .thread_start = jvmpi_thread_started,
    .thread_end = jvmpi_thread_ended,
    .dump = jvmpi_dump,
    .reset = jvmpi_reset,
    .status = jvmpi_status,
};

static const collector *const layer_collectors[] = { &jvmpi_collector };

const agent_product jvmpi_product = {
    .name = "jvmpi",
    .thread_name = "JVMPI layer",
    .jvmti_version = JVMTI_VERSION_11,
    .jvmti_missing = "this JVM offers no JVMTI 11 environment: libjvmpi.so needs JDK 11 or later",
    .collectors = layer_collectors,
    .n_collectors = 1,
    .report = 0,
    .commands = PRODUCT_COMMAND(COMMAND_DUMP) | PRODUCT_COMMAND(COMMAND_RESET) | PRODUCT_COMMAND(COMMAND_STATUS),
    .commands_refused = "is the profiler's (libhprof.so); the JVMPI layer takes dump, reset and status "
                        "(its agent runs from the JVM's start to its end)",
    .attach_refused = "libjvmpi.so runs a JVMPI agent from the JVM's start only "
                      "(-agentpath:/path/to/libjvmpi.so=<agent library>); it cannot be attached to a running JVM",
};
