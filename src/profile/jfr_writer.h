/*
 * jfr_writer: a CPU-samples profile as a JFR recording (.jfr) that the JDK's
 * `jfr` tool and JFR parsers read: one chunk in the JDK's format (version
 * 2.1, compressed integers), its metadata declaring the types with the
 * fields the JDK gives them, one checkpoint holding the constant pools
 * (threads, stack traces, methods, classes, packages, symbols, frame and
 * thread states), and one jdk.ExecutionSample event per sample.
 *
 * A profile's samples are merged counts: a sample of count n becomes n
 * events with its stack and thread, their start times spread evenly over
 * the profile's time (the profile keeps no time per sample).
 *
 * Pure C; memory: the whole recording, built in memory, then written.
 */
#ifndef HPROF_JFR_WRITER_H
#define HPROF_JFR_WRITER_H

#include <stddef.h>
#include <stdio.h>

#include "profile.h"

/* Writes p (its value 0 counts samples) to out. 0, or -1 with the reason in
 * err (out of memory, more than 20,000,000 samples, a write error). */
int jfr_write_samples(const profile *p, FILE *out, char *err, size_t errlen);

#endif
