/*
 * heap_dumps: HEAP_DUMP at the specification's three levels, and the
 * CLASS_DUMP record of OBJECT_DUMP for a Class object.
 *
 * Level 0: after a collection, one record per object in the heap (u1 kind,
 * id), from a JVMTI heap iteration that gives every object not yet seen its
 * id. Levels 1 and 2: after a collection, a JVMTI FollowReferences walk from
 * the GC roots in the layer's environment (so every object reached keeps
 * the id its tag already is, or gets one), streaming the records as the
 * walk reports each object: a root record per root, a CLASS_DUMP per class,
 * an INSTANCE_DUMP, OBJ_ARRAY_DUMP or PRIM_ARRAY_DUMP per object. HotSpot
 * reports all of one object's fields in a row, each with JVMTI's field
 * index, which the profiler's field layouts (src/agent/field_layout.h, the
 * same as heap=dump's) turn into the dump's order: the class's fields, then
 * its superclass's. Level 1 leaves out primitive values (instance fields,
 * statics, array elements), as the specification says.
 *
 * Values are read only inside the walk callbacks, where neither JNI nor
 * JVMTI may be called: what needs them (class layouts, class ids, threads'
 * ids and traces) is gathered before the walk. No other thread gives an
 * object an id during the walk (jvmpi_ids_hold). The threads run on while
 * the traces are taken and until the walk stops them: a root's frame number
 * indexes its thread's trace as taken just before.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/field_layout.h"
#include "../agent/heap_walk.h"
#include "../output/hprof_binary.h"
#include "dump_buffer.h"
#include "layer.h"

/* The dump's value types are the JVM's basic type codes, as HPROF's: the
 * layouts' HB_* codes are JVMPI's ty codes. */
static_assert(HB_OBJECT == JVMPI_CLASS && HB_BOOLEAN == JVMPI_BOOLEAN && HB_CHAR == JVMPI_CHAR &&
              HB_FLOAT == JVMPI_FLOAT && HB_DOUBLE == JVMPI_DOUBLE && HB_BYTE == JVMPI_BYTE &&
              HB_SHORT == JVMPI_SHORT && HB_INT == JVMPI_INT && HB_LONG == JVMPI_LONG, "type codes");
static_assert(HB_ID_SIZE == sizeof(jobjectID), "layouts count ids as native pointers");

#define TRACE_DEPTH 256          /* frames per thread in the event's traces */
#define MAX_THREADS 4096

/* A loaded class: its layout, its id, what its CLASS_DUMP needs. */
typedef struct hclass {
    fl_class  f;                 /* first: an hclass * is its fl_class * */
    jlong     id;                /* its Class object's tag */
    jint      kind;              /* JVMPI_NORMAL_OBJECT, or the array's element ty */
    jlong     element_class;     /* arrays of references: their element class's id */
    jlong     loader, signers, domain;
    uint64_t *statics;           /* values by static index, filled by the walk */
    uint16_t *cp_index;          /* constant pool entries the walk reports: index, id */
    jlong    *cp_id;
    uint32_t  n_cp, cp_cap;
    int       dumped;
    int       walked;            /* the walk reported its references and statics */
} hclass;

typedef struct thread_row { jlong id; JNIEnv *env; jint skipped; jint frames; } thread_row;

typedef struct walk {
    dump_buffer *b;
    int          level;          /* 1 or 2 */
    jlong        only;           /* OBJECT_DUMP: the one class to describe (0: the whole heap) */
    hclass      *classes;        /* sorted by id; key = index + 1 */
    uint32_t     n_classes;
    jlong        class_class;    /* java/lang/Class's id */
    thread_row  *threads;        /* sorted by id */
    int          n_threads;
    uint32_t     max_positions;  /* the most values an instance has */
    int          failed;
    /* Classes loaded but not linked (class data sharing maps objects of
     * some into the heap before): their fields are unknown to JVMTI until
     * they are linked. The ones with instances in the dump, linked after. */
    jlong        unlinked[1024];
    int          n_unlinked;
    /* What the walk met of objects whose class was loaded after the class
     * list was read (heap_walk.h): described after the walk. */
    heap_walk_deferrals deferred;
    uint64_t     left_out;       /* values the dump could not describe */
    /* Class objects the walk met that are no class of the list: the
     * primitive types', and the mirrors class data sharing maps into the
     * heap before their classes are loaded (an archived constant pool's
     * resolved references name them). JVMTI's walk describes neither;
     * deduplicated when full, bounded (MAX_MIRRORS). */
    jlong       *mirrors;
    uint32_t     n_mirrors, mirror_cap;
    /* The class list read again after the walk (put_all_deferred), which
     * described the classes loaded meanwhile: kept for handled_dump. */
    struct walk *later;
} walk;

#define MAX_MIRRORS (1u << 16)

/* The heap dump this thread's agent is handling: its classes read, their
 * statics, constant pools and loaders filled in by the walk. An OBJECT_DUMP
 * of one of them asked for meanwhile is answered from it (HPROF asks for
 * one per class it meets without a superclass) rather than by reading every
 * loaded class's layout again: 1,300 of them cost the JVMPI HPROF 1 s of a
 * 5 s run. Per thread: only the dumping thread may read the table, which is
 * freed when its handler returns. */
static _Thread_local const walk *handled_dump;

/* ------------------------------------------------------------ classes */

static int by_id(const void *a, const void *b) {
    jlong x = ((const hclass *)a)->id, y = ((const hclass *)b)->id;
    return x < y ? -1 : x > y;
}

static hclass *class_with_id(const walk *w, jlong id) {
    hclass key;
    key.id = id;
    return id ? bsearch(&key, w->classes, w->n_classes, sizeof key, by_id) : NULL;
}

