/* monitor_table.c: see monitor_table.h. */
#include "monitor_table.h"
#include "../core/keytab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MONITOR_ROWS (1u << 20)

typedef struct row_key {
    serial_t trace;
    stack_id stack;
    serial_t lock_class;
    uint32_t kind;
} row_key;

typedef struct row_value {
    uint64_t count;
    uint64_t nanos;
} row_value;

/* Shards by key hash: every blocking episode of every thread lands here, so
 * one mutex would itself become a contended lock in a contended program. A
 * key always maps to the same shard, so rows need no merging. */
#define SHARDS 16

typedef struct shard {
    pthread_mutex_t lock;
    keytab keys;
    row_value *values;
    uint32_t values_cap;
} shard;

/* The table: rows in shards, and the total of every episode. */
struct monitor_table {
    shard shards[SHARDS];
    pthread_mutex_t total_lock;
    uint64_t total; /* also counts episodes a full table could not keep */
};

monitor_table *monitor_table_new(void)
{
    monitor_table *table = calloc(1, sizeof *table);
    if (table == NULL)
        return NULL;
    pthread_mutex_init(&table->total_lock, NULL);
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&table->shards[i].lock, NULL);
        keytab_init(&table->shards[i].keys, MAX_MONITOR_ROWS / SHARDS);
    }
    return table;
}

void monitor_table_free(monitor_table *table)
{
    if (table == NULL)
        return;
    for (int i = 0; i < SHARDS; i++) {
        keytab_free(&table->shards[i].keys);
        free(table->shards[i].values);
        pthread_mutex_destroy(&table->shards[i].lock);
    }
    pthread_mutex_destroy(&table->total_lock);
    free(table);
}

void monitor_table_reset(monitor_table *table)
{
    if (table == NULL)
        return;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&table->shards[i].lock);
        if (table->shards[i].values)
            memset(table->shards[i].values, 0, (size_t)table->shards[i].values_cap * sizeof *table->shards[i].values);
        pthread_mutex_unlock(&table->shards[i].lock);
    }
    pthread_mutex_lock(&table->total_lock);
    table->total = 0;
    pthread_mutex_unlock(&table->total_lock);
}

const char *block_kind_name(block_kind kind)
{
    switch (kind) {
    case BLOCK_ENTER: return "enter";
    case BLOCK_WAIT:  return "wait";
    case BLOCK_PARK:  return "park";
    case BLOCK_PARK_WAIT: return "park-wait";
    case BLOCK_PINNED: return "pinned";
    }
    return "?";
}

int monitor_table_add(monitor_table *table, serial_t trace, stack_id stack, serial_t lock_class, block_kind kind, uint64_t nanos)
{
    if (table == NULL)
        return -1;
    row_key k;
    memset(&k, 0, sizeof k);
    k.trace = trace;
    k.stack = stack;
    k.lock_class = lock_class;
    k.kind = (uint32_t)kind;
    shard *s = &table->shards[keytab_hash(&k, sizeof k) % SHARDS];
    int rc = -1;
    pthread_mutex_lock(&s->lock);
    /* Room for the value first, so a key never exists without one. */
    if (s->keys.count >= s->values_cap) {
        uint32_t ncap = s->values_cap ? s->values_cap * 2 : 64;
        row_value *n = realloc(s->values, (size_t)ncap * sizeof *n);
        if (n != NULL) {
            memset(n + s->values_cap, 0, (size_t)(ncap - s->values_cap) * sizeof *n);
            s->values = n;
            s->values_cap = ncap;
        }
    }
    if (s->keys.count < s->values_cap) {
        uint32_t idx = keytab_intern(&s->keys, &k, sizeof k, NULL);
        if (idx != KEYTAB_FULL) {
            s->values[idx].count++;
            s->values[idx].nanos += nanos;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) {
        pthread_mutex_lock(&table->total_lock);
        table->total += nanos;          /* not in a row: still in the total */
        pthread_mutex_unlock(&table->total_lock);
    }
    return rc;
}

static int compare_rows(const void *a, const void *b)
{
    const monitor_row *x = a, *y = b;
    if (x->nanos != y->nanos)
        return x->nanos > y->nanos ? -1 : 1;
    if (x->trace != y->trace)
        return x->trace < y->trace ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

/* Every key with episodes since the last reset, one row each (whole
 * stacks apart); *total_nanos adds what no row could keep. */
static monitor_row *key_rows(monitor_table *table, uint32_t *n, uint64_t *total_nanos)
{
    uint32_t cap = 0;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&table->shards[i].lock);
        cap += table->shards[i].keys.count;
        pthread_mutex_unlock(&table->shards[i].lock);
    }
    cap += 64;                    /* rows added meanwhile */
    monitor_row *r = malloc(cap * sizeof *r);
    if (r == NULL)
        return NULL;
    uint32_t count = 0;
    uint64_t sum = 0;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &table->shards[i];
        pthread_mutex_lock(&s->lock);
        for (uint32_t j = 0; j < s->keys.count && count < cap; j++) {
            if (s->values[j].count == 0)
                continue;                 /* zeroed by a reset */
            const row_key *k = keytab_key(&s->keys, j, NULL);
            r[count] = (monitor_row){ k->trace, k->stack, k->lock_class, (block_kind)k->kind,
                                      s->values[j].count, s->values[j].nanos };
            sum += r[count].nanos;
            count++;
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_lock(&table->total_lock);
    *total_nanos = sum + table->total;
    pthread_mutex_unlock(&table->total_lock);
    *n = count;
    return r;
}

static int compare_keys(const void *a, const void *b)
{
    const monitor_row *x = a, *y = b;
    if (x->trace != y->trace)
        return x->trace < y->trace ? -1 : 1;
    if (x->lock_class != y->lock_class)
        return x->lock_class < y->lock_class ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

void monitor_rows_merge(monitor_row *r, uint32_t *n)
{
    /* Rows of one (trace, class, kind) from several whole stacks: one row. */
    qsort(r, *n, sizeof *r, compare_keys);
    uint32_t m = 0;
    for (uint32_t i = 0; i < *n; i++) {
        if (m > 0 && compare_keys(&r[m - 1], &r[i]) == 0) {
            r[m - 1].count += r[i].count;
            r[m - 1].nanos += r[i].nanos;
        } else {
            r[m] = r[i];
            r[m++].stack = 0;
        }
    }
    qsort(r, m, sizeof *r, compare_rows);
    *n = m;
}

int monitor_table_stack_rows(monitor_table *table, monitor_row **rows, uint32_t *n, uint64_t *total_nanos)
{
    if (table == NULL) {                /* none made yet: no rows */
        *n = 0;
        *total_nanos = 0;
        *rows = calloc(1, sizeof **rows);
        return *rows ? 0 : -1;
    }
    *rows = key_rows(table, n, total_nanos);
    return *rows ? 0 : -1;
}

int monitor_table_rows(monitor_table *table, monitor_row **rows, uint32_t *n, uint64_t *total_nanos)
{
    if (monitor_table_stack_rows(table, rows, n, total_nanos) != 0)
        return -1;
    monitor_rows_merge(*rows, n);
    return 0;
}
