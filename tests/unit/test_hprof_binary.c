/* Unit tests: the HPROF binary writer (src/output/hprof_binary.c).
 *
 * Output goes to open_memstream and is compared byte for byte with what is
 * built here independently (the expected bytes are spelled out, not produced
 * by the writer's own encoders), and walked the way a reader (MAT, VisualVM)
 * walks it: record by record, sub-record by sub-record inside each segment. */
#include "unit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/hprof_binary.h"

#define START_MS 0x0000018C2B3D4E5Full       /* some day in late 2023 */
#define DT_US    0x00ABCDEFu                 /* what the fake clock says, since START_MS */

static uint64_t fake_now_us = START_MS * 1000u + DT_US;
static uint64_t fake_clock(void) { return fake_now_us; }

/* ---- expected bytes ---- */

typedef struct bytes {
    unsigned char *b;
    size_t n, cap;
} bytes;

static void e_raw(bytes *e, const void *p, size_t n)
{
    if (e->n + n > e->cap) {
        e->cap = (e->n + n) * 2 + 256;
        e->b = realloc(e->b, e->cap);
    }
    memcpy(e->b + e->n, p, n);
    e->n += n;
}

static void e_be(bytes *e, uint64_t v, int size)
{
    for (int i = size - 1; i >= 0; i--) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        e_raw(e, &c, 1);
    }
}

static void e_u1(bytes *e, uint64_t v) { e_be(e, v, 1); }
static void e_u2(bytes *e, uint64_t v) { e_be(e, v, 2); }
static void e_u4(bytes *e, uint64_t v) { e_be(e, v, 4); }
static void e_u8(bytes *e, uint64_t v) { e_be(e, v, 8); }
static void e_id(bytes *e, uint64_t v) { e_be(e, v, 8); }

#define RAW(e, ...) do {                                       \
        static const unsigned char raw_[] = { __VA_ARGS__ };   \
        e_raw((e), raw_, sizeof raw_);                         \
    } while (0)

static void e_file_header(bytes *e)
{
    e_raw(e, "JAVA PROFILE 1.0.2", 19);   /* with the NUL */
    e_u4(e, 8);
    e_u8(e, START_MS);
}

static void e_record(bytes *e, uint8_t tag, uint32_t len)
{
    e_u1(e, tag);
    e_u4(e, DT_US);
    e_u4(e, len);
}

/* Equal, or say where they differ (the CHECK alone would not). */
static int same_bytes(const char *what, const void *got, size_t got_n, const bytes *want)
{
    const unsigned char *g = got;
    size_t n = got_n < want->n ? got_n : want->n;
    for (size_t i = 0; i < n; i++)
        if (g[i] != want->b[i]) {
            fprintf(stderr, "    %s: byte %zu is %02x, want %02x\n", what, i, g[i], want->b[i]);
            return 0;
        }
    if (got_n != want->n) {
        fprintf(stderr, "    %s: %zu bytes, want %zu\n", what, got_n, want->n);
        return 0;
    }
    return 1;
}

/* ---- a writer on a memory stream ---- */

typedef struct sink {
    FILE  *f;
    char  *buf;
    size_t len;
} sink;

static void start(hb_writer *w, sink *s, size_t cap)
{
    s->buf = NULL;
    s->len = 0;
    s->f = open_memstream(&s->buf, &s->len);
    CHECK(s->f != NULL);
    CHECK(hb_open(w, s->f, START_MS, cap) == 0);
    w->clock_us = fake_clock;
}

/* hb_close, then fclose so that s->buf/s->len hold everything. */
static int finish(hb_writer *w, sink *s)
{
    int rc = hb_close(w);
    fclose(s->f);
    return rc;
}

/* ---- a reader, as MAT and VisualVM walk the file ---- */

#define MAX_IDS 4096

typedef struct walk {
    int      bad;             /* set at the first thing a reader would choke on */
    unsigned segments, streamed, ends, subrecords, others;
    unsigned by_tag[256];
    size_t   max_buffered_segment;  /* longest segment holding more than one sub-record */
    uint64_t ids[MAX_IDS];    /* object id of every sub-record, in file order */
    unsigned n_ids;
} walk;

typedef struct rd {
    const unsigned char *p;
    size_t at, end;
    int bad;
} rd;

static uint64_t rd_u(rd *r, size_t size)
{
    if (r->bad || size > r->end - r->at) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < size; i++)
        v = v << 8 | r->p[r->at++];
    return v;
}

static void rd_skip(rd *r, uint64_t n)
{
    if (r->bad || n > r->end - r->at)
        r->bad = 1;
    else
        r->at += (size_t)n;
}

static size_t type_size(unsigned t)
{
    switch (t) {
    case 2: return 8;
    case 4: case 8: return 1;
    case 5: case 9: return 2;
    case 6: case 10: return 4;
    case 7: case 11: return 8;
    default: return 0;
    }
}

/* One sub-record from r; 0 if it parsed. r ends at the segment's end, so a
 * sub-record running past it fails here, as it would in a reader. */
static int walk_subrecord(rd *r, walk *k)
{
    unsigned tag = (unsigned)rd_u(r, 1);
    uint64_t id = rd_u(r, 8);
    switch (tag) {
    case 0xFF: case 0x05: case 0x07:
        break;
    case 0x01:
        rd_u(r, 8);
        break;
    case 0x04: case 0x06:
        rd_u(r, 4);
        break;
    case 0x02: case 0x03: case 0x08:
        rd_u(r, 4);
        rd_u(r, 4);
        break;
    case 0x20: {
        rd_skip(r, 4 + 6 * 8 + 4);
        unsigned n = (unsigned)rd_u(r, 2);          /* constant pool */
        for (unsigned i = 0; i < n && !r->bad; i++) {
            rd_u(r, 2);
            size_t s = type_size((unsigned)rd_u(r, 1));
            if (s == 0)
                return -1;
            rd_skip(r, s);
        }
        n = (unsigned)rd_u(r, 2);                   /* statics */
        for (unsigned i = 0; i < n && !r->bad; i++) {
            rd_u(r, 8);
            size_t s = type_size((unsigned)rd_u(r, 1));
            if (s == 0)
                return -1;
            rd_skip(r, s);
        }
        n = (unsigned)rd_u(r, 2);                   /* instance fields */
        for (unsigned i = 0; i < n && !r->bad; i++) {
            rd_u(r, 8);
            if (type_size((unsigned)rd_u(r, 1)) == 0)
                return -1;
        }
        break;
    }
    case 0x21:
        rd_u(r, 4);
        rd_u(r, 8);
        rd_skip(r, rd_u(r, 4));
        break;
    case 0x22: {
        rd_u(r, 4);
        uint64_t n = rd_u(r, 4);
        rd_u(r, 8);
        rd_skip(r, n * 8);
        break;
    }
    case 0x23: {
        rd_u(r, 4);
        uint64_t n = rd_u(r, 4);
        unsigned type = (unsigned)rd_u(r, 1);
        size_t s = type_size(type);
        if (s == 0 || type == 2)
            return -1;                              /* no object type in a PRIM ARRAY */
        rd_skip(r, n * s);
        break;
    }
    default:
        return -1;
    }
    if (r->bad)
        return -1;
    k->subrecords++;
    k->by_tag[tag]++;
    if (k->n_ids < MAX_IDS)
        k->ids[k->n_ids++] = id;
    return 0;
}

static void walk_file(const char *buf, size_t len, size_t cap, walk *k)
{
    memset(k, 0, sizeof *k);
    rd r = { (const unsigned char *)buf, 0, len, 0 };
    if (len < 31 || memcmp(buf, "JAVA PROFILE 1.0.2", 19) != 0) {
        k->bad = 1;
        return;
    }
    rd_skip(&r, 19);
    if (rd_u(&r, 4) != 8 || rd_u(&r, 8) != START_MS) {
        k->bad = 1;
        return;
    }
    while (r.at < len && !k->bad) {
        unsigned tag = (unsigned)rd_u(&r, 1);
        rd_u(&r, 4);
        uint64_t body = rd_u(&r, 4);
        if (r.bad || body > len - r.at) {
            k->bad = 1;
            break;
        }
        if (tag == 0x1C) {
            rd seg = { r.p, r.at, r.at + (size_t)body, 0 };
            unsigned before = k->subrecords;
            while (seg.at < seg.end)
                if (walk_subrecord(&seg, k) != 0) {
                    k->bad = 1;
                    break;
                }
            unsigned in_seg = k->subrecords - before;
            if (in_seg == 0)
                k->bad = 1;         /* the writer never makes an empty segment */
            if (body > cap) {
                k->streamed++;
                if (in_seg != 1)
                    k->bad = 1;     /* only a lone oversized sub-record may exceed cap */
            } else if (body > k->max_buffered_segment) {
                k->max_buffered_segment = (size_t)body;
            }
            k->segments++;
        } else if (tag == 0x2C) {
            if (body != 0)
                k->bad = 1;
            k->ends++;
        } else {
            k->others++;
        }
        rd_skip(&r, body);
    }
}

/* ---- tests ---- */

