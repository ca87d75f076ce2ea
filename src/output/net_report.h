/*
 * net_report: a report for net=host:port. The writers (text_writer,
 * hb_writer) write to a spool file, at disk speed as with file=, whatever
 * thread they run on: a heap dump in format=b is written from inside the
 * JVM's heap walk, at a safepoint, where waiting for the network would stop
 * every application thread. The agent thread then moves the spool's bytes
 * into the sink's bounded queue as room allows (net_report_ship, never
 * waiting), and the spool is emptied once all of it is queued.
 *
 * With loop= (a series, net_sink_config.series) each period's report
 * follows a period frame: net_report_period marks where in the spool the
 * next period begins, and the shipper sends the frame when it gets there,
 * so the listener sees every byte of a period between its frame and the
 * next. Marks wait in a small ring: a listener that falls NET_PERIODS_BEHIND
 * periods behind is given up, as one that stalls is.
 *
 * Pure C; no JVMTI.
 */
#ifndef HPROF_NET_REPORT_H
#define HPROF_NET_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "net_sink.h"
#include "series.h"

/* Periods whose start the listener may still be waiting for. */
#define NET_PERIODS_BEHIND 8

typedef struct net_report net_report;

/* Connects to address (host:port), greets the listener, and makes the
 * spool (in $TMPDIR or /tmp, unlinked at once) that *spool writes to.
 * NULL with a message in err. */
net_report *net_report_open(const char *address, const net_sink_config *cfg, FILE **spool,
                            char *err, size_t errlen);

/* Queues what the spool holds, as far as the queue has room; returns the
 * bytes still waiting in the spool. Never waits for the network. */
uint64_t net_report_ship(net_report *n);

/* The end: everything shipped and delivered by deadline_ms (net_now_ms
 * clock); 0, or -1 with the reason. */
int net_report_finish(net_report *n, int64_t deadline_ms, char *reason, size_t size);

/* Period p of process pid begins at the spool's end (a series). 0, or -1
 * when the listener is NET_PERIODS_BEHIND periods behind: it is then given
 * up (net_report_dead says why). */
int net_report_period(net_report *n, series_period p, long pid);

/* Gives the listener up with this reason (a period that cannot be sent). */
void net_report_give_up(net_report *n, const char *reason);

/* 1 if the listener is gone (reason said). */
int net_report_dead(net_report *n, char *reason, size_t size);

/* A live summary for the listener (framed mode; dropped if no room). */
void net_report_live(net_report *n, const char *text);

/* Closes the connection and the spool (which *spool named). */
void net_report_close(net_report *n, net_sink_stats *stats);

#endif
