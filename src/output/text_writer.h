/*
 * text_writer: HPROF's text format (java.hprof.txt, "JAVA PROFILE 1.0.1").
 *
 * The file is written in pieces: the header once, then at each dump (SIGQUIT
 * and VM exit) the records that are new since the last dump (THREAD START,
 * THREAD END, TRACE) followed by a cumulative CPU SAMPLES section, as the
 * JDK 5-8 agent did. The writer remembers what it has written (serials are
 * dense, so high-water marks suffice), so every trace a section refers to is
 * in the file exactly once. Layout and widths follow the JDK agent, which old
 * scripts split on; see docs/ and shared/docs/hprof-text-format.md.
 */
#ifndef HPROF_TEXT_WRITER_H
#define HPROF_TEXT_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../core/tables.h"
#include "../cpu/cpu_collector.h"

typedef struct text_writer {
    FILE          *out;
    uint32_t       threads_started;  /* THREAD START written for serials below base + this */
    unsigned char *ended_written;    /* THREAD END written, by thread index */
    uint32_t       ended_cap;
    uint32_t       traces_written;   /* TRACE written for serials below base + this */
    int            empty_trace_written;
} text_writer;

void text_writer_init(text_writer *w, FILE *out);
void text_writer_free(text_writer *w);

/* "Sat Nov 21 08:00:00 2026", as ctime() without the newline. */
void text_format_date(time_t when, char *buf, size_t size);

/* notes: free text (may be NULL) placed before the "--------" line, e.g. what
 * drives the samples. */
void text_write_header(text_writer *w, time_t now, const char *options_text, const char *notes);
/* THREAD START/END and TRACE records not written yet. */
void text_write_new_records(text_writer *w);
/* The CPU SAMPLES section; rows with a share below cutoff are left out. */
void text_write_cpu_samples(text_writer *w, const cpu_row *rows, uint32_t n, uint64_t total,
                            double cutoff, time_t now);

/* "Class.method" of a trace's top frame, for the method column. */
void text_trace_top_method(serial_t trace, char *buf, size_t size);

#endif
