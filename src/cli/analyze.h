/*
 * The front end's analysis commands, over files the agent wrote (HPROF text
 * or binary) and JFR recordings, read by src/reader:
 *   hprof report FILE [--top N] [--html -o OUT.html]
 *   hprof convert FILE --to text|collapsed|flamegraph|pprof|jfr [--profile KIND] -o OUT
 *   hprof diff BEFORE AFTER [--top N] [--profile KIND] [--to flamegraph -o OUT.html]
 *   hprof heap DUMP [--top N] [--json] [-o OUT] [--baseline OLD]
 * argv: the arguments after the command's name. Exit status: 0, 1 an error
 * (said on stderr, naming the file), 2 a usage error.
 */
#ifndef HPROF_ANALYZE_H
#define HPROF_ANALYZE_H

#include <stdio.h>

#include "../analysis/table.h"
#include "../reader/hprof_data.h"

int analyze_report(int argc, char **argv);
int analyze_convert(int argc, char **argv);
int analyze_diff(int argc, char **argv);
/* hprof heap DUMP [--top N] [--json] [-o OUT] [--baseline OLD] (analyze_heap.c) */
int analyze_heap(int argc, char **argv);

/* ---- shared by the commands (analyze_common.c) ---- */
enum { ANALYZE_OK = 0, ANALYZE_ERROR = 1, ANALYZE_USAGE = 2 };

int analyze_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ANALYZE_DEFAULT_TOP 20

/* The commands' arguments: files, --to F, -o OUT, --profile KIND, --top N, --html. */
typedef struct analyze_args {
    const char *files[2];
    int         nfiles;
    const char *to, *out, *profile;
    int         top, html;
} analyze_args;

/* 0, or ANALYZE_USAGE (said on stderr) for an unknown option, a bad --top,
 * or more than max_files files. */
int analyze_parse_args(const char *command, int argc, char **argv, int max_files, analyze_args *a);
hprof_data *analyze_read(const char *path);
/* --profile NAME: that kind if the file has it; NULL: the first present (said
 * on stderr when the file has more than one). -1 when there is none. */
int analyze_pick_kind(const hprof_data *d, const char *name);
/* A flame graph page (src/profile/flamegraph_writer.h) to path: ANALYZE_OK,
 * or ANALYZE_ERROR said on stderr. */
struct flamegraph_section;
int analyze_write_page(const char *path, int private_data, const char *title,
                       const struct flamegraph_section *sections, uint32_t n);
/* -o PATH, created under the agent's rules (src/output/output_file.h): a
 * symbolic link is not followed, only a regular file is written, and
 * private_data (made from a file holding a heap dump, which holds the
 * program's data) makes it 0600; else 0666 less the umask, never o+w.
 * NULL with the reason said on stderr. */
FILE *analyze_create_output(const char *path, int private_data);
/* Does d come from a file with a heap dump in it? */
int analyze_holds_heap_dump(const hprof_data *d);

/* The warning a flame graph of p (a profile of d) shows beside it, into buf:
 * stacks cut at depth= (their callers missing), samples without a whole
 * stack. NULL when there is nothing to say. */
const char *analyze_graph_note(const hprof_data *d, const profile *p, char *buf, size_t size);
/* "1,234,567" */
const char *analyze_thousands(int64_t v, char *buf, size_t size);

/* The report's tables of one section (top methods, sites, ...), for text
 * and HTML alike; *n set. Tables are freed by the caller. */
int report_section_tables(const hprof_data *d, hd_kind k, int top, table **out, int max, int *n);
/* The text report of `hprof report FILE` to out. */
int report_write_text(const hprof_data *d, int top, FILE *out);
/* The output of `hprof convert --to TO [--profile KIND]` to out: 0, or -1
 * (said on stderr). */
int convert_write(const hprof_data *d, const char *to, const char *kind_name, FILE *out);

/* The format a file's extension names: "text" (.txt), else one of the table
 * of formats (src/profile/formats.c: .html flamegraph, .pb.gz pprof, ...); NULL if none. */
const char *analyze_format_of_extension(const char *path);
/* The formats convert writes, HPROF text first, then the table's:
 * names ("text|collapsed|...", sep "|") or their usual extensions
 * (".txt .collapsed ...", extensions 1). Returns buf. */
const char *analyze_format_list(const char *sep, int extensions, char *buf, size_t size);

#endif
