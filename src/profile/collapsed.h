/*
 * collapsed: a profile as "collapsed stacks", the input of flamegraph.pl and
 * speedscope: one line per distinct stack, frames root first separated by
 * ';', a space, one value. Samples of the same stack on several threads are
 * one line (thread names are not frames).
 */
#ifndef HPROF_COLLAPSED_H
#define HPROF_COLLAPSED_H

#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* A stack with no frames is written as this one frame (HPROF's name for an
 * empty trace), so that totals agree with the profile's. */
#define COLLAPSED_EMPTY_STACK "<empty>"

/* 0, or -1 on a write error or out of memory. Zero-valued stacks are left out. */
int collapsed_write_profile(const profile *p, uint32_t value_index, FILE *out);

#endif
