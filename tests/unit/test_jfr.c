/* Unit tests: the JFR reader (src/jfr) and its loading into hprof_data
 * (src/reader/hprof_jfr_reader.c) on small recordings built here byte by
 * byte: whole, in two chunks, cut at every length, corrupted, and with
 * hostile metadata. */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "jfr/jfr_reader.h"
#include "profile/jfr_writer.h"
#include "reader/hprof_data.h"

/* ------------------------------------------------------------ a builder */

typedef struct bytes {
    unsigned char b[16384];
    size_t n;
} bytes;

static void u8(bytes *o, unsigned v)
{
    if (o->n < sizeof o->b)
        o->b[o->n++] = (unsigned char)v;
}

/* LEB128, as JFR compresses integers. */
static void leb(bytes *o, uint64_t v)
{
    for (int i = 0; i < 8 && v >= 0x80; i++, v >>= 7)
        u8(o, (unsigned)(v & 0x7f) | 0x80);
    u8(o, (unsigned)v);
}

static void be(bytes *o, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--)
        u8(o, (unsigned)(v >> (8 * i)) & 0xff);
}

static void append(bytes *o, const bytes *x)
{
    for (size_t i = 0; i < x->n; i++)
        u8(o, x->b[i]);
}

/* encodings: 3 UTF-8, 4 char array, 5 Latin-1 */
static void str(bytes *o, int encoding, const char *s)
{
    size_t n = strlen(s);
    u8(o, (unsigned)encoding);
    leb(o, n);
    for (size_t i = 0; i < n; i++) {
        if (encoding == 4)
            leb(o, (unsigned char)s[i]);
        else
            u8(o, (unsigned char)s[i]);
    }
}

/* An event: its size as the JDK writes it (a 4-byte padded LEB128 that
 * counts itself), its type, its payload. */
static void event(bytes *o, uint64_t type, const bytes *payload)
{
    bytes head = { .n = 0 };
    leb(&head, type);
    size_t size = 4 + head.n + payload->n;
    u8(o, (unsigned)(size & 0x7f) | 0x80);
    u8(o, (unsigned)(size >> 7 & 0x7f) | 0x80);
    u8(o, (unsigned)(size >> 14 & 0x7f) | 0x80);
    u8(o, (unsigned)(size >> 21 & 0x7f));
    append(o, &head);
    append(o, payload);
}

/* The metadata's string table, built as the element tree names strings. */
typedef struct names {
    const char *s[128];
    int n;
} names;

static unsigned name(names *t, const char *s)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->s[i], s) == 0)
            return (unsigned)i;
    t->s[t->n] = s;
    return (unsigned)t->n++;
}

/* <field name=.. class=.. [constantPool=true] [dimension=1]/> */
static void field(bytes *o, names *t, const char *fname, const char *cls, int pooled, int array)
{
    leb(o, name(t, "field"));
    leb(o, 2u + (pooled != 0) + (array != 0));
    leb(o, name(t, "name"));
    leb(o, name(t, fname));
    leb(o, name(t, "class"));
    leb(o, name(t, cls));
    if (pooled) {
        leb(o, name(t, "constantPool"));
        leb(o, name(t, "true"));
    }
    if (array) {
        leb(o, name(t, "dimension"));
        leb(o, name(t, "1"));
    }
    leb(o, 0);
}

/* <class name=.. id=..> then nfields fields (written by the caller) */
static void class_start(bytes *o, names *t, const char *cname, const char *id, int nfields)
{
    leb(o, name(t, "class"));
    leb(o, 2);
    leb(o, name(t, "name"));
    leb(o, name(t, cname));
    leb(o, name(t, "id"));
    leb(o, name(t, id));
    leb(o, (uint64_t)nfields);
}

enum { HOSTILE_NONE, HOSTILE_SELF_NESTED };

/* The types, each field "name class [p(ooled)] [a(rray)]": long 10, int 11,
 * boolean 12, String 13, Symbol 20, Class 21, Method 22, FrameType 23,
 * StackFrame 24, StackTrace 25, Thread 26, ExecutionSample 100,
 * JavaMonitorEnter 101, and an event hprof does not read, 102. */
