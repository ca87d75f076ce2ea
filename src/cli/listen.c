/* listen.c: `hprof listen` and `hprof run`; see listen.h. */
#include "cli/listen.h"
#include "cli/listen_series.h"
#include "output/net_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_DONE = 0, EXIT_FAILED = 1, EXIT_BAD_USAGE = 2, EXIT_INTERRUPTED = 130 };

#define HELLO_WAIT_MS 2000     /* for the agent's answer to the greeting */
#define SCREEN_TOP    10       /* methods shown */

/* ------------------------------------------------------------ frames */

static int frame_fail(frame_reader *r, const char *why)
{
    snprintf(r->error, sizeof r->error, "%s", why);
    return -1;
}

/* The payload bytes of the current frame among p[0..n): how many it took. */
static size_t take_payload(frame_reader *r, const frame_handler *h, const unsigned char *p, size_t n, int *failed)
{
    size_t take = r->len - r->got < n ? r->len - r->got : n;
    if (r->header[0] == NET_FRAME_DATA) {
        if (take && h->data(h->ctx, p, take) != 0)
            *failed = frame_fail(r, "cannot write the report");
    } else if (r->got < sizeof r->live - 1) {
        size_t keep = sizeof r->live - 1 - r->got < take ? sizeof r->live - 1 - r->got : take;
        memcpy(r->live + r->got, p, keep);
    }
    r->got += (uint32_t)take;
    return take;
}

/* The current frame is complete: 0, or -1 if its handler refused it. */
static int frame_done(frame_reader *r, const frame_handler *h)
{
    if (r->header[0] == NET_FRAME_LIVE) {
        r->live[r->got < sizeof r->live - 1 ? r->got : sizeof r->live - 1] = '\0';
        h->live(h->ctx, r->live);
    } else if (r->header[0] == NET_FRAME_END) {
        r->ended = 1;
        h->end(h->ctx);
    } else if (r->header[0] == NET_FRAME_PERIOD) {
        r->live[r->got] = '\0';
        r->header_got = 0;
        return h->period(h->ctx, r->live) == 0 ? 0 : frame_fail(r, "cannot write the period's report");
    }
    r->header_got = 0;
    return 0;
}

int frame_reader_feed(frame_reader *r, const frame_handler *h, const unsigned char *p, size_t n)
{
    int failed = 0;
    while (n > 0 && !failed) {
        if (r->ended)
            return frame_fail(r, "data after the end of the report");
        if (r->header_got < sizeof r->header) {
            r->header[r->header_got++] = *p++;
            n--;
            if (r->header_got < sizeof r->header)
                continue;
            char type = (char)r->header[0];
            r->len = net_frame_length(r->header);
            r->got = 0;
            if (type != NET_FRAME_DATA && type != NET_FRAME_LIVE && type != NET_FRAME_END &&
                type != NET_FRAME_PERIOD)
                return frame_fail(r, "unknown frame type");
            if (type == NET_FRAME_PERIOD && h->period == NULL)
                return frame_fail(r, "a period frame in a stream that is not a series");
            if (r->len > NET_FRAME_MAX || (type == NET_FRAME_END && r->len != 0) ||
                (type == NET_FRAME_PERIOD && r->len > PERIOD_FRAME_MAX))
                return frame_fail(r, "frame length out of range");
        } else {
            size_t took = take_payload(r, h, p, n, &failed);
            p += took;
            n -= took;
        }
        if (!failed && r->header_got == sizeof r->header && r->got == r->len)
            failed = frame_done(r, h);
    }
    return failed ? -1 : 0;
}

long long live_summary_samples(const char *text)
{
    const char *at = strstr(text, "samples ");
    while (at != NULL && at != text && at[-1] != '\n')
        at = strstr(at + 1, "samples ");
    return at ? strtoll(at + 8, NULL, 10) : -1;
}

/* ------------------------------------------------------------ the session */

typedef struct session {
    const char *out_path;
    FILE       *out;
    int         is_series;         /* the agent has loop=: series.* writes the files */
    listen_series series;
    uint64_t    received;          /* report bytes written */
    int         ended;
    int         tty;
    char        peer[128];
    time_t      connected;
    unsigned    summaries;         /* live summaries received */
    long long   last_samples;      /* for samples/s */
    double      last_at;
    double      rate;
} session;

/* Set by the signal handler, which gets no user data: a static. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int on_data(void *ctx, const void *bytes, size_t n)
{
    session *s = ctx;
    if (s->is_series ? listen_series_write(&s->series, bytes, n) != 0 : fwrite(bytes, 1, n, s->out) != n)
        return -1;
    s->received += n;
    return 0;
}

static void on_end(void *ctx)
{
    session *s = ctx;
    s->ended = 1;
    if (s->is_series && listen_series_end(&s->series) != 0)
        s->ended = -1;                /* the last period could not be written */
}

