/* jfr_writer.c: see jfr_writer.h. The layout is the one src/jfr/jfr_reader.c
 * reads (docs/formats.md "JFR recordings"); integers are LEB128, which
 * protobuf's varints are for values below 2^63. */
#include "jfr_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/keytab.h"
#include "protobuf.h"

#define HEADER_SIZE 68
#define JFR_MAX_EVENTS 20000000     /* about 200 MB of events */

/* Type ids of this writer's metadata (any ids: a reader takes them from it). */
enum {
    T_BOOLEAN = 20, T_INT, T_LONG, T_STRING,
    T_THREAD = 30, T_CLASS, T_SYMBOL, T_PACKAGE, T_METHOD, T_FRAME_TYPE, T_STACK_FRAME, T_STACK_TRACE,
    T_THREAD_STATE, T_TIMESTAMP, T_EVENT_SAMPLE = 100,
};

/* Frame types' keys, in this order. */
static const char *const FRAME_TYPES[] = { "Interpreted", "JIT compiled", "Inlined", "Native" };

/* An event: its size first, counting itself, padded to 4 bytes as the
 * JDK writes it (so it can be written before its length is known), then
 * body (the type id and the payload). */
static void event(pb_buf *out, const pb_buf *body)
{
    uint64_t size = body->len + 4;
    uint8_t padded[4] = { (uint8_t)((size & 0x7f) | 0x80), (uint8_t)(((size >> 7) & 0x7f) | 0x80),
                          (uint8_t)(((size >> 14) & 0x7f) | 0x80), (uint8_t)((size >> 21) & 0x7f) };
    if (size >= 1u << 28)
        out->failed = 1;
    pb_append(out, padded, 4);
    pb_append(out, body->data, body->len);
    if (body->failed)
        out->failed = 1;
}

/* ------------------------------------------------------------ metadata */

typedef struct names {
    keytab strings;          /* the string table: index = position */
} names;

static uint64_t name_of(names *n, const char *s)
{
    return keytab_intern(&n->strings, s, (uint32_t)strlen(s), NULL);
}

static void jstring(pb_buf *b, const char *s)
{
    size_t n = strlen(s);
    uint8_t enc = n ? 3 : 1;            /* UTF-8, or the empty string */
    pb_append(b, &enc, 1);
    if (n) {
        pb_varint(b, n);
        pb_append(b, s, n);
    }
}

/* An element: name, attributes (pairs of strings, NULL-ended), and nchildren children to follow. */
static void element(pb_buf *b, names *n, const char *name, const char *const *attrs, uint32_t nchildren)
{
    uint32_t nattrs = 0;
    while (attrs && attrs[2 * nattrs])
        nattrs++;
    pb_varint(b, name_of(n, name));
    pb_varint(b, nattrs);
    for (uint32_t i = 0; i < nattrs; i++) {
        pb_varint(b, name_of(n, attrs[2 * i]));
        pb_varint(b, name_of(n, attrs[2 * i + 1]));
    }
    pb_varint(b, nchildren);
}

/* One type: "name id [superType] : field class flags, ..." as the table below says. */
typedef struct type_decl {
    const char *name, *super;
    int         id;
    const char *fields[6];     /* "name class_id [p][a][t]": pooled, array, a tick timestamp */
} type_decl;

/* The JDK's types, with the fields (names, types, order) it declares for
 * them. Symbol, FrameType and ThreadState are "simple types" (one field,
 * which readers show in the type's place: a class's name is a string). */
static const type_decl TYPES[] = {
    { "boolean", NULL, T_BOOLEAN, { NULL } },
    { "int", NULL, T_INT, { NULL } },
    { "long", NULL, T_LONG, { NULL } },
    { "java.lang.String", NULL, T_STRING, { NULL } },
    { "java.lang.Thread", NULL, T_THREAD, { "osName 23", "osThreadId 22", "javaName 23", "javaThreadId 22" } },
    { "java.lang.Class", NULL, T_CLASS, { "name 32 p", "package 33 p", "modifiers 21", "hidden 20" } },
    { "jdk.types.Symbol", NULL, T_SYMBOL, { "string 23" } },
    { "jdk.types.Package", NULL, T_PACKAGE, { "name 32 p", "exported 20" } },
    { "jdk.types.Method", NULL, T_METHOD, { "type 31 p", "name 32 p", "descriptor 32 p", "modifiers 21",
                                            "hidden 20" } },
    { "jdk.types.FrameType", NULL, T_FRAME_TYPE, { "description 23" } },
    { "jdk.types.StackFrame", NULL, T_STACK_FRAME, { "method 34 p", "lineNumber 21", "bytecodeIndex 21",
                                                     "type 35 p" } },
    { "jdk.types.StackTrace", NULL, T_STACK_TRACE, { "truncated 20", "frames 36 a" } },
    { "jdk.types.ThreadState", NULL, T_THREAD_STATE, { "name 23" } },
    { "jdk.jfr.Timestamp", "java.lang.annotation.Annotation", T_TIMESTAMP, { "value 23" } },
    { "jdk.ExecutionSample", "jdk.jfr.Event", T_EVENT_SAMPLE, { "startTime 22 t", "sampledThread 30 p",
                                                                "stackTrace 37 p", "state 38 p" } },
};

