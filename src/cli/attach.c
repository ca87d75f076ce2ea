/*
 * HotSpot attach client for Linux (see attach.h for the protocol and the
 * order of the steps).
 *
 * Every file of the JVM is reached through /proc/<pid>/root, so a JVM in a
 * container (another mount namespace) works the same as one beside us, and
 * files carry the pid the JVM knows itself by (NSpid), which differs from
 * ours when it runs in its own pid namespace.
 */
#include "cli/attach.h"

#include "cli/perfdata.h"
#include "cli/tempfiles.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* After SIGQUIT, HotSpot's signal thread sees the trigger file and starts the
 * attach listener, which creates the socket: about 20 ms on an idle JVM; a
 * JVM busy in a long safepoint can take seconds. */
#define TRIGGER_POLL_MS      20
#define TRIGGER_TIMEOUT_MS   10000
/* An operation's answer arrives when it is done; a heap dump in the agent
 * can take minutes, a JVM that never answers must not hang us for ever. */
#define ANSWER_TIMEOUT_MS    (300 * 1000)
/* /proc/<pid>/maps of a big JVM runs to megabytes; answers and hsperfdata
 * files beyond these sizes are not what we are looking for. */
#define MAPS_MAX_BYTES       (256u << 20)
#define ANSWER_MAX_BYTES     (64u << 20)
#define PERFDATA_MAX_BYTES   (64u << 20)
/* While the JVM is starting, its hsperfdata may lack the capabilities
 * counter: look again this often, this many times. */
#define PERFDATA_RETRY_MS    50
#define PERFDATA_RETRIES     20

#define CAPABILITIES_COUNTER "sun.rt.jvmCapabilities"

static int fail(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Reads a whole file (also /proc files, whose size stat reports as 0) into a
 * malloc'ed NUL-terminated buffer: 0, or -1 with errno set (EFBIG past
 * max_bytes). */
static int read_whole_file(const char *path, size_t max_bytes, char **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t cap = 8192, used = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        if (used + 1 >= cap) {
            if (cap >= max_bytes) {
                free(buf);
                close(fd);
                errno = EFBIG;
                return -1;
            }
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                close(fd);
                errno = ENOMEM;
                return -1;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            free(buf);
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    *data = buf;
    *len = used;
    return 0;
}

/* "alice (uid 1000)", or "uid 1000" for a user without a name here. */
static void describe_user(uid_t uid, char *out, size_t out_size)
{
    const struct passwd *pw = getpwuid(uid);
    if (pw != NULL)
        snprintf(out, out_size, "%s (uid %u)", pw->pw_name, (unsigned)uid);
    else
        snprintf(out, out_size, "uid %u", (unsigned)uid);
}

static void describe_group(gid_t gid, char *out, size_t out_size)
{
    const struct group *gr = getgrgid(gid);
    if (gr != NULL)
        snprintf(out, out_size, "%s (gid %u)", gr->gr_name, (unsigned)gid);
    else
        snprintf(out, out_size, "gid %u", (unsigned)gid);
}

/* ------------------------------------------------------------ pure parts */

/* The value of the "<key>:" line of a /proc status text, or NULL. */
static const char *status_field(const char *text, const char *key)
{
    size_t key_len = strlen(key);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, key, key_len) == 0 && line[key_len] == ':')
            return line + key_len + 1;
        line = strchr(line, '\n');
        if (line != NULL)
            line++;
    }
    return NULL;
}

/* Parses up to max whitespace-separated unsigned numbers from the rest of a
 * line: how many were read. */
static int parse_numbers(const char *p, unsigned long *values, int max)
{
    int n = 0;
    while (n < max) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            break;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno != 0)
            break;
        values[n++] = v;
        p = end;
    }
    return n;
}

