/*
 * hprof_binary.c: see hprof_binary.h. The file, its top-level records and
 * what every part writes through (errors, raw output, record headers);
 * hprof_binary_heap.c writes the heap dump's sub-records,
 * hprof_binary_files.c another file's records (the JVM's own dump);
 * hprof_binary_internal.h is what they share.
 */
#include "../core/big_endian.h"
#include "hprof_binary_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FILE_HEADER        "JAVA PROFILE 1.0.2"

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
int hb_fail(hb_writer *w, int err)
{
    if (w->error == 0)
        w->error = err;
    return -1;
}

/* The guard at the top of every call: nothing is written after an error
 * (the file is already incomplete), nor after hb_close. */
int hb_usable(hb_writer *w)
{
    if (w->error != 0)
        return 0;
    if (w->out == NULL) {
        hb_fail(w, EBADF);
        return 0;
    }
    return 1;
}

int hb_write_out(hb_writer *w, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    errno = 0;
    if (fwrite(p, 1, n, w->out) != n)
        return hb_fail(w, errno != 0 ? errno : EIO);   /* fmemopen's short write leaves errno 0 */
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

int hb_record_header(hb_writer *w, uint8_t tag, uint32_t len)
{
    unsigned char b[RECORD_HEADER_SIZE], *p = b;
    p = put_u1(p, tag);
    p = be_put_u4(p, record_time(w));
    p = be_put_u4(p, len);
    return hb_write_out(w, b, (size_t)(p - b));
}

/* ---- heap dump segments ---- */

int hb_flush_segment(hb_writer *w)
{
    if (w->seg_len == 0)
        return 0;       /* an empty segment would be legal but pointless */
    if (hb_record_header(w, HB_TAG_HEAP_DUMP_SEGMENT, (uint32_t)w->seg_len) != 0 ||
        hb_write_out(w, w->seg, w->seg_len) != 0)
        return -1;
    w->seg_len = 0;
    return 0;
}

/* Top-level record header. Inside a heap dump the segment so far is written
 * first, so records stay in the order they were made; a sub-record still
 * waiting for values cannot be interrupted. */
static int top_record(hb_writer *w, uint8_t tag, uint64_t len)
{
    if (!hb_usable(w))
        return -1;
    if (w->in_heap) {
        if (w->open_tag != 0)
            return hb_fail(w, EINVAL);
        if (hb_flush_segment(w) != 0)
            return -1;
    }
    if (len > UINT32_MAX)
        return hb_fail(w, EOVERFLOW);
    return hb_record_header(w, tag, (uint32_t)len);
}

static int whole_record(hb_writer *w, uint8_t tag, const unsigned char *body, size_t len)
{
    if (top_record(w, tag, len) != 0)
        return -1;
    return hb_write_out(w, body, len);
}

/* ---- file ---- */

int hb_open(hb_writer *w, FILE *out, uint64_t start_ms, size_t segment_capacity)
{
    memset(w, 0, sizeof *w);
    w->start_ms = start_ms;
    w->clock_us = realtime_us;
    if (out == NULL)
        return hb_fail(w, EINVAL);
    w->out = out;

    size_t cap = segment_capacity ? segment_capacity : HB_DEFAULT_SEGMENT;
    if ((uint64_t)cap > UINT32_MAX)
        cap = UINT32_MAX;           /* a segment's length is a u4 */
    w->seg = malloc(cap);
    if (w->seg == NULL)
        return hb_fail(w, ENOMEM);
    w->seg_cap = cap;

    unsigned char b[sizeof FILE_HEADER + 4 + 8], *p = b;
    memcpy(p, FILE_HEADER, sizeof FILE_HEADER);     /* with its NUL, which the format wants */
    p += sizeof FILE_HEADER;
    p = be_put_u4(p, HB_ID_SIZE);
    p = be_put_u8(p, start_ms);
    return hb_write_out(w, b, (size_t)(p - b));
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
            hb_fail(w, errno != 0 ? errno : EIO);
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
        return hb_fail(w, EINVAL);
    size_t len = strlen(s);
    unsigned char b[HB_ID_SIZE];
    put_id(b, id);
    if (top_record(w, HB_TAG_UTF8, (uint64_t)HB_ID_SIZE + len) != 0 ||
        hb_write_out(w, b, sizeof b) != 0)
        return -1;
    return hb_write_out(w, s, len);
}

int hb_load_class(hb_writer *w, uint32_t class_serial, uint64_t class_id, uint32_t trace_serial,
                  uint64_t name_id)
{
    unsigned char b[4 + HB_ID_SIZE + 4 + HB_ID_SIZE], *p = b;
    p = be_put_u4(p, class_serial);
    p = put_id(p, class_id);
    p = be_put_u4(p, trace_serial);
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
    p = be_put_u4(p, class_serial);
    p = be_put_u4(p, (uint32_t)line);      /* two's complement: -1 is ff ff ff ff */
    return whole_record(w, HB_TAG_FRAME, b, (size_t)(p - b));
}

int hb_stack_trace(hb_writer *w, uint32_t serial, uint32_t thread_serial,
                   const uint64_t *frame_ids, uint32_t n)
{
    if (n > 0 && frame_ids == NULL)
        return hb_fail(w, EINVAL);
    unsigned char b[12], *p = b;
    p = be_put_u4(p, serial);
    p = be_put_u4(p, thread_serial);
    p = be_put_u4(p, n);
    if (top_record(w, HB_TAG_TRACE, 12u + (uint64_t)n * HB_ID_SIZE) != 0 ||
        hb_write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char id[HB_ID_SIZE];
        put_id(id, frame_ids[i]);
        if (hb_write_out(w, id, sizeof id) != 0)
            return -1;
    }
    return 0;
}

int hb_start_thread(hb_writer *w, uint32_t thread_serial, uint64_t thread_id,
                    uint32_t trace_serial, uint64_t name_id, uint64_t group_name_id,
                    uint64_t parent_group_name_id)
{
    unsigned char b[4 + HB_ID_SIZE + 4 + 3 * HB_ID_SIZE], *p = b;
    p = be_put_u4(p, thread_serial);
    p = put_id(p, thread_id);
    p = be_put_u4(p, trace_serial);
    p = put_id(p, name_id);
    p = put_id(p, group_name_id);
    p = put_id(p, parent_group_name_id);
    return whole_record(w, HB_TAG_START_THREAD, b, (size_t)(p - b));
}

int hb_end_thread(hb_writer *w, uint32_t thread_serial)
{
    unsigned char b[4];
    be_put_u4(b, thread_serial);
    return whole_record(w, HB_TAG_END_THREAD, b, sizeof b);
}

int hb_alloc_sites(hb_writer *w, uint16_t flags, float cutoff, uint32_t total_live_bytes,
                   uint32_t total_live_objs, uint64_t total_alloc_bytes,
                   uint64_t total_alloc_objs, const hb_site *sites, uint32_t n)
{
    if (n > 0 && sites == NULL)
        return hb_fail(w, EINVAL);
    /* The JDK agent wrote the first 4 bytes of a double here (a bug: on
     * x86 that is the double's low half, noise); readers that decode the
     * field take it as a float, so a float's bits are what they can use. */
    uint32_t cutoff_bits;
    memcpy(&cutoff_bits, &cutoff, sizeof cutoff_bits);

    unsigned char b[2 + 4 + 4 + 4 + 8 + 8 + 4], *p = b;
    p = be_put_u2(p, flags);
    p = be_put_u4(p, cutoff_bits);
    p = be_put_u4(p, total_live_bytes);
    p = be_put_u4(p, total_live_objs);
    p = be_put_u8(p, total_alloc_bytes);
    p = be_put_u8(p, total_alloc_objs);
    p = be_put_u4(p, n);
    if (top_record(w, HB_TAG_ALLOC_SITES, sizeof b + (uint64_t)n * 25u) != 0 ||
        hb_write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        const hb_site *s = &sites[i];
        unsigned char e[25];
        p = put_u1(e, s->is_array);
        p = be_put_u4(p, s->class_serial);
        p = be_put_u4(p, s->trace_serial);
        p = be_put_u4(p, s->live_bytes);
        p = be_put_u4(p, s->live_objs);
        p = be_put_u4(p, s->alloc_bytes);
        p = be_put_u4(p, s->alloc_objs);
        if (hb_write_out(w, e, sizeof e) != 0)
            return -1;
    }
    return 0;
}

int hb_heap_summary(hb_writer *w, uint32_t live_bytes, uint32_t live_objs,
                    uint64_t alloc_bytes, uint64_t alloc_objs)
{
    unsigned char b[4 + 4 + 8 + 8], *p = b;
    p = be_put_u4(p, live_bytes);
    p = be_put_u4(p, live_objs);
    p = be_put_u8(p, alloc_bytes);
    p = be_put_u8(p, alloc_objs);
    return whole_record(w, HB_TAG_HEAP_SUMMARY, b, (size_t)(p - b));
}

int hb_cpu_samples(hb_writer *w, uint32_t total, const hb_sample *samples, uint32_t n)
{
    if (n > 0 && samples == NULL)
        return hb_fail(w, EINVAL);
    unsigned char b[8], *p = b;
    p = be_put_u4(p, total);
    p = be_put_u4(p, n);
    if (top_record(w, HB_TAG_CPU_SAMPLES, sizeof b + (uint64_t)n * 8u) != 0 ||
        hb_write_out(w, b, sizeof b) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char e[8];
        p = be_put_u4(e, samples[i].count);
        be_put_u4(p, samples[i].trace_serial);
        if (hb_write_out(w, e, sizeof e) != 0)
            return -1;
    }
    return 0;
}

int hb_control_settings(hb_writer *w, uint32_t flags, uint16_t depth)
{
    unsigned char b[6], *p = b;
    p = be_put_u4(p, flags);
    be_put_u2(p, depth);
    return whole_record(w, HB_TAG_CONTROL_SETTINGS, b, sizeof b);
}