TEST(hb_type_sizes)
{
    CHECK(hb_type_size(HB_OBJECT) == 8);
    CHECK(hb_type_size(HB_BOOLEAN) == 1 && hb_type_size(HB_BYTE) == 1);
    CHECK(hb_type_size(HB_CHAR) == 2 && hb_type_size(HB_SHORT) == 2);
    CHECK(hb_type_size(HB_FLOAT) == 4 && hb_type_size(HB_INT) == 4);
    CHECK(hb_type_size(HB_DOUBLE) == 8 && hb_type_size(HB_LONG) == 8);
    CHECK(hb_type_size(0) == 0 && hb_type_size(1) == 0 && hb_type_size(3) == 0);
    CHECK(hb_type_size(12) == 0 && hb_type_size(-1) == 0 && hb_type_size(0x21) == 0);
}

TEST(hb_file_header)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(w.bytes == 31 && w.error == 0 && w.seg_cap == HB_DEFAULT_SEGMENT);
    CHECK(finish(&w, &s) == 0);
    static const unsigned char want[] = {
        'J', 'A', 'V', 'A', ' ', 'P', 'R', 'O', 'F', 'I', 'L', 'E', ' ', '1', '.', '0', '.', '2', 0,
        0x00, 0x00, 0x00, 0x08,                              /* identifier size */
        0x00, 0x00, 0x01, 0x8C, 0x2B, 0x3D, 0x4E, 0x5F,      /* ms since the epoch */
    };
    CHECK(s.len == sizeof want && memcmp(s.buf, want, sizeof want) == 0);
    free(s.buf);
}

TEST(hb_utf8_record)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_utf8(&w, 0x1122334455667788ull, "h\xc3\xa9llo") == 0);   /* "héllo": 6 bytes */
    CHECK(hb_utf8(&w, 2, "") == 0);
    CHECK(w.bytes == 31 + 9 + 14 + 9 + 8);
    CHECK(finish(&w, &s) == 0);
    static const unsigned char want[] = {
        0x01, 0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x0E,    /* tag, time, length 8 + 6 */
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
        'h', 0xC3, 0xA9, 'l', 'l', 'o',                          /* no NUL */
        0x01, 0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x08,
        0, 0, 0, 0, 0, 0, 0, 2,
    };
    CHECK(s.len == 31 + sizeof want && memcmp(s.buf + 31, want, sizeof want) == 0);
    free(s.buf);
}

TEST(hb_load_class_and_stack_trace)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_load_class(&w, 100001, 0x7f0000001000ull, 300000, 42) == 0);
    uint64_t frames[] = { 7, 0x0102030405060708ull };
    CHECK(hb_stack_trace(&w, 300001, 200001, frames, 2) == 0);
    CHECK(hb_stack_trace(&w, 300000, 0, NULL, 0) == 0);
    CHECK(finish(&w, &s) == 0);
    static const unsigned char want[] = {
        0x02, 0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x18,    /* LOAD CLASS, 24 bytes */
        0x00, 0x01, 0x86, 0xA1,                                  /* class serial 100001 */
        0x00, 0x00, 0x7F, 0x00, 0x00, 0x00, 0x10, 0x00,          /* class object id */
        0x00, 0x04, 0x93, 0xE0,                                  /* trace serial 300000 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A,          /* name id */
        0x05, 0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x1C,    /* TRACE, 12 + 2 * 8 */
        0x00, 0x04, 0x93, 0xE1,                                  /* trace serial 300001 */
        0x00, 0x03, 0x0D, 0x41,                                  /* thread serial 200001 */
        0x00, 0x00, 0x00, 0x02,                                  /* frames */
        0, 0, 0, 0, 0, 0, 0, 7,
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        0x05, 0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x00, 0x0C,    /* the empty trace */
        0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 0, 0, 0, 0, 0,
    };
    CHECK(s.len == 31 + sizeof want && memcmp(s.buf + 31, want, sizeof want) == 0);
    free(s.buf);
}

TEST(hb_other_top_level_records)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_stack_frame(&w, 9, 10, 11, 12, 100002, 57) == 0);
    CHECK(hb_stack_frame(&w, 13, 10, 11, 0, 100002, -3) == 0);
    CHECK(hb_start_thread(&w, 200001, 0xAA, 300001, 20, 21, 22) == 0);
    CHECK(hb_end_thread(&w, 200001) == 0);
    hb_site sites[] = { { 0, 100001, 300001, 1000, 10, 2000, 20 },
                        { HB_INT, 100002, 300002, 0xFFFFFFFFu, 1, 2, 3 } };
    CHECK(hb_alloc_sites(&w, 0x0002, 0.5f, 5000, 50, 0x100000000ull, 7, sites, 2) == 0);
    CHECK(hb_heap_summary(&w, 1, 2, 0x0102030405060708ull, 4) == 0);
    hb_sample samples[] = { { 30, 300001 }, { 12, 300002 } };
    CHECK(hb_cpu_samples(&w, 42, samples, 2) == 0);
    CHECK(hb_control_settings(&w, 3, 4) == 0);
    CHECK(finish(&w, &s) == 0);

    bytes e = { 0 };
    e_file_header(&e);
    e_record(&e, 0x04, 40);
    e_id(&e, 9); e_id(&e, 10); e_id(&e, 11); e_id(&e, 12); e_u4(&e, 100002); e_u4(&e, 57);
    e_record(&e, 0x04, 40);
    e_id(&e, 13); e_id(&e, 10); e_id(&e, 11); e_id(&e, 0); e_u4(&e, 100002);
    RAW(&e, 0xFF, 0xFF, 0xFF, 0xFD);                      /* -3: native method */
    e_record(&e, 0x0A, 40);
    e_u4(&e, 200001); e_id(&e, 0xAA); e_u4(&e, 300001); e_id(&e, 20); e_id(&e, 21); e_id(&e, 22);
    e_record(&e, 0x0B, 4);
    e_u4(&e, 200001);
    e_record(&e, 0x06, 34 + 2 * 25);
    e_u2(&e, 2);
    RAW(&e, 0x3F, 0x00, 0x00, 0x00);                      /* 0.5f */
    e_u4(&e, 5000); e_u4(&e, 50); e_u8(&e, 0x100000000ull); e_u8(&e, 7); e_u4(&e, 2);
    e_u1(&e, 0); e_u4(&e, 100001); e_u4(&e, 300001);
    e_u4(&e, 1000); e_u4(&e, 10); e_u4(&e, 2000); e_u4(&e, 20);
    e_u1(&e, 10); e_u4(&e, 100002); e_u4(&e, 300002);
    e_u4(&e, 0xFFFFFFFFu); e_u4(&e, 1); e_u4(&e, 2); e_u4(&e, 3);
    e_record(&e, 0x07, 24);
    e_u4(&e, 1); e_u4(&e, 2); RAW(&e, 1, 2, 3, 4, 5, 6, 7, 8); e_u8(&e, 4);
    e_record(&e, 0x0D, 8 + 2 * 8);
    e_u4(&e, 42); e_u4(&e, 2); e_u4(&e, 30); e_u4(&e, 300001); e_u4(&e, 12); e_u4(&e, 300002);
    e_record(&e, 0x0E, 6);
    e_u4(&e, 3); e_u2(&e, 4);
    CHECK(same_bytes("top-level", s.buf, s.len, &e));
    free(e.b);
    free(s.buf);
}

