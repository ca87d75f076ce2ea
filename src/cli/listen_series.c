/* listen_series.c: see listen_series.h. */
#include "cli/listen_series.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "<key> <digits>\n" at *at: the number, *at moved past it; -1 otherwise. */
static int field(const char **at, const char *key, uint64_t max, uint64_t *value)
{
    size_t klen = strlen(key);
    const char *p = *at;
    if (strncmp(p, key, klen) != 0 || p[klen] != ' ')
        return -1;
    p += klen + 1;
    uint64_t v = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p++ - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (p == digits || *p != '\n')
        return -1;
    *at = p + 1;
    *value = v;
    return 0;
}

int period_frame_parse(const char *text, series_period *p, long *pid)
{
    uint64_t seq, start, id;
    const char *at = text;
    if (field(&at, "seq", UINT64_MAX, &seq) != 0 || field(&at, "start", INT32_MAX * 4ull, &start) != 0 ||
        field(&at, "pid", INT32_MAX, &id) != 0 || *at != '\0' || seq == 0)
        return -1;
    *p = (series_period){ seq, (time_t)start };
    *pid = (long)id;
    return 0;
}

void listen_series_init(listen_series *s, const char *pattern, uint32_t keep)
{
    memset(s, 0, sizeof *s);
    s->pattern = pattern;
    s->keep = keep;
}

static int fail(listen_series *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(listen_series *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* The period open is whole: its file gets its name; the one --keep no
 * longer keeps goes. */
static int complete(listen_series *s)
{
    if (s->out == NULL)
        return 0;
    int bad = fflush(s->out) != 0 || fsync(fileno(s->out)) != 0;
    int e = errno;
    bad = fclose(s->out) != 0 || bad;
    s->out = NULL;
    if (bad || rename(s->part, s->name) != 0) {
        if (!bad)
            e = errno;
        unlink(s->part);
        return fail(s, "cannot write %s: %s", s->name, strerror(e));
    }
    if (s->complete++ == 0)
        s->first_seq = s->now.seq;
    s->last_seq = s->now.seq;
    snprintf(s->last, sizeof s->last, "%s", s->name);
    series_period drop;
    s->kept.now = s->now;
    if (s->ring_ready && series_next(&s->kept, 0, &drop)) {
        char old[LISTEN_PATH_MAX];
        if (series_name_at(s->pattern, drop, s->pid, old, sizeof old) == 0 && unlink(old) != 0 && errno != ENOENT)
            fprintf(stderr, "hprof listen: --keep %u: cannot delete %s: %s\n", s->keep, old, strerror(errno));
    }
    return 0;
}

int listen_series_period(listen_series *s, const char *frame_text)
{
    series_period p;
    long pid;
    if (period_frame_parse(frame_text, &p, &pid) != 0)
        return fail(s, "a malformed period frame");
    if (s->now.seq && (p.seq <= s->now.seq || pid != s->pid))
        return fail(s, "a period frame out of order (its number must rise, its pid stay)");
    if (complete(s) != 0)
        return -1;
    if (!s->ring_ready) {
        s->pid = pid;
        if (series_init(&s->kept, pid, s->keep, p.start) != 0)
            return fail(s, "out of memory for --keep");
        s->ring_ready = 1;
    }
    s->now = p;
    s->bytes = 0;
    if (series_name_at(s->pattern, p, pid, s->name, sizeof s->name) != 0)
        return fail(s, "the name -o %.300s gives period %" PRIu64 " is too long", s->pattern, p.seq);
    snprintf(s->part, sizeof s->part, "%s.partXXXXXX", s->name);
    /* mkostemp: a new file of our own, 0600, never through a link. */
    int fd = mkostemp(s->part, O_CLOEXEC);
    s->out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (s->out == NULL) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(s->part);
        }
        return fail(s, "cannot create a file beside %s (-o): %s", s->name, strerror(e));
    }
    return 0;
}

int listen_series_write(listen_series *s, const void *bytes, size_t n)
{
    if (s->out == NULL)
        return fail(s, "report bytes before the first period frame");
    if (fwrite(bytes, 1, n, s->out) != n)
        return fail(s, "cannot write %s: %s", s->part, strerror(errno));
    s->bytes += n;
    return 0;
}

int listen_series_end(listen_series *s)
{
    return complete(s);
}

uint64_t listen_series_abandon(listen_series *s)
{
    if (s->out == NULL)
        return 0;
    fclose(s->out);
    s->out = NULL;
    unlink(s->part);
    return s->now.seq;
}

void listen_series_free(listen_series *s)
{
    listen_series_abandon(s);
    if (s->ring_ready)
        series_free(&s->kept);
    s->ring_ready = 0;
}
