/*
 * heap_reader: HEAP_DUMP at the three levels and OBJECT_DUMP of a class,
 * read by the specification's dump formats alone (section 4: u1 record
 * types, u2/u4 big-endian, ids and JNIEnvs as native pointers; a class's
 * interfaces, statics and instance fields as its CLASS_LOAD told them).
 *
 * It learns the classes from CLASS_LOAD and the threads from THREAD_START.
 * At JVM_SHUT_DOWN (JvmpiCalls heap: what Holder's statics hold is live, and
 * the thread "holder" sleeps in hold() with a Marker in a local) it asks for
 * a heap dump at level 2 (arg NULL), level 1 and level 0, then OBJECT_DUMP
 * of Holder's class object, and writes to out=FILE:
 *
 *   level2 RESULT nodes N counted C marker M chain CHAIN array LEN/ELEMS/ELEMENT_CLASS
 *          squares SQUARES statics STATICS frame_root FRAME sticky_object S bad B
 *   level1 (the same)
 *   level0 RESULT nodes N counted C marker M array KIND squares KIND bad B
 *   class_dump RESULT STATICS
 *
 * CHAIN: from Holder.head along next, each Node as value:weight (level 1:
 * value and weight are not in the dump: "-"); SQUARES: the int[]'s length
 * and, at level 2, its elements; STATICS: Holder's statics in CLASS_LOAD's
 * order, references named by what they are (head, counted, squares);
 * FRAME: the thread and method of the JAVA_FRAME root holding the Marker
 * (its frame number indexes that thread's trace in the event); bad: records
 * the reader could not make sense of (unknown type, unknown class, a length
 * that does not fit).
 * Options: out=FILE
 */
#include <jvmpi.h>

#include "agent_support.h"
#include "dump_reader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CLASSES 8192
#define MAX_FIELDS 64
#define MAX_OBJECTS 64

typedef struct klass {
    jobjectID id;
    char name[128];
    jint interfaces;
    jint n_statics, n_instances;
    char *static_sig;                    /* first letter of each signature */
    char *instance_sig;
    char static_name[MAX_FIELDS][32];    /* the first few names */
} klass;

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static klass classes[MAX_CLASSES];
static int n_classes;
static JNIEnv *holder_env;
static jmethodID hold_method;

static klass *class_of(jobjectID id) {
    for (int i = 0; i < n_classes; i++)
        if (classes[i].id == id) return &classes[i];
    return NULL;
}

static klass *class_named(const char *name) {
    for (int i = 0; i < n_classes; i++)
        if (strcmp(classes[i].name, name) == 0) return &classes[i];
    return NULL;
}

/* Holder's static of this name: its value as a dump read it (an id for a reference). */
static uint64_t holder_static(const uint64_t *statics, const char *name) {
    klass *k = class_named("JvmpiCalls$Holder");
    for (jint i = 0; k && i < k->n_statics && i < MAX_FIELDS; i++)
        if (strcmp(k->static_name[i], name) == 0) return statics[i];
    return 0;
}

static void class_load(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (n_classes < MAX_CLASSES && class_of(e->u.class_load.class_id) == NULL) {
        klass *k = &classes[n_classes++];
        k->id = e->u.class_load.class_id;
        snprintf(k->name, sizeof k->name, "%s", e->u.class_load.class_name);
        k->interfaces = e->u.class_load.num_interfaces;
        k->n_statics = e->u.class_load.num_static_fields;
        k->n_instances = e->u.class_load.num_instance_fields;
        k->static_sig = malloc((size_t)k->n_statics + 1);
        k->instance_sig = malloc((size_t)k->n_instances + 1);
        if (k->static_sig == NULL || k->instance_sig == NULL) { n_classes--; jvmpi->RawMonitorExit(lock); return; }
        for (jint i = 0; i < k->n_statics; i++) {
            k->static_sig[i] = e->u.class_load.statics[i].field_signature[0];
            if (i < MAX_FIELDS)
                snprintf(k->static_name[i], sizeof k->static_name[i], "%s", e->u.class_load.statics[i].field_name);
        }
        for (jint i = 0; i < k->n_instances; i++) k->instance_sig[i] = e->u.class_load.instances[i].field_signature[0];
        if (strcmp(k->name, "JvmpiCalls") == 0)
            for (jint i = 0; i < e->u.class_load.num_methods; i++)
                if (strcmp(e->u.class_load.methods[i].method_name, "hold") == 0)
                    hold_method = e->u.class_load.methods[i].method_id;
    }
    jvmpi->RawMonitorExit(lock);
}