TEST(hb_record_time_is_relative_and_wraps)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    fake_now_us = START_MS * 1000u - 5;                   /* clock set back: 0, not 2^32 - 5 */
    CHECK(hb_end_thread(&w, 1) == 0);
    fake_now_us = START_MS * 1000u + 0x100000007ull;      /* 71 minutes on: wraps to 7 */
    CHECK(hb_end_thread(&w, 2) == 0);
    fake_now_us = START_MS * 1000u + DT_US;
    CHECK(finish(&w, &s) == 0);
    static const unsigned char want[] = {
        0x0B, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1,
        0x0B, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 2,
    };
    CHECK(s.len == 31 + sizeof want && memcmp(s.buf + 31, want, sizeof want) == 0);

    /* The real clock: a record made now is a few microseconds after a header made now. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    free(s.buf);
    s.buf = NULL;
    s.f = open_memstream(&s.buf, &s.len);
    CHECK(hb_open(&w, s.f, now_ms, 0) == 0);
    CHECK(hb_end_thread(&w, 1) == 0);
    CHECK(finish(&w, &s) == 0);
    CHECK(s.len == 31 + 13);
    if (s.len == 31 + 13) {
        const unsigned char *t = (const unsigned char *)s.buf + 32;
        uint32_t dt = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
        CHECK(dt < 10u * 1000u * 1000u);
    }
    free(s.buf);
}

/* Every kind of sub-record in one heap dump, checked byte for byte. */
TEST(hb_heap_dump_every_subrecord)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_heap_begin(&w) == 0);
    CHECK(hb_root_unknown(&w, 0x11) == 0);
    CHECK(hb_root_jni_global(&w, 0x12, 0x9012) == 0);
    CHECK(hb_root_jni_local(&w, 0x13, 200001, 2) == 0);
    CHECK(hb_root_java_frame(&w, 0x14, 200002, -1) == 0);
    CHECK(hb_root_native_stack(&w, 0x15, 200003) == 0);
    CHECK(hb_root_sticky_class(&w, 0x16) == 0);
    CHECK(hb_root_thread_block(&w, 0x17, 200004) == 0);
    CHECK(hb_root_monitor_used(&w, 0x18) == 0);
    CHECK(hb_root_thread_object(&w, 0x19, 200005, 300001) == 0);

    double dv = 1.0;
    float fv = 1.5f;
    uint64_t dbits;
    uint32_t fbits;
    memcpy(&dbits, &dv, 8);
    memcpy(&fbits, &fv, 4);
    hb_static statics[] = {
        { 0x101, { HB_OBJECT, 0x0A0B0C0D0E0F1011ull } },
        { 0x102, { HB_BOOLEAN, 1 } },
        { 0x103, { HB_CHAR, 0x263A } },
        { 0x104, { HB_FLOAT, fbits } },
        { 0x105, { HB_DOUBLE, dbits } },
        { 0x106, { HB_BYTE, 0x80 } },
        { 0x107, { HB_SHORT, 0xFFFE } },
        { 0x108, { HB_INT, 0x01020304 } },
        { 0x109, { HB_LONG, 0x8000000000000001ull } },
    };
    hb_field fields[] = { { 0x201, HB_INT }, { 0x202, HB_OBJECT }, { 0x203, HB_CHAR } };
    hb_class c = { 0xC1, 300001, 0xC0, 0xD1, 0, 0xD2, 4 + 8 + 2 + 8,
                   statics, 9, fields, 3 };
    CHECK(hb_class_dump(&w, &c) == 0);

    CHECK(hb_instance_begin(&w, 0x31, 300002, 0xC1, 22) == 0);
    CHECK(hb_put_value(&w, HB_INT, (uint32_t)-2) == 0);
    CHECK(hb_put_value(&w, HB_OBJECT, 0x32) == 0);
    CHECK(hb_put_value(&w, HB_CHAR, 'x') == 0);
    CHECK(hb_put_value(&w, HB_OBJECT, 0) == 0);            /* the superclass's field */
    CHECK(hb_instance_begin(&w, 0x33, 300002, 0xC0, 0) == 0);  /* no fields at all */

    CHECK(hb_obj_array_begin(&w, 0x41, 300003, 3, 0xC2) == 0);
    CHECK(hb_put_value(&w, HB_OBJECT, 0x31) == 0);
    CHECK(hb_put_value(&w, HB_OBJECT, 0) == 0);
    CHECK(hb_put_value(&w, HB_OBJECT, 0x33) == 0);
    CHECK(hb_obj_array_begin(&w, 0x42, 300003, 0, 0xC2) == 0);

    uint8_t  zs[] = { 1, 0 };
    uint16_t cs[] = { 'A', 0x263A };
    float    fs[] = { 1.5f, -2.0f };
    double   ds[] = { 1.0, -0.0 };
    int8_t   bs[] = { -128, 127, 0 };
    int16_t  ss[] = { -2, 0x1234 };
    int32_t  is[] = { 0x01020304, -1 };
    int64_t  ls[] = { 0x0102030405060708ll, -2 };
    CHECK(hb_prim_array(&w, 0x51, 300004, HB_BOOLEAN, 2, zs) == 0);
    CHECK(hb_prim_array(&w, 0x52, 300004, HB_CHAR, 2, cs) == 0);
    CHECK(hb_prim_array(&w, 0x53, 300004, HB_FLOAT, 2, fs) == 0);
    CHECK(hb_prim_array(&w, 0x54, 300004, HB_DOUBLE, 2, ds) == 0);
    CHECK(hb_prim_array(&w, 0x55, 300004, HB_BYTE, 3, bs) == 0);
    CHECK(hb_prim_array(&w, 0x56, 300004, HB_SHORT, 2, ss) == 0);
    CHECK(hb_prim_array(&w, 0x57, 300004, HB_INT, 2, is) == 0);
    CHECK(hb_prim_array(&w, 0x58, 300004, HB_LONG, 2, ls) == 0);
    CHECK(hb_prim_array(&w, 0x59, 300004, HB_INT, 0, NULL) == 0);
    CHECK(w.heap_dumps == 0);
    CHECK(hb_heap_end(&w) == 0);
    CHECK(w.heap_dumps == 1);      /* a later JVM dump must follow it, not become the file's start */
    CHECK(finish(&w, &s) == 0);

    bytes sub = { 0 };
    /* roots */
    e_u1(&sub, 0xFF); e_id(&sub, 0x11);
    e_u1(&sub, 0x01); e_id(&sub, 0x12); e_id(&sub, 0x9012);
    e_u1(&sub, 0x02); e_id(&sub, 0x13); e_u4(&sub, 200001); e_u4(&sub, 2);
    e_u1(&sub, 0x03); e_id(&sub, 0x14); e_u4(&sub, 200002); RAW(&sub, 0xFF, 0xFF, 0xFF, 0xFF);
    e_u1(&sub, 0x04); e_id(&sub, 0x15); e_u4(&sub, 200003);
    e_u1(&sub, 0x05); e_id(&sub, 0x16);
    e_u1(&sub, 0x06); e_id(&sub, 0x17); e_u4(&sub, 200004);
    e_u1(&sub, 0x07); e_id(&sub, 0x18);
    e_u1(&sub, 0x08); e_id(&sub, 0x19); e_u4(&sub, 200005); e_u4(&sub, 300001);
    /* CLASS DUMP */
    e_u1(&sub, 0x20); e_id(&sub, 0xC1); e_u4(&sub, 300001);
    e_id(&sub, 0xC0); e_id(&sub, 0xD1); e_id(&sub, 0); e_id(&sub, 0xD2);
    e_id(&sub, 0); e_id(&sub, 0);                           /* reserved */
    e_u4(&sub, 22);                                         /* instance size */
    e_u2(&sub, 0);                                          /* constant pool */
    e_u2(&sub, 9);
    e_id(&sub, 0x101); e_u1(&sub, 2);  RAW(&sub, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11);
    e_id(&sub, 0x102); e_u1(&sub, 4);  RAW(&sub, 0x01);
    e_id(&sub, 0x103); e_u1(&sub, 5);  RAW(&sub, 0x26, 0x3A);
    e_id(&sub, 0x104); e_u1(&sub, 6);  RAW(&sub, 0x3F, 0xC0, 0x00, 0x00);
    e_id(&sub, 0x105); e_u1(&sub, 7);  RAW(&sub, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0);
    e_id(&sub, 0x106); e_u1(&sub, 8);  RAW(&sub, 0x80);
    e_id(&sub, 0x107); e_u1(&sub, 9);  RAW(&sub, 0xFF, 0xFE);
    e_id(&sub, 0x108); e_u1(&sub, 10); RAW(&sub, 0x01, 0x02, 0x03, 0x04);
    e_id(&sub, 0x109); e_u1(&sub, 11); RAW(&sub, 0x80, 0, 0, 0, 0, 0, 0, 0x01);
    e_u2(&sub, 3);
    e_id(&sub, 0x201); e_u1(&sub, 10);
    e_id(&sub, 0x202); e_u1(&sub, 2);
    e_id(&sub, 0x203); e_u1(&sub, 5);
    /* INSTANCE DUMPs */
    e_u1(&sub, 0x21); e_id(&sub, 0x31); e_u4(&sub, 300002); e_id(&sub, 0xC1); e_u4(&sub, 22);
    RAW(&sub, 0xFF, 0xFF, 0xFF, 0xFE);
    e_id(&sub, 0x32);
    RAW(&sub, 0x00, 'x');
    e_id(&sub, 0);
    e_u1(&sub, 0x21); e_id(&sub, 0x33); e_u4(&sub, 300002); e_id(&sub, 0xC0); e_u4(&sub, 0);
    /* OBJ ARRAY DUMPs */
    e_u1(&sub, 0x22); e_id(&sub, 0x41); e_u4(&sub, 300003); e_u4(&sub, 3); e_id(&sub, 0xC2);
    e_id(&sub, 0x31); e_id(&sub, 0); e_id(&sub, 0x33);
    e_u1(&sub, 0x22); e_id(&sub, 0x42); e_u4(&sub, 300003); e_u4(&sub, 0); e_id(&sub, 0xC2);
    /* PRIM ARRAY DUMPs: id, trace, count, type, big-endian elements */
    e_u1(&sub, 0x23); e_id(&sub, 0x51); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 4);
    RAW(&sub, 0x01, 0x00);
    e_u1(&sub, 0x23); e_id(&sub, 0x52); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 5);
    RAW(&sub, 0x00, 0x41, 0x26, 0x3A);
    e_u1(&sub, 0x23); e_id(&sub, 0x53); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 6);
    RAW(&sub, 0x3F, 0xC0, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00);
    e_u1(&sub, 0x23); e_id(&sub, 0x54); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 7);
    RAW(&sub, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0);
    e_u1(&sub, 0x23); e_id(&sub, 0x55); e_u4(&sub, 300004); e_u4(&sub, 3); e_u1(&sub, 8);
    RAW(&sub, 0x80, 0x7F, 0x00);
    e_u1(&sub, 0x23); e_id(&sub, 0x56); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 9);
    RAW(&sub, 0xFF, 0xFE, 0x12, 0x34);
    e_u1(&sub, 0x23); e_id(&sub, 0x57); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 10);
    RAW(&sub, 0x01, 0x02, 0x03, 0x04, 0xFF, 0xFF, 0xFF, 0xFF);
    e_u1(&sub, 0x23); e_id(&sub, 0x58); e_u4(&sub, 300004); e_u4(&sub, 2); e_u1(&sub, 11);
    RAW(&sub, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
              0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE);
    e_u1(&sub, 0x23); e_id(&sub, 0x59); e_u4(&sub, 300004); e_u4(&sub, 0); e_u1(&sub, 10);

    bytes e = { 0 };
    e_file_header(&e);
    e_record(&e, 0x1C, (uint32_t)sub.n);             /* all of it fits one 1 MiB segment */
    e_raw(&e, sub.b, sub.n);
    e_record(&e, 0x2C, 0);
    CHECK(same_bytes("heap dump", s.buf, s.len, &e));
    CHECK(w.bytes == e.n);

    walk k;
    walk_file(s.buf, s.len, HB_DEFAULT_SEGMENT, &k);
    CHECK(!k.bad && k.segments == 1 && k.ends == 1 && k.subrecords == 9 + 1 + 2 + 2 + 9);
    CHECK(k.by_tag[0x20] == 1 && k.by_tag[0x21] == 2 && k.by_tag[0x22] == 2 && k.by_tag[0x23] == 9);
    free(sub.b);
    free(e.b);
    free(s.buf);
}

