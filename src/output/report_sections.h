/*
 * report_sections: the sections a dump's rows become in the agent's file,
 * HPROF text or binary (format=). The one place that chooses between the
 * two for the collectors: they hand in rows (cpu_row, site_row) and say
 * nothing of the file's format.
 *
 * Sections only the text format has (CPU TIME, WALL SAMPLES, MONITOR
 * TIME, MONITOR DUMP, ...: the options refuse them with format=b) are
 * written through report_text(), which is NULL in a binary file.
 */
#ifndef HPROF_REPORT_SECTIONS_H
#define HPROF_REPORT_SECTIONS_H

#include <stdint.h>
#include <time.h>

#include "../profile/report_rows.h"
#include "hprof_binary.h"
#include "text_writer.h"

typedef struct report_target {
    char         format;        /* 'a' text, 'b' binary */
    profile_tables *tables;     /* what rows name (not owned) */
    text_writer *text;          /* format=a */
    hb_writer   *binary;        /* format=b */
    double       cutoff;        /* cutoff=: rows with a smaller share are left out */
    /* format=b: write the records (strings, LOAD CLASS, STACK TRACE, ...)
     * a section is about to name and the file lacks (the agent's heap_dump_records.c). */
    void       (*binary_new_records)(hb_writer *w);
} report_target;

/* CPU SAMPLES: text, the new THREAD and TRACE records, then CPU SUMMARY
 * (summary non-NULL: native=y) and the ranked rows; binary, the CPU
 * SAMPLES record (0x0D). Rows are ordered by count. */
void report_cpu_samples(const report_target *r, const cpu_row *rows, uint32_t n, uint64_t total,
                        const cpu_summary *summary, int interval_ms, time_t now);

/* heap=sites: text, SITES (sample_interval > 0: estimated, and it says
 * so); binary, ALLOC SITES (0x06). Rows as site_rows_merge gives them. */
void report_sites(const report_target *r, const site_row *rows, uint32_t n, const site_row *totals,
                  uint64_t sample_interval, time_t now);

/* The text writer; NULL in a binary file (where the text-only sections
 * have no record) and where the dump has no file (the JVMPI layer). */
text_writer *report_text(const report_target *r);

#endif