static fl_class *layout_get(void *ctx, uint32_t key) {
    walk *w = ctx;
    return key >= 1 && key <= w->n_classes ? &w->classes[key - 1].f : NULL;
}

static uint32_t layout_key_of(void *ctx, JNIEnv *jni, jclass k) {
    (void)jni;
    hclass *c = class_with_id(ctx, (jlong)(intptr_t)jvmpi_id_of(k));
    return c ? (uint32_t)(c - ((walk *)ctx)->classes) + 1 : 0;
}

static jlong class_id_of_key(const walk *w, uint32_t key) {
    return key >= 1 && key <= w->n_classes ? w->classes[key - 1].id : 0;
}

/* Component class of an array class, by Class.getComponentType. */
static jlong component_id(JNIEnv *jni, jclass array_class) {
    static jmethodID component;
    if (component == NULL) {
        jclass class_class = (*jni)->FindClass(jni, "java/lang/Class");
        if (class_class == NULL) { (*jni)->ExceptionClear(jni); return 0; }
        component = (*jni)->GetMethodID(jni, class_class, "getComponentType", "()Ljava/lang/Class;");
        (*jni)->DeleteLocalRef(jni, class_class);
        if (component == NULL) { (*jni)->ExceptionClear(jni); return 0; }
    }
    jobject element = (*jni)->CallObjectMethod(jni, array_class, component);
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); return 0; }
    jlong id = (jlong)(intptr_t)jvmpi_id_of(element);
    if (element) (*jni)->DeleteLocalRef(jni, element);
    return id;
}

/* Every loaded class, its id, kind and layout. 0, or -1 after a message. */
static int read_classes(JNIEnv *jni, walk *w) {
    jint n = 0;
    jclass *loaded = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetLoadedClasses(jvmpi_jvmti, &n, &loaded), "GetLoadedClasses")) return -1;
    w->classes = calloc((size_t)n + 1, sizeof *w->classes);
    int rc = w->classes ? 0 : -1;
    for (jint i = 0; i < n && rc == 0; i++) {
        hclass *c = &w->classes[w->n_classes];
        c->id = (jlong)(intptr_t)jvmpi_id_of(loaded[i]);
        char *sig = NULL;
        if (c->id != 0 && (*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, loaded[i], &sig, NULL) == JVMTI_ERROR_NONE) {
            c->kind = jvmpi_kind_of_signature(sig);
            if (strcmp(sig, "Ljava/lang/Class;") == 0) w->class_class = c->id;
            w->n_classes++;
        }
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    }
    if (rc == 0) qsort(w->classes, w->n_classes, sizeof *w->classes, by_id);
    /* The table is complete (layouts name classes by key): read each now. */
    for (jint i = 0; i < n && rc == 0; i++) {
        hclass *c = class_with_id(w, (jlong)(intptr_t)jvmpi_id_of(loaded[i]));
        if (c == NULL) continue;
        fl_classes all = { layout_get, layout_key_of, w };
        if (field_layout_read(jni, jvmpi_jvmti, &all, loaded[i], &c->f) != 0) rc = -1;
        if (c->kind == JVMPI_CLASS) c->element_class = component_id(jni, loaded[i]);
        jobject loader = NULL;
        if ((*jvmpi_jvmti)->GetClassLoader(jvmpi_jvmti, loaded[i], &loader) == JVMTI_ERROR_NONE && loader) {
            c->loader = (jlong)(intptr_t)jvmpi_id_of(loader);
            (*jni)->DeleteLocalRef(jni, loader);
        }
        c->statics = calloc(c->f.n_statics + 1, sizeof *c->statics);
        if (c->statics == NULL) rc = -1;
    }
    for (jint i = 0; i < n; i++) (*jni)->DeleteLocalRef(jni, loaded[i]);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)loaded);
    uint32_t stamp = 0, most = 1;
    fl_classes all = { layout_get, layout_key_of, w };
    for (uint32_t i = 0; i < w->n_classes && rc == 0; i++) {
        if (field_layout_complete(&all, &w->classes[i].f, &stamp) != 0) rc = -1;
        if (w->classes[i].f.npos > most) most = w->classes[i].f.npos;
    }
    w->max_positions = most;
    if (rc != 0) {
        fprintf(stderr, "jvmpi: HEAP_DUMP: out of memory or a JVMTI failure reading the %d loaded classes; no dump\n",
                (int)n);
        return -1;
    }
    return 0;
}


/* ------------------------------------------------------------ records */

/* A value of a field or an element: an id, or a primitive big-endian. */
static void put_value(dump_buffer *b, uint8_t type, uint64_t bits) {
    if (type == HB_OBJECT) put_pointer(b, (const void *)(intptr_t)bits);
    else put_big_endian(b, bits, (int)hb_type_size(type));
}

/* Level 1 keeps references only. */
static int kept(const walk *w, uint8_t type) { return w->level == 2 || type == HB_OBJECT; }

/* Its CLASS_DUMP into b, at w's level; w's table names its super and interfaces. */
static void write_class(const walk *w, dump_buffer *b, const hclass *c) {
    put_u1(b, JVMPI_GC_CLASS_DUMP);
    put_pointer(b, (void *)(intptr_t)c->id);
    put_pointer(b, (void *)(intptr_t)class_id_of_key(w, c->f.super));
    put_pointer(b, (void *)(intptr_t)c->loader);
    put_pointer(b, (void *)(intptr_t)c->signers);
    put_pointer(b, (void *)(intptr_t)c->domain);
    put_pointer(b, NULL);
    put_pointer(b, NULL);
    put_u4(b, c->f.value_len);           /* bytes of an instance's field values, at level 2 */
    for (uint32_t i = 0; i < c->f.n_ifaces; i++) put_pointer(b, (void *)(intptr_t)class_id_of_key(w, c->f.ifaces[i]));
    put_u2(b, c->n_cp);
    for (uint32_t i = 0; i < c->n_cp; i++) {
        put_u2(b, c->cp_index[i]);
        put_u1(b, JVMPI_CLASS);
        put_pointer(b, (void *)(intptr_t)c->cp_id[i]);
    }
    for (uint32_t i = 0; i < c->f.n_statics; i++)
        if (kept(w, c->f.statics[i].type)) put_value(b, c->f.statics[i].type, c->statics[i]);
}

