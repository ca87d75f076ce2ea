/* hprof_binary.c: see hprof_binary.h. */
#include "hprof_binary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECORD_HEADER_SIZE 9u     /* u1 tag, u4 time, u4 body length */
#define FILE_HEADER        "JAVA PROFILE 1.0.2"

/* Fixed parts of the heap dump sub-records, tag included. */
#define INSTANCE_HEAD   (1u + HB_ID_SIZE + 4u + HB_ID_SIZE + 4u)
#define OBJ_ARRAY_HEAD  (1u + HB_ID_SIZE + 4u + 4u + HB_ID_SIZE)
#define PRIM_ARRAY_HEAD (1u + HB_ID_SIZE + 4u + 4u + 1u)
/* id, trace, super, loader, signers, protection domain, 2 reserved, instance
 * size, constant pool count, static count. */
#define CLASS_HEAD      (1u + HB_ID_SIZE + 4u + 6u * HB_ID_SIZE + 4u + 2u + 2u)

/* ---- big-endian encoding; each returns the byte after what it wrote ---- */

static unsigned char *put_u1(unsigned char *p, uint8_t v)
{
    *p = v;
    return p + 1;
}

static unsigned char *put_u2(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
    return p + 2;
}

static unsigned char *put_u4(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
    return p + 4;
}

static unsigned char *put_u8(unsigned char *p, uint64_t v)
{
    p = put_u4(p, (uint32_t)(v >> 32));
    return put_u4(p, (uint32_t)v);
}

static unsigned char *put_id(unsigned char *p, uint64_t id)
{
    return put_u8(p, id);
}

/* The low `size` bytes of bits, most significant first: a value of any type. */
static unsigned char *put_sized(unsigned char *p, uint64_t bits, size_t size)
{
    for (size_t i = size; i > 0; i--)
        *p++ = (unsigned char)(bits >> (8 * (i - 1)));
    return p;
}

uint8_t hb_type_of_descriptor(char c)
{
    switch (c) {
    case 'Z': return HB_BOOLEAN;
    case 'C': return HB_CHAR;
    case 'F': return HB_FLOAT;
    case 'D': return HB_DOUBLE;
    case 'B': return HB_BYTE;
    case 'S': return HB_SHORT;
    case 'I': return HB_INT;
    case 'J': return HB_LONG;
    case 'L': case '[': return HB_OBJECT;
    default:  return 0;
    }
}

size_t hb_type_size(int type)
{
    switch (type) {
    case HB_OBJECT:  return HB_ID_SIZE;
    case HB_BOOLEAN:
    case HB_BYTE:    return 1;
    case HB_CHAR:
    case HB_SHORT:   return 2;
    case HB_FLOAT:
    case HB_INT:     return 4;
    case HB_DOUBLE:
    case HB_LONG:    return 8;
    default:         return 0;
    }
}

/* ---- errors and raw output ---- */

/* Records the first error only: later ones are usually its consequences. */
static int fail(hb_writer *w, int err)
{
    if (w->error == 0)
        w->error = err;
    return -1;
}

/* The guard at the top of every call: nothing is written after an error
 * (the file is already incomplete), nor after hb_close. */
static int usable(hb_writer *w)
{
    if (w->error != 0)
        return 0;
    if (w->out == NULL) {
        fail(w, EBADF);
        return 0;
    }
    return 1;
}

static int write_out(hb_writer *w, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    errno = 0;
    if (fwrite(p, 1, n, w->out) != n)
        return fail(w, errno != 0 ? errno : EIO);   /* fmemopen's short write leaves errno 0 */
    w->bytes += n;
    return 0;
}

static uint64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Microseconds since the header's time. The field is a u4, so it wraps after
 * about 71 minutes; the format says so and readers ignore it. A clock set
 * back before the header gives 0 rather than a huge value. */
static uint32_t record_time(const hb_writer *w)
{
    uint64_t now = w->clock_us ? w->clock_us() : realtime_us();
    uint64_t start = w->start_ms * 1000u;
    return now > start ? (uint32_t)(now - start) : 0;
}

static int record_header(hb_writer *w, uint8_t tag, uint32_t len)
{
    unsigned char b[RECORD_HEADER_SIZE], *p = b;
    p = put_u1(p, tag);
    p = put_u4(p, record_time(w));
    p = put_u4(p, len);
    return write_out(w, b, (size_t)(p - b));
}

/* ---- heap dump segments ---- */

static int flush_segment(hb_writer *w)
{
    if (w->seg_len == 0)
        return 0;       /* an empty segment would be legal but pointless */
    if (record_header(w, HB_TAG_HEAP_DUMP_SEGMENT, (uint32_t)w->seg_len) != 0 ||
        write_out(w, w->seg, w->seg_len) != 0)
        return -1;
    w->seg_len = 0;
    return 0;
}

/* Bytes of the sub-record being written: into the segment buffer (sub_begin
 * made room for the whole sub-record), or to the file when streaming. */
static int emit(hb_writer *w, const void *p, size_t n)
{
    if (w->streaming)
        return write_out(w, p, n);
    if (n > w->seg_cap - w->seg_len)
        return fail(w, EINVAL);     /* a size computed wrong here; never silently overrun */
    memcpy(w->seg + w->seg_len, p, n);
    w->seg_len += n;
    return 0;
}