static const struct type_spec {
    const char *name, *id;
    const char *fields[6];
} TYPES[] = {
    { "long", "10", { NULL } }, { "int", "11", { NULL } }, { "boolean", "12", { NULL } },
    { "java.lang.String", "13", { NULL } },
    { "jdk.types.Symbol", "20", { "string 13" } },
    { "java.lang.Class", "21", { "name 20 p" } },
    { "jdk.types.Method", "22", { "type 21 p", "name 20 p", "descriptor 20 p" } },
    { "jdk.types.FrameType", "23", { "description 13" } },
    { "jdk.types.StackFrame", "24", { "method 22 p", "lineNumber 11", "type 23 p" } },
    { "jdk.types.StackTrace", "25", { "truncated 12", "frames 24 a" } },
    { "java.lang.Thread", "26", { "javaName 13", "javaThreadId 10" } },
    { "jdk.ExecutionSample", "100", { "startTime 10", "sampledThread 26 p", "stackTrace 25 p" } },
    { "jdk.JavaMonitorEnter", "101", { "startTime 10", "duration 10", "eventThread 26 p", "stackTrace 25 p",
                                       "monitorClass 21 p" } },
    { "jdk.SomethingElse", "102", { "value 10" } },
};

/* hostile: Class also holds itself inline (values that never end). */
static void metadata(bytes *o, int hostile)
{
    names t = { .n = 0 };
    bytes tree = { .n = 0 };
    static char specs[64][3][32];
    int nspecs = 0;
    const int ntypes = (int)(sizeof TYPES / sizeof TYPES[0]);
    leb(&tree, name(&t, "root"));
    leb(&tree, 0);
    leb(&tree, 1);
    leb(&tree, name(&t, "metadata"));
    leb(&tree, 0);
    leb(&tree, (uint64_t)ntypes);
    for (int i = 0; i < ntypes; i++) {
        int n = 0;
        while (n < 6 && TYPES[i].fields[n])
            n++;
        int self = hostile == HOSTILE_SELF_NESTED && strcmp(TYPES[i].id, "21") == 0;
        class_start(&tree, &t, TYPES[i].name, TYPES[i].id, n + self);
        for (int f = 0; f < n; f++) {
            char *parts = specs[nspecs][0], *cls = specs[nspecs][1], *flags = specs[nspecs][2];
            flags[0] = '\0';
            sscanf(TYPES[i].fields[f], "%31s %31s %31s", parts, cls, flags);
            field(&tree, &t, parts, cls, strchr(flags, 'p') != NULL, strchr(flags, 'a') != NULL);
            nspecs++;
        }
        if (self)
            field(&tree, &t, "self", "21", 0, 0);
    }

    bytes p = { .n = 0 };
    leb(&p, 0);          /* start, duration, metadata id */
    leb(&p, 0);
    leb(&p, 1);
    leb(&p, (uint64_t)t.n);
    for (int i = 0; i < t.n; i++)
        str(&p, 3, t.s[i]);
    append(&p, &tree);
    event(o, 0, &p);
}

static void checkpoint(bytes *o)
{
    bytes p = { .n = 0 };
    leb(&p, 0);          /* start, duration, delta, kind */
    leb(&p, 0);
    leb(&p, 0);
    u8(&p, 0);
    leb(&p, 8);          /* pools */
    leb(&p, 13);         /* String: 7 "JIT compiled" */
    leb(&p, 1);
    leb(&p, 7);
    str(&p, 3, "JIT compiled");
    leb(&p, 20);         /* Symbol: 1 "Demo" (Latin-1), 2 "hot", 3 "()V", 4 "cold" */
    leb(&p, 4);
    leb(&p, 1);
    str(&p, 5, "Demo");
    leb(&p, 2);
    str(&p, 3, "hot");
    leb(&p, 3);
    str(&p, 3, "()V");
    leb(&p, 4);
    str(&p, 3, "cold");
    leb(&p, 21);         /* Class: 1 -> Symbol 1 */
    leb(&p, 1);
    leb(&p, 1);
    leb(&p, 1);
    leb(&p, 22);         /* Method: 1 Demo.hot()V, 2 Demo.cold()V */
    leb(&p, 2);
    leb(&p, 1);
    leb(&p, 1);
    leb(&p, 2);
    leb(&p, 3);
    leb(&p, 2);
    leb(&p, 1);
    leb(&p, 4);
    leb(&p, 3);
    leb(&p, 23);         /* FrameType: 1 the pooled string 7, 2 "Interpreted" */
    leb(&p, 2);
    leb(&p, 1);
    u8(&p, 2);
    leb(&p, 7);
    leb(&p, 2);
    str(&p, 3, "Interpreted");
    leb(&p, 25);         /* StackTrace 1: hot:10 (JIT), cold:20 (interpreted) */
    leb(&p, 1);
    leb(&p, 1);
    u8(&p, 0);
    leb(&p, 2);
    leb(&p, 1);
    leb(&p, 10);
    leb(&p, 1);
    leb(&p, 2);
    leb(&p, 20);
    leb(&p, 2);
    leb(&p, 26);         /* Thread 1: "main" (a char array), id 1 */
    leb(&p, 1);
    leb(&p, 1);
    str(&p, 4, "main");
    leb(&p, 1);
    leb(&p, 24);         /* (an empty pool of a type) */
    leb(&p, 0);
    event(o, 1, &p);
}