/* A tiny buffer: many segments, none over capacity, no sub-record split, and
 * every sub-record present once, in order. */
TEST(hb_segments_split_between_subrecords)
{
    hb_writer w;
    sink s;
    start(&w, &s, 64);
    CHECK(hb_heap_begin(&w) == 0);
    uint64_t next = 1;
    unsigned made = 0;
    hb_field f[] = { { 7, HB_INT } };
    hb_class c = { 0, 0, 0, 0, 0, 0, 4, NULL, 0, f, 1 };    /* 1 + 8 + 4 + 48 + 4 + 6 + 9 = 80 */
    for (int round = 0; round < 40; round++) {
        CHECK(hb_root_unknown(&w, next++) == 0);                       /* 9 bytes */
        CHECK(hb_root_thread_object(&w, next++, 200001, 300001) == 0); /* 17 */
        CHECK(hb_root_jni_global(&w, next++, 5) == 0);                 /* 17 */
        CHECK(hb_instance_begin(&w, next++, 0, 0xC, 12) == 0);         /* 25 + 12 = 37 */
        CHECK(hb_put_value(&w, HB_INT, (uint32_t)round) == 0);
        CHECK(hb_put_value(&w, HB_LONG, (uint64_t)round << 32) == 0);
        CHECK(hb_obj_array_begin(&w, next++, 0, 3, 0xD) == 0);         /* 25 + 24 = 49 */
        for (int i = 0; i < 3; i++)
            CHECK(hb_put_value(&w, HB_OBJECT, (uint64_t)i) == 0);
        uint16_t chars[] = { 'a', 'b', 'c' };
        CHECK(hb_prim_array(&w, next++, 0, HB_CHAR, 3, chars) == 0);   /* 18 + 6 = 24 */
        made += 6;
        if (round % 10 == 3) {
            c.id = next++;                  /* 80 bytes: over capacity, a segment of its own */
            CHECK(hb_class_dump(&w, &c) == 0);
            made++;
        }
        if (round == 20)        /* a top-level record mid-dump ends the segment first */
            CHECK(hb_utf8(&w, 99, "mid-dump") == 0);
    }
    CHECK(hb_heap_end(&w) == 0);
    CHECK(finish(&w, &s) == 0);

    walk k;
    walk_file(s.buf, s.len, 64, &k);
    CHECK(!k.bad);
    CHECK(k.subrecords == made && k.ends == 1 && k.others == 1);
    CHECK(k.streamed == 4 && k.by_tag[0x20] == 4);
    CHECK(k.max_buffered_segment <= 64 && k.max_buffered_segment > 0);
    CHECK(k.segments > made / 3);          /* at most a few 9..49-byte sub-records per 64 */
    int in_order = k.n_ids == made;
    for (unsigned i = 0; in_order && i < k.n_ids; i++)
        in_order = k.ids[i] == i + 1;
    CHECK(in_order);
    free(s.buf);
}

/* A sub-record bigger than the whole buffer: streamed as its own segment,
 * with the segments before and after it intact. */
TEST(hb_oversized_subrecord_streams)
{
    hb_writer w;
    sink s;
    start(&w, &s, 64);
    uint32_t *ints = malloc(1000 * sizeof *ints);
    for (uint32_t i = 0; i < 1000; i++)
        ints[i] = i * 0x01010101u - 7u;
    CHECK(hb_heap_begin(&w) == 0);
    CHECK(hb_root_unknown(&w, 1) == 0);
    CHECK(hb_prim_array(&w, 2, 300001, HB_INT, 1000, ints) == 0);
    CHECK(w.seg_len == 0 && !w.streaming);
    /* Streamed objects filled through hb_put_value too. */
    CHECK(hb_obj_array_begin(&w, 3, 0, 20, 0xA) == 0);      /* 25 + 160 bytes */
    CHECK(w.streaming);
    for (int i = 0; i < 20; i++)
        CHECK(hb_put_value(&w, HB_OBJECT, 1000u + (unsigned)i) == 0);
    CHECK(!w.streaming && w.open_tag == 0);
    CHECK(hb_root_sticky_class(&w, 4) == 0);
    CHECK(hb_heap_end(&w) == 0);
    CHECK(finish(&w, &s) == 0);

    bytes e = { 0 };
    e_file_header(&e);
    e_record(&e, 0x1C, 9);
    e_u1(&e, 0xFF); e_id(&e, 1);
    e_record(&e, 0x1C, 18 + 4000);
    e_u1(&e, 0x23); e_id(&e, 2); e_u4(&e, 300001); e_u4(&e, 1000); e_u1(&e, 10);
    for (uint32_t i = 0; i < 1000; i++)
        e_u4(&e, i * 0x01010101u - 7u);
    e_record(&e, 0x1C, 25 + 160);
    e_u1(&e, 0x22); e_id(&e, 3); e_u4(&e, 0); e_u4(&e, 20); e_id(&e, 0xA);
    for (int i = 0; i < 20; i++)
        e_id(&e, 1000u + (unsigned)i);
    e_record(&e, 0x1C, 9);
    e_u1(&e, 0x05); e_id(&e, 4);
    e_record(&e, 0x2C, 0);
    CHECK(same_bytes("streamed", s.buf, s.len, &e));
    /* spelled out once: element 1 is 0x01010101 - 7 = 0x010100FA */
    CHECK(s.len > 80 && memcmp(s.buf + 31 + 9 + 9 + 9 + 18 + 4, "\x01\x01\x00\xFA", 4) == 0);

    walk k;
    walk_file(s.buf, s.len, 64, &k);
    CHECK(!k.bad && k.segments == 4 && k.streamed == 2 && k.subrecords == 4);
    free(ints);
    free(e.b);
    free(s.buf);
}

/* The default 1 MiB buffer: a dump of ~1.8 MB of roots makes two segments. */
TEST(hb_default_capacity_segments)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_heap_begin(&w) == 0);
    for (uint64_t i = 1; i <= 200000; i++)
        if (hb_root_unknown(&w, i) != 0)
            break;
    CHECK(hb_heap_end(&w) == 0);
    CHECK(finish(&w, &s) == 0);
    CHECK(s.len == 31 + 2 * 9 + 200000 * 9 + 9);
    walk k;
    walk_file(s.buf, s.len, HB_DEFAULT_SEGMENT, &k);
    CHECK(!k.bad && k.segments == 2 && k.subrecords == 200000 && k.streamed == 0);
    CHECK(k.max_buffered_segment == (HB_DEFAULT_SEGMENT / 9) * 9);
    free(s.buf);
}

/* Each misuse on a fresh writer: EINVAL, sticky, nothing more written. */
typedef enum {
    SHORT_THEN_NEXT, SHORT_THEN_END, TOO_MANY, NOT_OPEN, WRONG_ARRAY_TYPE, OUTSIDE_HEAP,
    BAD_STATIC_TYPE, BAD_FIELD_TYPE, OBJECT_PRIM_ARRAY, BAD_PUT_TYPE, TOP_LEVEL_WHILE_OPEN,
    HEAP_TWICE, END_WITHOUT_BEGIN, NULL_STRING, N_MISUSES
} misuse;

static int misuse_run(hb_writer *w, misuse m)
{
    hb_static st = { 1, { 3, 0 } };
    hb_field fd = { 1, 12 };
    hb_class c = { 1, 0, 0, 0, 0, 0, 0, NULL, 0, NULL, 0 };
    if (m != OUTSIDE_HEAP && m != END_WITHOUT_BEGIN && m != NULL_STRING && hb_heap_begin(w) != 0)
        return 0;
    switch (m) {
    case SHORT_THEN_NEXT:
        hb_instance_begin(w, 1, 0, 2, 8);
        hb_put_value(w, HB_INT, 1);
        return hb_root_unknown(w, 3);
    case SHORT_THEN_END:
        hb_obj_array_begin(w, 1, 0, 2, 2);
        hb_put_value(w, HB_OBJECT, 1);
        return hb_heap_end(w);
    case TOO_MANY:
        hb_instance_begin(w, 1, 0, 2, 4);
        return hb_put_value(w, HB_LONG, 1);
    case NOT_OPEN:
        return hb_put_value(w, HB_INT, 1);
    case WRONG_ARRAY_TYPE:
        hb_obj_array_begin(w, 1, 0, 1, 2);
        return hb_put_value(w, HB_LONG, 1);
    case OUTSIDE_HEAP:
        return hb_root_unknown(w, 1);
    case BAD_STATIC_TYPE:
        c.statics = &st;
        c.n_statics = 1;
        return hb_class_dump(w, &c);
    case BAD_FIELD_TYPE:
        c.fields = &fd;
        c.n_fields = 1;
        return hb_class_dump(w, &c);
    case OBJECT_PRIM_ARRAY: {
        uint64_t ids[1] = { 0 };
        return hb_prim_array(w, 1, 0, HB_OBJECT, 1, ids);
    }
    case BAD_PUT_TYPE:
        hb_instance_begin(w, 1, 0, 2, 4);
        return hb_put_value(w, 1, 1);
    case TOP_LEVEL_WHILE_OPEN:
        hb_instance_begin(w, 1, 0, 2, 4);
        return hb_utf8(w, 1, "x");
    case HEAP_TWICE:
        return hb_heap_begin(w);
    case END_WITHOUT_BEGIN:
        return hb_heap_end(w);
    case NULL_STRING:
        return hb_utf8(w, 1, NULL);
    default:
        return 0;
    }
}

