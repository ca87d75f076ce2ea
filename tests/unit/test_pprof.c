/* Unit tests: the protobuf encoder and the pprof writer (src/profile). The
 * written profile is gunzipped with zlib and decoded here by a minimal
 * protobuf reader written from the wire-format description, independent of
 * the encoder. */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "profile/pprof_writer.h"
#include "profile/protobuf.h"

/* ------------------------------------------------------------ encoder */

static int bytes_are(const pb_buf *b, const uint8_t *want, size_t n)
{
    return !b->failed && b->len == n && memcmp(b->data, want, n) == 0;
}

TEST(protobuf_encodes_varints_and_fields)
{
    pb_buf b = { 0 };
    pb_varint(&b, 300);
    CHECK(bytes_are(&b, (const uint8_t[]){ 0xac, 0x02 }, 2));
    pb_reset(&b);
    pb_varint_field(&b, 1, 150);                   /* the wire-format guide's example */
    CHECK(bytes_are(&b, (const uint8_t[]){ 0x08, 0x96, 0x01 }, 3));
    pb_reset(&b);
    pb_varint_field(&b, 2, (uint64_t)(int64_t)-1); /* negative int64: ten bytes */
    CHECK(b.len == 11 && b.data[0] == 0x10 && b.data[10] == 0x01 && b.data[9] == 0xff);
    pb_reset(&b);
    pb_string_field(&b, 6, "hi");
    CHECK(bytes_are(&b, (const uint8_t[]){ 0x32, 0x02, 'h', 'i' }, 4));
    pb_reset(&b);
    pb_packed_field(&b, 1, (const uint64_t[]){ 3, 270 }, 2);
    CHECK(bytes_are(&b, (const uint8_t[]){ 0x0a, 0x03, 0x03, 0x8e, 0x02 }, 5));
    pb_reset(&b);
    pb_packed_field(&b, 1, NULL, 0);               /* empty: nothing at all */
    CHECK(b.len == 0);
    pb_free(&b);
}

TEST(protobuf_nested_message_gets_its_length_first)
{
    pb_buf b = { 0 };
    size_t outer = pb_message_begin(&b, 2);
    pb_varint_field(&b, 1, 7);
    size_t inner = pb_message_begin(&b, 3);
    for (int i = 0; i < 100; i++)                  /* 200 bytes: a two-byte length */
        pb_varint_field(&b, 1, 1);
    pb_message_end(&b, inner);
    pb_message_end(&b, outer);
    /* outer: tag 0x12, length 2 + 1 + 2 + 200 = 205 (0xcd 0x01) */
    CHECK(!b.failed && b.len == 3 + 205);
    CHECK(b.data[0] == 0x12 && b.data[1] == 0xcd && b.data[2] == 0x01);
    CHECK(b.data[3] == 0x08 && b.data[4] == 7);
    CHECK(b.data[5] == 0x1a && b.data[6] == 0xc8 && b.data[7] == 0x01);   /* inner: 200 */
    CHECK(b.data[8] == 0x08 && b.data[b.len - 1] == 1);
    pb_free(&b);
}

/* ------------------------------------------------------------ a minimal decoder */

typedef struct reader {
    const uint8_t *p, *end;
    int            bad;
} reader;

static uint64_t read_varint(reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = 1;
            return 0;
        }
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

/* The next field: its number, and a varint value or a length-delimited body. */
typedef struct field {
    uint32_t number;
    uint64_t value;
    reader   body;
} field;

static int next_field(reader *r, field *f)
{
    if (r->bad || r->p >= r->end)
        return 0;
    uint64_t key = read_varint(r);
    f->number = (uint32_t)(key >> 3);
    if ((key & 7) == 0) {
        f->value = read_varint(r);
    } else if ((key & 7) == 2) {
        uint64_t n = read_varint(r);
        if (n > (uint64_t)(r->end - r->p)) {
            r->bad = 1;
            return 0;
        }
        f->body = (reader){ r->p, r->p + n, 0 };
        r->p += n;
    } else {
        r->bad = 1;                  /* the writer uses no other wire type */
    }
    return !r->bad;
}

#define MAXN 32
typedef struct decoded {
    char     strings[MAXN][96];
    int      nstrings;
    uint64_t sample_type[MAXN][2], period_type[2];
    int      nsample_types;
    struct { uint64_t loc[MAXN], val[MAXN], label_key, label_str; int nloc, nval; } sample[MAXN];
    int      nsamples;
    struct { uint64_t id, function_id, line; } location[MAXN];
    int      nlocations;
    struct { uint64_t id, name, system_name, filename; } function[MAXN];
    int      nfunctions;
    uint64_t time_nanos, duration_nanos, period, default_sample_type;
    int      bad;
} decoded;

