/* heap_dump: see heap_dump.h. */
#include "heap_dump.h"
#include "heap_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/tables.h"
#include "../heap/heap_tags.h"
#include "../heap/site_table.h"
#include "field_layout.h"
#include "heap_walk.h"
#include "jvm_heap_dump.h"
#include "jvmti_support.h"
#include "orchestrator.h"

/* Ids in the binary file. Objects are their dump tags (bit 62 set) and
 * classes their class serials (under 2^32); names and frames get ranges of
 * their own, so that no two kinds of id can meet. */
#define STRING_ID(serial) ((UINT64_C(1) << 60) | (uint64_t)(serial))
#define FRAME_ID(serial)  ((UINT64_C(2) << 60) | (uint64_t)(serial))
/* A thread's name: see write_thread_start. */
#define THREAD_NAME_ID(serial) ((UINT64_C(3) << 60) | (uint64_t)(serial))

/* ------------------------------------------------- binary table records */

static serial_t internal_name(serial_t class_serial)
{
    /* LOAD CLASS names are in the JVM's internal form: java/lang/String, [I. */
    const char *sig = class_signature(class_serial);
    if (sig == NULL)
        return 0;
    size_t n = strlen(sig);
    if (sig[0] == 'L' && n >= 2 && sig[n - 1] == ';') {
        char buf[4096];
        if (n - 2 >= sizeof buf)
            return string_intern(sig);
        memcpy(buf, sig + 1, n - 2);
        buf[n - 2] = '\0';
        return string_intern(buf);
    }
    return string_intern(sig);
}

/* UTF8 records for the strings interned since the last call. */
static void write_new_strings(hb_writer *w)
{
    uint32_t nstrings = string_count();
    for (uint32_t i = w->tables_written.strings; i < nstrings; i++) {
        const char *s = string_get(STRING_SERIAL_BASE + i);
        if (s)
            hb_utf8(w, STRING_ID(STRING_SERIAL_BASE + i), s);
    }
    w->tables_written.strings = nstrings;
}

/* A thread's name gets a UTF8 record of its own, written just before its
 * START THREAD, under an id made from the thread's serial: interning every
 * name in the string table would make it grow with each thread a dump names,
 * for as long as the JVM runs (thread=n forgets ended threads, a string
 * table never forgets). Groups are few, interned by thread_add; one new
 * since the UTF8 records above were written gets its record now. */
static void write_thread_start(void *ctx, serial_t serial, const thread_info *ti)
{
    hb_writer *w = ctx;
    serial_t group = string_intern(ti->group ? ti->group : "");
    if (group >= STRING_SERIAL_BASE + w->tables_written.strings)
        write_new_strings(w);
    hb_utf8(w, THREAD_NAME_ID(serial), ti->name);
    hb_start_thread(w, serial, ti->object_id, EMPTY_TRACE_SERIAL, THREAD_NAME_ID(serial), STRING_ID(group), 0);
}

static void write_thread_end(void *ctx, serial_t serial)
{
    hb_end_thread(ctx, serial);
}

/* The trace that loaded a class (class_loads.c) if the file has its STACK
 * TRACE or TRACE record (serials below TRACE_SERIAL_BASE + traces_in_file);
 * else the empty trace: a class loaded while the records were written. */
static serial_t load_trace_written(serial_t class_serial, uint32_t traces_in_file)
{
    serial_t trace = class_load_trace(class_serial);
    return trace && trace < TRACE_SERIAL_BASE + traces_in_file ? trace : EMPTY_TRACE_SERIAL;
}

/* Where the JVM's dump describes the classes: the serials of their LOAD
 * CLASS records there, by our class serial - CLASS_SERIAL_BASE (0: none,
 * or not known for sure), for the first n classes of ours. */
typedef struct jvm_classes {
    uint32_t *serial;
    uint32_t  n;
} jvm_classes;

static uint32_t jvm_serial_of(const jvm_classes *jvm, serial_t class_serial)
{
    uint32_t i = class_serial - CLASS_SERIAL_BASE;
    return jvm && class_serial >= CLASS_SERIAL_BASE && i < jvm->n ? jvm->serial[i] : 0;
}

/* Whether class i of ours gets a LOAD CLASS record: always but where the
 * JVM's dump names the classes; there when that one is not there and a
 * frame names it. */
static int gets_load_class(const jvm_classes *jvm, const unsigned char *in_frame, uint32_t i)
{
    return jvm == NULL || (jvm_serial_of(jvm, CLASS_SERIAL_BASE + i) == 0 && in_frame && in_frame[i]);
}

typedef struct walk walk;
static uint64_t class_object_id(const walk *w, serial_t serial);

/* The records of heap_dump_binary_new_records. With jvm (the JVM's
 * dump is the file's heap dump, and names the classes it has), no LOAD
 * CLASS record of ours for the classes it names: frames name those by its
 * serials, and a LOAD CLASS of ours goes only to a class a frame names
 * that it does not (or not for sure). With objects (a walk's dump being
 * written), the LOAD CLASS records give the ids that dump gives the
 * classes' Class objects. */
static void write_new_records(hb_writer *w, const jvm_classes *jvm, const walk *objects)
{
    uint32_t nclasses = class_count(), nframes = frame_count(), ntraces = trace_count();
    unsigned char *in_frame = jvm ? calloc(nclasses ? nclasses : 1, 1) : NULL;
    /* Names first: every record below refers to its names by id. */
    for (uint32_t i = w->tables_written.frames; i < nframes; i++) {
        serial_t m;
        int32_t line;
        method_info mi;
        if (frame_get(FRAME_SERIAL_BASE + i, &m, &line) == 0 && method_get(m, &mi) == 0) {
            string_intern(mi.name);
            string_intern(mi.signature);
            string_intern(mi.source_file ? mi.source_file : "Unknown");
            if (in_frame && mi.class_serial >= CLASS_SERIAL_BASE && mi.class_serial - CLASS_SERIAL_BASE < nclasses)
                in_frame[mi.class_serial - CLASS_SERIAL_BASE] = 1;
        }
    }
    serial_t *names = calloc(nclasses > w->tables_written.classes ? nclasses - w->tables_written.classes : 1, sizeof *names);
    for (uint32_t i = w->tables_written.classes; names && i < nclasses; i++)
        if (gets_load_class(jvm, in_frame, i))
            names[i - w->tables_written.classes] = internal_name(CLASS_SERIAL_BASE + i);
    write_new_strings(w);
    if (!w->tables_written.empty_trace) {
        hb_stack_trace(w, EMPTY_TRACE_SERIAL, 0, NULL, 0);
        w->tables_written.empty_trace = 1;
    }
    for (uint32_t i = w->tables_written.classes; names && i < nclasses; i++)
        if (names[i - w->tables_written.classes])
            hb_load_class(w, CLASS_SERIAL_BASE + i, class_object_id(objects, CLASS_SERIAL_BASE + i),
                          load_trace_written(CLASS_SERIAL_BASE + i, ntraces),
                          STRING_ID(names[i - w->tables_written.classes]));
    /* With jvm, the other classes are not written yet: a walk's
     * dump later writes them all. */
    if (names && jvm == NULL)
        w->tables_written.classes = nclasses;
    free(names);
    free(in_frame);
    for (uint32_t i = w->tables_written.frames; i < nframes; i++) {
        serial_t m;
        int32_t line;
        method_info mi;
        if (frame_get(FRAME_SERIAL_BASE + i, &m, &line) != 0 || method_get(m, &mi) != 0)
            continue;
        /* HPROF binary lines: > 0 a line, -1 unknown, -3 native. */
        hb_stack_frame(w, FRAME_ID(FRAME_SERIAL_BASE + i), STRING_ID(string_intern(mi.name)),
                       STRING_ID(string_intern(mi.signature)),
                       STRING_ID(string_intern(mi.source_file ? mi.source_file : "Unknown")),
                       jvm_serial_of(jvm, mi.class_serial) ? jvm_serial_of(jvm, mi.class_serial) : mi.class_serial,
                       line);
    }
    w->tables_written.frames = nframes;
    for (uint32_t i = w->tables_written.traces; i < ntraces; i++) {
        serial_t thread;
        const serial_t *frames;
        uint32_t n;
        if (trace_get(TRACE_SERIAL_BASE + i, &thread, &frames, &n) != 0)
            continue;
        uint64_t ids[256];
        uint32_t k = n < 256 ? n : 256;
        for (uint32_t j = 0; j < k; j++)
            ids[j] = FRAME_ID(frames[j]);
        hb_stack_trace(w, TRACE_SERIAL_BASE + i, thread, ids, k);
    }
    w->tables_written.traces = ntraces;
    /* Out of memory: the thread records wait for the next dump. */
    (void)thread_records_write(&w->tables_written.threads, write_thread_start, write_thread_end, w);
}

