/* table.c: see table.h. */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../profile/flamegraph_writer.h"
#include "../reader/string_store.h"

struct table {
    const char    *title;
    uint32_t       ncolumns;
    const char    *columns[TABLE_MAX_COLUMNS];
    const char   **cells;          /* nrows * ncolumns */
    uint32_t       nrows, cap;
    string_store  *strings;
};

table *table_new(const char *title, uint32_t ncolumns, const char *const *columns)
{
    table *t = calloc(1, sizeof *t);
    if (t == NULL || ncolumns == 0 || ncolumns > TABLE_MAX_COLUMNS ||
        (t->strings = string_store_new()) == NULL) {
        free(t);
        return NULL;
    }
    t->title = string_store_add(t->strings, title, strlen(title));
    t->ncolumns = ncolumns;
    for (uint32_t i = 0; i < ncolumns; i++)
        t->columns[i] = string_store_add(t->strings, columns[i], strlen(columns[i]));
    return t;
}

void table_free(table *t)
{
    if (t == NULL)
        return;
    free(t->cells);
    string_store_free(t->strings);
    free(t);
}

uint32_t table_rows(const table *t)
{
    return t->nrows;
}

int table_add(table *t, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->nrows == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        const char **bigger = realloc(t->cells, (size_t)cap * t->ncolumns * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        t->cells = bigger;
        t->cap = cap;
    }
    const char **row = t->cells + (size_t)t->nrows * t->ncolumns;
    char *p = line;
    for (uint32_t i = 0; i < t->ncolumns; i++) {
        char *tab = i + 1 < t->ncolumns ? strchr(p, '\t') : NULL;
        size_t n = tab ? (size_t)(tab - p) : strlen(p);
        row[i] = string_store_add(t->strings, p, n);
        if (row[i] == NULL)
            return -1;
        p = tab ? tab + 1 : p + n;
    }
    t->nrows++;
    return 0;
}

static const char *column_name(const table *t, uint32_t i)
{
    return t->columns[i][0] == '>' ? t->columns[i] + 1 : t->columns[i];
}

static void print_cell(FILE *out, const char *s, size_t width, int right, int last)
{
    if (last && !right)
        fprintf(out, "%s", s);
    else
        fprintf(out, right ? "%*s" : "%-*s", (int)width, s);
}

void table_print_text(const table *t, FILE *out)
{
    size_t width[TABLE_MAX_COLUMNS];
    for (uint32_t i = 0; i < t->ncolumns; i++) {
        width[i] = strlen(column_name(t, i));
        for (uint32_t r = 0; r < t->nrows; r++) {
            size_t n = strlen(t->cells[(size_t)r * t->ncolumns + i]);
            if (n > width[i])
                width[i] = n;
        }
    }
    fprintf(out, "  %s\n", t->title);
    for (uint32_t r = 0; r <= t->nrows; r++) {
        fprintf(out, "    ");
        for (uint32_t i = 0; i < t->ncolumns; i++) {
            const char *s = r == 0 ? column_name(t, i) : t->cells[(size_t)(r - 1) * t->ncolumns + i];
            print_cell(out, s, width[i], t->columns[i][0] == '>', i + 1 == t->ncolumns);
            fprintf(out, i + 1 < t->ncolumns ? "  " : "\n");
        }
    }
    if (t->nrows == 0)
        fprintf(out, "    (none)\n");
}

void table_print_html(const table *t, FILE *out)
{
    fputs("<h3>", out);
    html_write_escaped(out, t->title);
    fputs("</h3>\n<table class=\"report\"><tr>", out);
    for (uint32_t i = 0; i < t->ncolumns; i++) {
        fputs(t->columns[i][0] == '>' ? "<th class=\"num\">" : "<th>", out);
        html_write_escaped(out, column_name(t, i));
        fputs("</th>", out);
    }
    fputs("</tr>\n", out);
    for (uint32_t r = 0; r < t->nrows; r++) {
        fputs("<tr>", out);
        for (uint32_t i = 0; i < t->ncolumns; i++) {
            fputs(t->columns[i][0] == '>' ? "<td class=\"num\">" : "<td>", out);
            html_write_escaped(out, t->cells[(size_t)r * t->ncolumns + i]);
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}
