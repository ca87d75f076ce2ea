/*
 * hprof report FILE [--top N] [--html -o OUT.html]: a readable summary of a
 * profile file. Each section's tables are made once (report_section_tables)
 * and printed as text, or as HTML under the section's flame graph.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "../analysis/class_origins.h"
#include "../profile/flamegraph_writer.h"

#define MAX_TABLES  6

static double share(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "java.util.HashMap.get(HashMap.java:557)" of a frame */
static void frame_place(const profile_frame *f, char *buf, size_t size)
{
    char name[1024];
    profile_frame_name(f, name, sizeof name);
    if (f->line > 0)
        snprintf(buf, size, "%s(%s:%d)", name, f->file[0] ? f->file : "?", (int)f->line);
    else
        snprintf(buf, size, "%s", name);
}

/* ------------------------------------------------------------ methods */

/* Top methods by self or by total of value v, shown in `unit` (values
 * divided by unit_scale). */
static table *methods_table(const profile *p, uint32_t v, int by_total, int top, const char *unit,
                            double unit_scale)
{
    string_store *names = string_store_new();
    method_stat *m = NULL;
    uint32_t n = 0;
    table *t = NULL;
    char title[128], self_col[64], total_col[64];
    snprintf(title, sizeof title, "Top methods by %s",
             by_total ? "total (inclusive: callees included)" : "self (the leaf of the stack)");
    snprintf(self_col, sizeof self_col, ">self %s", unit);
    snprintf(total_col, sizeof total_col, ">total %s", unit);
    const char *cols[] = { ">rank", ">self%", self_col, ">total%", total_col, "method" };
    if (names && method_stats(p, v, names, &m, &n) == 0 && (t = table_new(title, 6, cols)) != NULL) {
        int64_t whole = profile_total(p, v);
        int decimals = unit_scale == 1.0 ? 0 : 1;
        if (by_total)
            method_stats_sort_by_total(m, n);
        else
            method_stats_sort_by_self(m, n);
        for (uint32_t i = 0; i < n && (int)i < top && (by_total ? m[i].total : m[i].self) > 0; i++)
            table_add(t, "%u\t%.2f%%\t%.*f\t%.2f%%\t%.*f\t%s", i + 1, share(m[i].self, whole), decimals,
                      (double)m[i].self / unit_scale, share(m[i].total, whole), decimals,
                      (double)m[i].total / unit_scale, m[i].name);
    }
    free(m);
    string_store_free(names);
    return t;
}

/* cpu=times: calls per method (self: the calls of the method itself). */
static table *calls_table(const profile *p, int top)
{
    string_store *names = string_store_new();
    method_stat *m = NULL;
    uint32_t n = 0;
    table *t = NULL;
    const char *cols[] = { ">rank", ">calls", "method" };
    if (names && method_stats(p, 0, names, &m, &n) == 0 &&
        (t = table_new("Most called methods", 3, cols)) != NULL) {
        method_stats_sort_by_self(m, n);
        for (uint32_t i = 0; i < n && (int)i < top && m[i].self > 0; i++) {
            char calls[32];
            table_add(t, "%u\t%s\t%s", i + 1, analyze_thousands(m[i].self, calls, sizeof calls), m[i].name);
        }
    }
    free(m);
    string_store_free(names);
    return t;
}

/* ------------------------------------------------------------ samples */

typedef struct ranked { uint32_t index; int64_t key, key2; } ranked;