static void put_class(walk *w, hclass *c) {
    /* A class not linked yet has no CLASS_LOAD (its fields are unknown):
     * the dump does not describe it either (none of its objects are in the
     * heap: those of the classes met are linked before the dump). */
    if (c->dumped || c->f.unprepared) return;
    c->dumped = 1;
    write_class(w, w->b, c);
}

static void put_instance(walk *w, hclass *c, jlong id, const uint64_t *values) {
    uint32_t len = 0;
    for (uint32_t i = 0; i < c->f.npos; i++)
        if (kept(w, c->f.pos[i].type)) len += (uint32_t)hb_type_size(c->f.pos[i].type);
    put_u1(w->b, JVMPI_GC_INSTANCE_DUMP);
    put_pointer(w->b, (void *)(intptr_t)id);
    put_pointer(w->b, (void *)(intptr_t)c->id);
    put_u4(w->b, len);
    for (uint32_t i = 0; i < c->f.npos; i++)
        if (kept(w, c->f.pos[i].type)) put_value(w->b, c->f.pos[i].type, values[i]);
}

/* ------------------------------------------------------------ the sink */

/* The walk (src/agent/heap_walk.h, heap=dump's too) assembles the objects;
 * these give them their ids and write their records. An OBJECT_DUMP of a
 * class (w->only) writes that class's record and nothing else. */

static int sink_is_class_tag(void *ctx, jlong tag) { return class_with_id(ctx, tag) != NULL; }

static fl_class *sink_class_of(void *ctx, jlong tag) {
    hclass *c = class_with_id(ctx, tag);
    return c ? &c->f : NULL;
}

/* Ids are tags that outlive the walk: any object may be met the first time. */
static jlong sink_id_of(void *ctx, jlong *tag_ptr, int *first) {
    (void)ctx;
    *first = 1;
    return jvmpi_walk_id(tag_ptr);
}

static int sink_failed(void *ctx) {
    walk *w = ctx;
    return w->failed || w->b->failed;
}

static void sink_class_reference(void *ctx, fl_class *f, jvmtiHeapReferenceKind kind, jint index, jlong id) {
    walk *w = ctx;
    hclass *c = (hclass *)f;
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_CLASS_LOADER:      c->loader = id; return;
    case JVMTI_HEAP_REFERENCE_SIGNERS:           c->signers = id; return;
    case JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN: c->domain = id; return;
    default: break;
    }
    if (index < 0 || index > 0xFFFF || c->n_cp == 0xFFFF) return;     /* a constant-pool entry */
    if (c->n_cp == c->cp_cap) {
        uint32_t cap = c->cp_cap ? c->cp_cap * 2 : 8;
        uint16_t *indexes = realloc(c->cp_index, cap * sizeof *indexes);
        if (indexes) c->cp_index = indexes;
        jlong *ids = realloc(c->cp_id, cap * sizeof *ids);
        if (ids) c->cp_id = ids;
        if (indexes == NULL || ids == NULL) { w->failed = 1; return; }
        c->cp_cap = cap;
    }
    c->cp_index[c->n_cp] = (uint16_t)index;
    c->cp_id[c->n_cp++] = id;
}

static void sink_static_value(void *ctx, fl_class *f, uint32_t pos, uint64_t bits) {
    (void)ctx;
    ((hclass *)f)->statics[pos] = bits;
}

static void sink_class_done(void *ctx, fl_class *f, jlong tag) {
    walk *w = ctx;
    ((hclass *)f)->walked = 1;
    if (w->only == 0 || w->only == tag) put_class(w, (hclass *)f);
}

/* A class the dump names that is not linked (no CLASS_LOAD yet): linked
 * after the walk, which then runs again. */
static void note_unlinked(walk *w, const hclass *c) {
    if (c == NULL || !c->f.unprepared) return;
    int known = 0;
    for (int i = 0; i < w->n_unlinked && !known; i++) known = w->unlinked[i] == c->id;
    if (!known && w->n_unlinked < (int)(sizeof w->unlinked / sizeof w->unlinked[0]))
        w->unlinked[w->n_unlinked++] = c->id;
}

static void sink_instance(void *ctx, fl_class *f, jlong class_tag, jlong id, const uint64_t *values) {
    (void)class_tag;
    walk *w = ctx;
    hclass *c = (hclass *)f;
    note_unlinked(w, c);
    if (w->only == 0) put_instance(w, c, id, values);
}

static void sink_array_begin(void *ctx, fl_class *f, jlong class_tag, jlong id, uint32_t length, jlong size) {
    (void)class_tag; (void)size;
    walk *w = ctx;
    if (w->only != 0) return;
    /* An array of a class loaded but never linked (new Bar[3]) names it as
     * its element class: that class is linked too, for its CLASS_LOAD. */
    jlong element = ((hclass *)f)->element_class;
    if (element != 0) note_unlinked(w, class_with_id(w, element));
    put_u1(w->b, JVMPI_GC_OBJ_ARRAY_DUMP);
    put_pointer(w->b, (void *)(intptr_t)id);
    put_u4(w->b, length);
    put_pointer(w->b, (void *)(intptr_t)((hclass *)f)->element_class);
}