/* Starts a sub-record of `size` bytes (tag included). Knowing the size up
 * front is what lets a sub-record stay whole: it goes in the current segment
 * if it fits, else in the next one, else (bigger than any buffer) in a
 * segment of its own whose header is written now and body streamed. */
static int sub_begin(hb_writer *w, uint64_t size)
{
    if (!usable(w))
        return -1;
    if (!w->in_heap)
        return fail(w, EINVAL);
    if (w->open_tag != 0)
        return fail(w, EINVAL);     /* the last INSTANCE/OBJ ARRAY DUMP is short of values */
    if (size > UINT32_MAX)
        return fail(w, EOVERFLOW);  /* cannot fit in any segment's u4 length */
    if (w->seg_len + size > w->seg_cap && flush_segment(w) != 0)
        return -1;
    if (size > w->seg_cap) {
        if (record_header(w, HB_TAG_HEAP_DUMP_SEGMENT, (uint32_t)size) != 0)
            return -1;
        w->streaming = 1;
    }
    return 0;
}

static void sub_end(hb_writer *w)
{
    w->open_tag = 0;
    w->pending = 0;
    w->streaming = 0;
}

/* A sub-record written in one piece (the roots). */
static int sub_whole(hb_writer *w, const unsigned char *rec, size_t len)
{
    if (sub_begin(w, len) != 0)
        return -1;
    int rc = emit(w, rec, len);
    sub_end(w);
    return rc;
}

/* Top-level record header. Inside a heap dump the segment so far is written
 * first, so records stay in the order they were made; a sub-record still
 * waiting for values cannot be interrupted. */
static int top_record(hb_writer *w, uint8_t tag, uint64_t len)
{
    if (!usable(w))
        return -1;
    if (w->in_heap) {
        if (w->open_tag != 0)
            return fail(w, EINVAL);
        if (flush_segment(w) != 0)
            return -1;
    }
    if (len > UINT32_MAX)
        return fail(w, EOVERFLOW);
    return record_header(w, tag, (uint32_t)len);
}

static int whole_record(hb_writer *w, uint8_t tag, const unsigned char *body, size_t len)
{
    if (top_record(w, tag, len) != 0)
        return -1;
    return write_out(w, body, len);
}

/* ---- file ---- */

int hb_open(hb_writer *w, FILE *out, uint64_t start_ms, size_t segment_capacity)
{
    memset(w, 0, sizeof *w);
    w->start_ms = start_ms;
    w->clock_us = realtime_us;
    if (out == NULL)
        return fail(w, EINVAL);
    w->out = out;

    size_t cap = segment_capacity ? segment_capacity : HB_DEFAULT_SEGMENT;
    if ((uint64_t)cap > UINT32_MAX)
        cap = UINT32_MAX;           /* a segment's length is a u4 */
    w->seg = malloc(cap);
    if (w->seg == NULL)
        return fail(w, ENOMEM);
    w->seg_cap = cap;

    unsigned char b[sizeof FILE_HEADER + 4 + 8], *p = b;
    memcpy(p, FILE_HEADER, sizeof FILE_HEADER);     /* with its NUL, which the format wants */
    p += sizeof FILE_HEADER;
    p = put_u4(p, HB_ID_SIZE);
    p = put_u8(p, start_ms);
    return write_out(w, b, (size_t)(p - b));
}

int hb_close(hb_writer *w)
{
    if (w->out == NULL)
        return w->error ? -1 : 0;   /* already closed, or hb_open had no file */
    if (w->error == 0 && w->in_heap)
        hb_heap_end(w);
    if (w->error == 0) {
        errno = 0;
        if (fflush(w->out) != 0)
            fail(w, errno != 0 ? errno : EIO);
    }
    free(w->seg);
    w->seg = NULL;
    w->seg_cap = w->seg_len = 0;
    w->out = NULL;
    return w->error ? -1 : 0;
}

/* ---- top-level records ---- */

int hb_utf8(hb_writer *w, uint64_t id, const char *s)
{
    if (s == NULL)
        return fail(w, EINVAL);
    size_t len = strlen(s);
    unsigned char b[HB_ID_SIZE];
    put_id(b, id);
    if (top_record(w, HB_TAG_UTF8, (uint64_t)HB_ID_SIZE + len) != 0 ||
        write_out(w, b, sizeof b) != 0)
        return -1;
    return write_out(w, s, len);
}

int hb_load_class(hb_writer *w, uint32_t class_serial, uint64_t class_id, uint32_t trace_serial,
                  uint64_t name_id)
{
    unsigned char b[4 + HB_ID_SIZE + 4 + HB_ID_SIZE], *p = b;
    p = put_u4(p, class_serial);
    p = put_id(p, class_id);
    p = put_u4(p, trace_serial);
    p = put_id(p, name_id);
    return whole_record(w, HB_TAG_LOAD_CLASS, b, (size_t)(p - b));
}

