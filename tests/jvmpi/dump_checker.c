/*
 * dump_checker: is a level-2 HEAP_DUMP complete? What HPROF needs of one to
 * write a heap dump that every reader takes: each id the dump names leads
 * to a record of the dump, and each class a record names had its
 * CLASS_LOAD first.
 *
 * It learns the classes from CLASS_LOAD (field signatures, interfaces); at
 * JVM_SHUT_DOWN it asks for a HEAP_DUMP at level 2 and reads it twice: first
 * the ids of every record (and each CLASS_DUMP's superclass, as an instance
 * holds its class's fields, then its superclass's), then every reference:
 * roots, a class's super, loader, signers, protection domain, interfaces,
 * constant-pool entries and statics, an instance's reference fields, an
 * array's elements and element class. It writes to out=FILE:
 *
 *   dump RESULT records N references M dangling D unknown_class U bad B
 *   problem KIND ...  (up to 8: where a reference that leads nowhere, or a
 *                     class without CLASS_LOAD, was met, and what the layer
 *                     says the id is)
 *   held NAME            (for holder=CLASS,STATIC: the class whose Class
 *                         object that static of that class holds, by its
 *                         CLASS_LOAD; "none" if the id is no class the agent knows)
 *
 * Options: out=FILE[,holder=CLASS,static=NAME][,off] (CLASS in JVM form, a/b/C;
 * off: every event disabled before the dump, as HPROF does at the end: the
 * classes never linked then have no CLASS_LOAD, and their Class objects must
 * still be described, as objects of java/lang/Class)
 */
#include <jvmpi.h>

#include "agent_support.h"
#include "dump_reader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct klass {
    jobjectID id;
    char *name;
    jint interfaces, n_statics, n_instances;
    char *static_sig, *instance_sig;     /* first letter of each signature */
    char **static_names;
    jobjectID super;                     /* from its CLASS_DUMP */
} klass;

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char holder_name[256], holder_static[128];
static char requested_class[256];      /* what RequestEvent(CLASS_LOAD) told of a dangling id */
static int events_off;

/* Classes by id: open addressing, grown at half full. */
static klass **classes;
static size_t class_cap, n_classes;

