/*
 * hprof convert FILE --to text|<a format of src/profile/formats.c> [--profile KIND] -o OUT
 * hprof diff BEFORE AFTER [--profile KIND] [--top N] [--to flamegraph -o OUT.html]
 *
 * convert writes the writers' formats from the profiles the readers made;
 * --to text writes HPROF's text layout back from the file's traces and last
 * sections (what tests/hprof_text.py and old scripts read), so a binary file
 * can be read as text. diff compares two profiles of one kind by method and
 * by stack (frames by name, not trace serials, which differ between runs).
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../analysis/analysis.h"
#include "../output/text_writer.h"
#include "../profile/flamegraph_writer.h"
#include "../profile/formats.h"

/* ------------------------------------------------------------ --to text */

/* The file's records through the agent's text layout (text_sections.h). A
 * frame of a class named "[..." is a native function of a binary file
 * (native=y), named as the agent's text writer names it. */
static void write_text_records(const hprof_data *d, FILE *out)
{
    for (uint32_t i = 0; i < d->nthreads; i++) {
        const hd_thread *t = &d->threads[i];
        text_write_thread_start(out, t->object_id, t->serial, t->name, t->group);
    }
    for (uint32_t i = 0; i < d->nthreads; i++)
        if (d->threads[i].ended)
            text_write_thread_end(out, d->threads[i].serial);
    for (uint32_t i = 0; i < d->ntraces; i++) {
        const hd_trace *t = &d->traces[i];
        text_write_trace_head(out, t->serial, t->thread);
        if (t->depth == 0)
            text_write_empty_frame(out);
        for (uint32_t k = 0; k < t->depth; k++) {
            const hd_frame *f = &d->frames[t->first + k];
            text_write_frame(out, f->class_name, f->method, f->file, f->line, f->line == PROFILE_LINE_NATIVE,
                             f->class_name[0] == '[');
        }
    }
}

/* Rows ordered by one value (*by), largest first (the order HPROF printed). */
static int row_order(const void *a, const void *b, void *by)
{
    const hd_row *x = a, *y = b;
    int v = *(const int *)by;
    if (x->values[v] != y->values[v])
        return x->values[v] > y->values[v] ? -1 : 1;
    return x->trace < y->trace ? -1 : x->trace > y->trace;
}

static hd_row *sorted_rows(const hd_section *s, int by)
{
    hd_row *rows = malloc(((size_t)s->nrows + 1) * sizeof *rows);
    if (rows && s->nrows) {       /* (a section without rows has no array) */
        memcpy(rows, s->rows, (size_t)s->nrows * sizeof *rows);
        qsort_r(rows, s->nrows, sizeof *rows, row_order, &by);
    }
    return rows;
}

static int64_t column_sum(const hd_section *s, int value)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < s->nrows; i++)
        sum = profile_add_saturated(sum, s->rows[i].values[value]);
    return sum;
}

static const char *date_or_now(const hd_section *s, char *buf, size_t size)
{
    if (s->date[0])
        return s->date;
    text_format_date(time(NULL), buf, size);
    return buf;
}

static void top_method(const hprof_data *d, uint32_t trace, char *buf, size_t size)
{
    const hd_trace *t = hd_find_trace(d, trace);
    if (t == NULL || t->depth == 0)
        snprintf(buf, size, "<empty>");
    else {
        const hd_frame *f = &d->frames[t->first];
        char native[1024];
        snprintf(buf, size, "%s.%s", f->class_name,
                 f->class_name[0] == '[' ? text_native_name(f->method, native, sizeof native) : f->method);
    }
}

/* CPU SAMPLES and CPU TIME: rank self accum count trace method; shares of
 * value `share_of` (samples, or CPU ns), count from value 0. */
