/* net_sink.c: see net_sink.h. */
#include "net_sink.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DATA_FRAME_MAX  (64u << 10)   /* report bytes per frame: live frames get in between */
#define INBOX_MAX       64
#define TOO_SLOW        "it was too slow to take the report in the time allowed"

struct net_sink {
    int             fd;
    int             wake_fd;          /* eventfd: wakes the sender's poll */
    int             framed;
    net_sink_config cfg;
    pthread_t       sender;
    int             sender_started;
    /* Everything below is under lock. The sender reads the ring's bytes
     * [head, head + used) without the lock: only it consumes them, and
     * producers write only into the free part. */
    pthread_mutex_t lock;
    pthread_cond_t  changed;          /* room made, delivered, dead */
    unsigned char  *ring;
    size_t          cap, head, used;
    int64_t         last_progress;    /* when the socket last took bytes, or data became pending */
    int             stopping;         /* the sender must exit */
    int             ending;           /* the end is sent: the listener may now close */
    int             saved;            /* the listener confirmed (framed) */
    int             peer_closed;      /* the listener closed after the end: clean */
    int             dead;
    char            reason[256];
    char            inbox[INBOX_MAX]; /* what the listener sent, for its confirmation */
    size_t          inbox_len;
    net_sink_stats  stats;
};

net_sink_config net_sink_default_config(void)
{
    return (net_sink_config){ .queue_bytes = 8u << 20, .greeting_ms = 500, .stall_ms = 10000, .watch_ms = 200 };
}

int64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void net_frame_header(unsigned char out[NET_FRAME_HEADER], char type, uint32_t len)
{
    out[0] = (unsigned char)type;
    out[1] = (unsigned char)(len >> 24);
    out[2] = (unsigned char)(len >> 16);
    out[3] = (unsigned char)(len >> 8);
    out[4] = (unsigned char)len;
}

uint32_t net_frame_length(const unsigned char header[NET_FRAME_HEADER])
{
    return (uint32_t)header[1] << 24 | (uint32_t)header[2] << 16 | (uint32_t)header[3] << 8 | header[4];
}

/* ------------------------------------------------------------ connecting */

/* "host:port" or "[v6]:port" into host and port; -1 if malformed. */
static int split_address(const char *host_port, char *host, size_t host_size, char *port, size_t port_size)
{
    const char *colon, *host_start = host_port, *host_end;
    if (host_port[0] == '[') {
        host_end = strchr(host_port, ']');
        if (host_end == NULL || host_end[1] != ':')
            return -1;
        host_start = host_port + 1;
        colon = host_end + 1;
    } else {
        colon = strrchr(host_port, ':');
        if (colon == NULL)
            return -1;
        host_end = colon;
    }
    size_t host_len = (size_t)(host_end - host_start);
    if (host_len == 0 || host_len >= host_size || strlen(colon + 1) >= port_size || colon[1] == '\0')
        return -1;
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    strcpy(port, colon + 1);
    return 0;
}

/* One address: a non-blocking connect, waited for until deadline. */
static int connect_one(const struct addrinfo *ai, int64_t deadline, int *error)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
        *error = errno;
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        *error = errno;
        close(fd);
        return -1;
    }
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int ready;
    do {
        int64_t left = deadline - net_now_ms();
        ready = left > 0 ? poll(&p, 1, (int)left) : 0;
    } while (ready < 0 && errno == EINTR);
    int so_error = ETIMEDOUT;
    socklen_t len = sizeof so_error;
    if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0)
        return fd;
    *error = ready > 0 ? so_error : ETIMEDOUT;
    close(fd);
    return -1;
}

int net_connect(const char *host_port, int timeout_ms, char *err, size_t errlen)
{
    char host[256], port[16];
    if (split_address(host_port, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, errlen, "'%s' is not <host>:<port>", host_port);
        return -1;
    }
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &found);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(gai));
        return -1;
    }
    int64_t deadline = net_now_ms() + timeout_ms;
    int fd = -1, error = ECONNREFUSED;
    for (const struct addrinfo *ai = found; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, deadline, &error);
    freeaddrinfo(found);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s: %s", host_port,
                 error == ETIMEDOUT ? "no answer within the time allowed" : strerror(error));
    return fd;
}

/* ------------------------------------------------------------ greeting */