static size_t slot_of(const void *id, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static klass *class_of(jobjectID id) {
    if (class_cap == 0 || id == NULL) return NULL;
    for (size_t i = slot_of(id, class_cap);; i = (i + 1) & (class_cap - 1))
        if (classes[i] == NULL || classes[i]->id == id) return classes[i];
}

static int put_class(klass *k) {
    if (2 * (n_classes + 1) > class_cap) {
        size_t cap = class_cap ? class_cap * 2 : 4096;
        klass **grown = calloc(cap, sizeof *grown);
        if (grown == NULL) return -1;
        for (size_t i = 0; i < class_cap; i++) {
            if (classes[i] == NULL) continue;
            size_t j = slot_of(classes[i]->id, cap);
            while (grown[j] != NULL) j = (j + 1) & (cap - 1);
            grown[j] = classes[i];
        }
        free(classes);
        classes = grown;
        class_cap = cap;
    }
    size_t i = slot_of(k->id, class_cap);
    while (classes[i] != NULL) i = (i + 1) & (class_cap - 1);
    classes[i] = k;
    n_classes++;
    return 0;
}

/* The ids of the dump's records: a set, open addressing. */
typedef struct id_set { const void **v; size_t cap, n; int failed; } id_set;

static int id_in(const id_set *s, const void *id) {
    if (s->cap == 0) return 0;
    for (size_t i = slot_of(id, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (s->v[i] == NULL) return 0;
        if (s->v[i] == id) return 1;
    }
}

static void id_add(id_set *s, const void *id) {
    if (id == NULL || id_in(s, id)) return;
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1u << 16;
        const void **grown = calloc(cap, sizeof *grown);
        if (grown == NULL) { s->failed = 1; return; }
        for (size_t i = 0; i < s->cap; i++) {
            if (s->v[i] == NULL) continue;
            size_t j = slot_of(s->v[i], cap);
            while (grown[j] != NULL) j = (j + 1) & (cap - 1);
            grown[j] = s->v[i];
        }
        free(s->v);
        s->v = grown;
        s->cap = cap;
    }
    size_t i = slot_of(id, s->cap);
    while (s->v[i] != NULL) i = (i + 1) & (s->cap - 1);
    s->v[i] = id;
    s->n++;
}

static char *copy(const char *s) {
    char *c = malloc(strlen(s) + 1);
    if (c) strcpy(c, s);
    return c;
}

static void class_load(JVMPI_Event *e) {
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        snprintf(requested_class, sizeof requested_class, "requested CLASS_LOAD %s", e->u.class_load.class_name);
        return;
    }
    jvmpi->RawMonitorEnter(lock);
    if (class_of(e->u.class_load.class_id) == NULL) {
        klass *k = calloc(1, sizeof *k);
        jint ns = e->u.class_load.num_static_fields, ni = e->u.class_load.num_instance_fields;
        if (k != NULL) {
            k->id = e->u.class_load.class_id;
            k->name = copy(e->u.class_load.class_name ? e->u.class_load.class_name : "?");
            k->interfaces = e->u.class_load.num_interfaces;
            k->n_statics = ns;
            k->n_instances = ni;
            k->static_sig = malloc((size_t)ns + 1);
            k->instance_sig = malloc((size_t)ni + 1);
            k->static_names = calloc((size_t)ns + 1, sizeof *k->static_names);
        }
        if (k == NULL || k->name == NULL || k->static_sig == NULL || k->instance_sig == NULL ||
            k->static_names == NULL || put_class(k) != 0) {
            fprintf(stderr, "dump_checker: out of memory at CLASS_LOAD\n");
            exit(1);
        }
        for (jint i = 0; i < ns; i++) {
            k->static_sig[i] = e->u.class_load.statics[i].field_signature[0];
            k->static_names[i] = copy(e->u.class_load.statics[i].field_name);
        }
        for (jint i = 0; i < ni; i++) k->instance_sig[i] = e->u.class_load.instances[i].field_signature[0];
    }
    jvmpi->RawMonitorExit(lock);
}

/* ------------------------------------------------------------ reading */

#define EXAMPLES 8

typedef struct check {
    id_set records;
    uint64_t references, dangling, unknown_class, n_records;
    int bad;
    char examples[EXAMPLES][160];
    const void *example_ids[EXAMPLES];   /* 0 for a class without CLASS_LOAD */
    int n_examples;
    jobjectID held;                      /* the value of holder=CLASS,static=NAME */
} check;

static void reference(check *c, const void *id, const char *kind, const klass *from) {
    if (id == NULL) return;
    c->references++;
    if (id_in(&c->records, id)) return;
    c->dangling++;
    if (c->n_examples < EXAMPLES / 2) {             /* the rest for classes without CLASS_LOAD */
        c->example_ids[c->n_examples] = id;
        snprintf(c->examples[c->n_examples++], sizeof c->examples[0], "%s of %s", kind, from ? from->name : "-");
    }
}

static void class_named_by(check *c, jobjectID id, const char *kind) {
    if (id != NULL && class_of(id) == NULL) {
        c->unknown_class++;
        if (c->n_examples < EXAMPLES) {
            c->example_ids[c->n_examples] = id;
            snprintf(c->examples[c->n_examples++], sizeof c->examples[0], "%s without CLASS_LOAD", kind);
        }
    }
}

/* An instance's values: its class's fields, then its superclass's ... */
static void instance_values(check *c, reader *v, const klass *k, int pass) {
    for (int depth = 0; k != NULL && depth < 64 && !v->bad; depth++) {
        for (jint i = 0; i < k->n_instances; i++) {
            int size = primitive_size(k->instance_sig[i]);
            if (size != 0) { big_endian(v, size); continue; }
            void *id = pointer(v);
            if (pass == 1) reference(c, id, "field", k);
        }
        k = class_of(k->super);
    }
}

