/* analysis.c: see analysis.h. */
#include "analysis.h"

#include "../core/hidden_names.h"

#include <stdlib.h>
#include <string.h>

size_t analysis_frame_name(const profile_frame *f, char *buf, size_t size)
{
    int got = profile_frame_name(f, buf, size);
    size_t len = got < 0 ? 0 : (size_t)got < size ? (size_t)got : size - 1;
    buf[len] = '\0';
    return hidden_name_drop_addresses(buf, len);
}

/* ------------------------------------------------------------ methods */

typedef struct named_frame {
    const char *name;
    uint32_t    frame_id;
} named_frame;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_frame *)a)->name, ((const named_frame *)b)->name);
}

/* Gives every frame id its method's index (frames with the same name, at
 * other lines, share one): sorted by name, equal runs are one method.
 * method_of[frame id] is filled; returns the method count, or -1. */
static int64_t number_methods(const profile *p, string_store *names, uint32_t *method_of,
                              method_stat **methods)
{
    uint32_t nframes = profile_frame_count(p);
    named_frame *nf = malloc(((size_t)nframes + 1) * sizeof *nf);
    *methods = malloc(((size_t)nframes + 1) * sizeof **methods);
    if (nf == NULL || *methods == NULL) {
        free(nf);
        return -1;
    }
    char buf[2048];
    for (uint32_t id = 1; id <= nframes; id++) {
        size_t n = analysis_frame_name(profile_frame_get(p, id), buf, sizeof buf);
        nf[id - 1] = (named_frame){ string_store_add(names, buf, n), id };
        if (nf[id - 1].name == NULL) {
            free(nf);
            return -1;
        }
    }
    qsort(nf, nframes, sizeof *nf, by_name);
    uint32_t count = 0;
    for (uint32_t i = 0; i < nframes; i++) {
        if (i == 0 || strcmp(nf[i].name, nf[i - 1].name) != 0)
            (*methods)[count++] = (method_stat){ nf[i].name, 0, 0 };
        method_of[nf[i].frame_id] = count - 1;
    }
    free(nf);
    return count;
}

int method_stats(const profile *p, uint32_t value_index, string_store *names,
                 method_stat **out, uint32_t *n)
{
    uint32_t nframes = profile_frame_count(p);
    uint32_t *method_of = malloc(((size_t)nframes + 1) * sizeof *method_of);
    method_stat *m = NULL;
    int64_t count = method_of ? number_methods(p, names, method_of, &m) : -1;
    /* stamp[m] = the last sample (+1) that counted m in its total, so a
     * recursive method counts once per stack. */
    uint32_t *stamp = count >= 0 ? calloc((size_t)count + 1, sizeof *stamp) : NULL;
    if (stamp == NULL) {
        free(method_of);
        free(m);
        return -1;
    }
    uint32_t nsamples = profile_sample_count(p);
    for (uint32_t i = 0; i < nsamples; i++) {
        profile_sample s;
        profile_sample_get(p, i, &s);
        int64_t v = s.values[value_index];
        if (s.depth > 0)
            m[method_of[s.frames[0]]].self = profile_add_saturated(m[method_of[s.frames[0]]].self, v);
        for (uint32_t k = 0; k < s.depth; k++) {
            uint32_t mi = method_of[s.frames[k]];
            if (stamp[mi] != i + 1) {
                stamp[mi] = i + 1;
                m[mi].total = profile_add_saturated(m[mi].total, v);
            }
        }
    }
    free(stamp);
    free(method_of);
    *out = m;
    *n = (uint32_t)count;
    return 0;
}

static int cmp_i64_desc(int64_t a, int64_t b)
{
    return a > b ? -1 : a < b ? 1 : 0;
}

static int by_self(const void *a, const void *b)
{
    const method_stat *x = a, *y = b;
    int c = cmp_i64_desc(x->self, y->self);
    return c ? c : strcmp(x->name, y->name);
}

static int by_total(const void *a, const void *b)
{
    const method_stat *x = a, *y = b;
    int c = cmp_i64_desc(x->total, y->total);
    return c ? c : strcmp(x->name, y->name);
}

void method_stats_sort_by_self(method_stat *m, uint32_t n)
{
    qsort(m, n, sizeof *m, by_self);
}

void method_stats_sort_by_total(method_stat *m, uint32_t n)
{
    qsort(m, n, sizeof *m, by_total);
}

/* ------------------------------------------------------------ diffs */

static int row_by_name(const void *a, const void *b)
{
    return strcmp(((const diff_row *)a)->name, ((const diff_row *)b)->name);
}

/* rows: each side's entries (one side's values zero), sorted by name and
 * merged so that each name is one row. Returns the merged count. */
