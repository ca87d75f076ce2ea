/*
 * build/hprof: the command-line front of the hprof agent.
 *
 * Today its commands act on a running JVM: they load build/libhprof.so into
 * it through HotSpot's attach mechanism (src/cli/attach.c), with options that
 * tell the agent what to do ("start", "stop", "dump", "reset", "status") and
 * where to write its answer, and print that answer. More commands (run,
 * listen, report, convert, diff) will join the table below.
 *
 * Contract with the agent: the `load` operation carries three arguments, the
 * library's absolute path, "true" (the path is absolute), and the options
 *   <command>,reply=<path>[,<user options>]
 * <path> names a file, created here beforehand (mode 0600, owned by the JVM's
 * user) in the JVM's /tmp, to which the agent appends its human-readable
 * answer; Agent_OnAttach returns 0 on success. The file is removed on every
 * way out, an interrupt included.
 *
 * Exit status: 0 success, 1 an error (ours, HotSpot's or the agent's; the
 * message is on standard error), 2 a usage error.
 */
#include "cli/analyze.h"
#include "cli/attach.h"
#include "cli/jvm_list.h"
#include "cli/listen.h"
#include "cli/tempfiles.h"
#include "output/profile_outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

#define REPLY_NAME_TEMPLATE "hprof-reply.XXXXXX"    /* in the JVM's /tmp */
#define DEFAULT_AGENT       "libhprof.so"           /* next to this program */
#define MAX_REPLY_BYTES     (16u << 20)

/* Options given before the command's name, for every command. */
typedef struct {
    const char *agent;          /* --agent PATH, or NULL */
} global_options;

typedef struct command command;
struct command {
    const char *name;
    const char *agent_command;  /* what the agent is told to do; NULL: a local command */
    const char *synopsis;       /* arguments, for the usage text */
    const char *summary;
    /* argv: the arguments after the command's name */
    int (*run)(const command *cmd, const global_options *globals, int argc, char **argv);
};

