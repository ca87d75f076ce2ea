/* net_report.c: see net_report.h. */
#include "net_report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIP_CHUNK (64u << 10)

/* A period frame to send once the spool is shipped up to `at`. */
typedef struct period_mark {
    uint64_t at;
    char     text[96];
} period_mark;

struct net_report {
    net_sink   *sink;
    FILE       *spool;
    uint64_t    shipped;          /* spool bytes already queued */
    period_mark marks[NET_PERIODS_BEHIND];    /* a ring, oldest at marks_head */
    unsigned    marks_n, marks_head;
};

/* An unlinked temporary file: nothing to clean up, whatever happens. */
static FILE *open_spool(char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/hprof-net-XXXXXX", dir);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (f == NULL) {
        snprintf(err, errlen, "cannot create a spool file in %s (set TMPDIR to a writable directory): %s",
                 dir, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return f;
}

net_report *net_report_open(const char *address, const net_sink_config *cfg, FILE **spool,
                            char *err, size_t errlen)
{
    net_report *n = calloc(1, sizeof *n);
    if (n == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    n->spool = open_spool(err, errlen);
    int fd = n->spool ? net_connect(address, 5000, err, errlen) : -1;
    n->sink = fd >= 0 ? net_sink_start(fd, cfg, err, errlen) : NULL;
    if (n->sink == NULL) {
        if (fd >= 0)
            close(fd);
        if (n->spool)
            fclose(n->spool);
        free(n);
        return NULL;
    }
    *spool = n->spool;
    return n;
}

/* Moves spool bytes to the sink: without waiting (deadline_ms < 0), or
 * all of them by deadline_ms. Returns the bytes left, or -1 if the
 * spool cannot be read or the sink refused to wait. */
static int64_t ship(net_report *n, int64_t deadline_ms)
{
    if (fflush(n->spool) != 0)
        return -1;
    off_t end = ftello(n->spool);
    if (end < 0)
        return -1;
    static unsigned char chunk[SHIP_CHUNK];    /* one shipper at a time: the agent's lock */
    for (;;) {
        /* A period's frame goes once every byte before it is queued. */
        const period_mark *mark = n->marks_n ? &n->marks[n->marks_head] : NULL;
        if (mark && mark->at == n->shipped) {
            if (!net_sink_control(n->sink, NET_FRAME_PERIOD, mark->text, deadline_ms)) {
                if (deadline_ms >= 0)
                    return -1;
                break;
            }
            n->marks_head = (n->marks_head + 1) % NET_PERIODS_BEHIND;
            n->marks_n--;
            continue;
        }
        uint64_t limit = mark ? mark->at : (uint64_t)end;
        if (n->shipped >= limit)
            break;
        size_t want = limit - n->shipped < sizeof chunk ? (size_t)(limit - n->shipped) : sizeof chunk;
        ssize_t got = pread(fileno(n->spool), chunk, want, (off_t)n->shipped);
        if (got <= 0)
            return -1;
        if (deadline_ms >= 0) {
            if (net_sink_write(n->sink, chunk, (size_t)got, deadline_ms) != 0)
                return -1;
            n->shipped += (uint64_t)got;
            continue;
        }
        size_t taken = net_sink_offer(n->sink, chunk, (size_t)got);
        n->shipped += taken;
        if (taken < (size_t)got)
            break;
    }
    if (n->shipped == (uint64_t)end && end > 0 && n->marks_n == 0) {
        /* All queued: start the spool over, so that it never holds more
         * than what the listener has yet to take. */
        if (fseeko(n->spool, 0, SEEK_SET) == 0 && ftruncate(fileno(n->spool), 0) == 0)
            n->shipped = 0;
    }
    /* A period frame not yet queued waits too. */
    return (int64_t)end - (int64_t)n->shipped + (n->marks_n ? 1 : 0);
}

uint64_t net_report_ship(net_report *n)
{
    int64_t left = ship(n, -1);
    return left < 0 ? 0 : (uint64_t)left;
}

int net_report_finish(net_report *n, int64_t deadline_ms, char *reason, size_t size)
{
    if (ship(n, deadline_ms) < 0) {
        if (!net_sink_dead(n->sink, reason, size))
            snprintf(reason, size, "the spool file could not be read: %s", strerror(errno));
        return -1;
    }
    return net_sink_finish(n->sink, deadline_ms, reason, size);
}

int net_report_period(net_report *n, series_period p, long pid)
{
    if (n->marks_n == NET_PERIODS_BEHIND) {
        char why[128];
        snprintf(why, sizeof why, "it fell %d periods behind", NET_PERIODS_BEHIND);
        net_sink_give_up(n->sink, why);
        return -1;
    }
    off_t end = fflush(n->spool) == 0 ? ftello(n->spool) : -1;
    if (end < 0) {
        char why[160];
        snprintf(why, sizeof why, "the spool file could not be written: %s", strerror(errno));
        net_sink_give_up(n->sink, why);
        return -1;
    }
    period_mark *m = &n->marks[(n->marks_head + n->marks_n++) % NET_PERIODS_BEHIND];
    m->at = (uint64_t)end;
    snprintf(m->text, sizeof m->text, "seq %" PRIu64 "\nstart %" PRIdMAX "\npid %ld\n", p.seq, (intmax_t)p.start,
             pid);
    net_report_ship(n);
    return 0;
}

void net_report_give_up(net_report *n, const char *reason)
{
    net_sink_give_up(n->sink, reason);
}

int net_report_dead(net_report *n, char *reason, size_t size)
{
    return net_sink_dead(n->sink, reason, size);
}

void net_report_live(net_report *n, const char *text)
{
    net_sink_live(n->sink, text);
}

void net_report_close(net_report *n, net_sink_stats *stats)
{
    if (n == NULL)
        return;
    net_sink_close(n->sink, stats);
    fclose(n->spool);
    free(n);
}
