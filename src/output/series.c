/* series.c: see series.h. */
#include "series.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a name without '%' gets, before its extension. */
#define DEFAULT_SUFFIX ".%t.%n"
/* The longest expansion of one escape: %n and %p as 20 digits, %t 16. */
#define ESCAPE_MAX 20

void series_format_time(time_t t, char *out, size_t size)
{
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, size, "%Y%m%dT%H%M%SZ", &tm) == 0)
        snprintf(out, size, "%" PRIdMAX, (intmax_t)t);
}

/* Where DEFAULT_SUFFIX goes: before a known compound extension or the last
 * one of the file's own name (not of a directory), else at the end. */
static size_t suffix_position(const char *path)
{
    static const char *const compound[] = { ".pb.gz", ".txt.gz", ".hprof.txt" };
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t base_len = strlen(base);
    for (size_t i = 0; i < sizeof compound / sizeof compound[0]; i++) {
        size_t n = strlen(compound[i]);
        if (base_len > n && strcmp(base + base_len - n, compound[i]) == 0)
            return len - n;
    }
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? (size_t)(dot - path) : len;
}

/* text with DEFAULT_SUFFIX when it has no '%'; -1 if that does not fit. */
static int with_suffix(const char *text, char *out, size_t size)
{
    int n;
    if (strchr(text, '%') != NULL) {
        n = snprintf(out, size, "%s", text);
    } else {
        size_t at = suffix_position(text);
        n = snprintf(out, size, "%.*s%s%s", (int)at, text, DEFAULT_SUFFIX, text + at);
    }
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int series_check_name(const char *option, const char *text, size_t max_len, char *err, size_t errlen)
{
    size_t grown = strlen(text) + strlen(DEFAULT_SUFFIX);
    for (const char *p = strchr(text, '%'); p; p = strchr(p + 2, '%')) {
        if (p[1] != 't' && p[1] != 'p' && p[1] != 'n' && p[1] != '%') {
            snprintf(err, errlen, "hprof: bad value '%s' for option '%s': with loop=, a name may hold %%t "
                     "(the period's start, UTC), %%p (the pid), %%n (the period's number) and %%%% (a %%), "
                     "not '%%%.1s'", text, option, p[1] ? p + 1 : "");
            return -1;
        }
        if (p[1] != '%')
            grown += ESCAPE_MAX;
    }
    if (grown + 2 * ESCAPE_MAX >= max_len) {
        snprintf(err, errlen, "hprof: the name given to '%s' (%.200s...) is too long for loop='s file names, "
                 "which add the time and the period's number; give a shorter one", option, text);
        return -1;
    }
    return 0;
}

int series_name_at(const char *text, series_period p, long pid, char *out, size_t size)
{
    char templ[8192];
    if (size == 0)
        return -1;
    out[0] = '\0';
    if (with_suffix(text, templ, sizeof templ) != 0)
        return -1;
    size_t used = 0;
    for (const char *c = templ; *c;) {
        char piece[32];
        int escape = c[0] == '%' && (c[1] == 't' || c[1] == 'p' || c[1] == 'n' || c[1] == '%');
        if (!escape)
            snprintf(piece, sizeof piece, "%c", c[0]);
        else if (c[1] == 't')
            series_format_time(p.start, piece, sizeof piece);
        else if (c[1] == 'p')
            snprintf(piece, sizeof piece, "%ld", pid);
        else if (c[1] == 'n')
            snprintf(piece, sizeof piece, "%" PRIu64, p.seq);
        else
            snprintf(piece, sizeof piece, "%%");
        c += escape ? 2 : 1;
        size_t n = strlen(piece);
        if (used + n >= size)
            return -1;
        memcpy(out + used, piece, n + 1);
        used += n;
    }
    return 0;
}

int series_init(output_series *s, long pid, uint32_t keep, time_t start)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->keep = keep;
    s->now = (series_period){ 1, start };
    if (keep) {
        s->kept = calloc(keep, sizeof *s->kept);
        if (s->kept == NULL)
            return -1;
    }
    return 0;
}

void series_free(output_series *s)
{
    free(s->kept);
    s->kept = NULL;
}

int series_name(const output_series *s, const char *text, char *out, size_t size)
{
    return series_name_at(text, s->now, s->pid, out, size);
}

int series_next(output_series *s, time_t start, series_period *drop)
{
    int dropped = 0;
    if (s->keep) {
        /* The ring holds the last `keep` periods that ended; the one they
         * push out has files to delete. */
        if (s->kept_n == s->keep) {
            *drop = s->kept[s->kept_head];
            dropped = 1;
        } else {
            s->kept_n++;
        }
        s->kept[s->kept_head] = s->now;
        s->kept_head = (s->kept_head + 1) % s->keep;
    }
    s->now = (series_period){ s->now.seq + 1, start };
    return dropped;
}
