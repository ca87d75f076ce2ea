/*
 * agent_report: the orchestrator's report file (agent.c): opened with its
 * writers, its header, closed (removed when cut short); with net=, the
 * listener's spool, the fall-back to a local file when the listener is
 * gone, the live summaries and the end's delivery.
 */
#include "agent_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../output/net_report.h"
#include "../output/output_file.h"
#include "../output/text_writer.h"

/* ------------------------------------------------------------ report files */

/* The writers of r->out; format=b writes its file header now. */
int agent_report_start_writers(report_file *r, const hprof_options *opt, char *err, size_t errlen)
{
    text_writer_init(&r->text, r->out, agent.tables);
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

int agent_report_open(report_file *r, const hprof_options *opt, const char *file, int force,
                       char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->format = opt->format;
    /* A report with a heap dump holds the program's data: 0600, as jcmd GC.heap_dump. */
    int private_data = opt->heap == HEAP_DUMP || opt->heap == HEAP_ALL;
    if (output_file_open(file, force, opt->format, private_data, &r->out, r->path, sizeof r->path,
                         err, errlen) != 0)
        return -1;
    if (agent_report_start_writers(r, opt, err, errlen) != 0) {
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
    if (agent_report_start_writers(r, opt, err, errlen) != 0) {
        net_report_close(r->net, NULL);
        r->net = NULL;
        r->out = NULL;
        return -1;
    }
    return 0;
}

/* The agent's own report: net= if given (file= then names only the local
 * file used if the listener goes away), else file=. */
int agent_report_open_main(report_file *r, const hprof_options *opt, char *err, size_t errlen)
{
    if (opt->net[0])
        return report_open_net(r, opt, err, errlen);
    return agent_report_open(r, opt, agent_period_options(opt)->file, opt->force, err, errlen);
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

void agent_report_header(report_file *r)
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
void agent_report_close(report_file *r)
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
            agent_say("hprof: %s: %llu bytes sent; the send queue held at most %zu bytes (bound %zu)", r->path,
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
            agent_say("hprof: could not write all of %s (file=): %s; the incomplete file was removed. %s "
                "or choose another file= and run again.", r->path, why, what_to_do);
        else
            agent_say("hprof: could not write all of %s (file=): %s; it is incomplete and could not be removed: %s",
                r->path, why, strerror(errno));
    }
}

/* ------------------------------------------------------------ net= */

/* Where the profile goes when the listener is gone: file= if given, else
 * HPROF's default name with the pid (java.hprof.<pid>.txt, java.hprof.<pid>). */
static int report_open_fallback(report_file *r, char *err, size_t errlen)
{
    if (agent.opt.loop_ms)             /* the period running's file=, and the series goes on there */
        return agent_report_open(r, &agent.opt, agent_period_options(&agent.opt)->file, agent.opt.force, err, errlen);
    if (agent.opt.file_given)
        return agent_report_open(r, &agent.opt, agent.opt.file, agent.opt.force, err, errlen);
    char name[OPTIONS_PATH_MAX + 64];
    output_file_unique_name(agent.opt.file, agent.opt.format, (long)getpid(), name, sizeof name);
    return agent_report_open(r, &agent.opt, name, 1, err, errlen);
}

/* The listener went away: the application goes on, and the report goes on
 * in a local file of its own, with fresh writers (its own header, threads
 * and traces); dumps are cumulative, so the next one loses nothing. */
static void report_fall_back(const char *reason)
{
    report_file *r = &agent.report;
    char address[sizeof agent.opt.net];
    snprintf(address, sizeof address, "%s", agent.opt.net);
    agent_report_close(r);
    char err[1024];
    if (report_open_fallback(r, err, sizeof err) != 0) {
        agent_say("hprof: the listener at %s went away (%s), and no local file can take the profile: %s",
            address, reason, err);
        return;
    }
    agent_say("hprof: the listener at %s went away (%s); writing the profile to %s instead", address, reason, r->path);
    agent_report_header(r);
}

int agent_report_listener_gone(report_file *r)
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
int agent_report_net_tick(void)
{
    report_file *r = &agent.report;
    if (r->net == NULL || agent_report_listener_gone(r))
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
int agent_report_deliver(void)
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
