/*
 * HPROF's option syntax: "name=value,name=value,...", same names and defaults
 * as the JDK 5-8 agent, plus our own additions: an option per output format
 * of src/profile/formats.c (collapsed=, pprof=, flamegraph=, jfr=), ...
 * Pure C: no JVMTI here, so the parser is unit-tested on strings alone.
 */
#ifndef HPROF_OPTIONS_H
#define HPROF_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { CPU_OFF = 0, CPU_SAMPLES, CPU_TIMES, CPU_OLD } cpu_mode;
typedef enum { HEAP_OFF = 0, HEAP_DUMP, HEAP_SITES, HEAP_ALL } heap_mode;

#include "class_filter.h"
#include "../profile/formats.h"

#define OPTIONS_PATH_MAX   4096
#define OPTIONS_MAX_DEPTH  256        /* frames recorded per sample */

/* jdk=: the JDK's methods are those of the boot and platform loaders' classes. */
enum {
    JDK_CALLS_ALL,        /* every call (HPROF's meaning) */
    JDK_CALLS_BOUNDARY,   /* only those made from outside the JDK, timed with the JDK's work below */
    JDK_CALLS_NONE,       /* none: the JDK's classes are not instrumented; their time is their caller's */
};

typedef struct hprof_options {
    int       help;                   /* "help": print usage and exit */
    cpu_mode  cpu;
    heap_mode heap;
    int       monitor;                /* monitor=y */
    char      format;                 /* 'a' text, 'b' binary */
    char      file[OPTIONS_PATH_MAX]; /* file=; default depends on format */
    int       file_given;
    char      net[OPTIONS_PATH_MAX];  /* net=host:port, "" when off */
    int       depth;                  /* frames per TRACE */
    int       interval_ms;            /* sampling interval */
    double    cutoff;                 /* rows below this share are left out */
    int       lineno;                 /* line numbers in traces */
    int       thread;                 /* thread serial in traces */
    int       doe;                    /* dump on exit */
    int       force;                  /* overwrite file= (n: add the pid) */
    int       verbose;                /* messages about dumps on stderr; 2 (all): also internal
                                         counters and each class left uninstrumented */
    char      outputs[FORMATS_MAX][OPTIONS_PATH_MAX]; /* format_at(i)'s file (name=FILE), "" when off */
    char      sampler;                /* 'a' auto, 'p' perf events, 't' POSIX timers */
    int       native;                 /* cpu=samples: every thread, native frames (native=y) */
    int       wall_ms;                /* wall=: wall-clock sampling interval, 0 = off */
    uint64_t  heap_sample;            /* heap=sites: sample one allocation per this many bytes, 0 = every one */
    char      heap_dumper;            /* heap_dumper=: 'a' auto (the JVM's for heap=dump, the walk for
                                         heap=all), 'j' the JVM's own dumper, 'w' the agent's walk */
    int       deadlock_ms;            /* monitor=y: check for deadlocks this often, 0 = only at dumps */
    int       jdk_calls;              /* cpu=times: which of the JDK's calls it records (JDK_CALLS_*) */
    class_filter include;             /* cpu=times: time only these classes (n 0: all) */
    class_filter exclude;             /* cpu=times: and not these */
    uint32_t  loop_ms;                /* loop=: every output a series of files, one per this many ms; 0 = off */
    uint32_t  loop_keep;              /* loop_keep=: the files of the last this many periods kept; 0 = all */
    int       loop_cumulative;        /* loop_mode=cumulative: each file since the start, not its period alone */
    int       loop_mode_given;        /* loop_mode= was given (it needs loop=) */
} hprof_options;

/* The file the option of format `name` (pprof, flamegraph, ...) names: ""
 * when it is off or no format is so called. */
const char *options_output(const hprof_options *o, const char *name);

/* Does any output of whole stacks (a format's option: pprof=, flamegraph=,
 * ...) want the collectors to walk up to 256 frames instead of depth=? */
int options_want_stacks(const hprof_options *o);

/* Parse an option string (may be NULL or empty). Returns 0 on success;
 * on error returns -1 and writes into err a message that names the option
 * and the accepted values. */
int options_parse(const char *text, hprof_options *out, char *err, size_t errlen);

/* Which of the requested features this build does not implement yet:
 * returns 0 if all are available, else -1 with a message in err. */
int options_check_implemented(const hprof_options *o, char *err, size_t errlen);

/* ---- run-time commands ----
 * The options string of a load (start-up, attach, or a later
 * `jcmd <pid> JVMTI.agent_load` of the same library) may begin with a
 * command word, and may carry reply=PATH, where the `hprof` command waits
 * for the agent's answer. The rest are ordinary options. */
typedef enum { COMMAND_START = 0, COMMAND_STOP, COMMAND_DUMP, COMMAND_RESET, COMMAND_STATUS } agent_command;

typedef struct command_request {
    agent_command command;
    int           command_given;          /* the word was there (else: start) */
    char          reply[OPTIONS_PATH_MAX];/* reply=, "" when absent */
    char          options[2 * OPTIONS_PATH_MAX + 1024];  /* the options that remain */
} command_request;

/* Split a load's options string. 0, or -1 with a message naming the part
 * that is wrong (a command's options are checked by command_check). */
int command_parse(const char *text, command_request *out, char *err, size_t errlen);
/* Options a command may take: start, every option; stop and dump, file=
 * (dump: a complete report to a new file); reset and status, none.
 * 0, or -1 with a message. */
int command_check(const command_request *req, const hprof_options *given, char *err, size_t errlen);
const char *command_name(agent_command c);

/* The usage text printed by "help". */
const char *options_usage(void);

#endif