int hb_stack_frame(hb_writer *w, uint64_t frame_id, uint64_t method_name_id,
                   uint64_t method_sig_id, uint64_t source_file_id, uint32_t class_serial,
                   int32_t line)
{
    unsigned char b[4 * HB_ID_SIZE + 4 + 4], *p = b;
    p = put_id(p, frame_id);
    p = put_id(p, method_name_id);
    p = put_id(p, method_sig_id);
    p = put_id(p, source_file_id);
    p = put_u4(p, class_serial);
    p = put_u4(p, (uint32_t)line);      /* two's complement: -1 is ff ff ff ff */
    return whole_record(w, HB_TAG_FRAME, b, (size_t)(p - b));
}

int hb_stack_trace(hb_writer *w, uint32_t serial, uint32_t thread_serial,
                   const uint64_t *frame_ids, uint32_t n)
{
    if (n > 0 && frame_ids == NULL)
        return fail(w, EINVAL);
    unsigned char b[12], *p = b;
    p = put_u4(p, serial);
    p = put_u4(p, thread_serial);
    p = put_u4(p, n);
    if (top_record(w, HB_TAG_TRACE, 12u + (uint64_t)n * HB_ID_SIZE) != 0 ||
        write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char id[HB_ID_SIZE];
        put_id(id, frame_ids[i]);
        if (write_out(w, id, sizeof id) != 0)
            return -1;
    }
    return 0;
}

int hb_start_thread(hb_writer *w, uint32_t thread_serial, uint64_t thread_id,
                    uint32_t trace_serial, uint64_t name_id, uint64_t group_name_id,
                    uint64_t parent_group_name_id)
{
    unsigned char b[4 + HB_ID_SIZE + 4 + 3 * HB_ID_SIZE], *p = b;
    p = put_u4(p, thread_serial);
    p = put_id(p, thread_id);
    p = put_u4(p, trace_serial);
    p = put_id(p, name_id);
    p = put_id(p, group_name_id);
    p = put_id(p, parent_group_name_id);
    return whole_record(w, HB_TAG_START_THREAD, b, (size_t)(p - b));
}

int hb_end_thread(hb_writer *w, uint32_t thread_serial)
{
    unsigned char b[4];
    put_u4(b, thread_serial);
    return whole_record(w, HB_TAG_END_THREAD, b, sizeof b);
}

int hb_alloc_sites(hb_writer *w, uint16_t flags, float cutoff, uint32_t total_live_bytes,
                   uint32_t total_live_objs, uint64_t total_alloc_bytes,
                   uint64_t total_alloc_objs, const hb_site *sites, uint32_t n)
{
    if (n > 0 && sites == NULL)
        return fail(w, EINVAL);
    /* The JDK agent wrote the first 4 bytes of a double here (a bug: on
     * x86 that is the double's low half, noise); readers that decode the
     * field take it as a float, so a float's bits are what they can use. */
    uint32_t cutoff_bits;
    memcpy(&cutoff_bits, &cutoff, sizeof cutoff_bits);

    unsigned char b[2 + 4 + 4 + 4 + 8 + 8 + 4], *p = b;
    p = put_u2(p, flags);
    p = put_u4(p, cutoff_bits);
    p = put_u4(p, total_live_bytes);
    p = put_u4(p, total_live_objs);
    p = put_u8(p, total_alloc_bytes);
    p = put_u8(p, total_alloc_objs);
    p = put_u4(p, n);
    if (top_record(w, HB_TAG_ALLOC_SITES, sizeof b + (uint64_t)n * 25u) != 0 ||
        write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        const hb_site *s = &sites[i];
        unsigned char e[25];
        p = put_u1(e, s->is_array);
        p = put_u4(p, s->class_serial);
        p = put_u4(p, s->trace_serial);
        p = put_u4(p, s->live_bytes);
        p = put_u4(p, s->live_objs);
        p = put_u4(p, s->alloc_bytes);
        p = put_u4(p, s->alloc_objs);
        if (write_out(w, e, sizeof e) != 0)
            return -1;
    }
    return 0;
}

int hb_heap_summary(hb_writer *w, uint32_t live_bytes, uint32_t live_objs,
                    uint64_t alloc_bytes, uint64_t alloc_objs)
{
    unsigned char b[4 + 4 + 8 + 8], *p = b;
    p = put_u4(p, live_bytes);
    p = put_u4(p, live_objs);
    p = put_u8(p, alloc_bytes);
    p = put_u8(p, alloc_objs);
    return whole_record(w, HB_TAG_HEAP_SUMMARY, b, (size_t)(p - b));
}

int hb_cpu_samples(hb_writer *w, uint32_t total, const hb_sample *samples, uint32_t n)
{
    if (n > 0 && samples == NULL)
        return fail(w, EINVAL);
    unsigned char b[8], *p = b;
    p = put_u4(p, total);
    p = put_u4(p, n);
    if (top_record(w, HB_TAG_CPU_SAMPLES, sizeof b + (uint64_t)n * 8u) != 0 ||
        write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char e[8];
        p = put_u4(e, samples[i].count);
        put_u4(p, samples[i].trace_serial);
        if (write_out(w, e, sizeof e) != 0)
            return -1;
    }
    return 0;
}

