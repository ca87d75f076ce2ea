/*
 * collapsed_writer: the "collapsed stacks" format that flame-graph tools
 * (flamegraph.pl, speedscope, async-profiler's converters) read: one line per
 * distinct stack, frames root first separated by ';', a space, the count.
 */
#ifndef HPROF_COLLAPSED_WRITER_H
#define HPROF_COLLAPSED_WRITER_H

#include <stdio.h>

/* Write every stack the CPU collector kept. Returns 0, or -1 on a write error. */
int collapsed_write(FILE *out);

#endif
