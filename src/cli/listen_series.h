/*
 * listen_series: the files `hprof listen` writes for an agent with loop=
 * (a series, net_sink.h's 'P' frames): one complete report per period,
 * named from -o as the agent names loop='s files (series.h: %t the period's
 * start, %p the JVM's pid, %n its number; a name without '%' gets ".%t.%n"
 * before its extension), so that the listener's series is the one the agent
 * would have written locally.
 *
 * A period's bytes go to a temporary file beside its name (0600, what
 * arrives may be a heap dump), renamed to the name once the next period
 * begins or the stream ends: a shipper watching the directory never sees
 * half a report, and a period cut short (the agent gone) is removed. With
 * keep > 0 (--keep, as loop_keep=) only the last `keep` periods' files
 * stay. One period is open at a time; memory does not grow with the run.
 *
 * Pure C (stdio, rename/unlink); no sockets.
 */
#ifndef HPROF_CLI_LISTEN_SERIES_H
#define HPROF_CLI_LISTEN_SERIES_H

#include <stdint.h>
#include <stdio.h>

#include "output/series.h"

#define LISTEN_PATH_MAX 4096

typedef struct listen_series {
    const char   *pattern;                  /* -o */
    uint32_t      keep;                     /* --keep: 0 keeps every period */
    long          pid;                      /* the agent's, from its first period */
    output_series kept;                     /* the ring of periods whose files stay */
    int           ring_ready;
    series_period now;                      /* the period open (seq 0: none) */
    FILE         *out;
    char          part[LISTEN_PATH_MAX + 16];    /* its temporary file */
    char          name[LISTEN_PATH_MAX];         /* and the name it gets when complete */
    uint64_t      bytes;                    /* of the period open */
    uint64_t      complete, first_seq, last_seq;   /* periods written whole; the first's and last's numbers */
    char          last[LISTEN_PATH_MAX];    /* the last complete period's file */
    char          error[LISTEN_PATH_MAX + 256];
} listen_series;

/* A period frame's text ("seq <n>\nstart <unix s>\npid <pid>\n"): 0 with
 * *p and *pid set, or -1 when it is not one. */
int period_frame_parse(const char *text, series_period *p, long *pid);

void listen_series_init(listen_series *s, const char *pattern, uint32_t keep);

/* A period frame arrived: the period open is complete (renamed, and the
 * oldest beyond keep deleted), the next one opens. 0, or -1 with s->error
 * (a malformed frame, numbers not rising, a file that cannot be made). */
int listen_series_period(listen_series *s, const char *frame_text);

/* Report bytes of the period open. 0, or -1 with s->error. */
int listen_series_write(listen_series *s, const void *bytes, size_t n);

/* The stream ended ('E'): the period open is complete. 0, or -1 with s->error. */
int listen_series_end(listen_series *s);

/* The stream stopped mid-period: its temporary file is removed. Returns
 * the period that was cut short (0: none was open). */
uint64_t listen_series_abandon(listen_series *s);

void listen_series_free(listen_series *s);

#endif