static int run_agent_command(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_help(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_analysis(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_listen(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_program(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_profile(const command *cmd, const global_options *globals, int argc, char **argv);
static int run_list(const command *cmd, const global_options *globals, int argc, char **argv);

/* The agent decides which options each of its commands takes: all of them
 * pass options on, even where the usage shows none. */
static const command COMMANDS[] = {
    { "profile", NULL, "[-d SECONDS] [-e cpu|wall|alloc|lock|times] [-i MS] [-o FILE] <pid|main class|jar>",
      "profile a running JVM for SECONDS (or until Ctrl-C) into FILE: .html flame graph (default), "
      ".pb.gz pprof, .collapsed, .txt HPROF text", run_profile },
    { "list",   NULL,     "", "the JVMs this user can profile: pid and main class", run_list },
    { "attach", "start",  "<pid> [options]",
      "load the agent into a running JVM and start profiling (same as start)", run_agent_command },
    { "start",  "start",  "<pid> [options]",
      "start (or resume, with new options if given)", run_agent_command },
    { "stop",   "stop",   "<pid> [options]", "stop collecting and dump", run_agent_command },
    { "dump",   "dump",   "<pid> [options]",
      "write what has been collected (options: file=PATH for a new complete report)", run_agent_command },
    { "reset",  "reset",  "<pid>", "zero every count", run_agent_command },
    { "status", "status", "<pid>", "print the agent's state on standard output", run_agent_command },
    { "report", NULL, "FILE [--top N] [--html -o OUT.html]",
      "summarise a profile file (text or binary): top methods, sites, locks, threads", run_analysis },
    { "convert", NULL, "FILE [--to text|collapsed|flamegraph|pprof|jfr] [--profile KIND] -o OUT",
      "convert a profile file", run_analysis },
    { "diff", NULL, "BEFORE AFTER [--profile KIND] [--to flamegraph -o OUT.html]",
      "what grew and what shrank, per method and per stack", run_analysis },
    { "heap", NULL, "DUMP [--top N] [--json | --html -o PAGE] [-o OUT] [--baseline OLD]",
      "a heap dump's leak suspects, classes by retained size, its biggest objects and their paths from GC roots "
      "(HPROF binary: ours, jcmd GC.heap_dump's, gzip too; or our text, format=a); --html: one page with an expandable dominator tree; "
      "with --baseline, what grew by class and by allocation site", run_analysis },
    { "run",    NULL,     "[options] [--] java ARGS...",
      "run java with the agent (-agentpath inserted; exit status is java's); without options: "
      "cpu=samples and a flame graph hprof-<pid>.html", run_program },
    { "listen", NULL,     "[--port N] [--bind ADDR] [--keep N] -o FILE",
      "receive a net= agent's report into FILE (with loop=: a file per period), live summary on a terminal",
      run_listen },
    { "help",   NULL,     "", "print this text", run_help },
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void print_usage(FILE *out)
{
    fprintf(out, "usage: hprof <command> [--agent PATH] <pid> [options]\n\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  hprof %-6s %-20s%s%s\n", COMMANDS[i].name, COMMANDS[i].synopsis,
                strlen(COMMANDS[i].synopsis) > 20 ? "\n                              " : " ", COMMANDS[i].summary);
    fprintf(out,
            "\n"
            "Options are the agent's (cpu=samples,interval=1,file=...), passed on as given;\n"
            "several arguments are joined with commas. The agent's options, with values and\n"
            "defaults: java -agentpath:<dir>/libhprof.so=help, or docs/options.md.\n"
            "--agent PATH (before the pid, or before the command) names the agent library;\n"
            "default: $HPROF_AGENT, else " DEFAULT_AGENT " in this program's directory; a JVM\n"
            "running a JVMPI agent through libjvmpi.so gets dump, reset and status there\n"
            "(dump posts DATA_DUMP_REQUEST to the JVMPI agent, reset DATA_RESET_REQUEST).\n"
            "The JVM must run as your user; root may attach to any user's JVM.\n"
            "Exit status: 0 done, 1 error (message on standard error), 2 usage error.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hprof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\n", stderr);
    va_end(ap);
    print_usage(stderr);
    return EXIT_USAGE;
}

static int report_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int report_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hprof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_ERROR;
}

static int run_help(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)cmd;
    (void)globals;
    (void)argv;
    if (argc > 0)
        return usage_error("help takes no arguments");
    print_usage(stdout);
    return EXIT_OK;
}

static int run_listen(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)cmd;
    (void)globals;
    return listen_main(argc, argv);
}

static int take_agent_option(int argc, char **argv, int *i, const char **agent);
static int resolve_agent(const char *given, char *out);

/* hprof run [--agent PATH] [options] [--] java ARGS... */
static int run_program(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)cmd;
    const char *agent_option = globals->agent;
    int i = 0;
    int taken = 0;
    while (i < argc && (taken = take_agent_option(argc, argv, &i, &agent_option)) > 0)
        ;
    if (taken < 0)
        return EXIT_USAGE;
    char library[PATH_MAX];
    int rc = resolve_agent(agent_option, library);
    return rc != EXIT_OK ? rc : run_java(library, argc - i, argv + i);
}

/* A process id: all digits, from 1 to INT_MAX. 0 and *pid, or -1. */
static int parse_pid(const char *text, pid_t *pid)
{
    if (text[0] < '0' || text[0] > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0 || v > INT_MAX)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

/* The agent library's absolute path, with symbolic links resolved, into
 * out: --agent, else $HPROF_AGENT, else libhprof.so beside this program. */
static int resolve_agent(const char *given, char *out)
{
    char beside_us[PATH_MAX];
    const char *origin = "--agent";
    if (given == NULL) {
        given = getenv("HPROF_AGENT");
        origin = "HPROF_AGENT";
    }
    if (given == NULL || given[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", beside_us, sizeof beside_us - 1);
        if (n < 0)
            return report_error("cannot find this program's directory (/proc/self/exe): %s", strerror(errno));
        beside_us[n] = '\0';
        char *slash = strrchr(beside_us, '/');
        size_t dir_len = slash != NULL ? (size_t)(slash - beside_us) : 0;
        if (dir_len + 1 + sizeof DEFAULT_AGENT > sizeof beside_us)
            return report_error("this program's path is too long");
        memcpy(beside_us + dir_len, "/" DEFAULT_AGENT, sizeof DEFAULT_AGENT + 1);
        given = beside_us;
        origin = "beside hprof; --agent or HPROF_AGENT name another";
    }
    if (realpath(given, out) == NULL)
        return report_error("agent library %s (%s): %s", given, origin, strerror(errno));
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
        return report_error("agent library %s (%s) is not a file", out, origin);
    return EXIT_OK;
}

/* The reply file's contents (malloc'ed, NUL-terminated), read from the
 * descriptor we created it with; NULL if unreadable. */
static char *read_reply(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (unsigned long long)st.st_size > MAX_REPLY_BYTES)
        return NULL;
    size_t size = (size_t)st.st_size;
    char *text = malloc(size + 1);
    if (text == NULL)
        return NULL;
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, text + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    text[got] = '\0';
    return text;
}

static void print_text(FILE *out, const char *text)
{
    size_t len = strlen(text);
    if (len == 0)
        return;
    fputs(text, out);
    if (text[len - 1] != '\n')
        fputc('\n', out);
}

/* While a command runs in the JVM, what the agent appends to the reply file
 * as it goes (agent_progress: a long heap dump's progress) is shown on
 * standard error at once; the answer at the end is printed after it. */
typedef struct reply_watch {
    int             fd;
    off_t           shown;        /* bytes of the file already shown */
    pthread_mutex_t lock;
    pthread_cond_t  done_cond;
    int             done;
} reply_watch;

static void show_new_lines(reply_watch *w)
{
    char buf[4096];
    for (;;) {
        ssize_t n = pread(w->fd, buf, sizeof buf, w->shown);
        if (n <= 0)
            return;
        ssize_t whole = n;
        while (whole > 0 && buf[whole - 1] != '\n')
            whole--;                      /* a line still being written waits */
        if (whole == 0)
            return;
        fwrite(buf, 1, (size_t)whole, stderr);
        fflush(stderr);
        w->shown += whole;
    }
}

static void *watch_reply(void *arg)
{
    reply_watch *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->done_cond, &w->lock, &until);
        if (!w->done)
            show_new_lines(w);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/*
 * Tells the agent in JVM pid to do verb: every check first (process,
 * user, attach enabled, library visible), then the reply file, the `load`
 * operation and the answers of HotSpot and of the agent.
 */
static int send_agent_command(const char *verb, pid_t pid, const char *agent_option,
                              const char *user_options, FILE *reply_out)
{
    char library[PATH_MAX];
    int rc = resolve_agent(agent_option, library);
    if (rc != EXIT_OK)
        return rc;

    /* The options as the agent will get them, with the reply path's
     * placeholder (same length as the real name): HotSpot drops requests
     * with an argument over 1024 bytes without a word, so say it here. */
    size_t options_len = strlen(verb) + strlen(",reply=/tmp/" REPLY_NAME_TEMPLATE)
                         + (user_options[0] ? 1 + strlen(user_options) : 0);
    if (options_len > ATTACH_ARG_MAX)
        return report_error("the options are too long: %zu bytes with hprof's own '%s,reply=...', "
                            "HotSpot takes at most %d", options_len, verb, ATTACH_ARG_MAX);
    if (strlen(library) > ATTACH_ARG_MAX)
        return report_error("the agent library's path is longer than HotSpot's %d bytes: %s",
                            ATTACH_ARG_MAX, library);

    char err[1024];
    attach_target jvm;
    if (attach_inspect(pid, &jvm, err, sizeof err) != 0)
        return report_error("%s", err);
    /* A JVM that runs a JVMPI agent through libjvmpi.so (and not the
     * profiler): its commands go to the layer, unless an agent is named. */
    const char *named = agent_option != NULL ? agent_option : getenv("HPROF_AGENT");
    if ((named == NULL || named[0] == '\0') && jvm.jvmpi_path[0] != '\0' && !jvm.has_libhprof) {
        if (strlen(jvm.jvmpi_path) > ATTACH_ARG_MAX)
            return report_error("the JVMPI layer's path is longer than HotSpot's %d bytes: %s", ATTACH_ARG_MAX,
                                jvm.jvmpi_path);
        snprintf(library, sizeof library, "%s", jvm.jvmpi_path);
    }
    if (attach_become_jvm_user(&jvm, err, sizeof err) != 0
        || attach_check_enabled(&jvm, err, sizeof err) != 0
        || attach_check_library(&jvm, library, err, sizeof err) != 0)
        return report_error("%s", err);

    /* The reply file goes in the JVM's /tmp, reached through a descriptor of
     * that directory: if the JVM dies while we wait, /proc/<pid>/root goes
     * with it, but the file must still be removed. */
    char jvm_tmp[PATH_MAX], reply_path[PATH_MAX];
    if (attach_path_in_jvm(&jvm, "/tmp", jvm_tmp, sizeof jvm_tmp) != 0)
        return report_error("path too long");
    int tmp_dir_fd = tempfiles_dir_path(jvm_tmp, REPLY_NAME_TEMPLATE, reply_path, sizeof reply_path);
    if (tmp_dir_fd < 0)
        return report_error("cannot open the JVM's /tmp (%s): %s", jvm_tmp, strerror(errno));
    int reply_fd = tempfiles_mkstemp(reply_path);
    if (reply_fd < 0) {
        report_error("cannot create a reply file in %s: %s", jvm_tmp, strerror(errno));
        close(tmp_dir_fd);
        return EXIT_ERROR;
    }
    /* The same file as the JVM names it: /tmp/<our file's name>. */
    char options[ATTACH_ARG_MAX + 1];
    snprintf(options, sizeof options, "%s,reply=/tmp/%s%s%s", verb, strrchr(reply_path, '/') + 1,
             user_options[0] ? "," : "", user_options);

    const char *args[ATTACH_ARG_COUNT] = { library, "true", options };
    char *answer = NULL;
    size_t answer_len = 0;
    reply_watch watch = { reply_fd, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    pthread_t watcher;
    int watching = pthread_create(&watcher, NULL, watch_reply, &watch) == 0;
    int sent = attach_execute(&jvm, "load", args, &answer, &answer_len, err, sizeof err);
    if (watching) {
        pthread_mutex_lock(&watch.lock);
        watch.done = 1;
        pthread_cond_signal(&watch.done_cond);
        pthread_mutex_unlock(&watch.lock);
        pthread_join(watcher, NULL);
    }
    char *whole_reply = read_reply(reply_fd);
    /* What the watcher showed is not the answer: the rest is. */
    char *reply = whole_reply && (size_t)watch.shown <= strlen(whole_reply) ? whole_reply + watch.shown : whole_reply;
    close(reply_fd);
    tempfiles_remove(reply_path);
    close(tmp_dir_fd);

    rc = EXIT_ERROR;
    if (sent != 0) {
        report_error("%s", err);
    } else {
        load_answer outcome;
        attach_parse_load_answer(answer, answer_len, &outcome);
        if (outcome.outcome == LOAD_AGENT_RETURNED && outcome.agent_code == 0) {
            if (reply_out != NULL)
                print_text(reply_out, reply ? reply : "");
            rc = EXIT_OK;
        } else if (outcome.outcome == LOAD_AGENT_RETURNED) {
            if (reply != NULL && reply[0] != '\0')
                print_text(stderr, reply);
            else
                report_error("the agent in the JVM %d failed (Agent_OnAttach returned %d) "
                             "and gave no message", (int)pid, outcome.agent_code);
        } else if (outcome.outcome == LOAD_NOT_RUN) {
            report_error("the JVM %d did not run the agent %s: %s", (int)pid, library,
                         outcome.message[0] ? outcome.message : "no reason given");
        } else {
            report_error("no answer from the JVM %d: %s", (int)pid, outcome.message);
        }
    }
    free(answer);
    free(whole_reply);
    return rc;
}

/* Reads --agent PATH or --agent=PATH at argv[*i] into *agent, moving *i past
 * it: 1 if it was one, 0 if argv[*i] is something else, -1 (usage error
 * printed) if the path is missing. */
static int take_agent_option(int argc, char **argv, int *i, const char **agent)
{
    if (strcmp(argv[*i], "--agent") == 0) {
        if (*i + 1 >= argc) {
            usage_error("--agent needs a path");
            return -1;
        }
        *agent = argv[*i + 1];
        *i += 2;
        return 1;
    }
    if (strncmp(argv[*i], "--agent=", 8) == 0) {
        *agent = argv[*i] + 8;
        *i += 1;
        return 1;
    }
    return 0;
}

/* hprof [--agent PATH] <attach|start|stop|dump|reset|status> [--agent PATH] <pid> [options...] */
static int run_agent_command(const command *cmd, const global_options *globals, int argc, char **argv)
{
    const char *agent_option = globals->agent;
    int i = 0;
    while (i < argc && argv[i][0] == '-') {
        int taken = take_agent_option(argc, argv, &i, &agent_option);
        if (taken < 0)
            return EXIT_USAGE;
        if (taken)
            continue;
        if (argv[i][1] >= '0' && argv[i][1] <= '9')
            return usage_error("'%s' is not a process id (a positive number)", argv[i]);
        return usage_error("unknown option '%s'", argv[i]);
    }
    if (i >= argc)
        return usage_error("%s needs the pid of a JVM", cmd->name);
    pid_t pid;
    if (parse_pid(argv[i], &pid) != 0)
        return usage_error("'%s' is not a process id (a positive number)", argv[i]);
    i++;

    /* The rest are the agent's options, joined with commas. */
    char user_options[ATTACH_ARG_MAX + 1] = "";
    size_t used = 0;
    for (; i < argc; i++) {
        const char *opt = argv[i];
        if (opt[0] == '\0')
            continue;
        if (opt[0] == '-')
            return usage_error("'%s': hprof's own options go before the pid", opt);
        if (strncmp(opt, "reply=", 6) == 0 || strstr(opt, ",reply=") != NULL)
            return usage_error("reply= is hprof's to set, not an option to give");
        size_t len = strlen(opt);
        if (used + (used ? 1 : 0) + len > ATTACH_ARG_MAX)
            return report_error("the options are longer than HotSpot's %d bytes", ATTACH_ARG_MAX);
        if (used)
            user_options[used++] = ',';
        memcpy(user_options + used, opt, len + 1);
        used += len;
    }
    /* A relative path is the user's, from here: the JVM's directory may be
     * anywhere, and a file there would be looked for here. */
    char cwd[PATH_MAX], absolute[ATTACH_ARG_MAX + 1];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return report_error("cannot tell the current directory: %s", strerror(errno));
    if (attach_absolute_paths(user_options, cwd, absolute, sizeof absolute) != 0)
        return report_error("the options are longer than HotSpot's %d bytes once their paths are made absolute "
                            "(from %s)", ATTACH_ARG_MAX, cwd);
    return send_agent_command(cmd->agent_command, pid, agent_option, absolute, stdout);
}

/* hprof list: the JVMs jvm_list finds, one "pid main" line each. */
static int run_list(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)cmd;
    (void)globals;
    (void)argv;
    if (argc > 0)
        return usage_error("list takes no arguments");
    jvm_entry *jvms = NULL;
    int n = jvm_list(&jvms);
    if (n < 0)
        return report_error("cannot list the JVMs (/tmp/hsperfdata_*): %s", strerror(errno));
    for (int i = 0; i < n; i++)
        printf("%d %s\n", (int)jvms[i].pid, jvms[i].main[0] ? jvms[i].main : "(unknown)");
    free(jvms);
    return EXIT_OK;
}

/* The pid `what` names: digits are a pid; otherwise the one JVM whose main
 * class, simple class name or jar matches (jvm_matches). */
static int find_jvm(const char *what, pid_t *pid)
{
    if (parse_pid(what, pid) == 0)
        return EXIT_OK;
    jvm_entry *jvms = NULL;
    int n = jvm_list(&jvms);
    if (n < 0)
        return report_error("cannot list the JVMs (/tmp/hsperfdata_*): %s", strerror(errno));
    int found = 0;
    char others[512] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++)
        if (jvm_matches(&jvms[i], what)) {
            *pid = jvms[i].pid;
            found++;
            if (used < sizeof others)
                used += (size_t)snprintf(others + used, sizeof others - used, " %d", (int)jvms[i].pid);
        }
    free(jvms);
    if (found == 0)
        return report_error("no JVM runs '%s' (`hprof list` shows the JVMs and their main classes; "
                            "a JVM started with -XX:-UsePerfData is found by its pid only)", what);
    if (found > 1)
        return report_error("%d JVMs run '%s' (pids%s): name one by its pid", found, what, others);
    return EXIT_OK;
}

/* Set by on_profile_interrupt, a signal handler, which gets no user data: a static. */
static volatile sig_atomic_t profile_interrupted;

static void on_profile_interrupt(int signo)
{
    (void)signo;
    profile_interrupted = 1;
}

/* The agent option that writes `path` in the format its extension names. */
static const char *output_option_for(const char *path)
{
    const char *format = analyze_format_of_extension(path);
    return format != NULL && strcmp(format, "text") == 0 ? "file" : format;
}

/* A positive whole number argument of an option; -1 if it is not one. */
static long positive(const char *text)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    return errno != 0 || *end != '\0' || end == text || v <= 0 || v > 1000000000L ? -1 : v;
}

/*
 * hprof profile [-d SECONDS] [-e EVENT] [-i MS] [-o FILE] <pid|main class|jar>
 *
 * start with the options the event and the file's extension call for, wait,
 * stop (which writes the outputs and, for cpu=times, restores the classes),
 * print the file's absolute path. The agent writes the file, in the JVM's
 * view of the filesystem: the path is made absolute here so that it does
 * not depend on the JVM's working directory. The HPROF text report the
 * agent always writes goes to a file of ours in the JVM's /tmp, removed at
 * the end, unless FILE is that report (.txt).
 */
static int run_profile(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)cmd;
    const char *agent_option = globals->agent, *event = "cpu", *out = NULL, *target = NULL;
    long seconds = 0, interval = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int taken = take_agent_option(argc, argv, &i, &agent_option);
        if (taken < 0)
            return EXIT_USAGE;
        if (taken) {
            i--;
            continue;
        }
        if ((strcmp(a, "-d") == 0 || strcmp(a, "-e") == 0 || strcmp(a, "-i") == 0 || strcmp(a, "-o") == 0)) {
            if (i + 1 >= argc)
                return usage_error("profile: %s needs a value", a);
            const char *v = argv[++i];
            if (a[1] == 'd' && (seconds = positive(v)) < 0)
                return usage_error("profile: -d %s: want a number of seconds (1 or more)", v);
            if (a[1] == 'i' && (interval = positive(v)) < 0)
                return usage_error("profile: -i %s: want an interval in milliseconds (1 or more)", v);
            if (a[1] == 'e')
                event = v;
            if (a[1] == 'o')
                out = v;
        } else if (a[0] == '-') {
            return usage_error("profile: unknown option '%s'", a);
        } else if (target == NULL) {
            target = a;
        } else {
            return usage_error("profile: one JVM at a time ('%s' and '%s')", target, a);
        }
    }
    if (target == NULL)
        return usage_error("profile needs a JVM: its pid, main class or jar (`hprof list` shows them)");
    char what[64];
    if (strcmp(event, "cpu") == 0)
        snprintf(what, sizeof what, "cpu=samples,interval=%ld", interval ? interval : 10);
    else if (strcmp(event, "wall") == 0)
        snprintf(what, sizeof what, "wall=%ld", interval ? interval : 10);
    else if (strcmp(event, "alloc") == 0)
        snprintf(what, sizeof what, "heap=sites,heap_sample=512k");
    else if (strcmp(event, "lock") == 0)
        snprintf(what, sizeof what, "monitor=y");
    else if (strcmp(event, "times") == 0)
        snprintf(what, sizeof what, "cpu=times");
    else
        return usage_error("profile: -e %s: want cpu, wall, alloc, lock or times", event);
    if ((strcmp(event, "cpu") != 0 && strcmp(event, "wall") != 0) && interval)
        return usage_error("profile: -i is for -e cpu and -e wall");
    pid_t pid;
    int rc = find_jvm(target, &pid);
    if (rc != EXIT_OK)
        return rc;

    char default_out[64], path[PATH_MAX];
    if (out == NULL) {
        snprintf(default_out, sizeof default_out, "profile-%d.html", (int)pid);
        out = default_out;
    }
    const char *output = output_option_for(out);
    char extensions[256];
    if (output == NULL)
        return usage_error("profile: -o %s: name the format by the extension, one of %s", out,
                           analyze_format_list(", ", 1, extensions, sizeof extensions));
    if (out[0] == '/') {
        snprintf(path, sizeof path, "%s", out);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) == NULL)
            return report_error("cannot tell the current directory: %s", strerror(errno));
        if ((size_t)snprintf(path, sizeof path, "%s/%s", cwd, out) >= sizeof path)
            return report_error("-o %s: path too long", out);
    }
    if (strchr(path, ',') != NULL)
        return report_error("-o %s: the agent's options are separated by commas: name a file without one", path);
    /* The files the agent writes: -o's, or for -e lock in pprof and
     * collapsed form one per profile, contention and waits (FILE.lock.pb.gz
     * and FILE.wait.pb.gz, as the agent names several profiles' files). */
    char files[2][PATH_MAX];
    int nfiles = 1;
    snprintf(files[0], sizeof files[0], "%s", path);
    if (strcmp(event, "lock") == 0 && (strcmp(output, "pprof") == 0 || strcmp(output, "collapsed") == 0)) {
        profile_output_name(path, "lock", 1, files[0], sizeof files[0]);
        profile_output_name(path, "wait", 1, files[1], sizeof files[1]);
        nfiles = 2;
    }
    /* A file left from before would pass for this run's if the agent
     * could not write: it goes first (a link is not followed, and is an error). */
    struct stat st;
    for (int f = 0; f < nfiles; f++) {
        if (lstat(files[f], &st) != 0)
            continue;
        if (!S_ISREG(st.st_mode))
            return report_error("-o %s exists and is not a regular file", files[f]);
        if (unlink(files[f]) != 0)
            return report_error("-o %s exists and cannot be replaced: %s", files[f], strerror(errno));
    }
    /* The text report, when not the output: in the JVM's /tmp, which we
     * reach through /proc/<pid>/root. */
    char report_in_jvm[96] = "", report_here[PATH_MAX] = "";
    if (strcmp(output, "file") != 0) {
        snprintf(report_in_jvm, sizeof report_in_jvm, "/tmp/hprof-profile-%d-%d.txt", (int)pid, (int)getpid());
        snprintf(report_here, sizeof report_here, "/proc/%d/root%s", (int)pid, report_in_jvm);
    }
    char options[ATTACH_ARG_MAX + 1];
    if ((size_t)snprintf(options, sizeof options, "%s,%s=%s%s%s", what, output, path,
                         report_in_jvm[0] ? ",file=" : "", report_in_jvm) >= sizeof options)
        return report_error("-o %s: path too long for the attach protocol", path);

    rc = send_agent_command("start", pid, agent_option, options, NULL);
    if (rc != EXIT_OK)
        return rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_profile_interrupt;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (seconds)
        fprintf(stderr, "hprof: profiling JVM %d (%s) for %ld s (Ctrl-C stops sooner)\n", (int)pid, what, seconds);
    else
        fprintf(stderr, "hprof: profiling JVM %d (%s) until Ctrl-C\n", (int)pid, what);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int gone = 0;
    while (!profile_interrupted) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (seconds && now.tv_sec - start.tv_sec >= seconds)
            break;
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            gone = 1;                 /* it ended: the agent wrote at its exit */
            break;
        }
        struct timespec tick = { 0, 100 * 1000000L };
        nanosleep(&tick, NULL);
    }
    if (!gone)
        rc = send_agent_command("stop", pid, agent_option, "", NULL);
    if (report_here[0])
        unlink(report_here);
    if (rc != EXIT_OK)
        return rc;
    /* The waits' file may be empty (collapsed, no waits): the agent
     * renames a whole file into place, so one that is there is complete. */
    for (int f = 0; f < nfiles; f++)
        if (stat(files[f], &st) != 0 || (f == 0 && st.st_size == 0))
            return report_error("the JVM %d %s, and %s was not written%s", (int)pid,
                                gone ? "ended while it was profiled" : "was profiled", files[f],
                                gone ? " (its own exit writes it only if the JVM ran its shutdown)" : "");
    for (int f = 0; f < nfiles; f++)
        printf("%s\n", files[f]);
    return EXIT_OK;
}

