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
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/keytab.h"
#include "../core/tables.h"
#include "../heap/site_table.h"
#include "../options/command_reply.h"
#include "../options/options.h"
#include "../output/hprof_binary.h"
#include "../output/net_report.h"
#include "../output/output_file.h"
#include "../output/profile_outputs.h"
#include "../output/series.h"
#include "../output/text_writer.h"
#include "collector.h"
#include "events.h"
#include "jvmti_support.h"
#include "orchestrator.h"

#define TICK_MS           20
#define COMMAND_WAIT_S    300      /* longest an attach waits for its command (retransforms take time) */
#define REPLY_MAX         16384
#define NET_FINISH_MS     10000    /* at exit, the most a listener gets to take the rest of the report */
#define LIVE_EVERY_MS     1000     /* net=: a live summary this often */
#define ENDED_THREADS_KEPT 16384   /* thread=n: ended threads held for their THREAD records */
#define ENDED_THREADS_KEPT_TEXT "16384"


typedef enum { AGENT_NONE = 0, AGENT_LOADED, AGENT_RUNNING, AGENT_STOPPED, AGENT_FINISHED } agent_state;

static const char *const state_names[] = { "not loaded", "loaded", "running", "stopped", "finished" };

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
static struct {
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
} agent = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
            .finished = PTHREAD_COND_INITIALIZER };