void heap_dump_binary_new_records(hb_writer *w)
{
    write_new_records(w, NULL, NULL);
}

/* ------------------------------------------------------ class layouts */

/* A class the dump describes: its field layout (field_layout.h) and what
 * the HPROF records add. */
typedef struct dclass {
    fl_class    f;               /* first: a dclass * is its fl_class * */
    int         loaded;
    uint64_t    loader, signers, domain;
    const char *name;            /* Java form, for the text dump */
    hb_static  *statics;         /* f.statics' names as string ids; values filled by the walk */
    int64_t     obj_size;        /* size of an instance (from the walk) */
    int         dumped;
    /* The id of its Class object in the dump where that is not its serial:
     * a class loaded after the class list was read, whose Class object the
     * walk met untagged and numbered like any object. */
    uint64_t    object_id;
} dclass;

static const char *type_name(uint8_t t)
{
    switch (t) {
    case HB_BOOLEAN: return "boolean";
    case HB_CHAR: return "char";
    case HB_FLOAT: return "float";
    case HB_DOUBLE: return "double";
    case HB_BYTE: return "byte";
    case HB_SHORT: return "short";
    case HB_INT: return "int";
    case HB_LONG: return "long";
    default: return "Object";
    }
}

/* ------------------------------------------------------------ the walk */

/* What heap=dump keeps around the shared walk (heap_walk.h), which
 * assembles the objects; this file gives them their ids and writes them. */
struct walk {
    const heap_dump_target *t;
    jvmtiEnv    *tags;             /* whose tag map holds the ids: the dump's own environment,
                                    * or the agent's (hprof_jvmti) when copying costs too much */
    hb_writer   *bin;
    FILE        *text;             /* format=a: the staging file */
    dclass      *classes;          /* by class serial - CLASS_SERIAL_BASE */
    uint32_t     nclasses;
    uint32_t     max_positions;    /* the most values an instance has */
    serial_t     class_class;      /* java.lang.Class */
    uint32_t     next_number;      /* dump numbers handed out */
    int          out_of_numbers;
    /* thread objects: dump number -> thread serial and stack trace */
    struct { uint32_t number; serial_t serial, trace; uint32_t frames; } *threads;
    uint32_t     nthreads;
    /* totals and progress */
    uint64_t     objects, bytes;
    /* Class objects that are not classes the dump describes (the mirrors of
     * int, void ...): written as instances of java.lang.Class at the end
     * unless the walk visited them. */
    struct { int64_t id; int64_t size; int written; } *mirrors;
    uint32_t     nmirrors, mirrors_cap;
    time_t       last_progress;
    int          progress_shown;
    int          failed;
    /* What the walk met of objects of classes loaded after the class list
     * was read (heap_walk.h), written after it (write_deferred). */
    heap_walk_deferrals deferred;
    uint64_t     left_out;         /* of those, values no class read after the walk could place */
    struct new_class *resolved;    /* their Class objects' ids and serials, sorted by id */
    size_t       nresolved;
};

static dclass *class_of_serial(const walk *w, serial_t s)
{
    if (s < CLASS_SERIAL_BASE || s - CLASS_SERIAL_BASE >= w->nclasses)
        return NULL;
    dclass *c = &w->classes[s - CLASS_SERIAL_BASE];
    return c->loaded ? c : NULL;
}

static uint64_t class_object_id(const walk *w, serial_t serial)
{
    const dclass *c = w ? class_of_serial(w, serial) : NULL;
    return c && c->object_id ? c->object_id : serial;
}

static uint32_t trace_of_tag(int64_t tag)
{
    serial_t trace = 0;
    subsite_t s = heap_tag_subsite(tag);
    if (s && site_get(s, &trace, NULL, NULL) == 0 && trace)
        return trace;
    return EMPTY_TRACE_SERIAL;
}

/* Progress every 2 s of a long dump: to the `hprof dump` command that asked
 * for it while it waits, else to the JVM's standard error. */
static void progress(walk *w)
{
    time_t now = time(NULL);
    if (now - w->last_progress < 2)
        return;
    w->last_progress = now;
    w->progress_shown = 1;
    agent_progress("hprof: heap dump: %llu objects, %llu MB so far", (unsigned long long)w->objects,
                   (unsigned long long)(w->bytes >> 20));
}

static void counted(walk *w, int64_t size)
{
    w->objects++;
    w->bytes += (uint64_t)(size > 0 ? size : 0);
    if ((w->objects & 0xFFFF) == 0)
        progress(w);
}

/* ---- the sink: ids and classes ---- */

static int sink_is_class_tag(void *ctx, jlong tag)
{
    (void)ctx;
    return heap_tag_is_class(tag);
}

/* Classes are known by their serials, which are their Class objects' tags.
 * One loaded but not yet prepared when the list was read (its fields
 * unknown then): heap_walk defers its objects and statics, and it is read
 * again after the walk. */
static fl_class *sink_class_of(void *ctx, jlong tag)
{
    dclass *c = heap_tag_is_class(tag) ? class_of_serial(ctx, (serial_t)tag) : NULL;
    return c ? &c->f : NULL;
}

/* Gives an object its id for this dump: its tag becomes a dump tag, which
 * keeps the subsite of a tracked object. Class objects keep their serials. */
static jlong sink_id_of(void *ctx, jlong *tag_ptr, int *first)
{
    walk *w = ctx;
    int64_t tag = *tag_ptr;
    *first = 0;
    if (heap_tag_is_class(tag) || heap_tag_is_dump(tag))
        return tag;
    if (w->next_number == UINT32_MAX) {
        w->out_of_numbers = 1;
        return 0;
    }
    int64_t id = heap_tag_dump(heap_tag_subsite(tag), ++w->next_number);
    *tag_ptr = id;
    *first = 1;
    return id;
}

/* First sight of an object: an instance's size for its class (text), and
 * the mirrors of java.lang.Class. */
static void sink_met(void *ctx, jlong id, jlong class_tag, jlong size, jint length)
{
    (void)length;
    walk *w = ctx;
    dclass *c = heap_tag_is_class(class_tag) ? class_of_serial(w, (serial_t)class_tag) : NULL;
    if (c && !c->f.is_array && c->obj_size == 0)
        c->obj_size = size;
    if ((serial_t)class_tag != w->class_class || w->class_class == 0)
        return;
    if (w->nmirrors == w->mirrors_cap) {
        uint32_t cap = w->mirrors_cap ? w->mirrors_cap * 2 : 16;
        void *m = realloc(w->mirrors, cap * sizeof *w->mirrors);
        if (m == NULL) { w->failed = ENOMEM; return; }
        w->mirrors = m;
        w->mirrors_cap = cap;
    }
    w->mirrors[w->nmirrors].id = id;
    w->mirrors[w->nmirrors].size = size;
    w->mirrors[w->nmirrors++].written = 0;
}