int attach_parse_proc_status(const char *text, attach_target *t)
{
    unsigned long v[8];
    const char *name = status_field(text, "Name");
    const char *tgid = status_field(text, "Tgid");
    const char *uid = status_field(text, "Uid");
    const char *gid = status_field(text, "Gid");
    const char *nspid = status_field(text, "NSpid");
    /* Uid and Gid list real, effective, saved and filesystem ids: HotSpot
     * compares a client with its effective ones. */
    if (tgid == NULL || parse_numbers(tgid, v, 1) != 1 || v[0] == 0 || v[0] > INT_MAX)
        return -1;
    t->tgid = (pid_t)v[0];
    if (uid == NULL || parse_numbers(uid, v, 4) < 2)
        return -1;
    t->uid = (uid_t)v[1];
    if (gid == NULL || parse_numbers(gid, v, 4) < 2)
        return -1;
    t->gid = (gid_t)v[1];
    /* NSpid lists the pid in each nested namespace, the JVM's own last. */
    t->nspid = t->tgid;
    if (nspid != NULL) {
        int n = parse_numbers(nspid, v, 8);
        if (n > 0 && v[n - 1] > 0 && v[n - 1] <= INT_MAX)
            t->nspid = (pid_t)v[n - 1];
    }
    t->name[0] = '\0';
    if (name != NULL) {
        while (*name == ' ' || *name == '\t')
            name++;
        size_t len = strcspn(name, "\n");
        if (len >= sizeof t->name)
            len = sizeof t->name - 1;
        memcpy(t->name, name, len);
        t->name[len] = '\0';
    }
    return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

void attach_scan_maps(const char *text, attach_target *t)
{
    static const char DELETED[] = " (deleted)";
    char nspid_name[24];
    snprintf(nspid_name, sizeof nspid_name, "/%d", (int)t->nspid);
    t->has_libjvm = 0;
    t->has_libhprof = 0;
    t->jvmpi_path[0] = '\0';
    t->perfdata_path[0] = '\0';
    t->perfdata_deleted = 0;
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        size_t line_len = eol != NULL ? (size_t)(eol - line) : strlen(line);
        /* "start-end perms offset dev inode   path": the path, if any,
         * starts at the first '/' (nothing before it contains one). */
        const char *path = memchr(line, '/', line_len);
        if (path != NULL) {
            size_t len = line_len - (size_t)(path - line);
            int deleted = ends_with(path, len, DELETED);
            if (deleted)
                len -= sizeof DELETED - 1;
            if (ends_with(path, len, "/libjvm.so"))
                t->has_libjvm = 1;
            if (ends_with(path, len, "/libhprof.so"))
                t->has_libhprof = 1;
            if (ends_with(path, len, "/libjvmpi.so") && !deleted && len < sizeof t->jvmpi_path) {
                memcpy(t->jvmpi_path, path, len);
                t->jvmpi_path[len] = '\0';
            }
            /* .../hsperfdata_<user>/<nspid>: the JVM's own file. */
            size_t name_len = strlen(nspid_name);
            if (ends_with(path, len, nspid_name) && len < sizeof t->perfdata_path) {
                const char *dir_end = path + len - name_len;
                const char *dir = dir_end;
                while (dir > path && dir[-1] != '/')
                    dir--;
                if ((size_t)(dir_end - dir) > 11 && strncmp(dir, "hsperfdata_", 11) == 0) {
                    memcpy(t->perfdata_path, path, len);
                    t->perfdata_path[len] = '\0';
                    t->perfdata_deleted = deleted;
                }
            }
        }
        line = eol != NULL ? eol + 1 : NULL;
    }
}

long attach_build_request(const char *op, const char *const args[ATTACH_ARG_COUNT],
                          char *buf, size_t buf_size, char *err, size_t err_size)
{
    const char *parts[2 + ATTACH_ARG_COUNT] = { "1", op };
    for (int i = 0; i < ATTACH_ARG_COUNT; i++)
        parts[2 + i] = args != NULL && args[i] != NULL ? args[i] : "";
    if (strlen(op) > ATTACH_OP_NAME_MAX)
        return fail(err, err_size, "operation name '%s' is longer than HotSpot's %d bytes", op,
                    ATTACH_OP_NAME_MAX);
    size_t used = 0;
    for (int i = 0; i < 2 + ATTACH_ARG_COUNT; i++) {
        size_t len = strlen(parts[i]);
        if (i >= 2 && len > ATTACH_ARG_MAX)
            return fail(err, err_size, "argument %d of '%s' is %zu bytes long; HotSpot accepts at most %d",
                        i - 1, op, len, ATTACH_ARG_MAX);
        if (len + 1 > buf_size - used)
            return fail(err, err_size, "request for '%s' does not fit in %zu bytes", op, buf_size);
        memcpy(buf + used, parts[i], len + 1);
        used += len + 1;
    }
    return (long)used;
}