static void read_dump(check *c, const unsigned char *begin, const unsigned char *end, int pass) {
    reader r = { begin, end, 0 };
    while (r.p < r.end && !r.bad) {
        unsigned type = u1(&r);
        void *id;
        switch ((jint)type) {
        case JVMPI_GC_ROOT_UNKNOWN: case JVMPI_GC_ROOT_MONITOR_USED: case JVMPI_GC_ROOT_STICKY_CLASS:
            id = pointer(&r);
            if (pass == 1) reference(c, id, "root", NULL);
            break;
        case JVMPI_GC_ROOT_JNI_GLOBAL: case JVMPI_GC_ROOT_NATIVE_STACK: case JVMPI_GC_ROOT_THREAD_BLOCK:
            id = pointer(&r);
            pointer(&r);
            if (pass == 1) reference(c, id, "root", NULL);
            break;
        case JVMPI_GC_ROOT_JNI_LOCAL: case JVMPI_GC_ROOT_JAVA_FRAME:
            id = pointer(&r);
            pointer(&r);
            u4(&r);
            if (pass == 1) reference(c, id, "root", NULL);
            break;
        case JVMPI_GC_CLASS_DUMP: {
            id = pointer(&r);
            klass *k = class_of(id);
            void *refs[6];
            for (int i = 0; i < 6; i++) refs[i] = pointer(&r);  /* super, loader, signers, domain, 2 reserved */
            u4(&r);
            if (k == NULL) {                /* its layout unknown: the rest cannot be read */
                class_named_by(c, id, "CLASS_DUMP");
                c->bad++;
                r.p = r.end;
                break;
            }
            if (pass == 0) { id_add(&c->records, id); c->n_records++; k->super = refs[0]; }
            else {
                reference(c, refs[0], "super", k);
                reference(c, refs[1], "loader", k);
                reference(c, refs[2], "signers", k);
                reference(c, refs[3], "protection domain", k);
            }
            for (jint i = 0; i < k->interfaces; i++) {
                void *iface = pointer(&r);
                if (pass == 1) reference(c, iface, "interface", k);
            }
            unsigned n_cp = u2(&r);
            for (unsigned i = 0; i < n_cp && !r.bad; i++) {
                u2(&r);
                int size = ty_size(u1(&r));
                if (size != 0) { big_endian(&r, size); continue; }
                void *entry = pointer(&r);
                if (pass == 1) reference(c, entry, "constant pool entry", k);
            }
            for (jint i = 0; i < k->n_statics && !r.bad; i++) {
                int size = primitive_size(k->static_sig[i]);
                if (size != 0) { big_endian(&r, size); continue; }
                void *value = pointer(&r);
                if (pass == 1) reference(c, value, "static", k);
                if (pass == 1 && strcmp(k->name, holder_name) == 0 && strcmp(k->static_names[i], holder_static) == 0)
                    c->held = value;
            }
            break;
        }
        case JVMPI_GC_INSTANCE_DUMP: {
            id = pointer(&r);
            jobjectID class_id = pointer(&r);
            uint32_t n = u4(&r);
            if (!has(&r, n)) break;
            reader v = { r.p, r.p + n, 0 };
            r.p += n;
            if (pass == 0) { id_add(&c->records, id); c->n_records++; continue; }
            class_named_by(c, class_id, "instance's class");
            reference(c, class_id, "instance's class", NULL);
            const klass *k = class_of(class_id);
            if (k != NULL) instance_values(c, &v, k, pass);
            if (k != NULL && (v.bad || v.p != v.end)) c->bad++;
            break;
        }
        case JVMPI_GC_OBJ_ARRAY_DUMP: {
            id = pointer(&r);
            uint32_t n = u4(&r);
            jobjectID element_class = pointer(&r);
            if (pass == 0) { id_add(&c->records, id); c->n_records++; }
            else {
                class_named_by(c, element_class, "array's element class");
                reference(c, element_class, "array's element class", NULL);
            }
            for (uint32_t i = 0; i < n && !r.bad; i++) {
                void *e = pointer(&r);
                if (pass == 1) reference(c, e, "array element", class_of(element_class));
            }
            break;
        }
        case JVMPI_GC_PRIM_ARRAY_DUMP: {
            id = pointer(&r);
            uint32_t n = u4(&r);
            int size = ty_size(u1(&r));
            if (size == 0 || !has(&r, (size_t)n * (size_t)size)) { c->bad++; r.p = r.end; break; }
            r.p += (size_t)n * (size_t)size;
            if (pass == 0) { id_add(&c->records, id); c->n_records++; }
            break;
        }
        default:
            c->bad++;
            r.p = r.end;
            break;
        }
    }
    c->bad += r.bad;
}