static int on_period(void *ctx, const char *text)
{
    session *s = ctx;
    uint64_t before = s->series.complete;
    if (listen_series_period(&s->series, text) != 0)
        return -1;
    if (s->series.complete > before && !s->tty) {
        printf("hprof listen: period %" PRIu64 " complete: %s\n", s->series.last_seq, s->series.last);
        fflush(stdout);
    }
    return 0;
}

void live_summary_render(FILE *out, const char *text, double rate)
{
    const char *line = text;
    int methods = 0;
    long long total = live_summary_samples(text);
    while (*line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        unsigned long long count;
        int name_at = 0;
        if (strncmp(line, "status ", 7) == 0) {
            fprintf(out, "%.*s\n", len - 7, line + 7);
        } else if (strncmp(line, "samples ", 8) == 0) {
            fprintf(out, "\n%lld samples, %.0f samples/s\n", total, rate);
        } else if (sscanf(line, "method %llu %n", &count, &name_at) == 1 && name_at > 0 && name_at <= len &&
                   methods < SCREEN_TOP) {
            /* (name_at <= len: the blank after the count may run on into
             * the next line, whose text is not this method's name.) */
            if (methods++ == 0)
                fprintf(out, "\n  self   share  method\n");
            fprintf(out, "%6llu %6.1f%%  %.*s\n", count,
                    total > 0 ? 100.0 * (double)count / (double)total : 0.0, len - name_at, line + name_at);
        }
        line = nl ? nl + 1 : line + len;
    }
}

/* One screen: where we are, the collectors' status, the top methods. */
static void draw_screen(session *s, const char *text)
{
    printf("\033[H\033[2J");
    printf("hprof listen: %s -> %s   %lld s, %.1f KiB received\n", s->peer,
           s->is_series && s->series.last[0] ? s->series.last : s->out_path,
           (long long)(time(NULL) - s->connected), (double)s->received / 1024.0);
    live_summary_render(stdout, text, s->rate);
    fflush(stdout);
}

static void on_live(void *ctx, const char *text)
{
    session *s = ctx;
    s->summaries++;
    long long samples = live_summary_samples(text);
    double now = seconds_now();
    if (samples >= 0 && s->last_samples >= 0 && now > s->last_at)
        s->rate = (double)(samples - s->last_samples) / (now - s->last_at);
    if (samples >= 0) {
        s->last_samples = samples;
        s->last_at = now;
    }
    if (s->tty)
        draw_screen(s, text);
}

/* ------------------------------------------------------------ sockets */

static int open_listener(const char *bind_addr, const char *port, char *shown, size_t shown_size)
{
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int gai = getaddrinfo(bind_addr, port, &hints, &found);
    if (gai != 0) {
        fprintf(stderr, "hprof listen: --bind %s: %s\n", bind_addr, gai_strerror(gai));
        return -1;
    }
    int fd = -1, error = 0;
    for (struct addrinfo *ai = found; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int one = 1;
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
                        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0)) {
            error = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) {
        fprintf(stderr, "hprof listen: cannot listen on %s port %s: %s; choose another --port\n", bind_addr, port,
                strerror(error));
        return -1;
    }
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
    if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(shown, shown_size, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, serv);
    return fd;
}

/* Waits for fd to be readable, giving up on an interrupt: 1 ready, 0 not yet, -1 interrupted. */
static int wait_readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int ready = poll(&p, 1, ms);
    if (interrupted)
        return -1;
    return ready > 0 ? 1 : 0;
}

