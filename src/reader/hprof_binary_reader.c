/*
 * hprof_binary_reader: HPROF's binary format (format=b, "JAVA PROFILE
 * 1.0.1/1.0.2") into hprof_data.
 *
 * The file: the format name and a NUL, u4 identifier size (4 or 8), u8
 * milliseconds since the epoch, then records: u1 tag, u4 microseconds since
 * the header's time, u4 body length, body; numbers big-endian. Every read
 * goes through a cursor bounded by its record (or sub-record), so a length
 * that lies or a file cut short is an error naming the offset, never a read
 * past the end.
 *
 * Names, classes and frames may come in any order before the traces that
 * use them are resolved, so the pass keeps raw records (file offsets) and
 * stack traces are made into frames after the whole file was read. Heap
 * dump segments are walked to count classes, objects and roots, and to take
 * each class's loader from its CLASS DUMP; the last heap dump's segments are
 * walked once more for the class of each loader object (an instance may come
 * before the CLASS DUMP that names it as a loader).
 */
#include "hprof_data.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/tables.h"

enum {
    TAG_UTF8 = 0x01, TAG_LOAD_CLASS = 0x02, TAG_UNLOAD_CLASS = 0x03, TAG_FRAME = 0x04,
    TAG_TRACE = 0x05, TAG_ALLOC_SITES = 0x06, TAG_HEAP_SUMMARY = 0x07, TAG_START_THREAD = 0x0A,
    TAG_END_THREAD = 0x0B, TAG_HEAP_DUMP = 0x0C, TAG_CPU_SAMPLES = 0x0D,
    TAG_CONTROL_SETTINGS = 0x0E, TAG_HEAP_DUMP_SEGMENT = 0x1C, TAG_HEAP_DUMP_END = 0x2C
};

/* A bounded view of the bytes; reading past `end` sets `short_by`. */
typedef struct cursor {
    const unsigned char *p, *end;
    int                  overrun;
} cursor;

static int take(cursor *c, size_t n, const unsigned char **out)
{
    if (c->overrun || (size_t)(c->end - c->p) < n) {
        c->overrun = 1;
        return -1;
    }
    *out = c->p;
    c->p += n;
    return 0;
}