static check result;
static int dumped;
static char what[160];                  /* what RequestEvent(OBJECT_ALLOC) told of a dangling id */

static void object_alloc(JVMPI_Event *e) {
    const klass *k = class_of(e->u.obj_alloc.class_id);
    snprintf(what, sizeof what, "is_array %d class %s", (int)e->u.obj_alloc.is_array,
             k ? k->name : e->u.obj_alloc.class_id ? "(no CLASS_LOAD)" : "-");
}

static void heap_dump(JVMPI_Event *e) {
    if (e->u.heap_dump.dump_level != JVMPI_DUMP_LEVEL_2) return;
    const unsigned char *begin = (const unsigned char *)e->u.heap_dump.begin;
    const unsigned char *end = (const unsigned char *)e->u.heap_dump.end;
    jvmpi->RawMonitorEnter(lock);
    read_dump(&result, begin, end, 0);
    read_dump(&result, begin, end, 1);
    dumped = 1;
    jvmpi->RawMonitorExit(lock);
}

static void shut_down(void) {
    if (events_off)
        for (jint i = 1; i <= JVMPI_MAX_EVENT_TYPE_VAL; i++) jvmpi->DisableEvent(i, NULL);
    jvmpi->DisableGC();
    jint rc = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL);
    jvmpi->EnableGC();
    jvmpi->RawMonitorEnter(lock);
    check *c = &result;
    fprintf(out, "dump %s records %llu references %llu dangling %llu unknown_class %llu bad %d\n",
            rc == JVMPI_SUCCESS && dumped && !c->records.failed ? "SUCCESS" : "FAILED",
            (unsigned long long)c->n_records, (unsigned long long)c->references,
            (unsigned long long)c->dangling, (unsigned long long)c->unknown_class, c->bad);
    for (int i = 0; i < c->n_examples; i++) {
        /* What the id is: the layer describes any object by its id. */
        what[0] = '\0';
        requested_class[0] = '\0';
        if (c->example_ids[i] != NULL) {
            jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, (void *)c->example_ids[i]);
            if (jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, (void *)c->example_ids[i]) != JVMPI_SUCCESS) snprintf(requested_class, sizeof requested_class, "CLASS_LOAD refused");
        }
        if (requested_class[0]) fprintf(out, "  (%s)", requested_class);
        fprintf(out, "problem %s: %s\n", c->examples[i], what[0] ? what : "?");
    }
    if (holder_name[0]) {
        const klass *k = class_of(c->held);
        fprintf(out, "held %s\n", k != NULL ? k->name : c->held == NULL ? "null" : "none");
    }
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:
    case JVMPI_EVENT_CLASS_LOAD | JVMPI_REQUESTED_EVENT: class_load(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    case JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT: heap_dump(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC | JVMPI_REQUESTED_EVENT: object_alloc(e); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    if ((out = agent_open_out(options, "dump_checker: options out=FILE[,holder=CLASS,static=NAME][,off]")) == NULL)
        return JNI_ERR;
    agent_option(options, "holder=", holder_name, sizeof holder_name);
    agent_option(options, "static=", holder_static, sizeof holder_static);
    events_off = options != NULL && strstr(options, ",off") != NULL;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_dump_checker");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