static const collector *collector_at(size_t i)
{
    return agent.product->collectors[i];
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

/* ------------------------------------------------------------ loop= */

/* The options with every output's name that of the period running
 * (series.h); the options themselves without loop=. */
static const hprof_options *period_options(const hprof_options *opt)
{
    if (!opt->loop_ms || agent.series.now.seq == 0)
        return opt;
    static hprof_options named;        /* agent.lock, or start-up */
    named = *opt;
    /* A name too long for its period was refused with loop= (options.c). */
    if (opt->file[0] && series_name(&agent.series, opt->file, named.file, OPTIONS_PATH_MAX) != 0)
        snprintf(named.file, OPTIONS_PATH_MAX, "%s", opt->file);
    for (uint32_t i = 0; i < format_count(); i++)
        if (opt->outputs[i][0] && series_name(&agent.series, opt->outputs[i], named.outputs[i], OPTIONS_PATH_MAX) != 0)
            snprintf(named.outputs[i], OPTIONS_PATH_MAX, "%s", opt->outputs[i]);
    return &named;
}

/* ------------------------------------------------------------ report files */

/* The writers of r->out; format=b writes its file header now. */
static int report_start_writers(report_file *r, const hprof_options *opt, char *err, size_t errlen)
{
    text_writer_init(&r->text, r->out);
    if (opt->cpu == CPU_OLD) {
        /* HPROF wrote the old prof format without its header and THREAD
         * records; alone in the file, it is that format and nothing else. */
        r->header_written = 1;
        r->text.omit_thread_records = 1;
        r->text.omit_trace_records = opt->heap == HEAP_OFF && !opt->monitor;
    }
    if (r->format != 'b')
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (hb_open(&r->bin, r->out, (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000, 0) != 0) {
        snprintf(err, errlen, "hprof: cannot write %.900s: %s", r->path, strerror(r->bin.error));
        return -1;
    }
    r->header_written = 1;
    return 0;
}

static int report_open(report_file *r, const hprof_options *opt, const char *file, int force,
                       char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->format = opt->format;
    /* A report with a heap dump holds the program's data: 0600, as jcmd GC.heap_dump. */
    int private_data = opt->heap == HEAP_DUMP || opt->heap == HEAP_ALL;
    if (output_file_open(file, force, opt->format, private_data, &r->out, r->path, sizeof r->path,
                         err, errlen) != 0)
        return -1;
    if (report_start_writers(r, opt, err, errlen) != 0) {
        fclose(r->out);
        unlink(r->path);
        r->out = NULL;
        return -1;
    }
    return 0;
}

/* net=: the listener is connected to now, so that one that is not there
 * stops the JVM at start-up as an unwritable file= does. */
static int report_open_net(report_file *r, const hprof_options *opt, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->format = opt->format;
    snprintf(r->path, sizeof r->path, "net=%s", opt->net);
    char why[512];
    net_sink_config config = net_sink_default_config();
    config.series = opt->loop_ms != 0;
    r->net = net_report_open(opt->net, &config, &r->out, why, sizeof why);
    if (r->net && config.series)
        net_report_period(r->net, agent.series.now, agent.series.pid);
    if (r->net == NULL) {
        const char *port = strrchr(opt->net, ':') + 1;
        snprintf(err, errlen, "hprof: net=%.300s: %.400s. Start `hprof listen --port %.8s -o FILE` there first "
                 "(its --bind for another host), or give net= the address of a running listener",
                 opt->net, why, port);
        return -1;
    }
    if (report_start_writers(r, opt, err, errlen) != 0) {
        net_report_close(r->net, NULL);
        r->net = NULL;
        r->out = NULL;
        return -1;
    }
    return 0;
}

/* The agent's own report: net= if given (file= then names only the local
 * file used if the listener goes away), else file=. */
static int report_open_main(report_file *r, const hprof_options *opt, char *err, size_t errlen)
{
    if (opt->net[0])
        return report_open_net(r, opt, err, errlen);
    return report_open(r, opt, period_options(opt)->file, opt->force, err, errlen);
}

/* The text header: the options, what drives the samples, how the agent
 * came (attach) and what it must do without. */

/* The sections the options make, for the header to explain. */
static unsigned sections_of(const hprof_options *o)
{
    unsigned holds = 0;
    if (o->cpu == CPU_SAMPLES)
        holds |= TEXT_HOLDS_CPU_SAMPLES | (o->native ? TEXT_HOLDS_CPU_SUMMARY : 0);
    if (o->cpu == CPU_TIMES)
        holds |= TEXT_HOLDS_CPU_TIME;
    if (o->heap == HEAP_SITES || o->heap == HEAP_ALL)
        holds |= TEXT_HOLDS_SITES;
    if (o->heap == HEAP_DUMP || o->heap == HEAP_ALL)
        holds |= TEXT_HOLDS_HEAP_DUMP;
    if (o->monitor)
        holds |= TEXT_HOLDS_MONITOR | TEXT_HOLDS_MONITOR_DUMP;
    if (o->wall_ms > 0)
        holds |= TEXT_HOLDS_WALL;
    return holds;
}

static void report_header(report_file *r)
{
    if (r->header_written || r->out == NULL)
        return;
    char notes[6144] = "";
    if (agent.product->header_notes)
        agent.product->header_notes(&agent.opt, notes, sizeof notes);
    size_t used = strlen(notes);
    if (agent.live && used < sizeof notes) {
        char date[64];
        text_format_date(agent.started, date, sizeof date);
        used += (size_t)snprintf(notes + used, sizeof notes - used, "%sAttached to a running JVM (pid %d) on %s: "
                                 "the profile covers the time since.", used ? "\n" : "", (int)getpid(), date);
    }
    if (agent.limits[0] && used < sizeof notes)
        snprintf(notes + used, sizeof notes - used, "%sLimits:\n%s", used ? "\n" : "", agent.limits);
    text_write_header(&r->text, time(NULL), agent.options_text, notes, sections_of(&agent.opt));
    r->header_written = 1;
}

/* Close a report; a file cut short (disk full, file size limit) would
 * mislead the tools that read it: remove it rather than leave it corrupt. */
static void report_close(report_file *r)
{
    if (r->out == NULL)
        return;
    if (r->format == 'b' && hb_close(&r->bin) != 0) {
        if (!r->write_failed)
            r->write_errno = r->bin.error;
        r->write_failed = 1;
    }
    if (r->net) {
        net_sink_stats stats;
        net_report_close(r->net, &stats);      /* the spool (r->out) with it */
        r->net = NULL;
        r->out = NULL;
        text_writer_free(&r->text);
        if (agent.opt.verbose)
            say("hprof: %s: %llu bytes sent; the send queue held at most %zu bytes (bound %zu)", r->path,
                (unsigned long long)stats.sent, stats.queue_peak, net_sink_default_config().queue_bytes);
        return;
    }
    if (fclose(r->out) != 0) {
        if (!r->write_failed)
            r->write_errno = errno;
        r->write_failed = 1;
    }
    r->out = NULL;
    text_writer_free(&r->text);
    if (r->write_failed) {
        const char *why = r->write_errno ? strerror(r->write_errno) : "write error";
        const char *what_to_do = r->write_errno == EFBIG ? "Raise the file size limit (ulimit -f)"
                                                        : "Free some space";
        if (unlink(r->path) == 0)
            say("hprof: could not write all of %s (file=): %s; the incomplete file was removed. %s "
                "or choose another file= and run again.", r->path, why, what_to_do);
        else
            say("hprof: could not write all of %s (file=): %s; it is incomplete and could not be removed: %s",
                r->path, why, strerror(errno));
    }
}

/* ------------------------------------------------------------ net= */

/* Where the profile goes when the listener is gone: file= if given, else
 * HPROF's default name with the pid (java.hprof.<pid>.txt, java.hprof.<pid>). */
static int report_open_fallback(report_file *r, char *err, size_t errlen)
{
    if (agent.opt.loop_ms)             /* the period running's file=, and the series goes on there */
        return report_open(r, &agent.opt, period_options(&agent.opt)->file, agent.opt.force, err, errlen);
    if (agent.opt.file_given)
        return report_open(r, &agent.opt, agent.opt.file, agent.opt.force, err, errlen);
    char name[OPTIONS_PATH_MAX + 64];
    output_file_unique_name(agent.opt.file, agent.opt.format, (long)getpid(), name, sizeof name);
    return report_open(r, &agent.opt, name, 1, err, errlen);
}

/* The listener went away: the application goes on, and the report goes on
 * in a local file of its own, with fresh writers (its own header, threads
 * and traces); dumps are cumulative, so the next one loses nothing. */
static void report_fall_back(const char *reason)
{
    report_file *r = &agent.report;
    char address[sizeof agent.opt.net];
    snprintf(address, sizeof address, "%s", agent.opt.net);
    report_close(r);
    char err[1024];
    if (report_open_fallback(r, err, sizeof err) != 0) {
        say("hprof: the listener at %s went away (%s), and no local file can take the profile: %s",
            address, reason, err);
        return;
    }
    say("hprof: the listener at %s went away (%s); writing the profile to %s instead", address, reason, r->path);
    report_header(r);
}

static int report_listener_gone(report_file *r)
{
    char reason[256];
    if (r != &agent.report || r->net == NULL || !net_report_dead(r->net, reason, sizeof reason))
        return 0;
    report_fall_back(reason);
    return 1;
}

/* A few lines for `hprof listen`'s screen: "elapsed <s>", each collector's
 * "status <line>", and what collectors add (cpu=samples: "samples <total>"
 * and "method <self samples> <name>" lines). */
static void send_live_summary(net_report *net)
{
    static char text[16384];           /* agent.lock */
    size_t used = (size_t)snprintf(text, sizeof text, "elapsed %lld\n", (long long)(time(NULL) - agent.started));
    for (size_t i = 0; i < agent.product->n_collectors && used < sizeof text; i++) {
        if (!agent.made[i])
            continue;
        if (collector_at(i)->status) {
            char line[512];
            collector_at(i)->status(line, sizeof line);
            used += (size_t)snprintf(text + used, sizeof text - used, "status %s\n", line);
        }
        if (collector_at(i)->live_summary && used < sizeof text) {
            collector_at(i)->live_summary(text + used, sizeof text - used);
            used += strlen(text + used);
        }
    }
    net_report_live(net, text);
}

/* On the agent thread: a listener gone is replaced by a local file; else
 * the spool moves on to it, and a live summary goes about once a second.
 * 1 while spool bytes wait for room in the queue. */
static int report_net_tick(void)
{
    report_file *r = &agent.report;
    if (r->net == NULL || report_listener_gone(r))
        return 0;
    int waiting = net_report_ship(r->net) > 0;
    int64_t now = net_now_ms();
    if (agent.state == AGENT_RUNNING && now - agent.live_sent_ms >= LIVE_EVERY_MS - TICK_MS) {
        send_live_summary(r->net);
        agent.live_sent_ms = now;
    }
    return waiting;
}

/* The end of a net= report: the rest to the listener, which has
 * NET_FINISH_MS to take it and confirm. -1 (said) if it did not, and the
 * report then goes on in a local file. */
static int report_deliver(void)
{
    report_file *r = &agent.report;
    if (r->net == NULL)
        return 0;
    char reason[256] = "";
    if (r->format == 'b' && hb_close(&r->bin) != 0)
        r->write_failed = 1;
    if (net_report_finish(r->net, net_now_ms() + NET_FINISH_MS, reason, sizeof reason) == 0)
        return 0;
    report_fall_back(reason);
    return -1;
}

/* ------------------------------------------------------------ dumps */

/* profile_outputs' messages: problems to the user, files written as notes
 * of the dump under verbose=. */
static void tell_output(void *ctx, int error, const char *line)
{
    dump_target *t = ctx;
    if (error)
        say("%s", line);
    else if (t->verbose)
        dump_note(t, line);
}

/* pprof=, flamegraph=, collapsed=: from the snapshot of every collector
 * that was started and has one, after their dumps (heap=sites' census).
 * Only the collectors the current options name: one an earlier start made
 * (`hprof start P wall=10,...` after a cpu=samples attach) is not in these
 * files, whose names check_profile_outputs checked for the current ones. */
static void write_profile_outputs(dump_target *t, JNIEnv *jni)
{
    kind_profile profiles[2 * PRODUCT_MAX_COLLECTORS];
    uint32_t n = 0;
    for (size_t i = 0; i < agent.product->n_collectors; i++) {
        const collector *c = collector_at(i);
        if (!agent.made[i] || c->snapshot == NULL || !c->wanted(&agent.opt))
            continue;
        for (int extra = 0; extra < 2; extra++) {
            if (extra && c->extra_snapshot == NULL)
                break;
            profile *p = extra ? c->extra_snapshot(jni) : c->snapshot(jni);
            if (p)
                profiles[n++] = (kind_profile){ extra ? c->extra_kind : c->profile_kind, p };
            else
                say("hprof: %s has no %s profile for pprof=, flamegraph= or collapsed= at this dump (out of "
                    "memory, or its first start did not keep whole stacks)", c->name,
                    extra ? c->extra_kind : c->profile_kind);
        }
    }
    profile_outputs_write(period_options(&agent.opt), profiles, n, tell_output, t);
    for (uint32_t i = 0; i < n; i++)
        profile_free((profile *)profiles[i].profile);
}

/* The kinds of profile the collectors these options start give (into
 * kinds, 2 * PRODUCT_MAX_COLLECTORS at most); how many. */
static uint32_t profile_kinds(const hprof_options *opt, const char **kinds)
{
    uint32_t n = 0;
    for (size_t i = 0; i < agent.product->n_collectors; i++) {
        const collector *c = collector_at(i);
        if (c->snapshot && c->wanted(opt)) {
            kinds[n++] = c->profile_kind;
            if (c->extra_snapshot)
                kinds[n++] = c->extra_kind;
        }
    }
    return n;
}

/* Can the files of pprof=, flamegraph= and collapsed= be written, for the
 * collectors these options start? (loop=: the first period's names.) */
static int check_profile_outputs(const hprof_options *opt, char *err, size_t errlen)
{
    const char *kinds[2 * PRODUCT_MAX_COLLECTORS];
    uint32_t n = profile_kinds(opt, kinds);
    return profile_outputs_check(period_options(opt), kinds, n, err, errlen);
}

/* A dump for a product without a report (the JVMPI layer): each started
 * collector does what a dump means to it; the target has no writers. */
static void dump_without_report(const char *why, int final, JNIEnv *jni)
{
    static dump_target t;              /* one dump at a time (agent.lock) */
    t = (dump_target){ { 0, NULL, NULL, agent.opt.cutoff, agent.product->binary_new_records }, "", why, final, 0,
                       agent.opt.verbose, "" };
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->dump)
            collector_at(i)->dump(&t, jni);
    /* What each did: the answer to `dump` (at SIGQUIT, nobody asked). */
    if (t.notes[0] && agent.reply)
        say("%.*s", (int)strlen(t.notes) - 1, t.notes);
    agent.dumps++;
}

/* One dump into r: every collector that was started writes its sections
 * (cumulative since start or the last reset), then the records they name. */
static void dump_into(report_file *r, const char *why, int final, JNIEnv *jni)
{
    if (!agent.product->report) {
        dump_without_report(why, final, jni);
        return;
    }
    report_listener_gone(r);
    if (r->out == NULL)
        return;
    report_header(r);
    if (agent.opt.verbose)
        fprintf(stderr, "Dumping the profile (%s) ...", why);
    /* cpu=old writes HPROF's old prof format, which has no such line. */
    if (r->format == 'a' && !r->text.omit_thread_records)
        text_write_agent_memory(&r->text, time(NULL), keytab_bytes_held(), tables_payload_bytes(),
                                site_table_bytes(), thread_count(), thread_forgotten_count());
    static dump_target t;              /* one dump at a time (agent.lock) */
    t = (dump_target){ { r->format, &r->text, &r->bin, agent.opt.cutoff,
                                         agent.product->binary_new_records },
                       r->path, why, final, 0, agent.opt.verbose, "" };
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->dump)
            collector_at(i)->dump(&t, jni);
    if (r->format == 'a')
        text_write_new_records(&r->text);
    if (options_want_stacks(&agent.opt))
        write_profile_outputs(&t, jni);
    if (fflush(r->out) != 0 || ferror(r->out) || (r->format == 'b' && r->bin.error)) {
        int e = r->format == 'b' && r->bin.error ? r->bin.error : errno;
        /* At the last dump the close says it once, with what became of the file. */
        if (!r->write_failed && !final)
            say("hprof: error writing %s (file=): %s; the file is incomplete", r->path, strerror(e));
        r->write_failed = 1;
        r->write_errno = e;
        clearerr(r->out);
    }
    if (r->net)
        net_report_ship(r->net);
    if (agent.opt.verbose)
        fprintf(stderr, " done.\n");
    fputs(t.notes, stderr);
    agent.dumps++;
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
        thread_mark_ended(serial);
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
static int add_capabilities(const hprof_options *opt)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiCapabilities potential, caps;
    memset(&caps, 0, sizeof caps);
    if (jvmti_failed((*jvmti)->GetPotentialCapabilities(jvmti, &potential), "GetPotentialCapabilities"))
        return -1;
    collector_env env = { opt, agent.live, note_limit };
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
static int subscribe(const hprof_options *opt)
{
    static const struct { jvmtiEvent ev; int always; } own[] = {
        { JVMTI_EVENT_THREAD_START, 1 }, { JVMTI_EVENT_THREAD_END, 1 }, { JVMTI_EVENT_DATA_DUMP_REQUEST, 1 },
        { JVMTI_EVENT_VM_DEATH, 1 },
    };
    collector_env env = { opt, agent.live, note_limit };
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
static int start_collectors(JNIEnv *jni)
{
    register_existing_threads(hprof_jvmti, jni);
    collector_env env = { &agent.opt, agent.live, note_limit };
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
    report_header(&agent.report);
    return failed ? -1 : 0;
}

static void stop_collectors(JNIEnv *jni)
{
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.active[i] && collector_at(i)->stop)
            collector_at(i)->stop(jni);
    if (agent.product->after_stop)
        agent.product->after_stop(jni);
    agent.state = AGENT_STOPPED;
    agent.stopped_at = time(NULL);
}

static void reset_collectors(JNIEnv *jni)
{
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->reset)
            collector_at(i)->reset(jni);
}