static int sink_failed(void *ctx)
{
    walk *w = ctx;
    return w->failed || (w->bin && w->bin->error);
}

/* ---- the sink: writing, in the two formats ---- */

static void text_field(FILE *f, const char *name, uint64_t id)
{
    /* HPROF's layout: a tab, the name, one or two tabs, the id in hex. */
    fprintf(f, "\t%s%s%llx\n", name, strlen(name) < 8 ? "\t\t" : "\t", (unsigned long long)id);
}

static void write_class(walk *w, serial_t serial, dclass *c)
{
    if (c->dumped)
        return;
    c->dumped = 1;
    if (w->bin) {
        hb_field *fields = calloc(c->f.n_own_pos ? c->f.n_own_pos : 1, sizeof *fields);
        if (fields == NULL) { w->failed = ENOMEM; return; }
        for (uint32_t i = 0; i < c->f.n_own_pos; i++)
            fields[i] = (hb_field){ STRING_ID(string_intern(c->f.pos[i].name)), c->f.pos[i].type };
        hb_class hc = {
            .id = class_object_id(w, serial),
            .trace_serial = load_trace_written(serial, w->bin->tables_written.traces),
            .super_id = c->f.super ? class_object_id(w, c->f.super) : 0,
            .loader_id = c->loader, .signers_id = c->signers, .protection_domain_id = c->domain,
            .instance_size = c->f.value_len, .statics = c->statics, .n_statics = (uint16_t)c->f.n_statics,
            .fields = fields, .n_fields = (uint16_t)c->f.n_own_pos,
        };
        hb_class_dump(w->bin, &hc);
        free(fields);
        return;
    }
    FILE *f = w->text;
    const text_writer *tw = w->t->text;
    fprintf(f, "CLS %llx (name=%s, trace=%u)\n", (unsigned long long)class_object_id(w, serial), c->name,
            tw->omit_trace_records ? EMPTY_TRACE_SERIAL : load_trace_written(serial, tw->traces_written));
    if (c->f.super) text_field(f, "super", class_object_id(w, c->f.super));
    if (c->loader) text_field(f, "loader", c->loader);
    if (c->signers) text_field(f, "signers", c->signers);
    if (c->domain) text_field(f, "domain", c->domain);
    for (uint32_t i = 0; i < c->f.n_statics; i++)
        if (c->statics[i].value.type == HB_OBJECT && c->statics[i].value.bits) {
            char label[512];
            snprintf(label, sizeof label, "static %s", c->f.statics[i].name);
            text_field(f, label, c->statics[i].value.bits);
        }
}

static void sink_class_reference(void *ctx, fl_class *f, jvmtiHeapReferenceKind kind, jint index, jlong id)
{
    (void)ctx; (void)index;
    dclass *c = (dclass *)f;
    if (kind == JVMTI_HEAP_REFERENCE_CLASS_LOADER)
        c->loader = (uint64_t)id;
    else if (kind == JVMTI_HEAP_REFERENCE_SIGNERS)
        c->signers = (uint64_t)id;
    else if (kind == JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN)
        c->domain = (uint64_t)id;
}

static void sink_static_value(void *ctx, fl_class *f, uint32_t pos, uint64_t bits)
{
    (void)ctx;
    ((dclass *)f)->statics[pos].value.bits = bits;
}

static void sink_class_done(void *ctx, fl_class *f, jlong tag)
{
    write_class(ctx, (serial_t)tag, (dclass *)f);
}

/* A Class object that is not a class the dump describes is written once. */
static void mirror_written(walk *w, jlong id)
{
    for (uint32_t i = 0; i < w->nmirrors; i++)
        if (w->mirrors[i].id == id)
            w->mirrors[i].written = 1;
}

static void sink_instance(void *ctx, fl_class *f, jlong class_tag, jlong id, const uint64_t *values)
{
    walk *w = ctx;
    dclass *c = (dclass *)f;
    uint32_t trace = trace_of_tag(id);
    uint64_t class_id = class_object_id(w, (serial_t)class_tag);
    if (w->bin) {
        hb_instance_begin(w->bin, (uint64_t)id, trace, class_id, c->f.value_len);
        for (uint32_t i = 0; i < c->f.npos; i++)
            hb_put_value(w->bin, c->f.pos[i].type, values[i]);
    } else {
        fprintf(w->text, "OBJ %llx (sz=%lld, trace=%u, class=%s@%llx)\n", (unsigned long long)id,
                (long long)c->obj_size, trace, c->name, (unsigned long long)class_id);
        for (uint32_t i = 0; i < c->f.npos; i++)
            if (c->f.pos[i].type == HB_OBJECT && values[i])
                text_field(w->text, c->f.pos[i].name, values[i]);
    }
    if ((serial_t)class_tag == w->class_class)
        mirror_written(w, id);
    counted(w, c->obj_size);
}

static void sink_array_begin(void *ctx, fl_class *f, jlong class_tag, jlong id, uint32_t length, jlong size)
{
    walk *w = ctx;
    dclass *c = (dclass *)f;
    uint32_t trace = trace_of_tag(id);
    uint64_t class_id = class_object_id(w, (serial_t)class_tag);
    if (w->bin)
        hb_obj_array_begin(w->bin, (uint64_t)id, trace, length, class_id);
    else
        fprintf(w->text, "ARR %llx (sz=%lld, trace=%u, nelems=%u, elem type=%s@%llx)\n",
                (unsigned long long)id, (long long)size, trace, length, c->name, (unsigned long long)class_id);
    counted(w, size);
}

static void sink_array_element(void *ctx, uint32_t index, jlong id)
{
    walk *w = ctx;
    if (w->bin) {
        hb_put_value(w->bin, HB_OBJECT, (uint64_t)id);
    } else if (id != 0) {
        char label[32];
        snprintf(label, sizeof label, "[%u]", index);
        text_field(w->text, label, (uint64_t)id);
    }
}

static void sink_primitive_array(void *ctx, jlong class_tag, jlong id, jlong size, jint count, uint8_t type,
                                 const void *elements)
{
    (void)class_tag;
    walk *w = ctx;
    uint32_t trace = trace_of_tag(id);
    if (w->bin)
        hb_prim_array(w->bin, (uint64_t)id, trace, type, (uint32_t)count, elements);
    else
        fprintf(w->text, "ARR %llx (sz=%lld, trace=%u, nelems=%d, elem type=%s)\n", (unsigned long long)id,
                (long long)size, trace, count, type_name(type));
    counted(w, size);
}