static int read_packed(reader body, uint64_t *out)
{
    int n = 0;
    while (body.p < body.end && !body.bad && n < MAXN)
        out[n++] = read_varint(&body);
    return n;
}

static void read_pair(reader body, uint64_t *first, uint64_t *second)
{
    field f;
    while (next_field(&body, &f))
        if (f.number == 1)
            *first = f.value;
        else if (f.number == 2)
            *second = f.value;
}

static void read_sample(reader body, decoded *d)
{
    field f;
    int i = d->nsamples++;
    while (next_field(&body, &f)) {
        if (f.number == 1)
            d->sample[i].nloc = read_packed(f.body, d->sample[i].loc);
        else if (f.number == 2)
            d->sample[i].nval = read_packed(f.body, d->sample[i].val);
        else if (f.number == 3)
            read_pair(f.body, &d->sample[i].label_key, &d->sample[i].label_str);
    }
}

static void read_location(reader body, decoded *d)
{
    field f;
    int i = d->nlocations++;
    while (next_field(&body, &f)) {
        if (f.number == 1)
            d->location[i].id = f.value;
        else if (f.number == 4)
            read_pair(f.body, &d->location[i].function_id, &d->location[i].line);
    }
}

static void read_function(reader body, decoded *d)
{
    field f;
    int i = d->nfunctions++;
    while (next_field(&body, &f)) {
        uint64_t *slot[] = { NULL, &d->function[i].id, &d->function[i].name,
                             &d->function[i].system_name, &d->function[i].filename };
        if (f.number >= 1 && f.number <= 4)
            *slot[f.number] = f.value;
    }
}

static void read_profile(reader r, decoded *d)
{
    field f;
    while (next_field(&r, &f) && d->nsamples < MAXN && d->nlocations < MAXN &&
           d->nfunctions < MAXN && d->nstrings < MAXN && d->nsample_types < MAXN) {
        switch (f.number) {
        case 1:  read_pair(f.body, &d->sample_type[d->nsample_types][0],
                           &d->sample_type[d->nsample_types][1]);
                 d->nsample_types++;                                  break;
        case 2:  read_sample(f.body, d);                              break;
        case 4:  read_location(f.body, d);                            break;
        case 5:  read_function(f.body, d);                            break;
        case 6:  snprintf(d->strings[d->nstrings++], sizeof d->strings[0], "%.*s",
                          (int)(f.body.end - f.body.p), (const char *)f.body.p); break;
        case 9:  d->time_nanos = f.value;                             break;
        case 10: d->duration_nanos = f.value;                         break;
        case 11: read_pair(f.body, &d->period_type[0], &d->period_type[1]); break;
        case 12: d->period = f.value;                                 break;
        case 14: d->default_sample_type = f.value;                    break;
        }
    }
    d->bad = r.bad || r.p != r.end;
}