/* ------------------------------------------------------------ loop= periods */

/* The files of a period loop_keep= no longer keeps: every name its options
 * give it (pprof= and collapsed= with each kind too). Names that were not
 * written are simply not there. */
static void delete_period(series_period p)
{
    const char *kinds[2 * PRODUCT_MAX_COLLECTORS];
    uint32_t n_kinds = profile_kinds(&agent.opt, kinds);
    const hprof_options *o = &agent.opt;
    /* file=, then each format's (a file per profile kind unless one_file). */
    struct { const char *path; int per_kind; } outputs[1 + FORMATS_MAX];
    uint32_t n_outputs = 0;
    outputs[n_outputs].path = o->file;
    outputs[n_outputs++].per_kind = 0;
    for (uint32_t i = 0; i < format_count() && n_outputs < 1 + FORMATS_MAX; i++) {
        outputs[n_outputs].path = o->outputs[i];
        outputs[n_outputs++].per_kind = !format_at(i)->one_file;
    }
    char name[OPTIONS_PATH_MAX], kind_name[OPTIONS_PATH_MAX + 64];
    for (size_t i = 0; i < n_outputs; i++) {
        if (!outputs[i].path[0] || series_name_at(outputs[i].path, p, agent.series.pid, name, sizeof name) != 0)
            continue;
        if (unlink(name) != 0 && errno != ENOENT)
            say("hprof: loop_keep=%u: cannot delete %s: %s", agent.opt.loop_keep, name, strerror(errno));
        for (uint32_t k = 0; outputs[i].per_kind && k < n_kinds; k++) {
            profile_output_name(name, kinds[k], 1, kind_name, sizeof kind_name);
            unlink(kind_name);
        }
    }
}

