/*
 * hsperfdata reader (see perfdata.h). The layout is HotSpot's
 * PerfDataPrologue followed by PerfDataEntry records (perfMemory.hpp):
 *
 *   prologue, 32 bytes:
 *     0  magic 0xcafec0c0, always big-endian
 *     4  byte order of everything else: 0 big-endian, 1 little-endian
 *     5  major version (2 since JDK 5), 6 minor version
 *     7  accessible: non-zero once the JVM has initialised the memory
 *     8  used: bytes of the buffer in use
 *    12  overflow, 16 modification time stamp (8 bytes)
 *    24  entry_offset: where the first entry starts
 *    28  num_entries
 *
 *   entry, a 20-byte header then its name and data:
 *     0  entry_length (the next entry starts that far on)
 *     4  name_offset (from the entry's start; the name is NUL-terminated)
 *     8  vector_length: 0 for a scalar, else the number of elements
 *    12  data_type: a JVM type letter ('B' byte, 'J' long, ...)
 *    13  flags, 14 data_units, 15 data_variability
 *    16  data_offset (from the entry's start)
 *
 * A string counter is a vector of bytes ('B') holding a NUL-terminated text.
 * All numbers are signed 32-bit: negative ones are damage, like offsets past
 * the end of the entry or of the buffer.
 */
#include "cli/perfdata.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
    PROLOGUE_SIZE      = 32,
    ENTRY_HEADER_SIZE  = 20,
    SUPPORTED_MAJOR    = 2,
};

static const unsigned char PERFDATA_MAGIC[4] = { 0xca, 0xfe, 0xc0, 0xc0 };

/* A signed 32-bit number at p in the buffer's byte order. */
static int32_t read_i32(const unsigned char *p, int big_endian)
{
    uint32_t v = big_endian
        ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]
        : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0];
    return (int32_t)v;
}

static perfdata_status malformed(char *why, size_t why_size, const char *reason, long detail)
{
    if (why != NULL && why_size > 0)
        snprintf(why, why_size, "%s (%ld)", reason, detail);
    return PERFDATA_MALFORMED;
}

perfdata_status perfdata_find_string(const unsigned char *buf, size_t size, const char *name,
                                     char *value, size_t value_size, char *why, size_t why_size)
{
    if (value_size > 0)
        value[0] = '\0';
    if (buf == NULL || size < PROLOGUE_SIZE)
        return malformed(why, why_size, "shorter than the 32-byte prologue", (long)size);
    if (memcmp(buf, PERFDATA_MAGIC, sizeof PERFDATA_MAGIC) != 0)
        return malformed(why, why_size, "bad magic number, not hsperfdata", (long)buf[0]);
    if (buf[4] > 1)
        return malformed(why, why_size, "bad byte order", (long)buf[4]);
    int big = buf[4] == 0;
    if (buf[5] != SUPPORTED_MAJOR)
        return malformed(why, why_size, "unsupported major version", (long)buf[5]);
    if (buf[7] == 0)
        return PERFDATA_NOT_READY;

    /* Only the bytes in use hold entries; a buffer cut short of them is
     * damaged (the file is always as large as the JVM's whole area). */
    int32_t used = read_i32(buf + 8, big);
    if (used < PROLOGUE_SIZE || (size_t)used > size)
        return malformed(why, why_size, "'used' outside the buffer", (long)used);
    int32_t entry_offset = read_i32(buf + 24, big);
    int32_t num_entries = read_i32(buf + 28, big);
    if (entry_offset < PROLOGUE_SIZE || entry_offset > used)
        return malformed(why, why_size, "first entry outside the used area", (long)entry_offset);
    if (num_entries < 0)
        return malformed(why, why_size, "negative entry count", (long)num_entries);

    size_t name_len = strlen(name);
    size_t off = (size_t)entry_offset;
    for (int32_t i = 0; i < num_entries; i++) {
        size_t room = (size_t)used - off;  /* off <= used holds on every pass */
        if (room < ENTRY_HEADER_SIZE)
            return malformed(why, why_size, "entry header past the used area, entry", (long)i);
        const unsigned char *entry = buf + off;
        int32_t entry_length = read_i32(entry, big);
        int32_t name_offset = read_i32(entry + 4, big);
        int32_t vector_length = read_i32(entry + 8, big);
        unsigned char data_type = entry[12];
        int32_t data_offset = read_i32(entry + 16, big);
        if (entry_length < ENTRY_HEADER_SIZE || (size_t)entry_length > room)
            return malformed(why, why_size, "bad entry length, entry", (long)i);
        if (name_offset < ENTRY_HEADER_SIZE || name_offset >= entry_length)
            return malformed(why, why_size, "name outside its entry, entry", (long)i);
        const char *entry_name = (const char *)entry + name_offset;
        size_t name_room = (size_t)(entry_length - name_offset);
        if (memchr(entry_name, '\0', name_room) == NULL)
            return malformed(why, why_size, "name not terminated within its entry, entry", (long)i);

        if (strlen(entry_name) == name_len && memcmp(entry_name, name, name_len) == 0) {
            if (data_type != 'B' || vector_length <= 0)
                return malformed(why, why_size, "the counter is not a string, type", (long)data_type);
            if (data_offset < ENTRY_HEADER_SIZE || data_offset > entry_length
                || vector_length > entry_length - data_offset)
                return malformed(why, why_size, "string data outside its entry, entry", (long)i);
            const char *text = (const char *)entry + data_offset;
            size_t text_len = strnlen(text, (size_t)vector_length);
            if (value_size > 0) {
                size_t n = text_len < value_size - 1 ? text_len : value_size - 1;
                memcpy(value, text, n);
                value[n] = '\0';
            }
            return PERFDATA_FOUND;
        }
        off += (size_t)entry_length;
    }
    return PERFDATA_NOT_FOUND;
}
