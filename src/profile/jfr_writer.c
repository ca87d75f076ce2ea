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
    T_THREAD_STATE,
    T_TIMESTAMP = 50, T_TIMESPAN, T_DATA_AMOUNT,
    T_EXECUTION_SAMPLE = 100, T_NATIVE_SAMPLE, T_ALLOCATION_SAMPLE, T_MONITOR_ENTER, T_MONITOR_WAIT, T_THREAD_PARK,
    T_METHOD_TIME = 200, T_ALLOCATION_SITE, T_DEADLOCK,
};

/* Frame types' keys, in this order. */
static const char *const FRAME_TYPES[] = { "Interpreted", "JIT compiled", "Inlined", "Native" };

/* Thread states' keys (the JDK's names), in this order. */
enum { STATE_RUNNABLE = 1, STATE_SLEEPING, STATE_IN_OBJECT_WAIT, STATE_PARKED, STATE_BLOCKED };
static const char *const THREAD_STATES[] = { "STATE_RUNNABLE", "STATE_SLEEPING", "STATE_IN_OBJECT_WAIT",
                                             "STATE_PARKED", "STATE_BLOCKED_ON_MONITOR_ENTER" };

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

/* A field's annotation: which annotation type, with which value. */
typedef struct field_note {
    int         type;            /* T_TIMESTAMP, T_TIMESPAN, T_DATA_AMOUNT; 0: none */
    const char *value;           /* "TICKS", "NANOSECONDS", "BYTES", ... */
} field_note;

typedef struct field_decl {
    const char *name;
    int         type;
    uint8_t     pooled, array;
    field_note  note;
} field_decl;

#define MAX_FIELDS 11

/* One type, its fields in the JDK's order. */
typedef struct type_decl {
    const char *name, *super;
    int         id;
    field_decl  fields[MAX_FIELDS];
} type_decl;

/* The fields every event of ours begins with, as the JDK's do. */
#define F_START            { "startTime", T_LONG, 0, 0, { T_TIMESTAMP, "TICKS" } }
#define F_DURATION         { "duration", T_LONG, 0, 0, { T_TIMESPAN, "TICKS" } }
#define F_POOLED(n, t)     { n, t, 1, 0, { 0, NULL } }
#define F_PLAIN(n, t)      { n, t, 0, 0, { 0, NULL } }
#define F_NOTED(n, t, a, v) { n, t, 0, 0, { a, v } }

/* The JDK's types, with the fields (names, types, order) it declares for
 * them, then hprof's own. Symbol, FrameType and ThreadState are "simple
 * types" (one field, which readers show in the type's place: a class's
 * name is a string). */
