/* Unit tests: net_sink (src/output/net_sink.c), the agent's end of net=,
 * over a socketpair whose other end plays the listener: the greeting and
 * framing, raw mode, the queue's bound, a listener that goes away or stops
 * reading, and connecting to an address where nobody listens. */
#include "unit.h"

#include "output/net_sink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static net_sink_config quick_config(size_t queue_bytes)
{
    net_sink_config c = net_sink_default_config();
    c.queue_bytes = queue_bytes;
    c.greeting_ms = 100;
    c.stall_ms = 300;
    c.watch_ms = 20;
    return c;
}

/* Reads exactly len bytes (or fails after 2 s). */
static int read_exact(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 2000) <= 0)
            return -1;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* One frame from the listener's side: its type, payload into buf. */
static int read_frame(int fd, char *type, char *buf, size_t size, uint32_t *len)
{
    unsigned char header[NET_FRAME_HEADER];
    if (read_exact(fd, header, sizeof header) != 0)
        return -1;
    *type = (char)header[0];
    *len = net_frame_length(header);
    if (*len >= size || read_exact(fd, buf, *len) != 0)
        return -1;
    buf[*len] = '\0';
    return 0;
}

/* A sink over a socketpair whose pair[1] plays the listener (greeting it
 * first when greet); NULL (a failed check) if it cannot start. */
static net_sink *start_pair(int pair[2], int greet, size_t queue_bytes)
{
    net_sink_config cfg = quick_config(queue_bytes);
    char err[256];
    net_sink *s = NULL;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0 &&
        (!greet || write(pair[1], NET_GREETING, strlen(NET_GREETING)) > 0))
        s = net_sink_start(pair[0], &cfg, err, sizeof err);
    CHECK(s != NULL);
    return s;
}

TEST(net_frame_header_round_trip)
{
    unsigned char h[NET_FRAME_HEADER];
    net_frame_header(h, 'D', 0x01020304u);
    CHECK(h[0] == 'D' && h[1] == 1 && h[2] == 2 && h[3] == 3 && h[4] == 4);
    CHECK(net_frame_length(h) == 0x01020304u);
    net_frame_header(h, 'E', 0);
    CHECK(net_frame_length(h) == 0);
}

/* The listener's confirmation, sent once it has read the 'E' frame. */
static void *confirm_after_end(void *arg)
{
    int fd = *(int *)arg;
    char type = 0, buf[256];
    uint32_t len;
    while (type != NET_FRAME_END && read_frame(fd, &type, buf, sizeof buf, &len) == 0)
        ;
    if (type == NET_FRAME_END && write(fd, NET_SAVED, strlen(NET_SAVED)) < 0)
        return NULL;
    return NULL;
}

TEST(net_framed_stream_data_live_end)
{
    int pair[2];
    net_sink *s = start_pair(pair, 1, 4096);
    if (s == NULL)
        return;
    CHECK(net_sink_framed(s));
    char hello[sizeof NET_STREAM_HELLO] = "";
    CHECK(read_exact(pair[1], hello, strlen(NET_STREAM_HELLO)) == 0);
    CHECK_STR(hello, NET_STREAM_HELLO);
    CHECK(net_sink_offer(s, "JAVA PROFILE", 12) == 12);
    CHECK(net_sink_live(s, "samples 5\n") == 1);
    char type, buf[256];
    uint32_t len;
    CHECK(read_frame(pair[1], &type, buf, sizeof buf, &len) == 0 && type == 'D');
    CHECK_STR(buf, "JAVA PROFILE");
    CHECK(read_frame(pair[1], &type, buf, sizeof buf, &len) == 0 && type == 'L');
    CHECK_STR(buf, "samples 5\n");

    pthread_t listener;
    pthread_create(&listener, NULL, confirm_after_end, &pair[1]);
    char reason[256] = "";
    CHECK(net_sink_finish(s, net_now_ms() + 2000, reason, sizeof reason) == 0);
    pthread_join(listener, NULL);
    net_sink_stats st;
    net_sink_close(s, &st);
    CHECK(st.sent == 5 + 12 + 5 + 10 + 5);   /* D, L and E frames */
    close(pair[1]);
}

TEST(net_framed_unconfirmed_end_is_a_failure)
{
    int pair[2];
    net_sink *s = start_pair(pair, 1, 4096);
    if (s == NULL)
        return;
    char reason[256] = "";
    /* The listener reads but never says it saved the report. */
    CHECK(net_sink_finish(s, net_now_ms() + 200, reason, sizeof reason) == -1);
    CHECK(strstr(reason, "confirm") != NULL);
    net_sink_close(s, NULL);
    close(pair[1]);
}