static void sink_root(void *ctx, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong id)
{
    walk *w = ctx;
    /* Threads' roots name their thread by its object's tag. */
    serial_t thread = 0;
    jlong thread_tag = kind == JVMTI_HEAP_REFERENCE_STACK_LOCAL ? info->stack_local.thread_tag
                     : kind == JVMTI_HEAP_REFERENCE_JNI_LOCAL ? info->jni_local.thread_tag
                     : kind == JVMTI_HEAP_REFERENCE_THREAD ? id : 0;
    uint32_t trace = EMPTY_TRACE_SERIAL, frames = 0;
    for (uint32_t i = 0; heap_tag_is_dump(thread_tag) && i < w->nthreads; i++)
        if (w->threads[i].number == (uint32_t)thread_tag) {
            thread = w->threads[i].serial;
            trace = w->threads[i].trace;
            frames = w->threads[i].frames;
            break;
        }
    int32_t depth = kind == JVMTI_HEAP_REFERENCE_STACK_LOCAL ? info->stack_local.depth
                  : kind == JVMTI_HEAP_REFERENCE_JNI_LOCAL ? info->jni_local.depth : 0;
    /* The trace was taken before the walk: a thread that ran on since may
     * be deeper now, and a frame number past the trace names no frame. */
    if (depth < 0 || (uint32_t)depth >= frames)
        depth = -1;
    hb_writer *b = w->bin;
    FILE *f = w->text;
    unsigned long long x = (unsigned long long)id;
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_JNI_GLOBAL:
        if (b) hb_root_jni_global(b, (uint64_t)id, 0);
        else fprintf(f, "ROOT %llx (kind=<JNI global ref>, id=0, trace=%u)\n", x, EMPTY_TRACE_SERIAL);
        break;
    case JVMTI_HEAP_REFERENCE_SYSTEM_CLASS: {
        dclass *c = class_of_serial(w, (serial_t)id);
        if (b) hb_root_sticky_class(b, (uint64_t)id);
        else fprintf(f, "ROOT %llx (kind=<system class>, name=%s)\n", x, c ? c->name : "?");
        break;
    }
    case JVMTI_HEAP_REFERENCE_MONITOR:
        if (b) hb_root_monitor_used(b, (uint64_t)id);
        else fprintf(f, "ROOT %llx (kind=<busy monitor>)\n", x);
        break;
    case JVMTI_HEAP_REFERENCE_STACK_LOCAL:
        if (b) hb_root_java_frame(b, (uint64_t)id, thread, depth);
        else fprintf(f, "ROOT %llx (kind=<Java stack>, thread=%u, frame=%d)\n", x, thread, depth);
        break;
    case JVMTI_HEAP_REFERENCE_JNI_LOCAL:
        if (b) hb_root_jni_local(b, (uint64_t)id, thread, depth);
        else fprintf(f, "ROOT %llx (kind=<JNI local ref>, thread=%u, frame=%d)\n", x, thread, depth);
        break;
    case JVMTI_HEAP_REFERENCE_THREAD:
        if (b) hb_root_thread_object(b, (uint64_t)id, thread, trace);
        else fprintf(f, "ROOT %llx (kind=<thread>, id=%u, trace=%u)\n", x, thread, trace);
        break;
    default:
        if (b) hb_root_unknown(b, (uint64_t)id);
        else fprintf(f, "ROOT %llx (kind=<unknown>)\n", x);
        break;
    }
}

static void sink_defer(void *ctx, const heap_walk_deferred *d)
{
    walk *w = ctx;
    heap_walk_keep_deferred(&w->deferred, d);
}

/* ------------------------------------------------------ before the walk */

/* The layouts' view of the walk's classes: keyed by class serial. */
static fl_class *layout_get(void *ctx, uint32_t key)
{
    dclass *c = class_of_serial(ctx, key);
    return c ? &c->f : NULL;
}

static uint32_t layout_key_of(void *ctx, JNIEnv *jni, jclass k)
{
    (void)ctx; (void)jni;
    return class_serial_of_klass(k);
}

/* The HPROF records' part of a class read: field names interned (before
 * the file's UTF8 records are written), the statics' slots for values. */
static int name_fields(dclass *c)
{
    for (uint32_t i = 0; i < c->f.n_own_pos; i++)
        string_intern(c->f.pos[i].name);
    c->statics = calloc(c->f.n_statics ? c->f.n_statics : 1, sizeof *c->statics);
    if (c->statics == NULL)
        return -1;
    for (uint32_t i = 0; i < c->f.n_statics; i++)
        c->statics[i] = (hb_static){ STRING_ID(string_intern(c->f.statics[i].name)), { c->f.statics[i].type, 0 } };
    return 0;
}

static void free_walk(walk *w)
{
    for (uint32_t i = 0; w->classes && i < w->nclasses; i++) {
        dclass *c = &w->classes[i];
        field_layout_free(&c->f);
        free(c->statics);
    }
    free(w->classes);
    free(w->threads);
    free(w->mirrors);
    heap_walk_free_deferred(&w->deferred);
    free(w->resolved);
}

/* A JVMTI environment of its own for one dump. The walk gives every object
 * it meets a tag, and the JVM's tag map is the walk's cost (measured on JDK
 * 17 and 25: lookups in it are most of the dump's time). In the agent's own
 * environment those tags would have to be taken off again by a pass over
 * the whole heap, and they would leave that environment's map grown to the
 * heap's size for the rest of the run (the JVM never shrinks it; each later
 * GC works through it). Disposing of this environment drops them all at once. */
static jvmtiEnv *dump_env_open(void)
{
    jvmtiEnv *env = NULL;
    if ((*hprof_vm)->GetEnv(hprof_vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL) {
        fprintf(stderr, "hprof: heap dump: no JVMTI environment of its own; the dump uses the agent's\n");
        return NULL;
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_tag_objects = 1;
    if (jvmti_failed((*env)->AddCapabilities(env, &caps), "AddCapabilities (heap dump)")) {
        (*env)->DisposeEnvironment(env);
        return NULL;
    }
    return env;
}

/* After a walk in the agent's environment: the ids off, class tags kept. */
static jint JNICALL restore_tag(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user_data)
{
    (void)class_tag; (void)size; (void)length; (void)user_data;
    if (heap_tag_is_dump(*tag_ptr) || heap_tag_subsite(*tag_ptr))
        *tag_ptr = 0;
    return 0;
}

/* The ids go, whatever happened: with the dump's own environment, or off
 * the agent's tags. */
static void drop_ids(jvmtiEnv *own)
{
    if (own) {
        jvmti_failed((*own)->DisposeEnvironment(own), "DisposeEnvironment (heap dump)");
        return;
    }
    jvmtiHeapCallbacks rc;
    memset(&rc, 0, sizeof rc);
    rc.heap_iteration_callback = restore_tag;
    jvmti_failed((*hprof_jvmti)->IterateThroughHeap(hprof_jvmti, JVMTI_HEAP_FILTER_UNTAGGED, NULL, &rc, NULL),
                 "IterateThroughHeap (restoring tags after a heap dump)");
}

/* Every loaded class not read yet gets its layout (the classes are in the
 * table by serial, grown as needed). tag: the dump's environment tags
 * their Class objects with their serials (before the walk; after it, the
 * tags are the walk's ids). 0, or -1 when memory or JVMTI fails. */
static int read_classes(JNIEnv *jni, walk *w, int tag)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jint n = 0;
    jclass *classes = NULL;
    if (jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &n, &classes), "GetLoadedClasses"))
        return -1;
    jvmti_hold_locals(jni, n);
    /* Serials first (they tag the class objects), then the table sized. */
    serial_t *serials = calloc(n ? (size_t)n : 1, sizeof *serials);
    if (serials == NULL) { jvmti_free(classes); return -1; }
    /* Class objects are tagged with their serials in the dump environment
     * too: the walk knows every object's class by its class's tag. */
    for (jint i = 0; i < n; i++) {
        serials[i] = class_serial_of_klass(classes[i]);
        if (tag && serials[i] && w->tags != jvmti)
            (*w->tags)->SetTag(w->tags, classes[i], (jlong)serials[i]);
    }
    uint32_t want = class_count() + 64;
    int rc = 0;
    if (want > w->nclasses) {
        dclass *more = realloc(w->classes, want * sizeof *more);
        if (more == NULL) {
            rc = -1;
        } else {
            memset(more + w->nclasses, 0, (want - w->nclasses) * sizeof *more);
            w->classes = more;
            w->nclasses = want;
        }
    }
    fl_classes layouts = { layout_get, layout_key_of, w };
    for (jint i = 0; i < n && rc == 0; i++) {
        dclass *c = serials[i] >= CLASS_SERIAL_BASE && serials[i] - CLASS_SERIAL_BASE < w->nclasses
                  ? &w->classes[serials[i] - CLASS_SERIAL_BASE] : NULL;
        /* Two classes of one name (two loaders) have two serials
         * (class_serial_of_klass), so each has its own entry. */
        if (c == NULL || c->loaded)
            continue;
        if (field_layout_read(jni, jvmti, &layouts, classes[i], &c->f) != 0 || name_fields(c) != 0) {
            field_layout_free(&c->f);          /* the class is left out, as one JVMTI cannot read */
            free(c->statics);
            c->statics = NULL;
        } else {
            c->loaded = 1;
            c->name = class_java_name(serials[i]);
            if (c->name == NULL) c->name = "?";
        }
    }
    /* Names interned above may have added classes (array element types). */
    uint32_t stamp = 0, maxpos = w->max_positions ? w->max_positions : 1;
    for (uint32_t i = 0; i < w->nclasses && rc == 0; i++) {
        dclass *c = &w->classes[i];
        if (!c->loaded) continue;
        if (field_layout_complete(&layouts, &c->f, &stamp) != 0) rc = -1;
        if (c->f.npos > maxpos) maxpos = c->f.npos;
    }
    for (jint i = 0; i < n; i++)
        (*jni)->DeleteLocalRef(jni, classes[i]);
    jvmti_free(classes);
    free(serials);
    w->max_positions = maxpos;
    return rc;
}

