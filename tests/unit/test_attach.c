/* Unit tests: build/hprof's pure parts (src/cli): the hsperfdata reader on
 * synthetic, truncated and damaged buffers. */
#include "unit.h"

#include "cli/perfdata.h"

#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------------------------------ hsperfdata */

/* Writes synthetic hsperfdata the way HotSpot lays it out (see perfdata.c). */
typedef struct {
    unsigned char buf[4096];
    size_t len;       /* bytes written so far (the "used" value) */
    int big_endian;
    int num_entries;
} perf_builder;

static void put_i32(perf_builder *b, size_t at, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) {
        int shift = b->big_endian ? 24 - 8 * i : 8 * i;
        b->buf[at + (size_t)i] = (unsigned char)(u >> shift);
    }
}

static void perf_begin(perf_builder *b, int big_endian)
{
    memset(b, 0, sizeof *b);
    b->big_endian = big_endian;
    b->buf[0] = 0xca, b->buf[1] = 0xfe, b->buf[2] = 0xc0, b->buf[3] = 0xc0;
    b->buf[4] = big_endian ? 0 : 1;
    b->buf[5] = 2;  /* major */
    b->buf[6] = 0;  /* minor */
    b->buf[7] = 1;  /* accessible */
    b->len = 32;
    put_i32(b, 24, 32);  /* entry_offset */
}

/* Appends an entry: name, then vector_length bytes of data (a scalar 'J'
 * when type is 'J'), padded to 8 bytes as HotSpot does. */
static void perf_add(perf_builder *b, const char *name, char type, const char *text, int vector_length)
{
    size_t start = b->len;
    size_t name_off = 20, name_len = strlen(name) + 1;
    size_t data_off = (name_off + name_len + 7) & ~(size_t)7;
    size_t data_len = type == 'J' ? 8 : (size_t)vector_length;
    size_t entry_len = (data_off + data_len + 7) & ~(size_t)7;
    put_i32(b, start, (int32_t)entry_len);
    put_i32(b, start + 4, (int32_t)name_off);
    put_i32(b, start + 8, type == 'J' ? 0 : vector_length);
    b->buf[start + 12] = (unsigned char)type;
    b->buf[start + 14] = type == 'J' ? 4 : 5;  /* units: ticks / string */
    put_i32(b, start + 16, (int32_t)data_off);
    memcpy(b->buf + start + name_off, name, name_len);
    if (text != NULL)
        memcpy(b->buf + start + data_off, text, strlen(text) < data_len ? strlen(text) : data_len);
    b->len += entry_len;
    b->num_entries++;
}

static void perf_end(perf_builder *b)
{
    put_i32(b, 8, (int32_t)b->len);  /* used */
    put_i32(b, 28, b->num_entries);
}

#define CAPS "sun.rt.jvmCapabilities"

static void build_jvm_like(perf_builder *b, int big_endian, const char *caps)
{
    perf_begin(b, big_endian);
    perf_add(b, "sun.rt.createVmBeginTime", 'J', NULL, 0);
    perf_add(b, "java.property.java.vm.name", 'B', "OpenJDK 64-Bit Server VM", 64);
    perf_add(b, CAPS, 'B', caps, 65);
    perf_add(b, "sun.rt.jvmVersion", 'J', NULL, 0);
    perf_end(b);
}

static perfdata_status find_caps(const perf_builder *b, size_t size, char *value, size_t value_size)
{
    char why[200];
    return perfdata_find_string(b->buf, size, CAPS, value, value_size, why, sizeof why);
}

TEST(perfdata_finds_capabilities_in_both_byte_orders)
{
    static perf_builder b;
    char value[80];
    for (int big = 0; big <= 1; big++) {
        build_jvm_like(&b, big, "1100000000000000000000000000000000000000000000000000000000000000");
        CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_FOUND);
        CHECK_STR(value, "1100000000000000000000000000000000000000000000000000000000000000");
        build_jvm_like(&b, big, "0100");
        CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_FOUND);
        CHECK_STR(value, "0100");
        /* The file is larger than its used part: the rest is ignored. */
        CHECK(find_caps(&b, sizeof b.buf, value, sizeof value) == PERFDATA_FOUND);
    }
    /* A small output buffer gets a truncated, terminated copy. */
    build_jvm_like(&b, 0, "1100");
    CHECK(find_caps(&b, b.len, value, 2) == PERFDATA_FOUND);
    CHECK_STR(value, "1");
    /* A name that is a prefix of another is not that other. */
    char why[100];
    CHECK(perfdata_find_string(b.buf, b.len, "sun.rt.jvm", value, sizeof value, why, sizeof why)
          == PERFDATA_NOT_FOUND);
}

TEST(perfdata_not_found_and_not_ready)
{
    static perf_builder b;
    char value[80] = "x";
    perf_begin(&b, 0);
    perf_add(&b, "sun.rt.createVmBeginTime", 'J', NULL, 0);
    perf_end(&b);
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_FOUND);
    CHECK_STR(value, "");
    perf_begin(&b, 0);  /* no entries at all */
    perf_end(&b);
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_FOUND);
    build_jvm_like(&b, 0, "1");
    b.buf[7] = 0;  /* not accessible yet: the JVM is still setting it up */
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_READY);
}

