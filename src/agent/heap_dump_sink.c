/* heap_dump_sink: what heap_dump_write's walk meets, given its ids and
 * written in the file's format (HPROF binary or text): classes, instances,
 * arrays, roots; then the objects it deferred, of classes loaded after the
 * class list was read (heap_dump.h). */
#include "heap_dump_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/tables.h"
#include "../heap/heap_tags.h"
#include "../heap/site_table.h"
#include "jvmti_support.h"
#include "orchestrator.h"

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

dclass *heap_dump_class_of_serial(const walk *w, serial_t s)
{
    if (s < CLASS_SERIAL_BASE || s - CLASS_SERIAL_BASE >= w->nclasses)
        return NULL;
    dclass *c = &w->classes[s - CLASS_SERIAL_BASE];
    return c->loaded ? c : NULL;
}

uint64_t heap_dump_class_object_id(const walk *w, serial_t serial)
{
    const dclass *c = w ? heap_dump_class_of_serial(w, serial) : NULL;
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
    dclass *c = heap_tag_is_class(tag) ? heap_dump_class_of_serial(ctx, (serial_t)tag) : NULL;
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
    dclass *c = heap_tag_is_class(class_tag) ? heap_dump_class_of_serial(w, (serial_t)class_tag) : NULL;
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

void heap_dump_write_class(walk *w, serial_t serial, dclass *c)
{
    if (c->dumped)
        return;
    c->dumped = 1;
    if (w->bin) {
        hb_field *fields = calloc(c->f.n_own_pos ? c->f.n_own_pos : 1, sizeof *fields);
        if (fields == NULL) { w->failed = ENOMEM; return; }
        for (uint32_t i = 0; i < c->f.n_own_pos; i++)
            fields[i] = (hb_field){ STRING_ID(string_intern(agent_tables(), c->f.pos[i].name)), c->f.pos[i].type };
        hb_class hc = {
            .id = heap_dump_class_object_id(w, serial),
            .trace_serial = heap_dump_load_trace_written(serial, w->bin->tables_written.traces),
            .super_id = c->f.super ? heap_dump_class_object_id(w, c->f.super) : 0,
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
    fprintf(f, "CLS %llx (name=%s, trace=%u)\n", (unsigned long long)heap_dump_class_object_id(w, serial), c->name,
            tw->omit_trace_records ? EMPTY_TRACE_SERIAL : heap_dump_load_trace_written(serial, tw->traces_written));
    if (c->f.super) text_field(f, "super", heap_dump_class_object_id(w, c->f.super));
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
    heap_dump_write_class(ctx, (serial_t)tag, (dclass *)f);
}

/* A Class object that is not a class the dump describes is written once. */
static void mirror_written(walk *w, jlong id)
{
    for (uint32_t i = 0; i < w->nmirrors; i++)
        if (w->mirrors[i].id == id)
            w->mirrors[i].written = 1;
}

void heap_dump_sink_instance(void *ctx, fl_class *f, jlong class_tag, jlong id, const uint64_t *values)
{
    walk *w = ctx;
    dclass *c = (dclass *)f;
    uint32_t trace = trace_of_tag(id);
    uint64_t class_id = heap_dump_class_object_id(w, (serial_t)class_tag);
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
    uint64_t class_id = heap_dump_class_object_id(w, (serial_t)class_tag);
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
        dclass *c = heap_dump_class_of_serial(w, (serial_t)id);
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

/* The sink heap_walk writes the objects through (heap_walk.h), over w. */
heap_walk_sink heap_dump_sink(walk *w)
{
    const heap_walk_sink sink = {
        .ctx = w, .is_class_tag = sink_is_class_tag, .class_of = sink_class_of, .id_of = sink_id_of,
        .met = sink_met, .failed = sink_failed, .root = sink_root, .class_reference = sink_class_reference,
        .static_value = sink_static_value, .class_done = sink_class_done, .instance = heap_dump_sink_instance,
        .array_begin = sink_array_begin, .array_element = sink_array_element,
        .primitive_array = sink_primitive_array, .follow = JVMTI_VISIT_OBJECTS,
        .defer = sink_defer, .defer_class = w->class_class,
    };
    return sink;
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
 * dump's environment, before heap_dump_read_classes may tag them anew. Primitive
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
    heap_dump_write_class(w, serial, c);
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
    heap_dump_sink_instance(w, &c->f, serial, d->id, values);
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
    dclass *c = heap_dump_class_of_serial(w, self ? self : of);
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
void heap_dump_load_new_classes(walk *w)
{
    static uint32_t seconds;         /* one dump at a time (agent.lock), serials unique in the file */
    const new_class *known = w->resolved;
    size_t n = w->nresolved;
    uint32_t written = w->bin->tables_written.classes;
    heap_dump_write_new_records(w->bin, NULL, w);
    for (size_t i = 0; i < n; i++) {
        const dclass *c = heap_dump_class_of_serial(w, known[i].serial);
        if (c == NULL || c->object_id != (uint64_t)known[i].id || known[i].serial >= CLASS_SERIAL_BASE + written ||
            seconds >= UINT32_C(0x0FFFFFFF))
            continue;
        serial_t name = heap_dump_internal_name(known[i].serial);
        heap_dump_write_new_strings(w->bin);
        if (name)
            hb_load_class(w->bin, SECOND_LOAD_SERIALS + ++seconds, c->object_id,
                          heap_dump_load_trace_written(known[i].serial, w->bin->tables_written.traces), STRING_ID(name));
    }
}

/* The objects the walk met of classes loaded after the class list was
 * read: the list is read again (they are loaded now), their classes get
 * their CLASS DUMPs, then the objects (their LOAD CLASS records are
 * heap_dump_load_new_classes', before the staged dump). A
 * value that fits no field of its class, or an object whose class cannot
 * be read now (unloaded since), is counted in w->left_out. */
void heap_dump_write_deferred(JNIEnv *jni, walk *w)
{
    heap_walk_deferrals *l = &w->deferred;
    w->left_out += l->dropped;
    if (l->n == 0)
        return;
    heap_walk_sort_deferred(l);
    for (uint32_t i = 0; i < w->nclasses; i++) {
        dclass *c = &w->classes[i];
        if (c->loaded && c->f.unprepared && !c->dumped) {      /* read again, prepared by now */
            /* The instance size the walk took at its objects' first sight
             * (sink_met) is not read again: the text dump's sz= of them
             * (CDS-archived objects of a class not yet linked, JDK 17's
             * jdk.internal.math.FDBigInteger) would be 0. */
            int64_t size = c->obj_size;
            field_layout_free(&c->f);
            free(c->statics);
            memset(c, 0, sizeof *c);
            c->obj_size = size;
        }
    }
    size_t n = 0;
    new_class *known = ids_to_resolve(w, &n);
    if (known == NULL || heap_dump_read_classes(jni, w, 0) != 0) {
        free(known);
        w->left_out += l->n;
        return;
    }
    resolve_class_ids(jni, w, known, n);
    /* Class objects met untagged keep the walk's ids: references to them
     * were written with those. Set before any record names them. */
    for (size_t i = 0; i < n; i++) {
        dclass *c = heap_dump_class_of_serial(w, known[i].serial);
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