static void write_ranked(const hprof_data *d, hd_kind k, const char *title, int share_of, FILE *out)
{
    const hd_section *s = &d->sections[k];
    hd_row *rows = sorted_rows(s, share_of);
    int64_t whole = column_sum(s, share_of);
    char date[64], method[1200];
    if (k == HD_CPU_SAMPLES && s->total > whole)
        whole = s->total;
    char total[32];
    snprintf(total, sizeof total, "%lld", (long long)s->total);
    text_ranked ranked;
    text_ranked_begin(&ranked, out, title, total, date_or_now(s, date, sizeof date), "method", "");
    for (uint32_t i = 0; rows && i < s->nrows && whole > 0; i++) {
        top_method(d, rows[i].trace, method, sizeof method);
        text_ranked_row(&ranked, rows[i].trace, rows[i].values[0],
                        (double)rows[i].values[share_of] / (double)whole, method);
    }
    text_ranked_end(&ranked);
    free(rows);
}

static void write_sites(const hprof_data *d, FILE *out)
{
    const hd_section *s = &d->sections[HD_SITES];
    hd_row *rows = sorted_rows(s, 0);
    int64_t live = column_sum(s, 0);
    char date[64];
    text_ranked sites;
    text_sites_begin(&sites, out, "ordered by live bytes", date_or_now(s, date, sizeof date));
    for (uint32_t i = 0; rows && i < s->nrows; i++)
        text_sites_row(&sites, rows[i].trace, rows[i].values[0], rows[i].values[1], rows[i].values[2],
                       rows[i].values[3], live > 0 ? (double)rows[i].values[0] / (double)live : 0.0,
                       rows[i].class_name);
    text_sites_end(&sites);
    free(rows);
}

static void write_monitor(const hprof_data *d, hd_kind k, const char *title, FILE *out)
{
    const hd_section *s = &d->sections[k];
    hd_row *rows = sorted_rows(s, 1);
    int64_t ns = column_sum(s, 1);
    char date[64];
    char total[32];
    snprintf(total, sizeof total, "%lld ms", (long long)s->total);
    text_ranked ranked;
    text_ranked_begin(&ranked, out, title, total, date_or_now(s, date, sizeof date), "monitor", " (Java)");
    for (uint32_t i = 0; rows && i < s->nrows && ns > 0; i++)
        text_ranked_row(&ranked, rows[i].trace, rows[i].values[0], (double)rows[i].values[1] / (double)ns,
                        rows[i].class_name ? rows[i].class_name : "?");
    text_ranked_end(&ranked);
    free(rows);
}

static int write_hprof_text(const hprof_data *d, FILE *out)
{
    text_writer w;
    text_writer_init(&w, out, NULL);      /* the header only: no tables */
    char notes[1200];
    snprintf(notes, sizeof notes, "Converted by hprof convert from %s (%s).", d->path, d->format);
    time_t created = time(NULL);
    unsigned holds = (d->sections[HD_CPU_SAMPLES].present ? TEXT_HOLDS_CPU_SAMPLES : 0) |
                     (d->cpu_summary ? TEXT_HOLDS_CPU_SUMMARY : 0) |
                     (d->wall_summary ? TEXT_HOLDS_WALL : 0) |
                     (d->sections[HD_CPU_TIMES].present ? TEXT_HOLDS_CPU_TIME : 0) |
                     (d->sections[HD_SITES].present ? TEXT_HOLDS_SITES : 0) |
                     (d->sections[HD_MONITOR_TIME].present || d->sections[HD_MONITOR_WAIT].present ? TEXT_HOLDS_MONITOR : 0) |
                     (d->monitor_dump || d->deadlocks ? TEXT_HOLDS_MONITOR_DUMP : 0);
    text_write_header(&w, created, d->options[0] ? d->options : NULL, notes, holds);
    text_writer_free(&w);
    write_text_records(d, out);
    if (d->sections[HD_CPU_SAMPLES].present)
        write_ranked(d, HD_CPU_SAMPLES, "CPU SAMPLES", 0, out);
    if (d->sections[HD_CPU_TIMES].present)
        write_ranked(d, HD_CPU_TIMES, "CPU TIME (ms)", 1, out);
    if (d->sections[HD_SITES].present)
        write_sites(d, out);
    if (d->sections[HD_MONITOR_TIME].present)
        write_monitor(d, HD_MONITOR_TIME, "MONITOR TIME", out);
    if (d->sections[HD_MONITOR_WAIT].present)
        write_monitor(d, HD_MONITOR_WAIT, "MONITOR WAIT TIME", out);
    return 0;
}