static uint64_t read_be(cursor *c, size_t n)
{
    const unsigned char *b;
    uint64_t v = 0;
    if (take(c, n, &b) != 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | b[i];
    return v;
}

static uint32_t u4(cursor *c) { return (uint32_t)read_be(c, 4); }
static uint16_t u2(cursor *c) { return (uint16_t)read_be(c, 2); }
static uint8_t  u1(cursor *c) { return (uint8_t)read_be(c, 1); }

typedef struct raw_frame {
    uint64_t name_id, signature_id, file_id;
    uint32_t class_serial;
    int32_t  line;
} raw_frame;

typedef struct raw_trace {
    uint32_t serial, thread, nframes;
    size_t   frame_ids_at;          /* offset of the frame ids in the file */
} raw_trace;

typedef struct raw_thread {
    uint32_t serial;
    uint64_t object_id, name_id, group_id;
} raw_thread;

/* A LOAD CLASS record, and what the last heap dump's CLASS DUMP said. */
typedef struct raw_class {
    uint64_t    id;
    uint32_t    trace;
    const char *name;             /* Java form */
} raw_class;

typedef struct raw_class_dump {
    uint64_t id, loader;
} raw_class_dump;

typedef struct byte_range {
    size_t start, end;
} byte_range;

typedef struct binary_reader {
    hprof_data          *d;
    const unsigned char *bytes;
    size_t               len;
    uint32_t             id_size;
    char                *err;
    size_t               errlen;

    hd_index  *strings;             /* UTF8 id -> position in names */
    const char **names;
    uint32_t   nnames, names_cap;
    hd_index  *classes;             /* class serial -> position in class_names */
    const char **class_names;
    uint32_t   nclasses, classes_cap;
    hd_index  *frame_index;         /* frame id -> position in frames */
    raw_frame *frames;
    uint32_t   nframes, frames_cap;
    raw_trace *traces;
    uint32_t   ntraces, traces_cap;
    raw_thread *threads;
    uint32_t   nthreads, threads_cap;
    uint32_t   *ended;
    uint32_t   nended, ended_cap;
    uint32_t   max_time_us;
    raw_class *loads;               /* LOAD CLASS records */
    uint32_t   nloads, loads_cap;
    hd_index  *load_by_id;          /* class object id -> position in loads */
    raw_class_dump *class_dumps;    /* the last heap dump's */
    uint32_t   nclass_dumps, class_dumps_cap;
    hd_index  *class_dump_by_id;
    byte_range *segments;           /* the last heap dump's sub-records */
    uint32_t   nsegments, segments_cap;
    int        in_heap_dump;        /* segments seen since the last HEAP DUMP END */
    hd_index  *loader_ids;          /* pass 2: loader object ids wanted */
} binary_reader;

enum { PASS_COUNT, PASS_LOADERS };

/* An error at a file offset, said with the file's name. */
#define fail(r, offset, ...) hd_fail((r)->d, (r)->err, (r)->errlen, 1, (offset), __VA_ARGS__)

static int out_of_memory(binary_reader *r)
{
    snprintf(r->err, r->errlen, "%s: out of memory", r->d->path);
    return -1;
}

static int push(binary_reader *r, void **array, uint32_t *n, uint32_t *cap, size_t elem,
                const void *item)
{
    return hd_push(array, n, cap, elem, item) == 0 ? 0 : out_of_memory(r);
}

static uint64_t id(binary_reader *r, cursor *c)
{
    return read_be(c, r->id_size);
}

static const char *name_of(const binary_reader *r, uint64_t name_id)
{
    uint32_t at;
    return hd_map_get(r->strings, name_id, &at) == 0 ? r->names[at] : NULL;
}

/* LOAD CLASS names are the JVM's ("java/lang/String", "[I"): shown in Java form. */
static const char *java_class_name(binary_reader *r, const char *internal)
{
    char buf[1024];
    if (internal[0] == '[') {
        if (signature_to_java_name(internal, buf, sizeof buf) != 0)
            snprintf(buf, sizeof buf, "%s", internal);
    } else {
        snprintf(buf, sizeof buf, "%s", internal);
        for (char *p = buf; *p; p++)
            if (*p == '/')
                *p = '.';
    }
    return hd_strndup(r->d, buf, strlen(buf));
}

static const char *class_of(const binary_reader *r, uint32_t serial)
{
    uint32_t at;
    return hd_map_get(r->classes, serial, &at) == 0 ? r->class_names[at] : NULL;
}

/* ------------------------------------------------------------ records */

static int read_utf8(binary_reader *r, cursor *c, size_t body_len)
{
    uint64_t sid = id(r, c);
    const unsigned char *text;
    if (take(c, body_len - r->id_size, &text) != 0)
        return 0;                    /* reported as an overrun by the caller */
    const char *s = hd_strndup(r->d, (const char *)text, body_len - r->id_size);
    if (s == NULL ||
        push(r, (void **)&r->names, &r->nnames, &r->names_cap, sizeof *r->names, &s) != 0 ||
        hd_map_put(&r->strings, sid, r->nnames - 1) != 0)
        return out_of_memory(r);
    return 0;
}

static int read_load_class(binary_reader *r, cursor *c, size_t offset)
{
    uint32_t serial = u4(c);
    uint64_t class_id = id(r, c);
    uint32_t trace = u4(c);
    uint64_t name_id = id(r, c);
    if (c->overrun)
        return 0;
    const char *internal = name_of(r, name_id);
    if (internal == NULL)
        return fail(r, offset, "LOAD CLASS %u names string id 0x%llx, not defined before it", serial,
                    (unsigned long long)name_id);
    const char *name = java_class_name(r, internal);
    if (name == NULL ||
        push(r, (void **)&r->class_names, &r->nclasses, &r->classes_cap, sizeof *r->class_names,
             &name) != 0 ||
        hd_map_put(&r->classes, serial, r->nclasses - 1) != 0)
        return out_of_memory(r);
    raw_class load = { class_id, trace, name };
    if (push(r, (void **)&r->loads, &r->nloads, &r->loads_cap, sizeof load, &load) != 0 ||
        hd_map_put(&r->load_by_id, class_id, r->nloads - 1) != 0)
        return out_of_memory(r);
    return 0;
}

static int read_frame(binary_reader *r, cursor *c)
{
    uint64_t frame_id = id(r, c);
    raw_frame f;
    f.name_id = id(r, c);
    f.signature_id = id(r, c);
    f.file_id = id(r, c);
    f.class_serial = u4(c);
    f.line = (int32_t)u4(c);
    if (c->overrun)
        return 0;
    if (push(r, (void **)&r->frames, &r->nframes, &r->frames_cap, sizeof f, &f) != 0 ||
        hd_map_put(&r->frame_index, frame_id, r->nframes - 1) != 0)
        return out_of_memory(r);
    return 0;
}

static int read_trace(binary_reader *r, cursor *c, size_t offset)
{
    raw_trace t;
    t.serial = u4(c);
    t.thread = u4(c);
    t.nframes = u4(c);
    t.frame_ids_at = (size_t)(c->p - r->bytes);
    if (c->overrun)
        return 0;
    if ((uint64_t)t.nframes * r->id_size != (uint64_t)(c->end - c->p))
        return fail(r, offset, "STACK TRACE %u says %u frames, its record holds %zu bytes of ids",
                    t.serial, t.nframes, (size_t)(c->end - c->p));
    c->p = c->end;
    return push(r, (void **)&r->traces, &r->ntraces, &r->traces_cap, sizeof t, &t);
}

static int read_start_thread(binary_reader *r, cursor *c)
{
    raw_thread t;
    t.serial = u4(c);
    t.object_id = id(r, c);
    u4(c);
    t.name_id = id(r, c);
    t.group_id = id(r, c);
    id(r, c);
    if (c->overrun)
        return 0;
    return push(r, (void **)&r->threads, &r->nthreads, &r->threads_cap, sizeof t, &t);
}

static int read_end_thread(binary_reader *r, cursor *c)
{
    uint32_t serial = u4(c);
    if (c->overrun)
        return 0;
    return push(r, (void **)&r->ended, &r->nended, &r->ended_cap, sizeof serial, &serial);
}

static int read_cpu_samples(binary_reader *r, cursor *c, size_t offset)
{
    hd_section *s = &r->d->sections[HD_CPU_SAMPLES];
    hd_section_restart(s);
    s->total = u4(c);
    uint32_t n = u4(c);
    if (!c->overrun && (uint64_t)n * 8 != (uint64_t)(c->end - c->p))
        return fail(r, offset, "CPU SAMPLES says %u traces, its record holds %zu bytes", n,
                    (size_t)(c->end - c->p));
    for (uint32_t i = 0; i < n && !c->overrun; i++) {
        hd_row row = { 0, NULL, { 0, 0, 0, 0 } };
        row.values[0] = u4(c);
        row.trace = u4(c);
        if (hd_add_row(s, &row) != 0)
            return out_of_memory(r);
    }
    return 0;
}

static int read_alloc_sites(binary_reader *r, cursor *c, size_t offset)
{
    hd_section *s = &r->d->sections[HD_SITES];
    hd_section_restart(s);
    u2(c);
    u4(c);
    s->total = u4(c);
    s->total_live_objs = u4(c);
    s->total_alloc_bytes = (int64_t)read_be(c, 8);
    s->total_alloc_objs = (int64_t)read_be(c, 8);
    uint32_t n = u4(c);
    if (!c->overrun && (uint64_t)n * 25 != (uint64_t)(c->end - c->p))
        return fail(r, offset, "ALLOC SITES says %u sites, its record holds %zu bytes", n,
                    (size_t)(c->end - c->p));
    for (uint32_t i = 0; i < n && !c->overrun; i++) {
        hd_row row = { 0, NULL, { 0, 0, 0, 0 } };
        u1(c);
        uint32_t class_serial = u4(c);
        row.trace = u4(c);
        for (int v = 0; v < 4; v++)
            row.values[v] = u4(c);
        row.class_name = class_of(r, class_serial);
        if (row.class_name == NULL && !c->overrun)
            return fail(r, offset, "ALLOC SITES names class %u, which has no LOAD CLASS before it",
                        class_serial);
        if (hd_add_row(s, &row) != 0)
            return out_of_memory(r);
    }
    return 0;
}

static void read_heap_summary(binary_reader *r, cursor *c)
{
    hprof_data *d = r->d;
    d->heap_live_bytes = u4(c);
    d->heap_live_objs = u4(c);
    d->heap_alloc_bytes = (int64_t)read_be(c, 8);
    d->heap_alloc_objs = (int64_t)read_be(c, 8);
    d->has_heap_summary = !c->overrun;
}

/* ------------------------------------------------------------ heap dumps */

static size_t value_size(const binary_reader *r, uint8_t type)
{
    static const uint8_t sizes[12] = { 0, 0, 0, 0, 1, 2, 4, 8, 1, 2, 4, 8 };
    if (type == 2)
        return r->id_size;
    return type < 12 ? sizes[type] : 0;
}

static int skip_values(cursor *c, uint32_t count, size_t each)
{
    const unsigned char *b;
    if (each == 0 || (uint64_t)count * each > (uint64_t)(c->end - c->p)) {
        c->overrun = 1;
        return -1;
    }
    return take(c, (size_t)count * each, &b);
}

/* CLASS DUMP after its tag: fixed part, constant pool, statics, fields.
 * PASS_COUNT keeps the class's loader. */
static int read_class_dump(binary_reader *r, cursor *c, int pass)
{
    const unsigned char *b;
    raw_class_dump dump;
    dump.id = id(r, c);
    u4(c);
    id(r, c);
    dump.loader = id(r, c);
    if (take(c, r->id_size * 4u + 4u, &b) != 0)
        return -1;
    if (pass == PASS_COUNT &&
        (push(r, (void **)&r->class_dumps, &r->nclass_dumps, &r->class_dumps_cap, sizeof dump, &dump) != 0 ||
         hd_map_put(&r->class_dump_by_id, dump.id, r->nclass_dumps - 1) != 0))
        return -2;
    uint16_t n = u2(c);
    for (uint16_t i = 0; i < n && !c->overrun; i++) {
        u2(c);
        uint8_t type = u1(c);
        skip_values(c, 1, value_size(r, type));
    }
    n = u2(c);
    for (uint16_t i = 0; i < n && !c->overrun; i++) {
        id((binary_reader *)r, c);
        uint8_t type = u1(c);
        skip_values(c, 1, value_size(r, type));
    }
    n = u2(c);
    return skip_values(c, n, r->id_size + 1u);
}

/* An INSTANCE DUMP after its tag; PASS_LOADERS keeps the class of a loader. */
static int read_instance(binary_reader *r, cursor *c, int pass)
{
    uint64_t object = id(r, c);
    u4(c);
    uint64_t class_id = id(r, c);
    uint32_t at;
    if (pass == PASS_LOADERS && !c->overrun && hd_map_get(r->loader_ids, object, &at) == 0) {
        const char *name = hd_map_get(r->load_by_id, class_id, &at) == 0 ? r->loads[at].name : "?";
        if (hd_add_loader(r->d, object, name) != 0)
            return -2;
    }
    return skip_values(c, u4(c), 1);
}

/* One sub-record, counted in PASS_COUNT; 1 if its tag is not known (the
 * walk stops), -2 when out of memory. */
static int count_sub_record(binary_reader *r, cursor *c, int pass)
{
    hprof_data *d = pass == PASS_COUNT ? r->d : NULL;
    uint64_t ignored = 0;
    uint64_t *roots = d ? &d->heap_roots : &ignored, *classes = d ? &d->heap_classes : &ignored;
    uint64_t *instances = d ? &d->heap_instances : &ignored, *obj_arrays = d ? &d->heap_obj_arrays : &ignored;
    uint64_t *prim_arrays = d ? &d->heap_prim_arrays : &ignored;
    uint8_t tag = u1(c);
    uint32_t idn = r->id_size;
    switch (tag) {
    case 0xFF: case 0x05: case 0x07: (*roots)++; return skip_values(c, 1, idn);
    case 0x01:                       (*roots)++; return skip_values(c, 2, idn);
    case 0x02: case 0x03: case 0x08: (*roots)++; return skip_values(c, 1, idn + 8u);
    case 0x04: case 0x06:            (*roots)++; return skip_values(c, 1, idn + 4u);
    case 0x20: (*classes)++; return read_class_dump(r, c, pass);
    case 0x21: (*instances)++; return read_instance(r, c, pass);
    case 0x22: {
        (*obj_arrays)++;
        skip_values(c, 1, idn + 4u);
        uint32_t n = u4(c);
        skip_values(c, 1, idn);
        return skip_values(c, n, idn);
    }
    case 0x23: {
        (*prim_arrays)++;
        skip_values(c, 1, idn + 4u);
        uint32_t n = u4(c);
        uint8_t type = u1(c);
        if (!c->overrun && (type == 2 || value_size(r, type) == 0))
            return 1;
        return skip_values(c, n, value_size(r, type));
    }
    default:
        return 1;
    }
}

/* A heap dump's body (a HEAP DUMP record or one segment): counted, and
 * kept for PASS_LOADERS. -1 when out of memory. */
static int count_heap_dump(binary_reader *r, cursor *c)
{
    hprof_data *d = r->d;
    if (!r->in_heap_dump) {              /* a new heap dump: the last one's classes count */
        r->in_heap_dump = 1;
        r->nsegments = 0;
        r->nclass_dumps = 0;
        hd_map_free(r->class_dump_by_id);
        r->class_dump_by_id = NULL;
    }
    byte_range body = { (size_t)(c->p - r->bytes), (size_t)(c->end - r->bytes) };
    if (push(r, (void **)&r->segments, &r->nsegments, &r->segments_cap, sizeof body, &body) != 0)
        return -1;
    if (d->heap_dump_note)
        return 0;
    while (c->p < c->end && !c->overrun) {
        size_t at = (size_t)(c->p - r->bytes);
        int rc = count_sub_record(r, c, PASS_COUNT);
        if (rc == -2)
            return out_of_memory(r);
        if (rc != 0 || c->overrun) {
            char note[200];
            snprintf(note, sizeof note, "heap dump counts stop at offset %zu: %s", at,
                     rc == 1 ? "a sub-record of a kind not counted" : "a sub-record runs past its segment");
            d->heap_dump_note = hd_strndup(d, note, strlen(note));
            return 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the pass */

static int read_record(binary_reader *r, uint8_t tag, cursor *c, size_t offset)
{
    size_t len = (size_t)(c->end - c->p);
    switch (tag) {
    case TAG_UTF8:
        if (len < r->id_size)
            return fail(r, offset, "UTF8 record shorter than an id");
        return read_utf8(r, c, len);
    case TAG_LOAD_CLASS:       return read_load_class(r, c, offset);
    case TAG_FRAME:            return read_frame(r, c);
    case TAG_TRACE:            return read_trace(r, c, offset);
    case TAG_START_THREAD:     return read_start_thread(r, c);
    case TAG_END_THREAD:       return read_end_thread(r, c);
    case TAG_CPU_SAMPLES:      return read_cpu_samples(r, c, offset);
    case TAG_ALLOC_SITES:      return read_alloc_sites(r, c, offset);
    case TAG_HEAP_SUMMARY:     read_heap_summary(r, c); return 0;
    case TAG_CONTROL_SETTINGS:
        u4(c);
        r->d->depth_option = u2(c);
        return 0;
    case TAG_HEAP_DUMP: {
        r->d->heap_dumps++;
        r->in_heap_dump = 0;             /* a whole heap dump in one record */
        int rc = count_heap_dump(r, c);
        r->in_heap_dump = 0;
        c->p = c->end;
        return rc;
    }
    case TAG_HEAP_DUMP_SEGMENT: {
        int rc = count_heap_dump(r, c);
        c->p = c->end;
        return rc;
    }
    case TAG_HEAP_DUMP_END:
        r->d->heap_dumps++;
        r->in_heap_dump = 0;
        return 0;
    case TAG_UNLOAD_CLASS:
        c->p = c->end;
        return 0;
    default:
        return fail(r, offset, "unknown record tag 0x%02x (the file is damaged or not HPROF)", tag);
    }
}

static int read_header(binary_reader *r, size_t *at)
{
    const unsigned char *nul = memchr(r->bytes, '\0', r->len < 64 ? r->len : 64);
    if (nul == NULL || (strcmp((const char *)r->bytes, "JAVA PROFILE 1.0.1") != 0 &&
                        strcmp((const char *)r->bytes, "JAVA PROFILE 1.0.2") != 0))
        return fail(r, 0, "not an HPROF binary file (no \"JAVA PROFILE 1.0.1\" or \"1.0.2\" header)");
    cursor c = { nul + 1, r->bytes + r->len, 0 };
    r->id_size = u4(&c);
    r->d->start_ms = (int64_t)read_be(&c, 8);
    if (c.overrun)
        return fail(r, r->len, "the file ends inside its header");
    if (r->id_size != 4 && r->id_size != 8)
        return fail(r, (size_t)(nul + 1 - r->bytes), "identifier size %u (want 4 or 8)", r->id_size);
    *at = (size_t)(c.p - r->bytes);
    return 0;
}

static int read_records(binary_reader *r)
{
    size_t at = 0;
    if (read_header(r, &at) != 0)
        return -1;
    int last_tag = -1;
    size_t last_at = at;
    while (at < r->len) {
        cursor head = { r->bytes + at, r->bytes + r->len, 0 };
        uint8_t tag = u1(&head);
        uint32_t time_us = u4(&head);
        uint32_t len = u4(&head);
        if (head.overrun)
            return fail(r, at, "the file ends inside a record header (truncated file?)");
        if (len > (size_t)(head.end - head.p))
            return fail(r, at, "record 0x%02x says %u bytes, only %zu remain (truncated file?)", tag,
                        len, (size_t)(head.end - head.p));
        cursor body = { head.p, head.p + len, 0 };
        if (read_record(r, tag, &body, at) != 0)
            return -1;
        if (body.overrun)
            return fail(r, at, "record 0x%02x is shorter (%u bytes) than what it says it holds", tag, len);
        if (time_us > r->max_time_us)
            r->max_time_us = time_us;
        last_tag = tag;
        last_at = at;
        at = (size_t)(body.end - r->bytes);
    }
    /* Binary HPROF has no end mark, but a whole file never ends before the
     * records that use what it defined (a writer killed between records):
     * heap dump segments end with HEAP DUMP END; names, classes, frames and
     * traces come before the sections that name them. */
    if (last_tag == TAG_HEAP_DUMP_SEGMENT)
        return fail(r, last_at, "the heap dump's segments stop without a HEAP DUMP END record (truncated file?)");
    if (last_tag == TAG_UTF8 || last_tag == TAG_LOAD_CLASS || last_tag == TAG_FRAME || last_tag == TAG_TRACE)
        return fail(r, last_at, "the file ends with a %s record that no record after it uses (truncated file?)",
                    last_tag == TAG_UTF8 ? "UTF8" : last_tag == TAG_LOAD_CLASS ? "LOAD CLASS"
                    : last_tag == TAG_FRAME ? "FRAME" : "TRACE");
    return 0;
}

/* ------------------------------------------------------------ resolving */

static const char *string_or(const binary_reader *r, uint64_t sid, const char *missing)
{
    const char *s = name_of(r, sid);
    return s ? s : missing;
}

static int resolve_threads(binary_reader *r)
{
    for (uint32_t i = 0; i < r->nthreads; i++) {
        const raw_thread *t = &r->threads[i];
        hd_thread th = { t->serial, string_or(r, t->name_id, "?"), string_or(r, t->group_id, ""),
                         t->object_id, 0 };
        if (hd_add_thread(r->d, &th) != 0)
            return out_of_memory(r);
    }
    for (uint32_t i = 0; i < r->nended; i++) {
        hd_thread *t = hd_find_thread(r->d, r->ended[i]);
        if (t)
            t->ended = 1;
    }
    return 0;
}

static int resolve_frame(binary_reader *r, uint64_t frame_id, const raw_trace *t)
{
    uint32_t at;
    if (hd_map_get(r->frame_index, frame_id, &at) != 0)
        return fail(r, t->frame_ids_at, "STACK TRACE %u names frame 0x%llx, which no STACK FRAME defines",
                    t->serial, (unsigned long long)frame_id);
    const raw_frame *f = &r->frames[at];
    const char *file = string_or(r, f->file_id, "");
    hd_frame out = {
        class_of(r, f->class_serial), string_or(r, f->name_id, "?"),
        string_or(r, f->signature_id, ""), strcmp(file, "Unknown") == 0 ? "" : file,
        f->line > 0 ? f->line : f->line == -3 ? PROFILE_LINE_NATIVE : PROFILE_LINE_UNKNOWN,
        PROFILE_RUN_UNKNOWN
    };
    if (out.class_name == NULL)
        out.class_name = "<unknown class>";
    return hd_add_frame(r->d, &out) == 0 ? 0 : out_of_memory(r);
}

static int resolve_traces(binary_reader *r)
{
    for (uint32_t i = 0; i < r->ntraces; i++) {
        const raw_trace *t = &r->traces[i];
        if (hd_begin_trace(r->d, t->serial, t->thread) != 0)
            return out_of_memory(r);
        cursor c = { r->bytes + t->frame_ids_at, r->bytes + t->frame_ids_at + (size_t)t->nframes * r->id_size, 0 };
        for (uint32_t k = 0; k < t->nframes; k++)
            if (resolve_frame(r, id(r, &c), t) != 0)
                return -1;
    }
    return 0;
}

/* hprof_data's classes: every LOAD CLASS record, with the loader its
 * CLASS DUMP in the last heap dump names, and the classes of those loaders
 * from a second walk of that dump (where counting stopped, as far). */
static int resolve_classes(binary_reader *r)
{
    uint32_t at;
    for (uint32_t i = 0; i < r->nclass_dumps; i++)
        if (r->class_dumps[i].loader && hd_map_put(&r->loader_ids, r->class_dumps[i].loader, 0) != 0)
            return out_of_memory(r);
    for (uint32_t i = 0; r->loader_ids && i < r->nsegments; i++) {
        cursor c = { r->bytes + r->segments[i].start, r->bytes + r->segments[i].end, 0 };
        int rc = 0;
        while (rc == 0 && c.p < c.end && !c.overrun)
            rc = count_sub_record(r, &c, PASS_LOADERS);
        if (rc == -2)
            return out_of_memory(r);
        if (rc != 0 || c.overrun)
            break;
    }
    for (uint32_t i = 0; i < r->nloads; i++) {
        const raw_class *load = &r->loads[i];
        /* One class, once: HotSpot before JDK 21 writes an array class's
         * LOAD CLASS twice. The last one counts, as in load_by_id. */
        if (hd_map_get(r->load_by_id, load->id, &at) == 0 && at != i)
            continue;
        int dumped = hd_map_get(r->class_dump_by_id, load->id, &at) == 0;
        hd_class c = { load->name, load->trace, dumped ? r->class_dumps[at].loader : 0, dumped };
        if (hd_add_class(r->d, &c) != 0)
            return out_of_memory(r);
    }
    return 0;
}

static void free_reader(binary_reader *r)
{
    hd_map_free(r->load_by_id);
    hd_map_free(r->class_dump_by_id);
    hd_map_free(r->loader_ids);
    free(r->loads);
    free(r->class_dumps);
    free(r->segments);
    hd_map_free(r->strings);
    hd_map_free(r->classes);
    hd_map_free(r->frame_index);
    free(r->names);
    free(r->class_names);
    free(r->frames);
    free(r->traces);
    free(r->threads);
    free(r->ended);
}

hprof_data *hprof_binary_parse(const char *path, const unsigned char *bytes, size_t len,
                               char *err, size_t errlen)
{
    binary_reader r;
    memset(&r, 0, sizeof r);
    r.bytes = bytes;
    r.len = len;
    r.err = err;
    r.errlen = errlen;
    r.d = hprof_data_new(path, "HPROF binary");
    if (r.d == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    int rc = read_records(&r);
    if (rc == 0)
        rc = resolve_threads(&r);
    if (rc == 0)
        rc = resolve_traces(&r);
    if (rc == 0)
        rc = resolve_classes(&r);
    if (rc == 0)
        r.d->duration_ms = r.max_time_us / 1000;
    free_reader(&r);
    if (rc != 0) {
        hprof_data_free(r.d);
        return NULL;
    }
    return r.d;
}
