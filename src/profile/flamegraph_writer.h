/*
 * flamegraph_writer: one self-contained HTML page (no network fetches, works
 * offline) with a flame graph per section: search, zoom, tooltips with counts
 * and percentages; every method name is in the file as plain text. A section
 * with a baseline is a differential flame graph (widths from the profile,
 * colours from the change against the baseline), for `hprof diff`.
 *
 * Also the writer of the page's other parts, so the HTML report
 * (`hprof report --html`) is the same page with tables under the graphs.
 */
#ifndef HPROF_FLAMEGRAPH_WRITER_H
#define HPROF_FLAMEGRAPH_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "profile.h"

typedef struct flamegraph_section {
    const char    *title;         /* heading, e.g. "CPU samples" */
    const profile *profile;       /* NULL: a section with no graph (table only) */
    uint32_t       value_index;   /* which of the profile's values sets widths */
    const profile *baseline;      /* non-NULL: differential against it (same value index) */
    const char    *table_html;    /* HTML shown under the graph (already escaped), or NULL */
    const char    *note_text;     /* a warning shown above the graph, beside it: what the
                                   * graph lacks (cut stacks, lost samples); plain text, or NULL */
} flamegraph_section;

/* The whole page. 0, or -1 on a write error or out of memory. */
int flamegraph_write_page(FILE *out, const char *page_title, const flamegraph_section *sections,
                          uint32_t nsections);

/* s with & < > " ' escaped, for callers that build table_html. */
void html_write_escaped(FILE *out, const char *s);

#endif
