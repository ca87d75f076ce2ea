/*
 * stack_table: whole stacks (up to STACK_MAX_FRAMES frames, not cut at
 * depth=), for the outputs that show them (pprof=, flamegraph=, collapsed=).
 *
 * A depth= TRACE is what HPROF's report prints; a whole stack is what a
 * flame graph needs. The collectors that record stacks (cpu=samples,
 * heap=sites, monitor=y) walk once, deep, when one of those outputs is on,
 * and trace_builder derives the TRACE from the same walk, so both always
 * describe the same samples. Each stack remembers the TRACE it was derived
 * with, so a collector can key its counts by stack and still write its
 * report rows by trace.
 *
 * A stack is (thread serial or 0, frames callee first), each frame a method
 * serial and a line (line numbers always, whatever lineno= says: lineno=
 * is about the text report). Frames are not interned in the shared frame
 * table, which format=b writes out whole.
 *
 * One table per profile_tables (the stacks are of its methods and threads),
 * made with them and freed with them, behind one mutex; never used from a
 * signal handler. Bounded: at most STACK_TABLE_MAX_STACKS stacks and
 * STACK_TABLE_MAX_BYTES bytes of keys; stack_intern returns 0 past that and
 * the caller counts what it could not keep (a row of its own, never lost).
 */
#ifndef HPROF_STACK_TABLE_H
#define HPROF_STACK_TABLE_H

#include <pthread.h>
#include <stdint.h>

#include "keytab.h"
#include "tables.h"

#define STACK_MAX_FRAMES        256
#define STACK_TABLE_MAX_STACKS  (1u << 20)
#define STACK_TABLE_MAX_BYTES   ((uint64_t)256 << 20)

typedef uint32_t stack_id;     /* 1, 2, ...; 0: none (table full, out of memory) */

/* How a Java frame ran, where the sample could tell (src/cpu/code_map.h):
 * only the top Java frames of a CPU or wall sample are ever known. */
enum {
    JAVA_RUN_UNKNOWN = 0,
    JAVA_RUN_INTERPRETED,
    JAVA_RUN_COMPILED,         /* the compiled method the code belongs to */
    JAVA_RUN_INLINED,          /* inlined into a compiled method below it */
};

typedef struct stack_frame {
    serial_t     method;
    signed int   line : 24;    /* > 0, LINE_UNKNOWN or LINE_NATIVE (a line past
                                * 8,388,607 is kept as LINE_UNKNOWN) */
    unsigned int run : 8;      /* JAVA_RUN_* */
} stack_frame;

/* The table, a part of profile_tables (tables.c). */
typedef struct stack_table {
    pthread_mutex_t lock;
    int             made;            /* keys initialised (at the first stack) */
    keytab          keys;
    serial_t       *traces;          /* by index */
    uint32_t        traces_cap;
    uint64_t        key_bytes;       /* bytes of all keys, against STACK_TABLE_MAX_BYTES */
} stack_table;
void stack_table_init(stack_table *st);
void stack_table_free(stack_table *st);
/* The tables' stacks (tables.c). */
stack_table *profile_tables_stacks(profile_tables *tables);

/* The id of this stack (made if new, with `trace` as its TRACE; a stack met
 * again keeps the trace it was made with). n is cut at STACK_MAX_FRAMES. */
stack_id stack_intern(profile_tables *tables, serial_t thread_serial, const stack_frame *frames, uint32_t n, serial_t trace);

/* What a stack is: *frames points to *n frames, callee first, in storage
 * that never moves (valid until the tables are freed). 0, or -1 if no such id. */
int stack_get(profile_tables *tables, stack_id id, serial_t *thread_serial, const stack_frame **frames, uint32_t *n,
              serial_t *trace);

uint32_t stack_count(profile_tables *tables);    /* ids are 1..stack_count() */


#endif