static void sink_array_element(void *ctx, uint32_t index, jlong id) {
    (void)index;
    walk *w = ctx;
    if (w->only == 0) put_pointer(w->b, (void *)(intptr_t)id);
}

static void sink_primitive_array(void *ctx, jlong class_tag, jlong id, jlong size, jint n, uint8_t type,
                                 const void *elements) {
    (void)class_tag; (void)size;
    walk *w = ctx;
    if (w->only) return;
    put_u1(w->b, JVMPI_GC_PRIM_ARRAY_DUMP);
    put_pointer(w->b, (void *)(intptr_t)id);
    put_u4(w->b, (uint32_t)n);
    put_u1(w->b, type);
    if (w->level == 2) put_elements(w->b, elements, (size_t)n, (int)hb_type_size(type));
}

static int by_value(const void *a, const void *b) {
    jlong x = *(const jlong *)a, y = *(const jlong *)b;
    return x < y ? -1 : x > y;
}

/* Sorts the mirrors met and drops repeats: the count of distinct ones. */
static uint32_t unique_mirrors(walk *w) {
    if (w->n_mirrors == 0) return 0;
    qsort(w->mirrors, w->n_mirrors, sizeof *w->mirrors, by_value);
    uint32_t n = 1;
    for (uint32_t i = 1; i < w->n_mirrors; i++)
        if (w->mirrors[i] != w->mirrors[n - 1]) w->mirrors[n++] = w->mirrors[i];
    return w->n_mirrors = n;
}

static void note_unlinked(walk *w, const hclass *c);

static void sink_met(void *ctx, jlong id, jlong class_tag, jlong size, jint length) {
    (void)size; (void)length;
    walk *w = ctx;
    /* An object of a class not linked (class data sharing maps some into
     * the heap: JVMTI reports none of their fields, so nothing else here
     * would tell): its class is linked after the walk, which runs again. */
    if (class_tag != 0 && class_tag != w->class_class) note_unlinked(w, class_with_id(w, class_tag));
    if (class_tag == 0 || class_tag != w->class_class) return;
    const hclass *c = class_with_id(w, id);
    if (c != NULL && !c->f.unprepared) return;          /* described: a CLASS_DUMP */
    if (w->n_mirrors == w->mirror_cap) {
        if (w->mirror_cap == 0 || unique_mirrors(w) * 2 > w->mirror_cap) {   /* mostly distinct: grow */
            uint32_t cap = w->mirror_cap ? w->mirror_cap * 2 : 1024;
            jlong *grown = cap <= MAX_MIRRORS ? realloc(w->mirrors, cap * sizeof *grown) : NULL;
            if (grown == NULL) { w->left_out++; return; }
            w->mirrors = grown;
            w->mirror_cap = cap;
        }
    }
    w->mirrors[w->n_mirrors++] = id;
}

static void sink_defer(void *ctx, const heap_walk_deferred *d) {
    walk *w = ctx;
    if (heap_walk_keep_deferred(&w->deferred, d) != 0) w->left_out++;
}

/* ------------------------------------------------------------ roots */

static int thread_by_id(const void *a, const void *b) {
    jlong x = ((const thread_row *)a)->id, y = ((const thread_row *)b)->id;
    return x < y ? -1 : x > y;
}

static const thread_row *thread_with_id(const walk *w, jlong id) {
    thread_row key = { id, NULL, 0, 0 };
    return id ? bsearch(&key, w->threads, (size_t)w->n_threads, sizeof key, thread_by_id) : NULL;
}

/* The frame number of a JVMTI depth in the thread's trace; -1 if not in it. */
static uint32_t frame_number(const thread_row *t, jint depth) {
    jint frame = t ? depth - t->skipped : -1;
    return frame >= 0 && frame < t->frames ? (uint32_t)frame : UINT32_MAX;
}

static void sink_root(void *ctx, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong id) {
    walk *w = ctx;
    if (w->only) return;
    dump_buffer *b = w->b;
    const void *object = (const void *)(intptr_t)id;
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_JNI_GLOBAL:            /* the reference itself: JVMTI does not say */
        put_u1(b, JVMPI_GC_ROOT_JNI_GLOBAL); put_pointer(b, object); put_pointer(b, NULL);
        break;
    case JVMTI_HEAP_REFERENCE_SYSTEM_CLASS: {
        /* Only a class the dump describes: one loaded but not linked (class
         * data sharing loads hundreds so) has no CLASS_LOAD, and its root
         * would name an id the agent cannot resolve. */
        const hclass *c = class_with_id(w, id);
        if (c == NULL || c->f.unprepared) break;
        put_u1(b, JVMPI_GC_ROOT_STICKY_CLASS); put_pointer(b, object);
        break;
    }
    case JVMTI_HEAP_REFERENCE_MONITOR:
        put_u1(b, JVMPI_GC_ROOT_MONITOR_USED); put_pointer(b, object);
        break;
    case JVMTI_HEAP_REFERENCE_STACK_LOCAL:
    case JVMTI_HEAP_REFERENCE_JNI_LOCAL: {
        int java = kind == JVMTI_HEAP_REFERENCE_STACK_LOCAL;
        const thread_row *t = thread_with_id(w, java ? info->stack_local.thread_tag : info->jni_local.thread_tag);
        put_u1(b, java ? JVMPI_GC_ROOT_JAVA_FRAME : JVMPI_GC_ROOT_JNI_LOCAL);
        put_pointer(b, object);
        put_pointer(b, t ? t->env : NULL);
        put_u4(b, frame_number(t, java ? info->stack_local.depth : info->jni_local.depth));
        break;
    }
    case JVMTI_HEAP_REFERENCE_THREAD: {
        const thread_row *t = thread_with_id(w, id);
        put_u1(b, JVMPI_GC_ROOT_THREAD_BLOCK); put_pointer(b, object); put_pointer(b, t ? t->env : NULL);
        break;
    }
    default:
        put_u1(b, JVMPI_GC_ROOT_UNKNOWN); put_pointer(b, object);
        break;
    }
}

