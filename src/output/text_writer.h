/*
 * text_writer: HPROF's text format (java.hprof.txt, "JAVA PROFILE 1.0.1").
 *
 * The file is written in pieces: the header once, then at each dump (SIGQUIT
 * and VM exit) the records that are new since the last dump (THREAD START,
 * THREAD END, TRACE) followed by a cumulative CPU SAMPLES section, as the
 * JDK 5-8 agent did. The writer remembers what it has written (serials are
 * dense, so high-water marks suffice), so every trace a section refers to is
 * in the file exactly once. Layout and widths follow the JDK agent, which old
 * scripts split on; see docs/formats.md.
 */
#ifndef HPROF_TEXT_WRITER_H
#define HPROF_TEXT_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../core/tables.h"
#include "../profile/report_rows.h"
#include "text_sections.h"

typedef struct text_writer {
    FILE          *out;
    profile_tables *tables;          /* what traces, threads and classes name (not owned) */
    thread_records_written threads_written;  /* THREAD START/END */
    uint32_t       traces_written;   /* TRACE written for serials below base + this */
    int            empty_trace_written;
    /* cpu=old: HPROF's old prof format had no THREAD START/END records, and
     * no TRACE records unless another section (heap=, monitor=) named one. */
    int            omit_thread_records;
    int            omit_trace_records;
} text_writer;

/* tables: NULL for a writer that writes only what needs none (the header). */
void text_writer_init(text_writer *w, FILE *out, profile_tables *tables);
void text_writer_free(text_writer *w);

/* "Sat Nov 21 08:00:00 2026", as ctime() without the newline. */
void text_format_date(time_t when, char *buf, size_t size);

/* notes: free text (may be NULL) placed before the "--------" line, e.g. what
 * drives the samples. */
/* The sections a file holds, for its header to explain (and only those). */
enum {
    TEXT_HOLDS_CPU_SAMPLES = 1 << 0,
    TEXT_HOLDS_CPU_SUMMARY = 1 << 1,
    TEXT_HOLDS_CPU_TIME    = 1 << 2,
    TEXT_HOLDS_SITES       = 1 << 3,
    TEXT_HOLDS_HEAP_DUMP   = 1 << 4,
    TEXT_HOLDS_MONITOR     = 1 << 5,   /* MONITOR TIME, MONITOR WAIT TIME */
    TEXT_HOLDS_MONITOR_DUMP = 1 << 6,  /* MONITOR DUMP, DEADLOCKS */
    TEXT_HOLDS_WALL        = 1 << 7,   /* WALL SUMMARY, WALL SAMPLES */
};

void text_write_header(text_writer *w, time_t now, const char *options_text, const char *notes,
                       unsigned holds);
/* A section is about to name `trace`: the empty trace (300000), which is
 * not in the tables, is written on first use. */
void text_note_trace(text_writer *w, serial_t trace);
/* The agent's own memory at a dump, one line at the dump's start:
 * AGENT MEMORY (bytes = N) <date>: interning I, payload P, allocation sites S; threads T seen, F ended ones forgotten */
void text_write_agent_memory(text_writer *w, time_t now, size_t interning, size_t payload, size_t sites,
                             uint32_t threads_seen, uint64_t threads_forgotten);
/* THREAD START/END and TRACE records not written yet (unless omitted). */
void text_write_new_records(text_writer *w);
/* CPU SUMMARY: where the samples went by category (GC, JIT, Java code,
 * ...) and by thread, before the CPU SAMPLES section of the same dump:
 *   CPU SUMMARY BEGIN (total = 518) <date>
 *   category            share  samples
 *   GC                 72.39%      375
 *   thread              share  samples id
 *   GC Thread#0        40.15%      208 200007
 *   CPU SUMMARY END
 * Old tools skip it (a section they do not know); interval_ms turns
 * samples into seconds in the BEGIN line's comment. */