static const type_decl TYPES[] = {
    { "boolean", NULL, T_BOOLEAN, { { NULL } } },
    { "int", NULL, T_INT, { { NULL } } },
    { "long", NULL, T_LONG, { { NULL } } },
    { "java.lang.String", NULL, T_STRING, { { NULL } } },
    { "java.lang.Thread", NULL, T_THREAD, { F_PLAIN("osName", T_STRING), F_PLAIN("osThreadId", T_LONG),
                                            F_PLAIN("javaName", T_STRING), F_PLAIN("javaThreadId", T_LONG) } },
    { "java.lang.Class", NULL, T_CLASS, { F_POOLED("name", T_SYMBOL), F_POOLED("package", T_PACKAGE),
                                          F_PLAIN("modifiers", T_INT), F_PLAIN("hidden", T_BOOLEAN) } },
    { "jdk.types.Symbol", NULL, T_SYMBOL, { F_PLAIN("string", T_STRING) } },
    { "jdk.types.Package", NULL, T_PACKAGE, { F_POOLED("name", T_SYMBOL), F_PLAIN("exported", T_BOOLEAN) } },
    { "jdk.types.Method", NULL, T_METHOD, { F_POOLED("type", T_CLASS), F_POOLED("name", T_SYMBOL),
                                            F_POOLED("descriptor", T_SYMBOL), F_PLAIN("modifiers", T_INT),
                                            F_PLAIN("hidden", T_BOOLEAN) } },
    { "jdk.types.FrameType", NULL, T_FRAME_TYPE, { F_PLAIN("description", T_STRING) } },
    { "jdk.types.StackFrame", NULL, T_STACK_FRAME, { F_POOLED("method", T_METHOD), F_PLAIN("lineNumber", T_INT),
                                                     F_PLAIN("bytecodeIndex", T_INT),
                                                     F_POOLED("type", T_FRAME_TYPE) } },
    { "jdk.types.StackTrace", NULL, T_STACK_TRACE, { F_PLAIN("truncated", T_BOOLEAN),
                                                     { "frames", T_STACK_FRAME, 0, 1, { 0, NULL } } } },
    { "jdk.types.ThreadState", NULL, T_THREAD_STATE, { F_PLAIN("name", T_STRING) } },
    { "jdk.jfr.Timestamp", "java.lang.annotation.Annotation", T_TIMESTAMP, { F_PLAIN("value", T_STRING) } },
    { "jdk.jfr.Timespan", "java.lang.annotation.Annotation", T_TIMESPAN, { F_PLAIN("value", T_STRING) } },
    { "jdk.jfr.DataAmount", "java.lang.annotation.Annotation", T_DATA_AMOUNT, { F_PLAIN("value", T_STRING) } },
    { "jdk.ExecutionSample", "jdk.jfr.Event", T_EXECUTION_SAMPLE,
      { F_START, F_POOLED("sampledThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("state", T_THREAD_STATE) } },
    { "jdk.NativeMethodSample", "jdk.jfr.Event", T_NATIVE_SAMPLE,
      { F_START, F_POOLED("sampledThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("state", T_THREAD_STATE) } },
    { "jdk.ObjectAllocationSample", "jdk.jfr.Event", T_ALLOCATION_SAMPLE,
      { F_START, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("objectClass", T_CLASS), F_NOTED("weight", T_LONG, T_DATA_AMOUNT, "BYTES") } },
    { "jdk.JavaMonitorEnter", "jdk.jfr.Event", T_MONITOR_ENTER,
      { F_START, F_DURATION, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("monitorClass", T_CLASS), F_POOLED("previousOwner", T_THREAD), F_PLAIN("address", T_LONG) } },
    { "jdk.JavaMonitorWait", "jdk.jfr.Event", T_MONITOR_WAIT,
      { F_START, F_DURATION, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("monitorClass", T_CLASS), F_POOLED("notifier", T_THREAD),
        F_NOTED("timeout", T_LONG, T_TIMESPAN, "MILLISECONDS"), F_PLAIN("timedOut", T_BOOLEAN),
        F_PLAIN("address", T_LONG) } },
    { "jdk.ThreadPark", "jdk.jfr.Event", T_THREAD_PARK,
      { F_START, F_DURATION, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("parkedClass", T_CLASS), F_NOTED("timeout", T_LONG, T_TIMESPAN, "NANOSECONDS"),
        F_NOTED("until", T_LONG, T_TIMESTAMP, "MILLISECONDS_SINCE_EPOCH"), F_PLAIN("address", T_LONG) } },
    { "hprof.MethodTime", "jdk.jfr.Event", T_METHOD_TIME,
      { F_START, F_DURATION, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("method", T_METHOD), F_PLAIN("calls", T_LONG),
        F_NOTED("cpuTime", T_LONG, T_TIMESPAN, "NANOSECONDS") } },
    { "hprof.AllocationSite", "jdk.jfr.Event", T_ALLOCATION_SITE,
      { F_START, F_DURATION, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("objectClass", T_CLASS), F_PLAIN("allocatedObjects", T_LONG),
        F_NOTED("allocatedBytes", T_LONG, T_DATA_AMOUNT, "BYTES"), F_PLAIN("liveObjects", T_LONG),
        F_NOTED("liveBytes", T_LONG, T_DATA_AMOUNT, "BYTES"), F_PLAIN("estimated", T_BOOLEAN) } },
    /* Declared only in recordings that hold deadlocks (so that the others
     * stay as they were). One event per thread of a cycle: eventThread
     * waits for a lock of lockClass that lockOwner (the next thread of the
     * cycle) holds; `cycle` numbers the cycles of the dump, cycleThreads
     * counts its threads. (One event per cycle with an array of threads
     * and their stacks: `jfr print` fails on an array of such values, a
     * NullPointerException in PrettyWriter.printValue, JDK 25.) */
    { "hprof.Deadlock", "jdk.jfr.Event", T_DEADLOCK,
      { F_START, F_POOLED("eventThread", T_THREAD), F_POOLED("stackTrace", T_STACK_TRACE),
        F_POOLED("lockClass", T_CLASS), F_POOLED("lockOwner", T_THREAD), F_PLAIN("parked", T_BOOLEAN),
        F_PLAIN("cycle", T_INT), F_PLAIN("cycleThreads", T_INT) } },
};

/* Is t a type only a recording with deadlocks declares? */
static int deadlock_type(const type_decl *t)
{
    return t->id == T_DEADLOCK;
}

static void field_element(pb_buf *tree, names *n, const field_decl *f)
{
    char cls[16], note_cls[16];
    snprintf(cls, sizeof cls, "%d", f->type);
    const char *attrs[4 * 2 + 1];
    uint32_t k = 0;
    attrs[k++] = "name";
    attrs[k++] = f->name;
    attrs[k++] = "class";
    attrs[k++] = cls;
    if (f->pooled) {
        attrs[k++] = "constantPool";
        attrs[k++] = "true";
    }
    if (f->array) {
        attrs[k++] = "dimension";
        attrs[k++] = "1";
    }
    attrs[k] = NULL;
    element(tree, n, "field", attrs, f->note.type ? 1 : 0);
    if (f->note.type) {          /* readers show the value as a time, a span or an amount */
        snprintf(note_cls, sizeof note_cls, "%d", f->note.type);
        const char *note[] = { "class", note_cls, "value", f->note.value, NULL };
        element(tree, n, "annotation", note, 0);
    }
}

static void metadata_event(pb_buf *out, int64_t start_ticks, int with_deadlocks)
{
    names n;
    keytab_init(&n.strings, 1u << 20);
    pb_buf tree = { 0 };
    const uint32_t ntypes = sizeof TYPES / sizeof TYPES[0];
    uint32_t declared = 0;
    for (uint32_t i = 0; i < ntypes; i++)
        declared += with_deadlocks || !deadlock_type(&TYPES[i]);
    element(&tree, &n, "root", NULL, 2);
    element(&tree, &n, "metadata", NULL, declared);
    for (uint32_t i = 0; i < ntypes; i++) {
        const type_decl *t = &TYPES[i];
        if (!with_deadlocks && deadlock_type(t))
            continue;
        char id[16];
        snprintf(id, sizeof id, "%d", t->id);
        uint32_t nfields = 0;
        while (nfields < MAX_FIELDS && t->fields[nfields].name)
            nfields++;
        int simple = t->id == T_SYMBOL || t->id == T_FRAME_TYPE || t->id == T_THREAD_STATE;
        const char *attrs[] = { "name", t->name, "id", id, t->super ? "superType" : simple ? "simpleType" : NULL,
                                t->super ? t->super : "true", NULL };
        element(&tree, &n, "class", attrs, nfields);
        for (uint32_t f = 0; f < nfields; f++)
            field_element(&tree, &n, &t->fields[f]);
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
    uint64_t *frame_methods;   /* the profile being written: its frame id -> method key, 0 not yet */
    uint32_t nframe_methods;
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

/* A Java class name as the JVM names it: "java.util.Map$Entry" ->
 * "java/util/Map$Entry", "byte[]" -> "[B", "java.lang.String[]" ->
 * "[Ljava/lang/String;" (JFR tools show arrays from these descriptors). */
static void internal_name(const char *java, char *out, size_t size)
{
    static const char *const primitives[][2] = { { "boolean", "Z" }, { "byte", "B" }, { "char", "C" },
                                                 { "short", "S" }, { "int", "I" }, { "long", "J" },
                                                 { "float", "F" }, { "double", "D" } };
    size_t len = strlen(java), dims = 0;
    while (len >= 2 + 2 * dims && strncmp(java + len - 2 * (dims + 1), "[]", 2) == 0)
        dims++;
    size_t base = len - 2 * dims;
    const char *code = NULL;
    for (size_t i = 0; dims && i < sizeof primitives / sizeof primitives[0]; i++)
        if (strlen(primitives[i][0]) == base && strncmp(java, primitives[i][0], base) == 0)
            code = primitives[i][1];
    size_t at = 0;
    for (size_t i = 0; i < dims && at + 1 < size; i++)
        out[at++] = '[';
    if (code)
        snprintf(out + at, size - at, "%s", code);
    else
        snprintf(out + at, size - at, "%s%.*s%s", dims ? "L" : "", (int)base, java, dims ? ";" : "");
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
        /* An array's package is its element's (none for primitives). */
        const char *elem = name + strspn(name, "[");
        elem += *elem == 'L' && elem != name;
        const char *slash = strrchr(elem, '/');
        char pkg[1024];
        snprintf(pkg, sizeof pkg, "%.*s", slash ? (int)(slash - elem) : 0, elem);
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

/* The method key of frame `id` of prof, looked up once per frame (the same
 * frames recur in most stacks). */
static uint64_t frame_method(pools *p, const profile *prof, uint32_t id)
{
    if (id < p->nframe_methods && p->frame_methods[id])
        return p->frame_methods[id];
    uint64_t k = method_key(p, profile_frame_get(prof, id));
    if (id < p->nframe_methods)
        p->frame_methods[id] = k;
    return k;
}

/* One stack trace entry for frames [from, to) of a sample (leaf first, as JFR's). */
static uint64_t stack_key(pools *p, const profile *prof, const profile_sample *s, uint32_t from, uint32_t to)
{
    uint64_t k = ++p->nstacks;
    pb_buf *b = &p->stack_values;
    pb_varint(b, k);
    uint8_t truncated = 0;
    pb_append(b, &truncated, 1);
    pb_varint(b, to - from);
    for (uint32_t i = from; i < to; i++) {
        const profile_frame *f = profile_frame_get(prof, s->frames[i]);
        pb_varint(b, frame_method(p, prof, s->frames[i]));
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

/* A pool of fixed strings, keyed 1, 2, ... in their order. */
static void string_pool(pb_buf *b, int type, const char *const *strings, uint64_t n)
{
    pb_buf values = { 0 };
    for (uint64_t i = 0; i < n; i++) {
        pb_varint(&values, i + 1);
        jstring(&values, strings[i]);
    }
    pool(b, type, n, &values);
    pb_free(&values);
}

static void checkpoint_event(pb_buf *out, pools *p, int64_t ticks)
{
    /* The JDK's parser refuses an empty pool: only those with entries. */
    const struct { int type; uint64_t count; const pb_buf *values; } all[] = {
        { T_THREAD, p->threads.count, &p->thread_values }, { T_STACK_TRACE, p->nstacks, &p->stack_values },
        { T_METHOD, p->methods.count, &p->method_values }, { T_CLASS, p->classes.count, &p->class_values },
        { T_PACKAGE, p->packages.count, &p->package_values }, { T_SYMBOL, p->symbols.count, &p->symbol_values },
    };
    uint64_t npools = 2;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        npools += all[i].count > 0;
    pb_buf b = { 0 };
    pb_varint(&b, 1);                    /* event type: checkpoint */
    pb_varint(&b, (uint64_t)ticks);
    pb_varint(&b, 0);                    /* duration */
    pb_varint(&b, 0);                    /* delta to the previous checkpoint: none */
    uint8_t kind = 0;
    pb_append(&b, &kind, 1);
    pb_varint(&b, npools);
    string_pool(&b, T_FRAME_TYPE, FRAME_TYPES, sizeof FRAME_TYPES / sizeof FRAME_TYPES[0]);
    string_pool(&b, T_THREAD_STATE, THREAD_STATES, sizeof THREAD_STATES / sizeof THREAD_STATES[0]);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].count > 0)
            pool(&b, all[i].type, all[i].count, all[i].values);
    event(out, &b);
    pb_free(&b);
}

/* ------------------------------------------------------------ events */

/* What a profile measures, from its value types. */
typedef enum { KIND_NONE, KIND_CPU, KIND_WALL, KIND_TIMES, KIND_ALLOC, KIND_LOCK, KIND_WAIT } profile_kind_t;

/* The index of the value named type, or -1. */
static int value_named(const profile *p, const char *type)
{
    for (uint32_t i = 0; i < profile_value_count(p); i++)
        if (strcmp(profile_value(p, i).type, type) == 0)
            return (int)i;
    return -1;
}

static profile_kind_t kind_of(const profile *p)
{
    if (value_named(p, "samples") == 0)
        return value_named(p, "wall") == 1 ? KIND_WALL : KIND_CPU;
    if (value_named(p, "calls") == 0 && value_named(p, "cpu") == 1)
        return KIND_TIMES;
    if (value_named(p, "alloc_objects") >= 0 && value_named(p, "alloc_space") >= 0 &&
        value_named(p, "inuse_objects") >= 0 && value_named(p, "inuse_space") >= 0)
        return KIND_ALLOC;
    if (value_named(p, "contentions") == 0 && value_named(p, "delay") == 1)
        return KIND_LOCK;
    if (value_named(p, "waits") == 0 && value_named(p, "delay") == 1)
        return KIND_WAIT;
    return KIND_NONE;
}

int jfr_writes(const profile *p)
{
    return kind_of(p) != KIND_NONE;
}

/* What the writing of events shares: the pools, the recording's time,
 * where the events go. */
typedef struct writing {
    pools   *pools;
    pb_buf  *events;
    pb_buf   ev;
    int64_t  duration;       /* ticks (ns) */
    int      with_cpu;       /* a CPU profile is written too */
} writing;

/* The time of the i-th of n events spread over the recording. */
static uint64_t spread(const writing *w, int64_t i, int64_t n)
{
    return n > 0 ? (uint64_t)((long double)w->duration * i / n) : 0;
}

/* Begins an event of `type` at `start` (ticks), the field every event
 * type here begins with; the caller writes the rest, then end(). */
static pb_buf *begin(writing *w, int type, uint64_t start)
{
    pb_reset(&w->ev);
    pb_varint(&w->ev, (uint64_t)type);
    pb_varint(&w->ev, start);
    return &w->ev;
}

static void end(writing *w)
{
    event(w->events, &w->ev);
}

/* A wall= sample's state (its root pseudo frame [state].<name>): the event
 * type and thread state key; 0 when it is not written. */
static int wall_event(const writing *w, const char *state, uint64_t *state_key)
{
    static const struct { const char *name; int key; } states[] = {
        { "sleeping", STATE_SLEEPING }, { "waiting", STATE_IN_OBJECT_WAIT }, { "parked", STATE_PARKED },
        { "blocked", STATE_BLOCKED }, { "syscall", STATE_RUNNABLE },
    };
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        if (strcmp(state, states[i].name) == 0) {
            *state_key = (uint64_t)states[i].key;
            return T_NATIVE_SAMPLE;
        }
    *state_key = STATE_RUNNABLE;         /* running, runnable */
    return w->with_cpu ? 0 : T_EXECUTION_SAMPLE;
}

/* Is the row a park (monitor=y notes its leaf "park", stack_profile.h)? */
static int parks(const profile *prof, const profile_sample *s)
{
    return s->depth > 0 && strcmp(profile_frame_get(prof, s->frames[0])->signature, "park") == 0;
}

/* Samples of cpu=samples and wall=: one event each. */
static void sample_events(writing *w, const profile *prof, const profile_sample *s, int wall, int64_t *at,
                          int64_t total)
{
    uint32_t to = s->depth;
    uint64_t state = STATE_RUNNABLE;
    int type = T_EXECUTION_SAMPLE;
    if (wall && to > 0) {
        const profile_frame *root = profile_frame_get(prof, s->frames[to - 1]);
        if (strcmp(root->class_name, "[state]") == 0) {
            type = wall_event(w, root->method, &state);
            to--;
        }
    }
    if (type == 0) {
        *at += s->values[0];
        return;
    }
    uint64_t thread = thread_key(w->pools, s->thread && s->thread[0] ? s->thread : "[all threads]");
    uint64_t stack = stack_key(w->pools, prof, s, 0, to);
    for (int64_t k = 0; k < s->values[0] && !w->events->failed; k++, (*at)++) {
        pb_buf *b = begin(w, type, spread(w, *at, total));
        pb_varint(b, thread);
        pb_varint(b, stack);
        pb_varint(b, state);
        end(w);
    }
}

/* Contentions and waits: count events, each its share of the delay. */
static void blocking_events(writing *w, const profile *prof, const profile_sample *s, int waits, int64_t *at,
                            int64_t total)
{
    int64_t count = s->values[0], delay = s->values[1] > 0 ? s->values[1] : 0;
    const profile_frame *leaf = s->depth ? profile_frame_get(prof, s->frames[0]) : NULL;
    uint64_t cls = class_key(w->pools, leaf ? leaf->method : "");
    uint64_t thread = thread_key(w->pools, s->thread && s->thread[0] ? s->thread : "[all threads]");
    uint64_t stack = stack_key(w->pools, prof, s, s->depth ? 1 : 0, s->depth);
    int type = parks(prof, s) ? T_THREAD_PARK : waits ? T_MONITOR_WAIT : T_MONITOR_ENTER;
    for (int64_t k = 0; k < count && !w->events->failed; k++, (*at)++) {
        /* the k-th of count shares: they add up to delay exactly */
        int64_t d = (int64_t)((long double)delay * (k + 1) / count) - (int64_t)((long double)delay * k / count);
        pb_buf *b = begin(w, type, spread(w, *at, total));
        pb_varint(b, (uint64_t)d);
        pb_varint(b, thread);
        pb_varint(b, stack);
        pb_varint(b, cls);
        if (type == T_MONITOR_ENTER) {
            pb_varint(b, 0);                           /* previousOwner: not known */
        } else if (type == T_MONITOR_WAIT) {
            pb_varint(b, 0);                           /* notifier: not known */
            pb_varint(b, 0);                           /* timeout: not known */
            pb_varint(b, 0);                           /* timedOut */
        } else {
            pb_varint(b, 0);                           /* timeout, until: not known */
            pb_varint(b, 0);
        }
        pb_varint(b, 0);                               /* address: not known */
        end(w);
    }
}

/* cpu=times: one hprof.MethodTime per stack, for its leaf method. */
static void method_time_event(writing *w, const profile *prof, const profile_sample *s)
{
    if (s->depth == 0)
        return;
    uint64_t thread = s->thread && s->thread[0] ? thread_key(w->pools, s->thread) : 0;
    uint64_t stack = stack_key(w->pools, prof, s, 0, s->depth);
    uint64_t method = frame_method(w->pools, prof, s->frames[0]);
    pb_buf *b = begin(w, T_METHOD_TIME, 0);
    pb_varint(b, (uint64_t)w->duration);
    pb_varint(b, thread);
    pb_varint(b, stack);
    pb_varint(b, method);
    pb_varint(b, (uint64_t)(s->values[0] > 0 ? s->values[0] : 0));
    pb_varint(b, (uint64_t)(s->values[1] > 0 ? s->values[1] : 0));
    end(w);
}

/* heap=sites: one hprof.AllocationSite per stack; sampled, also one
 * jdk.ObjectAllocationSample whose weight is the stack's bytes. */
static void allocation_events(writing *w, const profile *prof, const profile_sample *s, int estimated,
                              int64_t *at, int64_t total)
{
    const int vi[4] = { value_named(prof, "alloc_objects"), value_named(prof, "alloc_space"),
                        value_named(prof, "inuse_objects"), value_named(prof, "inuse_space") };
    const profile_frame *leaf = s->depth ? profile_frame_get(prof, s->frames[0]) : NULL;
    uint64_t cls = class_key(w->pools, leaf ? leaf->method : "");
    uint64_t thread = s->thread && s->thread[0] ? thread_key(w->pools, s->thread) : 0;
    uint64_t stack = stack_key(w->pools, prof, s, s->depth ? 1 : 0, s->depth);
    pb_buf *b = begin(w, T_ALLOCATION_SITE, 0);
    pb_varint(b, (uint64_t)w->duration);
    pb_varint(b, thread);
    pb_varint(b, stack);
    pb_varint(b, cls);
    for (int i = 0; i < 4; i++)
        pb_varint(b, (uint64_t)(s->values[vi[i]] > 0 ? s->values[vi[i]] : 0));
    pb_varint(b, (uint64_t)estimated);
    end(w);
    if (estimated && s->values[vi[1]] > 0) {
        b = begin(w, T_ALLOCATION_SAMPLE, spread(w, (*at)++, total));
        pb_varint(b, thread ? thread : thread_key(w->pools, "[all threads]"));
        pb_varint(b, stack);
        pb_varint(b, cls);
        pb_varint(b, (uint64_t)s->values[vi[1]]);
        end(w);
    }
}

/* monitor=y's deadlock cycles (the lock profile carries them): one
 * hprof.Deadlock per thread of a cycle, in the cycle's order, each one's
 * lock held by the next, at the end of the recording (the dump found
 * them). */
static void deadlock_events(writing *w, const profile *prof)
{
    for (uint32_t c = 0; c < profile_deadlock_count(prof) && !w->events->failed; c++) {
        uint32_t n = 0;
        const profile_deadlock_thread *t = profile_deadlock_get(prof, c, &n);
        for (uint32_t i = 0; i < n; i++) {
            profile_sample stack = { t[i].frames, t[i].depth, t[i].thread, { 0 } };
            uint64_t thread = thread_key(w->pools, t[i].thread);
            uint64_t stack_trace = stack_key(w->pools, prof, &stack, 0, t[i].depth);
            uint64_t lock_class = class_key(w->pools, t[i].lock_class);
            uint64_t owner = thread_key(w->pools, t[(i + 1) % n].thread);
            pb_buf *b = begin(w, T_DEADLOCK, (uint64_t)w->duration);
            pb_varint(b, thread);
            pb_varint(b, stack_trace);
            pb_varint(b, lock_class);
            pb_varint(b, owner);
            pb_varint(b, (uint64_t)(t[i].parked != 0));
            pb_varint(b, c + 1);                       /* cycle */
            pb_varint(b, n);                           /* cycleThreads */
            end(w);
        }
    }
}

/* How many events p makes (for the bound, and to spread their times). */
static int64_t events_of(const profile *p, profile_kind_t kind)
{
    if (kind == KIND_CPU || kind == KIND_WALL || kind == KIND_LOCK || kind == KIND_WAIT)
        return profile_total(p, 0) > 0 ? profile_total(p, 0) : 0;
    return kind == KIND_NONE ? 0 : 2 * (int64_t)profile_sample_count(p);
}

static void profile_events(writing *w, const profile *prof, profile_kind_t kind)
{
    int64_t total = kind == KIND_ALLOC ? (int64_t)profile_sample_count(prof) : events_of(prof, kind), at = 0;
    int estimated = kind == KIND_ALLOC && strstr(profile_title(prof), "estimated") != NULL;
    pools *p = w->pools;
    free(p->frame_methods);
    p->nframe_methods = profile_frame_count(prof) + 1;         /* ids from 1 */
    p->frame_methods = calloc(p->nframe_methods, sizeof *p->frame_methods);
    if (p->frame_methods == NULL) {
        p->nframe_methods = 0;
        w->events->failed = 1;
        return;
    }
    profile_sample s;
    for (uint32_t i = 0; profile_sample_get(prof, i, &s) == 0 && !w->events->failed; i++) {
        if (s.values[0] <= 0 && kind != KIND_ALLOC)
            continue;
        if (kind == KIND_CPU || kind == KIND_WALL)
            sample_events(w, prof, &s, kind == KIND_WALL, &at, total);
        else if (kind == KIND_LOCK || kind == KIND_WAIT)
            blocking_events(w, prof, &s, kind == KIND_WAIT, &at, total);
        else if (kind == KIND_TIMES)
            method_time_event(w, prof, &s);
        else if (kind == KIND_ALLOC)
            allocation_events(w, prof, &s, estimated, &at, total);
    }
    if (kind == KIND_LOCK)
        deadlock_events(w, prof);
}

/* ------------------------------------------------------------ the file */

static void big_endian(uint8_t *at, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--, v >>= 8)
        at[i] = (uint8_t)(v & 0xff);
}

/* The header, metadata, events and checkpoint, to out. 0, or -1 with err. */
static int write_chunk(pools *p, const pb_buf *events, int64_t start_ns, int64_t duration, int with_deadlocks,
                       FILE *out, char *err, size_t errlen)
{
    pb_buf file = { 0 };
    uint8_t header[HEADER_SIZE] = { 'F', 'L', 'R', 0 };
    pb_append(&file, header, sizeof header);
    size_t meta_at = file.len;
    metadata_event(&file, 0, with_deadlocks);
    pb_append(&file, events->data, events->len);
    size_t pool_at = file.len;
    checkpoint_event(&file, p, duration);
    int rc = 0;
    if (file.failed || events->failed) {
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
    return rc;
}

int jfr_write(const profile *const *profiles, uint32_t n, FILE *out, char *err, size_t errlen)
{
    /* The recording's time: the first profile's that has one. */
    int64_t start_ns = 0, duration = 0, events = 0;
    int with_cpu = 0, with_deadlocks = 0;
    for (uint32_t i = 0; i < n; i++) {
        profile_kind_t kind = kind_of(profiles[i]);
        for (uint32_t c = 0; kind == KIND_LOCK && c < profile_deadlock_count(profiles[i]); c++) {
            uint32_t threads = 0;
            profile_deadlock_get(profiles[i], c, &threads);
            events = profile_add_saturated(events, threads);
            with_deadlocks = 1;
        }
        if (start_ns <= 0 && profile_start_nanos(profiles[i]) > 0) {
            start_ns = profile_start_nanos(profiles[i]);
            duration = profile_duration_nanos(profiles[i]);
        }
        with_cpu |= kind == KIND_CPU;
        events = profile_add_saturated(events, events_of(profiles[i], kind));
    }
    if (start_ns <= 0)
        start_ns = (int64_t)time(NULL) * 1000000000;
    if (duration <= 0)
        duration = 1;
    if (events > JFR_MAX_EVENTS) {      /* a bound on what a damaged file's counts ask for */
        snprintf(err, errlen, "%lld events, more than a recording takes here (%d)", (long long)events,
                 JFR_MAX_EVENTS);
        return -1;
    }
    pools p;
    memset(&p, 0, sizeof p);
    keytab *tables[] = { &p.symbols, &p.classes, &p.packages, &p.methods, &p.threads };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        keytab_init(tables[i], UINT32_MAX - 1);

    /* Events first (into their own buffer): they make the pools' entries. */
    pb_buf event_bytes = { 0 };
    writing w = { &p, &event_bytes, { 0 }, duration, with_cpu };
    for (uint32_t i = 0; i < n; i++)
        profile_events(&w, profiles[i], kind_of(profiles[i]));
    int rc = write_chunk(&p, &event_bytes, start_ns, duration, with_deadlocks, out, err, errlen);
    pb_free(&event_bytes);
    pb_free(&w.ev);
    free(p.frame_methods);
    pb_buf *bufs[] = { &p.symbol_values, &p.class_values, &p.package_values, &p.method_values, &p.thread_values,
                       &p.stack_values };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_free(bufs[i]);
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        keytab_free(tables[i]);
    return rc;
}