static void chunk(bytes *o, int hostile)
{
    size_t start = o->n;
    bytes body = { .n = 0 };
    size_t meta_at = 68;
    metadata(&body, hostile);
    size_t pool_at = 68 + body.n;
    checkpoint(&body);
    for (int i = 0; i < 3; i++) {          /* three samples, thread 1, stack 1 */
        bytes e = { .n = 0 };
        leb(&e, 1000 + (uint64_t)i);
        leb(&e, 1);
        leb(&e, 1);
        event(&body, 100, &e);
    }
    bytes e = { .n = 0 };                  /* a 5 ms contended enter on Demo */
    leb(&e, 2000);
    leb(&e, 5000000);
    leb(&e, 1);
    leb(&e, 1);
    leb(&e, 1);
    event(&body, 101, &e);
    bytes x = { .n = 0 };                  /* not read: skipped by its size */
    leb(&x, 42);
    event(&body, 102, &x);
    bytes s = { .n = 0 };                  /* a sample whose stack no pool holds: no stack */
    leb(&s, 3000);
    leb(&s, 1);
    leb(&s, 99);
    event(&body, 100, &s);
    be(o, 0x464c5200, 4);
    be(o, 2, 2);
    be(o, 1, 2);
    be(o, 68 + body.n, 8);
    be(o, pool_at, 8);
    be(o, meta_at, 8);
    be(o, 1700000000000000000ull, 8);     /* start */
    be(o, 2000000000ull, 8);              /* duration */
    be(o, 0, 8);                          /* start ticks */
    be(o, 1000000000ull, 8);              /* ticks per second */
    be(o, 1, 4);                          /* compressed integers */
    append(o, &body);
    (void)start;
}

static hprof_data *read_jfr(const bytes *b, size_t len, char *err, size_t errlen)
{
    unsigned char *copy = malloc(len ? len : 1);     /* exactly sized, for ASan */
    memcpy(copy, b->b, len);
    hprof_data *d = hprof_jfr_parse("rec.jfr", copy, len, err, errlen);
    free(copy);
    if (d && hprof_data_build_profiles(d, err, errlen) != 0) {
        hprof_data_free(d);
        d = NULL;
    }
    return d;
}

/* ------------------------------------------------------------ tests */

TEST(jfr_reads_samples_stacks_and_monitors)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_NONE);
    char err[512] = "";
    hprof_data *d = read_jfr(&b, b.n, err, sizeof err);
    CHECK(d != NULL);
    if (d == NULL) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    const profile *cpu = d->profiles[HD_CPU_SAMPLES];
    CHECK(cpu != NULL && profile_total(cpu, 0) == 4);
    CHECK(d->sections[HD_CPU_SAMPLES].total == 4);
    /* the three samples: leaf Demo.hot:10 compiled (its FrameType's
     * description a pooled string), then Demo.cold:20 interpreted, on "main" */
    profile_sample s;
    int found = 0;
    for (uint32_t i = 0; cpu && profile_sample_get(cpu, i, &s) == 0; i++) {
        if (s.depth != 2)
            continue;
        const profile_frame *leaf = profile_frame_get(cpu, s.frames[0]);
        const profile_frame *caller = profile_frame_get(cpu, s.frames[1]);
        CHECK_STR(leaf->class_name, "Demo");
        CHECK_STR(leaf->method, "hot");
        CHECK_STR(leaf->signature, "()V");
        CHECK(leaf->line == 10 && leaf->run == PROFILE_RUN_COMPILED);
        CHECK_STR(caller->method, "cold");
        CHECK(caller->line == 20 && caller->run == PROFILE_RUN_INTERPRETED);
        CHECK_STR(s.thread, "main");
        CHECK(s.values[0] == 3);
        found = 1;
    }
    CHECK(found);
    const profile *mon = d->profiles[HD_MONITOR_TIME];
    CHECK(mon != NULL && profile_total(mon, 0) == 1 && profile_total(mon, 1) == 5000000);
    CHECK(d->profiles[HD_SITES] == NULL && d->profiles[HD_MONITOR_WAIT] == NULL);
    CHECK(d->nthreads == 1 && strcmp(d->threads[0].name, "main") == 0);
    CHECK(d->events_read && strstr(d->events_read, "6 in 1 chunk") &&
          strstr(d->events_read, "jdk.ExecutionSample 4") && strstr(d->events_read, "jdk.JavaMonitorEnter 1"));
    CHECK(d->duration_ms == 2000 && d->start_ms == 1700000000000ll);
    hprof_data_free(d);
}