/* ------------------------------------------------------------ convert */

/* The profile kind as a FORMAT_SHOWS_* bit. */
static unsigned kind_shows(hd_kind k)
{
    switch (k) {
    case HD_CPU_SAMPLES:  return FORMAT_SHOWS_CPU_SAMPLES;
    case HD_CPU_TIMES:    return FORMAT_SHOWS_CPU_TIMES;
    case HD_SITES:        return FORMAT_SHOWS_ALLOC_SITES;
    case HD_MONITOR_TIME:
    case HD_MONITOR_WAIT: return FORMAT_SHOWS_MONITORS;
    default:              return 0;
    }
}

/* A format of the table (src/profile/formats.c): a one-file format gets
 * every profile the file holds (or the one --profile names), another the
 * one analyze_pick_kind picks. */
static int write_format(const hprof_data *d, const output_format *f, const char *kind_name, FILE *out)
{
    format_section sections[HD_KINDS];
    char notes[HD_KINDS][512];
    uint32_t n = 0;
    if (f->one_file && f->shows == FORMAT_SHOWS_ALL) {
        int only_kind = kind_name ? analyze_pick_kind(d, kind_name) : -1;
        for (int k = 0; k < HD_KINDS; k++) {
            const profile *p = d->profiles[k];
            if (p && (only_kind < 0 || only_kind == k)) {
                sections[n] = (format_section){ p, hd_kind_title((hd_kind)k),
                                                analyze_graph_note(d, p, notes[n], sizeof notes[n]) };
                n++;
            }
        }
        if (n == 0) {
            fprintf(stderr, "hprof: %s holds no profile to draw\n", d->path);
            return -1;
        }
    } else {
        int k = analyze_pick_kind(d, kind_name);
        if (k < 0)
            return -1;
        if (!(kind_shows((hd_kind)k) & f->shows)) {
            fprintf(stderr, "hprof: --to %s writes %s, not %s\n", f->name, f->shows_text ? f->shows_text : "?",
                    hd_kind_title((hd_kind)k));
            return -1;
        }
        const profile *p = d->profiles[k];
        sections[n++] = (format_section){ p, hd_kind_title((hd_kind)k),
                                          analyze_graph_note(d, p, notes[0], sizeof notes[0]) };
    }
    char title[512], why[256] = "";
    snprintf(title, sizeof title, "hprof: %s", d->path);
    if (f->write(out, title, sections, n, why, sizeof why) != 0) {
        if (why[0])
            fprintf(stderr, "hprof: %s: %s\n", f->name, why);
        return -1;
    }
    return 0;
}

int convert_write(const hprof_data *d, const char *to, const char *kind_name, FILE *out)
{
    if (strcmp(to, "text") == 0)
        return write_hprof_text(d, out);
    const output_format *f = format_find(to);
    return f ? write_format(d, f, kind_name, out) : -1;
}

const char *analyze_format_list(const char *sep, int extensions, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "%s", extensions ? ".txt" : "text");
    for (uint32_t i = 0; i < format_count() && used < size; i++) {
        const output_format *f = format_at(i);
        used += (size_t)snprintf(buf + used, size - used, "%s%.*s", sep,
                                 extensions ? (int)strcspn(f->extensions, " ") : (int)strlen(f->name),
                                 extensions ? f->extensions : f->name);
    }
    return buf;
}

const char *analyze_format_of_extension(const char *path)
{
    size_t len = strlen(path);
    if (len > 4 && strcmp(path + len - 4, ".txt") == 0)
        return "text";
    const output_format *f = format_of_extension(path);
    return f ? f->name : NULL;
}

