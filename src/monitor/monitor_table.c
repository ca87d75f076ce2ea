/* monitor_table.c: see monitor_table.h. */
#include "monitor_table.h"
#include "../core/keytab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MONITOR_ROWS (1u << 20)

typedef struct row_key {
    serial_t trace;
    serial_t lock_class;
    uint32_t kind;
} row_key;

typedef struct row_value {
    uint64_t count;
    uint64_t nanos;
} row_value;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static keytab keys;
static row_value *values;
static uint32_t values_cap;
static uint64_t total;

int monitor_table_init(void)
{
    pthread_mutex_lock(&lock);
    keytab_init(&keys, MAX_MONITOR_ROWS);
    total = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

void monitor_table_free(void)
{
    pthread_mutex_lock(&lock);
    keytab_free(&keys);
    free(values);
    values = NULL;
    values_cap = 0;
    total = 0;
    pthread_mutex_unlock(&lock);
}

const char *block_kind_name(block_kind kind)
{
    switch (kind) {
    case BLOCK_ENTER: return "enter";
    case BLOCK_WAIT:  return "wait";
    case BLOCK_PARK:  return "park";
    case BLOCK_PARK_WAIT: return "park-wait";
    }
    return "?";
}

int monitor_table_add(serial_t trace, serial_t lock_class, block_kind kind, uint64_t nanos)
{
    row_key k;
    memset(&k, 0, sizeof k);
    k.trace = trace;
    k.lock_class = lock_class;
    k.kind = (uint32_t)kind;
    int rc = -1;
    pthread_mutex_lock(&lock);
    total += nanos;
    /* Room for the value first, so a key never exists without one. */
    if (keys.count >= values_cap) {
        uint32_t ncap = values_cap ? values_cap * 2 : 256;
        row_value *n = realloc(values, (size_t)ncap * sizeof *n);
        if (n != NULL) {
            memset(n + values_cap, 0, (size_t)(ncap - values_cap) * sizeof *n);
            values = n;
            values_cap = ncap;
        }
    }
    if (keys.count < values_cap) {
        uint32_t idx = keytab_intern(&keys, &k, sizeof k, NULL);
        if (idx != KEYTAB_FULL) {
            values[idx].count++;
            values[idx].nanos += nanos;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&lock);
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

int monitor_table_rows(monitor_row **rows, uint32_t *n, uint64_t *total_nanos)
{
    pthread_mutex_lock(&lock);
    uint32_t count = keys.count;
    monitor_row *r = malloc((count ? count : 1) * sizeof *r);
    if (r == NULL) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        const row_key *k = keytab_key(&keys, i, NULL);
        r[i].trace = k->trace;
        r[i].lock_class = k->lock_class;
        r[i].kind = (block_kind)k->kind;
        r[i].count = values[i].count;
        r[i].nanos = values[i].nanos;
    }
    *total_nanos = total;
    pthread_mutex_unlock(&lock);
    qsort(r, count, sizeof *r, compare_rows);
    *rows = r;
    *n = count;
    return 0;
}