static int prepare(JNIEnv *jni, walk *w, const trace_builder *b)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    /* Objects heap=sites tracks are tagged with their subsite, which the
     * walk keeps in their ids (so their records carry their allocation
     * traces). */
    heap_agent_tag_tracked(jni, w->tags);
    jclass class_class = (*jni)->FindClass(jni, "java/lang/Class");
    w->class_class = class_class ? class_serial_of_klass(class_class) : 0;
    if (class_class) (*jni)->DeleteLocalRef(jni, class_class);
    if (read_classes(jni, w, 1) != 0)
        return -1;

    /* Threads: their objects get their dump numbers now, so that roots on
     * their stacks can name them. */
    jint nt = 0;
    jthread *threads = NULL;
    if (jvmti_failed((*jvmti)->GetAllThreads(jvmti, &nt, &threads), "GetAllThreads"))
        return -1;
    jvmti_hold_locals(jni, nt);
    w->threads = calloc(nt ? (size_t)nt : 1, sizeof *w->threads);
    for (jint i = 0; i < nt; i++) {
        jlong tag = 0;
        if (w->threads && (*w->tags)->GetTag(w->tags, threads[i], &tag) == JVMTI_ERROR_NONE) {
            int64_t id = heap_tag_is_dump(tag) ? tag : heap_tag_dump(heap_tag_subsite(tag), ++w->next_number);
            if ((*w->tags)->SetTag(w->tags, threads[i], id) == JVMTI_ERROR_NONE) {
                serial_t ts = thread_serial_of(threads[i]);
                w->threads[w->nthreads].number = (uint32_t)id;
                w->threads[w->nthreads].serial = ts;
                trace_builder whole = *b;
                whole.depth = 1024;      /* frame numbers of stack roots index into it */
                serial_t tr = stack_trace_of(&whole, threads[i], NULL, 0, 0, NULL);
                serial_t in_thread;
                const serial_t *frames;
                uint32_t n = 0;
                if (tr == 0 || trace_get(tr, &in_thread, &frames, &n) != 0)
                    n = 0;
                w->threads[w->nthreads].trace = tr ? tr : EMPTY_TRACE_SERIAL;
                w->threads[w->nthreads].frames = n;
                w->nthreads++;
            }
        }
        (*jni)->DeleteLocalRef(jni, threads[i]);
    }
    jvmti_free(threads);
    return 0;
}

/* A new, already unlinked temporary file in the directory of `beside`
 * (its name, for messages, in name). NULL with errno set on failure. */
static FILE *open_stage_file(const char *beside, char *name, size_t size)
{
    const char *slash = strrchr(beside, '/');
    int dir_len = slash ? (int)(slash - beside) : 1;
    snprintf(name, size, "%.*s/.hprof-heap.%d.XXXXXX", dir_len, slash ? beside : ".", (int)getpid());
    int fd = mkstemp(name);
    if (fd < 0)
        return NULL;
    unlink(name);
    FILE *f = fdopen(fd, "w+");
    if (f == NULL) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* ------------------------------------------------------ after the walk */

/* Class objects the walk met untagged (classes loaded after the class list
 * was read), by the id the walk gave them: their serials once read. */
typedef struct new_class { jlong id; serial_t serial; } new_class;

static int by_new_id(const void *a, const void *b)
{
    jlong x = ((const new_class *)a)->id, y = ((const new_class *)b)->id;
    return x < y ? -1 : x > y;
}

static serial_t serial_of_class_id(const new_class *known, size_t n, jlong id)
{
    if (heap_tag_is_class(id))
        return (serial_t)id;
    new_class key = { id, 0 }, *k = bsearch(&key, known, n, sizeof key, by_new_id);
    return k ? k->serial : 0;
}

/* The ids of the Class objects the deferred objects name (their classes',
 * and their own where they are Class objects), sorted, once each. */
static new_class *ids_to_resolve(const walk *w, size_t *n)
{
    const heap_walk_deferrals *l = &w->deferred;
    new_class *ids = calloc(2 * l->n + 1, sizeof *ids);
    if (ids == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0, j; i < l->n; i = j) {
        j = heap_walk_object_end(l, i);
        jlong of = heap_walk_deferred_class(&l->v[i], j - i);
        if (of != 0 && !heap_tag_is_class(of))
            ids[k++].id = of;
        if ((serial_t)of == w->class_class && !heap_tag_is_class(l->v[i].id))
            ids[k++].id = l->v[i].id;
    }
    qsort(ids, k, sizeof *ids, by_new_id);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || ids[u - 1].id != ids[i].id)
            ids[u++] = ids[i];
    *n = u;
    return ids;
}

/* Which classes the ids are: the Class objects with those tags in the
 * dump's environment, before read_classes may tag them anew. Primitive
 * types' (int.class) stay 0: they are instances of java.lang.Class. */
static void resolve_class_ids(JNIEnv *jni, const walk *w, new_class *ids, size_t n)
{
    jlong *tags = calloc(n + 1, sizeof *tags);
    jint found = 0;
    jobject *objects = NULL;
    jlong *found_tags = NULL;
    for (size_t i = 0; tags && i < n; i++)
        tags[i] = ids[i].id;
    if (tags == NULL || n > INT32_MAX ||
        jvmti_failed((*w->tags)->GetObjectsWithTags(w->tags, (jint)n, tags, &found, &objects, &found_tags),
                     "GetObjectsWithTags (classes loaded during a heap dump)")) {
        free(tags);
        return;
    }
    jvmti_hold_locals(jni, found);
    for (jint i = 0; i < found; i++) {
        jint status = 0;
        new_class key = { found_tags[i], 0 }, *k = bsearch(&key, ids, n, sizeof key, by_new_id);
        if (k && (*hprof_jvmti)->GetClassStatus(hprof_jvmti, objects[i], &status) == JVMTI_ERROR_NONE &&
            !(status & (JVMTI_CLASS_STATUS_PRIMITIVE | JVMTI_CLASS_STATUS_ERROR)))
            k->serial = class_serial_of_klass(objects[i]);
        (*jni)->DeleteLocalRef(jni, objects[i]);
    }
    jvmti_free(objects);
    jvmti_free(found_tags);
    free(tags);
}

/* One deferred class: its statics and references, then its CLASS DUMP. */
static void put_deferred_class(walk *w, dclass *c, serial_t serial, const heap_walk_deferred *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const fl_slot *slot = d[i].kind == HEAP_WALK_DEFER_STATIC
                            ? field_layout_slot(&c->f, d[i].index, d[i].type, 1) : NULL;
        if (slot && (uint32_t)slot->pos < c->f.n_statics)
            c->statics[slot->pos].value.bits = d[i].bits;
        else if (d[i].kind == HEAP_WALK_DEFER_OBJECT)
            sink_class_reference(w, &c->f, (jvmtiHeapReferenceKind)d[i].index, 0, (jlong)d[i].bits);
        else if (d[i].kind == HEAP_WALK_DEFER_STATIC && !c->f.unprepared)
            w->left_out++;
    }
    write_class(w, serial, c);
}