TEST(hb_misuse_is_einval_and_sticky)
{
    for (int m = 0; m < N_MISUSES; m++) {
        hb_writer w;
        sink s;
        start(&w, &s, 64);
        int rc = misuse_run(&w, (misuse)m);
        if (rc != -1 || w.error != EINVAL)
            fprintf(stderr, "    misuse %d: rc %d, error %d\n", m, rc, w.error);
        CHECK(rc == -1 && w.error == EINVAL);
        uint64_t before = w.bytes;
        CHECK(hb_utf8(&w, 5, "after") == -1);
        CHECK(hb_heap_end(&w) == -1);
        CHECK(hb_root_unknown(&w, 5) == -1);
        CHECK(w.bytes == before && w.error == EINVAL);
        CHECK(finish(&w, &s) == -1);
        CHECK(s.len == before);                 /* close wrote nothing more either */
        free(s.buf);
    }
}

TEST(hb_write_failure_is_sticky)
{
    /* /dev/full, unbuffered: the header's fwrite fails with ENOSPC. */
    FILE *full = fopen("/dev/full", "w");
    CHECK(full != NULL);
    if (full != NULL) {
        hb_writer w;
        setvbuf(full, NULL, _IONBF, 0);
        CHECK(hb_open(&w, full, START_MS, 0) == -1);
        CHECK(w.error == ENOSPC && w.bytes == 0);
        CHECK(hb_utf8(&w, 1, "x") == -1 && hb_heap_begin(&w) == -1);
        CHECK(w.error == ENOSPC);
        CHECK(hb_close(&w) == -1 && w.seg == NULL);
        fclose(full);
    }

    /* /dev/full, fully buffered: everything "succeeds" into stdio's buffer;
     * hb_close's fflush finds out. */
    full = fopen("/dev/full", "w");
    if (full != NULL) {
        hb_writer w;
        CHECK(hb_open(&w, full, START_MS, 0) == 0);
        CHECK(hb_end_thread(&w, 1) == 0);
        CHECK(hb_close(&w) == -1 && w.error == ENOSPC);
        fclose(full);
    }

    /* A 64-byte fmemopen buffer: the header fits, a 40-byte record does not.
     * The short write leaves errno 0: the error is EIO. */
    char mem[64];
    FILE *f = fmemopen(mem, sizeof mem, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        hb_writer w;
        setvbuf(f, NULL, _IONBF, 0);
        CHECK(hb_open(&w, f, START_MS, 64) == 0);
        w.clock_us = fake_clock;
        CHECK(hb_end_thread(&w, 1) == 0);                     /* 31 + 13 = 44 bytes */
        CHECK(w.bytes == 44);
        /* 9 + 40 bytes more: the record header fits, the body does not */
        CHECK(hb_start_thread(&w, 1, 2, 3, 4, 5, 6) == -1);
        CHECK(w.error == EIO && w.bytes == 53);
        CHECK(hb_end_thread(&w, 2) == -1 && hb_heap_begin(&w) == -1 && hb_root_unknown(&w, 1) == -1);
        CHECK(w.error == EIO && w.bytes == 53);
        CHECK(hb_close(&w) == -1);
        CHECK(memcmp(mem, "JAVA PROFILE 1.0.2", 19) == 0 && mem[31] == 0x0B);
        fclose(f);
    }

    /* Failing in the middle of a heap dump, while a segment is written. */
    f = fmemopen(mem, sizeof mem, "w");
    if (f != NULL) {
        hb_writer w;
        setvbuf(f, NULL, _IONBF, 0);
        CHECK(hb_open(&w, f, START_MS, 64) == 0);
        CHECK(hb_heap_begin(&w) == 0);
        int rc = 0;
        for (int i = 0; i < 20 && rc == 0; i++)
            rc = hb_root_unknown(&w, (uint64_t)i);
        CHECK(rc == -1 && w.error == EIO);
        CHECK(hb_root_unknown(&w, 99) == -1 && hb_heap_end(&w) == -1);
        CHECK(hb_close(&w) == -1);
        fclose(f);
    }
}

TEST(hb_close_ends_open_heap_dump)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_heap_begin(&w) == 0);
    CHECK(hb_root_monitor_used(&w, 0x77) == 0);
    CHECK(finish(&w, &s) == 0);
    CHECK(w.out == NULL && w.seg == NULL);
    CHECK(hb_close(&w) == 0);                   /* twice: harmless */
    bytes e = { 0 };
    e_file_header(&e);
    e_record(&e, 0x1C, 9);
    e_u1(&e, 0x07); e_id(&e, 0x77);
    e_record(&e, 0x2C, 0);
    CHECK(same_bytes("closed", s.buf, s.len, &e));
    CHECK(hb_end_thread(&w, 1) == -1 && w.error == EBADF);  /* after close: refused */
    free(e.b);
    free(s.buf);
}

TEST(hb_empty_heap_dump_is_just_end)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_heap_begin(&w) == 0 && hb_heap_end(&w) == 0);
    CHECK(hb_heap_begin(&w) == 0 && hb_root_unknown(&w, 1) == 0 && hb_heap_end(&w) == 0);
    CHECK(finish(&w, &s) == 0);
    walk k;
    walk_file(s.buf, s.len, HB_DEFAULT_SEGMENT, &k);
    CHECK(!k.bad && k.ends == 2 && k.segments == 1 && k.subrecords == 1);
    CHECK(s.len == 31 + 9 + 9 + 9 + 9);
    free(s.buf);
}

/* A staged heap dump follows the records written after it was staged. */
TEST(hb_stage_puts_records_before_the_staged_ones)
{
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    FILE *stage = tmpfile();
    CHECK(stage != NULL);
    CHECK(hb_utf8(&w, 1, "x") == 0 && hb_heap_begin(&w) == 0 && hb_stage_begin(&w, stage) == 0);
    CHECK(hb_stage_begin(&w, stage) == -1 && w.error == EINVAL);   /* twice: refused */
    w.error = 0;
    CHECK(hb_root_unknown(&w, 7) == 0 && hb_heap_end(&w) == 0 && hb_stage_end(&w) == 0);
    uint64_t before = w.bytes;
    CHECK(hb_load_class(&w, 1, 0x10, 0, 1) == 0 && hb_stage_append(&w) == 0);
    CHECK(w.bytes == before + 9 + 4 + 2 * HB_ID_SIZE + 4 + 9 + (1 + HB_ID_SIZE) + 9);
    CHECK(hb_stage_append(&w) == -1);                                 /* nothing staged: refused */
    w.error = 0;
    CHECK(finish(&w, &s) == 0);
    fclose(stage);
    /* After the header: UTF8, LOAD CLASS, the segment, HEAP DUMP END. */
    const unsigned char want[] = { 0x01, 0x02, 0x1C, 0x2C };
    size_t at = 31, k = 0;
    while (at + 9 <= s.len && k < sizeof want) {
        CHECK(s.buf[at] == want[k]);
        uint32_t len = (uint32_t)s.buf[at + 5] << 24 | (uint32_t)s.buf[at + 6] << 16 |
                       (uint32_t)s.buf[at + 7] << 8 | s.buf[at + 8];
        at += 9 + len;
        k++;
    }
    CHECK(k == sizeof want && at == s.len && w.bytes == s.len);
    free(s.buf);
}

TEST(hb_type_of_descriptor_codes)
{
    CHECK(hb_type_of_descriptor('Z') == HB_BOOLEAN && hb_type_of_descriptor('C') == HB_CHAR);
    CHECK(hb_type_of_descriptor('F') == HB_FLOAT && hb_type_of_descriptor('D') == HB_DOUBLE);
    CHECK(hb_type_of_descriptor('B') == HB_BYTE && hb_type_of_descriptor('S') == HB_SHORT);
    CHECK(hb_type_of_descriptor('I') == HB_INT && hb_type_of_descriptor('J') == HB_LONG);
    CHECK(hb_type_of_descriptor('L') == HB_OBJECT && hb_type_of_descriptor('[') == HB_OBJECT);
    CHECK(hb_type_of_descriptor('V') == 0 && hb_type_of_descriptor('x') == 0);
}

/* ---- another file's records (hb_append_file) ---- */

#define OTHER_MS     (START_MS + 5)                 /* the JVM's dump began 5 ms after ours */
#define BIG_SEGMENT  ((1u << 20) + 3)               /* past the size copied in the kernel */

/* What the JVM's dumper writes, in little: its header, a UTF8, a LOAD CLASS
 * and a STACK FRAME of class serial 1, a segment of BIG_SEGMENT bytes, the
 * end. Record times 7 us after its start. */
