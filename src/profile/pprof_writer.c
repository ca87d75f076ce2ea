/* pprof_writer.c: see pprof_writer.h.
 *
 * The Profile message is written field by field into a small buffer that is
 * deflated (gzip framing) into `out` whenever it fills: protobuf lets a
 * message's repeated fields come in any order and interleaved, so samples,
 * locations and functions are written as they are met and the string table,
 * whose indexes they use, comes last. Memory: the strings, one id per
 * function, and the buffer. Field numbers: github.com/google/pprof,
 * proto/profile.proto. */
#include "pprof_writer.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "../core/idmap.h"
#include "protobuf.h"
#include "strtab.h"

enum {   /* field numbers of profile.proto */
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
    LABEL_KEY = 1, LABEL_STR = 2,
    LOCATION_ID = 1, LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1, LINE_LINE = 2,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
    PROFILE_MAPPING = 3, MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
    LOCATION_MAPPING_ID = 2,
};

#define FLUSH_AT (64 * 1024)

typedef struct pprof_writer {
    const profile *p;
    FILE          *out;
    z_stream       z;
    pb_buf         msg;        /* top-level fields not yet deflated */
    pb_buf         name;       /* scratch for function names */
    strtab         strings;
    idmap          functions;  /* (system name, file) string indexes -> function id */
    uint32_t       nfunctions;
    idmap          mappings;   /* file string index -> mapping id, for native code */
    uint32_t       nmappings;
    const char    *error;      /* first failure, or NULL */
    int            write_errno;
} pprof_writer;

static void fail(pprof_writer *w, const char *why)
{
    if (w->error == NULL)
        w->error = why;
}

static void fail_write(pprof_writer *w)
{
    if (w->error == NULL)
        w->write_errno = errno;
    fail(w, "write error");
}

static uint32_t string_index(pprof_writer *w, const char *s)
{
    uint32_t i = strtab_add(&w->strings, s);
    if (i == UINT32_MAX) {
        fail(w, "out of memory");
        return 0;
    }
    return i;
}