static void metadata_event(pb_buf *out, int64_t start_ticks)
{
    names n;
    keytab_init(&n.strings, 1u << 20);
    pb_buf tree = { 0 };
    const uint32_t ntypes = sizeof TYPES / sizeof TYPES[0];
    element(&tree, &n, "root", NULL, 2);
    element(&tree, &n, "metadata", NULL, ntypes);
    for (uint32_t i = 0; i < ntypes; i++) {
        const type_decl *t = &TYPES[i];
        char id[16];
        snprintf(id, sizeof id, "%d", t->id);
        uint32_t nfields = 0;
        while (nfields < 6 && t->fields[nfields])
            nfields++;
        int simple = t->id == T_SYMBOL || t->id == T_FRAME_TYPE || t->id == T_THREAD_STATE;
        const char *attrs[] = { "name", t->name, "id", id, t->super ? "superType" : simple ? "simpleType" : NULL,
                                t->super ? t->super : "true", NULL };
        element(&tree, &n, "class", attrs, nfields);
        for (uint32_t f = 0; f < nfields; f++) {
            char fname[32], cls[16], flags[8] = "";
            sscanf(t->fields[f], "%31s %15s %7s", fname, cls, flags);
            const char *fattrs[7 * 2 + 1];
            uint32_t k = 0;
            fattrs[k++] = "name";
            fattrs[k++] = fname;
            fattrs[k++] = "class";
            fattrs[k++] = cls;
            if (strchr(flags, 'p')) {
                fattrs[k++] = "constantPool";
                fattrs[k++] = "true";
            }
            if (strchr(flags, 'a')) {
                fattrs[k++] = "dimension";
                fattrs[k++] = "1";
            }
            fattrs[k] = NULL;
            int stamped = strchr(flags, 't') != NULL;
            element(&tree, &n, "field", fattrs, stamped ? 1 : 0);
            if (stamped) {          /* @Timestamp("TICKS"): readers show it as a time */
                char ts[16];
                snprintf(ts, sizeof ts, "%d", T_TIMESTAMP);
                const char *aattrs[] = { "class", ts, "value", "TICKS", NULL };
                element(&tree, &n, "annotation", aattrs, 0);
            }
        }
    }
    const char *region[] = { "locale", "en_US", "gmtOffset", "0", NULL };
    element(&tree, &n, "region", region, 0);

    pb_buf body = { 0 };
    pb_varint(&body, 0);                 /* event type: metadata */
    pb_varint(&body, (uint64_t)start_ticks);
    pb_varint(&body, 0);                 /* duration */
    pb_varint(&body, 1);                 /* metadata id */
    pb_varint(&body, n.strings.count);
    for (uint32_t i = 0; i < n.strings.count; i++) {
        uint32_t len;
        const char *s = keytab_key(&n.strings, i, &len);
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)len, s);
        jstring(&body, buf);
    }
    pb_append(&body, tree.data, tree.len);
    event(out, &body);
    if (tree.failed || body.failed || n.strings.count == KEYTAB_FULL)
        out->failed = 1;
    pb_free(&tree);
    pb_free(&body);
    keytab_free(&n.strings);
}

/* ------------------------------------------------------------ constant pools */

/* Keys of the pools: each distinct string, class, package, method, thread gets the next key. */
typedef struct pools {
    keytab symbols, classes, packages, methods, threads;
    pb_buf symbol_values, class_values, package_values, method_values, thread_values, stack_values;
    uint32_t nstacks;
} pools;

/* key (>= 1) of s in table t; *created when new. */
static uint64_t key_of(keytab *t, const char *s, size_t len, int *created)
{
    uint32_t i = keytab_intern(t, s, (uint32_t)len, created);
    return i == KEYTAB_FULL ? 0 : (uint64_t)i + 1;
}

/* The key of string s in table t; when new, its entry starts in values:
 * the key, then s (the first field of symbols' and threads' entries). */
static uint64_t string_entry(keytab *t, pb_buf *values, const char *s, int *created)
{
    uint64_t k = key_of(t, s, strlen(s), created);
    if (*created) {
        pb_varint(values, k);
        jstring(values, s);
    }
    return k;
}

static uint64_t symbol(pools *p, const char *s)
{
    int created = 0;
    return string_entry(&p->symbols, &p->symbol_values, s, &created);
}