TEST(net_raw_mode_sends_bytes_as_they_are)
{
    int pair[2];
    net_sink *s = start_pair(pair, 0, 4096);
    if (s == NULL)
        return;
    CHECK(!net_sink_framed(s));
    CHECK(net_sink_live(s, "not in raw mode\n") == 0);
    CHECK(net_sink_offer(s, "abc", 3) == 3);
    CHECK(net_sink_offer(s, "def", 3) == 3);
    char reason[256] = "";
    /* Raw: the end is our EOF; a peer that stays open took it all. */
    CHECK(net_sink_finish(s, net_now_ms() + 200, reason, sizeof reason) == 0);
    char buf[16] = "";
    CHECK(read_exact(pair[1], buf, 6) == 0);
    CHECK_STR(buf, "abcdef");
    CHECK(read(pair[1], buf, sizeof buf) == 0);      /* then EOF */
    net_sink_close(s, NULL);
    close(pair[1]);
}

TEST(net_queue_is_bounded_and_offer_never_waits)
{
    int pair[2];
    net_sink *s = start_pair(pair, 1, 1024);
    if (s == NULL)
        return;
    static char big[1 << 20];
    memset(big, 'x', sizeof big);
    /* Nobody reads: the kernel's buffers fill, then the queue; each offer
     * takes what fits and returns at once. */
    size_t total = 0, taken;
    int64_t until = net_now_ms() + 150;
    do {
        taken = net_sink_offer(s, big, sizeof big);
        CHECK(taken <= 1024 - NET_FRAME_HEADER);
        total += taken;
    } while (net_now_ms() < until);
    CHECK(total < sizeof big * 4);
    net_sink_stats st;
    net_sink_close(s, &st);
    CHECK(st.queue_peak <= 1024);
    close(pair[1]);
}

TEST(net_listener_that_stops_reading_is_declared_dead)
{
    int pair[2];
    net_sink *s = start_pair(pair, 1, 4096);
    if (s == NULL)
        return;
    static char chunk[4096];
    char reason[256] = "";
    int64_t until = net_now_ms() + 3000;
    while (!net_sink_dead(s, reason, sizeof reason) && net_now_ms() < until) {
        net_sink_offer(s, chunk, sizeof chunk);
        usleep(5000);
    }
    CHECK(net_sink_dead(s, reason, sizeof reason));
    CHECK(strstr(reason, "took no data") != NULL);
    CHECK(net_sink_offer(s, "x", 1) == 0);
    net_sink_close(s, NULL);
    close(pair[1]);
}

TEST(net_listener_that_goes_away_is_noticed_while_idle)
{
    int pair[2];
    net_sink *s = start_pair(pair, 1, 4096);
    if (s == NULL)
        return;
    char hello[sizeof NET_STREAM_HELLO];
    CHECK(read_exact(pair[1], hello, strlen(NET_STREAM_HELLO)) == 0);
    close(pair[1]);                   /* all read: a clean close, not a reset */
    char reason[256] = "";
    int64_t until = net_now_ms() + 2000;
    while (!net_sink_dead(s, reason, sizeof reason) && net_now_ms() < until)
        usleep(5000);
    CHECK(strstr(reason, "closed the connection") != NULL);
    CHECK(net_sink_finish(s, net_now_ms() + 100, reason, sizeof reason) == -1);
    net_sink_close(s, NULL);
}

TEST(net_connect_names_what_failed)
{
    char err[256] = "";
    CHECK(net_connect("nohostport", 1000, err, sizeof err) == -1);
    CHECK(strstr(err, "<host>:<port>") != NULL);
    /* A port nobody listens on: bind one, then close it. */
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    CHECK(bind(probe, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(probe, (struct sockaddr *)&a, &alen) == 0);
    close(probe);
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", ntohs(a.sin_port));
    CHECK(net_connect(address, 1000, err, sizeof err) == -1);
    CHECK(strstr(err, "cannot connect to 127.0.0.1:") != NULL && strstr(err, "refused") != NULL);
    /* And one that listens. */
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = 0;
    alen = sizeof a;
    CHECK(bind(listener, (struct sockaddr *)&a, sizeof a) == 0 && listen(listener, 1) == 0);
    CHECK(getsockname(listener, (struct sockaddr *)&a, &alen) == 0);
    snprintf(address, sizeof address, "localhost:%d", ntohs(a.sin_port));
    int fd = net_connect(address, 1000, err, sizeof err);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    close(listener);
}
