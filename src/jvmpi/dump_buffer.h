/*
 * dump_buffer: the bytes of a dump the layer posts (HEAP_DUMP, OBJECT_DUMP,
 * MONITOR_DUMP), in the specification's formats: u1 record types, u2/u4 and
 * primitive values big-endian, ids and JNIEnvs as native pointers. Growing
 * never fails silently: `failed` says memory ran out, and the dump is then
 * not posted. Usable in heap walk callbacks (malloc only, no JNI or JVMTI).
 */
#ifndef HPROF_JVMPI_DUMP_BUFFER_H
#define HPROF_JVMPI_DUMP_BUFFER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct dump_buffer {
    char   *bytes;
    size_t  used, cap;
    int     failed;            /* out of memory: the dump is not posted */
} dump_buffer;

static inline int append(dump_buffer *b, const void *data, size_t len) {
    if (b->failed) return -1;
    if (b->used + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (cap < b->used + len) cap *= 2;
        char *bigger = realloc(b->bytes, cap);
        if (bigger == NULL) { b->failed = 1; return -1; }
        b->bytes = bigger;
        b->cap = cap;
    }
    memcpy(b->bytes + b->used, data, len);
    b->used += len;
    return 0;
}

/* The low `size` bytes of bits, big-endian (u1, u2, u4, u8 and the primitives). */
static inline int put_big_endian(dump_buffer *b, uint64_t bits, int size) {
    unsigned char bytes[8];
    for (int i = 0; i < size; i++) bytes[i] = (unsigned char)(bits >> (8 * (size - 1 - i)));
    return append(b, bytes, (size_t)size);
}
static inline int put_u1(dump_buffer *b, unsigned v) { return put_big_endian(b, v, 1); }
static inline int put_u2(dump_buffer *b, uint32_t v) { return put_big_endian(b, v, 2); }
static inline int put_u4(dump_buffer *b, uint32_t v) { return put_big_endian(b, v, 4); }
/* n primitive array elements of width bytes each, in the JVM's (native)
 * order, as the dumps want them: each big-endian. */
static inline void put_elements(dump_buffer *b, const void *elements, size_t n, int width) {
    for (size_t i = 0; i < n && !b->failed; i++) {
        const unsigned char *e = (const unsigned char *)elements + i * (size_t)width;
        uint64_t v = 0;
        if (width == 1) v = e[0];
        else if (width == 2) { uint16_t u; memcpy(&u, e, 2); v = u; }
        else if (width == 4) { uint32_t u; memcpy(&u, e, 4); v = u; }
        else memcpy(&v, e, 8);
        put_big_endian(b, v, width);
    }
}
/* An id, a JNIEnv * or a raw monitor: a native pointer, in native order. */
static inline int put_pointer(dump_buffer *b, const void *p) { return append(b, &p, sizeof p); }

#endif