void text_write_cpu_summary(text_writer *w, const cpu_summary *summary, int interval_ms, time_t now);
/* The same for wall=: WALL SUMMARY, rows by state (running, sleeping, ...). */
void text_write_wall_summary(text_writer *w, const cpu_summary *summary, int interval_ms, time_t now);
/* WALL SAMPLES: CPU SAMPLES' layout for wall= (count: intervals of wall
 * time; each trace's bottom frame may be its state, [state].<name>). */
void text_write_wall_samples(text_writer *w, const cpu_row *rows, uint32_t n, uint64_t total,
                             double cutoff, time_t now);
/* The CPU SAMPLES section; rows with a share below cutoff are left out. */
void text_write_cpu_samples(text_writer *w, const cpu_row *rows, uint32_t n, uint64_t total,
                            double cutoff, time_t now);

/* cpu=times: the CPU TIME (ms) section (count = calls); rows with a share
 * of the total CPU time below cutoff are left out. */
void text_write_cpu_times(text_writer *w, const times_row *rows, uint32_t n, uint64_t total_ns,
                          double cutoff, time_t now);

/* heap=sites: the SITES section (rows as site_rows gives them). A row stays
 * if its share of the live bytes or of the allocated bytes is at least
 * cutoff. sample_interval > 0: the counts are estimates from allocation
 * samples, and the BEGIN line says so. */
void text_write_sites(text_writer *w, const site_row *rows, uint32_t n, const site_row *totals,
                      double cutoff, uint64_t sample_interval, time_t now);

/* "Class.method" of a trace's top frame, for the method column. */
void text_trace_top_method(profile_tables *tables, serial_t trace, char *buf, size_t size);

/* ---- monitor=y sections ---- */

/* A MONITOR TIME-style section titled `title` ("MONITOR TIME", "MONITOR
 * WAIT TIME", "MONITOR PINNED TIME"): blocked time per (trace, lock class)
 * over the rows for which block_kind_section() equals `section`
 * (MONITOR_SECTION_*); rows below cutoff left out. */
void text_write_monitor_time(text_writer *w, const char *title, int section,
                             const monitor_row *rows, uint32_t n, double cutoff, time_t now);

typedef struct dump_thread {
    serial_t    thread;
    serial_t    trace;
    const char *status;          /* R, MW, CW, P, SL, Z, S */
} dump_thread;

typedef struct dump_monitor {
    const char     *class_signature;  /* JVM form: written in Java form */
    serial_t        owner;            /* 0: none */
    int             entry_count;      /* -1: unknown (a virtual thread owns it: JVMTI does not count) */
    const serial_t *waiting_to_enter;
    uint32_t        n_enter;
    const serial_t *waiting_to_be_notified;
    uint32_t        n_notify;
} dump_monitor;

/* The virtual threads a MONITOR DUMP lists (JDK 21+): a bounded number
 * of those blocked, those blocked longest, and owners of locks. */
typedef struct dump_virtual_threads {
    uint32_t blocked;             /* seen blocked now */
    uint32_t listed;              /* of them listed */
    uint32_t owners;              /* other virtual threads listed as lock owners */
} dump_virtual_threads;

/* vt: NULL on a JDK without virtual threads (no VIRTUAL THREADS line). */
void text_write_monitor_dump(text_writer *w, const dump_thread *threads, uint32_t n_threads,
                             const dump_monitor *monitors, uint32_t n_monitors,
                             const dump_virtual_threads *vt);

typedef struct deadlock_member {
    serial_t    thread;
    serial_t    trace;
    int         parked;           /* 0: waiting to lock a monitor; 1: parked on a j.u.c. lock */
    serial_t    lock_class;
    serial_t    held_by;
} deadlock_member;

/* members: every cycle's members back to back; sizes[i] members in cycle i. */
void text_write_deadlocks(text_writer *w, const deadlock_member *members, const uint32_t *sizes,
                          uint32_t n_cycles, time_t now);

#endif