/* Parses an optionally negative decimal number that fills the whole line
 * [p, end): 0 and *value, or -1. */
static int parse_int_line(const char *p, const char *end, int *value)
{
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p == end || end - p > 9)
        return -1;
    int v = 0;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    *value = negative ? -v : v;
    return 0;
}

/* HotSpot's text on one line: line breaks and tabs become single spaces,
 * other control characters '?', ends trimmed. */
static void one_line(const char *p, const char *end, char *out, size_t out_size)
{
    size_t n = 0;
    int pending_space = 0;
    for (; p < end && n + 2 < out_size; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
            pending_space = n > 0;
            continue;
        }
        if (pending_space) {
            out[n++] = ' ';
            pending_space = 0;
        }
        out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[n] = '\0';
}

void attach_parse_load_answer(const char *answer, size_t len, load_answer *out)
{
    static const char RETURN_CODE[] = "return code: ";
    memset(out, 0, sizeof *out);
    const char *end = answer + len;
    const char *eol = memchr(answer, '\n', len);
    const char *status_end = eol != NULL ? eol : end;
    if (len == 0) {
        out->outcome = LOAD_NO_ANSWER;
        snprintf(out->message, sizeof out->message, "the JVM closed the connection without an answer");
        return;
    }
    if (parse_int_line(answer, status_end, &out->status) != 0) {
        out->outcome = LOAD_NO_ANSWER;
        char first[200];
        one_line(answer, status_end, first, sizeof first);
        snprintf(out->message, sizeof out->message, "not an attach answer: '%s'", first);
        return;
    }
    const char *rest = eol != NULL ? eol + 1 : end;
    if (out->status != 0) {
        /* JDK 17 refuses a library it cannot load with status -1 and says why. */
        out->outcome = LOAD_NOT_RUN;
        one_line(rest, end, out->message, sizeof out->message);
        if (out->message[0] == '\0')
            snprintf(out->message, sizeof out->message, "the JVM answered status %d without saying why",
                     out->status);
        return;
    }
    const char *line_end = memchr(rest, '\n', (size_t)(end - rest));
    if (line_end == NULL)
        line_end = end;
    size_t prefix_len = sizeof RETURN_CODE - 1;
    if ((size_t)(line_end - rest) > prefix_len && memcmp(rest, RETURN_CODE, prefix_len) == 0
        && parse_int_line(rest + prefix_len, line_end, &out->agent_code) == 0) {
        out->outcome = LOAD_AGENT_RETURNED;
        return;
    }
    if (line_end > rest && parse_int_line(rest, line_end, &out->agent_code) == 0) {
        out->outcome = LOAD_AGENT_RETURNED;  /* JDK 8's bare number */
        return;
    }
    /* Status 0 without a return code: JDK 21 and later report a library they
     * could not load, or dynamic loading being disabled, this way. */
    one_line(rest, end, out->message, sizeof out->message);
    out->outcome = out->message[0] != '\0' ? LOAD_NOT_RUN : LOAD_NO_ANSWER;
    if (out->outcome == LOAD_NO_ANSWER)
        snprintf(out->message, sizeof out->message, "the JVM answered status 0 but no return code");
}

/* ------------------------------------------------------------ the process */

int attach_path_in_jvm(const attach_target *t, const char *jvm_path, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "/proc/%d/root%s", (int)t->pid, jvm_path);
    return n < 0 || (size_t)n >= out_size ? -1 : 0;
}