/* ------------------------------------------------------------ the walk */

/* FollowReferences from the roots (initial NULL: levels 1 and 2) or from
 * one class (OBJECT_DUMP). Its error; *mismatches: values that fit no field. */
static jvmtiError walk_objects(walk *w, jobject initial, uint64_t *mismatches) {
    const heap_walk_sink sink = {
        .ctx = w, .is_class_tag = sink_is_class_tag, .class_of = sink_class_of, .id_of = sink_id_of,
        .failed = sink_failed, .root = sink_root, .class_reference = sink_class_reference,
        .static_value = sink_static_value, .class_done = sink_class_done, .instance = sink_instance,
        .array_begin = sink_array_begin, .array_element = sink_array_element,
        .primitive_array = sink_primitive_array, .follow = w->only ? 0 : JVMTI_VISIT_OBJECTS,
        .defer = w->only ? NULL : sink_defer, .defer_class = w->class_class,
        .met = w->only ? NULL : sink_met,
    };
    heap_walk objects;
    if (heap_walk_init(&objects, &sink, w->max_positions) != 0) {
        w->failed = 1;
        return JVMTI_ERROR_NONE;
    }
    jvmtiError err = heap_walk_run(&objects, jvmpi_jvmti, initial);
    if (objects.failed || objects.stopped) w->failed = 1;
    *mismatches = objects.mismatches;
    heap_walk_free(&objects);
    return err;
}

/* ------------------------------------------------------------ objects of new classes */

/* The class with this id, read with its layout when the class list was
 * read (not loaded then, or not linked then: NULL). */
static const hclass *described(walk *w, jlong id) {
    const hclass *c = class_with_id(w, id);
    return c != NULL && !c->f.unprepared ? c : NULL;
}

static void put_deferred_array(walk *w, const hclass *c, const heap_walk_deferred *d, size_t n) {
    const heap_walk_deferred *header = NULL;
    for (size_t i = 0; i < n && header == NULL; i++)
        if (d[i].kind == HEAP_WALK_DEFER_ARRAY) header = &d[i];
    if (header == NULL || header->index < 0) { w->left_out += n; return; }
    uint32_t length = (uint32_t)header->index, next = 0;
    put_u1(w->b, JVMPI_GC_OBJ_ARRAY_DUMP);
    put_pointer(w->b, (void *)(intptr_t)d->id);
    put_u4(w->b, length);
    put_pointer(w->b, (void *)(intptr_t)c->element_class);
    for (size_t i = 0; i < n; i++) {
        if (d[i].kind != HEAP_WALK_DEFER_ELEMENT) continue;
        uint32_t index = (uint32_t)d[i].index;
        if (index >= length || index < next) { w->left_out++; continue; }
        for (; next < index; next++) put_pointer(w->b, NULL);
        put_pointer(w->b, (void *)(intptr_t)d[i].bits);
        next = index + 1;
    }
    for (; next < length; next++) put_pointer(w->b, NULL);
}

/* One object's deferred values, now that its class can be read: classes
 * from table (the list read after the walk), or from w if it had them. */
static void put_deferred(walk *w, walk *table, const heap_walk_deferred *d, size_t n) {
    hclass *self = described(w, d->id) ? NULL : class_with_id(table, d->id);
    if (self != NULL) {                                  /* a class loaded after the list was read */
        for (size_t i = 0; i < n; i++) {
            const fl_slot *slot = d[i].kind == HEAP_WALK_DEFER_STATIC
                                      ? field_layout_slot(&self->f, d[i].index, d[i].type, 1) : NULL;
            if (slot != NULL && (uint32_t)slot->pos < self->f.n_statics) self->statics[slot->pos] = d[i].bits;
            else if (d[i].kind == HEAP_WALK_DEFER_STATIC) w->left_out++;
        }
        self->walked = 1;
        put_class(table, self);
        return;
    }
    jlong class_tag = heap_walk_deferred_class(d, n);
    walk *in = described(w, class_tag) ? w : table;
    hclass *c = class_with_id(in, class_tag);
    if (c == NULL || c->f.unprepared) { w->left_out += n; return; }
    if (c->f.is_array) { put_deferred_array(w, c, d, n); return; }
    uint64_t *values = calloc(c->f.npos + 1, sizeof *values);
    if (values == NULL) { w->failed = 1; return; }
    for (size_t i = 0; i < n; i++) {
        if (d[i].kind != HEAP_WALK_DEFER_FIELD) continue;
        const fl_slot *slot = field_layout_slot(&c->f, d[i].index, d[i].type, 0);
        if (slot != NULL && (uint32_t)slot->pos < c->f.npos) values[slot->pos] = d[i].bits;
        else w->left_out++;
    }
    put_instance(w, c, d->id, values);
    free(values);
}

static int read_classes(JNIEnv *jni, walk *w);
static void free_walk(walk *w);

/* The Class objects the walk named that are no class the dump describes
 * (w->mirrors; now: the class list read again after the walk, whose classes
 * put_all_deferred described): the mirrors class data sharing maps into the
 * heap before their classes are loaded (array classes too), and a class
 * whose linking failed. Each is an INSTANCE_DUMP of java/lang/Class, as a
 * primitive type's (put_primitive_classes), so that no id of the dump leads
 * nowhere (HotSpot's own dumper leaves such mirrors out, and the references
 * to them dangle). One look-up of them all by their ids. */
