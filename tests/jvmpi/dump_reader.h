/*
 * Reading the dumps of JVMPI events (HEAP_DUMP, OBJECT_DUMP): u1, u2 and u4
 * big-endian, ids as native pointers; bad counts overruns. Shared by the
 * test agents that read them.
 */
#ifndef JVMPI_TEST_DUMP_READER_H
#define JVMPI_TEST_DUMP_READER_H

#include <jvmpi.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct reader { const unsigned char *p, *end; int bad; } reader;

static inline int has(reader *r, size_t n) {
    if ((size_t)(r->end - r->p) < n) { r->bad++; r->p = r->end; return 0; }
    return 1;
}
static inline uint64_t big_endian(reader *r, int n) {
    uint64_t v = 0;
    if (!has(r, (size_t)n)) return 0;
    for (int i = 0; i < n; i++) v = (v << 8) | r->p[i];
    r->p += n;
    return v;
}
static inline unsigned u1(reader *r) { return (unsigned)big_endian(r, 1); }
static inline unsigned u2(reader *r) { return (unsigned)big_endian(r, 2); }
static inline uint32_t u4(reader *r) { return (uint32_t)big_endian(r, 4); }
static inline void *pointer(reader *r) {
    void *v = NULL;
    if (!has(r, sizeof v)) return NULL;
    memcpy(&v, r->p, sizeof v);
    r->p += sizeof v;
    return v;
}

/* Bytes of a value of a field signature's type; 0 for a reference. */
static inline int primitive_size(char sig) {
    switch (sig) {
    case 'Z': case 'B': return 1;
    case 'C': case 'S': return 2;
    case 'I': case 'F': return 4;
    case 'J': case 'D': return 8;
    default: return 0;
    }
}
static inline int ty_size(unsigned ty) {
    switch ((jint)ty) {
    case JVMPI_BOOLEAN: case JVMPI_BYTE: return 1;
    case JVMPI_CHAR: case JVMPI_SHORT: return 2;
    case JVMPI_INT: case JVMPI_FLOAT: return 4;
    case JVMPI_LONG: case JVMPI_DOUBLE: return 8;
    default: return 0;                    /* JVMPI_CLASS, JVMPI_NORMAL_OBJECT: a reference */
    }
}

#endif