static void put_deferred_array(walk *w, dclass *c, serial_t serial, const heap_walk_deferred *d, size_t n)
{
    const heap_walk_deferred *header = NULL;
    for (size_t i = 0; i < n && header == NULL; i++)
        if (d[i].kind == HEAP_WALK_DEFER_ARRAY)
            header = &d[i];
    if (header == NULL || header->index < 0) {
        w->left_out += n;
        return;
    }
    uint32_t length = (uint32_t)header->index, next = 0;
    sink_array_begin(w, &c->f, serial, d->id, length, (jlong)header->bits);
    for (size_t i = 0; i < n; i++) {
        if (d[i].kind != HEAP_WALK_DEFER_ELEMENT)
            continue;
        uint32_t index = (uint32_t)d[i].index;
        if (index >= length || index < next) {
            w->left_out++;
            continue;
        }
        for (; next < index; next++)
            sink_array_element(w, next, 0);
        sink_array_element(w, index, (jlong)d[i].bits);
        next = index + 1;
    }
    for (; next < length; next++)
        sink_array_element(w, next, 0);
}

static void put_deferred_instance(walk *w, dclass *c, serial_t serial, const heap_walk_deferred *d, size_t n)
{
    uint64_t *values = calloc(c->f.npos + 1, sizeof *values);
    if (values == NULL) {
        w->failed = ENOMEM;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const fl_slot *slot = d[i].kind == HEAP_WALK_DEFER_FIELD
                            ? field_layout_slot(&c->f, d[i].index, d[i].type, 0) : NULL;
        if (slot && (uint32_t)slot->pos < c->f.npos)
            values[slot->pos] = d[i].bits;
        else if (d[i].kind == HEAP_WALK_DEFER_FIELD && !c->f.unprepared)
            w->left_out++;
        else if (d[i].kind == HEAP_WALK_DEFER_SIZE && c->obj_size == 0)
            c->obj_size = (int64_t)d[i].bits;
    }
    sink_instance(w, &c->f, serial, d->id, values);
    free(values);
}

/* One object the walk deferred, now that its class is read. A class still
 * not prepared (class data sharing maps some objects into the heap before
 * their classes are linked) has no fields for JVMTI: its objects and
 * statics are written without values, as the walk writes them. */
static void put_deferred(walk *w, const new_class *known, size_t nknown, const heap_walk_deferred *d, size_t n)
{
    serial_t of = serial_of_class_id(known, nknown, heap_walk_deferred_class(d, n));
    serial_t self = of == w->class_class ? serial_of_class_id(known, nknown, d->id) : 0;
    dclass *c = class_of_serial(w, self ? self : of);
    if (c == NULL) {
        w->left_out += n;
    } else if (self) {
        if (!heap_tag_is_class(d->id))
            c->object_id = (uint64_t)d->id;
        mirror_written(w, d->id);
        put_deferred_class(w, c, self, d, n);
    } else if (c->f.is_array) {
        put_deferred_array(w, c, of, d, n);
    } else {
        put_deferred_instance(w, c, of, d, n);
    }
}

/* LOAD CLASS records for the classes read after the walk, naming their
 * Class objects by the walk's ids. One whose LOAD CLASS went out before
 * the walk (its serial was taken meanwhile, e.g. for its loading trace)
 * named it by its serial: it gets a second one, of a serial of its own
 * from a range ours and the JVM's dumper's never reach, so that its CLASS
 * DUMP has a LOAD CLASS of its id. */
#define SECOND_LOAD_SERIALS UINT32_C(0x30000000)
static void load_new_classes(walk *w)
{
    static uint32_t seconds;         /* one dump at a time (agent.lock), serials unique in the file */
    const new_class *known = w->resolved;
    size_t n = w->nresolved;
    uint32_t written = w->bin->tables_written.classes;
    write_new_records(w->bin, NULL, w);
    for (size_t i = 0; i < n; i++) {
        const dclass *c = class_of_serial(w, known[i].serial);
        if (c == NULL || c->object_id != (uint64_t)known[i].id || known[i].serial >= CLASS_SERIAL_BASE + written ||
            seconds >= UINT32_C(0x0FFFFFFF))
            continue;
        serial_t name = internal_name(known[i].serial);
        write_new_strings(w->bin);
        if (name)
            hb_load_class(w->bin, SECOND_LOAD_SERIALS + ++seconds, c->object_id,
                          load_trace_written(known[i].serial, w->bin->tables_written.traces), STRING_ID(name));
    }
}

/* The objects the walk met of classes loaded after the class list was
 * read: the list is read again (they are loaded now), their classes get
 * their CLASS DUMPs, then the objects (their LOAD CLASS records are
 * load_new_classes', before the staged dump). A
 * value that fits no field of its class, or an object whose class cannot
 * be read now (unloaded since), is counted in w->left_out. */
static void write_deferred(JNIEnv *jni, walk *w)
{
    heap_walk_deferrals *l = &w->deferred;
    w->left_out += l->dropped;
    if (l->n == 0)
        return;
    heap_walk_sort_deferred(l);
    for (uint32_t i = 0; i < w->nclasses; i++) {
        dclass *c = &w->classes[i];
        if (c->loaded && c->f.unprepared && !c->dumped) {      /* read again, prepared by now */
            field_layout_free(&c->f);
            free(c->statics);
            memset(c, 0, sizeof *c);
        }
    }
    size_t n = 0;
    new_class *known = ids_to_resolve(w, &n);
    if (known == NULL || read_classes(jni, w, 0) != 0) {
        free(known);
        w->left_out += l->n;
        return;
    }
    resolve_class_ids(jni, w, known, n);
    /* Class objects met untagged keep the walk's ids: references to them
     * were written with those. Set before any record names them. */
    for (size_t i = 0; i < n; i++) {
        dclass *c = class_of_serial(w, known[i].serial);
        if (c && !c->dumped) {
            c->object_id = (uint64_t)known[i].id;
            mirror_written(w, known[i].id);     /* its CLASS DUMP describes it */
        }
    }
    for (size_t i = 0, j; i < l->n && !sink_failed(w); i = j) {
        j = heap_walk_object_end(l, i);
        put_deferred(w, known, n, &l->v[i], j - i);
    }
    w->resolved = known;
    w->nresolved = n;
}