static int by_keys(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    if (x->key2 != y->key2)
        return x->key2 > y->key2 ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Samples of p ordered by value v (then v2), largest first; malloc'ed. */
static ranked *rank_samples(const profile *p, uint32_t v, uint32_t v2)
{
    uint32_t n = profile_sample_count(p);
    ranked *r = malloc(((size_t)n + 1) * sizeof *r);
    for (uint32_t i = 0; r && i < n; i++) {
        profile_sample s;
        profile_sample_get(p, i, &s);
        r[i] = (ranked){ i, s.values[v], s.values[v2] };
    }
    if (r)
        qsort(r, n, sizeof *r, by_keys);
    return r;
}

/* SITES and MONITOR rows: the leaf frame is the class; the site is the
 * frame below it. */
static void class_and_site(const profile *p, const profile_sample *s, const char **cls, char *site,
                           size_t size)
{
    *cls = s->depth > 0 ? profile_frame_get(p, s->frames[0])->method : "?";
    if (s->depth > 1)
        frame_place(profile_frame_get(p, s->frames[1]), site, size);
    else
        snprintf(site, size, "(no stack)");
}

static table *sites_table(const profile *p, int top)
{
    const char *cols[] = { ">rank", ">live bytes", ">live objs", ">alloc'ed bytes", ">alloc'ed objs",
                           "class", "allocated at" };
    table *t = table_new("Top allocation sites (by live bytes, then allocated bytes)", 7, cols);
    ranked *r = rank_samples(p, 0, 2);
    uint32_t n = profile_sample_count(p);
    for (uint32_t i = 0; t && r && i < n && (int)i < top; i++) {
        profile_sample s;
        profile_sample_get(p, r[i].index, &s);
        const char *cls;
        char site[1200], a[32], b[32], c[32], d[32];
        class_and_site(p, &s, &cls, site, sizeof site);
        table_add(t, "%u\t%s\t%s\t%s\t%s\t%s\t%s", i + 1, analyze_thousands(s.values[0], a, sizeof a),
                  analyze_thousands(s.values[1], b, sizeof b), analyze_thousands(s.values[2], c, sizeof c),
                  analyze_thousands(s.values[3], d, sizeof d), cls, site);
    }
    free(r);
    return t;
}

/* Per class: the leaf frames' self values, all four of them. */
static table *classes_table(const profile *p, int top)
{
    string_store *names = string_store_new();
    method_stat *m[4] = { NULL, NULL, NULL, NULL };
    uint32_t n = 0;
    table *t = NULL;
    int ok = names != NULL;
    for (uint32_t v = 0; ok && v < 4; v++)
        ok = method_stats(p, v, names, &m[v], &n) == 0;
    const char *cols[] = { ">rank", ">live bytes", ">live objs", ">alloc'ed bytes", ">alloc'ed objs", "class" };
    if (ok && (t = table_new("Classes (all sites)", 6, cols)) != NULL) {
        /* m[0] is sorted by live bytes through an index, keeping m[1..3] aligned */
        ranked *r = malloc(((size_t)n + 1) * sizeof *r);
        uint32_t k = 0;
        for (uint32_t i = 0; r && i < n; i++)
            if (m[0][i].self > 0 || m[2][i].self > 0)
                r[k++] = (ranked){ i, m[0][i].self, m[2][i].self };
        if (r)
            qsort(r, k, sizeof *r, by_keys);
        for (uint32_t i = 0; r && i < k && (int)i < top; i++) {
            uint32_t x = r[i].index;
            char a[32], b[32], c[32], d[32];
            table_add(t, "%u\t%s\t%s\t%s\t%s\t%s", i + 1, analyze_thousands(m[0][x].self, a, sizeof a),
                      analyze_thousands(m[1][x].self, b, sizeof b), analyze_thousands(m[2][x].self, c, sizeof c),
                      analyze_thousands(m[3][x].self, d, sizeof d), m[0][x].name);
        }
        free(r);
    }
    for (int v = 0; v < 4; v++)
        free(m[v]);
    string_store_free(names);
    return t;
}

static table *monitor_table(const profile *p, int top, const char *title)
{
    const char *cols[] = { ">rank", ">ms", ">share", ">count", "lock class", "where" };
    table *t = table_new(title, 6, cols);
    ranked *r = rank_samples(p, 1, 0);
    uint32_t n = profile_sample_count(p);
    int64_t whole = profile_total(p, 1);
    for (uint32_t i = 0; t && r && i < n && (int)i < top; i++) {
        profile_sample s;
        profile_sample_get(p, r[i].index, &s);
        const char *cls;
        char site[1200], count[32];
        class_and_site(p, &s, &cls, site, sizeof site);
        table_add(t, "%u\t%.1f\t%.2f%%\t%s\t%s\t%s", i + 1, (double)s.values[1] / 1e6,
                  share(s.values[1], whole), analyze_thousands(s.values[0], count, sizeof count), cls, site);
    }
    free(r);
    return t;
}

/* With thread=y: the samples of each thread. */
static table *threads_of_samples(const profile *p, int top)
{
    uint32_t n = profile_sample_count(p);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    ranked *r = calloc((size_t)n + 1, sizeof *r);
    uint32_t k = 0;
    for (uint32_t i = 0; names && r && i < n; i++) {
        profile_sample s;
        profile_sample_get(p, i, &s);
        if (!s.thread[0])
            continue;
        uint32_t j = 0;
        while (j < k && names[j] != s.thread)      /* thread names are interned */
            j++;
        if (j == k)
            r[k++] = (ranked){ j, 0, 0 }, names[j] = s.thread;
        r[j].key = profile_add_saturated(r[j].key, s.values[0]);
    }
    const char *cols[] = { ">samples", ">share", "thread" };
    table *t = k > 0 ? table_new("Samples by thread", 3, cols) : NULL;
    qsort(r, k, sizeof *r, by_keys);
    for (uint32_t i = 0; t && i < k && (int)i < top; i++) {
        char count[32];
        table_add(t, "%s\t%.2f%%\t%s", analyze_thousands(r[i].key, count, sizeof count),
                  share(r[i].key, profile_total(p, 0)), names[r[i].index]);
    }
    free(names);
    free(r);
    return t;
}

int report_section_tables(const hprof_data *d, hd_kind k, int top, table **out, int max, int *n)
{
    const profile *p = d->profiles[k];
    *n = 0;
    if (p == NULL || max < 4)
        return 0;
    switch (k) {
    case HD_CPU_SAMPLES:
        out[(*n)++] = methods_table(p, 0, 0, top, "samples", 1.0);
        out[(*n)++] = methods_table(p, 0, 1, top, "samples", 1.0);
        out[(*n)++] = threads_of_samples(p, top);
        break;
    case HD_CPU_TIMES:
        out[(*n)++] = methods_table(p, 1, 0, top, "ms", 1e6);
        out[(*n)++] = methods_table(p, 1, 1, top, "ms", 1e6);
        out[(*n)++] = calls_table(p, top);
        break;
    case HD_SITES:
        out[(*n)++] = sites_table(p, top);
        out[(*n)++] = classes_table(p, top);
        break;
    case HD_MONITOR_TIME:
        out[(*n)++] = monitor_table(p, top, "Contended locks (blocked time by lock class and site)");
        break;
    case HD_MONITOR_WAIT:
        out[(*n)++] = monitor_table(p, top, "Waits (time in wait/await by lock class and site)");
        break;
    default:
        break;
    }
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (out[i])
            out[kept++] = out[i];
    *n = kept;
    return 0;
}

/* ------------------------------------------------------------ facts */

/* One line saying what a section measured. */
static void section_summary(const hprof_data *d, hd_kind k, char *buf, size_t size)
{
    const hd_section *s = &d->sections[k];
    const profile *p = d->profiles[k];
    char a[32], b[32], c[32], e[32];
    switch (k) {
    case HD_CPU_SAMPLES:
        if (d->interval_ms > 0)
            snprintf(buf, size, "%s samples, one every %d ms of a thread's CPU: about %.2f s of CPU",
                     analyze_thousands(s->total, a, sizeof a), d->interval_ms,
                     (double)s->total * d->interval_ms / 1000.0);
        else
            snprintf(buf, size, "%s samples", analyze_thousands(s->total, a, sizeof a));
        break;
    case HD_CPU_TIMES:
        snprintf(buf, size, "%s ms of CPU in timed methods, %s calls (times are the file's shares of "
                 "its total, so rows under 0.005%% show 0)", analyze_thousands(s->total, a, sizeof a),
                 analyze_thousands(profile_total(p, 0), b, sizeof b));
        break;
    case HD_SITES:
        /* JFR: sampled allocations, no liveness; hprof's own sites (jfr=) are as a text file's */
        if (d->events_read && !strstr(d->events_read, "hprof.AllocationSite")) {
            snprintf(buf, size, "%s bytes allocated, as JFR's allocation events weigh them (a recording "
                     "says nothing of live objects, nor how many were allocated)",
                     analyze_thousands(profile_total(p, 2), a, sizeof a));
            break;
        }
        snprintf(buf, size, "%s live bytes in %s objects; %s bytes in %s objects allocated%s",
                 analyze_thousands(profile_total(p, 0), a, sizeof a),
                 analyze_thousands(profile_total(p, 1), b, sizeof b),
                 analyze_thousands(profile_total(p, 2), c, sizeof c),
                 analyze_thousands(profile_total(p, 3), e, sizeof e),
                 s->nrows ? " (the rows of the file: sites under cutoff= are left out)" : "");
        break;
    default:
        snprintf(buf, size, "%s ms in %s events", analyze_thousands(s->total, a, sizeof a),
                 analyze_thousands(profile_total(p, 0), b, sizeof b));
        break;
    }
}

static table *facts_table(const hprof_data *d)
{
    const char *cols[] = { "what", "value" };
    table *t = table_new("File", 2, cols);
    if (t == NULL)
        return NULL;
    table_add(t, "file\t%s (%s)", d->path, d->format);
    if (d->created[0])
        table_add(t, "created\t%s", d->created);
    if (d->options[0])
        table_add(t, "options\t%s", d->options);
    if (d->events_read)
        table_add(t, "events\t%s", d->events_read);
    if (d->duration_ms >= 0)
        table_add(t, "duration\tabout %.1f s (%s)", (double)d->duration_ms / 1000.0,
                  d->start_ms ? "to the last record" : "from the header's date to the last section's");
    uint32_t at_max = 0, max = 0;
    int cut = hd_stacks_cut(d, &max, &at_max);
    table_add(t, "traces\t%u, up to %u frames deep", d->ntraces, max);
    if (cut)
        table_add(t, "depth\t%u traces stop at %u frames: stacks were cut at depth=, so callers "
                  "above that depth are missing from totals (a deeper depth= keeps them)", at_max, max);
    uint32_t ended = 0;
    for (uint32_t i = 0; i < d->nthreads; i++)
        ended += d->threads[i].ended != 0;
    table_add(t, "threads\t%u (%u ended)", d->nthreads, ended);
    if (d->has_heap_summary)
        table_add(t, "heap summary\t%lld live bytes in %lld objects; %lld bytes in %lld objects allocated",
                  (long long)d->heap_live_bytes, (long long)d->heap_live_objs,
                  (long long)d->heap_alloc_bytes, (long long)d->heap_alloc_objs);
    if (d->heap_dumps || d->text_heap_dumps)
        table_add(t, "heap dumps\t%u: %llu classes, %llu instances, %llu object arrays, %llu "
                  "primitive arrays, %llu roots%s%s", d->heap_dumps + d->text_heap_dumps,
                  (unsigned long long)d->heap_classes, (unsigned long long)d->heap_instances,
                  (unsigned long long)d->heap_obj_arrays, (unsigned long long)d->heap_prim_arrays,
                  (unsigned long long)d->heap_roots, d->heap_dump_note ? "; " : "",
                  d->heap_dump_note ? d->heap_dump_note : "");
    for (int k = 0; k < HD_KINDS; k++)
        if (d->sections[k].times_seen > 1)
            table_add(t, "dumps\t%u %s sections (SIGQUIT dumps): the last, which covers the run, is shown",
                      d->sections[k].times_seen, hd_kind_title((hd_kind)k));
    if (d->agent_memory_lines)
        table_add(t, "agent memory\t%llu bytes in its tables at the last of %u dumps (most %llu); threads: %llu "
                  "seen, %llu ended ones forgotten", (unsigned long long)d->agent_memory_bytes,
                  d->agent_memory_lines, (unsigned long long)d->agent_memory_max,
                  (unsigned long long)d->agent_threads_seen, (unsigned long long)d->agent_threads_forgotten);
    if (d->ignored_lines)
        table_add(t, "other lines\t%u lines of kinds this report does not read", d->ignored_lines);
    return t;
}

static table *threads_table(const hprof_data *d, int top)
{
    const char *cols[] = { ">serial", "name", "group", "ended" };
    table *t = table_new("Threads", 4, cols);
    for (uint32_t i = 0; t && i < d->nthreads && (int)i < top * 5; i++)
        table_add(t, "%u\t%s\t%s\t%s", d->threads[i].serial, d->threads[i].name, d->threads[i].group,
                  d->threads[i].ended ? "yes" : "no");
    return t;
}

/* ------------------------------------------------------------ output */

static void print_tables(table **tables, int n, FILE *out, int html)
{
    for (int i = 0; i < n; i++) {
        if (html)
            table_print_html(tables[i], out);
        else
            table_print_text(tables[i], out);
        table_free(tables[i]);
    }
}

static void print_block(FILE *out, const char *title, const char *text, int html)
{
    if (html) {
        fprintf(out, "<h3>");
        html_write_escaped(out, title);
        fprintf(out, "</h3>\n<pre>");
        html_write_escaped(out, text);
        fprintf(out, "</pre>\n");
    } else {
        fprintf(out, "  %s\n", title);
        for (const char *p = text; *p; ) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(out, "    %.*s\n", (int)n, p);
            p += n + (nl != NULL);
        }
    }
}

