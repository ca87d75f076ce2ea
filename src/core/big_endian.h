/*
 * big_endian: the byte order of class files, HPROF binary files and JVMPI
 * heap dumps, read and written in one place. Header only; no bounds
 * checks (the callers' buffers and readers do those).
 */
#ifndef HPROF_BIG_ENDIAN_H
#define HPROF_BIG_ENDIAN_H

#include <stdint.h>

static inline uint16_t be_get_u2(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static inline uint32_t be_get_u4(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be_get_u8(const uint8_t *p) { return (uint64_t)be_get_u4(p) << 32 | be_get_u4(p + 4); }

/* Each writes at p and returns the byte after what it wrote. */
static inline uint8_t *be_put_u2(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

static inline uint8_t *be_put_u4(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return p + 4;
}

static inline uint8_t *be_put_u8(uint8_t *p, uint64_t v) { return be_put_u4(be_put_u4(p, (uint32_t)(v >> 32)), (uint32_t)v); }

#endif