/* Gunzip (zlib, gzip framing) into a malloc'ed buffer. */
static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *out_len)
{
    size_t cap = 1 << 20;
    uint8_t *out = malloc(cap);
    z_stream z = { 0 };
    if (out == NULL || inflateInit2(&z, 15 + 16) != Z_OK) {
        free(out);
        return NULL;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    *out_len = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *str(const decoded *d, uint64_t i)
{
    return i < (uint64_t)d->nstrings ? d->strings[i] : "(bad index)";
}

/* ------------------------------------------------------------ the writer */

static profile *small_cpu_profile(void)
{
    profile_value_type types[2] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
    profile *p = profile_new("CPU samples", types, 2);
    profile_set_period(p, (profile_value_type){ "cpu", "nanoseconds" }, 10000000);
    profile_set_time(p, 1700000000000000000, 2500000000);
    profile_set_default_value(p, 1);
    uint32_t get = profile_frame_id(p, "java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;",
                                    "HashMap.java", 556);
    uint32_t get2 = profile_frame_id(p, "java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;",
                                     "HashMap.java", 557);
    uint32_t run = profile_frame_id(p, "Demo", "run", "()V", "Demo.java", 12);
    uint32_t arraycopy = profile_frame_id(p, "java.lang.System", "arraycopy", "", "", PROFILE_LINE_NATIVE);
    uint32_t s1[2] = { get, run }, s2[2] = { get2, run }, s3[2] = { arraycopy, run };
    profile_add(p, s1, 2, "main", (const int64_t[]){ 3, 30000000 });
    profile_add(p, s2, 2, "", (const int64_t[]){ 1, 10000000 });
    profile_add(p, s3, 2, "worker-1", (const int64_t[]){ 2, 20000000 });
    return p;
}

static int decode_written(const profile *p, decoded *d)
{
    char *bytes = NULL, err[128] = "";
    size_t n = 0, raw_len = 0;
    FILE *f = open_memstream(&bytes, &n);
    int rc = pprof_write(p, f, err, sizeof err);
    fclose(f);
    uint8_t *raw = rc == 0 ? gunzip((const uint8_t *)bytes, n, &raw_len) : NULL;
    free(bytes);
    if (raw == NULL)
        return -1;
    memset(d, 0, sizeof *d);
    read_profile((reader){ raw, raw + raw_len, 0 }, d);
    free(raw);
    return d->bad ? -1 : 0;
}

TEST(pprof_writes_types_period_times_and_strings)
{
    profile *p = small_cpu_profile();
    static decoded d;
    CHECK(decode_written(p, &d) == 0);
    CHECK(d.nstrings > 0 && d.strings[0][0] == 0);              /* string_table[0] = "" */
    CHECK(d.nsample_types == 2);
    CHECK_STR(str(&d, d.sample_type[0][0]), "samples");
    CHECK_STR(str(&d, d.sample_type[0][1]), "count");
    CHECK_STR(str(&d, d.sample_type[1][0]), "cpu");
    CHECK_STR(str(&d, d.sample_type[1][1]), "nanoseconds");
    CHECK_STR(str(&d, d.period_type[0]), "cpu");
    CHECK(d.period == 10000000);
    CHECK(d.time_nanos == 1700000000000000000u && d.duration_nanos == 2500000000u);
    CHECK_STR(str(&d, d.default_sample_type), "cpu");
    profile_free(p);
}

static int function_of_location(const decoded *d, uint64_t location_id)
{
    for (int i = 0; i < d->nlocations; i++)
        if (d->location[i].id == location_id)
            for (int j = 0; j < d->nfunctions; j++)
                if (d->function[j].id == d->location[i].function_id)
                    return j;
    return -1;
}

static uint64_t line_of_location(const decoded *d, uint64_t location_id)
{
    for (int i = 0; i < d->nlocations; i++)
        if (d->location[i].id == location_id)
            return d->location[i].line;
    return UINT64_MAX;
}

TEST(pprof_writes_functions_locations_and_samples)
{
    profile *p = small_cpu_profile();
    static decoded d;
    CHECK(decode_written(p, &d) == 0);
    /* Four frames, three functions: HashMap.get at two lines is one function. */
    CHECK(d.nlocations == 4 && d.nfunctions == 3);
    int get = function_of_location(&d, 1), get2 = function_of_location(&d, 2);
    CHECK(get >= 0 && get == get2);
    CHECK_STR(str(&d, d.function[get].name), "java.util.HashMap.get");
    CHECK_STR(str(&d, d.function[get].system_name),
              "java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;");
    CHECK_STR(str(&d, d.function[get].filename), "HashMap.java");
    CHECK(line_of_location(&d, 1) == 556 && line_of_location(&d, 2) == 557);
    CHECK(line_of_location(&d, 4) == 0);                         /* native: no line */
    int copy = function_of_location(&d, 4);
    CHECK(copy >= 0 && strcmp(str(&d, d.function[copy].system_name), "java.lang.System.arraycopy") == 0);
    CHECK(d.nsamples == 3);
    /* leaf first, both values, the thread as a string label (none for "") */
    CHECK(d.sample[0].nloc == 2 && d.sample[0].loc[0] == 1 && d.sample[0].loc[1] == 3);
    CHECK(d.sample[0].nval == 2 && d.sample[0].val[0] == 3 && d.sample[0].val[1] == 30000000);
    CHECK_STR(str(&d, d.sample[0].label_key), "thread");
    CHECK_STR(str(&d, d.sample[0].label_str), "main");
    CHECK(d.sample[1].label_key == 0 && d.sample[1].val[0] == 1);
    CHECK_STR(str(&d, d.sample[2].label_str), "worker-1");
    CHECK(d.sample[2].loc[0] == 4);
    profile_free(p);
}

TEST(pprof_reports_write_errors)
{
    profile *p = small_cpu_profile();
    FILE *full = fopen("/dev/full", "w");
    char err[128] = "";
    if (full != NULL) {
        CHECK(pprof_write(p, full, err, sizeof err) == -1);
        CHECK(strstr(err, "pprof: write error") != NULL);
        fclose(full);
    }
    profile_free(p);
}