TEST(jfr_reads_every_chunk)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_NONE);
    chunk(&b, HOSTILE_NONE);
    char err[512] = "";
    hprof_data *d = read_jfr(&b, b.n, err, sizeof err);
    CHECK(d != NULL && profile_total(d->profiles[HD_CPU_SAMPLES], 0) == 8);
    CHECK(d && strstr(d->events_read, "in 2 chunks"));
    hprof_data_free(d);
}

TEST(jfr_refuses_every_truncation_with_the_offset)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_NONE);
    for (size_t len = 0; len < b.n; len++) {
        char err[512] = "";
        hprof_data *d = read_jfr(&b, len, err, sizeof err);
        CHECK(d == NULL);
        CHECK(strncmp(err, "rec.jfr: offset ", 16) == 0);
        hprof_data_free(d);
    }
}

TEST(jfr_survives_corruption)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_NONE);
    chunk(&b, HOSTILE_NONE);
    uint32_t seed = 12345;
    for (int round = 0; round < 3000; round++) {
        bytes c = b;
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = 68 + (seed >> 8) % (c.n - 68);      /* the header's faults are tested above */
            seed = seed * 1103515245u + 12345u;
            c.b[at] = (unsigned char)(seed >> 16);
        }
        char err[512] = "";
        hprof_data *d = read_jfr(&c, c.n, err, sizeof err);
        CHECK(d != NULL || strncmp(err, "rec.jfr", 7) == 0);
        hprof_data_free(d);
    }
}

TEST(jfr_refuses_values_that_never_end)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_SELF_NESTED);
    char err[512] = "";
    hprof_data *d = read_jfr(&b, b.n, err, sizeof err);
    CHECK(d == NULL);
    CHECK(strstr(err, "rec.jfr: offset") && strstr(err, "nest"));
    hprof_data_free(d);
}

TEST(jfr_errors_say_what_is_wrong)
{
    bytes b = { .n = 0 };
    chunk(&b, HOSTILE_NONE);
    char err[512];
    bytes v = b;
    v.b[5] = 1;                            /* version 1.x */
    hprof_data *d = read_jfr(&v, v.n, err, sizeof err);
    CHECK(d == NULL && strstr(err, "version 1.1"));
    v = b;
    memset(v.b + 8, 0, 8);                 /* chunk size 0: still being written */
    d = read_jfr(&v, v.n, err, sizeof err);
    CHECK(d == NULL && strstr(err, "JFR.dump"));
    v = b;
    v.b[v.n++] = 'x';                      /* garbage after the chunk */
    d = read_jfr(&v, v.n, err, sizeof err);
    CHECK(d == NULL && strstr(err, "offset"));
}

/* The writer (src/profile/jfr_writer.c) read back by the reader: every
 * sample, frame, line, run and thread as the profile had them. */