int hb_control_settings(hb_writer *w, uint32_t flags, uint16_t depth)
{
    unsigned char b[6], *p = b;
    p = put_u4(p, flags);
    put_u2(p, depth);
    return whole_record(w, HB_TAG_CONTROL_SETTINGS, b, sizeof b);
}

/* ---- heap dump ---- */

int hb_heap_begin(hb_writer *w)
{
    if (!usable(w))
        return -1;
    if (w->in_heap)
        return fail(w, EINVAL);
    w->in_heap = 1;
    w->seg_len = 0;
    sub_end(w);
    return 0;
}

int hb_heap_end(hb_writer *w)
{
    if (!usable(w))
        return -1;
    if (!w->in_heap || w->open_tag != 0)
        return fail(w, EINVAL);
    if (flush_segment(w) != 0 || record_header(w, HB_TAG_HEAP_DUMP_END, 0) != 0)
        return -1;
    w->in_heap = 0;
    return 0;
}

int hb_stage_begin(hb_writer *w, FILE *stage)
{
    if (!usable(w))
        return -1;
    if (w->staged_out != NULL || w->stage != NULL || stage == NULL)
        return fail(w, EINVAL);
    w->staged_out = w->out;
    w->out = stage;
    w->staged = w->bytes;
    return 0;
}

int hb_stage_end(hb_writer *w)
{
    if (w->staged_out == NULL)
        return fail(w, EINVAL);
    w->stage = w->out;
    w->out = w->staged_out;
    w->staged_out = NULL;
    w->staged = w->bytes - w->staged;
    w->bytes -= w->staged;           /* counted again when copied */
    return w->error ? -1 : 0;
}

static int copy_body(hb_writer *w, int fd, uint64_t n);

int hb_stage_append(hb_writer *w)
{
    FILE *stage = w->stage;
    w->stage = NULL;
    if (stage == NULL || w->staged_out != NULL)
        return fail(w, EINVAL);
    if (!usable(w))
        return -1;
    errno = 0;
    if (fflush(stage) != 0 || lseek(fileno(stage), 0, SEEK_SET) != 0)
        return fail(w, errno != 0 ? errno : EIO);
    return copy_body(w, fileno(stage), w->staged);
}

/* Roots: an id, then zero, one or two u4s. */
static int root(hb_writer *w, uint8_t tag, uint64_t id, int nu4, uint32_t a, uint32_t b)
{
    unsigned char rec[1 + HB_ID_SIZE + 8], *p = rec;
    p = put_u1(p, tag);
    p = put_id(p, id);
    if (nu4 >= 1)
        p = put_u4(p, a);
    if (nu4 >= 2)
        p = put_u4(p, b);
    return sub_whole(w, rec, (size_t)(p - rec));
}

int hb_root_unknown(hb_writer *w, uint64_t id)
{
    return root(w, HB_GC_ROOT_UNKNOWN, id, 0, 0, 0);
}

int hb_root_jni_global(hb_writer *w, uint64_t id, uint64_t jni_ref_id)
{
    unsigned char rec[1 + 2 * HB_ID_SIZE], *p = rec;
    p = put_u1(p, HB_GC_ROOT_JNI_GLOBAL);
    p = put_id(p, id);
    p = put_id(p, jni_ref_id);
    return sub_whole(w, rec, (size_t)(p - rec));
}

int hb_root_jni_local(hb_writer *w, uint64_t id, uint32_t thread_serial, int32_t frame)
{
    return root(w, HB_GC_ROOT_JNI_LOCAL, id, 2, thread_serial, (uint32_t)frame);
}

int hb_root_java_frame(hb_writer *w, uint64_t id, uint32_t thread_serial, int32_t frame)
{
    return root(w, HB_GC_ROOT_JAVA_FRAME, id, 2, thread_serial, (uint32_t)frame);
}

int hb_root_native_stack(hb_writer *w, uint64_t id, uint32_t thread_serial)
{
    return root(w, HB_GC_ROOT_NATIVE_STACK, id, 1, thread_serial, 0);
}

int hb_root_sticky_class(hb_writer *w, uint64_t id)
{
    return root(w, HB_GC_ROOT_STICKY_CLASS, id, 0, 0, 0);
}

int hb_root_thread_block(hb_writer *w, uint64_t id, uint32_t thread_serial)
{
    return root(w, HB_GC_ROOT_THREAD_BLOCK, id, 1, thread_serial, 0);
}

int hb_root_monitor_used(hb_writer *w, uint64_t id)
{
    return root(w, HB_GC_ROOT_MONITOR_USED, id, 0, 0, 0);
}

int hb_root_thread_object(hb_writer *w, uint64_t id, uint32_t thread_serial,
                          uint32_t trace_serial)
{
    return root(w, HB_GC_ROOT_THREAD_OBJ, id, 2, thread_serial, trace_serial);
}

