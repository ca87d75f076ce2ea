/*
 * jfr_writer: profiles as one JFR recording (.jfr) that the JDK's `jfr`
 * tool and JFR parsers read: one chunk in the JDK's format (version 2.1,
 * compressed integers), its metadata declaring the types with the fields
 * the JDK gives them, one checkpoint holding the constant pools (threads,
 * stack traces, methods, classes, packages, symbols, frame types and
 * thread states), and the events.
 *
 * Which events a profile becomes is read from its value types (the names
 * every producer gives them, src/agent's collectors and src/reader alike):
 *
 *   samples + cpu             jdk.ExecutionSample, one per sample
 *   samples + wall            by the root pseudo frame [state].<name>:
 *                             running, runnable: jdk.ExecutionSample;
 *                             the others jdk.NativeMethodSample with the
 *                             JDK's thread state (left out: running and
 *                             runnable when a CPU profile is written too)
 *   calls + cpu               hprof.MethodTime, one per stack
 *   alloc_objects ...         hprof.AllocationSite, one per stack; with a
 *                             title saying "estimated", also one
 *                             jdk.ObjectAllocationSample per stack whose
 *                             weight is the stack's allocated bytes
 *   contentions + delay       jdk.JavaMonitorEnter, or jdk.ThreadPark when
 *                             the leaf (the lock's class) has the
 *                             signature "park" (src/snapshot/stack_profile.h),
 *                             one per contention, each 1/n of its delay
 *   waits + delay             jdk.JavaMonitorWait, or jdk.ThreadPark
 *   deadlock cycles           hprof.Deadlock, one per thread of each cycle a
 *   (profile_deadlock_get)    lock profile carries (monitor=y's dump), with
 *                             its stack, lock class and the lock's owner
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
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* Writes the n profiles to out as one recording; a profile of no kind
 * above is left out. 0, or -1 with the reason in err (out of memory, more
 * than 20,000,000 events, a write error). */
int jfr_write(const profile *const *profiles, uint32_t n, FILE *out, char *err, size_t errlen);

/* Is p of a kind jfr_write writes events for? */
int jfr_writes(const profile *p);

#endif