static void put_mirrors(JNIEnv *jni, walk *w, walk *now) {
    if (w->n_mirrors == 0 || (*jni)->PushLocalFrame(jni, 16) != 0) return;
    jint found = 0;
    jobject *objects = NULL;
    if (!jvmpi_failed((*jvmpi_jvmti)->GetObjectsWithTags(jvmpi_jvmti, (jint)w->n_mirrors, w->mirrors, &found,
                                                         &objects, NULL),
                      "GetObjectsWithTags (Class objects of classes not loaded)")) {
        for (jint i = 0; i < found; i++) {
            jint status = 0;
            jlong tag = 0;
            (*jvmpi_jvmti)->GetClassStatus(jvmpi_jvmti, (jclass)objects[i], &status);
            const hclass *c = (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, objects[i], &tag) == JVMTI_ERROR_NONE
                                  ? class_with_id(now, tag) : NULL;
            if (!(status & JVMTI_CLASS_STATUS_PRIMITIVE) && (c == NULL || !c->dumped))
                jvmpi_put_unfollowed_instance(jni, w->b, objects[i], w->level);
            (*jni)->DeleteLocalRef(jni, objects[i]);
        }
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)objects);
    }
    (*jni)->PopLocalFrame(jni, NULL);
}

/* The objects the walk met of classes loaded after the class list was
 * read: the list is read again (they are loaded now), and they are
 * described by it, with those classes. */
static void put_all_deferred(JNIEnv *jni, walk *w) {
    heap_walk_deferrals *l = &w->deferred;
    uint32_t mirrors = unique_mirrors(w);
    if (l->n == 0 && mirrors == 0) return;
    if (l->n > 0) heap_walk_sort_deferred(l);
    /* Statics are a class's; objects of classes described, Class objects without
     * statics (a primitive type's) may be described without reading again.
     * A Class object met that is no class of the list may be one loaded
     * since: read again (put_mirrors). */
    int known = mirrors == 0;
    for (size_t i = 0; i < l->n && known; i++)
        known = described(w, l->v[i].class_tag) != NULL && l->v[i].kind != HEAP_WALK_DEFER_STATIC;
    walk now;
    memset(&now, 0, sizeof now);
    now.b = w->b;
    now.level = w->level;
    if (!known && read_classes(jni, &now) != 0) {
        w->failed = 1;
        free_walk(&now);
        return;
    }
    for (size_t i = 0, j; i < l->n; i = j) {
        j = heap_walk_object_end(l, i);
        put_deferred(w, &now, &l->v[i], j - i);
    }
    /* The new classes no object of which was met (an array class), and
     * those linked since the list was read. */
    for (uint32_t i = 0; i < now.n_classes; i++)
        if (described(w, now.classes[i].id) == NULL) put_class(&now, &now.classes[i]);
    put_mirrors(jni, w, &now);
    w->later = malloc(sizeof *w->later);
    if (w->later != NULL) *w->later = now;
    else free_walk(&now);
}

/* ------------------------------------------------------------ level 0 */

static jint JNICALL level0_record(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user) {
    (void)size; (void)length;
    walk *w = user;
    const hclass *c = class_with_id(w, class_tag);
    put_u1(w->b, (unsigned)(c ? c->kind : JVMPI_NORMAL_OBJECT));
    put_pointer(w->b, (void *)(intptr_t)jvmpi_walk_id(tag_ptr));
    return w->b->failed ? JVMTI_VISIT_ABORT : 0;
}

/* ------------------------------------------------------------ linking */

static int is_linked(jclass klass) {
    jint status = 0;
    return (*jvmpi_jvmti)->GetClassStatus(jvmpi_jvmti, klass, &status) != JVMTI_ERROR_NONE ||
           (status & (JVMTI_CLASS_STATUS_PREPARED | JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE));
}

/* Links a class without initializing it: reflection's getDeclaredFields
 * links first (HotSpot), which runs none of the class's code. Its
 * ClassPrepare then posts its CLASS_LOAD, with its fields, as for any class. */
void jvmpi_link_class(JNIEnv *jni, jclass klass) {
    static jmethodID declared_fields;
    if (is_linked(klass)) return;
    if (declared_fields == NULL) {
        jclass class_class = (*jni)->FindClass(jni, "java/lang/Class");
        if (class_class != NULL)
            declared_fields = (*jni)->GetMethodID(jni, class_class, "getDeclaredFields", "()[Ljava/lang/reflect/Field;");
        if (class_class != NULL) (*jni)->DeleteLocalRef(jni, class_class);
        if (declared_fields == NULL) { (*jni)->ExceptionClear(jni); return; }
    }
    jobject fields = (*jni)->CallObjectMethod(jni, klass, declared_fields);
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);   /* it stays without fields */
    if (fields != NULL) (*jni)->DeleteLocalRef(jni, fields);
}

/* Every class loaded but not linked, linked: class data sharing loads
 * hundreds so (a thousand on JDK 17 and 25 before main), and
 * Class.forName(name, false, loader) does; their Class objects are named by
 * their loaders' class lists, by constant pools and by whatever holds them,
 * yet with no CLASS_LOAD (a JVMPI VM posted one at each load) those ids
 * would lead nowhere in the dump (1,109 of 59,974 references on JDK 17,
 * JvmpiUnlinked). Linking runs none of a class's code; verifying one may
 * load more, hence the rounds. A class whose linking fails stays as it is
 * (the program meets the same error at its own first use). */
static void link_all_loaded(JNIEnv *jni) {
    for (int round = 0; round < 4; round++) {
        jint n = 0;
        jclass *loaded = NULL;
        if (jvmpi_failed((*jvmpi_jvmti)->GetLoadedClasses(jvmpi_jvmti, &n, &loaded), "GetLoadedClasses")) return;
        int linked = 0;
        for (jint i = 0; i < n; i++) {
            if (!is_linked(loaded[i])) {
                jvmpi_link_class(jni, loaded[i]);
                linked++;
            }
            (*jni)->DeleteLocalRef(jni, loaded[i]);
        }
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)loaded);
        if (linked == 0) return;
    }
}

