/*
 * hprof_binary_internal.h (private to src/output/hprof_binary*.c): what the
 * writer's parts share: the big-endian encoders, the sticky error, raw
 * output and record headers (hprof_binary.c), and the copy of another
 * file's bytes (hprof_binary_files.c).
 */
#ifndef HPROF_BINARY_INTERNAL_H
#define HPROF_BINARY_INTERNAL_H

#include "../core/big_endian.h"
#include "hprof_binary.h"

#define RECORD_HEADER_SIZE 9u     /* u1 tag, u4 time, u4 body length */

/* ---- big-endian encoding; each returns the byte after what it wrote ---- */

static inline unsigned char *put_u1(unsigned char *p, uint8_t v)
{
    *p = v;
    return p + 1;
}

static inline unsigned char *put_id(unsigned char *p, uint64_t id)
{
    return be_put_u8(p, id);
}

/* The low `size` bytes of bits, most significant first: a value of any type. */
static inline unsigned char *put_sized(unsigned char *p, uint64_t bits, size_t size)
{
    for (size_t i = size; i > 0; i--)
        *p++ = (unsigned char)(bits >> (8 * (i - 1)));
    return p;
}

/* Every part fails, checks and writes through these (hprof_binary.c): the
 * first error kept (-1 returned), the guard before writing, bytes to the
 * file, a record's header, the heap dump segment gathered so far. */
int hb_fail(hb_writer *w, int err);
int hb_usable(hb_writer *w);
int hb_write_out(hb_writer *w, const void *p, size_t n);
int hb_record_header(hb_writer *w, uint8_t tag, uint32_t len);
int hb_flush_segment(hb_writer *w);

/* n bytes at offset at of fd to the file (hprof_binary_files.c), with
 * pread, in the kernel where it can; shared because the heap dump's
 * staging file is appended the same way. */
int hb_copy_body(hb_writer *w, int fd, uint64_t at, uint64_t n);

#endif
