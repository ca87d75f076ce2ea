/*
 * text_sections: the lines of HPROF's text format (java.hprof.txt) from
 * neutral rows, the one layout both the agent (text_writer.c, from its
 * tables) and `hprof convert --to text` (from a file it read) write.
 *
 * Pure C over stdio: no table, no collector type. The caller orders and
 * filters the rows (cutoff=), and works out each row's share; these write
 * HPROF's layout and column widths, which old scripts split on (see
 * docs/formats.md).
 */
#ifndef HPROF_TEXT_SECTIONS_H
#define HPROF_TEXT_SECTIONS_H

#include <stdint.h>
#include <stdio.h>

/* A native function's name as an HPROF text frame or ranked row can hold it
 * (old parsers read "class.method(file:line)" and a row's method as one
 * word): spaces and parentheses of C++ names ("operator new",
 * "(anonymous namespace)::f") become '_', '[' and ']'. Returns buf. */
const char *text_native_name(const char *name, char *buf, size_t size);

/* THREAD START (obj=..., id = ..., name="...", group="...") and THREAD END. */
void text_write_thread_start(FILE *out, uint64_t object_id, uint32_t serial, const char *name,
                             const char *group);
void text_write_thread_end(FILE *out, uint32_t serial);

/* "TRACE 300001:" or "TRACE 300001: (thread=200005)" (thread 0: none). A
 * trace of no frames is followed by text_write_empty_frame. */
void text_write_trace_head(FILE *out, uint32_t serial, uint32_t thread);
void text_write_empty_frame(FILE *out);
/* One frame: "\tclass.method(file:line)"; line > 0, else "Native method"
 * (native_line) or "Unknown line"; source NULL or "": <Unknown Source>.
 * native_function: method is a native function's name (text_native_name). */
void text_write_frame(FILE *out, const char *class_name, const char *method, const char *source,
                      int32_t line, int native_line, int native_function);

/* A ranked section (CPU SAMPLES, WALL SAMPLES, CPU TIME, MONITOR TIME,
 * ...), written row by row so that no copy of the rows is made:
 *   <title> BEGIN (total = <total>) <date>
 *   rank   self  accum   count trace <last_column>
 *      1 55.49% 55.49%     179 300002 <name><name_suffix>
 *   <title> END
 * Rows are ranked 1, 2, ... in the order given; self is the row's share
 * of the section's whole (0 to 1), accum the sum so far. */
typedef struct text_ranked {
    FILE       *out;
    const char *title, *name_suffix;
    uint32_t    rank;
    double      accum;
} text_ranked;

void text_ranked_begin(text_ranked *s, FILE *out, const char *title, const char *total, const char *date,
                       const char *last_column, const char *name_suffix);
void text_ranked_row(text_ranked *s, uint32_t trace, int64_t count, double self, const char *name);
void text_ranked_end(text_ranked *s);

/* SITES, the same way: "SITES BEGIN (<order>) <date>", HPROF's two header
 * lines, a row per site (self: its share of the live bytes; class_name
 * NULL: <unknown class>), "SITES END". */
void text_sites_begin(text_ranked *s, FILE *out, const char *order, const char *date);
void text_sites_row(text_ranked *s, uint32_t trace, int64_t live_bytes, int64_t live_objs,
                    int64_t alloc_bytes, int64_t alloc_objs, double self, const char *class_name);
void text_sites_end(text_ranked *s);

#endif