static int accept_agent(int listener, session *s)
{
    int ready;
    while ((ready = wait_readable(listener, 500)) == 0)
        ;
    if (ready < 0)
        return -1;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    int fd = accept4(listener, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
    if (fd >= 0)
        getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(s->peer, sizeof s->peer, "%.90s:%.20s", host, serv);
    return fd;
}

static int send_text(int fd, const char *text)
{
    size_t len = strlen(text);
    return send(fd, text, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Greets the agent and reads its answer: 2 a series (loop=), 1 framed;
 * 0 raw, with the bytes that came instead of the answer in first[0..*n). */
static int handshake(int fd, unsigned char *first, size_t *n)
{
    *n = 0;
    if (send_text(fd, NET_GREETING) != 0)
        return 0;
    /* Both answers have the same length and differ in their version only. */
    size_t want = strlen(NET_STREAM_HELLO);
    double deadline = seconds_now() + HELLO_WAIT_MS / 1000.0;
    while (*n < want && seconds_now() < deadline && wait_readable(fd, 100) >= 0) {
        ssize_t got = recv(fd, first + *n, want - *n, MSG_DONTWAIT);
        if (got == 0)
            break;
        if (got > 0)
            *n += (size_t)got;
        if (*n > 0 && memcmp(first, NET_STREAM_HELLO, *n) != 0 && memcmp(first, NET_SERIES_HELLO, *n) != 0)
            break;
    }
    int answer = *n != want ? 0 : memcmp(first, NET_SERIES_HELLO, want) == 0 ? 2
               : memcmp(first, NET_STREAM_HELLO, want) == 0 ? 1 : 0;
    if (answer)
        *n = 0;
    return answer;
}

/* ------------------------------------------------------------ the command */

typedef struct listen_args {
    const char *port, *bind, *out, *keep;
} listen_args;

static int listen_usage(const char *why)
{
    fprintf(stderr, "hprof listen: %s\nusage: hprof listen [--port N] [--bind ADDR] [--keep N] -o FILE\n"
            "  --port N     the port to listen on (default %d; 0: any free port, printed)\n"
            "  --bind ADDR  the address to listen on (default 127.0.0.1, this machine only)\n"
            "  -o FILE      where the report goes; from an agent with loop=, each period's report\n"
            "               goes to a file named as loop= names them: %%t the period's start (UTC),\n"
            "               %%p the JVM's pid, %%n the period's number, %%%% a %%; a name without %%\n"
            "               gets .%%t.%%n before its extension\n"
            "  --keep N     with loop=: keep the files of the last N periods only (default 0: all)\n",
            why, LISTEN_DEFAULT_PORT);
    return EXIT_BAD_USAGE;
}

static int parse_listen_args(int argc, char **argv, listen_args *a, uint32_t *keep)
{
    static char default_port[8];
    snprintf(default_port, sizeof default_port, "%d", LISTEN_DEFAULT_PORT);
    *a = (listen_args){ default_port, "127.0.0.1", NULL, "0" };
    for (int i = 0; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--port") == 0 ? &a->port
                          : strcmp(argv[i], "--bind") == 0 ? &a->bind
                          : strcmp(argv[i], "--keep") == 0 ? &a->keep
                          : strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0 ? &a->out : NULL;
        if (slot == NULL || i + 1 >= argc) {
            char why[300];
            snprintf(why, sizeof why, slot ? "%.200s needs a value" : "unknown argument '%.200s'", argv[i]);
            return listen_usage(why);
        }
        *slot = argv[++i];
    }
    char *end;
    long port = strtol(a->port, &end, 10);
    if (*end != '\0' || end == a->port || port < 0 || port > 65535)
        return listen_usage("--port takes a number from 0 to 65535");
    long kept = strtol(a->keep, &end, 10);
    if (*end != '\0' || end == a->keep || kept < 0 || kept > 100000)
        return listen_usage("--keep takes a number of periods from 0 (all) to 100000");
    *keep = (uint32_t)kept;
    if (a->out == NULL)
        return listen_usage("-o FILE is needed: where the report goes");
    char err[1024];
    if (strchr(a->out, '%') && series_check_name("-o", a->out, LISTEN_PATH_MAX, err, sizeof err) != 0) {
        /* series_check_name speaks of the agent's loop= option; -o is ours. */
        fprintf(stderr, "hprof listen: -o %.300s: a name may hold %%t (the period's start, UTC), %%p (the "
                "JVM's pid), %%n (the period's number) and %%%% (a %%), nothing else after a %%, and must "
                "leave room for them\n", a->out);
        return EXIT_BAD_USAGE;
    }
    return EXIT_DONE;
}

/* Reads the agent's stream into the session until its end, EOF or ^C. */
static int receive(int fd, session *s, int framed, const unsigned char *first, size_t nfirst)
{
    frame_reader *reader = calloc(1, sizeof *reader);
    frame_handler handler = { s, on_data, on_live, on_end, s->is_series ? on_period : NULL };
    if (reader == NULL || (nfirst && on_data(s, first, nfirst) != 0)) {
        free(reader);
        return EXIT_FAILED;
    }
    static unsigned char buf[1 << 16];
    int rc = 0;
    while (!s->ended) {
        int ready = wait_readable(fd, 250);
        if (ready < 0) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        ssize_t n = ready ? recv(fd, buf, sizeof buf, 0) : -1;
        if (n == 0)
            break;
        if (n < 0 && (!ready || errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            fprintf(stderr, "hprof listen: reading from the agent: %s\n", strerror(errno));
            break;
        }
        /* Flushed as it comes: a listener killed mid-run keeps what it had
         * (a series' periods are whole files or none). */
        if ((framed ? frame_reader_feed(reader, &handler, buf, (size_t)n) != 0 : on_data(s, buf, (size_t)n) != 0) ||
            (s->out && fflush(s->out) != 0)) {
            fprintf(stderr, "hprof listen: %s%s%s\n", framed ? reader->error : "cannot write the report",
                    s->series.error[0] ? ": " : "", s->series.error);
            rc = EXIT_FAILED;
            break;
        }
    }
    free(reader);
    return rc;
}

/* "periods 1 to 5 are complete, the last in NAME" (or that none is). */
static void say_complete(const listen_series *w, char *out, size_t size)
{
    if (w->complete == 0)
        snprintf(out, size, "no period was complete");
    else
        snprintf(out, size, "periods %" PRIu64 " to %" PRIu64 " are complete, the last in %s%s", w->first_seq,
                 w->last_seq, w->last, w->keep ? " (--keep: only the last ones are kept)" : "");
}

/* The end of a series: the period open is whole only at the stream's end. */
static int finish_series(int fd, session *s, int rc)
{
    listen_series *w = &s->series;
    char done[LISTEN_PATH_MAX + 200];
    int whole = s->ended == 1 && rc == 0;
    uint64_t cut = listen_series_abandon(w);
    say_complete(w, done, sizeof done);
    if (whole) {
        send_text(fd, NET_SAVED);
        printf("hprof listen: the series from %s is written: %s (%u live summaries)\n", s->peer, done,
               s->summaries);
    } else if (rc == EXIT_INTERRUPTED) {
        printf("hprof listen: interrupted%s; %s\n", cut ? " during a period, whose partial report was removed" : "",
               done);
    } else if (rc == 0 && s->ended == 0) {
        printf("hprof listen: the agent at %s went away during period %" PRIu64 " (did the JVM die?); that "
               "period's partial report was removed; %s\n", s->peer, cut, done);
    } else {
        printf("hprof listen: the series stopped%s; %s\n", cut ? " during a period, whose partial report was "
               "removed" : "", done);
    }
    fflush(stdout);
    listen_series_free(w);
    return whole ? EXIT_DONE : rc == EXIT_INTERRUPTED ? EXIT_INTERRUPTED : EXIT_FAILED;
}

/* Closes the report; tells a framed agent it is saved. The exit status. */
static int finish(int fd, session *s, int framed, int rc)
{
    if (s->is_series)
        return finish_series(fd, s, rc);
    int write_failed = fclose(s->out) != 0;
    if (write_failed)
        fprintf(stderr, "hprof listen: writing %s: %s\n", s->out_path, strerror(errno));
    if (framed && s->ended && !write_failed)
        send_text(fd, NET_SAVED);
    if (rc == EXIT_INTERRUPTED) {
        printf("hprof listen: interrupted; %s has the %llu bytes received so far\n", s->out_path,
               (unsigned long long)s->received);
        return rc;
    }
    if (write_failed || rc != 0)
        return EXIT_FAILED;
    if (framed && !s->ended) {
        printf("hprof listen: the agent at %s went away before the end of its report (did the JVM die?); "
               "%s has the %llu bytes received\n", s->peer, s->out_path, (unsigned long long)s->received);
        return EXIT_FAILED;
    }
    printf("hprof listen: the profile is in %s (%llu bytes; %u live summaries, the last at %lld samples)\n",
           s->out_path, (unsigned long long)s->received, s->summaries, s->last_samples);
    return EXIT_DONE;
}

/* Creates -o for one report. What arrives may be a heap dump (the
 * program's data): readable by its owner only, as the agent's own heap
 * dumps and HotSpot's are; and, as for the agent's files, a symbolic link
 * at -o is not followed. */
static int open_report(session *s)
{
    int out_fd = open(s->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    s->out = out_fd >= 0 ? fdopen(out_fd, "w") : NULL;
    if (s->out != NULL)
        return 0;
    int e = errno;
    if (out_fd >= 0)
        close(out_fd);
    fprintf(stderr, "hprof listen: cannot create %s (-o): %s%s\n", s->out_path, strerror(e),
            e == ELOOP ? " (it is a symbolic link: remove the link or name the real file)" : "");
    return -1;
}

/* A series' files go beside -o: its directory must take them. */
static int check_directory(const char *path)
{
    char dir[LISTEN_PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
    if (access(dir, W_OK | X_OK) == 0)
        return 0;
    fprintf(stderr, "hprof listen: cannot write files in %s (the directory of -o %s): %s\n", dir, path,
            strerror(errno));
    return -1;
}

int listen_main(int argc, char **argv)
{
    listen_args a;
    uint32_t keep = 0;
    int rc = parse_listen_args(argc, argv, &a, &keep);
    if (rc != EXIT_DONE)
        return rc;
    session s = { .out_path = a.out, .tty = isatty(STDOUT_FILENO), .last_samples = -1 };
    listen_series_init(&s.series, a.out, keep);
    /* A name with '%' is a series' (loop=) and made per period; another is
     * created now, so that a bad one is said before any agent comes. */
    int pattern = strchr(a.out, '%') != NULL;
    if (pattern ? check_directory(a.out) != 0 : open_report(&s) != 0)
        return EXIT_FAILED;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;           /* no SA_RESTART: poll returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char shown[300];
    int listener = open_listener(a.bind, a.port, shown, sizeof shown);
    if (listener < 0) {
        if (s.out)
            fclose(s.out);
        return EXIT_FAILED;
    }
    printf("hprof listen: waiting on %s; start the JVM with -agentpath:<path>/libhprof.so=net=%s,...\n", shown, shown);
    fflush(stdout);
    int fd = accept_agent(listener, &s);
    close(listener);
    if (fd < 0)
        return finish(-1, &s, 0, interrupted ? EXIT_INTERRUPTED : EXIT_FAILED);
    s.connected = time(NULL);
    unsigned char first[32];
    size_t nfirst;
    int framed = handshake(fd, first, &nfirst);
    s.is_series = framed == 2;
    if (s.is_series && s.out) {
        /* The series' names are made from -o: the file made for one report goes. */
        fclose(s.out);
        s.out = NULL;
        unlink(a.out);
    } else if (!s.is_series && s.out == NULL && open_report(&s) != 0) {
        close(fd);
        return EXIT_FAILED;
    }
    printf("hprof listen: agent connected from %s (%s); writing %s\n", s.peer,
           s.is_series ? "hprof stream, a series (loop=): a file per period" : framed ? "hprof stream, live summary"
                                                                              : "raw bytes", a.out);
    fflush(stdout);
    rc = receive(fd, &s, framed, first, nfirst);
    rc = finish(fd, &s, framed, rc);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------ hprof run */

int run_java(const char *library, int argc, char **argv)
{
    /* Options (HPROF's, joined with commas) up to "--" or the first word
     * that is not name=value (the java command). */
    int dash = -1;
    for (int i = 0; i < argc && dash < 0; i++)
        if (strcmp(argv[i], "--") == 0)
            dash = i;
    int java_at = dash >= 0 ? dash + 1 : 0;
    if (dash < 0)
        while (java_at < argc && (strchr(argv[java_at], '=') != NULL || strcmp(argv[java_at], "help") == 0))
            java_at++;
    if (java_at >= argc) {
        fprintf(stderr, "hprof run: no java command given\nusage: hprof run [options] [--] java ARGS...\n");
        return EXIT_BAD_USAGE;
    }
    /* No options: what a user wants first today, a CPU profile as a flame
     * graph (the agent loaded directly keeps HPROF's own defaults). java
     * runs as this process (exec), so its pid is ours. */
    char defaults[96];
    snprintf(defaults, sizeof defaults, "cpu=samples,flamegraph=hprof-%d.html", (int)getpid());
    char *default_options[1] = { defaults };
    int noptions = dash >= 0 ? dash : java_at;
    char **options = argv;
    if (noptions == 0) {
        options = default_options;
        noptions = 1;
    }
    size_t len = strlen("-agentpath:") + strlen(library) + 2;
    for (int i = 0; i < noptions; i++)
        len += strlen(options[i]) + 1;
    char *agent_arg = malloc(len);
    char **args = calloc((size_t)(argc - java_at) + 2, sizeof *args);
    if (agent_arg == NULL || args == NULL) {
        fprintf(stderr, "hprof run: out of memory\n");
        return EXIT_FAILED;
    }
    size_t used = (size_t)snprintf(agent_arg, len, "-agentpath:%s", library);
    for (int i = 0; i < noptions; i++)
        used += (size_t)snprintf(agent_arg + used, len - used, "%s%s", i == 0 ? "=" : ",", options[i]);
    args[0] = argv[java_at];
    args[1] = agent_arg;
    for (int i = java_at + 1; i < argc; i++)
        args[i - java_at + 1] = argv[i];
    fflush(stdout);
    execvp(args[0], args);
    fprintf(stderr, "hprof run: cannot run %s: %s\n", args[0], strerror(errno));
    free(agent_arg);
    free(args);
    return errno == ENOENT ? 127 : 126;
}
