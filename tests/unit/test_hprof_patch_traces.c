/*
 * Unit tests for src/output/hprof_patch_traces.c: a small HPROF file made
 * here byte by byte (every kind of heap dump sub-record the JVM writes), its
 * objects' trace serials set as the callback says, nothing else changed;
 * foreign files refused unchanged; every truncation and an unknown
 * sub-record refused with an offset, never read past.
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "output/hprof_patch_traces.h"

typedef struct bytes {
    unsigned char b[1024];
    size_t n;
} bytes;

static void u1(bytes *o, unsigned v) { o->b[o->n++] = (unsigned char)v; }
static void u2(bytes *o, unsigned v) { u1(o, v >> 8); u1(o, v); }
static void u4(bytes *o, uint32_t v) { u2(o, v >> 16); u2(o, v & 0xFFFF); }
static void id(bytes *o, uint64_t v) { u4(o, (uint32_t)(v >> 32)); u4(o, (uint32_t)v); }

/* Where the test file's object records' trace serials sit. */
static size_t at_instance, at_obj_array, at_prim_array;

static size_t make_file(bytes *o, uint32_t id_size)
{
    o->n = 0;
    memcpy(o->b, "JAVA PROFILE 1.0.2", 19);
    o->n = 19;
    u4(o, id_size);
    id(o, 1234);                                 /* ms */
    u1(o, 0x01); u4(o, 0); u4(o, 8 + 3);         /* UTF8 */
    id(o, 0x77); memcpy(o->b + o->n, "abc", 3); o->n += 3;
    u1(o, 0x1C); u4(o, 0);                       /* HEAP DUMP SEGMENT, length below */
    size_t len_at = o->n;
    u4(o, 0);
    size_t body = o->n;
    u1(o, 0x01); id(o, 0x1000); id(o, 0x99);     /* JNI global */
    u1(o, 0x03); id(o, 0x1000); u4(o, 1); u4(o, 2);   /* Java frame */
    u1(o, 0x05); id(o, 0x500);                   /* sticky class */
    u1(o, 0x20); id(o, 0x500); u4(o, 1);         /* CLASS DUMP */
    for (int i = 0; i < 6; i++) id(o, 0);
    u4(o, 16);
    u2(o, 1); u2(o, 3); u1(o, 10); u4(o, 42);    /* constant pool: one int */
    u2(o, 2); id(o, 0x77); u1(o, 2); id(o, 0x1000); id(o, 0x78); u1(o, 7); id(o, 5);   /* statics */
    u2(o, 1); id(o, 0x79); u1(o, 10);            /* one int field */
    at_instance = o->n + 1 + 8;
    u1(o, 0x21); id(o, 0x1000); u4(o, 1); id(o, 0x500); u4(o, 4); u4(o, 7);
    at_obj_array = o->n + 1 + 8;
    u1(o, 0x22); id(o, 0x2000); u4(o, 1); u4(o, 2); id(o, 0x600); id(o, 0x1000); id(o, 0);
    at_prim_array = o->n + 1 + 8;
    u1(o, 0x23); id(o, 0x3000); u4(o, 1); u4(o, 3); u1(o, 5); u2(o, 1); u2(o, 2); u2(o, 3);
    uint32_t len = (uint32_t)(o->n - body);
    o->b[len_at] = (unsigned char)(len >> 24); o->b[len_at + 1] = (unsigned char)(len >> 16);
    o->b[len_at + 2] = (unsigned char)(len >> 8); o->b[len_at + 3] = (unsigned char)len;
    u1(o, 0x2C); u4(o, 0); u4(o, 0);             /* HEAP DUMP END */
    return o->n;
}