TEST(jfr_writer_round_trip)
{
    profile_value_type types[] = { { "samples", "count" } };
    profile *p = profile_new("CPU samples", types, 1);
    uint32_t hot = profile_frame_id_run(p, "Demo", "hot", "(I)V", "Demo.java", 10, PROFILE_RUN_INLINED);
    uint32_t cold = profile_frame_id_run(p, "Demo", "cold", "()V", "Demo.java", 20, PROFILE_RUN_COMPILED);
    uint32_t main_ = profile_frame_id_run(p, "Demo", "main", "([Ljava/lang/String;)V", "Demo.java", 30,
                                          PROFILE_RUN_INTERPRETED);
    uint32_t native = profile_frame_id(p, "", "SR_handler", "", "libjvm.so", PROFILE_LINE_NATIVE);
    uint32_t s1[] = { hot, cold, main_ }, s2[] = { native, cold, main_ };
    int64_t seven = 7, two = 2;
    CHECK(profile_add(p, s1, 3, "main", &seven) == 0 && profile_add(p, s2, 3, "worker", &two) == 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256] = "";
    const profile *one = p;
    CHECK(jfr_write(&one, 1, f, err, sizeof err) == 0);
    fclose(f);
    hprof_data *d = hprof_jfr_parse("written.jfr", (const unsigned char *)buf, len, err, sizeof err);
    CHECK(d != NULL && hprof_data_build_profiles(d, err, sizeof err) == 0);
    const profile *q = d ? d->profiles[HD_CPU_SAMPLES] : NULL;
    CHECK(q != NULL && profile_total(q, 0) == 9);
    profile_sample s;
    int seen = 0;
    for (uint32_t i = 0; q && profile_sample_get(q, i, &s) == 0; i++) {
        CHECK(s.depth == 3);
        const profile_frame *leaf = profile_frame_get(q, s.frames[0]), *top = profile_frame_get(q, s.frames[2]);
        CHECK_STR(top->method, "main");
        CHECK(top->line == 30 && top->run == PROFILE_RUN_INTERPRETED);
        CHECK_STR(top->signature, "([Ljava/lang/String;)V");
        if (strcmp(s.thread, "main") == 0) {
            CHECK(s.values[0] == 7 && leaf->line == 10 && leaf->run == PROFILE_RUN_INLINED);
            CHECK_STR(leaf->class_name, "Demo");
            seen |= 1;
        } else {
            CHECK(s.values[0] == 2 && leaf->line == PROFILE_LINE_NATIVE);
            CHECK_STR(s.thread, "worker");
            CHECK_STR(leaf->class_name, "[libjvm.so]");
            CHECK_STR(leaf->method, "SR_handler");
            seen |= 2;
        }
    }
    CHECK(seen == 3);
    hprof_data_free(d);
    profile_free(p);
    free(buf);
}

/* A profile of one stack: a pseudo leaf (a class, or NULL), then the
 * frames; values as given. */
static profile *one_stack(const char *title, const profile_value_type *types, uint32_t nvalues, const char *leaf,
                          const char *const *methods, uint32_t depth, const char *thread, const int64_t *values)
{
    profile *p = profile_new(title, types, nvalues);
    uint32_t ids[8], n = 0;
    if (leaf)      /* a lock's class whose row parks: noted as monitor=y notes it */
        ids[n++] = profile_frame_id(p, "", leaf, strstr(leaf, "Sync") ? "park" : "", "", PROFILE_LINE_UNKNOWN);
    for (uint32_t i = 0; i < depth; i++) {
        const char *dot = strrchr(methods[i], '.');
        char cls[128];
        snprintf(cls, sizeof cls, "%.*s", (int)(dot - methods[i]), methods[i]);
        ids[n++] = profile_frame_id(p, cls, dot + 1, "()V", "X.java", 10 + (int32_t)i);
    }
    CHECK(profile_add(p, ids, n, thread, values) == 0);
    return p;
}

/* Every kind the writer takes, in one recording, read back: sampled
 * allocations as jdk.ObjectAllocationSample (their bytes), contention as
 * jdk.JavaMonitorEnter, a park as jdk.ThreadPark, a wait as
 * jdk.JavaMonitorWait (counts and delays), wall= samples by state, and
 * cpu=times and sites as hprof's own events (CPU TIME, SITES with live
 * counts). */