static void thread_start(JVMPI_Event *e) {
    if (e->u.thread_start.thread_name != NULL && strcmp(e->u.thread_start.thread_name, "holder") == 0)
        holder_env = e->u.thread_start.thread_env_id;
}

/* ------------------------------------------------------------ reading */

typedef struct node { jobjectID id, next; long value, weight; } node;

typedef struct heap {
    int level, bad, said;
    node nodes[MAX_OBJECTS];
    int n_nodes, n_counted, n_markers;
    jobjectID counted[MAX_OBJECTS], marker;
    jobjectID array_id, array_class;
    uint32_t array_len, array_counted;
    jobjectID squares_id;
    uint32_t squares_len;
    long squares[16];
    int squares_values;
    uint64_t statics[MAX_FIELDS];        /* Holder's, as read (references as their ids) */
    int holder_dumped;
    char frame_root[128];
    int sticky_object;
    unsigned array_kind, squares_kind;   /* level 0 */
} heap;

static heap dumps[3];
static JVMPI_CallTrace *traces;           /* of the dump being read */
static jint num_traces;

static int is_counted(const heap *h, jobjectID id) {
    for (int i = 0; i < h->n_counted && i < MAX_OBJECTS; i++)
        if (h->counted[i] == id) return 1;
    return 0;
}

/* Holder's statics (CLASS_LOAD order; level 1: references only). */
static void read_statics(reader *r, heap *h, const klass *k, int level) {
    for (jint i = 0; i < k->n_statics && i < MAX_FIELDS; i++) {
        int size = primitive_size(k->static_sig[i]);
        if (size == 0) h->statics[i] = (uint64_t)(uintptr_t)pointer(r);
        else if (level == 2) h->statics[i] = big_endian(r, size);
    }
}

static void class_dump(reader *r, heap *h, int level) {
    jobjectID id = pointer(r);
    for (int i = 0; i < 6; i++) pointer(r);       /* super, loader, signers, domain, 2 reserved */
    u4(r);
    klass *k = class_of(id);
    if (k == NULL) { h->bad++; r->p = r->end; return; }
    for (jint i = 0; i < k->interfaces; i++) pointer(r);
    unsigned n_cp = u2(r);
    for (unsigned i = 0; i < n_cp && r->p < r->end; i++) {
        u2(r);
        int size = ty_size(u1(r));
        if (size == 0) pointer(r);
        else big_endian(r, size);
    }
    if (strcmp(k->name, "JvmpiCalls$Holder") == 0) {
        h->holder_dumped++;
        read_statics(r, h, k, level);
        return;
    }
    for (jint i = 0; i < k->n_statics; i++) {
        int size = primitive_size(k->static_sig[i]);
        if (size == 0) pointer(r);
        else if (level == 2) big_endian(r, size);
    }
}

static void instance_dump(reader *r, heap *h) {
    jobjectID id = pointer(r), class_id = pointer(r);
    uint32_t n = u4(r);
    if (!has(r, n)) return;
    const unsigned char *values = r->p;
    r->p += n;
    klass *k = class_of(class_id);
    if (k == NULL) { h->bad++; return; }
    if (strcmp(k->name, "JvmpiCalls$Counted") == 0 && h->n_counted < MAX_OBJECTS) h->counted[h->n_counted++] = id;
    if (strcmp(k->name, "JvmpiCalls$Marker") == 0) { h->marker = id; h->n_markers++; }
    if (strcmp(k->name, "JvmpiCalls$Node") != 0 || h->n_nodes >= MAX_OBJECTS) return;
    /* The class's own fields come first, in CLASS_LOAD's order (Node's super is Object). */
    reader v = { values, values + n, 0 };
    node *x = &h->nodes[h->n_nodes++];
    x->id = id;
    x->value = x->weight = -1;
    for (jint i = 0; i < k->n_instances; i++) {
        int size = primitive_size(k->instance_sig[i]);
        if (size == 0) x->next = pointer(&v);
        else if (h->level == 2 && size == 4) x->value = (long)(int32_t)big_endian(&v, 4);
        else if (h->level == 2) x->weight = (long)big_endian(&v, size);
    }
    if (v.p != v.end || v.bad) h->bad++;
}