static void e_other_file(bytes *e)
{
    e_raw(e, "JAVA PROFILE 1.0.2", 19);
    e_u4(e, 8);
    e_u8(e, OTHER_MS);
    e_u1(e, 0x01); e_u4(e, 7); e_u4(e, 8 + 3); e_id(e, 0x7f0000000123ull); e_raw(e, "Foo", 3);
    e_u1(e, 0x02); e_u4(e, 7); e_u4(e, 24); e_u4(e, 1); e_id(e, 0x8000aaaaull); e_u4(e, 1); e_id(e, 0x7f0000000123ull);
    e_u1(e, 0x04); e_u4(e, 7); e_u4(e, 40); e_id(e, 9); e_id(e, 10); e_id(e, 11); e_id(e, 12); e_u4(e, 1); e_u4(e, 42);
    e_u1(e, 0x1C); e_u4(e, 7); e_u4(e, BIG_SEGMENT);
    for (uint32_t i = 0; i < BIG_SEGMENT; i++)
        e_u1(e, (i * 7u) & 0xFF);
    e_u1(e, 0x2C); e_u4(e, 7); e_u4(e, 0);
}

/* The same records as this writer's file must hold them: times since our
 * start (7 us + 5 ms), class serials moved by the offset. */
static void e_appended(bytes *e, uint32_t offset)
{
    uint32_t t = 7 + 5000;
    e_u1(e, 0x01); e_u4(e, t); e_u4(e, 8 + 3); e_id(e, 0x7f0000000123ull); e_raw(e, "Foo", 3);
    e_u1(e, 0x02); e_u4(e, t); e_u4(e, 24); e_u4(e, 1 + offset); e_id(e, 0x8000aaaaull); e_u4(e, 1);
    e_id(e, 0x7f0000000123ull);
    e_u1(e, 0x04); e_u4(e, t); e_u4(e, 40); e_id(e, 9); e_id(e, 10); e_id(e, 11); e_id(e, 12); e_u4(e, 1 + offset);
    e_u4(e, 42);
    e_u1(e, 0x1C); e_u4(e, t); e_u4(e, BIG_SEGMENT);
    for (uint32_t i = 0; i < BIG_SEGMENT; i++)
        e_u1(e, (i * 7u) & 0xFF);
    e_u1(e, 0x2C); e_u4(e, t); e_u4(e, 0);
}

/* A file holding these bytes, its descriptor at the start. */
static int file_of(const bytes *e, size_t n)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f == NULL)
        return -1;
    CHECK(fwrite(e->b, 1, n, f) == n && fflush(f) == 0);
    int fd = dup(fileno(f));
    fclose(f);
    CHECK(fd >= 0 && lseek(fd, 0, SEEK_SET) == 0);
    return fd;
}

/* other appended to a writer on a memory stream (after a record of ours
 * when ours_first) holds exactly want; frees both. */
static void check_appended_to_memory(const char *what, bytes *other, int ours_first, const hb_class_renumber *r,
                                     bytes *want)
{
    int fd = file_of(other, other->n);
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(!ours_first || hb_control_settings(&w, 0, 4) == 0);
    CHECK((r->defined_as ? hb_append_file_renumbered(&w, fd, r) : hb_append_file(&w, fd, r->offset)) == 0);
    CHECK(w.error == 0 && w.bytes == want->n);
    CHECK(finish(&w, &s) == 0);
    CHECK(same_bytes(what, s.buf, s.len, want));
    close(fd);
    free(s.buf);
    free(other->b);
    free(want->b);
}

TEST(hb_append_file_to_memory_stream)
{
    bytes other = { 0 }, want = { 0 };
    e_other_file(&other);
    e_file_header(&want);
    e_record(&want, 0x0E, 6);                     /* a record of ours first */
    e_u4(&want, 0); e_u2(&want, 4);
    e_appended(&want, 0x40000000u);
    hb_class_renumber r = { .offset = 0x40000000u };
    check_appended_to_memory("appended", &other, 1, &r, &want);
}

/* A real file on each side: the big segment is copied in the kernel, and
 * what the writer writes next lands after it. */
TEST(hb_append_file_to_file)
{
    bytes other = { 0 }, want = { 0 };
    e_other_file(&other);
    e_file_header(&want);
    e_appended(&want, 0x41000000u);
    e_record(&want, 0x0E, 6);
    e_u4(&want, 0); e_u2(&want, 4);
    int fd = file_of(&other, other.n);
    FILE *out = tmpfile();
    CHECK(out != NULL);
    hb_writer w;
    CHECK(hb_open(&w, out, START_MS, 0) == 0);
    w.clock_us = fake_clock;
    CHECK(hb_append_file(&w, fd, 0x41000000u) == 0);
    CHECK(hb_control_settings(&w, 0, 4) == 0);
    CHECK(w.error == 0 && w.bytes == want.n);
    CHECK(hb_close(&w) == 0);
    CHECK(fseeko(out, 0, SEEK_END) == 0 && (size_t)ftello(out) == want.n);
    rewind(out);
    unsigned char *got = malloc(want.n);
    CHECK(got != NULL && fread(got, 1, want.n, out) == want.n);
    CHECK(got && same_bytes("appended to a file", got, want.n, &want));
    free(got);
    fclose(out);
    close(fd);
    free(other.b);
    free(want.b);
}

TEST(hb_append_file_refuses_other_files_untouched)
{
    bytes e = { 0 };
    e_raw(&e, "JAVA PROFILE 1.0.2", 19);
    e_u4(&e, 4);                                  /* 4-byte ids: not this file's */
    e_u8(&e, OTHER_MS);
    bytes text = { 0 };
    e_raw(&text, "JAVA PROFILE 1.0.2 written as text, not a header", 48);
    int fds[3] = { file_of(&e, e.n), file_of(&text, text.n), file_of(&e, 10) };
    for (int i = 0; i < 3; i++) {
        hb_writer w;
        sink s;
        start(&w, &s, 0);
        CHECK(hb_append_file(&w, fds[i], 0) == 1);
        CHECK(w.error == 0 && w.bytes == 31);
        CHECK(finish(&w, &s) == 0 && s.len == 31);
        close(fds[i]);
        free(s.buf);
    }
    free(e.b);
    free(text.b);
}

TEST(hb_append_file_truncated_is_eio)
{
    bytes other = { 0 };
    e_other_file(&other);
    /* Cut inside the LOAD CLASS, inside the big segment, inside a record
     * header; the records before the cut are written (our header for
     * theirs), nothing of the one cut short (its header was, with a
     * megabyte of the segment, when read() fed the records). */
    size_t cuts[] = { 31 + 9 + 11 + 9 + 10, other.n - 9 - 100, other.n - 4 };
    size_t kept[] = { 31 + 9 + 11, 31 + 9 + 11 + 9 + 24 + 9 + 40, other.n - 9 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        int fd = file_of(&other, cuts[i]);
        hb_writer w;
        sink s;
        start(&w, &s, 0);
        CHECK(hb_append_file(&w, fd, 0) == -1);
        CHECK(w.error == EIO && w.bytes == kept[i]);
        CHECK(hb_control_settings(&w, 0, 4) == -1);     /* sticky */
        finish(&w, &s);
        close(fd);
        free(s.buf);
    }
    free(other.b);
}

TEST(hb_append_file_not_inside_a_heap_dump)
{
    bytes other = { 0 };
    e_other_file(&other);
    int fd = file_of(&other, other.n);
    hb_writer w;
    sink s;
    start(&w, &s, 0);
    CHECK(hb_heap_begin(&w) == 0);
    CHECK(hb_append_file(&w, fd, 0) == -1 && w.error == EINVAL);
    finish(&w, &s);
    close(fd);
    free(s.buf);
    free(other.b);
}

/* ---- our records after the JVM's dump (hb_renumber_classes, hb_append_file_renumbered) ---- */

/* The JVM's dump names our class 5 as its 0x40000007; not class 6. */
static uint32_t jvm_names_five(void *ctx, uint32_t serial)
{
    ++*(int *)ctx;
    return serial == 5 ? 0x40000007u : 0;
}

/* An ALLOC SITES body of n sites (claiming `claimed`), site i of class
 * serials[i]. */
static void e_sites(bytes *e, uint32_t claimed, const uint32_t *serials, uint32_t n)
{
    e_u2(e, 0); e_u4(e, 0); e_u4(e, 100); e_u4(e, 10); e_u8(e, 200); e_u8(e, 20); e_u4(e, claimed);
    for (uint32_t i = 0; i < n; i++) {
        e_u1(e, 2); e_u4(e, serials[i]); e_u4(e, 300001 + i); e_u4(e, 8); e_u4(e, 1); e_u4(e, 16); e_u4(e, 2);
    }
}

