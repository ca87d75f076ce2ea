/* Unit tests: loop= over net= (a series). The agent's side refuses a
 * listener that cannot write one and sends period frames where its spool's
 * periods begin (net_sink.c, net_report.c); `hprof listen`'s side reads
 * them (frame_reader_feed, src/cli/listen.c) and writes a file per period
 * (src/cli/listen_series.c): named from -o, whole or not at all, --keep. */
#include "unit.h"

#include "cli/listen.h"
#include "cli/listen_series.h"
#include "output/net_report.h"
#include "output/net_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* 2026-11-27 23:45:00 UTC */
#define T0 ((time_t)1795823100)

static net_sink_config series_config(void)
{
    net_sink_config c = net_sink_default_config();
    c.queue_bytes = 4096;
    c.greeting_ms = 100;
    c.stall_ms = 2000;
    c.watch_ms = 20;
    c.series = 1;
    return c;
}

/* net_sink_start on a socketpair whose other end sent `greeting` (NULL:
 * nothing); err gets the refusal. */
static net_sink *start_with(const char *greeting, char *err, size_t errlen, int pair[2])
{
    net_sink_config cfg = series_config();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
        return NULL;
    if (greeting && write(pair[1], greeting, strlen(greeting)) < 0)
        return NULL;
    net_sink *s = net_sink_start(pair[0], &cfg, err, errlen);
    if (s == NULL)
        close(pair[0]);
    return s;
}

TEST(net_series_needs_a_listener_that_writes_series)
{
    int pair[2];
    char err[512] = "";
    CHECK(start_with("HPROF-LISTEN 1\n", err, sizeof err, pair) == NULL);
    CHECK(strstr(err, "too old") != NULL && strstr(err, "loop=") != NULL);
    close(pair[1]);
    err[0] = '\0';
    CHECK(start_with(NULL, err, sizeof err, pair) == NULL);
    CHECK(strstr(err, "`hprof listen`") != NULL && strstr(err, "loop=") != NULL);
    close(pair[1]);
    net_sink *s = start_with(NET_GREETING, err, sizeof err, pair);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    char hello[32] = "";
    CHECK(read(pair[1], hello, strlen(NET_SERIES_HELLO)) == (ssize_t)strlen(NET_SERIES_HELLO));
    CHECK_STR(hello, NET_SERIES_HELLO);
    net_sink_close(s, NULL);
    close(pair[1]);
}

TEST(period_frame_parse_is_strict)
{
    series_period p;
    long pid;
    CHECK(period_frame_parse("seq 3\nstart 1795823100\npid 4242\n", &p, &pid) == 0);
    CHECK(p.seq == 3 && p.start == T0 && pid == 4242);
    const char *bad[] = { "", "seq 0\nstart 1\npid 1\n", "seq 1\nstart 1\npid 1", "seq 1\nstart 1\npid 1\nx",
                          "seq -1\nstart 1\npid 1\n", "seq 1\nstart 1\npid 99999999999\n",
                          "seq 99999999999999999999\nstart 1\npid 1\n", "start 1\nseq 1\npid 1\n",
                          "seq  1\nstart 1\npid 1\n", "seq 1\nstart\npid 1\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(period_frame_parse(bad[i], &p, &pid) == -1);
}

static int file_is(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, want) == 0;
}