static void obj_array_dump(reader *r, heap *h) {
    jobjectID id = pointer(r);
    uint32_t n = u4(r);
    jobjectID element_class = pointer(r);
    int is_counted_array = class_of(element_class) == class_named("JvmpiCalls$Counted") && n == 37;
    if (is_counted_array) { h->array_id = id; h->array_len = n; h->array_class = element_class; }
    for (uint32_t i = 0; i < n && r->p < r->end; i++) {
        jobjectID e = pointer(r);
        if (is_counted_array && e != NULL) h->array_counted++;
        (void)e;
    }
}

static void prim_array_dump(reader *r, heap *h) {
    jobjectID id = pointer(r);
    uint32_t n = u4(r);
    unsigned ty = u1(r);
    int size = ty_size(ty);
    if (size == 0) { h->bad++; r->p = r->end; return; }
    uint64_t squares = holder_static(h->statics, "squares");
    int is_squares = squares != 0 && id == (jobjectID)(uintptr_t)squares;
    if (is_squares) { h->squares_id = id; h->squares_len = n; }
    if (h->level != 2) return;
    for (uint32_t i = 0; i < n && r->p < r->end; i++) {
        long v = (long)big_endian(r, size);
        if (is_squares && i < 16) { h->squares[i] = v; h->squares_values = 1; }
    }
}

/* JVMPI_GC_ROOT_JAVA_FRAME: which method, by the trace of the thread. */
static void java_frame_root(reader *r, heap *h) {
    jobjectID id = pointer(r);
    JNIEnv *env = pointer(r);
    uint32_t frame = u4(r);
    if (h->marker != NULL && id != h->marker) return;
    for (jint t = 0; t < num_traces; t++) {
        if (traces[t].env_id != env) continue;
        const char *method = frame < (uint32_t)traces[t].num_frames
                           ? (traces[t].frames[frame].method_id == hold_method ? "hold" : "other") : "none";
        snprintf(h->frame_root, sizeof h->frame_root, "%s:%s", env == holder_env ? "holder" : "other", method);
        return;
    }
}

/* The Marker is known by its class only once its INSTANCE_DUMP is read:
 * roots are read in a second pass. */
