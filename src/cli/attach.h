/*
 * A client of HotSpot's attach mechanism on Linux, in C, for build/hprof:
 * what jcmd and the Attach API do, without a JDK.
 *
 * The order of use, each step reporting a one-line error:
 *   attach_inspect()          the process: does it exist, is it a JVM, may we
 *                             attach to it (its user), where its files are
 *   attach_become_jvm_user()  root only: act as the JVM's user from here on
 *   attach_check_enabled()    the JVM's hsperfdata: attach not disabled
 *   attach_execute()          trigger the attach listener if needed (SIGQUIT),
 *                             connect, send one operation, read its answer
 *   attach_parse_load_answer() what a `load` answer means
 *
 * The checks come before any signal on purpose: SIGQUIT kills a process that
 * is not a JVM (with a core dump), and makes a JVM whose attach mechanism is
 * disabled print a thread dump into the application's standard output.
 *
 * The protocol (version 1, understood by every HotSpot since JDK 6): connect
 * to the UNIX socket /tmp/.java_pid<pid> in the JVM's filesystem; send "1",
 * the operation's name and exactly three arguments, each NUL-terminated; the
 * JVM answers with a line holding the operation's status (0 = done), then
 * the operation's output, and closes the connection.
 *
 * The pure parts (attach_parse_proc_status, attach_scan_maps,
 * attach_build_request, attach_parse_load_answer) only touch their
 * arguments and are unit-tested (tests/unit/test_attach.c).
 */
#ifndef HPROF_CLI_ATTACH_H
#define HPROF_CLI_ATTACH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* HotSpot (JDK 17 and 25 alike) closes the connection without an answer
 * when an argument is longer than this many bytes, or the name longer than 16. */
#define ATTACH_ARG_MAX       1024
#define ATTACH_OP_NAME_MAX   16
#define ATTACH_ARG_COUNT     3

/* What build/hprof knows about the process it attaches to. */
typedef struct attach_target {
    pid_t pid;              /* as we see it */
    pid_t nspid;            /* in the JVM's own pid namespace: its files are named with this */
    pid_t tgid;             /* the process the pid belongs to (differs for a thread's id) */
    uid_t uid;              /* the JVM's effective user and group */
    gid_t gid;
    char  name[64];         /* process name, for messages */
    int   has_libjvm;       /* libjvm.so is mapped: it is a HotSpot JVM */
    /* The hsperfdata file the JVM has mapped, as the JVM names it (e.g.
     * /tmp/hsperfdata_bob/1234), "" if it maps none (-XX:-UsePerfData). */
    char  perfdata_path[PATH_MAX];
    int   perfdata_deleted; /* the mapped file was removed from its directory */
    int   has_libhprof;     /* the profiler's agent, libhprof.so, is mapped */
    /* The JVMPI layer's libjvmpi.so as the JVM maps it, "" if it maps none:
     * commands then go to it unless another agent is named. */
    char  jvmpi_path[PATH_MAX];
} attach_target;

/* Fills t from /proc/<pid>/status and /proc/<pid>/maps and checks that the
 * process is a JVM and that we may attach to it: 0, or -1 with err set
 * ("no process 123", "process 123 (sleep) is not a Java VM (...)",
 * a user mismatch naming both users, ...). Sends nothing. */
int attach_inspect(pid_t pid, attach_target *t, char *err, size_t err_size);

/* As root attaching to another user's JVM: switches the effective group and
 * user to the JVM's (setegid, then seteuid), so the files we create belong to
 * the JVM's user and HotSpot sees its own user connect. Does nothing for a
 * JVM of our own user. 0, or -1 with err set. */
int attach_become_jvm_user(const attach_target *t, char *err, size_t err_size);

/* Reads the JVM's hsperfdata and refuses (-1, err set) if its capabilities
 * say the attach mechanism is disabled (-XX:+DisableAttachMechanism), or if
 * the file exists but cannot be made sense of. A JVM without the file
 * (-XX:-UsePerfData) passes: there is nothing to tell. */
int attach_check_enabled(const attach_target *t, char *err, size_t err_size);

