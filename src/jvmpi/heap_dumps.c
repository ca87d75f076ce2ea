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
#include "../core/keytab.h"
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
    keytab       array_keys;     /* arrays of references met but not yet visited: id -> */
    uint32_t    *array_lengths;  /* their lengths, by keytab index */
    uint32_t     array_cap;
    /* the object being assembled */
    jlong        cur;
    int          cur_kind;       /* 0 none, 1 instance, 2 object array, 3 class */
    hclass      *cur_class;
    uint64_t    *vals;           /* instance values by position */
    uint32_t     arr_next, arr_len;
    uint64_t     mismatches;     /* values that fit no field, unknown classes */
    int          failed;
    /* Classes loaded but not linked (class data sharing maps objects of
     * some into the heap before): their fields are unknown to JVMTI until
     * they are linked. The ones with instances in the dump, linked after. */
    jlong        unlinked[64];
    int          n_unlinked;
} walk;

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
    w->vals = rc == 0 ? calloc(most, sizeof *w->vals) : NULL;
    if (rc != 0 || w->vals == NULL) {
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

static void put_class(walk *w, hclass *c) {
    /* A class not linked yet has no CLASS_LOAD (its fields are unknown):
     * the dump does not describe it either (none of its objects are in the
     * heap: those of the classes met are linked before the dump). */
    if (c->dumped || c->f.unprepared) return;
    c->dumped = 1;
    dump_buffer *b = w->b;
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

static void put_instance(walk *w, hclass *c) {
    uint32_t len = 0;
    for (uint32_t i = 0; i < c->f.npos; i++)
        if (kept(w, c->f.pos[i].type)) len += (uint32_t)hb_type_size(c->f.pos[i].type);
    put_u1(w->b, JVMPI_GC_INSTANCE_DUMP);
    put_pointer(w->b, (void *)(intptr_t)w->cur);
    put_pointer(w->b, (void *)(intptr_t)c->id);
    put_u4(w->b, len);
    for (uint32_t i = 0; i < c->f.npos; i++)
        if (kept(w, c->f.pos[i].type)) put_value(w->b, c->f.pos[i].type, w->vals[i]);
}

/* The object being assembled is complete: its record. */
static void finish_current(walk *w) {
    if (w->only == 0 && w->cur_kind == 1) put_instance(w, w->cur_class);
    else if (w->only == 0 && w->cur_kind == 2)
        for (; w->arr_next < w->arr_len; w->arr_next++) put_pointer(w->b, NULL);
    else if (w->cur_kind == 3 && (w->only == 0 || w->only == w->cur)) put_class(w, w->cur_class);
    w->cur_kind = 0;
    w->cur = 0;
}

static int array_length(walk *w, jlong id, uint32_t *length) {
    uint32_t i = keytab_find(&w->array_keys, &id, sizeof id);
    if (i == KEYTAB_FULL) return -1;
    *length = w->array_lengths[i];
    return 0;
}

static void note_array_length(walk *w, jlong id, uint32_t length) {
    uint32_t i = keytab_intern(&w->array_keys, &id, sizeof id, NULL);
    if (i == KEYTAB_FULL) { w->failed = 1; return; }
    if (i >= w->array_cap) {
        uint32_t cap = w->array_cap ? w->array_cap * 2 : 1024;
        uint32_t *bigger = realloc(w->array_lengths, (size_t)cap * sizeof *bigger);
        if (bigger == NULL) { w->failed = 1; return; }
        w->array_lengths = bigger;
        w->array_cap = cap;
    }
    w->array_lengths[i] = length;
}

/* Makes the object with this tag (of the class with class_tag) the current one. */
static int switch_to(walk *w, jlong tag, jlong class_tag) {
    if (tag == w->cur && w->cur_kind) return 0;
    finish_current(w);
    hclass *c = class_with_id(w, tag);
    if (c != NULL) {                                 /* a class: its statics follow */
        w->cur = tag;
        w->cur_kind = 3;
        w->cur_class = c;
        return 0;
    }
    c = class_with_id(w, class_tag);
    if (c == NULL) return -1;
    w->cur = tag;
    w->cur_class = c;
    if (c->kind != JVMPI_NORMAL_OBJECT && c->kind != JVMPI_CLASS) return 0;  /* primitive array: on_array */
    if (c->kind == JVMPI_CLASS) {                    /* object array: its elements follow */
        if (array_length(w, tag, &w->arr_len) != 0) return -1;
        w->cur_kind = 2;
        w->arr_next = 0;
        if (w->only == 0) {
            put_u1(w->b, JVMPI_GC_OBJ_ARRAY_DUMP);
            put_pointer(w->b, (void *)(intptr_t)tag);
            put_u4(w->b, w->arr_len);
            put_pointer(w->b, (void *)(intptr_t)c->element_class);
        }
        return 0;
    }
    w->cur_kind = 1;
    memset(w->vals, 0, (size_t)c->f.npos * sizeof *w->vals);
    if (c->f.unprepared) {
        int known = 0;
        for (int i = 0; i < w->n_unlinked && !known; i++) known = w->unlinked[i] == c->id;
        if (!known && w->n_unlinked < (int)(sizeof w->unlinked / sizeof w->unlinked[0]))
            w->unlinked[w->n_unlinked++] = c->id;
    }
    return 0;
}

static void array_element(walk *w, uint32_t index, jlong id) {
    if (index >= w->arr_len || index < w->arr_next) { w->mismatches++; return; }
    if (w->only == 0) {
        for (; w->arr_next < index; w->arr_next++) put_pointer(w->b, NULL);
        put_pointer(w->b, (void *)(intptr_t)id);
    }
    w->arr_next = index + 1;
}

static void field_value(walk *w, int is_static, jint index, uint8_t type, uint64_t bits) {
    hclass *c = w->cur_class;
    if (c->f.unprepared) return;                     /* no layout: no values, knowingly */
    const fl_slot *s = field_layout_slot(&c->f, index, type, is_static);
    if (s == NULL) { w->mismatches++; return; }
    if (is_static && w->cur_kind == 3) c->statics[s->pos] = bits;
    else if (!is_static && w->cur_kind == 1) w->vals[s->pos] = bits;
}

static void constant_pool_entry(walk *w, jint index, jlong id) {
    hclass *c = w->cur_class;
    if (w->cur_kind != 3 || index < 0 || index > 0xFFFF || c->n_cp == 0xFFFF) return;
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

static void put_root(walk *w, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong id) {
    dump_buffer *b = w->b;
    const void *object = (const void *)(intptr_t)id;
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_JNI_GLOBAL:            /* the reference itself: JVMTI does not say */
        put_u1(b, JVMPI_GC_ROOT_JNI_GLOBAL); put_pointer(b, object); put_pointer(b, NULL);
        break;
    case JVMTI_HEAP_REFERENCE_SYSTEM_CLASS:
        put_u1(b, JVMPI_GC_ROOT_STICKY_CLASS); put_pointer(b, object);
        break;
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

static jlong id_of_tag(jlong *tag_ptr) {
    if (*tag_ptr == 0) *tag_ptr = jvmpi_next_tag();
    return *tag_ptr;
}

static jint JNICALL on_reference(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info,
                                 jlong class_tag, jlong referrer_class_tag, jlong size, jlong *tag_ptr,
                                 jlong *referrer_tag_ptr, jint length, void *user_data) {
    (void)size;
    walk *w = user_data;
    if (w->failed || w->b->failed) return JVMTI_VISIT_ABORT;
    jlong id = id_of_tag(tag_ptr);
    /* An array of references: its length, for when the walk visits it. */
    if (length >= 0 && w->only == 0) {
        hclass *c = class_with_id(w, class_tag);
        if (c && c->kind == JVMPI_CLASS) note_array_length(w, id, (uint32_t)length);
    }
    if (referrer_tag_ptr == NULL) {
        if (w->only == 0) put_root(w, kind, info, id);
        return JVMTI_VISIT_OBJECTS;
    }
    if (switch_to(w, *referrer_tag_ptr, referrer_class_tag) != 0) {
        w->mismatches++;
        return w->only ? 0 : JVMTI_VISIT_OBJECTS;
    }
    switch (kind) {
    case JVMTI_HEAP_REFERENCE_FIELD:         field_value(w, 0, info->field.index, HB_OBJECT, (uint64_t)id); break;
    case JVMTI_HEAP_REFERENCE_STATIC_FIELD:  field_value(w, 1, info->field.index, HB_OBJECT, (uint64_t)id); break;
    case JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT: if (w->cur_kind == 2) array_element(w, (uint32_t)info->array.index, id); break;
    case JVMTI_HEAP_REFERENCE_CONSTANT_POOL: constant_pool_entry(w, info->constant_pool.index, id); break;
    case JVMTI_HEAP_REFERENCE_CLASS_LOADER:  if (w->cur_kind == 3) w->cur_class->loader = id; break;
    case JVMTI_HEAP_REFERENCE_SIGNERS:       if (w->cur_kind == 3) w->cur_class->signers = id; break;
    case JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN: if (w->cur_kind == 3) w->cur_class->domain = id; break;
    default: break;                      /* an object's class, a superclass, an interface */
    }
    /* OBJECT_DUMP of a class: its own references only, no further. */
    return w->only ? 0 : JVMTI_VISIT_OBJECTS;
}

static jint JNICALL on_primitive_field(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info,
                                       jlong object_class_tag, jlong *object_tag_ptr, jvalue value,
                                       jvmtiPrimitiveType value_type, void *user_data) {
    walk *w = user_data;
    if (w->failed || w->b->failed) return JVMTI_VISIT_ABORT;
    if (switch_to(w, id_of_tag(object_tag_ptr), object_class_tag) != 0) {
        w->mismatches++;
        return 0;
    }
    field_value(w, kind == JVMTI_HEAP_REFERENCE_STATIC_FIELD, info->field.index,
                hb_type_of_descriptor((char)value_type), field_layout_bits(value, value_type));
    return 0;
}

static jint JNICALL on_array_values(jlong class_tag, jlong size, jlong *tag_ptr, jint n,
                                    jvmtiPrimitiveType element_type, const void *elements, void *user_data) {
    (void)class_tag; (void)size;
    walk *w = user_data;
    if (w->failed || w->b->failed) return JVMTI_VISIT_ABORT;
    finish_current(w);
    if (w->only) return 0;
    uint8_t type = hb_type_of_descriptor((char)element_type);
    int width = (int)hb_type_size(type);
    put_u1(w->b, JVMPI_GC_PRIM_ARRAY_DUMP);
    put_pointer(w->b, (void *)(intptr_t)id_of_tag(tag_ptr));
    put_u4(w->b, (uint32_t)n);
    put_u1(w->b, type);
    if (w->level == 2) put_elements(w->b, elements, (size_t)n, width);
    return 0;
}

/* ------------------------------------------------------------ level 0 */

static jint JNICALL level0_record(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user) {
    (void)size; (void)length;
    walk *w = user;
    const hclass *c = class_with_id(w, class_tag);
    put_u1(w->b, (unsigned)(c ? c->kind : JVMPI_NORMAL_OBJECT));
    put_pointer(w->b, (void *)(intptr_t)id_of_tag(tag_ptr));
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
static void link_class(JNIEnv *jni, jclass klass) {
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

static void link_classes(JNIEnv *jni, const jlong *ids, int n) {
    for (int i = 0; i < n; i++) {
        jobject klass = jvmpi_object_of(jni, (jobjectID)(intptr_t)ids[i]);
        if (klass != NULL) link_class(jni, (jclass)klass);
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
    free(w->vals);
    free(w->array_lengths);
    keytab_free(&w->array_keys);
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

static jint heap_dump(JNIEnv *jni, jint level, int may_link) {
    jvmpi_failed((*jvmpi_jvmti)->ForceGarbageCollection(jvmpi_jvmti), "ForceGarbageCollection");
    /* Array classes made since the last sweep had no CLASS_LOAD (the JVM
     * prepares none): the agent meets their ids in the dump, so they come first. */
    if (jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) jvmpi_announce_loaded_classes(jni);
    dump_buffer b;
    memset(&b, 0, sizeof b);
    walk w;
    memset(&w, 0, sizeof w);
    w.b = &b;
    w.level = level;
    keytab_init(&w.array_keys, UINT32_MAX - 1);
    jint *status = NULL;
    JVMPI_CallTrace *traces = NULL;
    if (read_classes(jni, &w) != 0 || (level > 0 && (traces = read_threads(jni, &w, &status)) == NULL)) {
        free_walk(&w);
        return JVMPI_FAIL;
    }
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    jvmpi_ids_hold();
    jvmtiError err;
    if (level == JVMPI_DUMP_LEVEL_0) {
        callbacks.heap_iteration_callback = level0_record;
        err = (*jvmpi_jvmti)->IterateThroughHeap(jvmpi_jvmti, 0, NULL, &callbacks, &w);
    } else {
        callbacks.heap_reference_callback = on_reference;
        callbacks.primitive_field_callback = on_primitive_field;
        callbacks.array_primitive_value_callback = on_array_values;
        err = (*jvmpi_jvmti)->FollowReferences(jvmpi_jvmti, 0, NULL, NULL, &callbacks, &w);
        finish_current(&w);
        /* Classes the walk did not describe (array classes report no references). */
        for (uint32_t i = 0; i < w.n_classes; i++) put_class(&w, &w.classes[i]);
    }
    jvmpi_ids_release();
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
        if (w.mismatches)
            fprintf(stderr, "jvmpi: HEAP_DUMP: %llu values fitted no field of their class's layout and were "
                    "left out\n", (unsigned long long)w.mismatches);
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT, jni);
        e.u.heap_dump.dump_level = level;
        e.u.heap_dump.begin = b.bytes;
        e.u.heap_dump.end = b.bytes + b.used;
        e.u.heap_dump.num_traces = level > 0 ? w.n_threads : 0;
        e.u.heap_dump.traces = level > 0 ? traces : NULL;
        jvmpi_notify(&e);
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
    jint result = heap_dump(jni, level, 1);
    jvmpi_in_layer = was;
    return result;
}

jint jvmpi_class_dump(JNIEnv *jni, jclass klass, struct dump_buffer *b) {
    walk w;
    memset(&w, 0, sizeof w);
    w.b = b;
    w.level = 2;
    w.only = (jlong)(intptr_t)jvmpi_id_of(klass);
    keytab_init(&w.array_keys, UINT32_MAX - 1);
    jint result = JVMPI_FAIL;
    link_class(jni, klass);                         /* its statics are unknown until it is linked */
    if (w.only != 0 && read_classes(jni, &w) == 0) {
        hclass *c = class_with_id(&w, w.only);
        if (c == NULL) {
            /* A primitive type's class (int.class): no fields, no super. */
            hclass none;
            memset(&none, 0, sizeof none);
            none.id = w.only;
            put_class(&w, &none);
        } else {
            jvmtiHeapCallbacks callbacks;
            memset(&callbacks, 0, sizeof callbacks);
            callbacks.heap_reference_callback = on_reference;
            callbacks.primitive_field_callback = on_primitive_field;
            jvmpi_ids_hold();
            jvmtiError err = (*jvmpi_jvmti)->FollowReferences(jvmpi_jvmti, 0, NULL, klass, &callbacks, &w);
            jvmpi_ids_release();
            finish_current(&w);
            put_class(&w, c);                       /* if the walk reported nothing of it */
            if (jvmpi_failed(err, "FollowReferences (OBJECT_DUMP of a class)")) b->failed = 1;
        }
        result = b->failed || w.failed ? JVMPI_FAIL : JVMPI_SUCCESS;
    }
    free_walk(&w);
    return result;
}
