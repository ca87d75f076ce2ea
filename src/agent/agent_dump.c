/*
 * agent_dump: a dump of the orchestrator (agent.c) into a report: every
 * started collector's sections, then the whole-stack outputs (pprof=,
 * flamegraph=, collapsed=) from their snapshots; and loop='s periods, each
 * ended by a dump into files of its own.
 */
#include "agent_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/keytab.h"
#include "../core/tables.h"
#include "../heap/site_table.h"
#include "../output/hprof_binary.h"
#include "../output/net_report.h"
#include "../output/profile_outputs.h"
#include "../output/series.h"
#include "../output/text_writer.h"

/* ------------------------------------------------------------ loop= */

/* The options with every output's name that of the period running
 * (series.h); the options themselves without loop=. */
const hprof_options *agent_period_options(const hprof_options *opt)
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

/* ------------------------------------------------------------ dumps */

/* profile_outputs' messages: problems to the user, files written as notes
 * of the dump under verbose=. */
static void tell_output(void *ctx, int error, const char *line)
{
    dump_target *t = ctx;
    if (error)
        agent_say("%s", line);
    else if (t->verbose)
        dump_note(t, line);
}

/* pprof=, flamegraph=, collapsed=: from the snapshot of every collector
 * that was started and has one, after their dumps (heap=sites' census).
 * Only the collectors the current options name: one an earlier start made
 * (`hprof start P wall=10,...` after a cpu=samples attach) is not in these
 * files, whose names agent_check_profile_outputs checked for the current ones. */
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
                agent_say("hprof: %s has no %s profile for pprof=, flamegraph= or collapsed= at this dump (out of "
                    "memory, or its first start did not keep whole stacks)", c->name,
                    extra ? c->extra_kind : c->profile_kind);
        }
    }
    profile_outputs_write(agent_period_options(&agent.opt), profiles, n, tell_output, t);
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
int agent_check_profile_outputs(const hprof_options *opt, char *err, size_t errlen)
{
    const char *kinds[2 * PRODUCT_MAX_COLLECTORS];
    uint32_t n = profile_kinds(opt, kinds);
    return profile_outputs_check(agent_period_options(opt), kinds, n, err, errlen);
}

/* A dump for a product without a report (the JVMPI layer): each started
 * collector does what a dump means to it; the target has no writers. */
static void dump_without_report(const char *why, int final, JNIEnv *jni)
{
    static dump_target t;              /* one dump at a time (agent.lock) */
    t = (dump_target){ { 0, agent.tables, NULL, NULL, agent.opt.cutoff, agent.product->binary_new_records }, "", why, final, 0,
                       agent.opt.verbose, "" };
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->dump)
            collector_at(i)->dump(&t, jni);
    /* What each did: the answer to `dump` (at SIGQUIT, nobody asked). */
    if (t.notes[0] && agent.reply)
        agent_say("%.*s", (int)strlen(t.notes) - 1, t.notes);
    agent.dumps++;
}

/* One dump into r: every collector that was started writes its sections
 * (cumulative since start or the last reset), then the records they name. */
void agent_dump_into(report_file *r, const char *why, int final, JNIEnv *jni)
{
    if (!agent.product->report) {
        dump_without_report(why, final, jni);
        return;
    }
    agent_report_listener_gone(r);
    if (r->out == NULL)
        return;
    agent_report_header(r);
    if (agent.opt.verbose)
        fprintf(stderr, "Dumping the profile (%s) ...", why);
    /* cpu=old writes HPROF's old prof format, which has no such line. */
    if (r->format == 'a' && !r->text.omit_thread_records)
        text_write_agent_memory(&r->text, time(NULL), keytab_bytes_held(), tables_payload_bytes(agent.tables),
                                site_table_bytes(), thread_count(agent.tables), thread_forgotten_count(agent.tables));
    static dump_target t;              /* one dump at a time (agent.lock) */
    t = (dump_target){ { r->format, agent.tables, &r->text, &r->bin, agent.opt.cutoff,
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
            agent_say("hprof: error writing %s (file=): %s; the file is incomplete", r->path, strerror(e));
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

/* ------------------------------------------------------------ loop= periods */

/* The files of a period loop_keep= no longer keeps: every name its options
 * give it (pprof= and collapsed= with each kind too). Names that were not
 * written are simply not there. */
void agent_delete_period(series_period p)
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
            agent_say("hprof: loop_keep=%u: cannot delete %s: %s", agent.opt.loop_keep, name, strerror(errno));
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
void agent_period_end(JNIEnv *jni)
{
    report_file *r = &agent.report;
    agent_dump_into(r, "loop", 0, jni);
    /* net=: the connection stays; the period's report ends in the stream,
     * and the next one starts with writers of its own (header, records). */
    int streaming = r->net != NULL;
    if (streaming) {
        if (r->format == 'b' && hb_close(&r->bin) != 0)
            r->write_failed = 1;
        text_writer_free(&r->text);
        r->header_written = 0;
    } else {
        agent_report_close(r);
    }
    if (!agent.opt.loop_cumulative)
        agent_reset_collectors(jni);
    series_period drop;
    if (series_next(&agent.series, time(NULL), &drop))
        agent_delete_period(drop);
    char err[1024];
    if (streaming) {
        int marked = net_report_period(r->net, agent.series.now, agent.series.pid) == 0;
        if (agent_report_start_writers(r, &agent.opt, err, sizeof err) != 0 || !marked) {
            if (marked)
                net_report_give_up(r->net, err);
            agent_report_listener_gone(r);  /* the period goes on in a local file */
        }
    } else if (agent_report_open(r, &agent.opt, agent_period_options(&agent.opt)->file, agent.opt.force,
                                 err, sizeof err) != 0) {
        agent_say("%s; this period's report is not written (loop=)", err);
    }
    agent_report_header(r);
    /* A fixed rate; after a stall (a long heap dump) the next period is a whole one. */
    int64_t now = net_now_ms();
    agent.period_due_ms += agent.opt.loop_ms;
    if (agent.period_due_ms <= now)
        agent.period_due_ms = now + agent.opt.loop_ms;
}

/* ms until the period running ends (INT64_MAX without loop=, or stopped). */
int64_t agent_period_left_ms(void)
{
    if (!agent.opt.loop_ms || agent.state != AGENT_RUNNING || !agent.product->report)
        return INT64_MAX;
    int64_t left = agent.period_due_ms - net_now_ms();
    return left > 0 ? left : 0;
}