static int files_in(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static void remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static const char *period_text(uint64_t seq, long pid, char *buf, size_t size)
{
    snprintf(buf, size, "seq %llu\nstart %lld\npid %ld\n", (unsigned long long)seq, (long long)T0 + (long long)seq,
             pid);
    return buf;
}

TEST(listen_series_writes_whole_periods_and_keeps_the_last)
{
    char dir[] = "/tmp/hprof-unit-series-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char pattern[128], name[160], text[96];
    snprintf(pattern, sizeof pattern, "%s/cpu-%%n-%%p.txt", dir);
    listen_series w;
    listen_series_init(&w, pattern, 2);
    CHECK(listen_series_write(&w, "x", 1) == -1);                  /* before any period */
    CHECK(strstr(w.error, "first period") != NULL);
    for (uint64_t k = 1; k <= 4; k++) {
        char body[32];
        snprintf(body, sizeof body, "period %llu\n", (unsigned long long)k);
        CHECK(listen_series_period(&w, period_text(k, 77, text, sizeof text)) == 0);
        CHECK(listen_series_write(&w, body, strlen(body)) == 0);
        /* Open: not yet under its name. */
        snprintf(name, sizeof name, "%s/cpu-%llu-77.txt", dir, (unsigned long long)k);
        CHECK(access(name, F_OK) != 0);
    }
    CHECK(listen_series_period(&w, period_text(4, 77, text, sizeof text)) == -1);   /* numbers must rise */
    CHECK(listen_series_period(&w, period_text(5, 78, text, sizeof text)) == -1);   /* one JVM */
    CHECK(listen_series_period(&w, "seq x\n") == -1);
    CHECK(listen_series_end(&w) == 0);
    /* --keep 2: periods 3 and 4, whole; 1 and 2 deleted; no temporary file. */
    snprintf(name, sizeof name, "%s/cpu-3-77.txt", dir);
    CHECK(file_is(name, "period 3\n"));
    snprintf(name, sizeof name, "%s/cpu-4-77.txt", dir);
    CHECK(file_is(name, "period 4\n"));
    CHECK(files_in(dir) == 2);
    CHECK(w.complete == 4 && w.first_seq == 1 && w.last_seq == 4);
    listen_series_free(&w);
    remove_dir(dir);
}

TEST(listen_series_removes_a_period_cut_short)
{
    char dir[] = "/tmp/hprof-unit-series-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char pattern[128], name[200], text[96];
    snprintf(pattern, sizeof pattern, "%s/prof.txt", dir);       /* no '%': .%t.%n before .txt */
    listen_series w;
    listen_series_init(&w, pattern, 0);
    CHECK(listen_series_period(&w, period_text(1, 5, text, sizeof text)) == 0);
    CHECK(listen_series_write(&w, "one\n", 4) == 0);
    CHECK(listen_series_period(&w, period_text(2, 5, text, sizeof text)) == 0);
    CHECK(listen_series_write(&w, "two, cut", 8) == 0);
    CHECK(listen_series_abandon(&w) == 2);
    snprintf(name, sizeof name, "%s/prof.20261127T234501Z.1.txt", dir);
    CHECK(file_is(name, "one\n"));
    CHECK(files_in(dir) == 1);
    CHECK(w.complete == 1 && w.last_seq == 1);
    listen_series_free(&w);
    remove_dir(dir);
}

/* ------------------------------------------------------------ end to end */

typedef struct listener_side {
    int           server;
    listen_series files;
    int           framed, ended;
    char          error[256];
} listener_side;

static int side_data(void *ctx, const void *bytes, size_t n)
{
    return listen_series_write(&((listener_side *)ctx)->files, bytes, n);
}

static void side_live(void *ctx, const char *text)
{
    (void)ctx;
    (void)text;
}

static void side_end(void *ctx)
{
    listener_side *l = ctx;
    l->ended = listen_series_end(&l->files) == 0;
}

static int side_period(void *ctx, const char *text)
{
    return listen_series_period(&((listener_side *)ctx)->files, text);
}

/* `hprof listen`'s part over a real TCP connection: greeting, answer, frames. */
static void *listener_main(void *arg)
{
    listener_side *l = arg;
    int fd = accept(l->server, NULL, NULL);
    if (fd < 0 || write(fd, NET_GREETING, strlen(NET_GREETING)) < 0)
        return NULL;
    char hello[sizeof NET_SERIES_HELLO] = "";
    size_t got = 0;
    while (got < strlen(NET_SERIES_HELLO)) {
        ssize_t n = read(fd, hello + got, strlen(NET_SERIES_HELLO) - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    l->framed = strcmp(hello, NET_SERIES_HELLO) == 0;
    frame_reader *r = calloc(1, sizeof *r);
    frame_handler h = { l, side_data, side_live, side_end, side_period };
    unsigned char buf[4096];
    ssize_t n;
    while (r && !l->ended && (n = read(fd, buf, sizeof buf)) > 0)
        if (frame_reader_feed(r, &h, buf, (size_t)n) != 0) {
            snprintf(l->error, sizeof l->error, "%.100s: %.120s", r->error, l->files.error);
            break;
        }
    if (l->ended && write(fd, NET_SAVED, strlen(NET_SAVED)) < 0)
        l->ended = 0;
    free(r);
    close(fd);
    return NULL;
}

TEST(net_series_end_to_end_a_file_per_period)
{
    char dir[] = "/tmp/hprof-unit-series-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char pattern[128], name[160];
    snprintf(pattern, sizeof pattern, "%s/p-%%n.txt", dir);
    listener_side l;
    memset(&l, 0, sizeof l);
    listen_series_init(&l.files, pattern, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    l.server = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l.server >= 0 && bind(l.server, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l.server, 1) == 0 &&
          getsockname(l.server, (struct sockaddr *)&sa, &len) == 0);
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", ntohs(sa.sin_port));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, listener_main, &l) == 0);

    net_sink_config cfg = series_config();
    FILE *spool = NULL;
    char err[512] = "";
    net_report *n = net_report_open(address, &cfg, &spool, err, sizeof err);
    CHECK(n != NULL);
    if (n != NULL) {
        /* Three periods; the third bigger than the send queue, so that its
         * frame waits for the bytes before it. */
        CHECK(net_report_period(n, (series_period){ 1, T0 }, 9) == 0);
        fputs("first\n", spool);
        net_report_ship(n);
        CHECK(net_report_period(n, (series_period){ 2, T0 + 1 }, 9) == 0);
        fputs("second\n", spool);
        CHECK(net_report_period(n, (series_period){ 3, T0 + 2 }, 9) == 0);
        for (int i = 0; i < 2000; i++)
            fputs("third.....\n", spool);
        net_report_ship(n);
        char reason[256] = "";
        CHECK(net_report_finish(n, net_now_ms() + 5000, reason, sizeof reason) == 0);
        net_report_close(n, NULL);
    }
    pthread_join(t, NULL);
    close(l.server);
    CHECK(l.framed && l.ended && l.error[0] == '\0');
    snprintf(name, sizeof name, "%s/p-1.txt", dir);
    CHECK(file_is(name, "first\n"));
    snprintf(name, sizeof name, "%s/p-2.txt", dir);
    CHECK(file_is(name, "second\n"));
    snprintf(name, sizeof name, "%s/p-3.txt", dir);
    FILE *f = fopen(name, "r");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (f)
        fclose(f);
    CHECK(size == 2000 * 11);
    CHECK(files_in(dir) == 3);
    listen_series_free(&l.files);
    remove_dir(dir);
}

TEST(frame_reader_period_frames_only_in_a_series)
{
    static frame_reader r;
    unsigned char frame[64] = { 'P', 0, 0, 0, 4, 'a', 'b', 'c', 'd' };
    frame_handler plain = { NULL, side_data, side_live, side_end, NULL };
    memset(&r, 0, sizeof r);
    CHECK(frame_reader_feed(&r, &plain, frame, 9) == -1);
    CHECK(strstr(r.error, "not a series") != NULL);
    /* Too long for a period frame. */
    listener_side l;
    memset(&l, 0, sizeof l);
    listen_series_init(&l.files, "/nonexistent-dir/x-%n", 0);
    frame_handler series = { &l, side_data, side_live, side_end, side_period };
    unsigned char big[5] = { 'P', 0, 0, 2, 0 };
    memset(&r, 0, sizeof r);
    CHECK(frame_reader_feed(&r, &series, big, 5) == -1);
    CHECK(strstr(r.error, "length") != NULL);
    /* A malformed one reaches the series writer, which refuses it. */
    memset(&r, 0, sizeof r);
    CHECK(frame_reader_feed(&r, &series, frame, 9) == -1);
    CHECK(strstr(l.files.error, "malformed") != NULL);
    /* A good one whose file cannot be made: refused with the name. */
    char text[96];
    period_text(1, 3, text, sizeof text);
    unsigned char good[128] = { 'P', 0, 0, 0, (unsigned char)strlen(text) };
    memcpy(good + 5, text, strlen(text));
    memset(&r, 0, sizeof r);
    CHECK(frame_reader_feed(&r, &series, good, 5 + strlen(text)) == -1);
    CHECK(strstr(l.files.error, "/nonexistent-dir/x-1") != NULL);
    listen_series_free(&l.files);
}