static void read_dump(heap *h, const char *begin, const char *end, int pass) {
    reader r = { (const unsigned char *)begin, (const unsigned char *)end, 0 };
    klass *object = class_named("java/lang/Object");
    const unsigned char *at = r.p, *prev_at = r.p;
    unsigned prev_type = 0, type = 0;
    while (r.p < r.end && !r.bad) {
        prev_at = at;
        prev_type = type;
        at = r.p;
        type = u1(&r);
        switch ((jint)type) {
        case JVMPI_GC_ROOT_UNKNOWN: case JVMPI_GC_ROOT_MONITOR_USED: pointer(&r); break;
        case JVMPI_GC_ROOT_STICKY_CLASS:
            if (pointer(&r) == (object ? object->id : NULL) && pass == 0) h->sticky_object++;
            break;
        case JVMPI_GC_ROOT_JNI_GLOBAL: case JVMPI_GC_ROOT_NATIVE_STACK: case JVMPI_GC_ROOT_THREAD_BLOCK:
            pointer(&r); pointer(&r); break;
        case JVMPI_GC_ROOT_JNI_LOCAL: pointer(&r); pointer(&r); u4(&r); break;
        case JVMPI_GC_ROOT_JAVA_FRAME:
            if (pass == 1) java_frame_root(&r, h);
            else { pointer(&r); pointer(&r); u4(&r); }
            break;
        case JVMPI_GC_CLASS_DUMP:
            if (pass == 0) class_dump(&r, h, h->level);
            else { heap skip; memset(&skip, 0, sizeof skip); class_dump(&r, &skip, h->level); }
            break;
        case JVMPI_GC_INSTANCE_DUMP:
            if (pass == 0) instance_dump(&r, h);
            else { heap skip; memset(&skip, 0, sizeof skip); instance_dump(&r, &skip); }
            break;
        case JVMPI_GC_OBJ_ARRAY_DUMP:
            if (pass == 0) obj_array_dump(&r, h);
            else { heap skip; memset(&skip, 0, sizeof skip); obj_array_dump(&r, &skip); }
            break;
        case JVMPI_GC_PRIM_ARRAY_DUMP: {
            heap skip;
            memset(&skip, 0, sizeof skip);
            skip.level = h->level;
            prim_array_dump(&r, pass == 1 ? h : &skip);
            break;
        }
        default: h->bad++; r.p = r.end; break;
        }
        if ((r.bad || h->bad) && pass == 0 && !h->said) {
            h->said = 1;
            fprintf(stderr, "heap_reader: level %d: cannot read record type 0x%02x at offset %ld of %ld (after "
                    "0x%02x at %ld)\n", h->level, type, (long)(at - (const unsigned char *)begin), (long)(end - begin),
                    prev_type, (long)(prev_at - (const unsigned char *)begin));
        }
    }
    h->bad += r.bad;
}

static void level0(heap *h, const heap *full, const char *begin, const char *end) {
    for (const char *p = begin; p + 1 + sizeof(jobjectID) <= end; p += 1 + sizeof(jobjectID)) {
        unsigned kind = (unsigned char)p[0];
        jobjectID id;
        memcpy(&id, p + 1, sizeof id);
        for (int i = 0; i < full->n_nodes; i++)
            if (full->nodes[i].id == id) { h->n_nodes++; if (kind != JVMPI_NORMAL_OBJECT) h->bad++; }
        if (is_counted(full, id)) { h->n_counted++; if (kind != JVMPI_NORMAL_OBJECT) h->bad++; }
        if (id == full->marker) h->n_markers++;
        if (id == full->array_id) h->array_kind = kind;
        if (id == full->squares_id) h->squares_kind = kind;
    }
    if ((end - begin) % (ptrdiff_t)(1 + sizeof(jobjectID)) != 0) h->bad++;
}

static void heap_dump(JVMPI_Event *e) {
    int level = e->u.heap_dump.dump_level;
    if (level < 0 || level > 2) return;
    heap *h = &dumps[level];
    memset(h, 0, sizeof *h);
    h->level = level;
    if (level == 0) { level0(h, &dumps[2], e->u.heap_dump.begin, e->u.heap_dump.end); return; }
    traces = e->u.heap_dump.traces;
    num_traces = e->u.heap_dump.num_traces;
    read_dump(h, e->u.heap_dump.begin, e->u.heap_dump.end, 0);   /* statics first: squares is named there */
    read_dump(h, e->u.heap_dump.begin, e->u.heap_dump.end, 1);
}

static char class_dump_result[512];

static void object_dump(JVMPI_Event *e) {
    reader r = { (const unsigned char *)e->u.object_dump.data,
                 (const unsigned char *)e->u.object_dump.data + e->u.object_dump.data_len, 0 };
    heap h;
    memset(&h, 0, sizeof h);
    if (u1(&r) != (unsigned)JVMPI_GC_CLASS_DUMP) { snprintf(class_dump_result, sizeof class_dump_result, "NOT_A_CLASS_DUMP"); return; }
    class_dump(&r, &h, 2);
    const heap *full = &dumps[2];
    klass *k = class_named("JvmpiCalls$Holder");
    char *p = class_dump_result;
    size_t left = sizeof class_dump_result;
    for (jint i = 0; k && i < k->n_statics && left > 64; i++) {
        int n = h.statics[i] == full->statics[i] ? snprintf(p, left, "%s%s", i ? "," : "", k->static_name[i])
                                                 : snprintf(p, left, "%s%s:DIFFERENT", i ? "," : "", k->static_name[i]);
        p += n;
        left -= (size_t)n;
    }
    if (r.p != r.end || r.bad || h.holder_dumped != 1) snprintf(p, left, " BAD");
}