/* report, convert, diff: files in, no JVM (src/cli/analyze_*.c). */
static int run_analysis(const command *cmd, const global_options *globals, int argc, char **argv)
{
    (void)globals;
    if (strcmp(cmd->name, "report") == 0)
        return analyze_report(argc, argv);
    if (strcmp(cmd->name, "convert") == 0)
        return analyze_convert(argc, argv);
    if (strcmp(cmd->name, "heap") == 0)
        return analyze_heap(argc, argv);
    return analyze_diff(argc, argv);
}

int main(int argc, char **argv)
{
    tempfiles_init();
    global_options globals = { NULL };
    int arg = 1;
    while (arg < argc && argv[arg][0] == '-' && strcmp(argv[arg], "--help") != 0
           && strcmp(argv[arg], "-h") != 0) {
        int taken = take_agent_option(argc, argv, &arg, &globals.agent);
        if (taken < 0)
            return EXIT_USAGE;
        if (!taken)
            return usage_error("unknown option '%s'", argv[arg]);
    }
    if (arg >= argc)
        return usage_error("no command given");
    const char *name = argv[arg];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(COMMANDS[i].name, name) == 0) {
            int rc = COMMANDS[i].run(&COMMANDS[i], &globals, argc - arg - 1, argv + arg + 1);
            tempfiles_remove_all();
            /* An answer that could not be written is an error too. */
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "hprof: writing to standard output: %s\n", strerror(errno));
                return EXIT_ERROR;
            }
            return rc;
        }
    }
    return usage_error("unknown command '%s'", argv[arg]);
}
