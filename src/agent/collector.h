/*
 * collector: the one interface every feature of the agent presents to the
 * orchestrator (agent.c), which walks a list of them instead of naming each:
 *
 *   cpu=samples  samples_agent.c      heap=sites  heap_agent.c
 *   cpu=times    times_agent.c        heap=dump   heap_agent.c (the walk: heap_dump.c)
 *   monitor=y    monitor_agent.c      wall=       wall_agent.c
 *   class loading traces (for heap=dump's class records): class_loads.c
 *
 * Life of a collector (the orchestrator's state machine calls these on the
 * agent's own thread, or in VMInit / Agent_OnAttach before that exists):
 *
 *   wanted        do these options ask for it?
 *   capabilities  add what it needs to *caps from *potential (at start-up,
 *                 or in the live phase after attach, when HotSpot offers
 *                 fewer); -1 after a message if it cannot work at all.
 *                 What it must do without is told through env->limit(),
 *                 which the orchestrator writes in the report header and
 *                 says on the attach command's reply
 *   subscribe     its JVMTI events (events.h: fan-out to every subscriber)
 *   start         live start: from VMInit, from attach, or `start` after
 *                 `stop` (possibly with other options); threads that exist
 *                 already are the collector's to pick up
 *   thread_start/thread_end  on the thread concerned (optional)
 *   tick          every tick_ms on the agent thread while running (optional);
 *                 returns 1 to ask for a dump (a new deadlock)
 *   dump          write its sections to a report (SIGQUIT, `dump`, exit)
 *   reset         zero its counts; serial numbers stay
 *   stop          stop collecting: events off, timers deleted, classes
 *                 rewritten for it retransformed back; counts are kept for
 *                 the dump that follows and a later `start`
 *   status        one line of counts for `status`
 *   snapshot      (optional) what it counted so far as a new profile with
 *                 whole stacks (profile.h), for pprof=, flamegraph= and
 *                 collapsed=: the orchestrator writes those files from the
 *                 snapshots of every collector at each dump, after the
 *                 collectors' own sections (so heap=sites' census is done).
 *                 Only asked for when options_want_stacks(): the
 *                 collector then walked whole stacks (trace_builder
 *                 full_stacks). NULL when out of memory; the caller frees it.
 *                 profile_kind names it in file names ("cpu", "alloc", "lock").
 *   extra_snapshot  (optional) a second profile of the same kind, kept apart
 *                 from the first in its own files (monitor=y: the waits of
 *                 MONITOR WAIT TIME beside the contention of MONITOR TIME),
 *                 extra_kind naming it ("wait").
 *   live_summary  optional: lines for net='s live summary (`hprof listen`'s
 *                 screen), "<key> <values>\n" each, appended to text
 */
#ifndef HPROF_COLLECTOR_H
#define HPROF_COLLECTOR_H

#include <jni.h>
#include <jvmti.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/tables.h"
#include "../options/options.h"
#include "../output/hprof_binary.h"
#include "../profile/profile.h"
#include "../output/report_sections.h"
#include "../output/text_writer.h"

typedef struct collector_env {
    const hprof_options *opt;
    int  live;                         /* started after the VM was running (attach) */
    void (*limit)(const char *what);   /* a limitation, said once to the user */
    profile_tables *tables;            /* the agent's tables (agent_tables()) */
} collector_env;

/* Where a dump goes: the agent's file, or a new file for `dump file=`. */
typedef struct dump_target {
    report_target report;              /* the file's format and writers: its sections go there */
    const char  *out_path;
    const char  *why;                  /* "SIGQUIT", "exit", "dump", "stop", ... */
    int          final;                /* the VM is exiting */
    int          heap_collected;       /* a heap collector forced the GC and counted already */
    int          verbose;              /* verbose=: notes about how the data was taken are welcome */
    char         notes[1024];          /* lines for stderr once the dump is written (dump_note) */
} dump_target;

/* A line for the user about this dump, said after it (not in the middle
 * of the agent's "Dumping ..." line). */
static inline void dump_note(dump_target *t, const char *line)
{
    size_t used = strlen(t->notes);
    snprintf(t->notes + used, sizeof t->notes - used, "%s\n", line);
}

typedef struct collector {
    const char *name;
    int  (*wanted)(const hprof_options *opt);
    int  (*capabilities)(const collector_env *env, const jvmtiCapabilities *potential,
                         jvmtiCapabilities *caps);
    int  (*subscribe)(const collector_env *env);
    int  (*start)(const collector_env *env, JNIEnv *jni);
    void (*thread_start)(JNIEnv *jni, jthread thread, serial_t serial);
    void (*thread_end)(JNIEnv *jni, jthread thread);
    int  tick_ms;
    int  (*tick)(JNIEnv *jni);
    void (*dump)(dump_target *target, JNIEnv *jni);
    void (*reset)(JNIEnv *jni);
    void (*stop)(JNIEnv *jni);
    void (*status)(char *line, size_t size);
    const char *profile_kind;
    profile *(*snapshot)(JNIEnv *jni);
    const char *extra_kind;
    profile *(*extra_snapshot)(JNIEnv *jni);
    void (*live_summary)(char *text, size_t size);
} collector;

extern const collector cpu_samples_collector, cpu_times_collector, heap_sites_collector,
                       heap_dump_collector, monitor_collector, wall_collector, class_load_collector;

#endif