/* A Java class name ("java.util.Map$Entry") as the JVM names it ("java/util/Map$Entry"). */
static void internal_name(const char *java, char *out, size_t size)
{
    snprintf(out, size, "%s", java);
    for (char *c = out; *c; c++)
        if (*c == '.')
            *c = '/';
}

static uint64_t class_key(pools *p, const char *java_name)
{
    char name[1024];
    internal_name(java_name[0] ? java_name : "<unknown>", name, sizeof name);
    int created = 0;
    uint64_t k = key_of(&p->classes, name, strlen(name), &created);
    if (created) {
        const char *slash = strrchr(name, '/');
        char pkg[1024];
        snprintf(pkg, sizeof pkg, "%.*s", slash ? (int)(slash - name) : 0, name);
        int new_pkg = 0;
        uint64_t pk = key_of(&p->packages, pkg, strlen(pkg), &new_pkg);
        if (new_pkg) {
            pb_varint(&p->package_values, pk);
            pb_varint(&p->package_values, symbol(p, pkg));
            pb_varint(&p->package_values, 1);          /* exported */
        }
        pb_varint(&p->class_values, k);
        pb_varint(&p->class_values, symbol(p, name));
        pb_varint(&p->class_values, pk);
        pb_varint(&p->class_values, 1);                /* modifiers: public */
        pb_varint(&p->class_values, 0);                /* hidden */
    }
    return k;
}

static uint64_t method_key(pools *p, const profile_frame *f)
{
    char key[2048];
    int n = snprintf(key, sizeof key, "%s%c%s%c%s", f->class_name, 0, f->method, 0, f->signature);
    int created = 0;
    uint64_t k = key_of(&p->methods, key, n > 0 && (size_t)n < sizeof key ? (size_t)n : sizeof key - 1, &created);
    if (created) {
        /* A native function has no class: its library stands for one ("[libjvm.so]"). */
        char library[300];
        snprintf(library, sizeof library, "[%s]", f->file);
        uint64_t cls = class_key(p, f->class_name[0] || !f->file[0] ? f->class_name : library);
        pb_varint(&p->method_values, k);
        pb_varint(&p->method_values, cls);
        pb_varint(&p->method_values, symbol(p, f->method[0] ? f->method : "<unknown>"));
        pb_varint(&p->method_values, symbol(p, f->signature[0] ? f->signature : "()V"));
        pb_varint(&p->method_values, 1);               /* modifiers */
        pb_varint(&p->method_values, 0);               /* hidden */
    }
    return k;
}

static uint64_t frame_type_key(const profile_frame *f)
{
    if (f->line == PROFILE_LINE_NATIVE)
        return 4;
    return f->run == PROFILE_RUN_COMPILED ? 2 : f->run == PROFILE_RUN_INLINED ? 3 : 1;
}

static uint64_t thread_key(pools *p, const char *name)
{
    int created = 0;
    uint64_t k = string_entry(&p->threads, &p->thread_values, name, &created);    /* osName */
    if (created) {
        pb_varint(&p->thread_values, k);               /* osThreadId: this recording's own number */
        jstring(&p->thread_values, name);
        pb_varint(&p->thread_values, k);               /* javaThreadId */
    }
    return k;
}

/* One stack trace entry for a sample's frames (leaf first, as JFR's). */
static uint64_t stack_key(pools *p, const profile *prof, const profile_sample *s)
{
    uint64_t k = ++p->nstacks;
    pb_buf *b = &p->stack_values;
    pb_varint(b, k);
    uint8_t truncated = 0;
    pb_append(b, &truncated, 1);
    pb_varint(b, s->depth);
    for (uint32_t i = 0; i < s->depth; i++) {
        const profile_frame *f = profile_frame_get(prof, s->frames[i]);
        pb_varint(b, method_key(p, f));
        pb_varint(b, f->line > 0 ? (uint64_t)f->line : 0);
        pb_varint(b, 0);                               /* bytecode index: not known */
        pb_varint(b, frame_type_key(f));
    }
    return k;
}

static void pool(pb_buf *b, int type, uint64_t count, const pb_buf *values)
{
    pb_varint(b, (uint64_t)type);
    pb_varint(b, count);
    pb_append(b, values->data, values->len);
    if (values->failed)
        b->failed = 1;
}

