/*
 * old_prof_writer: cpu=old, the `java -prof` format that the JDK 5-8 HPROF
 * agent wrote for cpu=old in place of CPU TIME (hprof_io.c,
 * io_write_oldprof_*): the line
 *
 *   count callee caller time
 *
 * then one line per trace of (at most) two frames, callee first:
 *
 *   1000 Calls.leaf(I)I Calls.a(I)V 17
 *
 * calls, the callee and its caller as class.method(descriptor), and the
 * callee's CPU time in milliseconds with its callees included. A trace of one
 * frame (a thread's first method) has "<unknown caller>", an empty one
 * "<unknown callee>" too. Lines are ordered by calls, most first; rows
 * without calls are left out, and no cutoff applies (as in HPROF).
 */
#ifndef HPROF_OLD_PROF_WRITER_H
#define HPROF_OLD_PROF_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "../profile/report_rows.h"

#define OLD_PROF_HEADER "count callee caller time"

/* Writes the header line and the rows (any order; names from the tables).
 * 0, or -1 when out of memory (nothing written). */
int old_prof_write(profile_tables *tables, FILE *out, const times_row *rows, uint32_t n);

#endif