/* The listener's first line, if it sends one within wait_ms: the protocol
 * version of ours (1 or more), 0 for none (or something else: an old-style
 * peer), -1 if it closed. */
static int read_greeting(int fd, int wait_ms)
{
    char line[INBOX_MAX];
    size_t got = 0;
    int64_t deadline = net_now_ms() + wait_ms;
    while (got < sizeof line - 1 && (got == 0 || line[got - 1] != '\n')) {
        int64_t left = deadline - net_now_ms();
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            break;
        ssize_t n = recv(fd, line + got, 1, MSG_DONTWAIT);
        if (n == 0)
            return -1;
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n > 0)
            got++;
    }
    line[got] = '\0';
    if (strncmp(line, "HPROF-LISTEN ", 13) != 0 || line[got ? got - 1 : 0] != '\n')
        return 0;
    long version = strtol(line + 13, NULL, 10);
    return version < 1 ? 1 : version > 1000 ? 1000 : (int)version;
}

/* Sends all of a short message within wait_ms. */
static int send_short(int fd, const char *text, int wait_ms)
{
    size_t len = strlen(text), off = 0;
    int64_t deadline = net_now_ms() + wait_ms;
    while (off < len) {
        ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int64_t left = deadline - net_now_ms();
        if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the sender */

static void mark_dead_locked(net_sink *s, const char *why)
{
    if (s->dead)
        return;
    s->dead = 1;
    snprintf(s->reason, sizeof s->reason, "%s", why);
    pthread_cond_broadcast(&s->changed);
}

/* What the listener sent: its confirmation, or its close. */
static void read_incoming(net_sink *s)
{
    char buf[256];
    ssize_t n = recv(s->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    pthread_mutex_lock(&s->lock);
    if (n > 0) {
        size_t take = (size_t)n < INBOX_MAX - 1 - s->inbox_len ? (size_t)n : INBOX_MAX - 1 - s->inbox_len;
        memcpy(s->inbox + s->inbox_len, buf, take);
        s->inbox_len += take;
        s->inbox[s->inbox_len] = '\0';
        if (s->framed && strstr(s->inbox, NET_SAVED) != NULL) {
            s->saved = 1;
            pthread_cond_broadcast(&s->changed);
        }
    } else if (n == 0 && (s->saved || (s->ending && !s->framed))) {
        s->peer_closed = 1;
        pthread_cond_broadcast(&s->changed);
    } else if (n == 0) {
        mark_dead_locked(s, "it closed the connection");
    } else {
        char why[128];
        snprintf(why, sizeof why, "%s", strerror(errno));
        mark_dead_locked(s, why);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Sends what it can of [p, p + len) now. */
static void send_some(net_sink *s, const unsigned char *p, size_t len)
{
    ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    int error = errno;
    pthread_mutex_lock(&s->lock);
    if (n > 0) {
        s->head = (s->head + (size_t)n) % s->cap;
        s->used -= (size_t)n;
        s->stats.sent += (uint64_t)n;
        s->last_progress = net_now_ms();
        pthread_cond_broadcast(&s->changed);
    } else if (n < 0 && error != EAGAIN && error != EINTR) {
        char why[128];
        snprintf(why, sizeof why, "%s", strerror(error));
        mark_dead_locked(s, why);
    }
    pthread_mutex_unlock(&s->lock);
}

static void *sender_main(void *arg)
{
    net_sink *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        if (s->stopping) {
            pthread_mutex_unlock(&s->lock);
            break;
        }
        if (s->used > 0 && !s->dead && net_now_ms() - s->last_progress > s->cfg.stall_ms) {
            char why[128];
            snprintf(why, sizeof why, "it took no data for %d s", s->cfg.stall_ms / 1000);
            mark_dead_locked(s, why);
        }
        int watching = !s->dead && !s->peer_closed;
        size_t chunk = watching && s->used > 0 ? s->used : 0;
        if (chunk > s->cap - s->head)
            chunk = s->cap - s->head;
        const unsigned char *p = s->ring + s->head;
        pthread_mutex_unlock(&s->lock);

        struct pollfd fds[2] = { { .fd = s->wake_fd, .events = POLLIN },
                                 { .fd = watching ? s->fd : -1,
                                   .events = POLLIN | POLLRDHUP | (chunk ? POLLOUT : 0) } };
        if (poll(fds, 2, s->cfg.watch_ms) < 0)
            continue;
        uint64_t wakes;
        if ((fds[0].revents & POLLIN) && read(s->wake_fd, &wakes, sizeof wakes) < 0)
            continue;
        if (fds[1].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
            read_incoming(s);
        if (chunk && (fds[1].revents & POLLOUT))
            send_some(s, p, chunk);
    }
    return NULL;
}

static void wake_sender(net_sink *s)
{
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0) {
        /* The counter is full: the sender has wakes pending anyway. */
    }
}

net_sink *net_sink_start(int fd, const net_sink_config *cfg, char *err, size_t errlen)
{
    net_sink *s = calloc(1, sizeof *s);
    unsigned char *ring = s ? malloc(cfg->queue_bytes) : NULL;
    if (ring == NULL) {
        free(s);
        snprintf(err, errlen, "out of memory for the send queue");
        return NULL;
    }
    s->fd = fd;
    s->cfg = *cfg;
    s->ring = ring;
    s->cap = cfg->queue_bytes;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->changed, &attr);
    pthread_condattr_destroy(&attr);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

    int greeted = read_greeting(fd, cfg->greeting_ms);
    if (greeted < 0)
        snprintf(err, errlen, "the listener closed the connection at once");
    else if (cfg->series && greeted == 0)
        snprintf(err, errlen, "the peer is not `hprof listen` (it sent no greeting), and loop= sends a series of "
                 "reports that only `hprof listen` writes as files");
    else if (cfg->series && greeted < NET_SERIES_VERSION)
        snprintf(err, errlen, "the `hprof listen` there is too old to write loop='s series (its protocol is %d, "
                 "a series needs %d): run this hprof's `hprof listen` there, or drop loop=", greeted,
                 NET_SERIES_VERSION);
    else if (greeted && send_short(fd, cfg->series ? NET_SERIES_HELLO : NET_STREAM_HELLO, cfg->stall_ms) != 0)
        snprintf(err, errlen, "cannot answer the listener: %s", strerror(errno));
    else if (s->wake_fd < 0)
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
    else {
        s->framed = greeted > 0;
        /* Our thread must take no signal meant for the JVM's threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&s->sender, NULL, sender_main, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0) {
            s->sender_started = 1;
            return s;
        }
        snprintf(err, errlen, "cannot start the sender thread: %s", strerror(rc));
    }
    s->fd = -1;                       /* the caller still owns it */
    net_sink_close(s, NULL);
    return NULL;
}

int net_sink_framed(const net_sink *s)
{
    return s->framed;
}

/* ------------------------------------------------------------ the queue */

static void ring_put(net_sink *s, const void *data, size_t len)
{
    size_t tail = (s->head + s->used) % s->cap;
    size_t first = len < s->cap - tail ? len : s->cap - tail;
    memcpy(s->ring + tail, data, first);
    memcpy(s->ring, (const unsigned char *)data + first, len - first);
    s->used += len;
    if (s->used > s->stats.queue_peak)
        s->stats.queue_peak = s->used;
}

/* Payload bytes a frame could hold now (raw mode: no header). */
static size_t room_locked(const net_sink *s)
{
    size_t overhead = s->framed ? NET_FRAME_HEADER : 0;
    return s->dead || s->cap - s->used < overhead ? 0 : s->cap - s->used - overhead;
}

/* Queues one frame, which fits (room_locked); raw mode: its bytes as they are. */
static void put_frame_locked(net_sink *s, char type, const void *data, size_t len)
{
    if (s->used == 0)
        s->last_progress = net_now_ms();
    if (s->framed) {
        unsigned char header[NET_FRAME_HEADER];
        net_frame_header(header, type, (uint32_t)len);
        ring_put(s, header, sizeof header);
    }
    ring_put(s, data, len);
}

/* Queues what fits of report bytes, in frames; returns how many. */
static size_t put_data_locked(net_sink *s, const unsigned char *data, size_t len)
{
    size_t taken = 0;
    for (;;) {
        size_t take = room_locked(s);
        if (take > len - taken)
            take = len - taken;
        if (take > DATA_FRAME_MAX)
            take = DATA_FRAME_MAX;
        if (take == 0)
            return taken;
        put_frame_locked(s, NET_FRAME_DATA, data + taken, take);
        taken += take;
    }
}

size_t net_sink_offer(net_sink *s, const void *data, size_t len)
{
    pthread_mutex_lock(&s->lock);
    size_t taken = put_data_locked(s, data, len);
    pthread_mutex_unlock(&s->lock);
    if (taken)
        wake_sender(s);
    return taken;
}

/* Waits for a change until deadline; 0, or -1 once the deadline passed. */
static int wait_locked(net_sink *s, int64_t deadline_ms)
{
    if (net_now_ms() >= deadline_ms)
        return -1;
    struct timespec ts = { .tv_sec = deadline_ms / 1000, .tv_nsec = (long)(deadline_ms % 1000) * 1000000L };
    pthread_cond_timedwait(&s->changed, &s->lock, &ts);
    return 0;
}

int net_sink_control(net_sink *s, char type, const char *text, int64_t deadline_ms)
{
    size_t len = strlen(text);
    if (!s->framed || len > NET_FRAME_MAX)
        return 0;
    pthread_mutex_lock(&s->lock);
    while (deadline_ms >= 0 && !s->dead && room_locked(s) < len)
        if (wait_locked(s, deadline_ms) != 0)
            mark_dead_locked(s, TOO_SLOW);
    int queued = !s->dead && room_locked(s) >= len;
    if (queued)
        put_frame_locked(s, type, text, len);
    pthread_mutex_unlock(&s->lock);
    if (queued)
        wake_sender(s);
    return queued;
}

void net_sink_give_up(net_sink *s, const char *reason)
{
    pthread_mutex_lock(&s->lock);
    mark_dead_locked(s, reason);
    pthread_mutex_unlock(&s->lock);
}

int net_sink_live(net_sink *s, const char *text)
{
    return text[0] != '\0' && net_sink_control(s, NET_FRAME_LIVE, text, -1);
}

int net_sink_dead(net_sink *s, char *reason, size_t size)
{
    pthread_mutex_lock(&s->lock);
    int dead = s->dead;
    if (dead && reason)
        snprintf(reason, size, "%s", s->reason);
    pthread_mutex_unlock(&s->lock);
    return dead;
}

int net_sink_write(net_sink *s, const void *data, size_t len, int64_t deadline_ms)
{
    size_t taken = 0;
    pthread_mutex_lock(&s->lock);
    while (taken < len && !s->dead) {
        size_t n = put_data_locked(s, (const unsigned char *)data + taken, len - taken);
        taken += n;
        if (n > 0)
            wake_sender(s);
        else if (wait_locked(s, deadline_ms) != 0)
            mark_dead_locked(s, TOO_SLOW);
    }
    int rc = s->dead ? -1 : 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int net_sink_finish(net_sink *s, int64_t deadline_ms, char *reason, size_t size)
{
    pthread_mutex_lock(&s->lock);
    if (s->framed) {
        while (!s->dead && s->cap - s->used < NET_FRAME_HEADER)
            if (wait_locked(s, deadline_ms) != 0)
                mark_dead_locked(s, TOO_SLOW);
        if (!s->dead)
            put_frame_locked(s, NET_FRAME_END, "", 0);
        wake_sender(s);
    }
    while (!s->dead && s->used > 0)
        if (wait_locked(s, deadline_ms) != 0)
            mark_dead_locked(s, TOO_SLOW);
    s->ending = 1;
    if (!s->dead && !s->framed)
        shutdown(s->fd, SHUT_WR);    /* raw: EOF is the end; its close, the answer */
    wake_sender(s);
    while (!s->dead && !s->saved && !s->peer_closed)
        if (wait_locked(s, deadline_ms) != 0) {
            if (s->framed)
                mark_dead_locked(s, "it did not confirm that it saved the report");
            break;                    /* raw: an open peer took it all; that is all we can know */
        }
    int rc = s->dead ? -1 : 0;
    if (s->dead && reason)
        snprintf(reason, size, "%s", s->reason);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void net_sink_close(net_sink *s, net_sink_stats *stats)
{
    if (s == NULL)
        return;
    if (s->sender_started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = 1;
        pthread_mutex_unlock(&s->lock);
        wake_sender(s);
        pthread_join(s->sender, NULL);
    }
    if (stats)
        *stats = s->stats;
    if (s->fd >= 0)
        close(s->fd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
    free(s->ring);
    free(s);
}