static void checkpoint_event(pb_buf *out, pools *p, int64_t ticks)
{
    pb_buf b = { 0 }, types = { 0 }, states = { 0 };
    for (uint64_t i = 0; i < sizeof FRAME_TYPES / sizeof FRAME_TYPES[0]; i++) {
        pb_varint(&types, i + 1);
        jstring(&types, FRAME_TYPES[i]);
    }
    pb_varint(&states, 1);
    jstring(&states, "STATE_RUNNABLE");
    pb_varint(&b, 1);                    /* event type: checkpoint */
    pb_varint(&b, (uint64_t)ticks);
    pb_varint(&b, 0);                    /* duration */
    pb_varint(&b, 0);                    /* delta to the previous checkpoint: none */
    uint8_t kind = 0;
    pb_append(&b, &kind, 1);
    pb_varint(&b, 8);
    pool(&b, T_FRAME_TYPE, 4, &types);
    pool(&b, T_THREAD_STATE, 1, &states);
    pool(&b, T_THREAD, p->threads.count, &p->thread_values);
    pool(&b, T_STACK_TRACE, p->nstacks, &p->stack_values);
    pool(&b, T_METHOD, p->methods.count, &p->method_values);
    pool(&b, T_CLASS, p->classes.count, &p->class_values);
    pool(&b, T_PACKAGE, p->packages.count, &p->package_values);
    pool(&b, T_SYMBOL, p->symbols.count, &p->symbol_values);
    event(out, &b);
    pb_free(&b);
    pb_free(&types);
    pb_free(&states);
}

/* ------------------------------------------------------------ the file */

static void big_endian(uint8_t *at, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--, v >>= 8)
        at[i] = (uint8_t)(v & 0xff);
}

int jfr_write_samples(const profile *prof, FILE *out, char *err, size_t errlen)
{
    pools p;
    memset(&p, 0, sizeof p);
    keytab *tables[] = { &p.symbols, &p.classes, &p.packages, &p.methods, &p.threads };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        keytab_init(tables[i], UINT32_MAX - 1);
    int64_t start_ns = profile_start_nanos(prof), duration = profile_duration_nanos(prof);
    if (start_ns <= 0)
        start_ns = (int64_t)time(NULL) * 1000000000;
    if (duration <= 0)
        duration = 1;
    int64_t total = profile_total(prof, 0);
    if (total > JFR_MAX_EVENTS) {       /* one event a sample: a bound on what a damaged file's counts ask for */
        snprintf(err, errlen, "%lld samples, more than a recording of one event each takes here (%d)",
                 (long long)total, JFR_MAX_EVENTS);
        for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
            keytab_free(tables[i]);
        return -1;
    }

    /* Events first (into their own buffer): they make the pools' entries. */
    pb_buf events = { 0 }, ev = { 0 };
    int64_t n = 0;
    profile_sample s;
    for (uint32_t i = 0; profile_sample_get(prof, i, &s) == 0; i++) {
        if (s.values[0] <= 0)
            continue;
        uint64_t thread = thread_key(&p, s.thread && s.thread[0] ? s.thread : "[all threads]");
        uint64_t stack = stack_key(&p, prof, &s);
        for (int64_t k = 0; k < s.values[0] && !events.failed; k++, n++) {
            pb_reset(&ev);
            pb_varint(&ev, T_EVENT_SAMPLE);
            pb_varint(&ev, (uint64_t)(total > 0 ? (int64_t)((long double)duration * n / total) : 0));
            pb_varint(&ev, thread);
            pb_varint(&ev, stack);
            pb_varint(&ev, 1);                         /* STATE_RUNNABLE */
            event(&events, &ev);
        }
    }

    pb_buf file = { 0 };
    uint8_t header[HEADER_SIZE] = { 'F', 'L', 'R', 0 };
    pb_append(&file, header, sizeof header);
    size_t meta_at = file.len;
    metadata_event(&file, 0);
    pb_append(&file, events.data, events.len);
    size_t pool_at = file.len;
    checkpoint_event(&file, &p, duration);
    int rc = 0;
    if (file.failed || events.failed) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else {
        uint8_t *h = file.data;
        big_endian(h + 4, 2, 2);                       /* version 2.1 */
        big_endian(h + 6, 1, 2);
        big_endian(h + 8, file.len, 8);
        big_endian(h + 16, pool_at, 8);
        big_endian(h + 24, meta_at, 8);
        big_endian(h + 32, (uint64_t)start_ns, 8);
        big_endian(h + 40, (uint64_t)duration, 8);
        big_endian(h + 48, 0, 8);                      /* start ticks */
        big_endian(h + 56, 1000000000, 8);             /* ticks per second: ns */
        h[67] = 3;                                     /* compressed integers; the final chunk */
        if (fwrite(file.data, 1, file.len, out) != file.len) {
            snprintf(err, errlen, "write error");
            rc = -1;
        }
    }
    pb_free(&file);
    pb_free(&events);
    pb_free(&ev);
    pb_buf *bufs[] = { &p.symbol_values, &p.class_values, &p.package_values, &p.method_values, &p.thread_values,
                       &p.stack_values };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_free(bufs[i]);
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        keytab_free(tables[i]);
    return rc;
}
