/* hprof_patch_traces: see hprof_patch_traces.h. */
#include "../core/big_endian.h"
#include "hprof_patch_traces.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define ID 8u                                /* the only id size read */
static const char magic[] = "JAVA PROFILE 1.0.2";


/* Bytes of a value of HPROF basic type t; 0 for no such type. */
static uint32_t type_size(uint8_t t)
{
    switch (t) {
    case 2: return ID;
    case 4: case 8: return 1;
    case 5: case 9: return 2;
    case 6: case 10: return 4;
    case 7: case 11: return 8;
    default: return 0;
    }
}

/* The sub-records of one heap dump body, p .. end. */
typedef struct body {
    unsigned char *p, *end;
    hpt_result    *r;
    unsigned char *file;
    unsigned char *released;     /* hpt_patch_file: pages before this let go; NULL: never */
} body;

/* A mapped file's pages behind the reader are let go every 32 MiB: of a
 * shared mapping, MADV_DONTNEED only unmaps them (the changed ones stay in
 * the page cache, to be written back), so the process does not hold the
 * whole file at the end. */
#define RELEASE_STEP ((size_t)32 << 20)

static void release_behind(body *b, const unsigned char *q)
{
    if (b->released == NULL || (size_t)(q - b->released) < RELEASE_STEP)
        return;
    uintptr_t end = (uintptr_t)q & ~(uintptr_t)4095;
    if (end > (uintptr_t)b->released) {
        madvise(b->released, end - (uintptr_t)b->released, MADV_DONTNEED);
        b->released = (unsigned char *)end;
    }
}

static int bad(body *b, const unsigned char *at, const char *what)
{
    b->r->offset = (uint64_t)(at - b->file);
    b->r->what = what;
    return -1;
}

/* n more bytes from q, within the body. */
static int has(const body *b, const unsigned char *q, uint64_t n)
{
    return (uint64_t)(b->end - q) >= n;
}

/* A CLASS DUMP's length from its tag (q), or 0 when it does not fit. */
static uint64_t class_dump_length(const body *b, const unsigned char *q)
{
    const unsigned char *s = q + 1 + ID + 4 + 6 * ID + 4;
    if (!has(b, q, (uint64_t)(s - q) + 2))
        return 0;
    uint32_t n = (uint32_t)s[0] << 8 | s[1];
    s += 2;
    for (uint32_t i = 0; i < n; i++) {       /* constant pool: u2 index, u1 type, value */
        if (!has(b, s, 3) || type_size(s[2]) == 0 || !has(b, s, 3 + (uint64_t)type_size(s[2])))
            return 0;
        s += 3 + type_size(s[2]);
    }
    if (!has(b, s, 2))
        return 0;
    n = (uint32_t)s[0] << 8 | s[1];
    s += 2;
    for (uint32_t i = 0; i < n; i++) {       /* statics: name id, u1 type, value */
        if (!has(b, s, ID + 1) || type_size(s[ID]) == 0 || !has(b, s, ID + 1 + (uint64_t)type_size(s[ID])))
            return 0;
        s += ID + 1 + type_size(s[ID]);
    }
    if (!has(b, s, 2))
        return 0;
    n = (uint32_t)s[0] << 8 | s[1];
    s += 2;
    if (!has(b, s, (uint64_t)n * (ID + 1)))  /* instance fields: name id, u1 type */
        return 0;
    return (uint64_t)(s + (uint64_t)n * (ID + 1) - q);
}

/* The length of the root sub-record of tag t, 0 for no root tag. */
static uint64_t root_length(uint8_t t)
{
    switch (t) {
    case 0xFF: case 0x05: case 0x07: return 1 + ID;             /* unknown, sticky class, monitor used */
    case 0x01: return 1 + 2 * ID;                                /* JNI global */
    case 0x02: case 0x03: case 0x08: return 1 + ID + 8;          /* JNI local, Java frame, thread object */
    case 0x04: case 0x06: return 1 + ID + 4;                     /* native stack, thread block */
    default: return 0;
    }
}