TEST(hb_renumber_classes_each_record)
{
    int calls = 0;
    hb_class_renumber r = { .offset = 0, .defined_as = jvm_names_five, .ctx = &calls };
    bytes load5 = { 0 }, load6 = { 0 }, frame = { 0 }, unload = { 0 }, sites = { 0 }, want = { 0 };
    e_u4(&load5, 5); e_id(&load5, 0x1000); e_u4(&load5, 300000); e_id(&load5, 0x2000);
    e_u4(&load6, 6); e_id(&load6, 0x1008); e_u4(&load6, 300000); e_id(&load6, 0x2008);
    CHECK(hb_renumber_classes(0x02, load5.b, (uint32_t)load5.n, &r) == 0);   /* the JVM's defines it */
    CHECK(hb_renumber_classes(0x02, load6.b, (uint32_t)load6.n, &r) == 1 && load6.b[3] == 6);
    e_id(&frame, 9); e_id(&frame, 10); e_id(&frame, 11); e_id(&frame, 12); e_u4(&frame, 5); e_u4(&frame, 42);
    CHECK(hb_renumber_classes(0x04, frame.b, (uint32_t)frame.n, &r) == 1);
    e_id(&want, 9); e_id(&want, 10); e_id(&want, 11); e_id(&want, 12); e_u4(&want, 0x40000007u); e_u4(&want, 42);
    CHECK(same_bytes("frame", frame.b, frame.n, &want));
    e_u4(&unload, 5);
    CHECK(hb_renumber_classes(0x03, unload.b, (uint32_t)unload.n, &r) == 1 && unload.b[0] == 0x40);
    /* Three sites claimed, two there: those two renamed, nothing read past. */
    static const uint32_t in[] = { 6, 5 }, out[] = { 6, 0x40000007u };
    e_sites(&sites, 3, in, 2);
    want.n = 0;
    e_sites(&want, 3, out, 2);
    CHECK(hb_renumber_classes(0x06, sites.b, (uint32_t)sites.n, &r) == 1);
    CHECK(same_bytes("sites", sites.b, sites.n, &want));
    /* Too short for its serial: kept as it is, not asked about. */
    int before = calls;
    CHECK(hb_renumber_classes(0x02, load5.b, 3, &r) == 1 && load5.b[3] == 5 && calls == before);
    CHECK(hb_renumber_classes(0x06, sites.b, 33, &r) == 1);
    free(load5.b); free(load6.b); free(frame.b); free(unload.b); free(sites.b); free(want.b);
}

/* Our records appended after the JVM's: LOAD CLASS of class 5 dropped (the
 * JVM's defines it), class 6's kept; the frame and an ALLOC SITES record
 * larger than the small buffer name class 5 by the JVM's serial. */
TEST(hb_append_file_renumbered_defines_once)
{
    enum { SITES = 20 };
    uint32_t in[SITES], out[SITES];
    for (uint32_t i = 0; i < SITES; i++) {
        in[i] = i % 2 ? 5 : 6;
        out[i] = i % 2 ? 0x40000007u : 6;
    }
    bytes other = { 0 }, want = { 0 };
    uint32_t t = 7 + 5000;
    e_raw(&other, "JAVA PROFILE 1.0.2", 19);
    e_u4(&other, 8);
    e_u8(&other, OTHER_MS);
    e_u1(&other, 0x02); e_u4(&other, 7); e_u4(&other, 24); e_u4(&other, 5); e_id(&other, 0x1000); e_u4(&other, 1);
    e_id(&other, 0x2000);
    e_u1(&other, 0x02); e_u4(&other, 7); e_u4(&other, 24); e_u4(&other, 6); e_id(&other, 0x1008); e_u4(&other, 1);
    e_id(&other, 0x2008);
    e_u1(&other, 0x04); e_u4(&other, 7); e_u4(&other, 40); e_id(&other, 9); e_id(&other, 10); e_id(&other, 11);
    e_id(&other, 12); e_u4(&other, 5); e_u4(&other, 42);
    e_u1(&other, 0x06); e_u4(&other, 7); e_u4(&other, 34 + 25 * SITES);
    e_sites(&other, SITES, in, SITES);
    e_file_header(&want);
    e_u1(&want, 0x02); e_u4(&want, t); e_u4(&want, 24); e_u4(&want, 6); e_id(&want, 0x1008); e_u4(&want, 1);
    e_id(&want, 0x2008);
    e_u1(&want, 0x04); e_u4(&want, t); e_u4(&want, 40); e_id(&want, 9); e_id(&want, 10); e_id(&want, 11);
    e_id(&want, 12); e_u4(&want, 0x40000007u); e_u4(&want, 42);
    e_u1(&want, 0x06); e_u4(&want, t); e_u4(&want, 34 + 25 * SITES);
    e_sites(&want, SITES, out, SITES);
    int calls = 0;
    hb_class_renumber r = { .defined_as = jvm_names_five, .ctx = &calls };
    check_appended_to_memory("renumbered", &other, 0, &r, &want);
}

/* ---- the JVM's dump becoming the output (hb_offset_class_serials, hb_switch_file) ---- */

static unsigned char *file_bytes(int fd, size_t *n)
{
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    *n = (size_t)st.st_size;
    unsigned char *b = malloc(*n ? *n : 1);
    CHECK(b != NULL && pread(fd, b, *n, 0) == (ssize_t)*n);
    return b;
}

TEST(hb_offset_class_serials_in_place)
{
    bytes other = { 0 };
    e_other_file(&other);
    int fd = file_of(&other, other.n);
    uint64_t ms = 0, size = 0;
    CHECK(hb_offset_class_serials(fd, 0x40000000u, &ms, &size) == 0);
    CHECK(ms == OTHER_MS && size == other.n);
    size_t n;
    unsigned char *got = file_bytes(fd, &n);
    /* Only the two serials differ from the original. */
    size_t diffs = 0;
    for (size_t i = 0; i < n && n == other.n; i++)
        diffs += got[i] != other.b[i];
    CHECK(n == other.n && diffs == 2);
    size_t load_serial = 31 + 9 + 11 + 9, frame_serial = load_serial + 24 + 9 + 32;
    CHECK(got[load_serial] == 0x40 && got[load_serial + 3] == 1);
    CHECK(got[frame_serial] == 0x40 && got[frame_serial + 3] == 1);
    free(got);
    close(fd);
    free(other.b);
}

TEST(hb_offset_class_serials_refuses_and_truncated)
{
    bytes other = { 0 };
    e_other_file(&other);
    uint64_t ms = 0, size = 0;
    int fd = file_of(&other, 20);                 /* not even a header */
    CHECK(hb_offset_class_serials(fd, 1, &ms, &size) == 1);
    close(fd);
    fd = file_of(&other, other.n - 4);            /* the last record cut */
    errno = 0;
    CHECK(hb_offset_class_serials(fd, 1, &ms, &size) == -1 && errno == EIO);
    close(fd);
    free(other.b);
}

/* ---- the JVM's LOAD CLASS records given loading traces (hb_set_load_traces) ---- */

/* A JVM's dump in short: names (one used by two classes, as two loaders'
 * classes of one name are), then the classes, all with its trace 1. */
enum { LOADS_NAME_FOO = 0x7f0000000100, LOADS_NAME_BAR = 0x7f0000000200, LOADS_NAME_TWICE = 0x7f0000000300,
       LOADS_NAME_UNUSED = 0x7f0000000400 };

static void e_load_class(bytes *e, uint32_t serial, uint64_t name_id)
{
    e_u1(e, 0x02); e_u4(e, 0); e_u4(e, 24);
    e_u4(e, serial); e_id(e, 0x80000000ull + serial * 16u); e_u4(e, 1); e_id(e, name_id);
}

static void e_utf8(bytes *e, uint64_t id, const char *name)
{
    e_u1(e, 0x01); e_u4(e, 0); e_u4(e, (uint32_t)(8 + strlen(name))); e_id(e, id); e_raw(e, name, strlen(name));
}

static void e_jvm_classes(bytes *e)
{
    e_raw(e, "JAVA PROFILE 1.0.2", 19);
    e_u4(e, 8);
    e_u8(e, OTHER_MS);
    e_utf8(e, LOADS_NAME_UNUSED, "notAClass");
    e_utf8(e, LOADS_NAME_FOO, "pkg/Foo");
    e_utf8(e, LOADS_NAME_BAR, "Bar$$Lambda+0x1234");
    e_utf8(e, LOADS_NAME_TWICE, "pkg/Twice");
    e_load_class(e, 1, LOADS_NAME_FOO);
    e_load_class(e, 2, LOADS_NAME_TWICE);
    e_load_class(e, 3, LOADS_NAME_BAR);
    e_load_class(e, 4, LOADS_NAME_TWICE);
    e_u1(e, 0x1C); e_u4(e, 0); e_u4(e, 3); e_u1(e, 0xFF); e_u1(e, 0xFF); e_u1(e, 0xFF);
    e_u1(e, 0x2C); e_u4(e, 0); e_u4(e, 0);
}

/* Where class serial n's trace serial sits in e_jvm_classes' bytes. */
static size_t jvm_class_trace_at(uint32_t n)
{
    size_t names = (9 + 8 + 9) + (9 + 8 + 7) + (9 + 8 + 18) + (9 + 8 + 9);
    return 31 + names + (n - 1) * (9 + 24) + 9 + 4 + 8;
}

typedef struct asked {
    char     names[8][64];
    uint32_t serials[8];
    int      shared[8];
    int      n;
    uint64_t ours;              /* the class id of pkg/Twice that is ours */
} asked;

/* pkg/Foo gets trace 300007, the lambda 300008, the pkg/Twice of class id
 * a->ours 300009; anything else keeps its own. */
static uint32_t trace_for(void *ctx, const char *name, size_t len, uint32_t class_serial, uint64_t class_id,
                          int shared)
{
    asked *a = ctx;
    CHECK(strlen(name) == len && a->n < 8);
    snprintf(a->names[a->n], sizeof a->names[0], "%s", name);
    a->shared[a->n] = shared;
    a->serials[a->n++] = class_serial;
    if (shared)
        return class_id == a->ours ? 300009u : 0;
    return strcmp(name, "pkg/Foo") == 0 ? 300007u : strcmp(name, "Bar$$Lambda+0x1234") == 0 ? 300008u : 0;
}

