/*
 * hprof convert FILE --to text|collapsed|flamegraph|pprof|jfr [--profile KIND] -o OUT
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
#include "../profile/collapsed.h"
#include "../profile/flamegraph_writer.h"
#include "../profile/jfr_writer.h"
#include "../profile/pprof_writer.h"

/* ------------------------------------------------------------ --to text */

static void write_text_frame(FILE *out, const hd_frame *f)
{
    const char *file = f->file[0] ? f->file : "<Unknown Source>";
    /* A native function of a binary file (native=y), as the agent's text
     * writer names it. */
    char native[1024];
    const char *method = f->class_name[0] == '[' ? text_native_name(f->method, native, sizeof native) : f->method;
    if (f->line > 0)
        fprintf(out, "\t%s.%s(%s:%d)\n", f->class_name, method, file, (int)f->line);
    else
        fprintf(out, "\t%s.%s(%s:%s)\n", f->class_name, method, file,
                f->line == PROFILE_LINE_NATIVE ? "Native method" : "Unknown line");
}

static void write_text_records(const hprof_data *d, FILE *out)
{
    for (uint32_t i = 0; i < d->nthreads; i++) {
        const hd_thread *t = &d->threads[i];
        fprintf(out, "THREAD START (obj=%llx, id = %u, name=\"%s\", group=\"%s\")\n",
                (unsigned long long)t->object_id, t->serial, t->name, t->group);
    }
    for (uint32_t i = 0; i < d->nthreads; i++)
        if (d->threads[i].ended)
            fprintf(out, "THREAD END (id = %u)\n", d->threads[i].serial);
    for (uint32_t i = 0; i < d->ntraces; i++) {
        const hd_trace *t = &d->traces[i];
        if (t->thread)
            fprintf(out, "TRACE %u: (thread=%u)\n", t->serial, t->thread);
        else
            fprintf(out, "TRACE %u:\n", t->serial);
        if (t->depth == 0)
            fprintf(out, "\t<empty>\n");
        for (uint32_t k = 0; k < t->depth; k++)
            write_text_frame(out, &d->frames[t->first + k]);
    }
}

/* Rows ordered by one value, largest first (the order HPROF printed). */
static int sort_value;

static int row_order(const void *a, const void *b)
{
    const hd_row *x = a, *y = b;
    if (x->values[sort_value] != y->values[sort_value])
        return x->values[sort_value] > y->values[sort_value] ? -1 : 1;
    return x->trace < y->trace ? -1 : x->trace > y->trace;
}

