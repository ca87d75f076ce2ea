/*
 * monitor_agent.c: monitor=y's collector (see monitor_agent.h): what it
 * asks of the JVM, its start and stop, deadlock='s tick, its dump, reset
 * and status. The work is done by the files of monitor_parts.h.
 */
#include "monitor_agent.h"
#include "monitor_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../options/jvm_args.h"
#include "events.h"
#include "jvmti_support.h"
#include "stack_walk_fast.h"

monitor_common mon_common;

/* The collector's own: first start done, deadlock='s period (ms), and the
 * deadlock cycles the last dump reported (a tick that finds more asks for
 * a dump). */
static struct {
    int made;
    int deadlock_ms;
    uint32_t reported;
} collector_run;

/* Breakpoints are a capability HotSpot gives one JVMTI environment only,
 * and only at start-up: a debugger agent (JDWP) loading after ours would
 * refuse to start without them, and one loaded before holds them already.
 * When the JVM's options load one, they are left to it (1), said once. */
static int debugger_needs_breakpoints(const collector_env *env, int virtual_threads)
{
    char debugger[300];
    if (env->live || !jvm_loads_debugger(debugger, sizeof debugger))
        return 0;
    char line[1024];
    snprintf(line, sizeof line, "monitor=y: a debugger loads in this JVM (%s) and breakpoints are left to it "
             "(HotSpot gives them to one agent only): %s", debugger,
             virtual_threads ? "parks of virtual threads are timed from their unmounts to their mounts, and "
                               "parks on java.util.concurrent locks are not timed if Unsafe.park cannot be "
                               "wrapped"
                             : "parks on java.util.concurrent locks are not timed if Unsafe.park cannot be "
                               "wrapped");
    env->limit(line);
    return 1;
}

static int capabilities(const collector_env *env, const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    if (!potential->can_generate_monitor_events || !potential->can_get_monitor_info) {
        fprintf(stderr, "hprof: monitor=y needs JVMTI monitor events and monitor information, "
                "which this JVM does not offer\n");
        return -1;
    }
    caps->can_generate_monitor_events = 1;
    caps->can_get_monitor_info = 1;
    /* Which monitors a thread owns and waits for: HotSpot grants these only
     * at start-up. Without them, MONITOR DUMP and deadlock detection are left
     * out; contention and waits are still timed. */
    mon_common.inspect = potential->can_get_owned_monitor_info && potential->can_get_current_contended_monitor;
    if (mon_common.inspect) {
        caps->can_get_owned_monitor_info = 1;
        caps->can_get_current_contended_monitor = 1;
    } else {
        env->limit("monitor=y: this JVM tells which monitors a thread owns or waits for only to an agent "
                   "loaded at start-up: MONITOR DUMP and DEADLOCKS are left out after an attach "
                   "(contention and waits are timed)");
    }
    /* Frames with source files and line numbers, in traces and whole stacks. */
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    /* Virtual threads: JVMTI's support for them (events and functions on
     * virtual threads), and the byte codes of VirtualThread.park (where to
     * put the breakpoints that time their parks). */
    int virtual_threads = jvmti_want_virtual_threads(potential, caps);
    caps->can_get_bytecodes = potential->can_get_bytecodes;
    mon_common.debugger_loads = debugger_needs_breakpoints(env, virtual_threads);
    if (!mon_common.debugger_loads)
        caps->can_generate_breakpoint_events = potential->can_generate_breakpoint_events;
    caps->can_tag_objects = potential->can_tag_objects;   /* class serials cached in tags */
    caps->can_generate_native_method_bind_events = potential->can_generate_native_method_bind_events;
    if (!potential->can_generate_breakpoint_events && !mon_common.debugger_loads)
        env->limit(env->live ? "monitor=y: this JVM offers breakpoints only at start-up: platform threads' "
                               "parks on java.util.concurrent locks are not timed after an attach (contended "
                               "synchronized, waits and virtual threads' parks are)"
                             : "monitor=y: no breakpoint events in this JVM: parking on "
                               "java.util.concurrent locks is not timed");
    return 0;
}

static int wanted(const hprof_options *opt) { return opt->monitor; }

/* NativeMethodBind from OnLoad: Unsafe's natives are bound before VMInit
 * (monitor_parks.c); after an attach they are bound already. */
static int subscribe(const collector_env *env)
{
    if (monitor_events_subscribe() != 0 || monitor_parks_subscribe(env, !collector_run.made) != 0 ||
        monitor_vthreads_subscribe() != 0)
        return -1;
    return 0;
}

static const jvmtiEvent monitor_events[] = {
    JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
    JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED,
};