/* One section's text (or HTML for under its graph): summary line and tables. */
static void write_section_body(const hprof_data *d, hd_kind k, int top, FILE *out, int html)
{
    char summary[512];
    section_summary(d, k, summary, sizeof summary);
    if (html) {
        fprintf(out, "<p>");
        html_write_escaped(out, summary);
        fprintf(out, "</p>\n");
    } else {
        fprintf(out, "%s: %s\n", hd_kind_title(k), summary);
    }
    table *tables[MAX_TABLES];
    int n = 0;
    report_section_tables(d, k, top, tables, MAX_TABLES, &n);
    print_tables(tables, n, out, html);
}

/* The facts that are not stacks: file, deadlocks, monitor dump, threads,
 * and why the classes of a heap dump were loaded. */
static void write_facts(const hprof_data *d, int top, FILE *out, int html)
{
    table *t[2] = { facts_table(d), threads_table(d, top) };
    print_tables(t, 1, out, html);
    if (d->deadlocks)
        print_block(out, d->deadlock_cycles ? "DEADLOCKS" : "Deadlocks: none found", d->deadlocks, html);
    if (d->monitor_dump)
        print_block(out, "Monitor dump (owners and waiters at the last dump)", d->monitor_dump, html);
    print_tables(t + 1, 1, out, html);
    table *classes[3];
    int n = 0;
    if (class_origin_tables(d, top, classes, 3, &n) != 0)
        fprintf(stderr, "hprof report: out of memory: the tables of classes by loader and loading site are left out\n");
    else if (n && !html)
        fprintf(out, "\nClasses: why they were loaded (the class records of the last heap dump)\n");
    print_tables(classes, n, out, html);
}

