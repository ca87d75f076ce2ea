/* stack_table.c: see stack_table.h.
 *
 * Keys are the thread serial followed by the frames, as stored by keytab
 * (which copies them into storage that never moves); the TRACE of each
 * stack is kept in an array by index. */
#include "stack_table.h"
#include "keytab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A stored key: the thread serial, then the frames. stack_frame is two
 * 32-bit words with no padding, so the frames can be read back in place. */
typedef struct stack_key {
    serial_t    thread_serial;
    stack_frame frames[STACK_MAX_FRAMES];
} stack_key;

void stack_table_init(stack_table *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->lock, NULL);
}

static uint32_t key_length(uint32_t n)
{
    return (uint32_t)(sizeof(serial_t) + n * sizeof(stack_frame));
}

/* Room for the trace of index i (lock held). */
static int grow_traces(stack_table *st, uint32_t i)
{
    if (i < st->traces_cap)
        return 0;
    uint32_t cap = st->traces_cap ? st->traces_cap * 2 : 1024;
    while (cap <= i)
        cap *= 2;
    serial_t *t = realloc(st->traces, (size_t)cap * sizeof *t);
    if (t == NULL)
        return -1;
    st->traces = t;
    st->traces_cap = cap;
    return 0;
}

stack_id stack_intern(profile_tables *tables, serial_t thread_serial, const stack_frame *frames, uint32_t n,
                      serial_t trace)
{
    stack_table *st = profile_tables_stacks(tables);
    if (n > STACK_MAX_FRAMES)
        n = STACK_MAX_FRAMES;
    stack_key key;
    key.thread_serial = thread_serial;
    memcpy(key.frames, frames, n * sizeof *frames);
    uint32_t len = key_length(n);
    stack_id id = 0;
    pthread_mutex_lock(&st->lock);
    if (!st->made) {
        keytab_init(&st->keys, STACK_TABLE_MAX_STACKS);
        st->made = 1;
    }
    uint32_t index = keytab_find(&st->keys, &key, len);
    if (index == KEYTAB_FULL && st->key_bytes + len <= STACK_TABLE_MAX_BYTES &&
        grow_traces(st, st->keys.count) == 0) {
        index = keytab_intern(&st->keys, &key, len, NULL);
        if (index != KEYTAB_FULL) {
            st->traces[index] = trace;
            st->key_bytes += len;
        }
    }
    if (index != KEYTAB_FULL)
        id = index + 1;
    pthread_mutex_unlock(&st->lock);
    return id;
}

int stack_get(profile_tables *tables, stack_id id, serial_t *thread_serial, const stack_frame **frames,
              uint32_t *n, serial_t *trace)
{
    stack_table *st = profile_tables_stacks(tables);
    int rc = -1;
    pthread_mutex_lock(&st->lock);
    if (st->made && id >= 1 && id <= st->keys.count) {
        uint32_t len = 0;
        const unsigned char *key = keytab_key(&st->keys, id - 1, &len);
        serial_t thread;
        memcpy(&thread, key, sizeof thread);
        if (thread_serial)
            *thread_serial = thread;
        if (frames)
            *frames = (const stack_frame *)(const void *)(key + sizeof(serial_t));
        if (n)
            *n = (len - (uint32_t)sizeof(serial_t)) / (uint32_t)sizeof(stack_frame);
        if (trace)
            *trace = st->traces[id - 1];
        rc = 0;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

uint32_t stack_count(profile_tables *tables)
{
    stack_table *st = profile_tables_stacks(tables);
    pthread_mutex_lock(&st->lock);
    uint32_t n = st->made ? st->keys.count : 0;
    pthread_mutex_unlock(&st->lock);
    return n;
}

void stack_table_free(stack_table *st)
{
    if (st->made)
        keytab_free(&st->keys);
    free(st->traces);
    pthread_mutex_destroy(&st->lock);
    memset(st, 0, sizeof *st);
}