int attach_inspect(pid_t pid, attach_target *t, char *err, size_t err_size)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    char path[64];
    char *text;
    size_t len;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_whole_file(path, 1u << 20, &text, &len) != 0) {
        if (errno == ENOENT || errno == ESRCH)
            return fail(err, err_size, "no process %d", (int)pid);
        return fail(err, err_size, "cannot read %s: %s", path, strerror(errno));
    }
    int parsed = attach_parse_proc_status(text, t);
    free(text);
    if (parsed != 0)
        return fail(err, err_size, "cannot make sense of %s", path);
    if (t->tgid != pid)
        return fail(err, err_size, "%d is a thread of process %d; give the process id",
                    (int)pid, (int)t->tgid);

    /* HotSpot accepts a client whose effective user and group are its own,
     * or root; the kernel lets us read the process's maps and files under
     * the same condition. Say so plainly instead of failing further on. */
    uid_t me = geteuid();
    if (me != 0 && me != t->uid) {
        char them_s[96], me_s[96];
        describe_user(t->uid, them_s, sizeof them_s);
        describe_user(me, me_s, sizeof me_s);
        return fail(err, err_size,
                    "process %d (%s) belongs to user %s and you are %s: "
                    "only the JVM's own user or root can attach to it",
                    (int)pid, t->name, them_s, me_s);
    }
    if (me != 0 && getegid() != t->gid) {
        char them_s[96], me_s[96];
        describe_group(t->gid, them_s, sizeof them_s);
        describe_group(getegid(), me_s, sizeof me_s);
        return fail(err, err_size,
                    "process %d (%s) runs with group %s and you with group %s: "
                    "HotSpot accepts only its own user and group, or root",
                    (int)pid, t->name, them_s, me_s);
    }

    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    if (read_whole_file(path, MAPS_MAX_BYTES, &text, &len) != 0) {
        if (errno == ENOENT || errno == ESRCH)
            return fail(err, err_size, "no process %d", (int)pid);
        return fail(err, err_size, "cannot read %s: %s", path, strerror(errno));
    }
    attach_scan_maps(text, t);
    free(text);
    if (!t->has_libjvm)
        return fail(err, err_size, "process %d is not a Java VM (%s has no libjvm.so in %s)",
                    (int)pid, t->name[0] ? t->name : "it", path);
    return 0;
}

int attach_become_jvm_user(const attach_target *t, char *err, size_t err_size)
{
    if (geteuid() != 0 || t->uid == 0)
        return 0;  /* our own JVM, or root's: HotSpot accepts root as is */
    char who[96];
    describe_user(t->uid, who, sizeof who);
    /* Drop root's supplementary groups first, so that what we may read from
     * now on is what the JVM's user may (the agent library, for one). The
     * group goes before the user: after seteuid we could not change it. */
    if (setgroups(0, NULL) != 0 || setegid(t->gid) != 0 || seteuid(t->uid) != 0)
        return fail(err, err_size, "cannot act as the JVM's user %s: %s", who, strerror(errno));
    return 0;
}

int attach_check_library(const attach_target *t, const char *path, char *err, size_t err_size)
{
    char in_jvm[PATH_MAX + 32];
    if (attach_path_in_jvm(t, path, in_jvm, sizeof in_jvm) != 0)
        return fail(err, err_size, "path too long: %s", path);
    int fd = open(in_jvm, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int open_errno = errno;
        char who[96];
        describe_user(t->uid, who, sizeof who);
        if (open_errno == ENOENT || open_errno == ENOTDIR)
            return fail(err, err_size,
                        "the JVM %d cannot see %s: it runs in another filesystem (a container?); "
                        "put the library where the JVM sees it under the same path", (int)t->pid, path);
        return fail(err, err_size, "the JVM's user %s cannot read %s: %s", who, path, strerror(open_errno));
    }
    struct stat theirs, ours;
    int same = fstat(fd, &theirs) != 0 || stat(path, &ours) != 0
               || (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino);
    close(fd);
    if (!same)
        return fail(err, err_size,
                    "the JVM %d sees another file at %s (it runs in another filesystem, a container?)",
                    (int)t->pid, path);
    return 0;
}