/* The classes of objects the dump holds (an array's element class), not
 * linked when the walk met them, linked (the walk runs again). */
static void link_classes(JNIEnv *jni, const jlong *ids, int n) {
    for (int i = 0; i < n; i++) {
        jobject klass = jvmpi_object_of(jni, (jobjectID)(intptr_t)ids[i]);
        if (klass != NULL) jvmpi_link_class(jni, (jclass)klass);
        if (klass != NULL) (*jni)->DeleteLocalRef(jni, klass);
    }
}

/* ------------------------------------------------------------ requests */

static void free_walk(walk *w) {
    for (uint32_t i = 0; w->classes && i < w->n_classes; i++) {
        hclass *c = &w->classes[i];
        field_layout_free(&c->f);
        free(c->statics);
        free(c->cp_index);
        free(c->cp_id);
    }
    free(w->classes);
    free(w->threads);
    free(w->mirrors);
    heap_walk_free_deferred(&w->deferred);
    if (w->later != NULL) free_walk(w->later);
    free(w->later);
}

/* The known threads' ids (their Thread objects'), JNIEnvs and traces. */
static JVMPI_CallTrace *read_threads(JNIEnv *jni, walk *w, jint **status) {
    JNIEnv **envs = calloc(MAX_THREADS, sizeof *envs);
    jthread *threads = calloc(MAX_THREADS, sizeof *threads);
    if (envs == NULL || threads == NULL || (*jni)->PushLocalFrame(jni, MAX_THREADS + 16) != 0) {
        free(envs);
        free(threads);
        return NULL;
    }
    int n = jvmpi_threads_snapshot(jni, envs, threads, MAX_THREADS);
    w->threads = calloc((size_t)n + 1, sizeof *w->threads);
    jint *skipped = NULL;
    JVMPI_CallTrace *traces = w->threads ? jvmpi_thread_traces(envs, n, TRACE_DEPTH, status, &skipped) : NULL;
    for (int i = 0; traces != NULL && i < n; i++)
        w->threads[i] = (thread_row){ (jlong)(intptr_t)jvmpi_id_of(threads[i]), envs[i], skipped[i],
                                      traces[i].num_frames };
    if (traces != NULL) {
        w->n_threads = n;
        qsort(w->threads, (size_t)n, sizeof *w->threads, thread_by_id);
    }
    free(skipped);
    (*jni)->PopLocalFrame(jni, NULL);
    free(envs);
    free(threads);
    return traces;
}

/* The Class objects of the primitive types (int.class ...): JVMTI's walk
 * names them (roots, values of fields such as Wrapper.primitiveType) but
 * neither describes them nor follows their references, and they are no
 * class the agent had a CLASS_LOAD of. Each the walk named (it has an id)
 * is an INSTANCE_DUMP of java/lang/Class, as the JVM's own heap dumper
 * writes them, its references null (the walk reached none through it). */
static void put_primitive_classes(JNIEnv *jni, walk *w) {
    static const char *const wrappers[] = { "java/lang/Boolean", "java/lang/Byte", "java/lang/Character",
                                            "java/lang/Short", "java/lang/Integer", "java/lang/Long",
                                            "java/lang/Float", "java/lang/Double", "java/lang/Void" };
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        jclass wrapper = (*jni)->FindClass(jni, wrappers[i]);
        jfieldID type = wrapper ? (*jni)->GetStaticFieldID(jni, wrapper, "TYPE", "Ljava/lang/Class;") : NULL;
        jobject primitive = type ? (*jni)->GetStaticObjectField(jni, wrapper, type) : NULL;
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        jlong tag = 0;
        if (primitive != NULL && (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, primitive, &tag) == JVMTI_ERROR_NONE && tag != 0)
            jvmpi_put_unfollowed_instance(jni, w->b, primitive, w->level);
        if (primitive) (*jni)->DeleteLocalRef(jni, primitive);
        if (wrapper) (*jni)->DeleteLocalRef(jni, wrapper);
    }
}