/* A period ends: its files are written (file= closed, pprof=, ... from the
 * snapshots), then in delta mode every count is zeroed, and the next
 * period's file= opens. All on the agent thread under agent.lock, which is
 * the only thread that drains the sample queues: a sample taken meanwhile
 * waits in its queue and counts in the next period, never in none. */
static void period_end(JNIEnv *jni)
{
    report_file *r = &agent.report;
    dump_into(r, "loop", 0, jni);
    /* net=: the connection stays; the period's report ends in the stream,
     * and the next one starts with writers of its own (header, records). */
    int streaming = r->net != NULL;
    if (streaming) {
        if (r->format == 'b' && hb_close(&r->bin) != 0)
            r->write_failed = 1;
        text_writer_free(&r->text);
        r->header_written = 0;
    } else {
        report_close(r);
    }
    if (!agent.opt.loop_cumulative)
        reset_collectors(jni);
    series_period drop;
    if (series_next(&agent.series, time(NULL), &drop))
        delete_period(drop);
    char err[1024];
    if (streaming) {
        int marked = net_report_period(r->net, agent.series.now, agent.series.pid) == 0;
        if (report_start_writers(r, &agent.opt, err, sizeof err) != 0 || !marked) {
            if (marked)
                net_report_give_up(r->net, err);
            report_listener_gone(r);  /* the period goes on in a local file */
        }
    } else if (report_open(r, &agent.opt, period_options(&agent.opt)->file, agent.opt.force, err, sizeof err) != 0) {
        say("%s; this period's report is not written (loop=)", err);
    }
    report_header(r);
    /* A fixed rate; after a stall (a long heap dump) the next period is a whole one. */
    int64_t now = net_now_ms();
    agent.period_due_ms += agent.opt.loop_ms;
    if (agent.period_due_ms <= now)
        agent.period_due_ms = now + agent.opt.loop_ms;
}