TEST(hb_set_load_traces_by_name)
{
    bytes jvm = { 0 };
    e_jvm_classes(&jvm);
    int fd = file_of(&jvm, jvm.n);
    asked a = { .n = 0, .ours = 0x80000000ull + 4 * 16u };     /* serial 4's class id */
    uint32_t set = 9, ambiguous = 9;
    CHECK(hb_set_load_traces(fd, trace_for, &a, &set, &ambiguous) == 0);
    /* pkg/Twice names two classes: asked about each, shared; the one whose
     * class id is ours gets its trace, the other is left. */
    CHECK(a.n == 4 && set == 3 && ambiguous == 1);
    CHECK(strcmp(a.names[0], "pkg/Foo") == 0 && a.serials[0] == 1 && !a.shared[0]);
    CHECK(strcmp(a.names[1], "Bar$$Lambda+0x1234") == 0 && a.serials[1] == 3 && !a.shared[1]);
    CHECK(strcmp(a.names[2], "pkg/Twice") == 0 && a.shared[2] && a.shared[3]);
    CHECK(a.serials[2] + a.serials[3] == 2 + 4);
    size_t n;
    unsigned char *got = file_bytes(fd, &n);
    CHECK(n == jvm.n);
    size_t diffs = 0;
    for (size_t i = 0; i < n; i++)
        diffs += got[i] != jvm.b[i];
    CHECK(diffs == 3 + 3 + 3);                    /* 300007-9: three bytes each differ from 1 */
    const unsigned char want1[4] = { 0x00, 0x04, 0x93, 0xE7 }, want3[4] = { 0x00, 0x04, 0x93, 0xE8 },
                        want4[4] = { 0x00, 0x04, 0x93, 0xE9 }, one[4] = { 0, 0, 0, 1 };
    CHECK(memcmp(got + jvm_class_trace_at(1), want1, 4) == 0);
    CHECK(memcmp(got + jvm_class_trace_at(2), one, 4) == 0);
    CHECK(memcmp(got + jvm_class_trace_at(3), want3, 4) == 0);
    CHECK(memcmp(got + jvm_class_trace_at(4), want4, 4) == 0);
    free(got);
    close(fd);
    free(jvm.b);
}

/* HotSpot before JDK 21 writes an array class's LOAD CLASS twice, one
 * class id: one class, asked about once, both records given its trace. */
TEST(hb_set_load_traces_one_class_written_twice)
{
    bytes jvm = { 0 };
    e_raw(&jvm, "JAVA PROFILE 1.0.2", 19);
    e_u4(&jvm, 8);
    e_u8(&jvm, OTHER_MS);
    e_utf8(&jvm, LOADS_NAME_FOO, "pkg/Foo");
    for (uint32_t serial = 1; serial <= 2; serial++) {
        e_u1(&jvm, 0x02); e_u4(&jvm, 0); e_u4(&jvm, 24);
        e_u4(&jvm, serial); e_id(&jvm, 0x80000010ull); e_u4(&jvm, 1); e_id(&jvm, LOADS_NAME_FOO);
    }
    int fd = file_of(&jvm, jvm.n);
    asked a = { .n = 0 };
    uint32_t set = 9, ambiguous = 9;
    CHECK(hb_set_load_traces(fd, trace_for, &a, &set, &ambiguous) == 0);
    CHECK(a.n == 1 && a.serials[0] == 1 && set == 2 && ambiguous == 0);
    size_t n;
    unsigned char *got = file_bytes(fd, &n);
    const unsigned char want[4] = { 0x00, 0x04, 0x93, 0xE7 };
    size_t first = 31 + 9 + 8 + 7 + 9 + 4 + 8;
    CHECK(n == jvm.n && memcmp(got + first, want, 4) == 0 && memcmp(got + first + 33, want, 4) == 0);
    free(got);
    close(fd);
    free(jvm.b);
}

TEST(hb_set_load_traces_refuses_and_truncated)
{
    bytes jvm = { 0 };
    e_jvm_classes(&jvm);
    asked a = { .n = 0 };
    uint32_t set, ambiguous;
    int fd = file_of(&jvm, 20);                   /* not even a header */
    CHECK(hb_set_load_traces(fd, trace_for, &a, &set, &ambiguous) == 1);
    close(fd);
    /* Cut inside the third LOAD CLASS record: nothing asked, nothing changed. */
    size_t cut = jvm_class_trace_at(3);
    fd = file_of(&jvm, cut);
    errno = 0;
    CHECK(hb_set_load_traces(fd, trace_for, &a, &set, &ambiguous) == -1 && errno == EIO);
    CHECK(a.n == 0);
    size_t n;
    unsigned char *got = file_bytes(fd, &n);
    CHECK(n == cut && memcmp(got, jvm.b, cut) == 0);
    free(got);
    close(fd);
    free(jvm.b);
}

/* A writer on a temporary file holding its header and one record (flushed). */
static FILE *temp_file_with_one_record(hb_writer *w)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK(hb_open(w, f, START_MS, 0) == 0);
    w->clock_us = fake_clock;
    CHECK(hb_control_settings(w, 0, 4) == 0);
    CHECK(fflush(f) == 0);
    return f;
}

/* Our file so far (a header, one record) follows the JVM's dump: the writer
 * goes on at the end of the dump's file, times relative to its start. */
TEST(hb_switch_file_then_append_ours)
{
    hb_writer w;
    FILE *ours = temp_file_with_one_record(&w);
    int old = dup(fileno(ours));                  /* its own description: reads from the start */
    CHECK(old >= 0 && lseek(old, 0, SEEK_SET) == 0);
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", old);
    int reader = open(name, O_RDONLY);
    CHECK(reader >= 0);

    bytes other = { 0 }, want = { 0 };
    e_other_file(&other);
    int fd = file_of(&other, other.n);
    uint64_t ms = 0, size = 0;
    CHECK(hb_offset_class_serials(fd, 0x40000000u, &ms, &size) == 0);
    CHECK(hb_switch_file(&w, fd, ms, size) == 0);
    CHECK(hb_append_file(&w, reader, 0) == 0);
    CHECK(hb_control_settings(&w, 1, 5) == 0);
    CHECK(hb_close(&w) == 0);

    /* The dump (serials moved), then our record 5 ms earlier than the dump's
     * start (wrapped), then the new one at DT_US - 5 ms. */
    e_raw(&want, "JAVA PROFILE 1.0.2", 19);
    e_u4(&want, 8);
    e_u8(&want, OTHER_MS);
    size_t n;
    unsigned char *got = file_bytes(fd, &n);
    CHECK(n == other.n + 2 * (9 + 6));
    e_raw(&want, got + want.n, other.n - want.n);     /* checked by the test above */
    e_u1(&want, 0x0E); e_u4(&want, (uint32_t)(DT_US - 5000u)); e_u4(&want, 6); e_u4(&want, 0); e_u2(&want, 4);
    e_u1(&want, 0x0E); e_u4(&want, (uint32_t)(DT_US - 5000u)); e_u4(&want, 6); e_u4(&want, 1); e_u2(&want, 5);
    CHECK(same_bytes("switched", got, n, &want));
    CHECK(memcmp(got + 31 + 9 + 11 + 9, "\x40\x00\x00\x01", 4) == 0);
    free(got);
    fclose(ours);
    close(old);
    close(reader);
    close(fd);
    free(other.b);
    free(want.b);
}

/* The records after a mark taken out (a later JVM dump goes before them),
 * then appended again: the file is what it would have been without. */
TEST(hb_take_records_since_then_append)
{
    hb_writer w;
    FILE *ours = temp_file_with_one_record(&w);
    uint64_t mark = w.bytes;
    CHECK(hb_control_settings(&w, 1, 5) == 0);
    CHECK(hb_control_settings(&w, 0, 6) == 0);
    CHECK(fflush(ours) == 0);
    size_t whole_n;
    unsigned char *whole = file_bytes(fileno(ours), &whole_n);

    FILE *refused = tmpfile();
    CHECK(refused != NULL);
    CHECK(hb_take_records_since(&w, 3, fileno(refused)) == 1);          /* inside the header */
    CHECK(hb_take_records_since(&w, w.bytes, fileno(refused)) == 1);    /* nothing after it */
    CHECK(w.bytes == whole_n);

    FILE *tail = tmpfile();
    CHECK(tail != NULL);
    CHECK(hb_take_records_since(&w, mark, fileno(tail)) == 0);
    CHECK(w.bytes == mark);
    size_t n;
    unsigned char *cut = file_bytes(fileno(ours), &n);
    CHECK(n == mark && memcmp(cut, whole, n) == 0);
    unsigned char *taken = file_bytes(fileno(tail), &n);
    CHECK(n == 31 + whole_n - mark && memcmp(taken, whole, 31) == 0 && memcmp(taken + 31, whole + mark, n - 31) == 0);
    CHECK(lseek(fileno(tail), 0, SEEK_CUR) == 0);

    CHECK(hb_append_file(&w, fileno(tail), 0) == 0);
    CHECK(fflush(ours) == 0);
    unsigned char *again = file_bytes(fileno(ours), &n);
    CHECK(same_bytes("taken and appended again", again, n, &(bytes){ .b = whole, .n = whole_n }));
    CHECK(hb_close(&w) == 0);
    free(whole);
    free(cut);
    free(taken);
    free(again);
    fclose(ours);
    fclose(refused);
    fclose(tail);
}