int heap_dump_write(JNIEnv *jni, const heap_dump_target *t, int depth, int lineno)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.t = t;
    jvmtiEnv *own = dump_env_open();
    w.tags = own ? own : hprof_jvmti;
    jvmtiEnv *jvmti = w.tags;
    w.last_progress = time(NULL);
    trace_builder b = { .depth = depth, .lineno = lineno, .resolve = resolve_method };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (prepare(jni, &w, &b) != 0) {
        fprintf(stderr, "hprof: heap dump: out of memory or JVMTI failure while reading the classes\n");
        free_walk(&w);
        drop_ids(own);
        return -1;
    }
    char stage[4300];
    stage[0] = '\0';
    FILE *staged = NULL;
    if (t->format == 'b') {
        w.bin = t->binary;
        heap_dump_binary_new_records(w.bin);   /* names, classes and traces the dump refers to */
        hb_heap_begin(w.bin);
        /* Staged beside the output: classes loaded during the walk get their
         * LOAD CLASS records before it (hb_stage_begin). Without a stage
         * they follow HEAP DUMP END, where VisualVM reads them and Eclipse
         * MAT does not. */
        staged = open_stage_file(t->out_path, stage, sizeof stage);
        if (staged == NULL)
            fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s; classes "
                    "loaded during the dump get their LOAD CLASS records after it\n", stage, strerror(errno));
        else if (hb_stage_begin(w.bin, staged) != 0) {
            fclose(staged);
            staged = NULL;
        }
    } else {
        /* HPROF's text header gives the counts first: stage the body in a
         * file beside the output (a heap can be larger than /tmp), created
         * exclusively and unlinked at once, so nothing is left behind even
         * if the JVM dies mid-dump. With net= the "output" is an address:
         * the working directory then. */
        w.text = open_stage_file(t->out_path, stage, sizeof stage);
        if (w.text == NULL) {
            fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s\n", stage,
                    strerror(errno));
            free_walk(&w);
            drop_ids(own);
            return -1;
        }
        text_write_new_records(t->text);
        text_note_trace(t->text, EMPTY_TRACE_SERIAL);
    }

    const heap_walk_sink sink = {
        .ctx = &w, .is_class_tag = sink_is_class_tag, .class_of = sink_class_of, .id_of = sink_id_of,
        .met = sink_met, .failed = sink_failed, .root = sink_root, .class_reference = sink_class_reference,
        .static_value = sink_static_value, .class_done = sink_class_done, .instance = sink_instance,
        .array_begin = sink_array_begin, .array_element = sink_array_element,
        .primitive_array = sink_primitive_array, .follow = JVMTI_VISIT_OBJECTS,
        .defer = sink_defer, .defer_class = w.class_class,
    };
    heap_walk objects;
    jvmtiError err = JVMTI_ERROR_OUT_OF_MEMORY;
    if (heap_walk_init(&objects, &sink, w.max_positions) == 0)
        err = heap_walk_run(&objects, jvmti, NULL);
    if (err == JVMTI_ERROR_NONE)
        write_deferred(jni, &w);
    dclass *cc = class_of_serial(&w, w.class_class);
    uint64_t *no_values = cc ? calloc(cc->f.npos ? cc->f.npos : 1, sizeof *no_values) : NULL;
    for (uint32_t i = 0; no_values && i < w.nmirrors; i++)
        if (!w.mirrors[i].written)
            sink_instance(&w, &cc->f, w.class_class, w.mirrors[i].id, no_values);
    free(no_values);
    /* Classes the walk did not visit (array classes report no fields). */
    for (uint32_t i = 0; i < w.nclasses; i++)
        if (w.classes[i].loaded && !w.classes[i].dumped)
            write_class(&w, CLASS_SERIAL_BASE + i, &w.classes[i]);

    drop_ids(own);

    int bad = jvmti_failed(err, "FollowReferences") || w.failed || w.out_of_numbers || objects.failed;
    if (w.bin) {
        hb_heap_end(w.bin);
        if (staged)
            hb_stage_end(w.bin);
        if (w.nresolved)
            load_new_classes(&w);
        if (staged) {
            hb_stage_append(w.bin);
            fclose(staged);
        }
        bad |= w.bin->error != 0;
    } else {
        char date[64];
        text_format_date(time(NULL), date, sizeof date);
        FILE *out = t->text->out;
        fprintf(out, "HEAP DUMP BEGIN (%llu objects, %llu bytes) %s\n", (unsigned long long)w.objects,
                (unsigned long long)w.bytes, date);
        bad |= fflush(w.text) != 0 || ferror(w.text);
        rewind(w.text);
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, w.text)) > 0)
            if (fwrite(buf, 1, got, out) != got) { bad = 1; break; }
        fprintf(out, "HEAP DUMP END\n");
        fclose(w.text);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (w.progress_shown || bad)
        fprintf(stderr, "hprof: heap dump %s: %llu objects, %llu bytes in %.1f s\n", bad ? "FAILED" : "done",
                (unsigned long long)w.objects, (unsigned long long)w.bytes, secs);
    if (w.out_of_numbers)
        fprintf(stderr, "hprof: heap dump: more than 2^32 objects; the dump is incomplete\n");
    if (objects.mismatches)
        fprintf(stderr, "hprof: heap dump: %llu field values did not match the class layouts and were "
                "left out\n", (unsigned long long)objects.mismatches);
    if (w.left_out)
        fprintf(stderr, "hprof: heap dump: %llu values of objects of classes loaded during the dump were left "
                "out (past %zu kept, or their classes unloaded before they could be read)\n",
                (unsigned long long)w.left_out, HEAP_WALK_MAX_DEFERRED);
    heap_walk_free(&objects);
    free_walk(&w);
    return bad ? -1 : 0;
}

/* ------------------------------------------------- the JVM's own dumper */

/* The JVM's class serials start at 1 in every dump it writes, as ours
 * start at CLASS_SERIAL_BASE: each of its dumps in one file gets a range of
 * its own, far above ours. */
#define JVM_CLASS_SERIALS      UINT32_C(0x40000000)
#define JVM_CLASS_SERIAL_RANGE UINT32_C(0x01000000)

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A descriptor of the output file, to read it from the start, when it is
 * worth making the JVM's dump (fd) the output instead of copying it: the
 * output is a regular file at out_path (not net='s spool) holding less
 * than the dump. -1 otherwise. */
static int own_file_to_follow(const heap_dump_target *t, int fd)
{
    hb_writer *w = t->binary;
    struct stat out, dump, path;
    int o = w->out ? fileno(w->out) : -1;
    if (o < 0 || w->error || w->in_heap || fstat(o, &out) != 0 || fstat(fd, &dump) != 0 ||
        !S_ISREG(out.st_mode) || (uint64_t)dump.st_size <= w->bytes)
        return -1;
    int old = open(t->out_path, O_RDONLY | O_CLOEXEC);
    if (old < 0)
        return -1;
    if (fstat(old, &path) != 0 || path.st_dev != out.st_dev || path.st_ino != out.st_ino) {
        close(old);
        return -1;
    }
    return old;
}

/* The JVM's dump (fd, at path stage) becomes the output file: its class
 * serials moved (in place), the writer switched to its end, the output's
 * records so far appended (read through old), then renamed over out_path
 * with the output's mode. 0; 1 when the dump is not an HPROF file of this
 * id size (nothing changed); 2 when it could not be read or changed
 * (errno; the output untouched); -1 when the output failed (w->error). */
static int adopt(hb_writer *w, int fd, int old, const char *stage, const char *out_path, uint32_t offset)
{
    uint64_t start_ms = 0, size = 0;
    int rc = hb_offset_class_serials(fd, offset, &start_ms, &size);
    if (rc != 0) {
        if (rc < 0)
            unlink(stage);
        return rc < 0 ? 2 : 1;
    }
    struct stat mode;
    if (fstat(old, &mode) != 0 || hb_switch_file(w, fd, start_ms, size) != 0 ||
        hb_append_file(w, old, 0) != 0) {
        if (w->error == 0)
            w->error = EINVAL;       /* the output's own header was not ours: cannot be */
        unlink(stage);
        return -1;
    }
    if (fflush(w->out) != 0 || fchmod(fd, mode.st_mode & 07777) != 0 || rename(stage, out_path) != 0) {
        w->error = errno ? errno : EIO;
        unlink(stage);
        return -1;
    }
    return 0;
}

/* A class's name as both sides can compare it: the JVM's internal form
 * (a JVMTI signature "Lpkg/Name;" loses its L and ;), and a hidden class's
 * address after '+', which the JVM's dump writes ("Foo$$Lambda$14+0x7f...",
 * JDK 25 "Foo$$Lambda+0x7f...") where JVMTI gives '.' (and Class.getName
 * '/'). In out (size bytes): 0, or -1 when it does not fit. */
static int comparable_name(const char *name, size_t n, int from_jvmti, char *out, size_t size)
{
    if (from_jvmti && n >= 2 && name[0] == 'L' && name[n - 1] == ';') {
        name++;
        n -= 2;
    }
    if (n >= size)
        return -1;
    memcpy(out, name, n);
    out[n] = '\0';
    char *hex = NULL;
    for (char *p = strstr(out, "0x"); p; p = strstr(p + 2, "0x"))
        hex = p;
    if (hex && hex > out && (hex[-1] == '.' || hex[-1] == '/' || hex[-1] == '+') && hex[2] != '\0' &&
        strspn(hex + 2, "0123456789abcdefABCDEF") == strlen(hex + 2))
        hex[-1] = '+';
    return 0;
}

typedef struct named_class {
    char    *name;
    serial_t serial;
} named_class;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_class *)a)->name, ((const named_class *)b)->name);
}