static uint32_t merge_by_name(diff_row *rows, uint32_t n)
{
    qsort(rows, n, sizeof *rows, row_by_name);
    uint32_t out = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (out > 0 && strcmp(rows[out - 1].name, rows[i].name) == 0) {
            diff_row *r = &rows[out - 1];
            r->before = profile_add_saturated(r->before, rows[i].before);
            r->after = profile_add_saturated(r->after, rows[i].after);
            r->before_total_only = profile_add_saturated(r->before_total_only, rows[i].before_total_only);
            r->after_total_only = profile_add_saturated(r->after_total_only, rows[i].after_total_only);
        } else {
            rows[out++] = rows[i];
        }
    }
    return out;
}

int diff_methods(const profile *before, const profile *after, uint32_t value_index,
                 string_store *names, diff_row **out, uint32_t *n)
{
    method_stat *mb = NULL, *ma = NULL;
    uint32_t nb = 0, na = 0;
    diff_row *rows = NULL;
    int rc = -1;
    if (method_stats(before, value_index, names, &mb, &nb) == 0 &&
        method_stats(after, value_index, names, &ma, &na) == 0 &&
        (rows = malloc(((size_t)nb + na + 1) * sizeof *rows)) != NULL) {
        for (uint32_t i = 0; i < nb; i++)
            rows[i] = (diff_row){ mb[i].name, mb[i].self, 0, mb[i].total, 0 };
        for (uint32_t i = 0; i < na; i++)
            rows[nb + i] = (diff_row){ ma[i].name, 0, ma[i].self, 0, ma[i].total };
        *n = merge_by_name(rows, nb + na);
        *out = rows;
        rc = 0;
    }
    free(mb);
    free(ma);
    return rc;
}

const char *stack_key(const profile *p, const profile_sample *s, string_store *names)
{
    size_t cap = 256, len = 0;
    char *key = malloc(cap);
    char name[2048];
    for (uint32_t k = s->depth; key && k-- > 0; ) {
        size_t n = analysis_frame_name(profile_frame_get(p, s->frames[k]), name, sizeof name);
        if (len + n + 2 > cap) {
            while (len + n + 2 > cap)
                cap *= 2;
            char *bigger = realloc(key, cap);
            if (bigger == NULL) {
                free(key);
                return NULL;
            }
            key = bigger;
        }
        if (len)
            key[len++] = ';';
        memcpy(key + len, name, n);
        len += n;
    }
    const char *kept = key ? string_store_add(names, key, len) : NULL;
    free(key);
    return kept;
}

/* One row per sample of p (before or after side). */
static int stack_rows(const profile *p, uint32_t value_index, int after, string_store *names,
                      diff_row *rows)
{
    uint32_t n = profile_sample_count(p);
    for (uint32_t i = 0; i < n; i++) {
        profile_sample s;
        profile_sample_get(p, i, &s);
        const char *key = stack_key(p, &s, names);
        if (key == NULL)
            return -1;
        int64_t v = s.values[value_index];
        rows[i] = (diff_row){ key, after ? 0 : v, after ? v : 0, 0, 0 };
    }
    return 0;
}

int diff_stacks(const profile *before, const profile *after, uint32_t value_index,
                string_store *names, diff_row **out, uint32_t *n)
{
    uint32_t nb = profile_sample_count(before), na = profile_sample_count(after);
    diff_row *rows = malloc(((size_t)nb + na + 1) * sizeof *rows);
    if (rows == NULL || stack_rows(before, value_index, 0, names, rows) != 0 ||
        stack_rows(after, value_index, 1, names, rows + nb) != 0) {
        free(rows);
        return -1;
    }
    *n = merge_by_name(rows, nb + na);
    *out = rows;
    return 0;
}

double diff_share_change(const diff_row *row, int64_t total_before, int64_t total_after,
                         int use_total)
{
    int64_t b = use_total ? row->before_total_only : row->before;
    int64_t a = use_total ? row->after_total_only : row->after;
    double share_b = total_before > 0 ? (double)b / (double)total_before : 0.0;
    double share_a = total_after > 0 ? (double)a / (double)total_after : 0.0;
    return share_a - share_b;
}

/* The totals of a sort by share change. */
typedef struct sort_totals { int64_t before, after; int use_total; } sort_totals;

static int by_share_change(const void *a, const void *b, void *context)
{
    const sort_totals *t = context;
    double x = diff_share_change(a, t->before, t->after, t->use_total);
    double y = diff_share_change(b, t->before, t->after, t->use_total);
    double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    if (ax != ay)
        return ax > ay ? -1 : 1;
    return row_by_name(a, b);
}

void diff_sort_by_share_change(diff_row *rows, uint32_t n, int64_t total_before,
                               int64_t total_after, int use_total)
{
    sort_totals totals = { total_before, total_after, use_total };
    qsort_r(rows, n, sizeof *rows, by_share_change, &totals);
}
