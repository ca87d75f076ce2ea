/*
 * table: the report's tables, built once and printed as aligned plain text
 * (`hprof report`, `hprof diff`) or as HTML (`hprof report --html`), so the
 * two outputs always show the same rows.
 */
#ifndef HPROF_TABLE_H
#define HPROF_TABLE_H

#include <stdint.h>
#include <stdio.h>

#define TABLE_MAX_COLUMNS 10

typedef struct table table;

/* columns: the header's names; a name starting with '>' is right-aligned
 * (numbers), the '>' not shown. NULL when out of memory. */
table *table_new(const char *title, uint32_t ncolumns, const char *const *columns);
void   table_free(table *t);
/* A row of ncolumns printf-made cells: fmt holds the cells separated by '\t'. 0, or -1. */
int    table_add(table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint32_t table_rows(const table *t);

/* "  title" then the header and the rows, columns two spaces apart. */
void table_print_text(const table *t, FILE *out);
/* <h3>title</h3><table>...</table>, every cell escaped (html_write_escaped). */
void table_print_html(const table *t, FILE *out);

#endif