int analyze_convert(int argc, char **argv)
{
    analyze_args a;
    if (analyze_parse_args("convert", argc, argv, 1, &a) != 0)
        return ANALYZE_USAGE;
    char names[256], extensions[256];
    analyze_format_list("|", 0, names, sizeof names);
    analyze_format_list(" ", 1, extensions, sizeof extensions);
    if (a.to == NULL && a.out != NULL && strcmp(a.out, "-") != 0 && (a.to = analyze_format_of_extension(a.out)) == NULL)
        return analyze_usage("convert: -o %s: say the format with --to %s, or name the file by its extension (%s)",
                             a.out, names, extensions);
    if (a.nfiles == 0 || a.to == NULL || a.out == NULL || a.html)
        return analyze_usage("usage: hprof convert FILE [--to %s] [--profile cpu|times|alloc|monitor|wait] "
                             "-o OUT (without --to: by OUT's extension, %s)", names, extensions);
    if (strcmp(a.to, "text") != 0 && format_find(a.to) == NULL)
        return analyze_usage("convert: --to %s: want one of %s", a.to, names);
    hprof_data *d = analyze_read(a.files[0]);
    if (d == NULL)
        return ANALYZE_ERROR;
    FILE *out = strcmp(a.out, "-") == 0 ? stdout : analyze_create_output(a.out, analyze_holds_heap_dump(d));
    int rc = ANALYZE_ERROR;
    if (out != NULL) {
        int bad = convert_write(d, a.to, a.profile, out) != 0;
        bad |= out != stdout ? fclose(out) != 0 : fflush(out) != 0;
        if (bad)
            fprintf(stderr, "hprof: %s: not written completely\n", a.out);
        else
            rc = ANALYZE_OK;
    }
    hprof_data_free(d);
    return rc;
}

/* ------------------------------------------------------------ diff */

static table *diff_table(const char *title, const char *what, diff_row *rows, uint32_t n,
                         int64_t tb, int64_t ta, int use_total, int top)
{
    const char *cols[] = { ">change", ">before%", ">after%", ">before", ">after", ">delta", what };
    table *t = table_new(title, 7, cols);
    diff_sort_by_share_change(rows, n, tb, ta, use_total);
    for (uint32_t i = 0; t && i < n && (int)i < top; i++) {
        int64_t b = use_total ? rows[i].before_total_only : rows[i].before;
        int64_t a = use_total ? rows[i].after_total_only : rows[i].after;
        double change = diff_share_change(&rows[i], tb, ta, use_total) * 100;
        if (change == 0 && a == b)
            break;
        char sb[32], sa[32], sd[32];
        table_add(t, "%+.2f\t%.2f%%\t%.2f%%\t%s\t%s\t%s%s\t%s", change,
                  tb > 0 ? 100.0 * (double)b / (double)tb : 0.0, ta > 0 ? 100.0 * (double)a / (double)ta : 0.0,
                  analyze_thousands(b, sb, sizeof sb), analyze_thousands(a, sa, sizeof sa),
                  a - b > 0 ? "+" : "", analyze_thousands(a - b, sd, sizeof sd), rows[i].name);
    }
    return t;
}

/* The tables of a diff: methods by self, by total, stacks. */
static int diff_tables(const profile *pb, const profile *pa, uint32_t v, int top, table **t)
{
    string_store *names = string_store_new();
    diff_row *methods = NULL, *stacks = NULL;
    uint32_t nm = 0, ns = 0;
    int rc = -1;
    int64_t tb = profile_total(pb, v), ta = profile_total(pa, v);
    if (names && diff_methods(pb, pa, v, names, &methods, &nm) == 0 &&
        diff_stacks(pb, pa, v, names, &stacks, &ns) == 0) {
        t[0] = diff_table("Methods by change of self share (change in percentage points)", "method",
                          methods, nm, tb, ta, 0, top);
        t[1] = diff_table("Methods by change of total (inclusive) share", "method", methods, nm, tb,
                          ta, 1, top);
        t[2] = diff_table("Stacks by change of share (root;...;leaf)", "stack", stacks, ns, tb, ta, 0,
                          top);
        rc = t[0] && t[1] && t[2] ? 0 : -1;
    }
    free(methods);
    free(stacks);
    string_store_free(names);
    return rc;
}