/* Reads the hsperfdata file once and looks up the capabilities. */
static perfdata_status read_capabilities(const char *path, char *caps, size_t caps_size,
                                         char *why, size_t why_size, int *read_errno)
{
    char *data;
    size_t len;
    *read_errno = 0;
    if (read_whole_file(path, PERFDATA_MAX_BYTES, &data, &len) != 0) {
        *read_errno = errno;
        return PERFDATA_MALFORMED;
    }
    perfdata_status st = perfdata_find_string((const unsigned char *)data, len, CAPABILITIES_COUNTER,
                                              caps, caps_size, why, why_size);
    free(data);
    return st;
}

/* The attach socket's path as we reach it, into out (of size >= 128). */
static void socket_path_of(const attach_target *t, char *out, size_t out_size)
{
    snprintf(out, out_size, "/proc/%d/root/tmp/.java_pid%d", (int)t->pid, (int)t->nspid);
}

/* Connects a stream socket to the UNIX socket at path: the descriptor, or
 * -1 with errno set. */
static int connect_unix(const char *path)
{
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)&addr, sizeof addr) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Whether the JVM's attach listener already runs: its socket, of its user,
 * is there and takes a connection (a socket left by a dead process of the
 * same pid does not). Then attach works and no signal is needed. The
 * listener reads an empty request from the probe, drops it and goes on. */
static int listener_running(const attach_target *t)
{
    char path[128];
    struct stat st;
    socket_path_of(t, path, sizeof path);
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != t->uid)
        return 0;
    int fd = connect_unix(path);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

int attach_check_enabled(const attach_target *t, char *err, size_t err_size)
{
    if (t->perfdata_path[0] == '\0')
        return 0;  /* -XX:-UsePerfData: nothing to read, go on as jcmd would */

    char path[PATH_MAX + 32];
    if (attach_path_in_jvm(t, t->perfdata_path, path, sizeof path) != 0)
        return fail(err, err_size, "path too long: %s", t->perfdata_path);
    char doubt[PATH_MAX + 256] = "";  /* why the capabilities cannot be known */
    if (t->perfdata_deleted) {
        snprintf(doubt, sizeof doubt, "its performance data file %s was deleted", t->perfdata_path);
    } else {
        char caps[80], why[160];
        perfdata_status st = PERFDATA_NOT_READY;
        int read_errno = 0;
        for (int attempt = 0; attempt < PERFDATA_RETRIES; attempt++) {
            if (attempt > 0)
                sleep_ms(PERFDATA_RETRY_MS);
            st = read_capabilities(path, caps, sizeof caps, why, sizeof why, &read_errno);
            if (st != PERFDATA_NOT_READY && st != PERFDATA_NOT_FOUND)
                break;
        }
        if (read_errno != 0)
            return fail(err, err_size, "cannot read %s: %s", path, strerror(read_errno));
        if (st == PERFDATA_NOT_READY || st == PERFDATA_NOT_FOUND)
            return fail(err, err_size, "the JVM %d is still starting (no %s in %s yet); try again",
                        (int)t->pid, CAPABILITIES_COUNTER, path);
        /* One character per capability; the first is the attach mechanism. */
        if (st == PERFDATA_FOUND && caps[0] == '0')
            return fail(err, err_size,
                        "the JVM %d was started with -XX:+DisableAttachMechanism; it cannot be attached",
                        (int)t->pid);
        if (st == PERFDATA_FOUND && caps[0] == '1')
            return 0;
        if (st == PERFDATA_MALFORMED)
            snprintf(doubt, sizeof doubt, "%s: %s", path, why);
        else
            snprintf(doubt, sizeof doubt, "%s is '%.64s'", CAPABILITIES_COUNTER, caps);
    }
    /* A listener that runs proves attach enabled and needs no SIGQUIT:
     * only without one would we risk the signal on a JVM that may not
     * take it as a trigger. */
    if (listener_running(t))
        return 0;
    return fail(err, err_size, "cannot tell whether the JVM %d accepts attach: %s", (int)t->pid, doubt);
}

/* ------------------------------------------------------------ the socket */

