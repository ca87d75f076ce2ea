/*
 * agent_internal.h (private to src/agent/agent*.c): what the orchestrator's
 * files share: its state (one instance, `agent`), the report file and
 * command types, and the functions each file gives the others.
 */
#ifndef HPROF_AGENT_INTERNAL_H
#define HPROF_AGENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../options/command_reply.h"
#include "../options/options.h"
#include "../output/hprof_binary.h"
#include "../output/net_report.h"
#include "../output/series.h"
#include "../output/text_writer.h"
#include "collector.h"
#include "orchestrator.h"

#define TICK_MS           20
#define COMMAND_WAIT_S    300      /* longest an attach waits for its command (retransforms take time) */
#define REPLY_MAX         16384
#define NET_FINISH_MS     10000    /* at exit, the most a listener gets to take the rest of the report */
#define LIVE_EVERY_MS     1000     /* net=: a live summary this often */
#define ENDED_THREADS_KEPT 16384   /* thread=n: ended threads held for their THREAD records */
#define ENDED_THREADS_KEPT_TEXT "16384"

typedef enum { AGENT_NONE = 0, AGENT_LOADED, AGENT_RUNNING, AGENT_STOPPED, AGENT_FINISHED } agent_state;

/* Each state's name, for status and refusals (agent.c). */
extern const char *const agent_state_names[];

/* A profile file and its writer; with net=, the writer's FILE is a spool
 * that `net` ships to the listener (net_report.h). */
typedef struct report_file {
    FILE        *out;
    net_report  *net;
    char         path[OPTIONS_PATH_MAX + 64];
    char         format;
    text_writer  text;
    hb_writer    bin;
    int          write_failed;
    int          write_errno;       /* why, when known */
    int          header_written;
} report_file;

/* A command handed from Agent_OnAttach to the agent thread. */
typedef struct command {
    command_request req;
    hprof_options   opt;            /* req.options parsed */
    int             done, rc;
} command;

/* Everything the orchestrator owns. `lock` guards all of it; the agent
 * thread holds it while it runs a command or a dump. */
typedef struct orchestrator_state {
    const agent_product *product;   /* what this library is: its collectors, its report */
    pthread_mutex_t lock;
    pthread_cond_t  wake;           /* the agent thread: a command, a dump, or stop */
    pthread_cond_t  finished;       /* a command is done */
    agent_state     state;
    int             live;           /* attached to a running JVM (vs -agentpath at start-up) */
    hprof_options   opt;            /* options of the last start */
    char            options_text[sizeof ((command_request *)0)->options];
    int             active[PRODUCT_MAX_COLLECTORS];   /* wanted by the last start's options */
    int             made[PRODUCT_MAX_COLLECTORS];     /* started at least once */
    int             vthread_ends;   /* a collector took can_support_virtual_threads: VirtualThreadEnd wanted */
    report_file     report;         /* file= */
    time_t          started, stopped_at;
    char            limits[4096];   /* what collectors must do without, one line each */
    char           *reply;          /* the running command's answer (REPLY_MAX bytes) */
    command        *pending;        /* for the agent thread */
    int             pending_async;  /* nobody waits for it (the first attach's start) */
    int             dump_requested; /* SIGQUIT */
    int             exit_requested; /* exit() without VMDeath: the last dump */
    int             exit_taken;     /* the agent thread is writing it */
    int             thread_running, thread_stop, thread_exited;
    int             dumps;
    int64_t         live_sent_ms;   /* net=: when the last live summary went */
    const char     *progress_path;  /* the running command's reply file (agent_progress) */
    output_series   series;         /* loop=: the period running, the periods whose files are kept */
    int64_t         period_due_ms;  /* loop=: when the period running ends (net_now_ms's clock) */
    profile_tables *tables;         /* the one instance of the tables: every collector's (agent_tables) */
} orchestrator_state;

/* The one orchestrator (agent.c); every file of it works on it under agent.lock. */
extern orchestrator_state agent;

static inline const collector *collector_at(size_t i)
{
    return agent.product->collectors[i];
}

/* agent.c: the collectors started, stopped, reset, their capabilities and
 * events; shared because commands (agent_commands.c) and periods
 * (agent_dump.c) start, stop and reset them too. */
int agent_add_capabilities(const hprof_options *opt);
int agent_subscribe(const hprof_options *opt);
int agent_start_collectors(JNIEnv *jni);
void agent_stop_collectors(JNIEnv *jni);
void agent_reset_collectors(JNIEnv *jni);

/* agent_report.c: the report file's life; shared because loading, commands,
 * dumps and the agent thread open, write, ship and close it. */
/* The writers of r->out (format=b writes its file header now); shared
 * because a loop= period over net= starts new writers on the same stream. */
int agent_report_start_writers(report_file *r, const hprof_options *opt, char *err, size_t errlen);
int agent_report_open(report_file *r, const hprof_options *opt, const char *file, int force,
                      char *err, size_t errlen);
int agent_report_open_main(report_file *r, const hprof_options *opt, char *err, size_t errlen);
void agent_report_header(report_file *r);
void agent_report_close(report_file *r);
int agent_report_listener_gone(report_file *r);
int agent_report_net_tick(void);
int agent_report_deliver(void);

/* agent_dump.c: dumps and loop='s periods; shared because the agent thread,
 * the JVM's events and commands ask for them. */
const hprof_options *agent_period_options(const hprof_options *opt);
int agent_check_profile_outputs(const hprof_options *opt, char *err, size_t errlen);
void agent_dump_into(report_file *r, const char *why, int final, JNIEnv *jni);
void agent_delete_period(series_period p);
void agent_period_end(JNIEnv *jni);
int64_t agent_period_left_ms(void);

/* agent_commands.c: a load's command, run by the agent thread (agent.c). */
int agent_run_command(const command *c, JNIEnv *jni);

#endif