TEST(jfr_writer_every_kind)
{
    static const profile_value_type alloc[] = { { "alloc_objects", "count" }, { "alloc_space", "bytes" },
                                                { "inuse_objects", "count" }, { "inuse_space", "bytes" } };
    static const profile_value_type lock[] = { { "contentions", "count" }, { "delay", "nanoseconds" } };
    static const profile_value_type wait[] = { { "waits", "count" }, { "delay", "nanoseconds" } };
    static const profile_value_type times[] = { { "calls", "count" }, { "cpu", "nanoseconds" } };
    static const profile_value_type wall[] = { { "samples", "count" }, { "wall", "nanoseconds" } };
    const char *site[] = { "App.make", "App.main" };
    const char *enter[] = { "App.sync", "App.main" };
    const char *park[] = { "java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire", "App.lock" };
    const char *waits[] = { "java.lang.Object.wait", "App.await" };
    const char *sleep[] = { "java.lang.Thread.sleep", "App.nap", "[state].sleeping" };
    const int64_t a[] = { 40, 4000, 10, 1000 }, e[] = { 3, 3000001 }, pk[] = { 2, 500 }, w[] = { 1, 7000 },
                  t[] = { 100, 9000 }, s[] = { 5, 50 };
    profile *ps[] = {
        one_stack("Allocation sites (estimated from samples)", alloc, 4, "byte[]", site, 2, "main", a),
        one_stack("Lock contention", lock, 2, "App$Gate", enter, 2, "t1", e),
        one_stack("Lock contention", lock, 2, "java.util.concurrent.locks.ReentrantLock$NonfairSync", park, 2,
                  "t2", pk),
        one_stack("Monitor waits", wait, 2, "App$Box", waits, 2, "t3", w),
        one_stack("CPU time", times, 2, NULL, site, 2, "main", t),
        one_stack("Wall clock", wall, 2, NULL, sleep, 3, "main", s),
    };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256] = "";
    CHECK(jfr_write((const profile *const *)ps, 6, f, err, sizeof err) == 0);
    fclose(f);
    hprof_data *d = hprof_jfr_parse("kinds.jfr", (const unsigned char *)buf, len, err, sizeof err);
    CHECK(d != NULL && hprof_data_build_profiles(d, err, sizeof err) == 0);
    const profile *sites = d ? d->profiles[HD_SITES] : NULL, *mon = d ? d->profiles[HD_MONITOR_TIME] : NULL,
                  *wt = d ? d->profiles[HD_MONITOR_WAIT] : NULL;
    /* SITES from hprof.AllocationSite (the sample's weight not added again):
     * live bytes, live objects, allocated bytes, allocated objects */
    CHECK(sites && profile_total(sites, 0) == 1000 && profile_total(sites, 1) == 10 &&
          profile_total(sites, 2) == 4000 && profile_total(sites, 3) == 40);
    const profile *tm = d ? d->profiles[HD_CPU_TIMES] : NULL;
    CHECK(tm && profile_total(tm, 0) == 100 && profile_total(tm, 1) == 9000);
    CHECK(d && strstr(d->events_read, "hprof.AllocationSite holds the same"));
    /* the section taken from hprof.AllocationSite has a date, "" (convert --to text prints it; fuzz_jfr_reader) */
    CHECK(d && d->sections[HD_SITES].date != NULL);
    CHECK(mon && profile_total(mon, 0) == 3 && profile_total(mon, 1) == 3000001);
    /* the park and the wait: MONITOR WAIT TIME, as the reader files jdk.ThreadPark */
    CHECK(wt && profile_total(wt, 0) == 3 && profile_total(wt, 1) == 7500);
    profile_sample smp;
    CHECK(sites && profile_sample_get(sites, 0, &smp) == 0 && smp.depth == 3);
    if (sites && smp.depth == 3) {
        CHECK_STR(profile_frame_get(sites, smp.frames[0])->method, "byte[]");
        CHECK_STR(profile_frame_get(sites, smp.frames[1])->method, "make");
    }
    /* wall=: sleeping threads are jdk.NativeMethodSample, which the reader skips; no CPU samples */
    CHECK(d && d->profiles[HD_CPU_SAMPLES] == NULL);
    CHECK(memmem(buf, len, "STATE_SLEEPING", 14) != NULL);
    hprof_data_free(d);
    for (int i = 0; i < 6; i++)
        profile_free(ps[i]);
    free(buf);
}

/* What the Deadlock test's reader gathers of each hprof.Deadlock event. */
typedef struct deadlock_seen {
    int  n;
    char line[4][512];           /* "cycle/threads thread lock owner parked leaf-method depth" */
} deadlock_seen;

