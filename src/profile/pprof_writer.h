/*
 * pprof_writer: a profile as pprof's profile.proto (github.com/google/pprof,
 * proto/profile.proto), gzipped, as `go tool pprof`, Grafana Pyroscope and
 * Parca read it: sample types from the profile's value types, one Location
 * per frame (a Function with name, system name and file; a Line with the
 * line number), threads as a "thread" label, period and times when known.
 */
#ifndef HPROF_PPROF_WRITER_H
#define HPROF_PPROF_WRITER_H

#include <stddef.h>
#include <stdio.h>

#include "profile.h"

/* Write p to out. 0, or -1 with a message in err (out of memory, write error). */
int pprof_write(const profile *p, FILE *out, char *err, size_t errlen);

#endif
