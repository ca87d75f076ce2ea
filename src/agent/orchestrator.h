/*
 * orchestrator: the agent's life (agent.c) for any library built on the
 * collector interface (collector.h). Two libraries are:
 *
 *   libhprof.so  the profiler: its collectors, a report file (file=, net=),
 *                every command (hprof_agent.c)
 *   libjvmpi.so  the JVMPI layer: one collector, which drives a JVMPI
 *                agent; no report of its own (the agent writes its own),
 *                dump and reset post DATA_DUMP_REQUEST and DATA_RESET_REQUEST
 *                (src/jvmpi/collector.c)
 *
 * Each library says what it is in an agent_product and hands its load and
 * attach entry points to the orchestrator, which owns the state machine,
 * the agent thread, SIGQUIT, the command protocol and the thread registry.
 */
#ifndef HPROF_ORCHESTRATOR_H
#define HPROF_ORCHESTRATOR_H

#include <jni.h>
#include <jvmti.h>
#include <stddef.h>

#include "../options/options.h"
#include "collector.h"

#define PRODUCT_MAX_COLLECTORS 8

/* Which run-time commands a product takes (command_request.command as bits). */
#define PRODUCT_COMMAND(c) (1u << (c))

typedef struct agent_product {
    const char *name;                   /* messages start "<name>: " */
    const char *thread_name;            /* the agent thread's (kept out of the thread table) */
    jint        jvmti_version;          /* asked of GetEnv */
    const char *jvmti_missing;          /* said when the JVM has no such environment */
    const collector *const *collectors;
    size_t      n_collectors;           /* at most PRODUCT_MAX_COLLECTORS */
    int         report;                 /* writes a report (file=, net=); else dumps go to the collectors only */
    unsigned    commands;               /* PRODUCT_COMMAND bits of the commands it takes */
    const char *commands_refused;       /* why the others are refused */
    const char *attach_refused;         /* NULL if it can start in a running JVM; else why not */
    /* Optional hooks around what all collectors do: */
    void (*header_notes)(const hprof_options *opt, char *notes, size_t size);  /* report header's notes */
    int  (*after_start)(JNIEnv *jni, int restart);   /* collectors started; -1 if that failed */
    void (*after_stop)(JNIEnv *jni);                 /* collectors stopped */
    void (*before_last_dump)(JNIEnv *jni);           /* the VM is exiting */
    void (*after_last_dump)(JNIEnv *jni);
    /* format=b: writes the records a binary section names (report_target's). */
    void (*binary_new_records)(hb_writer *w);
} agent_product;

/* Agent_OnLoad of a product: options are a start's (HPROF's options).
 * JNI_OK, or JNI_ERR after a message. */
jint orchestrator_load(const agent_product *product, JavaVM *vm, const char *options);
/* Agent_OnAttach of a product: the first load starts it (if it can start
 * in a running JVM), later ones carry a command. */
jint orchestrator_attach(const agent_product *product, JavaVM *vm, const char *options);

/* Is the calling thread the orchestrator's agent thread? (It ends as the VM
 * ends, beside the last dump.) */
int orchestrator_own_thread(void);

/* A line for the user: to the running command's reply (the `hprof`
 * command prints it), else to the JVM's standard error. For collectors
 * whose work is an answer (the JVMPI layer's dump and reset). */
void agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Progress of a long piece of a command's work (a heap dump), shown as it
 * happens: appended to the command's reply file at once (the `hprof`
 * command prints it while it waits), else to the JVM's standard error.
 * Not from a signal handler. */
void agent_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