/* Checks that the JVM (as its user, in its filesystem) can open the file
 * `path` that we see, and that it is the same file: 0, or -1 with err set.
 * Call after attach_become_jvm_user(), so the check runs as the JVM's user;
 * HotSpot itself only says "<path> was not loaded" with dlopen's reason. */
int attach_check_library(const attach_target *t, const char *path, char *err, size_t err_size);

/* The path under which we reach a file that the JVM names jvm_path (a path
 * in its own filesystem, e.g. "/tmp/x"): /proc/<pid>/root<jvm_path>.
 * 0, or -1 if it does not fit. */
int attach_path_in_jvm(const attach_target *t, const char *jvm_path, char *out, size_t out_size);

/* Runs one attach operation: makes sure the JVM's attach listener runs
 * (if its socket is missing: create the .attach_pid trigger file, send
 * SIGQUIT, wait up to 10 s for the socket, remove the file), checks the
 * socket belongs to the JVM's user, connects, sends op and args (NULL ones
 * are sent as empty strings) and reads the answer until the JVM closes the
 * connection. On 0, *answer is a malloc'ed NUL-terminated copy of the
 * answer (length *answer_len), to be freed by the caller; -1 with err set
 * otherwise. */
int attach_execute(const attach_target *t, const char *op, const char *const args[ATTACH_ARG_COUNT],
                   char **answer, size_t *answer_len, char *err, size_t err_size);

/* --- pure parts, unit-tested --- */

/* Parses the text of /proc/<pid>/status into t (tgid, nspid, uid, gid,
 * name): 0, or -1 if a needed line (Tgid, Uid, Gid) is missing or bad.
 * Without an NSpid line (kernels before 4.1) nspid is the tgid. */
int attach_parse_proc_status(const char *text, attach_target *t);

/* Scans the text of /proc/<pid>/maps: sets t->has_libjvm, has_libhprof,
 * jvmpi_path, and
 * t->perfdata_path / perfdata_deleted to the mapped hsperfdata file, the one
 * named after t->nspid (set t->nspid first). */
void attach_scan_maps(const char *text, attach_target *t);

/* Writes the request bytes for op and args into buf: "1\0<op>\0<a1>\0<a2>\0<a3>\0".
 * Returns its length, or -1 with err set if op or an argument is longer than
 * HotSpot accepts or buf is too small. */
long attach_build_request(const char *op, const char *const args[ATTACH_ARG_COUNT],
                          char *buf, size_t buf_size, char *err, size_t err_size);

typedef enum {
    LOAD_AGENT_RETURNED, /* Agent_OnAttach ran; agent_code is what it returned */
    LOAD_NOT_RUN,        /* HotSpot did not run the agent; message says why */
    LOAD_NO_ANSWER       /* empty or not an attach answer; message says what came */
} load_outcome;

typedef struct {
    load_outcome outcome;
    int  status;         /* the operation status line (LOAD_NO_ANSWER: 0) */
    int  agent_code;     /* LOAD_AGENT_RETURNED only */
    char message[1024];  /* HotSpot's text on one line ("" if none) */
} load_answer;

/*
 * Interprets the answer to a `load` operation. What HotSpot sends:
 *   Agent_OnAttach ran:          "0\nreturn code: <n>\n"  (JDK 9 and later;
 *                                JDK 8 sent "0\n<n>\n", also accepted)
 *   library not loadable, no Agent_OnAttach in it:
 *                                JDK 17: "-1\n<text>"  JDK 21+: "0\n<text>"
 *                                e.g. "/x.so was not loaded.\n/x.so: cannot open
 *                                shared object file: No such file or directory\n"
 *   dynamic loading disabled (JDK 21+, -XX:-EnableDynamicAgentLoading):
 *                                "0\nDynamic agent loading is not enabled. ..."
 */
void attach_parse_load_answer(const char *answer, size_t len, load_answer *out);

/* The agent options `options` (name=value,...) with every relative path of
 * file=, pprof=, flamegraph= and collapsed= made absolute under `cwd` (the
 * command's directory: the JVM's own may be anywhere), into out. 0, or -1
 * if out is too small. Pure. */
int attach_absolute_paths(const char *options, const char *cwd, char *out, size_t size);

#endif
