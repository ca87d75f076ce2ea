/*
 * `hprof listen` (the front end of the agent's net=) and `hprof run`.
 *
 * listen accepts one agent's connection, greets it (then the agent frames
 * what it sends, src/output/net_sink.h), writes the report bytes to a file,
 * and shows the agent's live summaries: redrawn on a terminal, a line at
 * connect and at the end otherwise. A sender that does not answer the
 * greeting (an old-style one) is recorded raw, every byte as it came. An
 * agent with loop= sends a series: each period's report goes to a file of
 * its own, named from -o (listen_series.h).
 */
#ifndef HPROF_CLI_LISTEN_H
#define HPROF_CLI_LISTEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LISTEN_DEFAULT_PORT 9999
#define PERIOD_FRAME_MAX    256        /* a 'P' frame's text is far shorter */

/* hprof listen [--port N] [--bind ADDR] [--keep N] -o FILE: the exit status. */
int listen_main(int argc, char **argv);

/* hprof run [options] [--] java ARGS...: execs java with
 * -agentpath:<library>=<options>; returns only on an error (the status). */
int run_java(const char *library, int argc, char **argv);

/* The agent's frames, as they arrive in pieces of any size. */
typedef struct frame_handler {
    void *ctx;
    int  (*data)(void *ctx, const void *bytes, size_t n);    /* 'D': 0, or -1 to stop */
    void (*live)(void *ctx, const char *text);               /* 'L', whole */
    void (*end)(void *ctx);                                  /* 'E' */
    int  (*period)(void *ctx, const char *text);             /* 'P', whole: 0, or -1 to stop;
                                                                NULL: not a series, 'P' refused */
} frame_handler;

typedef struct frame_reader {
    unsigned char header[5];
    size_t        header_got;
    uint32_t      len, got;        /* the current frame's payload */
    char          live[16384];     /* an 'L' or 'P' frame's text; longer 'L' ones are cut */
    int           ended;
    char          error[128];
} frame_reader;

/* Feeds n received bytes; 0, or -1 with reader->error set (a malformed
 * stream, or the data handler refused). Bytes after 'E' are an error. */
int frame_reader_feed(frame_reader *r, const frame_handler *h, const unsigned char *p, size_t n);

/* The live summary's "samples <total>" value, or -1 without one. */
long long live_summary_samples(const char *text);

/* The summary as listen shows it on a terminal: status lines, the sample
 * count and rate, the top methods with their shares. */
void live_summary_render(FILE *out, const char *text, double rate);

#endif