/* Damages a copy of a good buffer in one way and expects MALFORMED with a reason. */
static void expect_malformed(const perf_builder *good, size_t at, int32_t v, int is_byte, const char *what)
{
    static perf_builder b;
    b = *good;
    if (is_byte)
        b.buf[at] = (unsigned char)v;
    else
        put_i32(&b, at, v);
    char value[80], why[200] = "";
    perfdata_status st = perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why);
    if (st != PERFDATA_MALFORMED || why[0] == '\0') {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: status %d, why '%s'", what, (int)st, why);
        unit_fail(__FILE__, __LINE__, msg);
    }
}

TEST(perfdata_malformed_buffers)
{
    static perf_builder good;
    build_jvm_like(&good, 0, "1100");
    /* Offsets of the entries: 32, then each entry's own length on. */
    size_t first = 32;
    size_t second = first + (size_t)(good.buf[first] | good.buf[first + 1] << 8);
    size_t caps = second + (size_t)(good.buf[second] | good.buf[second + 1] << 8);
    char value[8], why[100];

    CHECK(perfdata_find_string(NULL, 0, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    CHECK(perfdata_find_string(good.buf, 31, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    expect_malformed(&good, 0, 0xcb, 1, "bad magic");
    expect_malformed(&good, 4, 2, 1, "bad byte order");
    expect_malformed(&good, 5, 1, 1, "version 1");
    expect_malformed(&good, 8, (int32_t)good.len + 1, 0, "used past the buffer");
    expect_malformed(&good, 8, 31, 0, "used inside the prologue");
    expect_malformed(&good, 8, -1, 0, "negative used");
    expect_malformed(&good, 24, 16, 0, "entries inside the prologue");
    expect_malformed(&good, 24, (int32_t)good.len + 8, 0, "entries past used");
    expect_malformed(&good, 28, -3, 0, "negative entry count");
    expect_malformed(&good, first, 19, 0, "entry shorter than its header");
    expect_malformed(&good, first, 0, 0, "zero-length entry (would loop)");
    expect_malformed(&good, first, -8, 0, "negative entry length");
    expect_malformed(&good, first, 1 << 30, 0, "entry past used");
    expect_malformed(&good, first + 4, 4, 0, "name inside the header");
    expect_malformed(&good, first + 4, 4000, 0, "name past the entry");
    expect_malformed(&good, caps + 12, 'J', 1, "capabilities not a string");
    expect_malformed(&good, caps + 8, 0, 0, "capabilities a scalar");
    expect_malformed(&good, caps + 8, 5000, 0, "string longer than its entry");
    expect_malformed(&good, caps + 16, 2, 0, "string data inside the header");
    expect_malformed(&good, caps + 16, 1 << 20, 0, "string data past the entry");
    /* More entries counted than written: found if it comes first, else the
     * walk reaches the end of the used area and says so. */
    static perf_builder b;
    b = good;
    put_i32(&b, 28, 5);
    CHECK(perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_FOUND);
    CHECK(perfdata_find_string(b.buf, b.len, "absent", value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    put_i32(&b, 28, 4);
    CHECK(perfdata_find_string(b.buf, b.len, "absent", value, sizeof value, why, sizeof why) == PERFDATA_NOT_FOUND);
    /* A name running to the end of its entry without a NUL. */
    b = good;
    size_t caps_len = (size_t)(b.buf[caps] | b.buf[caps + 1] << 8);
    memset(b.buf + caps + 20, 'x', caps_len - 20);
    CHECK(perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    (void)second;
}

TEST(perfdata_every_truncation_and_corruption_is_safe)
{
    static perf_builder good, b;
    build_jvm_like(&good, 1, "1100");
    char value[80], why[200];
    /* Cut short anywhere before the end of the used area: never found, never
     * a read past the cut (ASan would see it in build/asan/unit_tests). */
    for (size_t cut = 0; cut < good.len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, good.buf, cut);
        perfdata_status st = perfdata_find_string(copy, cut, CAPS, value, sizeof value, why, sizeof why);
        if (st != PERFDATA_MALFORMED) {
            char msg[100];
            snprintf(msg, sizeof msg, "cut at %zu: status %d", cut, (int)st);
            unit_fail(__FILE__, __LINE__, msg);
        }
        free(copy);
    }
    /* Any byte set to 0x00, 0x7f, 0x80 or 0xff: any status, no bad read. */
    static const unsigned char bytes[] = { 0x00, 0x7f, 0x80, 0xff };
    for (size_t at = 0; at < good.len; at++) {
        for (size_t k = 0; k < sizeof bytes; k++) {
            b = good;
            b.buf[at] = bytes[k];
            unsigned char *copy = malloc(b.len);
            memcpy(copy, b.buf, b.len);
            perfdata_status st = perfdata_find_string(copy, b.len, CAPS, value, sizeof value, why, sizeof why);
            CHECK(st == PERFDATA_FOUND || st == PERFDATA_NOT_FOUND || st == PERFDATA_NOT_READY
                  || st == PERFDATA_MALFORMED);
            if (st == PERFDATA_FOUND)
                CHECK(strlen(value) < sizeof value);
            free(copy);
        }
    }
}