/* Starts the JVM's attach listener: HotSpot starts it when a SIGQUIT finds a
 * file .attach_pid<pid> of the JVM's user (or root) in its working directory
 * or in /tmp; otherwise SIGQUIT only prints a thread dump. */
static int trigger_listener(const attach_target *t, const char *socket_path, char *err, size_t err_size)
{
    char name[32], cwd_dir[64], tmp_dir[64];
    snprintf(name, sizeof name, ".attach_pid%d", (int)t->nspid);
    snprintf(cwd_dir, sizeof cwd_dir, "/proc/%d/cwd", (int)t->pid);
    snprintf(tmp_dir, sizeof tmp_dir, "/proc/%d/root/tmp", (int)t->pid);

    /* The working directory may not be writable by the JVM's user (a
     * service started in /): /tmp is the fall-back HotSpot also looks at.
     * A trigger that exists already serves as well, but is not ours to
     * remove. The file is made through a descriptor of its directory, so
     * that it can be removed even if the JVM exits meanwhile. */
    const char *dirs[2] = { cwd_dir, tmp_dir };
    int dir_errno[2] = { 0, 0 };
    char trigger[96] = "";
    int dir_fd = -1, created = 0;
    for (int i = 0; i < 2 && dir_fd < 0; i++) {
        dir_fd = tempfiles_dir_path(dirs[i], name, trigger, sizeof trigger);
        if (dir_fd < 0) {
            dir_errno[i] = errno;
            continue;
        }
        int fd = tempfiles_create(trigger, 0600);
        if (fd >= 0) {
            close(fd);
            created = 1;
        } else if (errno != EEXIST) {
            dir_errno[i] = errno;
            close(dir_fd);
            dir_fd = -1;
        }
    }
    if (dir_fd < 0)
        return fail(err, err_size, "cannot create the attach trigger %s/%s (%s) nor %s/%s (%s)",
                    cwd_dir, name, strerror(dir_errno[0]), tmp_dir, name, strerror(dir_errno[1]));

    int result = 0;
    if (kill(t->pid, SIGQUIT) != 0) {
        result = fail(err, err_size, "cannot send SIGQUIT to %d: %s", (int)t->pid, strerror(errno));
    } else {
        long deadline = now_ms() + TRIGGER_TIMEOUT_MS;
        struct stat st;
        while (lstat(socket_path, &st) != 0) {
            if (kill(t->pid, 0) != 0 && errno == ESRCH) {
                result = fail(err, err_size, "the JVM %d exited while starting its attach listener",
                              (int)t->pid);
                break;
            }
            if (now_ms() >= deadline) {
                result = fail(err, err_size,
                              "the JVM %d did not open its attach socket %s within %d s of SIGQUIT",
                              (int)t->pid, socket_path, TRIGGER_TIMEOUT_MS / 1000);
                break;
            }
            sleep_ms(TRIGGER_POLL_MS);
        }
    }
    if (created)
        tempfiles_remove(trigger);
    close(dir_fd);
    return result;
}

