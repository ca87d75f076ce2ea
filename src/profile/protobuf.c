/* protobuf.c: see protobuf.h. */
#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static int reserve(pb_buf *b, size_t more)
{
    if (b->failed)
        return -1;
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < more) {
        if (cap > SIZE_MAX / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    uint8_t *bigger = realloc(b->data, cap);
    if (bigger == NULL) {
        b->failed = 1;
        return -1;
    }
    b->data = bigger;
    b->cap = cap;
    return 0;
}

void pb_append(pb_buf *b, const void *bytes, size_t n)
{
    if (n == 0 || reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

/* Encode v into out (at least 10 bytes); returns the byte count. */
static size_t encode_varint(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

void pb_varint(pb_buf *b, uint64_t v)
{
    uint8_t bytes[10];
    pb_append(b, bytes, encode_varint(v, bytes));
}

static void tag(pb_buf *b, uint32_t field, int wire_type)
{
    pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire_type);
}

void pb_varint_field(pb_buf *b, uint32_t field, uint64_t v)
{
    tag(b, field, WIRE_VARINT);
    pb_varint(b, v);
}

void pb_bytes_field(pb_buf *b, uint32_t field, const void *bytes, size_t n)
{
    tag(b, field, WIRE_LEN);
    pb_varint(b, n);
    pb_append(b, bytes, n);
}

void pb_string_field(pb_buf *b, uint32_t field, const char *s)
{
    pb_bytes_field(b, field, s, strlen(s));
}

void pb_packed_field(pb_buf *b, uint32_t field, const uint64_t *values, size_t n)
{
    if (n == 0)
        return;
    size_t mark = pb_message_begin(b, field);
    for (size_t i = 0; i < n; i++)
        pb_varint(b, values[i]);
    pb_message_end(b, mark);
}

size_t pb_message_begin(pb_buf *b, uint32_t field)
{
    tag(b, field, WIRE_LEN);
    return b->len;
}

void pb_message_end(pb_buf *b, size_t mark)
{
    if (b->failed)
        return;
    uint8_t length[10];
    size_t n = encode_varint(b->len - mark, length);
    if (reserve(b, n) != 0)
        return;
    /* The body was written first; move it up to make room for its length. */
    memmove(b->data + mark + n, b->data + mark, b->len - mark);
    memcpy(b->data + mark, length, n);
    b->len += n;
}

void pb_reset(pb_buf *b)
{
    b->len = 0;
    b->failed = 0;
}

void pb_free(pb_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