/* One object record at q (its tag known): its length, the callback asked. */
static int object_record(body *b, unsigned char *q, hpt_trace_fn trace_of, void *ctx, uint64_t *len)
{
    hpt_object o = { .kind = q[0] };
    uint64_t head = q[0] == HPT_INSTANCE ? 1 + ID + 4 + ID + 4 : q[0] == HPT_OBJ_ARRAY ? 1 + ID + 4 + 4 + ID
                  : 1 + ID + 4 + 4 + 1;
    if (!has(b, q, head))
        return bad(b, q, "an object record cut short");
    o.id = be_get_u8(q + 1);
    if (q[0] == HPT_INSTANCE) {
        o.class_id = be_get_u8(q + 1 + ID + 4);
        o.length = be_get_u4(q + 1 + ID + 4 + ID);
        *len = head + o.length;
    } else if (q[0] == HPT_OBJ_ARRAY) {
        o.length = be_get_u4(q + 1 + ID + 4);
        o.class_id = be_get_u8(q + 1 + ID + 8);
        *len = head + (uint64_t)o.length * ID;
    } else {
        o.length = be_get_u4(q + 1 + ID + 4);
        o.elem_type = q[1 + ID + 8];
        if (type_size(o.elem_type) == 0 || o.elem_type == 2)
            return bad(b, q, "a primitive array of no primitive type");
        *len = head + (uint64_t)o.length * type_size(o.elem_type);
    }
    if (!has(b, q, *len))
        return bad(b, q, "an object record longer than its heap dump record");
    b->r->objects++;
    uint32_t trace = 0;
    int rc = trace_of(ctx, &o, &trace);
    if (rc < 0) {
        b->r->offset = (uint64_t)(q - b->file);
        b->r->what = "an object not as expected";
        return -2;
    }
    if (rc > 0) {
        be_put_u4(q + 1 + ID, trace);
        b->r->patched++;
    }
    return 0;
}

static int heap_body(body *b, hpt_trace_fn trace_of, void *ctx)
{
    for (unsigned char *q = b->p; q < b->end;) {
        uint64_t len = root_length(q[0]);
        if (q[0] == 0x20) {
            if ((len = class_dump_length(b, q)) == 0)
                return bad(b, q, "a CLASS DUMP cut short or of an unknown type");
        } else if (q[0] == HPT_INSTANCE || q[0] == HPT_OBJ_ARRAY || q[0] == HPT_PRIM_ARRAY) {
            int rc = object_record(b, q, trace_of, ctx, &len);
            if (rc != 0)
                return rc;
        } else if (len == 0) {
            return bad(b, q, "a heap dump sub-record of an unknown kind");
        } else if (!has(b, q, len)) {
            return bad(b, q, "a GC root cut short");
        }
        q += len;
        release_behind(b, q);
    }
    return 0;
}

static int patch_all(unsigned char *data, size_t size, hpt_trace_fn trace_of, void *ctx, hpt_result *r, int mapped)
{
    memset(r, 0, sizeof *r);
    size_t head = sizeof magic + 4 + 8;
    if (size < head || memcmp(data, magic, sizeof magic) != 0 || be_get_u4(data + sizeof magic) != ID)
        return 1;
    body b = { .r = r, .file = data, .released = mapped ? data : NULL };
    for (size_t at = head; at < size;) {
        if (size - at < 9) {
            r->offset = at;
            r->what = "a record header cut short";
            return -1;
        }
        uint32_t len = be_get_u4(data + at + 5);
        if (size - at - 9 < len) {
            r->offset = at;
            r->what = "a record longer than the file";
            return -1;
        }
        if (data[at] == 0x0C || data[at] == 0x1C) {
            b.p = data + at + 9;
            b.end = b.p + len;
            int rc = heap_body(&b, trace_of, ctx);
            if (rc != 0)
                return rc;
        }
        at += 9 + (size_t)len;
    }
    return 0;
}

int hpt_patch_traces(unsigned char *data, size_t size, hpt_trace_fn trace_of, void *ctx, hpt_result *r)
{
    return patch_all(data, size, trace_of, ctx, r, 0);
}

int hpt_patch_file(int fd, hpt_trace_fn trace_of, void *ctx, hpt_result *r)
{
    memset(r, 0, sizeof *r);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -3;
    if (st.st_size == 0)
        return 1;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -3;
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    int rc = patch_all(m, (size_t)st.st_size, trace_of, ctx, r, 1);
    int saved = errno;
    munmap(m, (size_t)st.st_size);
    errno = saved;
    return rc;
}