/* ms until the period running ends (INT64_MAX without loop=, or stopped). */
static int64_t period_left_ms(void)
{
    if (!agent.opt.loop_ms || agent.state != AGENT_RUNNING || !agent.product->report)
        return INT64_MAX;
    int64_t left = agent.period_due_ms - net_now_ms();
    return left > 0 ? left : 0;
}

/* ------------------------------------------------------------ commands */

static void command_status(void)
{
    char date[64];
    time_t now = time(NULL);
    text_format_date(agent.started, date, sizeof date);
    say("%s: %s in JVM %d (%s), since %s (%lld s)", agent.product->name, state_names[agent.state], (int)getpid(),
        agent.live ? "attached" : "loaded at start-up", date,
        (long long)((agent.state == AGENT_STOPPED ? agent.stopped_at : now) - agent.started));
    if (agent.product->report) {
        say("options: %s", agent.options_text[0] ? agent.options_text : "(defaults)");
        say("output: %s (%d dumps)", agent.report.out ? agent.report.path : "(closed)", agent.dumps);
        if (agent.opt.loop_ms)
            say("loop: period %llu of %u ms (%s); files kept: %s%u", (unsigned long long)agent.series.now.seq,
                agent.opt.loop_ms, agent.opt.loop_cumulative ? "cumulative" : "delta",
                agent.opt.loop_keep ? "the last periods' " : "all", agent.opt.loop_keep);
    }
    /* Counted by the tables themselves (the soak bench watches it stay flat);
     * not counted: per-thread buffers, queues and the JVM's own JVMTI memory. */
    size_t interning = keytab_bytes_held(), payload = tables_payload_bytes(), sites = site_table_bytes();
    say("memory: %zu bytes in the agent's tables (interning %zu, payload %zu, allocation sites %zu)",
        interning + payload + sites, interning, payload, sites);
    uint64_t forgotten = thread_forgotten_count();
    say("threads: %u seen, %llu ended ones forgotten (%s)", thread_count(), (unsigned long long)forgotten,
        agent.opt.thread ? "thread=y: all kept" : "thread=n: the last " ENDED_THREADS_KEPT_TEXT " ended ones are kept");
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->status) {
            char line[512];
            collector_at(i)->status(line, sizeof line);
            say("%s", line);
        }
    if (agent.limits[0])
        say("limits:\n%s", agent.limits);
}

