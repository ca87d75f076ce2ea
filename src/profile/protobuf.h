/*
 * protobuf: the few pieces of the protocol-buffer wire format pprof's
 * profile.proto needs, encoded by hand into a growable byte buffer: varints,
 * varint fields, length-delimited fields (bytes, strings, packed varints) and
 * nested messages. A buffer that ran out of memory stays failed and ignores
 * further writes, so callers check once at the end. Pure C.
 */
#ifndef HPROF_PROTOBUF_H
#define HPROF_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_buf {
    uint8_t *data;
    size_t   len, cap;
    int      failed;      /* out of memory once: nothing more is written */
} pb_buf;

void pb_append(pb_buf *b, const void *bytes, size_t n);   /* raw bytes */
void pb_varint(pb_buf *b, uint64_t v);
/* A varint field (wire type 0); negative int64s take ten bytes, as protobuf says. */
void pb_varint_field(pb_buf *b, uint32_t field, uint64_t v);
/* A length-delimited field (wire type 2). */
void pb_bytes_field(pb_buf *b, uint32_t field, const void *bytes, size_t n);
void pb_string_field(pb_buf *b, uint32_t field, const char *s);
/* A packed repeated varint field; nothing when n == 0. */
void pb_packed_field(pb_buf *b, uint32_t field, const uint64_t *values, size_t n);

/* A nested message: pb_message_begin writes the tag and returns a mark; the
 * message's fields follow; pb_message_end puts the length before them. */
size_t pb_message_begin(pb_buf *b, uint32_t field);
void   pb_message_end(pb_buf *b, size_t mark);

void pb_reset(pb_buf *b);   /* empty, keeping the memory */
void pb_free(pb_buf *b);

#endif
