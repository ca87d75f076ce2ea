/*
 * net_sink: the agent's end of net=host:port. A connected socket, a bounded
 * in-memory send queue and a sender thread of our own (a plain pthread with
 * every signal blocked, never a Java thread) that drains the queue to the
 * socket and, while idle, watches it for the listener going away.
 *
 * Whoever feeds the queue (the agent thread) never waits for the network:
 * net_sink_offer takes what fits and returns. Only net_sink_finish, at the
 * end, waits for the listener, within a deadline.
 *
 * The protocol (the listener is `hprof listen`, src/cli/listen.c):
 *   listener -> agent  "HPROF-LISTEN 2\n" right after accept (2: it writes
 *                      series; an older one says 1)
 *   agent -> listener  "HPROF-STREAM 1\n" (one report) or, with loop=,
 *                      "HPROF-STREAM 2\n" (a series), then frames: 1 byte
 *                      type, 4 bytes big-endian payload length, payload:
 *                        'D' report bytes, as the file would hold them
 *                        'L' a live summary, lines of text
 *                        'P' (series only) a period begins: "seq <n>\n
 *                            start <unix seconds>\npid <pid>\n"; the 'D'
 *                            bytes up to the next 'P' or 'E' are its whole
 *                            report, so the next 'P' completes it
 *                        'E' the end (empty)
 *   listener -> agent  "HPROF-SAVED\n" once the report is safe in its file
 * A listener that sends no greeting within the wait (nc -l, HPROF's old
 * front ends) gets the raw report bytes and nothing else. A series needs a
 * listener of protocol 2: the agent refuses any other at connection.
 *
 * Pure C and pthreads; no JVMTI.
 */
#ifndef HPROF_NET_SINK_H
#define HPROF_NET_SINK_H

#include <stddef.h>
#include <stdint.h>

#define NET_GREETING      "HPROF-LISTEN 2\n"
#define NET_STREAM_HELLO  "HPROF-STREAM 1\n"
#define NET_SERIES_HELLO  "HPROF-STREAM 2\n"
#define NET_SERIES_VERSION 2          /* the first listener protocol that writes series */
#define NET_SAVED         "HPROF-SAVED\n"
#define NET_FRAME_HEADER  5
#define NET_FRAME_DATA    'D'
#define NET_FRAME_LIVE    'L'
#define NET_FRAME_END     'E'
#define NET_FRAME_PERIOD  'P'
#define NET_FRAME_MAX     (1u << 20)     /* largest payload either side sends or accepts */

typedef struct net_sink net_sink;

typedef struct net_sink_config {
    size_t queue_bytes;      /* the send queue's bound */
    int    greeting_ms;      /* how long to wait for the listener's greeting */
    int    stall_ms;         /* queued bytes and no progress this long: the listener is dead */
    int    watch_ms;         /* how often an idle sender looks at the socket */
    int    series;           /* loop=: a series, for a listener of NET_SERIES_VERSION or later only */
} net_sink_config;

typedef struct net_sink_stats {
    uint64_t sent;           /* bytes the socket took (frame headers included) */
    size_t   queue_peak;     /* most bytes ever queued at once */
} net_sink_stats;

net_sink_config net_sink_default_config(void);

/* A TCP connection to "host:port" ([v6addr]:port too) within timeout_ms:
 * the descriptor, or -1 with a message in err naming what failed. */
int net_connect(const char *host_port, int timeout_ms, char *err, size_t errlen);

/* Takes over fd: waits for the greeting, answers it (framed mode) or not
 * (raw mode), starts the sender thread. NULL with a message in err. */
net_sink *net_sink_start(int fd, const net_sink_config *cfg, char *err, size_t errlen);

int net_sink_framed(const net_sink *s);

/* Queues up to len report bytes without waiting; returns how many it took
 * (0 when the queue is full or the listener is gone). */
size_t net_sink_offer(net_sink *s, const void *data, size_t len);

/* A control frame (a period's start, framed mode only), queued whole:
 * without waiting (deadline_ms < 0: 0 when it does not fit now), or waiting
 * for room until deadline_ms (net_now_ms clock; the sink is dead if it
 * passes). 1 if queued. */
int net_sink_control(net_sink *s, char type, const char *text, int64_t deadline_ms);

/* Gives the listener up (the sink is then dead) with this reason. */
void net_sink_give_up(net_sink *s, const char *reason);

/* A live summary frame, framed mode only; dropped when it does not fit
 * (a later one replaces it). Returns 1 if queued. */
int net_sink_live(net_sink *s, const char *text);

/* 1 if the listener is gone or stalled, with the reason in reason. */
int net_sink_dead(net_sink *s, char *reason, size_t size);

/* Queues len bytes, waiting for room until deadline_ms (CLOCK_MONOTONIC
 * milliseconds, see net_now_ms). 0, or -1 if the listener is gone or the
 * deadline passed (the sink is then dead). */
int net_sink_write(net_sink *s, const void *data, size_t len, int64_t deadline_ms);

/* The end: every queued byte sent, the 'E' frame, and the listener's
 * confirmation (framed) or its close (raw), all by deadline_ms. 0 if the
 * report was delivered; -1 with the reason otherwise. */
int net_sink_finish(net_sink *s, int64_t deadline_ms, char *reason, size_t size);

/* Stops the sender, closes the socket, frees the sink. */
void net_sink_close(net_sink *s, net_sink_stats *stats);

int64_t net_now_ms(void);

/* Frame header encoding, shared with the listener. */
void     net_frame_header(unsigned char out[NET_FRAME_HEADER], char type, uint32_t len);
uint32_t net_frame_length(const unsigned char header[NET_FRAME_HEADER]);

#endif