static int start(const collector_env *env, JNIEnv *jni)
{
    if (!collector_run.made) {
        mon_common.cfg = (monitor_config){ env->opt->depth, env->opt->lineno, env->opt->thread, env->opt->cutoff };
        mon_common.traces.depth = env->opt->depth;
        mon_common.traces.lineno = env->opt->lineno;
        mon_common.traces.full_stacks = options_want_stacks(env->opt);
        mon_common.traces.tables = env->tables;
        mon_common.traces.resolve = resolve_method;
        mon_common.traces.context = NULL;
        mon_common.table = monitor_table_new();
        if (mon_common.table == NULL) {
            fprintf(stderr, "hprof: out of memory at start-up (monitor=y)\n");
            return -1;
        }
        collector_run.made = 1;
    } else if (options_want_stacks(env->opt) != mon_common.traces.full_stacks || env->opt->depth != mon_common.traces.depth) {
        env->limit("monitor=y: depth= and whether whole stacks are kept (pprof=, flamegraph=, "
                   "collapsed=) keep the values of the first start");
    }
    mon_common.cfg.cutoff = env->opt->cutoff;
    collector_run.deadlock_ms = env->opt->deadlock_ms;
    stack_walk_fast_init();                  /* park stacks: the cheap walk */
    for (size_t i = 0; i < sizeof monitor_events / sizeof monitor_events[0]; i++)
        if (events_want(hprof_jvmti, monitor_events[i]) != 0)
            return -1;
    mon_common.running = 1;
    monitor_parks_start(hprof_jvmti, jni);
    return 0;
}

static void stop(JNIEnv *jni)
{
    (void)jni;
    if (!mon_common.running)
        return;
    mon_common.running = 0;
    for (size_t i = 0; i < sizeof monitor_events / sizeof monitor_events[0]; i++)
        events_unwant(hprof_jvmti, monitor_events[i]);
    monitor_vthreads_stop(hprof_jvmti);
    monitor_parks_stop(hprof_jvmti);
}

/* deadlock=: look for cycles every deadlock_ms; a dump when there are more
 * than the last dump reported. */
static int tick(JNIEnv *jni)
{
    static long waited_ms;
    if (!mon_common.running || collector_run.deadlock_ms <= 0)
        return 0;
    waited_ms += 20;
    if (waited_ms < collector_run.deadlock_ms)
        return 0;
    waited_ms = 0;
    return monitor_count_deadlocks(jni) > collector_run.reported;
}

static void dump(dump_target *t, JNIEnv *jni)
{
    text_writer *text = report_text(&t->report);   /* the monitor sections: text only */
    if (!collector_run.made || text == NULL)
        return;
    time_t now = time(NULL);
    monitor_write_times(text, now);
    uint32_t deadlocks = monitor_write_dump(text, jni, now);
    char line[OPTIONS_PATH_MAX + 128];
    if (t->verbose) {
        snprintf(line, sizeof line, "hprof: monitor=y: %s", monitor_parks_method());
        dump_note(t, line);
        if (mon_vthreads.vthread_class) {
            monitor_vthreads_note(line, sizeof line);
            dump_note(t, line);
        }
    }
    if (monitor_vthreads_unnamed_note(line, sizeof line))
        dump_note(t, line);
    if (deadlocks) {
        snprintf(line, sizeof line, "hprof: %u deadlock%s found: see DEADLOCKS in %s", deadlocks,
                 deadlocks == 1 ? "" : "s", t->out_path);
        dump_note(t, line);
    }
    collector_run.reported = deadlocks;
}

static void thread_end(JNIEnv *jni, jthread thread)
{
    (void)thread;
    monitor_parks_thread_end(jni);
}

static profile *lock_snapshot(JNIEnv *jni)
{
    (void)jni;
    return monitor_take_lock_profile();
}

static profile *wait_snapshot(JNIEnv *jni)
{
    (void)jni;
    return monitor_take_wait_profile();
}

static void reset(JNIEnv *jni)
{
    (void)jni;
    if (collector_run.made)
        monitor_table_reset(mon_common.table);
}

static void status(char *line, size_t size)
{
    monitor_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0, episodes = 0;
    if (collector_run.made && monitor_table_rows(mon_common.table, &rows, &n, &total) == 0) {
        for (uint32_t i = 0; i < n; i++) {
            if (rows[i].kind == BLOCK_PINNED)
                total -= rows[i].nanos;     /* counted under its own kind too */
            else
                episodes += rows[i].count;
        }
        free(rows);
    }
    snprintf(line, size, "monitor=y: %s, %llu blocking episodes, %.3f s blocked (%s)",
             mon_common.running ? "timing" : "stopped", (unsigned long long)episodes, (double)total / 1e9, monitor_parks_method());
}

const collector monitor_collector = {
    .name = "monitor=y", .wanted = wanted, .capabilities = capabilities, .subscribe = subscribe,
    .start = start, .thread_end = thread_end, .tick_ms = 20, .tick = tick, .dump = dump,
    .reset = reset, .stop = stop, .status = status, .profile_kind = "lock", .snapshot = lock_snapshot,
    .extra_kind = "wait", .extra_snapshot = wait_snapshot,
};