/* Where the time went, first: the agent's summaries of the last dump. */
static int write_summaries(const hprof_data *d, FILE *out, int html)
{
    if (d->cpu_summary)
        print_block(out, "Where the CPU went (CPU SUMMARY of the last dump: by category, by thread)",
                    d->cpu_summary, html);
    if (d->wall_summary)
        print_block(out, "Where the wall time went (WALL SUMMARY of the last dump: by state, by thread)",
                    d->wall_summary, html);
    return d->cpu_summary || d->wall_summary;
}

int report_write_text(const hprof_data *d, int top, FILE *out)
{
    fprintf(out, "hprof report: %s\n\n", d->path);
    if (write_summaries(d, out, 0))
        fprintf(out, "\n");
    int any = 0;
    for (int k = 0; k < HD_KINDS; k++) {
        if (!d->profiles[k])
            continue;
        write_section_body(d, (hd_kind)k, top, out, 0);
        fprintf(out, "\n");
        any = 1;
    }
    if (!any)
        fprintf(out, "No profile sections (CPU SAMPLES, CPU TIME, SITES, MONITOR TIME) in this file.\n\n");
    write_facts(d, top, out, 0);
    return ANALYZE_OK;
}

/* The HTML report: every section with its flame graph and tables under it,
 * then the facts as a section of tables only. */