/* `start` with options while stopped (or running): new collectors,
 * capabilities and a new output file when file= changes. */
static int command_start(const command *c, JNIEnv *jni)
{
    if (agent.state == AGENT_LOADED) {
        if (start_collectors(jni) != 0)
            say("hprof: some collectors could not start (see above)");
        return 0;
    }
    if (agent.state == AGENT_RUNNING && !c->req.options[0]) {
        say("hprof: already running in JVM %d (options: %s)", (int)getpid(), agent.options_text);
        return 0;
    }
    /* What can be refused (capabilities, the new file) before anything stops. */
    report_file fresh;
    int new_file = 0;
    if (c->req.options[0] && (c->opt.loop_ms != agent.opt.loop_ms || c->opt.loop_keep != agent.opt.loop_keep ||
                              c->opt.loop_cumulative != agent.opt.loop_cumulative)) {
        say("hprof: loop=, loop_keep= and loop_mode= are set when the agent first starts (now: %s); give the "
            "same ones to `start`", agent.options_text[0] ? agent.options_text : "defaults");
        return -1;
    }
    if (c->req.options[0]) {
        char err[1024];
        if (check_profile_outputs(&c->opt, err, sizeof err) != 0) {
            say("%s", err);
            return -1;
        }
        if (add_capabilities(&c->opt) != 0 || subscribe(&c->opt) != 0)
            return -1;
        new_file = strcmp(c->opt.file, agent.opt.file) != 0 || c->opt.format != agent.opt.format ||
                   strcmp(c->opt.net, agent.opt.net) != 0;
        if (new_file && report_open_main(&fresh, &c->opt, err, sizeof err) != 0) {
            say("%s", err);
            return -1;
        }
    }
    if (agent.state == AGENT_RUNNING)
        stop_collectors(jni);
    if (new_file) {
        dump_into(&agent.report, "start with a new file=", 0, jni);
        report_deliver();
        report_close(&agent.report);
        agent.report = fresh;
    }
    if (c->req.options[0]) {
        agent.opt = c->opt;
        snprintf(agent.options_text, sizeof agent.options_text, "%s", c->req.options);
    }
    int rc = start_collectors(jni);
    say("hprof: started (%s), writing to %s", agent.options_text[0] ? agent.options_text : "defaults",
        agent.report.path);
    return rc;
}

