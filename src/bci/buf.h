/*
 * Bounds-checked big-endian reading and growable writing, for class files.
 * A reader that runs past its end sets `bad` and returns zeros from then on,
 * so parsers check once per structure instead of once per byte.
 */
#ifndef HPROF_BCI_BUF_H
#define HPROF_BCI_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/big_endian.h"

typedef struct reader {
    const uint8_t *p, *end;
    int            bad;
} reader;

static inline int rd_need(reader *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) { r->bad = 1; return 0; }
    return 1;
}
static inline uint8_t rd_u1(reader *r) { return rd_need(r, 1) ? *r->p++ : 0; }
static inline uint16_t rd_u2(reader *r) {
    if (!rd_need(r, 2)) return 0;
    uint16_t v = be_get_u2(r->p); r->p += 2; return v;
}
static inline uint32_t rd_u4(reader *r) {
    if (!rd_need(r, 4)) return 0;
    uint32_t v = be_get_u4(r->p); r->p += 4; return v;
}
static inline const uint8_t *rd_skip(reader *r, size_t n) {
    if (!rd_need(r, n)) return NULL;
    const uint8_t *at = r->p; r->p += n; return at;
}

/* Growable output buffer; `failed` sticks after an allocation failure. */
typedef struct writer {
    uint8_t *data;
    size_t   len, cap;
    int      failed;
} writer;

static inline int wr_reserve(writer *w, size_t n) {
    if (w->failed) return 0;
    if (w->len + n <= w->cap) return 1;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    uint8_t *d = realloc(w->data, cap);
    if (!d) { w->failed = 1; return 0; }
    w->data = d; w->cap = cap; return 1;
}
static inline void wr_u1(writer *w, unsigned v) { if (wr_reserve(w, 1)) w->data[w->len++] = (uint8_t)v; }
static inline void wr_u2(writer *w, unsigned v) {
    if (wr_reserve(w, 2)) { be_put_u2(w->data + w->len, (uint16_t)v); w->len += 2; }
}
static inline void wr_u4(writer *w, uint32_t v) {
    if (wr_reserve(w, 4)) { be_put_u4(w->data + w->len, v); w->len += 4; }
}
static inline void wr_bytes(writer *w, const void *p, size_t n) {
    if (n && wr_reserve(w, n)) { memcpy(w->data + w->len, p, n); w->len += n; }
}

#endif
