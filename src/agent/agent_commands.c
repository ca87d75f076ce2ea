/*
 * agent_commands: the commands a later load of the agent carries
 * (`hprof start|stop|dump|reset|status <pid>`), run on the agent thread
 * under agent.lock (agent.c).
 */
#include "agent_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/keytab.h"
#include "../core/tables.h"
#include "../heap/site_table.h"

/* ------------------------------------------------------------ commands */

static void command_status(void)
{
    char date[64];
    time_t now = time(NULL);
    text_format_date(agent.started, date, sizeof date);
    agent_say("%s: %s in JVM %d (%s), since %s (%lld s)", agent.product->name, agent_state_names[agent.state], (int)getpid(),
        agent.live ? "attached" : "loaded at start-up", date,
        (long long)((agent.state == AGENT_STOPPED ? agent.stopped_at : now) - agent.started));
    if (agent.product->report) {
        agent_say("options: %s", agent.options_text[0] ? agent.options_text : "(defaults)");
        agent_say("output: %s (%d dumps)", agent.report.out ? agent.report.path : "(closed)", agent.dumps);
        if (agent.opt.loop_ms)
            agent_say("loop: period %llu of %u ms (%s); files kept: %s%u", (unsigned long long)agent.series.now.seq,
                agent.opt.loop_ms, agent.opt.loop_cumulative ? "cumulative" : "delta",
                agent.opt.loop_keep ? "the last periods' " : "all", agent.opt.loop_keep);
    }
    /* Counted by the tables themselves (the soak bench watches it stay flat);
     * not counted: per-thread buffers, queues and the JVM's own JVMTI memory. */
    size_t interning = keytab_bytes_held(), payload = tables_payload_bytes(agent.tables), sites = site_table_bytes();
    agent_say("memory: %zu bytes in the agent's tables (interning %zu, payload %zu, allocation sites %zu)",
        interning + payload + sites, interning, payload, sites);
    uint64_t forgotten = thread_forgotten_count(agent.tables);
    agent_say("threads: %u seen, %llu ended ones forgotten (%s)", thread_count(agent.tables), (unsigned long long)forgotten,
        agent.opt.thread ? "thread=y: all kept" : "thread=n: the last " ENDED_THREADS_KEPT_TEXT " ended ones are kept");
    for (size_t i = 0; i < agent.product->n_collectors; i++)
        if (agent.made[i] && collector_at(i)->status) {
            char line[512];
            collector_at(i)->status(line, sizeof line);
            agent_say("%s", line);
        }
    if (agent.limits[0])
        agent_say("limits:\n%s", agent.limits);
}

/* `start` with options while stopped (or running): new collectors,
 * capabilities and a new output file when file= changes. */
static int command_start(const command *c, JNIEnv *jni)
{
    if (agent.state == AGENT_LOADED) {
        if (agent_start_collectors(jni) != 0)
            agent_say("hprof: some collectors could not start (see above)");
        return 0;
    }
    if (agent.state == AGENT_RUNNING && !c->req.options[0]) {
        agent_say("hprof: already running in JVM %d (options: %s)", (int)getpid(), agent.options_text);
        return 0;
    }
    /* What can be refused (capabilities, the new file) before anything stops. */
    report_file fresh;
    int new_file = 0;
    if (c->req.options[0] && (c->opt.loop_ms != agent.opt.loop_ms || c->opt.loop_keep != agent.opt.loop_keep ||
                              c->opt.loop_cumulative != agent.opt.loop_cumulative)) {
        agent_say("hprof: loop=, loop_keep= and loop_mode= are set when the agent first starts (now: %s); give the "
            "same ones to `start`", agent.options_text[0] ? agent.options_text : "defaults");
        return -1;
    }
    if (c->req.options[0]) {
        char err[1024];
        if (agent_check_profile_outputs(&c->opt, err, sizeof err) != 0) {
            agent_say("%s", err);
            return -1;
        }
        if (agent_add_capabilities(&c->opt) != 0 || agent_subscribe(&c->opt) != 0)
            return -1;
        new_file = strcmp(c->opt.file, agent.opt.file) != 0 || c->opt.format != agent.opt.format ||
                   strcmp(c->opt.net, agent.opt.net) != 0;
        if (new_file && agent_report_open_main(&fresh, &c->opt, err, sizeof err) != 0) {
            agent_say("%s", err);
            return -1;
        }
    }
    if (agent.state == AGENT_RUNNING)
        agent_stop_collectors(jni);
    if (new_file) {
        agent_dump_into(&agent.report, "start with a new file=", 0, jni);
        agent_report_deliver();
        agent_report_close(&agent.report);
        agent.report = fresh;
    }
    if (c->req.options[0]) {
        agent.opt = c->opt;
        snprintf(agent.options_text, sizeof agent.options_text, "%s", c->req.options);
    }
    int rc = agent_start_collectors(jni);
    agent_say("hprof: started (%s), writing to %s", agent.options_text[0] ? agent.options_text : "defaults",
        agent.report.path);
    return rc;
}

/* `dump file=PATH`: a complete report (header, threads, traces) of its own. */
static int command_dump(const command *c, JNIEnv *jni)
{
    if (!c->req.options[0]) {
        agent_dump_into(&agent.report, "dump", 0, jni);
        agent_say("hprof: dumped to %s", agent.report.path);
        return agent.report.write_failed ? -1 : 0;
    }
    report_file r;
    char err[1024];
    hprof_options o = agent.opt;
    if (agent_report_open(&r, &o, c->opt.file, 1, err, sizeof err) != 0) {
        agent_say("%s", err);
        return -1;
    }
    agent_dump_into(&r, "dump", 0, jni);
    int failed = r.write_failed;
    char path[sizeof r.path];
    snprintf(path, sizeof path, "%s", r.path);
    agent_report_close(&r);
    if (!failed)
        agent_say("hprof: dumped to %s", path);
    return failed ? -1 : 0;
}

int agent_run_command(const command *c, JNIEnv *jni)
{
    if (agent.state == AGENT_FINISHED) {
        agent_say("%s: the JVM is exiting; the last dump is written", agent.product->name);
        return -1;
    }
    if (!agent.product->report && c->req.command != COMMAND_STATUS) {
        /* Its collectors answer (agent_say); there is no file to name. */
        if (c->req.command == COMMAND_DUMP)
            agent_dump_into(&agent.report, "dump", 0, jni);
        else if (c->req.command == COMMAND_RESET)
            agent_reset_collectors(jni);
        return 0;
    }
    switch (c->req.command) {
    case COMMAND_START:
        return command_start(c, jni);
    case COMMAND_STOP:
        if (agent.state != AGENT_RUNNING) {
            agent_say("hprof: not running (already stopped)");
            return -1;
        }
        agent_stop_collectors(jni);
        if (c->req.options[0])
            return command_dump(c, jni);
        agent_dump_into(&agent.report, "stop", 0, jni);
        agent_say("hprof: stopped; profile in %s", agent.report.path);
        return 0;
    case COMMAND_DUMP:
        return command_dump(c, jni);
    case COMMAND_RESET:
        agent_reset_collectors(jni);
        agent_say("hprof: counts reset");
        return 0;
    case COMMAND_STATUS:
        command_status();
        return 0;
    }
    return -1;
}