int hb_class_dump(hb_writer *w, const hb_class *c)
{
    if (c == NULL || (c->n_statics > 0 && c->statics == NULL) ||
        (c->n_fields > 0 && c->fields == NULL))
        return fail(w, EINVAL);

    /* The whole size first (sub_begin needs it), checking types on the way:
     * a bad code would leave a reader unable to find the next sub-record. */
    uint64_t size = CLASS_HEAD + 2u + (uint64_t)c->n_fields * (HB_ID_SIZE + 1u);
    for (uint16_t i = 0; i < c->n_statics; i++) {
        size_t vsize = hb_type_size(c->statics[i].value.type);
        if (vsize == 0)
            return fail(w, EINVAL);
        size += HB_ID_SIZE + 1u + vsize;
    }
    for (uint16_t i = 0; i < c->n_fields; i++)
        if (hb_type_size(c->fields[i].type) == 0)
            return fail(w, EINVAL);
    if (sub_begin(w, size) != 0)
        return -1;

    unsigned char b[CLASS_HEAD], *p = b;
    p = put_u1(p, HB_GC_CLASS_DUMP);
    p = put_id(p, c->id);
    p = put_u4(p, c->trace_serial);
    p = put_id(p, c->super_id);
    p = put_id(p, c->loader_id);
    p = put_id(p, c->signers_id);
    p = put_id(p, c->protection_domain_id);
    p = put_id(p, 0);                   /* reserved */
    p = put_id(p, 0);                   /* reserved */
    p = put_u4(p, c->instance_size);
    p = put_u2(p, 0);                   /* constant pool: HotSpot writes none, readers skip it */
    p = put_u2(p, c->n_statics);
    if (emit(w, b, (size_t)(p - b)) != 0)
        return -1;

    for (uint16_t i = 0; i < c->n_statics; i++) {
        const hb_static *s = &c->statics[i];
        unsigned char e[HB_ID_SIZE + 1 + 8];
        p = put_id(e, s->name_id);
        p = put_u1(p, s->value.type);
        p = put_sized(p, s->value.bits, hb_type_size(s->value.type));
        if (emit(w, e, (size_t)(p - e)) != 0)
            return -1;
    }

    unsigned char nf[2];
    put_u2(nf, c->n_fields);
    if (emit(w, nf, sizeof nf) != 0)
        return -1;
    for (uint16_t i = 0; i < c->n_fields; i++) {
        unsigned char e[HB_ID_SIZE + 1];
        p = put_id(e, c->fields[i].name_id);
        put_u1(p, c->fields[i].type);
        if (emit(w, e, sizeof e) != 0)
            return -1;
    }
    sub_end(w);
    return 0;
}

/* INSTANCE and OBJ ARRAY DUMP share this: the head is written now, and the
 * sub-record stays open for `values` more bytes from hb_put_value. */
static int open_sub(hb_writer *w, uint8_t tag, const unsigned char *head, size_t head_len,
                    uint64_t values)
{
    if (sub_begin(w, head_len + values) != 0 || emit(w, head, head_len) != 0)
        return -1;
    if (values == 0) {
        sub_end(w);
    } else {
        w->open_tag = tag;
        w->pending = values;
    }
    return 0;
}

int hb_instance_begin(hb_writer *w, uint64_t id, uint32_t trace_serial, uint64_t class_id,
                      uint32_t values_len)
{
    unsigned char b[INSTANCE_HEAD], *p = b;
    p = put_u1(p, HB_GC_INSTANCE_DUMP);
    p = put_id(p, id);
    p = put_u4(p, trace_serial);
    p = put_id(p, class_id);
    p = put_u4(p, values_len);
    return open_sub(w, HB_GC_INSTANCE_DUMP, b, (size_t)(p - b), values_len);
}

int hb_obj_array_begin(hb_writer *w, uint64_t id, uint32_t trace_serial, uint32_t n,
                       uint64_t array_class_id)
{
    unsigned char b[OBJ_ARRAY_HEAD], *p = b;
    p = put_u1(p, HB_GC_OBJ_ARRAY_DUMP);
    p = put_id(p, id);
    p = put_u4(p, trace_serial);
    p = put_u4(p, n);
    p = put_id(p, array_class_id);
    return open_sub(w, HB_GC_OBJ_ARRAY_DUMP, b, (size_t)(p - b), (uint64_t)n * HB_ID_SIZE);
}

int hb_put_value(hb_writer *w, uint8_t type, uint64_t bits)
{
    if (!usable(w))
        return -1;
    size_t size = hb_type_size(type);
    /* More bytes than announced, or none announced: the walker and the
     * class layout disagree. Failing here keeps the file parseable up to
     * the last good sub-record instead of desynchronising the reader. */
    if (size == 0 || w->open_tag == 0 || size > w->pending)
        return fail(w, EINVAL);
    if (w->open_tag == HB_GC_OBJ_ARRAY_DUMP && type != HB_OBJECT)
        return fail(w, EINVAL);
    unsigned char b[8];
    put_sized(b, bits, size);
    if (emit(w, b, size) != 0)
        return -1;
    w->pending -= size;
    if (w->pending == 0)
        sub_end(w);
    return 0;
}

/* count elements of esize bytes, host order to big-endian. memcpy reads each
 * element, so src need not be aligned. */