/* Deflate `len` bytes (flush: Z_NO_FLUSH or Z_FINISH) and write what comes out. */
static void deflate_out(pprof_writer *w, const uint8_t *bytes, size_t len, int flush)
{
    uint8_t chunk[16384];
    w->z.next_in = (Bytef *)bytes;
    w->z.avail_in = (uInt)len;
    int rc;
    do {
        w->z.next_out = chunk;
        w->z.avail_out = sizeof chunk;
        rc = deflate(&w->z, flush);
        if (rc == Z_STREAM_ERROR) {
            fail(w, "zlib deflate failed");
            return;
        }
        size_t made = sizeof chunk - w->z.avail_out;
        if (made && fwrite(chunk, 1, made, w->out) != made) {
            fail_write(w);
            return;
        }
    } while (w->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

static void flush_message(pprof_writer *w, int flush)
{
    if (w->msg.failed)
        fail(w, "out of memory");
    if (w->error)
        return;
    deflate_out(w, w->msg.data, w->msg.len, flush);
    pb_reset(&w->msg);
}

static void value_type(pprof_writer *w, uint32_t field, profile_value_type t)
{
    uint32_t type = string_index(w, t.type), unit = string_index(w, t.unit);
    size_t mark = pb_message_begin(&w->msg, field);
    pb_varint_field(&w->msg, VALUE_TYPE_TYPE, type);
    pb_varint_field(&w->msg, VALUE_TYPE_UNIT, unit);
    pb_message_end(&w->msg, mark);
}

static void write_sample(pprof_writer *w, const profile_sample *s, uint32_t thread_key)
{
    uint64_t ids[PROFILE_MAX_DEPTH], values[PROFILE_MAX_VALUES];
    uint32_t nvalues = profile_value_count(w->p);
    for (uint32_t i = 0; i < s->depth; i++)
        ids[i] = s->frames[i];                  /* location id = frame id */
    for (uint32_t v = 0; v < nvalues; v++)
        values[v] = (uint64_t)s->values[v];
    uint32_t thread = s->thread[0] ? string_index(w, s->thread) : 0;
    size_t mark = pb_message_begin(&w->msg, PROFILE_SAMPLE);
    pb_packed_field(&w->msg, SAMPLE_LOCATION_ID, ids, s->depth);
    pb_packed_field(&w->msg, SAMPLE_VALUE, values, nvalues);
    if (thread) {
        size_t label = pb_message_begin(&w->msg, SAMPLE_LABEL);
        pb_varint_field(&w->msg, LABEL_KEY, thread_key);
        pb_varint_field(&w->msg, LABEL_STR, thread);
        pb_message_end(&w->msg, label);
    }
    /* wall=: a stack's root frame [state].<name> is also its label "state",
     * so that `pprof -tagfocus state=sleeping` selects by it. */
    const profile_frame *root = s->depth > 0 ? profile_frame_get(w->p, s->frames[s->depth - 1]) : NULL;
    if (root != NULL && strcmp(root->class_name, "[state]") == 0) {
        uint32_t key = string_index(w, "state"), value = string_index(w, root->method);
        size_t label = pb_message_begin(&w->msg, SAMPLE_LABEL);
        pb_varint_field(&w->msg, LABEL_KEY, key);
        pb_varint_field(&w->msg, LABEL_STR, value);
        pb_message_end(&w->msg, label);
    }
    pb_message_end(&w->msg, mark);
}

/* "pkg.Class.method" (with the signature appended when system) in w->name. */
static const char *function_name(pprof_writer *w, const profile_frame *f, int system)
{
    pb_reset(&w->name);
    if (f->class_name[0]) {
        pb_append(&w->name, f->class_name, strlen(f->class_name));
        pb_append(&w->name, ".", 1);
    }
    pb_append(&w->name, f->method, strlen(f->method));
    if (system)
        pb_append(&w->name, f->signature, strlen(f->signature));
    pb_append(&w->name, "", 1);
    if (w->name.failed) {
        fail(w, "out of memory");
        return "";
    }
    return (const char *)w->name.data;
}

/* The function of a frame (class, method, signature, file), written when new. */
static uint32_t function_id(pprof_writer *w, const profile_frame *f)
{
    uint32_t system_name = string_index(w, function_name(w, f, 1));
    uint32_t file = string_index(w, f->file);
    uint64_t key = (uint64_t)system_name << 32 | file;
    uint32_t id = idmap_get(&w->functions, key);
    if (id != 0)
        return id;
    id = ++w->nfunctions;
    if (idmap_put(&w->functions, key, id) != 0)
        fail(w, "out of memory");
    uint32_t name = string_index(w, function_name(w, f, 0));
    size_t mark = pb_message_begin(&w->msg, PROFILE_FUNCTION);
    pb_varint_field(&w->msg, FUNCTION_ID, id);
    pb_varint_field(&w->msg, FUNCTION_NAME, name);
    pb_varint_field(&w->msg, FUNCTION_SYSTEM_NAME, system_name);
    pb_varint_field(&w->msg, FUNCTION_FILENAME, file);
    pb_message_end(&w->msg, mark);
    return id;
}

/* Native code (a frame named by its function alone, its object as its
 * file: "libjvm.so", "kernel"): a Mapping per object, already symbolized,
 * as pprof's tools expect of native frames. 0 for Java and pseudo frames. */
static uint32_t mapping_id(pprof_writer *w, const profile_frame *f)
{
    if (f->class_name[0] != '\0' || f->file[0] == '\0')
        return 0;
    uint32_t file = string_index(w, f->file);
    uint32_t id = idmap_get(&w->mappings, file);
    if (id != 0)
        return id;
    if (w->nmappings == 0) {
        /* pprof shows the first mapping as the profile's program ("File:"):
         * the JVM's launcher, not whichever library came first. */
        size_t first = pb_message_begin(&w->msg, PROFILE_MAPPING);
        pb_varint_field(&w->msg, MAPPING_ID, ++w->nmappings);
        pb_varint_field(&w->msg, MAPPING_FILENAME, string_index(w, "java"));
        pb_varint_field(&w->msg, MAPPING_HAS_FUNCTIONS, 1);
        pb_message_end(&w->msg, first);
    }
    id = ++w->nmappings;
    if (idmap_put(&w->mappings, file, id) != 0)
        fail(w, "out of memory");
    size_t mark = pb_message_begin(&w->msg, PROFILE_MAPPING);
    pb_varint_field(&w->msg, MAPPING_ID, id);
    pb_varint_field(&w->msg, MAPPING_FILENAME, file);
    pb_varint_field(&w->msg, MAPPING_HAS_FUNCTIONS, 1);
    pb_message_end(&w->msg, mark);
    return id;
}

static void write_location(pprof_writer *w, uint32_t frame_id)
{
    const profile_frame *f = profile_frame_get(w->p, frame_id);
    uint32_t function = function_id(w, f);
    uint32_t mapping = mapping_id(w, f);
    size_t mark = pb_message_begin(&w->msg, PROFILE_LOCATION);
    pb_varint_field(&w->msg, LOCATION_ID, frame_id);
    if (mapping)
        pb_varint_field(&w->msg, LOCATION_MAPPING_ID, mapping);
    size_t line = pb_message_begin(&w->msg, LOCATION_LINE);
    pb_varint_field(&w->msg, LINE_FUNCTION_ID, function);
    pb_varint_field(&w->msg, LINE_LINE, f->line > 0 ? (uint64_t)f->line : 0);  /* 0: unknown, native */
    pb_message_end(&w->msg, line);
    pb_message_end(&w->msg, mark);
}

static void write_header(pprof_writer *w)
{
    const profile *p = w->p;
    for (uint32_t v = 0; v < profile_value_count(p); v++)
        value_type(w, PROFILE_SAMPLE_TYPE, profile_value(p, v));
    if (profile_period_type(p).type[0])
        value_type(w, PROFILE_PERIOD_TYPE, profile_period_type(p));
    if (profile_period(p))
        pb_varint_field(&w->msg, PROFILE_PERIOD, (uint64_t)profile_period(p));
    if (profile_start_nanos(p))
        pb_varint_field(&w->msg, PROFILE_TIME_NANOS, (uint64_t)profile_start_nanos(p));
    if (profile_duration_nanos(p))
        pb_varint_field(&w->msg, PROFILE_DURATION_NANOS, (uint64_t)profile_duration_nanos(p));
    uint32_t shown = string_index(w, profile_value(p, profile_default_value(p)).type);
    pb_varint_field(&w->msg, PROFILE_DEFAULT_SAMPLE_TYPE, shown);
}

static void write_body(pprof_writer *w)
{
    string_index(w, "");                        /* string_table[0] must be "" */
    uint32_t thread_key = string_index(w, "thread");
    write_header(w);
    profile_sample s;
    for (uint32_t i = 0; profile_sample_get(w->p, i, &s) == 0 && !w->error; i++) {
        write_sample(w, &s, thread_key);
        if (w->msg.len >= FLUSH_AT)
            flush_message(w, Z_NO_FLUSH);
    }
    for (uint32_t id = 1; id <= profile_frame_count(w->p) && !w->error; id++) {
        write_location(w, id);
        if (w->msg.len >= FLUSH_AT)
            flush_message(w, Z_NO_FLUSH);
    }
    for (uint32_t i = 0; i < strtab_count(&w->strings) && !w->error; i++) {
        pb_string_field(&w->msg, PROFILE_STRING_TABLE, strtab_get(&w->strings, i));
        if (w->msg.len >= FLUSH_AT)
            flush_message(w, Z_NO_FLUSH);
    }
    flush_message(w, Z_FINISH);
}

int pprof_write(const profile *p, FILE *out, char *err, size_t errlen)
{
    pprof_writer w = { .p = p, .out = out };
    strtab_init(&w.strings);
    /* windowBits 15 + 16: a gzip header and trailer, as pprof files are. */
    if (deflateInit2(&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        snprintf(err, errlen, "pprof: zlib deflateInit2 failed");
        return -1;
    }
    write_body(&w);
    deflateEnd(&w.z);
    if (w.error == NULL && (fflush(out) != 0 || ferror(out)))
        fail_write(&w);
    if (w.error && w.write_errno)
        snprintf(err, errlen, "pprof: %s: %s", w.error, strerror(w.write_errno));
    else if (w.error)
        snprintf(err, errlen, "pprof: %s", w.error);
    pb_free(&w.msg);
    pb_free(&w.name);
    strtab_free(&w.strings);
    idmap_free(&w.functions);
    idmap_free(&w.mappings);
    return w.error ? -1 : 0;
}
