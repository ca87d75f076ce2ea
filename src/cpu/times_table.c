/* times_table: see times_table.h. */
#include "times_table.h"

#include <stdlib.h>
#include <string.h>

void times_table_init(times_table *t) { memset(t, 0, sizeof *t); }

void times_table_free(times_table *t) { free(t->slots); memset(t, 0, sizeof *t); }

static uint32_t slot_of(const times_row *slots, uint32_t cap, serial_t trace) {
    uint32_t i = (trace * 2654435761u) & (cap - 1);
    while (slots[i].trace != 0 && slots[i].trace != trace) i = (i + 1) & (cap - 1);
    return i;
}

static int grow(times_table *t) {
    uint32_t cap = t->cap ? t->cap * 2 : 256;
    times_row *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return -1;
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slots[i].trace) slots[slot_of(slots, cap, t->slots[i].trace)] = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

int times_table_add(times_table *t, serial_t trace, uint64_t calls, uint64_t cpu_ns, uint64_t total_ns) {
    if (trace == 0) return 0;
    if ((t->n + 1) * 2 > t->cap && grow(t) != 0) return -1;
    times_row *r = &t->slots[slot_of(t->slots, t->cap, trace)];
    if (r->trace == 0) { r->trace = trace; t->n++; }
    r->calls += calls;
    r->cpu_ns += cpu_ns;
    r->total_ns += total_ns;
    return 0;
}

int times_table_merge(times_table *dst, const times_table *src) {
    for (uint32_t i = 0; i < src->cap; i++)
        if (src->slots[i].trace &&
            times_table_add(dst, src->slots[i].trace, src->slots[i].calls, src->slots[i].cpu_ns,
                            src->slots[i].total_ns) != 0)
            return -1;
    return 0;
}

/* Rows with nothing left after subtracting are dropped (rebuilt table). */
int times_table_subtract(times_table *t, const times_table *baseline) {
    if (baseline->n == 0 || t->n == 0) return 0;
    times_table out;
    times_table_init(&out);
    for (uint32_t i = 0; i < t->cap; i++) {
        const times_row *r = &t->slots[i];
        if (r->trace == 0) continue;
        uint64_t calls = r->calls, cpu = r->cpu_ns, total = r->total_ns;
        const times_row *b = &baseline->slots[slot_of(baseline->slots, baseline->cap, r->trace)];
        if (b->trace == r->trace) {
            calls = calls > b->calls ? calls - b->calls : 0;
            cpu = cpu > b->cpu_ns ? cpu - b->cpu_ns : 0;
            total = total > b->total_ns ? total - b->total_ns : 0;
        }
        if ((calls || cpu || total) && times_table_add(&out, r->trace, calls, cpu, total) != 0) {
            times_table_free(&out);
            return -1;
        }
    }
    times_table_free(t);
    *t = out;
    return 0;
}

static int by_time(const void *a, const void *b) {
    const times_row *x = a, *y = b;
    if (x->cpu_ns != y->cpu_ns) return x->cpu_ns > y->cpu_ns ? -1 : 1;
    if (x->calls != y->calls) return x->calls > y->calls ? -1 : 1;
    return x->trace < y->trace ? -1 : x->trace > y->trace;
}

int times_table_rows(const times_table *t, times_row **rows, uint32_t *n, uint64_t *total_ns) {
    *rows = malloc((t->n ? t->n : 1) * sizeof **rows);
    if (*rows == NULL) return -1;
    uint32_t k = 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slots[i].trace) { (*rows)[k++] = t->slots[i]; total += t->slots[i].cpu_ns; }
    qsort(*rows, k, sizeof **rows, by_time);
    *n = k;
    *total_ns = total;
    return 0;
}