static hd_row *sorted_rows(const hd_section *s, int by)
{
    hd_row *rows = malloc(((size_t)s->nrows + 1) * sizeof *rows);
    if (rows && s->nrows) {       /* (a section without rows has no array) */
        memcpy(rows, s->rows, (size_t)s->nrows * sizeof *rows);
        sort_value = by;
        qsort(rows, s->nrows, sizeof *rows, row_order);
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
static void write_ranked(const hprof_data *d, hd_kind k, const char *begin, const char *end,
                         int share_of, FILE *out)
{
    const hd_section *s = &d->sections[k];
    hd_row *rows = sorted_rows(s, share_of);
    int64_t whole = column_sum(s, share_of);
    char date[64], method[1200];
    if (k == HD_CPU_SAMPLES && s->total > whole)
        whole = s->total;
    fprintf(out, "%s (total = %lld) %s\n", begin, (long long)s->total, date_or_now(s, date, sizeof date));
    fprintf(out, "rank   self  accum   count trace method\n");
    double accum = 0;
    for (uint32_t i = 0; rows && i < s->nrows && whole > 0; i++) {
        double self = (double)rows[i].values[share_of] / (double)whole;
        accum += self;
        top_method(d, rows[i].trace, method, sizeof method);
        fprintf(out, "%4u %5.2f%% %5.2f%% %7lld %u %s\n", i + 1, self * 100, accum * 100,
                (long long)rows[i].values[0], rows[i].trace, method);
    }
    fprintf(out, "%s\n", end);
    free(rows);
}

static void write_sites(const hprof_data *d, FILE *out)
{
    const hd_section *s = &d->sections[HD_SITES];
    hd_row *rows = sorted_rows(s, 0);
    int64_t live = column_sum(s, 0);
    char date[64];
    fprintf(out, "SITES BEGIN (ordered by live bytes) %s\n", date_or_now(s, date, sizeof date));
    fprintf(out, "          percent          live          alloc'ed  stack class\n");
    fprintf(out, " rank   self  accum     bytes objs     bytes  objs trace name\n");
    double accum = 0;
    for (uint32_t i = 0; rows && i < s->nrows; i++) {
        double self = live > 0 ? (double)rows[i].values[0] / (double)live : 0.0;
        accum += self;
        fprintf(out, "%5u %5.2f%% %5.2f%% %9lld %4lld %9lld %5lld %5u %s\n", i + 1, self * 100,
                accum * 100, (long long)rows[i].values[0], (long long)rows[i].values[1],
                (long long)rows[i].values[2], (long long)rows[i].values[3], rows[i].trace,
                rows[i].class_name ? rows[i].class_name : "<unknown class>");
    }
    fprintf(out, "SITES END\n");
    free(rows);
}

static void write_monitor(const hprof_data *d, hd_kind k, const char *title, FILE *out)
{
    const hd_section *s = &d->sections[k];
    hd_row *rows = sorted_rows(s, 1);
    int64_t ns = column_sum(s, 1);
    char date[64];
    fprintf(out, "%s BEGIN (total = %lld ms) %s\n", title, (long long)s->total, date_or_now(s, date, sizeof date));
    fprintf(out, "rank   self  accum   count trace monitor\n");
    double accum = 0;
    for (uint32_t i = 0; rows && i < s->nrows && ns > 0; i++) {
        double self = (double)rows[i].values[1] / (double)ns;
        accum += self;
        fprintf(out, "%4u %5.2f%% %5.2f%% %7lld %u %s (Java)\n", i + 1, self * 100, accum * 100,
                (long long)rows[i].values[0], rows[i].trace, rows[i].class_name ? rows[i].class_name : "?");
    }
    fprintf(out, "%s END\n", title);
    free(rows);
}

static int write_hprof_text(const hprof_data *d, FILE *out)
{
    text_writer w;
    text_writer_init(&w, out);
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
        write_ranked(d, HD_CPU_SAMPLES, "CPU SAMPLES BEGIN", "CPU SAMPLES END", 0, out);
    if (d->sections[HD_CPU_TIMES].present)
        write_ranked(d, HD_CPU_TIMES, "CPU TIME (ms) BEGIN", "CPU TIME (ms) END", 1, out);
    if (d->sections[HD_SITES].present)
        write_sites(d, out);
    if (d->sections[HD_MONITOR_TIME].present)
        write_monitor(d, HD_MONITOR_TIME, "MONITOR TIME", out);
    if (d->sections[HD_MONITOR_WAIT].present)
        write_monitor(d, HD_MONITOR_WAIT, "MONITOR WAIT TIME", out);
    return 0;
}

/* ------------------------------------------------------------ convert */

static int write_flamegraph(const hprof_data *d, FILE *out, int only_kind)
{
    flamegraph_section sections[HD_KINDS];
    char notes[HD_KINDS][512];
    uint32_t n = 0;
    for (int k = 0; k < HD_KINDS; k++) {
        const profile *p = d->profiles[k];
        if (p && (only_kind < 0 || only_kind == k)) {
            sections[n] = (flamegraph_section){ hd_kind_title((hd_kind)k), p, profile_default_value(p),
                                                NULL, NULL, analyze_graph_note(d, p, notes[n], sizeof notes[n]) };
            n++;
        }
    }
    if (n == 0) {
        fprintf(stderr, "hprof: %s holds no profile to draw\n", d->path);
        return -1;
    }
    char title[512];
    snprintf(title, sizeof title, "hprof: %s", d->path);
    return flamegraph_write_page(out, title, sections, n);
}

/* --to jfr: every profile the file holds (or the one --profile names) as one recording. */
static int write_jfr(const hprof_data *d, const char *kind_name, FILE *out)
{
    const profile *profiles[HD_KINDS];
    uint32_t n = 0;
    int only = kind_name ? analyze_pick_kind(d, kind_name) : -1;
    if (kind_name && only < 0)
        return -1;
    for (int k = 0; k < HD_KINDS; k++)
        if (d->profiles[k] && (only < 0 || only == k) && jfr_writes(d->profiles[k]))
            profiles[n++] = d->profiles[k];
    if (n == 0) {
        fprintf(stderr, "hprof: %s holds no profile a JFR recording takes (CPU samples or times, sites, "
                "monitors)\n", d->path);
        return -1;
    }
    char err[256] = "";
    if (jfr_write(profiles, n, out, err, sizeof err) != 0) {
        fprintf(stderr, "hprof: jfr: %s\n", err);
        return -1;
    }
    return 0;
}

int convert_write(const hprof_data *d, const char *to, const char *kind_name, FILE *out)
{
    if (strcmp(to, "text") == 0)
        return write_hprof_text(d, out);
    if (strcmp(to, "flamegraph") == 0)
        return write_flamegraph(d, out, kind_name ? analyze_pick_kind(d, kind_name) : -1);
    if (strcmp(to, "jfr") == 0)
        return write_jfr(d, kind_name, out);
    int k = analyze_pick_kind(d, kind_name);
    if (k < 0)
        return -1;
    const profile *p = d->profiles[k];
    if (strcmp(to, "collapsed") == 0)
        return collapsed_write_profile(p, profile_default_value(p), out);
    char err[256] = "";
    if (pprof_write(p, out, err, sizeof err) != 0) {
        fprintf(stderr, "hprof: pprof: %s\n", err);
        return -1;
    }
    return 0;
}

static int known_format(const char *to)
{
    return strcmp(to, "text") == 0 || strcmp(to, "collapsed") == 0 ||
           strcmp(to, "flamegraph") == 0 || strcmp(to, "pprof") == 0 || strcmp(to, "jfr") == 0;
}

const char *analyze_format_of_extension(const char *path)
{
    static const struct { const char *ext, *format; } by_ext[] = {
        { ".html", "flamegraph" }, { ".htm", "flamegraph" }, { ".pb.gz", "pprof" }, { ".pb", "pprof" },
        { ".collapsed", "collapsed" }, { ".folded", "collapsed" }, { ".txt", "text" }, { ".jfr", "jfr" },
    };
    size_t len = strlen(path);
    for (size_t i = 0; i < sizeof by_ext / sizeof by_ext[0]; i++) {
        size_t n = strlen(by_ext[i].ext);
        if (len > n && strcmp(path + len - n, by_ext[i].ext) == 0)
            return by_ext[i].format;
    }
    return NULL;
}

int analyze_convert(int argc, char **argv)
{
    analyze_args a;
    if (analyze_parse_args("convert", argc, argv, 1, &a) != 0)
        return ANALYZE_USAGE;
    if (a.to == NULL && a.out != NULL && strcmp(a.out, "-") != 0 && (a.to = analyze_format_of_extension(a.out)) == NULL)
        return analyze_usage("convert: -o %s: say the format with --to text|collapsed|flamegraph|pprof|jfr, or "
                             "name the file .txt, .collapsed, .html, .pb.gz or .jfr", a.out);
    if (a.nfiles == 0 || a.to == NULL || a.out == NULL || a.html)
        return analyze_usage("usage: hprof convert FILE [--to text|collapsed|flamegraph|pprof|jfr] "
                             "[--profile cpu|times|alloc|monitor|wait] -o OUT (without --to: by OUT's "
                             "extension, .txt .collapsed .html .pb.gz .jfr)");
    if (!known_format(a.to))
        return analyze_usage("convert: --to %s: want text, collapsed, flamegraph, pprof or jfr", a.to);
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