static void to_big_endian(unsigned char *dst, const unsigned char *src, size_t count,
                          size_t esize)
{
    switch (esize) {
    case 1:
        memcpy(dst, src, count);
        break;
    case 2:
        for (size_t i = 0; i < count; i++) {
            uint16_t v;
            memcpy(&v, src + 2 * i, 2);
            put_u2(dst + 2 * i, v);
        }
        break;
    case 4:
        for (size_t i = 0; i < count; i++) {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            put_u4(dst + 4 * i, v);
        }
        break;
    case 8:
        for (size_t i = 0; i < count; i++) {
            uint64_t v;
            memcpy(&v, src + 8 * i, 8);
            put_u8(dst + 8 * i, v);
        }
        break;
    }
}

int hb_prim_array(hb_writer *w, uint64_t id, uint32_t trace_serial, uint8_t type, uint32_t n,
                  const void *elements)
{
    size_t esize = hb_type_size(type);
    if (esize == 0 || type == HB_OBJECT || (n > 0 && elements == NULL))
        return fail(w, EINVAL);
    uint64_t data = (uint64_t)n * esize;

    unsigned char b[PRIM_ARRAY_HEAD], *p = b;
    p = put_u1(p, HB_GC_PRIM_ARRAY_DUMP);
    p = put_id(p, id);
    p = put_u4(p, trace_serial);
    p = put_u4(p, n);
    p = put_u1(p, type);
    if (sub_begin(w, sizeof b + data) != 0 || emit(w, b, sizeof b) != 0)
        return -1;

    const unsigned char *src = elements;
    if (!w->streaming) {
        /* sub_begin made room: convert straight into the segment. */
        to_big_endian(w->seg + w->seg_len, src, n, esize);
        w->seg_len += (size_t)data;
    } else {
        /* Through a small buffer, so a huge array costs no memory. */
        unsigned char chunk[4096];
        size_t per = sizeof chunk / esize;
        for (size_t done = 0; done < n;) {
            size_t k = n - done < per ? n - done : per;
            to_big_endian(chunk, src + done * esize, k, esize);
            if (write_out(w, chunk, k * esize) != 0)
                return -1;
            done += k;
        }
    }
    sub_end(w);
    return 0;
}

/* ---- another file's records ---- */

/* n bytes from fd, all of them: 0, or -1 (EIO at a short read). */
static int read_all(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* n bytes from fd to the file, through user space. */
static int copy_through(hb_writer *w, int fd, uint64_t n)
{
    size_t cap = 1u << 20;
    unsigned char *buf = malloc(cap);
    if (buf == NULL)
        return fail(w, ENOMEM);
    while (n > 0) {
        size_t k = n < cap ? (size_t)n : cap;
        if (read_all(fd, buf, k) != 0) {
            free(buf);
            return fail(w, EIO);
        }
        if (write_out(w, buf, k) != 0) {
            free(buf);
            return -1;
        }
        n -= k;
    }
    free(buf);
    return 0;
}

/* n bytes from fd to the file: in the kernel when both are files that
 * allow it (a heap dump's segments are most of a gigabyte), else through a
 * buffer (a memory stream, a pipe, another file system on old kernels). */
static int copy_body(hb_writer *w, int fd, uint64_t n)
{
    int out = fileno(w->out);
    if (n < (1u << 20) || out < 0)
        return copy_through(w, fd, n);
    errno = 0;
    if (fflush(w->out) != 0)
        return fail(w, errno != 0 ? errno : EIO);
    uint64_t left = n;
    while (left > 0) {
        ssize_t got = copy_file_range(fd, NULL, out, NULL, left > (1u << 30) ? (1u << 30) : (size_t)left, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && left == n && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                                     errno == EOPNOTSUPP || errno == EBADF))
            return copy_through(w, fd, n);        /* not here: nothing was copied yet */
        if (got < 0)
            return fail(w, errno);
        if (got == 0)
            return fail(w, EIO);                  /* the file ended early */
        left -= (uint64_t)got;
        w->bytes += (uint64_t)got;
    }
    /* The stream's idea of its position is the descriptor's again. */
    off_t at = lseek(out, 0, SEEK_CUR);
    if (at < 0 || fseeko(w->out, at, SEEK_SET) != 0)
        return fail(w, errno != 0 ? errno : EIO);
    return 0;
}