static int write_html_report(const hprof_data *d, int top, const char *out_path)
{
    flamegraph_section sections[HD_KINDS + 2];
    char notes[HD_KINDS + 2][512];
    char *html[HD_KINDS + 2] = { NULL };
    size_t html_len[HD_KINDS + 2];
    uint32_t n = 0;
    if (d->cpu_summary || d->wall_summary) {
        FILE *mem = open_memstream(&html[n], &html_len[n]);
        if (mem != NULL) {
            write_summaries(d, mem, 1);
            fclose(mem);
            sections[n] = (flamegraph_section){ "Where the time went", NULL, 0, NULL, html[n], NULL };
            n++;
        }
    }
    for (int k = 0; k <= HD_KINDS; k++) {
        if (k < HD_KINDS && !d->profiles[k])
            continue;
        FILE *mem = open_memstream(&html[n], &html_len[n]);
        if (mem == NULL)
            break;
        if (k < HD_KINDS)
            write_section_body(d, (hd_kind)k, top, mem, 1);
        else
            write_facts(d, top, mem, 1);
        fclose(mem);
        const profile *p = k < HD_KINDS ? d->profiles[k] : NULL;
        sections[n] = (flamegraph_section){ k < HD_KINDS ? hd_kind_title((hd_kind)k) : "File, threads, locks",
                                            p, p ? profile_default_value(p) : 0, NULL, html[n],
                                            p ? analyze_graph_note(d, p, notes[n], sizeof notes[n]) : NULL };
        n++;
    }
    char title[512];
    snprintf(title, sizeof title, "hprof report: %s", d->path);
    int rc = analyze_write_page(out_path, analyze_holds_heap_dump(d), title, sections, n);
    for (uint32_t i = 0; i < n; i++)
        free(html[i]);
    return rc;
}

int analyze_report(int argc, char **argv)
{
    analyze_args a;
    if (analyze_parse_args("report", argc, argv, 1, &a) != 0)
        return ANALYZE_USAGE;
    if (a.nfiles == 0)
        return analyze_usage("report needs a file: hprof report FILE [--top N] [--html -o OUT.html]");
    if (a.to || a.profile)
        return analyze_usage("report takes --top, --html and -o (convert takes --to and --profile)");
    if (a.html != (a.out != NULL))
        return analyze_usage("report: --html and -o OUT.html go together (text goes to standard output)");
    hprof_data *d = analyze_read(a.files[0]);
    if (d == NULL)
        return ANALYZE_ERROR;
    int rc = a.html ? write_html_report(d, a.top, a.out) : report_write_text(d, a.top, stdout);
    hprof_data_free(d);
    return rc;
}
