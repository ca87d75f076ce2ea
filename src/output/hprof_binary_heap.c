/*
 * hprof_binary_heap: the heap dump of hprof_binary (hprof_binary.h): its
 * begin and end, the staging file, and the sub-records (roots, class,
 * instance and array dumps), each kept whole in one segment.
 */
#include "../core/big_endian.h"
#include "hprof_binary_internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Fixed parts of the heap dump sub-records, tag included. */
#define INSTANCE_HEAD   (1u + HB_ID_SIZE + 4u + HB_ID_SIZE + 4u)
#define OBJ_ARRAY_HEAD  (1u + HB_ID_SIZE + 4u + 4u + HB_ID_SIZE)
#define PRIM_ARRAY_HEAD (1u + HB_ID_SIZE + 4u + 4u + 1u)
/* id, trace, super, loader, signers, protection domain, 2 reserved, instance
 * size, constant pool count, static count. */
#define CLASS_HEAD      (1u + HB_ID_SIZE + 4u + 6u * HB_ID_SIZE + 4u + 2u + 2u)

/* ---- heap dump segments ---- */

/* Bytes of the sub-record being written: into the segment buffer (sub_begin
 * made room for the whole sub-record), or to the file when streaming. */
static int emit(hb_writer *w, const void *p, size_t n)
{
    if (w->streaming)
        return hb_write_out(w, p, n);
    if (n > w->seg_cap - w->seg_len)
        return hb_fail(w, EINVAL);     /* a size computed wrong here; never silently overrun */
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
    if (!hb_usable(w))
        return -1;
    if (!w->in_heap)
        return hb_fail(w, EINVAL);
    if (w->open_tag != 0)
        return hb_fail(w, EINVAL);     /* the last INSTANCE/OBJ ARRAY DUMP is short of values */
    if (size > UINT32_MAX)
        return hb_fail(w, EOVERFLOW);  /* cannot fit in any segment's u4 length */
    if (w->seg_len + size > w->seg_cap && hb_flush_segment(w) != 0)
        return -1;
    if (size > w->seg_cap) {
        if (hb_record_header(w, HB_TAG_HEAP_DUMP_SEGMENT, (uint32_t)size) != 0)
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

/* ---- heap dump ---- */

int hb_heap_begin(hb_writer *w)
{
    if (!hb_usable(w))
        return -1;
    if (w->in_heap)
        return hb_fail(w, EINVAL);
    w->in_heap = 1;
    w->seg_len = 0;
    sub_end(w);
    return 0;
}

int hb_heap_end(hb_writer *w)
{
    if (!hb_usable(w))
        return -1;
    if (!w->in_heap || w->open_tag != 0)
        return hb_fail(w, EINVAL);
    if (hb_flush_segment(w) != 0 || hb_record_header(w, HB_TAG_HEAP_DUMP_END, 0) != 0)
        return -1;
    w->in_heap = 0;
    w->heap_dumps++;
    return 0;
}

int hb_stage_begin(hb_writer *w, FILE *stage)
{
    if (!hb_usable(w))
        return -1;
    if (w->staged_out != NULL || w->stage != NULL || stage == NULL)
        return hb_fail(w, EINVAL);
    w->staged_out = w->out;
    w->out = stage;
    w->staged = w->bytes;
    return 0;
}

int hb_stage_end(hb_writer *w)
{
    if (w->staged_out == NULL)
        return hb_fail(w, EINVAL);
    w->stage = w->out;
    w->out = w->staged_out;
    w->staged_out = NULL;
    w->staged = w->bytes - w->staged;
    w->bytes -= w->staged;           /* counted again when copied */
    return w->error ? -1 : 0;
}

int hb_stage_append(hb_writer *w)
{
    FILE *stage = w->stage;
    w->stage = NULL;
    if (stage == NULL || w->staged_out != NULL)
        return hb_fail(w, EINVAL);
    if (!hb_usable(w))
        return -1;
    errno = 0;
    if (fflush(stage) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    return hb_copy_body(w, fileno(stage), 0, w->staged);
}

/* Roots: an id, then zero, one or two u4s. */
static int root(hb_writer *w, uint8_t tag, uint64_t id, int nu4, uint32_t a, uint32_t b)
{
    unsigned char rec[1 + HB_ID_SIZE + 8], *p = rec;
    p = put_u1(p, tag);
    p = put_id(p, id);
    if (nu4 >= 1)
        p = be_put_u4(p, a);
    if (nu4 >= 2)
        p = be_put_u4(p, b);
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
        return hb_fail(w, EINVAL);

    /* The whole size first (sub_begin needs it), checking types on the way:
     * a bad code would leave a reader unable to find the next sub-record. */
    uint64_t size = CLASS_HEAD + 2u + (uint64_t)c->n_fields * (HB_ID_SIZE + 1u);
    for (uint16_t i = 0; i < c->n_statics; i++) {
        size_t vsize = hb_type_size(c->statics[i].value.type);
        if (vsize == 0)
            return hb_fail(w, EINVAL);
        size += HB_ID_SIZE + 1u + vsize;
    }
    for (uint16_t i = 0; i < c->n_fields; i++)
        if (hb_type_size(c->fields[i].type) == 0)
            return hb_fail(w, EINVAL);
    if (sub_begin(w, size) != 0)
        return -1;

    unsigned char b[CLASS_HEAD], *p = b;
    p = put_u1(p, HB_GC_CLASS_DUMP);
    p = put_id(p, c->id);
    p = be_put_u4(p, c->trace_serial);
    p = put_id(p, c->super_id);
    p = put_id(p, c->loader_id);
    p = put_id(p, c->signers_id);
    p = put_id(p, c->protection_domain_id);
    p = put_id(p, 0);                   /* reserved */
    p = put_id(p, 0);                   /* reserved */
    p = be_put_u4(p, c->instance_size);
    p = be_put_u2(p, 0);                   /* constant pool: HotSpot writes none, readers skip it */
    p = be_put_u2(p, c->n_statics);
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
    be_put_u2(nf, c->n_fields);
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
    p = be_put_u4(p, trace_serial);
    p = put_id(p, class_id);
    p = be_put_u4(p, values_len);
    return open_sub(w, HB_GC_INSTANCE_DUMP, b, (size_t)(p - b), values_len);
}

int hb_obj_array_begin(hb_writer *w, uint64_t id, uint32_t trace_serial, uint32_t n,
                       uint64_t array_class_id)
{
    unsigned char b[OBJ_ARRAY_HEAD], *p = b;
    p = put_u1(p, HB_GC_OBJ_ARRAY_DUMP);
    p = put_id(p, id);
    p = be_put_u4(p, trace_serial);
    p = be_put_u4(p, n);
    p = put_id(p, array_class_id);
    return open_sub(w, HB_GC_OBJ_ARRAY_DUMP, b, (size_t)(p - b), (uint64_t)n * HB_ID_SIZE);
}

int hb_put_value(hb_writer *w, uint8_t type, uint64_t bits)
{
    if (!hb_usable(w))
        return -1;
    size_t size = hb_type_size(type);
    /* More bytes than announced, or none announced: the walker and the
     * class layout disagree. Failing here keeps the file parseable up to
     * the last good sub-record instead of desynchronising the reader. */
    if (size == 0 || w->open_tag == 0 || size > w->pending)
        return hb_fail(w, EINVAL);
    if (w->open_tag == HB_GC_OBJ_ARRAY_DUMP && type != HB_OBJECT)
        return hb_fail(w, EINVAL);
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
            be_put_u2(dst + 2 * i, v);
        }
        break;
    case 4:
        for (size_t i = 0; i < count; i++) {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            be_put_u4(dst + 4 * i, v);
        }
        break;
    case 8:
        for (size_t i = 0; i < count; i++) {
            uint64_t v;
            memcpy(&v, src + 8 * i, 8);
            be_put_u8(dst + 8 * i, v);
        }
        break;
    }
}

int hb_prim_array(hb_writer *w, uint64_t id, uint32_t trace_serial, uint8_t type, uint32_t n,
                  const void *elements)
{
    size_t esize = hb_type_size(type);
    if (esize == 0 || type == HB_OBJECT || (n > 0 && elements == NULL))
        return hb_fail(w, EINVAL);
    uint64_t data = (uint64_t)n * esize;

    unsigned char b[PRIM_ARRAY_HEAD], *p = b;
    p = put_u1(p, HB_GC_PRIM_ARRAY_DUMP);
    p = put_id(p, id);
    p = be_put_u4(p, trace_serial);
    p = be_put_u4(p, n);
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
            if (hb_write_out(w, chunk, k * esize) != 0)
                return -1;
            done += k;
        }
    }
    sub_end(w);
    return 0;
}