static jint heap_dump(JNIEnv *jni, jint level, int may_link) {
    /* Only for an agent that takes CLASS_LOAD now: one that turned it off
     * (HPROF does, before its dump at the end) would meet classes it never
     * heard of; for it they stay Class objects (put_mirrors). */
    if (may_link && jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) link_all_loaded(jni);
    jvmpi_failed((*jvmpi_jvmti)->ForceGarbageCollection(jvmpi_jvmti), "ForceGarbageCollection");
    /* Array classes made since the last sweep had no CLASS_LOAD (the JVM
     * prepares none): the agent meets their ids in the dump, so they come first. */
    /* So are the classes that were prepared since the agent turned
     * CLASS_LOAD off (HPROF does before its last dump): the ones linked for
     * this dump (an array's element class; reflection's own), or by the
     * program's threads; the dump names them, and the agent can read it
     * only with the classes it names (a JVMPI VM had posted each at its
     * load, while the agent listened). */
    if (jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD) || jvmpi_class_load_was_on()) jvmpi_announce_classes(jni, 1);
    dump_buffer b;
    memset(&b, 0, sizeof b);
    walk w;
    memset(&w, 0, sizeof w);
    w.b = &b;
    w.level = level;
    jint *status = NULL;
    JVMPI_CallTrace *traces = NULL;
    if (read_classes(jni, &w) != 0 || (level > 0 && (traces = read_threads(jni, &w, &status)) == NULL)) {
        free_walk(&w);
        return JVMPI_FAIL;
    }
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    jvmpi_ids_hold(jni);
    jvmpi_ids_name_all(jni);          /* so the agent's look-ups of the dump's ids are table hits */
    jvmtiError err;
    uint64_t mismatches = 0;
    if (level == JVMPI_DUMP_LEVEL_0) {
        callbacks.heap_iteration_callback = level0_record;
        err = (*jvmpi_jvmti)->IterateThroughHeap(jvmpi_jvmti, 0, NULL, &callbacks, &w);
    } else {
        err = walk_objects(&w, NULL, &mismatches);
        /* Classes the walk did not describe (array classes report no references). */
        for (uint32_t i = 0; i < w.n_classes; i++) put_class(&w, &w.classes[i]);
    }
    jvmpi_ids_release();
    if (err == JVMTI_ERROR_NONE && level != JVMPI_DUMP_LEVEL_0) put_all_deferred(jni, &w);
    if (err == JVMTI_ERROR_NONE && level != JVMPI_DUMP_LEVEL_0) put_primitive_classes(jni, &w);
    jint result = JVMPI_FAIL;
    if (err == JVMTI_ERROR_NONE && w.n_unlinked > 0 && may_link) {
        /* Once: link them, and walk again with their fields known. */
        link_classes(jni, w.unlinked, w.n_unlinked);
        jvmpi_free_traces(traces, status, NULL);
        free(b.bytes);
        free_walk(&w);
        return heap_dump(jni, level, 0);
    }
    if (jvmpi_failed(err, level == 0 ? "IterateThroughHeap" : "FollowReferences")) {
        /* said */
    } else if (b.failed || w.failed) {
        fprintf(stderr, "jvmpi: HEAP_DUMP: out of memory after %zu bytes of records; no dump\n", b.used);
    } else {
        if ((mismatches || w.left_out) && jvmpi_diagnostics())
            fprintf(stderr, "jvmpi: HEAP_DUMP: %llu values fitted no field of their class's layout, %llu "
                    "of objects of classes unknown after the walk; they were left out\n",
                    (unsigned long long)mismatches, (unsigned long long)w.left_out);
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT, jni);
        e.u.heap_dump.dump_level = level;
        e.u.heap_dump.begin = b.bytes;
        e.u.heap_dump.end = b.bytes + b.used;
        e.u.heap_dump.num_traces = level > 0 ? w.n_threads : 0;
        e.u.heap_dump.traces = level > 0 ? traces : NULL;
        const walk *outer = handled_dump;
        handled_dump = level != JVMPI_DUMP_LEVEL_0 ? &w : NULL;
        jvmpi_notify(&e);
        handled_dump = outer;
        result = JVMPI_SUCCESS;
    }
    jvmpi_free_traces(traces, status, NULL);
    free(b.bytes);
    free_walk(&w);
    return result;
}

jint jvmpi_request_heap_dump(JNIEnv *jni, const JVMPI_HeapDumpArg *arg) {
    jint level = arg != NULL ? arg->heap_dump_level : JVMPI_DUMP_LEVEL_2;
    if (level != JVMPI_DUMP_LEVEL_0 && level != JVMPI_DUMP_LEVEL_1 && level != JVMPI_DUMP_LEVEL_2)
        return JVMPI_FAIL;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    jvmpi_gc_hold();
    jint result = heap_dump(jni, level, 1);
    jvmpi_gc_release();
    jvmpi_in_layer = was;
    return result;
}

/* A class's CLASS_DUMP from the heap dump being handled on this thread,
 * if the walk described it (an array class has nothing to walk). */
static int class_dump_from_handled(jclass klass, dump_buffer *b) {
    const walk *dump = handled_dump;
    jlong id = (jlong)(intptr_t)jvmpi_id_of(klass);
    const hclass *c = dump ? class_with_id(dump, id) : NULL;
    if (c == NULL || c->f.unprepared || !(c->walked || c->f.is_array)) {
        /* One loaded after the list was read, whose objects the dump
         * describes: as its CLASS_DUMP there (constant pool, signers and
         * domain untold), if the walk gave its statics or it has none. */
        dump = dump && (c == NULL || c->f.unprepared) ? dump->later : NULL;
        c = dump ? class_with_id(dump, id) : NULL;
        if (c == NULL || c->f.unprepared || !(c->walked || c->f.is_array || c->f.n_statics == 0)) return 0;
    }
    walk level2 = *dump;
    level2.level = 2;
    write_class(&level2, b, c);
    return 1;
}

jint jvmpi_class_dump(JNIEnv *jni, jclass klass, struct dump_buffer *b) {
    if (class_dump_from_handled(klass, b)) return b->failed ? JVMPI_FAIL : JVMPI_SUCCESS;
    walk w;
    memset(&w, 0, sizeof w);
    w.b = b;
    w.level = 2;
    w.only = (jlong)(intptr_t)jvmpi_id_of(klass);
    jint result = JVMPI_FAIL;
    jvmpi_link_class(jni, klass);                         /* its statics are unknown until it is linked */
    if (w.only != 0 && read_classes(jni, &w) == 0) {
        hclass *c = class_with_id(&w, w.only);
        if (c == NULL) {
            /* A primitive type's class (int.class): no fields, no super. */
            hclass none;
            memset(&none, 0, sizeof none);
            none.id = w.only;
            put_class(&w, &none);
        } else {
            uint64_t mismatches = 0;
            jvmpi_ids_hold(jni);
            jvmtiError err = walk_objects(&w, klass, &mismatches);
            jvmpi_ids_release();
            put_class(&w, c);                       /* if the walk reported nothing of it */
            if (jvmpi_failed(err, "FollowReferences (OBJECT_DUMP of a class)")) b->failed = 1;
        }
        result = b->failed || w.failed ? JVMPI_FAIL : JVMPI_SUCCESS;
    }
    free_walk(&w);
    return result;
}