static uint32_t get4(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct seen {
    hpt_object o[8];
    int n;
    uint64_t abandon_at;         /* this id: -1 */
} seen;

/* Instances and primitive arrays get 300000 + their id's top bits; object
 * arrays are left. */
static int trace_of(void *ctx, const hpt_object *o, uint32_t *trace)
{
    seen *s = ctx;
    if (s->n < 8)
        s->o[s->n++] = *o;
    if (o->id == s->abandon_at)
        return -1;
    if (o->kind == HPT_OBJ_ARRAY)
        return 0;
    *trace = 300000u + (uint32_t)(o->id >> 12);
    return 1;
}

TEST(hpt_patch_traces_sets_each_object_record)
{
    bytes f, before;
    size_t n = make_file(&f, 8);
    before = f;
    seen s = { .abandon_at = 1 };
    hpt_result r;
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == 0);
    CHECK(r.objects == 3 && r.patched == 2);
    CHECK(s.n == 3);
    CHECK(s.o[0].kind == HPT_INSTANCE && s.o[0].id == 0x1000 && s.o[0].class_id == 0x500 && s.o[0].length == 4);
    CHECK(s.o[1].kind == HPT_OBJ_ARRAY && s.o[1].id == 0x2000 && s.o[1].class_id == 0x600 && s.o[1].length == 2);
    CHECK(s.o[2].kind == HPT_PRIM_ARRAY && s.o[2].id == 0x3000 && s.o[2].elem_type == 5 && s.o[2].length == 3);
    CHECK(get4(f.b + at_instance) == 300001u);
    CHECK(get4(f.b + at_obj_array) == 1u);
    CHECK(get4(f.b + at_prim_array) == 300003u);
    size_t changed = 0;
    for (size_t i = 0; i < n; i++)
        changed += f.b[i] != before.b[i];
    CHECK(changed <= 6);                         /* two u4s, some bytes equal */
}

TEST(hpt_patch_traces_abandons_where_told)
{
    bytes f;
    size_t n = make_file(&f, 8);
    seen s = { .abandon_at = 0x2000 };
    hpt_result r;
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == -2);
    CHECK(r.offset == at_obj_array - 9);
    CHECK(s.n == 2);                             /* nothing read after it */
    CHECK(get4(f.b + at_prim_array) == 1u);
}

TEST(hpt_patch_traces_refuses_foreign_files_unchanged)
{
    seen s = { .abandon_at = 1 };
    hpt_result r;
    bytes f, want;
    size_t n = make_file(&want, 4);             /* 4-byte ids */
    f = want;
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == 1 && memcmp(f.b, want.b, n) == 0);
    make_file(&f, 8);
    f.b[5] = 'X';                                /* not the magic */
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == 1);
    CHECK(hpt_patch_traces(f.b, 10, trace_of, &s, &r) == 1);
    CHECK(s.n == 0);
}

TEST(hpt_patch_traces_every_truncation_refused_in_bounds)
{
    bytes f;
    size_t n = make_file(&f, 8);
    for (size_t cut = 0; cut < n; cut++) {
        make_file(&f, 8);
        /* The cut file in a buffer of its own size: ASan sees any read past it. */
        unsigned char *b = malloc(cut ? cut : 1);
        memcpy(b, f.b, cut);
        seen s = { .abandon_at = 1 };
        hpt_result r;
        int rc = hpt_patch_traces(b, cut, trace_of, &s, &r);
        /* Whole records only at the segment's and END's boundaries. */
        CHECK(rc == 1 || rc == -1 || (rc == 0 && (cut == n - 9 || cut == 19 + 4 + 8 || cut == 19 + 12 + 9 + 11)));
        if (rc == -1)
            CHECK(r.what != NULL && r.offset <= cut);
        free(b);
    }
}

TEST(hpt_patch_traces_unknown_sub_record_refused)
{
    bytes f;
    size_t n = make_file(&f, 8);
    size_t root = 19 + 12 + 9 + 11 + 9;           /* the first sub-record */
    f.b[root] = 0x42;
    seen s = { .abandon_at = 1 };
    hpt_result r;
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == -1);
    CHECK(r.offset == root && strstr(r.what, "unknown kind") != NULL);
    make_file(&f, 8);
    f.b[at_prim_array + 8] = 2;                   /* a primitive array of objects */
    CHECK(hpt_patch_traces(f.b, n, trace_of, &s, &r) == -1);
}

TEST(hpt_patch_file_patches_in_place)
{
    bytes f;
    size_t n = make_file(&f, 8);
    int fd = memfd_create("hpt", 0);
    CHECK(fd >= 0 && write(fd, f.b, n) == (ssize_t)n);
    seen s = { .abandon_at = 1 };
    hpt_result r;
    CHECK(hpt_patch_file(fd, trace_of, &s, &r) == 0 && r.patched == 2);
    unsigned char back[4];
    CHECK(pread(fd, back, 4, (off_t)at_instance) == 4 && get4(back) == 300001u);
    CHECK(lseek(fd, 0, SEEK_END) == (off_t)n);
    close(fd);
}