/* The kind both files have: --profile, or the first of BEFORE's that AFTER has. */
static int common_kind(const hprof_data *b, const hprof_data *a, const char *name)
{
    if (name) {
        int k = analyze_pick_kind(b, name);
        return k >= 0 && analyze_pick_kind(a, name) == k ? k : -1;
    }
    for (int k = 0; k < HD_KINDS; k++)
        if (b->profiles[k] && a->profiles[k])
            return k;
    fprintf(stderr, "hprof: %s and %s have no profile of the same kind to compare\n", b->path, a->path);
    return -1;
}

static int write_diff(const hprof_data *b, const hprof_data *a, int k, int top, const char *out_path)
{
    const profile *pb = b->profiles[k], *pa = a->profiles[k];
    uint32_t v = profile_default_value(pa);
    table *t[3] = { NULL, NULL, NULL };
    if (diff_tables(pb, pa, v, top, t) != 0) {
        fprintf(stderr, "hprof: out of memory\n");
        for (int i = 0; i < 3; i++)
            table_free(t[i]);
        return ANALYZE_ERROR;
    }
    profile_value_type vt = profile_value(pa, v);
    char sb[32], sa[32], head[1600];
    snprintf(head, sizeof head, "%s, %s (%s): before %s has %s, after %s has %s", hd_kind_title((hd_kind)k),
             vt.type, vt.unit, b->path, analyze_thousands(profile_total(pb, v), sb, sizeof sb), a->path,
             analyze_thousands(profile_total(pa, v), sa, sizeof sa));
    int rc = ANALYZE_OK;
    if (out_path == NULL) {
        printf("hprof diff: %s\nShares are of each file's total; change = after%% - before%%.\n\n", head);
        for (int i = 0; i < 3; i++) {
            table_print_text(t[i], stdout);
            printf("\n");
        }
    } else {
        char *html = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&html, &len);
        if (mem == NULL) {
            fprintf(stderr, "hprof: out of memory\n");
            rc = ANALYZE_ERROR;
        } else {
            for (int i = 0; i < 3; i++)
                table_print_html(t[i], mem);
            fclose(mem);
            flamegraph_section s = { head, pa, v, pb, html, NULL };
            rc = analyze_write_page(out_path, analyze_holds_heap_dump(b) || analyze_holds_heap_dump(a), "hprof diff", &s, 1);
        }
        free(html);
    }
    for (int i = 0; i < 3; i++)
        table_free(t[i]);
    return rc;
}

int analyze_diff(int argc, char **argv)
{
    analyze_args a;
    if (analyze_parse_args("diff", argc, argv, 2, &a) != 0)
        return ANALYZE_USAGE;
    if (a.nfiles != 2 || a.html)
        return analyze_usage("usage: hprof diff BEFORE AFTER [--profile KIND] [--top N] "
                             "[--to flamegraph -o OUT.html]");
    if ((a.to && strcmp(a.to, "flamegraph") != 0) || (a.to != NULL) != (a.out != NULL))
        return analyze_usage("diff: --to flamegraph -o OUT.html go together (the table goes to stdout)");
    hprof_data *before = analyze_read(a.files[0]);
    hprof_data *after = before ? analyze_read(a.files[1]) : NULL;
    int rc = ANALYZE_ERROR;
    if (before && after) {
        int k = common_kind(before, after, a.profile);
        if (k >= 0)
            rc = write_diff(before, after, k, a.top, a.out);
    }
    hprof_data_free(after);
    hprof_data_free(before);
    return rc;
}