static uint32_t get_u4(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* "JAVA PROFILE 1.0.1" or "1.0.2", its NUL, u4 id size, u8 ms. */
#define OTHER_HEADER_SIZE (19u + 4u + 8u)

/* Another file's header: 0 and its time when it is an HPROF binary file
 * with this file's id size, else 1. */
static int other_header(const unsigned char *head, uint64_t *ms)
{
    if (memcmp(head, "JAVA PROFILE 1.0.", 17) != 0 || head[18] != 0 || get_u4(head + 19) != HB_ID_SIZE)
        return 1;
    *ms = 0;
    for (int i = 23; i < 31; i++)
        *ms = *ms << 8 | head[i];
    return 0;
}

/* Where a class serial sits in a record's body: first in LOAD CLASS, after
 * four ids in STACK FRAME; SIZE_MAX in other records. */
static size_t class_serial_at(uint8_t tag, uint32_t len)
{
    size_t at = tag == HB_TAG_LOAD_CLASS ? 0 : tag == HB_TAG_FRAME ? 4u * HB_ID_SIZE : SIZE_MAX;
    return at != SIZE_MAX && len >= at + 4 ? at : SIZE_MAX;
}

/* Another file's records read in order through a buffer: the JVM's dump
 * begins with tens of thousands of small UTF8 records (43,554 for a small
 * program), a pread each took 70 ms. After a big record (a heap dump
 * segment) it reads a little only: its segments' bodies are not read. */
enum { RECORDS_BUFFER = 1u << 18, AFTER_A_JUMP = 4096u };

typedef struct record_reader {
    int            fd;
    uint64_t       end;               /* the file's size */
    unsigned char *buf;
    uint64_t       buf_at;            /* file offset of buf[0] */
    size_t         buf_len;
} record_reader;

/* n (<= RECORDS_BUFFER) bytes at file offset at, or NULL with errno EIO
 * when the file has fewer. */
static const unsigned char *bytes_at(record_reader *r, uint64_t at, size_t n)
{
    if (at >= r->buf_at && at + n <= r->buf_at + r->buf_len)
        return r->buf + (at - r->buf_at);
    if (at > r->end || n > r->end - at) {
        errno = EIO;
        return NULL;
    }
    size_t want = at == r->buf_at + r->buf_len ? RECORDS_BUFFER : AFTER_A_JUMP;
    if (want < n)
        want = n;
    if (want > r->end - at)
        want = (size_t)(r->end - at);
    ssize_t got = pread(r->fd, r->buf, want, (off_t)at);
    if (got < (ssize_t)n) {
        r->buf_len = 0;
        errno = EIO;
        return NULL;
    }
    r->buf_at = at;
    r->buf_len = (size_t)got;
    return r->buf;
}

typedef int (*record_fn)(void *ctx, record_reader *r, uint8_t tag, uint64_t body, uint32_t len);

/* Calls each(ctx, r, tag, offset of the body, its length) for every record
 * of fd (size end) after the header, until each returns non-zero (which is
 * returned). 0 at the end; -1 with errno (EIO: a record runs past the end;
 * ENOMEM). */
static int each_record(int fd, uint64_t end, record_fn each, void *ctx)
{
    record_reader r = { fd, end, malloc(RECORDS_BUFFER), 0, 0 };
    if (r.buf == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    uint64_t at = OTHER_HEADER_SIZE;
    while (rc == 0 && at < end) {
        const unsigned char *rh = bytes_at(&r, at, RECORD_HEADER_SIZE);
        uint32_t len = rh ? get_u4(rh + 5) : 0;
        if (rh == NULL || len > end - at - RECORD_HEADER_SIZE) {
            errno = EIO;                          /* the last record runs past the end */
            rc = -1;
            break;
        }
        rc = each(ctx, &r, rh[0], at + RECORD_HEADER_SIZE, len);
        at += RECORD_HEADER_SIZE + len;
    }
    int saved = errno;
    free(r.buf);
    errno = saved;
    return rc;
}

typedef struct serial_shift {
    int      fd;
    uint32_t offset;
} serial_shift;

static int shift_class_serial(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    const serial_shift *s = arg;
    size_t pos = class_serial_at(tag, len);
    if (pos == SIZE_MAX)
        return 0;
    const unsigned char *old = bytes_at(r, body + pos, 4);
    if (old == NULL)
        return -1;
    unsigned char b[4];
    off_t where = (off_t)(body + pos);
    put_u4(b, get_u4(old) + s->offset);
    return pwrite(s->fd, b, 4, where) == 4 ? 0 : -1;
}

int hb_offset_class_serials(int fd, uint32_t offset, uint64_t *start_ms, uint64_t *size)
{
    unsigned char head[OTHER_HEADER_SIZE];
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head || other_header(head, start_ms) != 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    serial_shift s = { fd, offset };
    if (each_record(fd, (uint64_t)st.st_size, shift_class_serial, &s) != 0)
        return -1;
    *size = (uint64_t)st.st_size;
    return 0;
}

int hb_switch_file(hb_writer *w, int fd, uint64_t start_ms, uint64_t size)
{
    if (!usable(w))
        return -1;
    if (w->in_heap)
        return fail(w, EINVAL);
    int out = fileno(w->out);
    errno = 0;
    if (out < 0)
        return fail(w, EBADF);
    if (fflush(w->out) != 0)
        return fail(w, errno != 0 ? errno : EIO);
    if (dup2(fd, out) < 0 || fseeko(w->out, (off_t)size, SEEK_SET) != 0)
        return fail(w, errno != 0 ? errno : EIO);
    w->start_ms = start_ms;
    w->bytes = size;
    return 0;
}

int hb_append_file(hb_writer *w, int fd, uint32_t class_serial_offset)
{
    if (!usable(w))
        return -1;
    if (w->in_heap)
        return fail(w, EINVAL);
    unsigned char head[OTHER_HEADER_SIZE];
    uint64_t their_ms = 0;
    if (read_all(fd, head, sizeof head) != 0 || other_header(head, &their_ms) != 0)
        return 1;
    /* Their times are microseconds since their start; ours since ours. The
     * field wraps (u4), so the sum is taken modulo 2^32 as well. */
    uint32_t shift = (uint32_t)((their_ms - w->start_ms) * 1000u);
    for (;;) {
        unsigned char rh[RECORD_HEADER_SIZE];
        ssize_t got;
        do
            got = read(fd, rh, 1);
        while (got < 0 && errno == EINTR);
        if (got == 0)
            return 0;                             /* the end, between records */
        if (got < 0 || read_all(fd, rh + 1, sizeof rh - 1) != 0)
            return fail(w, EIO);
        uint32_t len = get_u4(rh + 5);
        put_u4(rh + 1, get_u4(rh + 1) + shift);
        if (write_out(w, rh, sizeof rh) != 0)
            return -1;
        size_t at = class_serial_at(rh[0], len);
        if (at != SIZE_MAX && len <= 256) {
            unsigned char body[256];
            if (read_all(fd, body, len) != 0)
                return fail(w, EIO);
            put_u4(body + at, get_u4(body + at) + class_serial_offset);
            if (write_out(w, body, len) != 0)
                return -1;
        } else if (copy_body(w, fd, len) != 0) {
            return -1;
        }
    }
}

/* A LOAD CLASS record of the other file: its name's id, its class serial,
 * and where its stack trace serial sits. */
typedef struct loaded_class {
    uint64_t name_id;
    uint64_t trace_at;
    uint32_t serial;
} loaded_class;

static uint64_t get_id(const unsigned char *p)
{
    return (uint64_t)get_u4(p) << 32 | get_u4(p + 4);
}

static int by_name_id(const void *a, const void *b)
{
    uint64_t x = ((const loaded_class *)a)->name_id, y = ((const loaded_class *)b)->name_id;
    return x < y ? -1 : x > y;
}

typedef struct trace_patch {
    int             fd;
    loaded_class   *classes;
    size_t          n, cap;
    hb_class_trace_fn trace_of;
    void           *ctx;
    uint32_t        set, ambiguous;
} trace_patch;

#define LOAD_CLASS_BODY (4u + HB_ID_SIZE + 4u + HB_ID_SIZE)

static int collect_load_class(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    trace_patch *p = arg;
    if (tag != HB_TAG_LOAD_CLASS || len < LOAD_CLASS_BODY)
        return 0;
    const unsigned char *b = bytes_at(r, body, LOAD_CLASS_BODY);
    if (b == NULL)
        return -1;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        loaded_class *more = realloc(p->classes, cap * sizeof *more);
        if (more == NULL) {
            errno = ENOMEM;
            return -1;
        }
        p->classes = more;
        p->cap = cap;
    }
    p->classes[p->n++] = (loaded_class){ get_id(b + 4 + HB_ID_SIZE + 4), body + 4 + HB_ID_SIZE, get_u4(b) };
    return 0;
}

/* Longest class name read; a longer one keeps the other file's trace. */
#define NAME_MAX_BYTES 4096u

static int patch_by_name(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    trace_patch *p = arg;
    if (tag != HB_TAG_UTF8 || len < HB_ID_SIZE || len - HB_ID_SIZE > NAME_MAX_BYTES)
        return 0;
    const unsigned char *id = bytes_at(r, body, len);
    if (id == NULL)
        return -1;
    loaded_class key = { .name_id = get_id(id) };
    loaded_class *c = bsearch(&key, p->classes, p->n, sizeof *c, by_name_id);
    if (c == NULL)
        return 0;
    /* bsearch finds any of the equal ones: two classes of one name (two
     * loaders) cannot be told apart by name, and keep their traces. */
    if ((c > p->classes && c[-1].name_id == key.name_id) ||
        (c + 1 < p->classes + p->n && c[1].name_id == key.name_id)) {
        while (c > p->classes && c[-1].name_id == key.name_id)
            c--;
        while (c < p->classes + p->n && c->name_id == key.name_id) {
            p->ambiguous++;
            c++;
        }
        return 0;
    }
    char name[NAME_MAX_BYTES + 1];
    size_t n = len - HB_ID_SIZE;
    memcpy(name, id + HB_ID_SIZE, n);
    name[n] = '\0';
    uint32_t trace = p->trace_of(p->ctx, name, n, c->serial);
    if (trace == 0)
        return 0;
    unsigned char b[4];
    put_u4(b, trace);
    if (pwrite(p->fd, b, 4, (off_t)c->trace_at) != 4)
        return -1;
    p->set++;
    return 0;
}

int hb_set_load_traces(int fd, hb_class_trace_fn trace_of, void *ctx, uint32_t *set, uint32_t *ambiguous)
{
    unsigned char head[OTHER_HEADER_SIZE];
    uint64_t ms;
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head || other_header(head, &ms) != 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    trace_patch p = { .fd = fd, .trace_of = trace_of, .ctx = ctx };
    int rc = each_record(fd, (uint64_t)st.st_size, collect_load_class, &p);
    if (rc == 0 && p.n > 0) {
        qsort(p.classes, p.n, sizeof *p.classes, by_name_id);
        rc = each_record(fd, (uint64_t)st.st_size, patch_by_name, &p);
    }
    int saved = errno;
    free(p.classes);
    errno = saved;
    *set = p.set;
    *ambiguous = p.ambiguous;
    return rc < 0 ? -1 : 0;
}