/* What the JVM's LOAD CLASS records are given (hb_set_load_traces): our
 * classes by name, their traces and where the JVM's serials go. */
typedef struct trace_lookup {
    named_class *by_name;
    uint32_t     n;
    uint32_t     traces_written;  /* traces below TRACE_SERIAL_BASE + this get a record */
    uint32_t     serial_offset;   /* added to the JVM's class serials in the output */
    jvm_classes  jvm;
    uint32_t     ours_ambiguous;  /* names two classes of ours share */
} trace_lookup;

static uint32_t load_trace_by_name(void *ctx, const char *name, size_t len, uint32_t class_serial)
{
    trace_lookup *l = ctx;
    char want[4096];
    if (comparable_name(name, len, 0, want, sizeof want) != 0)
        return 0;
    named_class key = { want, 0 };
    named_class *c = bsearch(&key, l->by_name, l->n, sizeof *c, by_name);
    if (c == NULL)
        return 0;
    if ((c > l->by_name && strcmp(c[-1].name, want) == 0) ||
        (c + 1 < l->by_name + l->n && strcmp(c[1].name, want) == 0)) {
        l->ours_ambiguous++;
        return 0;                    /* which of ours is this one: not known */
    }
    l->jvm.serial[c->serial - CLASS_SERIAL_BASE] = class_serial + l->serial_offset;
    serial_t trace = load_trace_written(c->serial, l->traces_written);
    return trace != EMPTY_TRACE_SERIAL ? trace : 0;
}

static void trace_lookup_free(trace_lookup *l)
{
    for (uint32_t i = 0; l->by_name && i < l->n; i++)
        free(l->by_name[i].name);
    free(l->by_name);
    free(l->jvm.serial);
}

/* Our classes sorted by comparable name: 0, or -1 out of memory. */
static int trace_lookup_make(trace_lookup *l, uint32_t serial_offset)
{
    uint32_t nclasses = class_count();
    *l = (trace_lookup){ .traces_written = trace_count(), .serial_offset = serial_offset };
    l->by_name = calloc(nclasses ? nclasses : 1, sizeof *l->by_name);
    l->jvm.serial = calloc(nclasses ? nclasses : 1, sizeof *l->jvm.serial);
    if (l->by_name == NULL || l->jvm.serial == NULL)
        return -1;
    l->jvm.n = nclasses;
    for (uint32_t i = 0; i < nclasses; i++) {
        const char *sig = class_signature(CLASS_SERIAL_BASE + i);
        char name[4096];
        if (sig == NULL || comparable_name(sig, strlen(sig), 1, name, sizeof name) != 0)
            continue;
        if ((l->by_name[l->n].name = strdup(name)) == NULL)
            return -1;
        l->by_name[l->n++].serial = CLASS_SERIAL_BASE + i;
    }
    qsort(l->by_name, l->n, sizeof *l->by_name, by_name);
    return 0;
}

/* The JVM's LOAD CLASS records (fd) get the traces that loaded their
 * classes (class_loads.c), in place, where the name tells which class of
 * ours it is; l keeps where the JVM's serials went. 0, or -1 (said; the
 * dump keeps the JVM's traces, ours are not written). */
static int give_load_traces(int fd, trace_lookup *l, uint32_t serial_offset)
{
    if (trace_lookup_make(l, serial_offset) != 0) {
        fprintf(stderr, "hprof: heap dump: out of memory; the JVM's dump keeps its empty class loading traces\n");
        return -1;
    }
    uint32_t set = 0, ambiguous = 0;
    if (hb_set_load_traces(fd, load_trace_by_name, l, &set, &ambiguous) < 0) {
        fprintf(stderr, "hprof: heap dump: cannot give the JVM's dump its class loading traces: %s\n",
                strerror(errno));
        return -1;
    }
    return 0;
}

int heap_dump_by_jvm(JNIEnv *jni, const heap_dump_target *t)
{
    static uint32_t dumps;           /* one dump at a time (agent.lock) */
    /* Beside the output (a heap can be larger than /tmp), a name of ours
     * that does not exist: the JVM will not write over a file, and wants
     * the .hprof suffix. */
    const char *slash = strrchr(t->out_path, '/');
    int dir_len = slash ? (int)(slash - t->out_path) : 1;
    char stage[4300];
    snprintf(stage, sizeof stage, "%.*s/.hprof-heap.%d.XXXXXX.hprof", dir_len, slash ? t->out_path : ".",
             (int)getpid());
    int fd = mkstemps(stage, 6);
    if (fd < 0) {
        fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s; the agent "
                "walks the heap itself\n", stage, strerror(errno));
        return 1;
    }
    close(fd);
    unlink(stage);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char why[1024];
    if (t->before_dump)
        t->before_dump(t->dump_ctx, stage);
    if (jvm_heap_dump(jni, stage, 1, why, sizeof why) != 0) {
        unlink(stage);
        fprintf(stderr, "hprof: heap dump: the JVM's own dumper did not write one (%s); the agent walks the "
                "heap itself (slower)\n", why);
        return 1;
    }
    double jvm_secs = seconds_since(&t0);
    fd = open(stage, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hprof: heap dump: cannot read back the JVM's dump %s: %s; the agent walks the heap "
                "itself\n", stage, strerror(errno));
        unlink(stage);
        return 1;
    }
    if (t->after_dump && t->after_dump(t->dump_ctx, jni, fd) != 0) {
        close(fd);
        unlink(stage);
        return 1;
    }
    uint64_t before = t->binary->bytes;
    uint32_t offset = JVM_CLASS_SERIALS + (dumps++ % 48) * JVM_CLASS_SERIAL_RANGE;
    trace_lookup lookup;
    int traced = give_load_traces(fd, &lookup, offset) == 0;
    int old = own_file_to_follow(t, fd);
    int rc = old >= 0 ? adopt(t->binary, fd, old, stage, t->out_path, offset) : 1;
    int adopt_errno = errno;
    const char *how = "its file became the output, followed by the records before it";
    if (rc == 1) {                   /* not adopted, nothing changed: appended instead */
        unlink(stage);               /* the data stays readable through fd */
        how = "then appended to the output";
        rc = hb_append_file(t->binary, fd, offset);
    }
    if (old >= 0)
        close(old);
    close(fd);
    /* The traces the JVM's LOAD CLASS records now name, and their frames
     * naming classes by the JVM's serials. */
    if (rc == 0)
        write_new_records(t->binary, traced ? &lookup.jvm : NULL, NULL);
    trace_lookup_free(&lookup);
    if (rc == 1) {
        fprintf(stderr, "hprof: heap dump: the JVM's dump is not an HPROF file with %u-byte ids; the agent "
                "walks the heap itself\n", HB_ID_SIZE);
        return 1;
    }
    if (rc == 2) {
        fprintf(stderr, "hprof: heap dump: the JVM's dump %s could not be read or changed: %s; the agent walks "
                "the heap itself\n", stage, strerror(adopt_errno));
        return 1;
    }
    double secs = seconds_since(&t0);
    if (rc != 0 || secs >= 2)
        fprintf(stderr, "hprof: heap dump %s: written by the JVM's own dumper, %llu bytes in %.1f s (the JVM's "
                "dump %.1f s; %s, %s)\n", rc != 0 ? "FAILED" : "done",
                (unsigned long long)(t->binary->bytes - before), secs, jvm_secs, how, t->out_path);
    return rc != 0 ? -1 : 0;
}
