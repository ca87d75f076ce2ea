/* options.c: see options.h. */
#include "options.h"
#include "option_error.h"
#include "../output/series.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The help; the formats' lines (from their table) go where @FORMATS@ is. */
static const char usage_template[] =
"\n"
"     HPROF: Heap and CPU Profiling Agent (JVMTI, JDK 17 and later)\n"
"\n"
"hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]\n"
"         or: java -agentpath:/path/to/libhprof.so=[help]|[<option>=<value>, ...]\n"
"\n"
"Option Name and Value  Description                    Default\n"
"---------------------  -----------                    -------\n"
"heap=dump|sites|all    heap profiling                 all\n"
"cpu=samples|times|old  CPU usage                      off\n"
"monitor=y|n            monitor contention             n\n"
"format=a|b             text(txt) or binary output     a\n"
"file=<file>            write data to file             java.hprof[{.txt}]\n"
"net=<host>:<port>      send data over a socket        off\n"
"                       (to `hprof listen`; file= then names the local\n"
"                       file used if the listener goes away)\n"
"depth=<size>           stack trace depth (0-256)      4\n"
"interval=<ms>          sample interval in ms          10\n"
"cutoff=<value>         output cutoff point (0-1)      0.0001\n"
"lineno=y|n             line number in traces?         y\n"
"thread=y|n             thread in traces?              n\n"
"doe=y|n                dump on exit?                  y\n"
"                       (heap=dump: at exit only if no heap dump was\n"
"                       written on request since the start)\n"
"msa=y|n                Solaris micro state accounting n (y is not supported)\n"
"force=y|n              force output to <file>         y\n"
"verbose=y|n|all        print messages about dumps     y\n"
"                       all: also the agent's counters at each dump and\n"
"                       every class cpu=times or heap=sites left\n"
"                       uninstrumented (y: how many)\n"
"@FORMATS@"
"sampler=auto|perf|timer  what drives cpu=samples    auto\n"
"                       perf: a perf_event task-clock per thread (exact\n"
"                       intervals); timer: a POSIX CPU-time timer per\n"
"                       thread (fires at kernel ticks, often 4 ms);\n"
"                       auto: timer at interval>=10; below, perf when\n"
"                       the kernel allows it, else timer\n"
"wall=<ms>              sample every thread every <ms> 0 (off)\n"
"                       of wall time, whatever it does\n"
"                       (running, sleeping, waiting, parked, blocked,\n"
"                       in a system call): WALL SUMMARY, WALL SAMPLES,\n"
"                       and .wall profiles (pprof=: labels thread and\n"
"                       state); a bounded set of threads per tick\n"
"native=y|n             cpu=samples: every thread of   y\n"
"                       the process (GC, JIT, the VM's, native ones),\n"
"                       and native frames (libjvm.so, libc, JNI code)\n"
"                       on top of Java frames; n: Java threads' Java\n"
"                       frames only\n"
"heap_sample=<size>     heap=sites by sampling: about  0 (every allocation)\n"
"                       one allocation per <size> bytes allocated by a\n"
"                       thread (512k, 1m, ...); the SITES counts are then\n"
"                       estimates, at near-zero overhead\n"
"heap_dumper=<how>      format=b heap dumps: jvm: the  auto\n"
"                       JVM's own dumper (heap=all: its objects then\n"
"                       given their traces), walk: the agent's JVMTI\n"
"                       walk; auto: jvm where it can (heap=all: with the\n"
"                       G1, Parallel or Serial collector)\n"
"deadlock=<ms>          with monitor=y, look for       0 (at dumps only)\n"
"                       deadlocks this often; a new one is dumped at once\n"
"jdk=all|boundary|none  cpu=times: the JDK's calls     all\n"
"                       boundary: only those made from outside the JDK,\n"
"                       each timed with the JDK's work below it; none:\n"
"                       the JDK's classes are not timed (their time is\n"
"                       their caller's)\n"
"include=<classes>      cpu=times: time only these     all\n"
"exclude=<classes>      cpu=times: do not time these   none\n"
"                       classes, ':' between names; a trailing * matches\n"
"                       every name that begins so (java.*:jdk.*:sun.*).\n"
"                       The time of a method left out counts as its\n"
"                       caller's own; its calls are not counted\n"
"loop=<duration>        every output a series of files, off\n"
"                       one complete file per period: a number of\n"
"                       seconds, or with ms, s, m or h (1 s to 24 h);\n"
"                       names take %t (period's start, UTC), %p (pid),\n"
"                       %n (period number); a name without % gets\n"
"                       .%t.%n before its extension\n"
"loop_keep=<n>          keep the last n periods' files 0 (all)\n"
"loop_mode=delta|cumulative  each file: its period   delta\n"
"                       alone, or everything since the start\n"
"\n"
"heap=all is the default, as in HPROF, only when none of cpu=, heap= and\n"
"monitor= is given.\n"
"\n"
"cpu=old writes the old prof format instead of CPU TIME, as HPROF did:\n"
"a line \"count callee caller time\", then one line per callee and caller\n"
"(traces of 2 frames, whatever depth= says) with the calls and the\n"
"callee's CPU time in ms, its callees included; no header, no THREAD\n"
"records.\n"
"\n"
"cpu=samples samples only threads that are running on a CPU (a per-thread\n"
"CPU-time timer per Java thread), and walks their stacks with\n"
"AsyncGetCallTrace at any instruction, not only at safepoints. Samples that\n"
"could not be walked are counted by reason under the pseudo class\n"
"[unwalkable] instead of being dropped.\n"
"\n"
"Obtain a dump while running: kill -QUIT <pid> (appended to the file).\n"
"\n"
"Example: java -agentlib:hprof=cpu=samples,interval=1,depth=8,file=cpu.txt Hello\n"
"\n"
"Notes\n"
"  - The option format=b cannot be used with monitor=y, cpu=times or\n"
"    cpu=old.\n"
"  - Output file names: java.hprof.txt (format=a), java.hprof (format=b);\n"
"    with force=n an existing file is kept and <name>.<pid> is used instead.\n"
"  - Unless 'help' is given, the agent prints nothing on standard output.\n";