/* `dump file=PATH`: a complete report (header, threads, traces) of its own. */
static int command_dump(const command *c, JNIEnv *jni)
{
    if (!c->req.options[0]) {
        dump_into(&agent.report, "dump", 0, jni);
        say("hprof: dumped to %s", agent.report.path);
        return agent.report.write_failed ? -1 : 0;
    }
    report_file r;
    char err[1024];
    hprof_options o = agent.opt;
    if (report_open(&r, &o, c->opt.file, 1, err, sizeof err) != 0) {
        say("%s", err);
        return -1;
    }
    dump_into(&r, "dump", 0, jni);
    int failed = r.write_failed;
    char path[sizeof r.path];
    snprintf(path, sizeof path, "%s", r.path);
    report_close(&r);
    if (!failed)
        say("hprof: dumped to %s", path);
    return failed ? -1 : 0;
}

static int run_command(const command *c, JNIEnv *jni)
{
    if (agent.state == AGENT_FINISHED) {
        say("%s: the JVM is exiting; the last dump is written", agent.product->name);
        return -1;
    }
    if (!agent.product->report && c->req.command != COMMAND_STATUS) {
        /* Its collectors answer (agent_say); there is no file to name. */
        if (c->req.command == COMMAND_DUMP)
            dump_into(&agent.report, "dump", 0, jni);
        else if (c->req.command == COMMAND_RESET)
            reset_collectors(jni);
        return 0;
    }
    switch (c->req.command) {
    case COMMAND_START:
        return command_start(c, jni);
    case COMMAND_STOP:
        if (agent.state != AGENT_RUNNING) {
            say("hprof: not running (already stopped)");
            return -1;
        }
        stop_collectors(jni);
        if (c->req.options[0])
            return command_dump(c, jni);
        dump_into(&agent.report, "stop", 0, jni);
        say("hprof: stopped; profile in %s", agent.report.path);
        return 0;
    case COMMAND_DUMP:
        return command_dump(c, jni);
    case COMMAND_RESET:
        reset_collectors(jni);
        say("hprof: counts reset");
        return 0;
    case COMMAND_STATUS:
        command_status();
        return 0;
    }
    return -1;
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
            if (period_left_ms() < ms)
                ms = (long)period_left_ms();
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
            c->rc = run_command(c, jni);
            c->done = 1;
            agent.pending = NULL;
            agent.pending_async = 0;
            pthread_cond_broadcast(&agent.finished);
        }
        if (agent.dump_requested) {
            agent.dump_requested = 0;
            dump_into(&agent.report, "SIGQUIT", 0, jni);
        }
        if (period_left_ms() == 0)
            period_end(jni);
        int want_dump = 0;
        for (size_t i = 0; agent.state == AGENT_RUNNING && i < agent.product->n_collectors; i++)
            if (agent.active[i] && collector_at(i)->tick)
                want_dump |= collector_at(i)->tick(jni);
        if (want_dump)
            dump_into(&agent.report, "deadlock", 0, jni);
        net_waiting = report_net_tick();
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
    if (start_collectors(jni) != 0)
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
            dump_into(&agent.report, "SIGQUIT", 0, jni);
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
            dump_into(&agent.report, "exit", 1, jni);
    }
    /* net=: a listener that did not take it all gets it written locally. */
    if (report_deliver() != 0 && collected && agent.opt.doe)
        dump_into(&agent.report, "exit", 1, jni);
    if (collected && agent.product->after_last_dump)
        agent.product->after_last_dump(jni);
    agent.state = AGENT_FINISHED;
    agent.reply = NULL;
    report_close(&agent.report);
    /* The last period's files are written: loop_keep= counts them too. */
    series_period drop;
    if (agent.opt.loop_ms && series_next(&agent.series, time(NULL), &drop))
        delete_period(drop);
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
    if (check_profile_outputs(&agent.opt, err, errlen) != 0)
        return -1;
    if (tables_init(NULL) != 0) {
        snprintf(err, errlen, "%s: out of memory at start-up", agent.product->name);
        return -1;
    }
    /* thread=n: no trace names a thread, so an ended thread is needed only
     * for its THREAD START/END lines; the last ENDED_THREADS_KEPT are held
     * (a dump writes the ends since the last one), older ones forgotten, so
     * a program that starts threads all the time does not make the agent
     * grow. thread=y: every trace names its thread; all are kept. */
    if (!agent.opt.thread)
        thread_keep_ended(ENDED_THREADS_KEPT);
    if (add_capabilities(&agent.opt) != 0) {
        snprintf(err, errlen, "%s: cannot set up JVMTI (see the error above)", agent.product->name);
        return -1;
    }
    if (agent.product->report && report_open_main(&agent.report, &agent.opt, err, errlen) != 0)
        return -1;
    static const struct { jvmtiEvent ev; event_fn fn; } own[] = {
        { JVMTI_EVENT_VM_INIT, EVENT_FN(on_vm_init) }, { JVMTI_EVENT_VM_DEATH, EVENT_FN(on_vm_death) },
        { JVMTI_EVENT_THREAD_START, EVENT_FN(on_thread_start) }, { JVMTI_EVENT_THREAD_END, EVENT_FN(on_thread_end) },
        { JVMTI_EVENT_DATA_DUMP_REQUEST, EVENT_FN(on_data_dump_request) },
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if ((!live || own[i].ev != JVMTI_EVENT_VM_INIT) && events_subscribe(own[i].ev, own[i].fn) != 0)
            return -1;
    if (subscribe(&agent.opt) != 0 || (!live && events_want(hprof_jvmti, JVMTI_EVENT_VM_INIT) != 0)) {
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
            report_close(&agent.report);
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
                 state_names[agent.state], command_name(c.req.command));
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
