/*
 * series: loop='s files. With loop=DURATION every output (file=, pprof=,
 * flamegraph=, collapsed=, jfr=) becomes a series, one complete file per
 * period, its name made from the option's value:
 *
 *   %t  the period's start, UTC: 20261127T234500Z
 *   %p  the process id
 *   %n  the period's number: 1, 2, ...
 *   %%  a '%'
 *
 * A name without any '%' gets ".%t.%n" before its extension (the last one,
 * or .pb.gz / .txt.gz / .hprof.txt whole), so that no period overwrites
 * another: cpu.pb.gz -> cpu.20261127T234500Z.1.pb.gz.
 *
 * loop_keep=N keeps the files of the last N periods: when a period ends
 * the oldest period beyond N is handed back to be deleted (the series keeps
 * the start of each kept period, since its names hold it).
 *
 * Pure C: no JVMTI, no I/O; the orchestrator (agent.c) names, writes and
 * deletes the files.
 */
#ifndef HPROF_SERIES_H
#define HPROF_SERIES_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* How long a formatted %t is ("20261127T234500Z"). */
#define SERIES_TIME_LEN 16

typedef struct series_period {
    uint64_t seq;                 /* 1, 2, ... */
    time_t   start;               /* wall clock, for %t */
} series_period;

typedef struct output_series {
    long          pid;            /* %p */
    uint32_t      keep;           /* loop_keep=: periods whose files are kept (0: all) */
    series_period now;            /* the period running */
    series_period *kept;          /* keep entries (a ring): the periods that have files */
    uint32_t      kept_n, kept_head;
} output_series;

/* Is `text` a good name for a series? 0, or -1 with a message naming the
 * option (an unknown %-escape, a name that could grow past max_len). */
int series_check_name(const char *option, const char *text, size_t max_len, char *err, size_t errlen);

/* The name of `text` for period p of process pid (the default suffix added
 * when it has no '%'). 0, or -1 if it does not fit in size (out then holds
 * what fitted). */
int series_name_at(const char *text, series_period p, long pid, char *out, size_t size);

/* "20261127T234500Z" (UTC) into out (at least SERIES_TIME_LEN + 1 bytes). */
void series_format_time(time_t t, char *out, size_t size);

/* The first period starts at `start`. keep: loop_keep= (0: every file is
 * kept). 0, or -1 when out of memory for the ring. */
int  series_init(output_series *s, long pid, uint32_t keep, time_t start);
void series_free(output_series *s);

/* The name of `text` for the period running. */
int series_name(const output_series *s, const char *text, char *out, size_t size);

/* The period running ends, the next starts at `start`. Returns 1 and sets
 * *drop to a period whose files must now go (loop_keep= exceeded), else 0. */
int series_next(output_series *s, time_t start, series_period *drop);

#endif