/* The formats' lines of the help, in its columns:
 *   pprof=<file>           also write a gzipped pprof     off
 *                          profile (go tool pprof, Pyroscope, Parca) */
static size_t formats_help(char *buf, size_t size)
{
    static const char indent[] = "                       ";
    size_t used = 0;
    for (uint32_t i = 0; i < format_count() && used < size; i++) {
        const output_format *f = format_at(i);
        char option[64];
        snprintf(option, sizeof option, "%s=<file>", f->name);
        const char *second = strchr(f->help, '\n');
        int first_len = second ? (int)(second - f->help) : (int)strlen(f->help);
        used += (size_t)snprintf(buf + used, size - used, "%-23s%-31.*soff\n", option, first_len, f->help);
        if (second && used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%s\n", indent, second + 1);
    }
    if (used < size)
        used += (size_t)snprintf(buf + used, size - used,
            "%sThese show whole stacks (up to 256 frames,\n"
            "%snot cut at depth=) of cpu=samples, cpu=times,\n"
            "%sheap=sites and monitor=y; with several of those,\n"
            "%sone file each:\n"
            "%s<file> with .cpu, .alloc or .lock before its\n"
            "%sextension (flamegraph=: one page, one graph each)\n",
            indent, indent, indent, indent, indent, indent);
    return used;
}

const char *options_usage(void)
{
    /* Made once, at the first help (the agent's start-up, before any thread of its own). */
    static char text[sizeof usage_template + 4096];
    if (text[0] == '\0') {
        const char *at = strstr(usage_template, "@FORMATS@");
        size_t head = (size_t)(at - usage_template);
        memcpy(text, usage_template, head);
        size_t used = head + formats_help(text + head, sizeof text - head);
        if (used < sizeof text)
            snprintf(text + used, sizeof text - used, "%s", at + strlen("@FORMATS@"));
    }
    return text;
}

static void defaults(hprof_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = 'a';
    o->depth = 4;
    o->interval_ms = 10;
    o->cutoff = 0.0001;
    o->lineno = 1;
    o->thread = 0;
    o->doe = 1;
    o->force = 1;
    o->verbose = 1;
    o->sampler = 'a';
    o->heap_dumper = 'a';
    o->native = 1;
}

static int parse_yes_no(const char *name, const char *value, int *out, char *err, size_t errlen)
{
    if (strcmp(value, "y") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(value, "n") == 0) {
        *out = 0;
        return 0;
    }
    set_err(err, errlen, "hprof: bad value '%s' for option '%s': accepted values are y or n",
            value, name);
    return -1;
}

static int parse_int(const char *name, const char *value, long lo, long hi, int *out,
                     const char *what, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (value[0] == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
        set_err(err, errlen,
                "hprof: bad value '%s' for option '%s': expected %s, a whole number from %ld to %ld",
                value, name, what, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_path(const char *name, const char *value, char *out, char *err, size_t errlen)
{
    if (value[0] == '\0') {
        set_err(err, errlen, "hprof: option '%s' needs a file name, e.g. %s=profile.txt", name, name);
        return -1;
    }
    if (strlen(value) >= OPTIONS_PATH_MAX) {
        set_err(err, errlen, "hprof: the file name given to '%s' is longer than %d bytes",
                name, OPTIONS_PATH_MAX - 1);
        return -1;
    }
    strcpy(out, value);
    return 0;
}

static int parse_net(const char *value, char *out, char *err, size_t errlen)
{
    const char *colon = strrchr(value, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (colon == NULL || colon == value || colon[1] == '\0' || *end != '\0' ||
        port < 1 || port > 65535 || strlen(value) >= OPTIONS_PATH_MAX) {
        set_err(err, errlen, "hprof: bad value '%s' for option 'net': expected <host>:<port>, "
                "e.g. net=localhost:9999", value);
        return -1;
    }
    strcpy(out, value);
    return 0;
}

/* loop=DURATION: a whole number with ms, s (the default), m or h; 1 s to 24 h. */
static int parse_duration_ms(const char *value, uint32_t *out)
{
    static const struct { const char *unit; uint64_t ms; } units[] = {
        { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 },
    };
    char *end = NULL;
    errno = 0;
    unsigned long long v = value[0] >= '0' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
    if (end == NULL || errno != 0 || v > 86400000)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            uint64_t ms = v * units[i].ms;
            if (ms < 1000 || ms > 86400000)
                return -1;
            *out = (uint32_t)ms;
            return 0;
        }
    return -1;
}

/* loop=, loop_keep=, loop_mode=: series of files (src/output/series.h). */
static int parse_loop(hprof_options *o, const char *name, const char *value, char *err, size_t errlen)
{
    if (strcmp(name, "loop") == 0) {
        if (parse_duration_ms(value, &o->loop_ms) == 0)
            return 0;
        set_err(err, errlen, "hprof: bad value '%s' for option 'loop': expected how long each file's period "
                "is, from 1 s to 24 h: a whole number of seconds (loop=60) or with a unit, ms, s, m or h "
                "(loop=1500ms, loop=30s, loop=5m, loop=1h)", value);
        return -1;
    }
    if (strcmp(name, "loop_keep") == 0) {
        int keep = 0;
        if (parse_int(name, value, 0, 100000, &keep, "how many periods' files to keep (0: all)", err, errlen) != 0)
            return -1;
        o->loop_keep = (uint32_t)keep;
        return 0;
    }
    if (strcmp(name, "loop_mode") == 0) {
        if (strcmp(value, "delta") == 0 || strcmp(value, "cumulative") == 0) {
            o->loop_cumulative = value[0] == 'c';
            o->loop_mode_given = 1;
            return 0;
        }
        set_err(err, errlen, "hprof: bad value '%s' for option 'loop_mode': accepted values are delta (each "
                "file holds its period alone) or cumulative (each file holds everything since the start)", value);
        return -1;
    }
    set_err(err, errlen, "hprof: unknown option '%s'; the loop options are loop, loop_keep and loop_mode", name);
    return -1;
}

/* With loop=: every file name the options give can take a period's name. */
static int check_loop(const hprof_options *o, char *err, size_t errlen)
{
    if (!o->loop_ms) {
        if (o->loop_keep || o->loop_mode_given) {
            set_err(err, errlen, "hprof: option '%s=' needs loop=DURATION (e.g. loop=1m)",
                    o->loop_keep ? "loop_keep" : "loop_mode");
            return -1;
        }
        return 0;
    }
    if (o->file[0] && series_check_name("file", o->file, OPTIONS_PATH_MAX, err, errlen) != 0)
        return -1;
    for (uint32_t i = 0; i < format_count(); i++)
        if (o->outputs[i][0] &&
            series_check_name(format_at(i)->name, o->outputs[i], OPTIONS_PATH_MAX, err, errlen) != 0)
            return -1;
    return 0;
}

static const char *const option_names[] = {
    "help", "heap", "cpu", "monitor", "format", "file", "net", "depth", "interval", "cutoff", "lineno",
    "thread", "doe", "msa", "force", "verbose", NULL /* the formats' (formats.c) */, "sampler", "native",
    "wall", "heap_sample", "heap_dumper", "deadlock", "jdk", "include", "exclude", "loop", "loop_keep", "loop_mode",
};
#define OPTION_NAMES (sizeof option_names / sizeof option_names[0])
#define OPTION_COUNT (OPTION_NAMES - 1 + format_count())

/* Option i of OPTION_COUNT, the formats' in the NULL's place. */
static const char *option_name_at(size_t i)
{
    size_t at = 0;
    while (option_names[at] != NULL)
        at++;
    if (i < at)
        return option_names[i];
    if (i < at + format_count())
        return format_at((uint32_t)(i - at))->name;
    return option_names[i - format_count() + 1];
}

/* "help, heap, cpu, ..." */
static const char *option_list(void)
{
    static char list[512];
    if (list[0] == '\0') {
        size_t used = 0;
        for (size_t i = 0; i < OPTION_COUNT && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", option_name_at(i));
    }
    return list;
}

/* Edits (insert, delete, replace, swap two neighbours) from a to b, at most
 * 3 counted: a typo's distance. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    int d[33][33];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The option a mistyped name most likely meant: the only one within two
 * edits (one for names of 4 letters or fewer), else NULL. */
static const char *nearest_option(const char *name)
{
    const char *best = NULL;
    int best_distance = 99, ties = 0;
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        int dist = edit_distance(name, option_name_at(i));
        if (dist < best_distance) {
            best = option_name_at(i);
            best_distance = dist;
            ties = 0;
        } else if (dist == best_distance) {
            ties++;
        }
    }
    int allowed = strlen(name) <= 4 ? 1 : 2;
    return best_distance <= allowed && ties == 0 ? best : NULL;
}

/* One "name=value" (or "help"). */
static int parse_one(hprof_options *o, const char *name, const char *value,
                     char *err, size_t errlen)
{
    if (strcmp(name, "help") == 0) {
        if (value != NULL) {
            set_err(err, errlen, "hprof: option 'help' takes no value");
            return -1;
        }
        o->help = 1;
        return 0;
    }
    if (value == NULL && (strchr(name, '*') || strchr(name, '.'))) {
        set_err(err, errlen, "hprof: '%s' is not an option; include= and exclude= separate their class "
                "names with ':', not ',' (exclude=java.*:jdk.*)", name);
        return -1;
    }
    if (value == NULL) {
        set_err(err, errlen, "hprof: option '%s' needs a value (%s=<value>); "
                "run with -agentlib:hprof=help for the list of options", name, name);
        return -1;
    }
    if (strcmp(name, "cpu") == 0) {
        if (strcmp(value, "samples") == 0) o->cpu = CPU_SAMPLES;
        else if (strcmp(value, "times") == 0) o->cpu = CPU_TIMES;
        else if (strcmp(value, "old") == 0) o->cpu = CPU_OLD;
        else {
            set_err(err, errlen, "hprof: bad value '%s' for option 'cpu': accepted values are "
                    "samples, times or old", value);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "heap") == 0) {
        if (strcmp(value, "dump") == 0) o->heap = HEAP_DUMP;
        else if (strcmp(value, "sites") == 0) o->heap = HEAP_SITES;
        else if (strcmp(value, "all") == 0) o->heap = HEAP_ALL;
        else {
            set_err(err, errlen, "hprof: bad value '%s' for option 'heap': accepted values are "
                    "dump, sites or all", value);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "format") == 0) {
        if (strcmp(value, "a") != 0 && strcmp(value, "b") != 0) {
            set_err(err, errlen, "hprof: bad value '%s' for option 'format': accepted values are "
                    "a (text) or b (binary)", value);
            return -1;
        }
        o->format = value[0];
        return 0;
    }
    if (strcmp(name, "monitor") == 0) return parse_yes_no(name, value, &o->monitor, err, errlen);
    if (strcmp(name, "lineno") == 0)  return parse_yes_no(name, value, &o->lineno, err, errlen);
    if (strcmp(name, "thread") == 0)  return parse_yes_no(name, value, &o->thread, err, errlen);
    if (strcmp(name, "native") == 0)  return parse_yes_no(name, value, &o->native, err, errlen);
    if (strcmp(name, "doe") == 0)     return parse_yes_no(name, value, &o->doe, err, errlen);
    if (strcmp(name, "force") == 0)   return parse_yes_no(name, value, &o->force, err, errlen);
    if (strcmp(name, "verbose") == 0) {
        /* all: y and what only the agent's developers and bug reports need. */
        if (strcmp(value, "all") == 0) {
            o->verbose = 2;
            return 0;
        }
        return parse_yes_no(name, value, &o->verbose, err, errlen);
    }
    if (strcmp(name, "msa") == 0) {
        int msa = 0;
        if (parse_yes_no(name, value, &msa, err, errlen) != 0)
            return -1;
        if (msa) {
            set_err(err, errlen, "hprof: option 'msa=y' (Solaris micro state accounting) is not "
                    "supported on this platform; use msa=n or leave it out");
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "depth") == 0)
        return parse_int(name, value, 0, OPTIONS_MAX_DEPTH, &o->depth, "a stack depth", err, errlen);
    if (strcmp(name, "interval") == 0)
        return parse_int(name, value, 1, 3600000, &o->interval_ms, "milliseconds", err, errlen);
    if (strcmp(name, "wall") == 0)
        return parse_int(name, value, 0, 60000, &o->wall_ms, "milliseconds of wall time between samples "
                         "(0: off)", err, errlen);
    if (strcmp(name, "cutoff") == 0) {
        char *end = NULL;
        errno = 0;
        double c = strtod(value, &end);
        if (value[0] == '\0' || *end != '\0' || errno != 0 || !(c >= 0.0 && c <= 1.0)) {
            set_err(err, errlen, "hprof: bad value '%s' for option 'cutoff': expected a fraction "
                    "from 0 to 1, e.g. cutoff=0.01 to leave out rows under 1%%", value);
            return -1;
        }
        o->cutoff = c;
        return 0;
    }
    if (strcmp(name, "file") == 0) {
        o->file_given = 1;
        return parse_path(name, value, o->file, err, errlen);
    }
    int format = format_index(name);
    if (format >= 0)
        return parse_path(name, value, o->outputs[format], err, errlen);
    if (strcmp(name, "deadlock") == 0)
        return parse_int(name, value, 0, 3600000, &o->deadlock_ms, "milliseconds between checks (0: "
                         "only at dumps)", err, errlen);
    if (strcmp(name, "sampler") == 0) {
        if (strcmp(value, "auto") != 0 && strcmp(value, "perf") != 0 && strcmp(value, "timer") != 0) {
            set_err(err, errlen, "hprof: bad value '%s' for option 'sampler': accepted values are "
                    "auto, perf or timer", value);
            return -1;
        }
        o->sampler = value[0];
        return 0;
    }
    if (strcmp(name, "heap_dumper") == 0) {
        if (strcmp(value, "auto") != 0 && strcmp(value, "jvm") != 0 && strcmp(value, "walk") != 0) {
            set_err(err, errlen, "hprof: bad value '%s' for option 'heap_dumper': accepted values are "
                    "auto, jvm or walk", value);
            return -1;
        }
        o->heap_dumper = value[0];
        return 0;
    }
    if (strcmp(name, "heap_sample") == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = value[0] >= '0' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
        unsigned long long unit = 1;
        if (end && (*end == 'k' || *end == 'K')) unit = 1024, end++;
        else if (end && (*end == 'm' || *end == 'M')) unit = 1024 * 1024, end++;
        if (end == NULL || end == value || *end != '\0' || errno != 0 || v > (1ull << 31) / unit) {
            set_err(err, errlen, "hprof: bad value '%s' for option 'heap_sample': expected a size in "
                    "bytes up to 2g, with k or m for KiB or MiB, e.g. heap_sample=512k (0: every "
                    "allocation)", value);
            return -1;
        }
        o->heap_sample = v * unit;
        return 0;
    }
    if (strcmp(name, "net") == 0)
        return parse_net(value, o->net, err, errlen);
    if (strcmp(name, "jdk") == 0) {
        if (strcmp(value, "all") == 0)
            o->jdk_calls = JDK_CALLS_ALL;
        else if (strcmp(value, "boundary") == 0)
            o->jdk_calls = JDK_CALLS_BOUNDARY;
        else if (strcmp(value, "none") == 0)
            o->jdk_calls = JDK_CALLS_NONE;
        else {
            set_err(err, errlen, "hprof: bad value '%s' for option 'jdk': accepted values are all (every "
                    "call of the JDK's methods), boundary (only those made from outside the JDK) or none "
                    "(the JDK's classes not timed)", value);
            return -1;
        }
        return 0;
    }
    if (strncmp(name, "loop", 4) == 0 && (name[4] == '\0' || name[4] == '_'))
        return parse_loop(o, name, value, err, errlen);
    if (strcmp(name, "include") == 0)
        return class_filter_parse(name, value, &o->include, err, errlen);
    if (strcmp(name, "exclude") == 0)
        return class_filter_parse(name, value, &o->exclude, err, errlen);

    const char *near = nearest_option(name);
    if (near != NULL)
        set_err(err, errlen, "hprof: unknown option '%s': did you mean '%s'? (run with -agentlib:hprof=help "
                "for every option)", name, near);
    else
        set_err(err, errlen, "hprof: unknown option '%s'. Options are: %s (run with -agentlib:hprof=help for "
                "details)", name, option_list());
    return -1;
}

const char *options_output(const hprof_options *o, const char *name)
{
    int i = format_index(name);
    return i < 0 ? "" : o->outputs[i];
}

int options_want_stacks(const hprof_options *o)
{
    for (uint32_t i = 0; i < format_count(); i++)
        if (o->outputs[i][0])
            return 1;
    return 0;
}

/* The profiles these options make, as FORMAT_SHOWS_* bits. */
static unsigned profiles_made(const hprof_options *o)
{
    return (o->cpu == CPU_SAMPLES ? FORMAT_SHOWS_CPU_SAMPLES : 0) |
           (o->cpu == CPU_TIMES ? FORMAT_SHOWS_CPU_TIMES : 0) |
           (o->heap == HEAP_SITES || o->heap == HEAP_ALL ? FORMAT_SHOWS_ALLOC_SITES : 0) |
           (o->monitor ? FORMAT_SHOWS_MONITORS : 0) | (o->wall_ms ? FORMAT_SHOWS_WALL : 0);
}

/* Each format's option asks for profiles these options make. */
static int check_outputs(const hprof_options *o, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < format_count(); i++) {
        const output_format *f = format_at(i);
        if (o->outputs[i][0] == '\0')
            continue;
        if (o->cpu == CPU_OLD) {
            set_err(err, errlen, "hprof: option '%s=' cannot be used with cpu=old (the old prof format "
                    "has traces of two frames); use cpu=times", f->name);
            return -1;
        }
        if ((profiles_made(o) & f->shows) == 0) {
            char shows[128], first[32];
            format_shows_options(f->shows, shows, sizeof shows);
            snprintf(first, sizeof first, "%.*s", (int)strcspn(shows, ", "), shows);
            int one = strchr(shows, ' ') == NULL;
            set_err(err, errlen, "hprof: option '%s=' shows the stacks of %s, and %s%s; add %s, "
                    "e.g. %s,%s=%s", f->name, shows, one ? "it is not on" : "none of them is on",
                    f->shows & FORMAT_SHOWS_CPU_TIMES ? " (cpu=old has none)" : "", one ? "it" : "one",
                    first, f->name, o->outputs[i]);
            return -1;
        }
    }
    return 0;
}

int options_parse(const char *text, hprof_options *out, char *err, size_t errlen)
{
    defaults(out);
    if (err && errlen)
        err[0] = '\0';
    if (text == NULL || text[0] == '\0')
        goto finish;

    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        set_err(err, errlen, "hprof: out of memory while reading the options");
        return -1;
    }
    memcpy(copy, text, len + 1);

    int rc = 0;
    char *p = copy;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p == '\0') {
            set_err(err, errlen, "hprof: empty option in '%s' (two commas, or a comma at an end)",
                    text);
            rc = -1;
            break;
        }
        char *eq = strchr(p, '=');
        char *value = NULL;
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        if (parse_one(out, p, value, err, errlen) != 0) {
            rc = -1;
            break;
        }
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    free(copy);
    if (rc != 0)
        return -1;

finish:
    /* HPROF: with none of cpu=, heap=, monitor= (nor wall=) the default is heap=all. */
    if (!out->help && out->cpu == CPU_OFF && out->heap == HEAP_OFF && !out->monitor && !out->wall_ms)
        out->heap = HEAP_ALL;
    if (out->format == 'b' && (out->cpu == CPU_TIMES || out->cpu == CPU_OLD)) {
        set_err(err, errlen, "hprof: option 'format=b' cannot be used with 'cpu=%s' (as in HPROF): %s is "
                "written in the text format only; use format=a", out->cpu == CPU_OLD ? "old" : "times",
                out->cpu == CPU_OLD ? "the old prof format" : "CPU TIME");
        return -1;
    }
    if (out->format == 'b' && out->wall_ms) {
        set_err(err, errlen, "hprof: option 'wall=' cannot be used with 'format=b': WALL SAMPLES is "
                "written in the text format only (and as pprof=, flamegraph=, collapsed=); use format=a");
        return -1;
    }
    if (out->format == 'b' && out->monitor) {
        set_err(err, errlen, "hprof: option 'format=b' cannot be used with 'monitor=y' "
                "(as in HPROF); use format=a");
        return -1;
    }
    if (out->heap_sample && out->heap != HEAP_SITES && out->heap != HEAP_ALL) {
        set_err(err, errlen, "hprof: option 'heap_sample=' needs heap=sites or heap=all");
        return -1;
    }
    if (out->heap_dumper == 'j' && (out->heap == HEAP_OFF || out->heap == HEAP_SITES || out->format != 'b' ||
                                    out->cpu != CPU_OFF)) {
        set_err(err, errlen, "hprof: option 'heap_dumper=jvm' needs heap=dump or heap=all with format=b and no "
                "cpu=: the JVM's dumper writes binary dumps only, and names classes by ids of its own that "
                "cpu='s records would name again");
        return -1;
    }
    if (check_outputs(out, err, errlen) != 0)
        return -1;
    if (out->jdk_calls != JDK_CALLS_ALL && out->cpu != CPU_TIMES && out->cpu != CPU_OLD) {
        set_err(err, errlen, "hprof: option 'jdk=%s' chooses the calls cpu=times records, and cpu=times "
                "is not on; add cpu=times", out->jdk_calls == JDK_CALLS_NONE ? "none" : "boundary");
        return -1;
    }
    if ((out->include.n || out->exclude.n) && out->cpu != CPU_TIMES && out->cpu != CPU_OLD) {
        set_err(err, errlen, "hprof: option '%s=' chooses the classes cpu=times times, and cpu=times is not "
                "on; add cpu=times (cpu=samples and heap=sites see every class)",
                out->include.n ? "include" : "exclude");
        return -1;
    }
    if (out->deadlock_ms && !out->monitor) {
        set_err(err, errlen, "hprof: option 'deadlock=' needs monitor=y");
        return -1;
    }
    if (!out->file_given)
        strcpy(out->file, out->format == 'b' ? "java.hprof" : "java.hprof.txt");
    return check_loop(out, err, errlen);
}

int options_check_implemented(const hprof_options *o, char *err, size_t errlen)
{
    (void)o;
    (void)err;
    (void)errlen;
    /* Every HPROF option is built now; a feature parsed but not built
     * would be refused here, at start-up, with a message naming it. */
    return 0;
}

/* ------------------------------------------------------------ commands */

static const char *const command_names[] = { "start", "stop", "dump", "reset", "status" };

const char *command_name(agent_command c)
{
    return (unsigned)c < sizeof command_names / sizeof command_names[0] ? command_names[c] : "?";
}

int command_parse(const char *text, command_request *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    if (text == NULL)
        return 0;
    const char *p = text;
    /* The command word: a first item without '=' that names a command. */
    size_t first = strcspn(p, ",");
    for (unsigned i = 0; i < sizeof command_names / sizeof command_names[0]; i++) {
        if (first == strlen(command_names[i]) && strncmp(p, command_names[i], first) == 0) {
            out->command = (agent_command)i;
            out->command_given = 1;
            p += first;
            if (*p == ',')
                p++;
            break;
        }
    }
    /* reply= can be anywhere; everything else is kept in order. */
    size_t used = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 6 && strncmp(p, "reply=", 6) == 0) {
            if (len - 6 >= sizeof out->reply || p[6] != '/') {
                set_err(err, errlen, "hprof: bad value for 'reply': expected an absolute path "
                        "shorter than %d bytes", (int)sizeof out->reply);
                return -1;
            }
            memcpy(out->reply, p + 6, len - 6);
            out->reply[len - 6] = '\0';
        } else {
            if (used + len + 2 > sizeof out->options) {
                set_err(err, errlen, "hprof: the options are too long (%zu bytes at most)",
                        sizeof out->options - 1);
                return -1;
            }
            if (used)
                out->options[used++] = ',';
            memcpy(out->options + used, p, len);
            used += len;
            out->options[used] = '\0';
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int command_check(const command_request *req, const hprof_options *given, char *err, size_t errlen)
{
    if (req->command == COMMAND_START || req->options[0] == '\0')
        return 0;
    if ((req->command == COMMAND_STOP || req->command == COMMAND_DUMP) &&
        strncmp(req->options, "file=", 5) == 0 && strchr(req->options, ',') == NULL && given->file_given)
        return 0;
    set_err(err, errlen, "hprof: '%s' takes %s, not '%s'", command_name(req->command),
            req->command == COMMAND_STOP || req->command == COMMAND_DUMP
                ? "only file=PATH (a complete report written to a new file)" : "no options",
            req->options);
    return -1;
}
