/* string_store.c: see string_store.h. */
#include "string_store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES 65536u

typedef struct chunk {
    struct chunk *next;
    size_t        used, cap;
    char          bytes[];
} chunk;

struct string_store {
    chunk *chunks;      /* the newest first: strings go into it while they fit */
};

string_store *string_store_new(void)
{
    return calloc(1, sizeof(string_store));
}

void string_store_free(string_store *s)
{
    if (s == NULL)
        return;
    while (s->chunks) {
        chunk *next = s->chunks->next;
        free(s->chunks);
        s->chunks = next;
    }
    free(s);
}

const char *string_store_add(string_store *s, const char *p, size_t n)
{
    chunk *c = s->chunks;
    if (n >= SIZE_MAX - sizeof *c - 1)
        return NULL;
    if (c == NULL || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > CHUNK_BYTES ? n + 1 : CHUNK_BYTES;
        chunk *fresh = malloc(sizeof *fresh + cap);
        if (fresh == NULL)
            return NULL;
        fresh->used = 0;
        fresh->cap = cap;
        fresh->next = c;
        s->chunks = c = fresh;
    }
    char *out = c->bytes + c->used;
    memcpy(out, p, n);
    out[n] = '\0';
    c->used += n + 1;
    return out;
}