/* Connects to the JVM's attach socket, starting the listener if needed. */
static int connect_listener(const attach_target *t, char *err, size_t err_size)
{
    char socket_path[128];
    socket_path_of(t, socket_path, sizeof socket_path);

    int triggered = 0;
    for (;;) {
        struct stat st;
        if (lstat(socket_path, &st) != 0) {
            if (errno != ENOENT || triggered)
                return fail(err, err_size, "cannot look at %s: %s", socket_path, strerror(errno));
            if (trigger_listener(t, socket_path, err, err_size) != 0)
                return -1;
            triggered = 1;
            continue;
        }
        /* /tmp is shared: a socket of another user under this name is not
         * the JVM's, and must not get our request (nor we its answer). */
        if (!S_ISSOCK(st.st_mode))
            return fail(err, err_size, "%s is not a socket; not connecting", socket_path);
        if (st.st_uid != t->uid) {
            char owner[96], jvm_user[96];
            describe_user(st.st_uid, owner, sizeof owner);
            describe_user(t->uid, jvm_user, sizeof jvm_user);
            return fail(err, err_size, "%s belongs to %s, not to the JVM's user %s; not connecting",
                        socket_path, owner, jvm_user);
        }
        int fd = connect_unix(socket_path);
        if (fd >= 0)
            return fd;
        /* Nobody listens on it: the socket was left by an earlier process
         * of this pid, killed before it could remove it (pids wrap around
         * fast). It is the JVM user's own file, which HotSpot would replace
         * anyway when its listener starts: remove it and start the listener. */
        if (errno == ECONNREFUSED && !triggered) {
            if (unlink(socket_path) != 0 && errno != ENOENT)
                return fail(err, err_size, "cannot remove the stale socket %s: %s", socket_path,
                            strerror(errno));
            continue;
        }
        return fail(err, err_size, "cannot connect to %s: %s", socket_path, strerror(errno));
    }
}

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        /* MSG_NOSIGNAL: a JVM that hangs up must give us an error, not a
         * SIGPIPE that would end us before the temporary files are removed. */
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until the JVM closes the connection (the end of its answer). */
static int read_answer(int fd, int pid, char **answer, size_t *answer_len, char *err, size_t err_size)
{
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return fail(err, err_size, "out of memory");
    long deadline = now_ms() + ANSWER_TIMEOUT_MS;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) {
            free(buf);
            return fail(err, err_size, "no answer from the JVM %d within %d s",
                        pid, ANSWER_TIMEOUT_MS / 1000);
        }
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int ready = poll(&pfd, 1, (int)left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0) {
            free(buf);
            return fail(err, err_size, "poll: %s", strerror(errno));
        }
        if (ready == 0)
            continue;  /* the deadline check above ends the wait */
        if (used + 1 >= cap) {
            char *bigger = cap < ANSWER_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (bigger == NULL) {
                free(buf);
                return fail(err, err_size, "the JVM's answer is too long");
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        /* A JVM that rejects a request resets the connection: that is the
         * end of its (empty) answer, which the caller reports. */
        if (n < 0 && errno != ECONNRESET) {
            int saved = errno;
            free(buf);
            return fail(err, err_size, "reading the JVM's answer: %s", strerror(saved));
        }
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    *answer = buf;
    *answer_len = used;
    return 0;
}

int attach_execute(const attach_target *t, const char *op, const char *const args[ATTACH_ARG_COUNT],
                   char **answer, size_t *answer_len, char *err, size_t err_size)
{
    char request[8 + ATTACH_OP_NAME_MAX + ATTACH_ARG_COUNT * (ATTACH_ARG_MAX + 1)];
    long request_len = attach_build_request(op, args, request, sizeof request, err, err_size);
    if (request_len < 0)
        return -1;
    int fd = connect_listener(t, err, err_size);
    if (fd < 0)
        return -1;
    int result;
    if (send_all(fd, request, (size_t)request_len) != 0)
        result = fail(err, err_size, "sending to the JVM %d: %s", (int)t->pid, strerror(errno));
    else
        result = read_answer(fd, (int)t->pid, answer, answer_len, err, err_size);
    close(fd);
    return result;
}

int attach_absolute_paths(const char *options, const char *cwd, char *out, size_t size)
{
    static const char *const path_options[] = { "file=", "pprof=", "flamegraph=", "collapsed=" };
    size_t used = 0;
    const char *at = options;
    while (*at) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        for (size_t i = 0; i < sizeof path_options / sizeof path_options[0]; i++) {
            size_t n = strlen(path_options[i]);
            if (len > n && strncmp(at, path_options[i], n) == 0 && at[n] != '/') {
                int w = snprintf(out + used, size > used ? size - used : 0, "%.*s%s/", (int)n, at, cwd);
                if (w < 0 || (size_t)w >= size - used)
                    return -1;
                used += (size_t)w;
                at += n;
                len -= n;
                break;
            }
        }
        int w = snprintf(out + used, size > used ? size - used : 0, "%.*s%s", (int)len, at, end ? "," : "");
        if (w < 0 || (size_t)w >= size - used)
            return -1;
        used += (size_t)w;
        at += len + (end ? 1 : 0);
    }
    if (used == 0 && size > 0)
        out[0] = '\0';
    return 0;
}