/* ------------------------------------------------------------ report */

static void print_statics(const heap *h, const heap *full) {
    klass *k = class_named("JvmpiCalls$Holder");
    fprintf(out, " statics");
    if (k == NULL || !h->holder_dumped) { fprintf(out, " NONE"); return; }
    for (jint i = 0; i < k->n_statics; i++) {
        uint64_t v = h->statics[i];
        jobjectID id = (jobjectID)(uintptr_t)v;
        fprintf(out, "%s%s=", i ? "," : " ", k->static_name[i]);
        if (primitive_size(k->static_sig[i]) == 0)
            fprintf(out, "%s", id == NULL ? "null" : id == full->nodes[0].id ? "node"
                             : id == h->array_id ? "counted" : id == h->squares_id ? "squares" : "?");
        else if (h->level == 2)
            fprintf(out, "%llx", (unsigned long long)v);
        else
            fprintf(out, "-");
    }
}

static void report(const char *name, jint result, const heap *h) {
    fprintf(out, "%s %s nodes %d counted %d marker %d chain", name, result == JVMPI_SUCCESS ? "SUCCESS" : "FAILED",
            h->n_nodes, h->n_counted, h->n_markers);
    /* From Holder.head along next. */
    jobjectID at = (jobjectID)(uintptr_t)holder_static(h->statics, "head");
    for (int steps = 0; at != NULL && steps < 10; steps++) {
        const node *x = NULL;
        for (int i = 0; i < h->n_nodes; i++) if (h->nodes[i].id == at) x = &h->nodes[i];
        if (x == NULL) { fprintf(out, " ?"); break; }
        if (h->level == 2) fprintf(out, " %ld:%ld", x->value, x->weight);
        else fprintf(out, " -");
        at = x->next;
    }
    fprintf(out, " array %u/%u/%s", h->array_len, h->array_counted,
            h->array_class == (class_named("JvmpiCalls$Counted") ? class_named("JvmpiCalls$Counted")->id : NULL)
                ? "Counted" : "?");
    fprintf(out, " squares %u", h->squares_len);
    if (h->squares_values)
        for (uint32_t i = 0; i < h->squares_len && i < 16; i++) fprintf(out, "%s%ld", i ? "," : ":", h->squares[i]);
    print_statics(h, &dumps[2]);
    fprintf(out, " frame_root %s sticky_object %d bad %d\n", h->frame_root[0] ? h->frame_root : "NONE",
            h->sticky_object, h->bad);
}

static void shut_down(void) {
    JVMPI_HeapDumpArg one = { JVMPI_DUMP_LEVEL_1 }, zero = { JVMPI_DUMP_LEVEL_0 };
    jvmpi->DisableGC();
    jint r2 = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL);
    jint r1 = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &one);
    jint r0 = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &zero);
    klass *holder = class_named("JvmpiCalls$Holder");
    jint rc = holder ? jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, holder->id) : JVMPI_FAIL;
    jvmpi->EnableGC();
    report("level2", r2, &dumps[2]);
    report("level1", r1, &dumps[1]);
    const heap *h = &dumps[0];
    fprintf(out, "level0 %s nodes %d counted %d marker %d array %u squares %u bad %d\n",
            r0 == JVMPI_SUCCESS ? "SUCCESS" : "FAILED", h->n_nodes, h->n_counted, h->n_markers, h->array_kind,
            h->squares_kind, h->bad);
    fprintf(out, "class_dump %s %s\n", rc == JVMPI_SUCCESS ? "SUCCESS" : "FAILED", class_dump_result);
    fflush(out);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e); break;
    case JVMPI_EVENT_THREAD_START:  thread_start(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    case JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT:   heap_dump(e); break;
    case JVMPI_EVENT_OBJECT_DUMP | JVMPI_REQUESTED_EVENT: object_dump(e); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if ((out = agent_open_out(options, "heap_reader: options out=FILE")) == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_heap_reader");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
