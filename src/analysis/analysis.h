/*
 * analysis: what `hprof report` and `hprof diff` compute over profiles.
 *
 * Methods are frames by name ("java.util.HashMap.get"), lines merged: a
 * method's self value is the value of the stacks it is the leaf of, its total
 * (inclusive) value that of every stack it is in, counted once per stack even
 * when it recurses. Stacks are compared between two profiles by their frames'
 * names, not by trace serials, which differ from run to run, and without
 * the addresses in hidden classes' names (lambdas, LambdaForms), which do too.
 *
 * Pure C, no JVMTI. Names returned live in an analysis_names store owned by
 * the caller (a string_store).
 */
#ifndef HPROF_ANALYSIS_H
#define HPROF_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "../profile/profile.h"
#include "../reader/string_store.h"

/* f's name ("class.method") in buf, as analyses compare it: a hidden
 * class's ".0x<hex>" address left out (Foo$$Lambda.0x7f0a.run ->
 * Foo$$Lambda.run). Returns its length (cut to size - 1). */
size_t analysis_frame_name(const profile_frame *f, char *buf, size_t size);

typedef struct method_stat {
    const char *name;
    int64_t     self, total;
} method_stat;

/* One entry per distinct method name, in name order (so the stats of two
 * values of one profile line up). 0, or -1 when
 * out of memory. *out is malloc'ed. */
int method_stats(const profile *p, uint32_t value_index, string_store *names,
                 method_stat **out, uint32_t *n);
void method_stats_sort_by_self(method_stat *m, uint32_t n);
void method_stats_sort_by_total(method_stat *m, uint32_t n);

/* The same name (a method or a stack) before and after. */
typedef struct diff_row {
    const char *name;
    int64_t     before, after;
    int64_t     before_total_only, after_total_only;  /* methods: total (inclusive) values */
} diff_row;

/* Methods of both profiles by name: before/after are self values,
 * *_total_only the inclusive ones. */
int diff_methods(const profile *before, const profile *after, uint32_t value_index,
                 string_store *names, diff_row **out, uint32_t *n);
/* Stacks of both profiles by their frames' names ("root;...;leaf"), threads
 * merged. */
int diff_stacks(const profile *before, const profile *after, uint32_t value_index,
                string_store *names, diff_row **out, uint32_t *n);
/* Orders rows by the change of their share of the total (after/total_after
 * - before/total_before), largest change either way first; use_total: the
 * *_total_only values instead. */
void diff_sort_by_share_change(diff_row *rows, uint32_t n, int64_t total_before,
                               int64_t total_after, int use_total);
double diff_share_change(const diff_row *row, int64_t total_before, int64_t total_after,
                         int use_total);

/* "root;caller;leaf" of one sample (frames by name), in names. NULL when out of memory. */
const char *stack_key(const profile *p, const profile_sample *s, string_store *names);

#endif