static int on_deadlock_event(void *ctx, const jfr_event *e)
{
    deadlock_seen *seen = ctx;
    if (strcmp(e->type_name, "hprof.Deadlock") != 0 || seen->n == 4)
        return 0;
    jfr_value v, frames, frame;
    char thread[64] = "", lock[64] = "", owner[64] = "", leaf[64] = "";
    int64_t cycle = 0, threads = 0, parked = -1;
    uint64_t depth = 0;
    if (jfr_path(&e->fields, &v, "eventThread", "javaName", NULL) == 0)
        jfr_string(&v, thread, sizeof thread);
    if (jfr_path(&e->fields, &v, "lockClass", "name", NULL) == 0)
        jfr_string(&v, lock, sizeof lock);
    if (jfr_path(&e->fields, &v, "lockOwner", "javaName", NULL) == 0)
        jfr_string(&v, owner, sizeof owner);
    if (jfr_field(&e->fields, "cycle", &v) == 0)
        jfr_long(&v, &cycle);
    if (jfr_field(&e->fields, "cycleThreads", &v) == 0)
        jfr_long(&v, &threads);
    if (jfr_field(&e->fields, "parked", &v) == 0)
        jfr_long(&v, &parked);
    if (jfr_path(&e->fields, &frames, "stackTrace", "frames", NULL) == 0 && jfr_array(&frames, &depth, &frame) == 0 &&
        depth > 0 && jfr_array_next(&frame, &v) == 0 && jfr_path(&v, &v, "method", "name", NULL) == 0)
        jfr_string(&v, leaf, sizeof leaf);
    snprintf(seen->line[seen->n++], sizeof seen->line[0], "%lld/%lld %s %s %s %lld %s %llu", (long long)cycle,
             (long long)threads, thread, lock, owner, (long long)parked, leaf, (unsigned long long)depth);
    return 0;
}

/* monitor=y's deadlocks, carried by its lock profile, become one
 * hprof.Deadlock per thread: each names its lock's class and owner (the
 * next thread of the cycle) and its stack; a recording without deadlocks
 * does not declare the type. */
TEST(jfr_writer_deadlocks)
{
    profile_value_type types[] = { { "contentions", "count" }, { "delay", "nanoseconds" } };
    profile *p = profile_new("Lock contention", types, 2);
    uint32_t run_a = profile_frame_id(p, "Demo", "lockBoth", "()V", "Demo.java", 12);
    uint32_t run_b = profile_frame_id(p, "Demo", "lockBothBackwards", "()V", "Demo.java", 20);
    uint32_t park = profile_frame_id(p, "jdk.internal.misc.Unsafe", "park", "(ZJ)V", "", PROFILE_LINE_NATIVE);
    uint32_t stack_a[] = { run_a }, stack_b[] = { park, run_b };
    char *buf = NULL;
    size_t len = 0;
    char err[256] = "";
    const profile *one = p;
    FILE *f = open_memstream(&buf, &len);
    CHECK(jfr_write(&one, 1, f, err, sizeof err) == 0);
    fclose(f);
    CHECK(memmem(buf, len, "hprof.Deadlock", 14) == NULL);
    free(buf);

    profile_deadlock_thread cycle[] = { { "dl-a", "Demo$LockB", 0, stack_a, 1 },
                                        { "dl-b", "java.util.concurrent.locks.ReentrantLock$NonfairSync", 1, stack_b,
                                          2 } };
    uint32_t bad[] = { 999 };
    profile_deadlock_thread bad_stack[] = { { "x", "y", 0, bad, 1 } };
    CHECK(profile_add_deadlock(p, bad_stack, 1) == -1 && profile_add_deadlock(p, cycle, 0) == -1);
    CHECK(profile_add_deadlock(p, cycle, 2) == 0 && profile_deadlock_count(p) == 1);
    uint32_t n = 0;
    const profile_deadlock_thread *kept = profile_deadlock_get(p, 0, &n);
    CHECK(kept != NULL && n == 2 && profile_deadlock_get(p, 1, &n) == NULL);
    f = open_memstream(&buf, &len);
    CHECK(jfr_write(&one, 1, f, err, sizeof err) == 0);
    fclose(f);
    deadlock_seen seen = { 0 };
    jfr_callbacks cb = { NULL, on_deadlock_event };
    CHECK(jfr_read("deadlocks.jfr", (const unsigned char *)buf, len, &cb, &seen, err, sizeof err) == 0);
    CHECK(seen.n == 2);
    CHECK_STR(seen.line[0], "1/2 dl-a Demo$LockB dl-b 0 lockBoth 1");
    CHECK_STR(seen.line[1], "1/2 dl-b java/util/concurrent/locks/ReentrantLock$NonfairSync dl-a 1 park 2");
    free(buf);
    profile_free(p);
}
