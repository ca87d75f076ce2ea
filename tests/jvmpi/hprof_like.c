/*
 * An agent that uses JVMPI as HPROF (the JVMPI-era reference agent) did,
 * written to the specification alone:
 *
 *   - it knows an object by the OBJECT_ALLOC it got, and asks for the ones
 *     it has not met (RequestEvent(OBJECT_ALLOC)): the class object of each
 *     CLASS_LOAD, and inside an OBJECT_ALLOC the object's class (so for a
 *     class object java/lang/Class's, and for that one itself);
 *   - it enables its events all or nothing (JVM_OnLoad fails at a refusal);
 *   - it holds its tables' lock from GC_START to GC_FINISH;
 *   - it resolves what the events name, and fails loudly (a message on
 *     stderr, exit code 3) on what it cannot.
 *
 * Options: out=FILE, and any of
 *   classes  every OBJECT_ALLOC's class has had its CLASS_LOAD before it
 *            (HPROF's SITES would say <Unknown>)
 *   arrays   every OBJECT_ALLOC of an array of references names an element
 *            class that has had its CLASS_LOAD before it (SITES: [L<Unknown>;)
 *   dump     at JVM_SHUT_DOWN, a HEAP_DUMP (level 2) whose every class id
 *            (CLASS_DUMP, its super, INSTANCE_DUMP's class, OBJ_ARRAY_DUMP's
 *            element class, STICKY_CLASS root) has had its CLASS_LOAD; with `off`, after
 *            disabling every event first, as HPROF does there
 *   traces   every method of every allocation's trace (4 frames) resolves
 *            to a CLASS_LOAD's method
 *   threads  every event's thread was announced by THREAD_START
 *   top=NAME writes "top NAME METHOD LINE COUNT" for the first frame of the
 *            traces of NAME's allocations
 *   fetch    (with dump) every object of the heap dump it does not know is
 *            asked for, as HPROF's hprof_fetch_object_info does for each id
 *            a dump names; the answer must be that object: its OBJECT_ALLOC
 *            has the id asked for and the class (an array's element class)
 *            and kind the dump gives it. Ends "fetched N refused M wrong W"
 *            (refused: freed since the dump, or never an id)
 *   dumps=N  (with dump) N heap dumps at JVM_SHUT_DOWN, not one
 *   count=NAME (with dump) for each dump, "instances NAME N WHOLE": NAME's
 *            INSTANCE_DUMPs, and how many of them have every field value
 *            (its values' length is its CLASS_LOAD's instance fields')
 *   described (with dump) every object a dump names as a root or a static
 *            value has a record (CLASS_DUMP, INSTANCE_DUMP or an array's) in
 *            that dump, as the ids a heap analysis follows must lead somewhere
 *            (array elements and constant-pool entries are not checked: some
 *            name classes loaded but never linked, which the dump does not
 *            describe, docs/jvmpi.md). Ends "named N undescribed U"
 *   ask      (with dump) a dump's class without CLASS_LOAD is asked for
 *            (RequestEvent(CLASS_LOAD)), as JVMPI agents such as StarJ and
 *            JCov did; unresolved only if that fails
 *   supers   (with dump) as HPROF (hprof_heapdump.c), the class of each
 *            INSTANCE_DUMP is asked for (RequestEvent(OBJECT_DUMP)) while the
 *            dump is read, once a class: the answer must be that class's
 *            CLASS_DUMP, with the superclass the heap dump's CLASS_DUMP gives.
 *            Ends "class_dumps N wrong W cpu S of D": the process's CPU
 *            seconds in those requests, of D in the whole RequestEvent(HEAP_DUMP)
 * Nested RequestEvent(OBJECT_ALLOC) deeper than 16 fails at once (a VM that
 * delivers a request again from its own handler recurses forever).
 * The out file ends with "requests N refused M depth D" and "ok". Its
 * tables grow (the benchmark, bench/jvmpi/run, runs it on millions of
 * allocations).
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent_support.h"
#include "dump_reader.h"

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static int ask_classes, check_classes, check_arrays, check_dump, check_traces, check_threads, events_off, fetch_dump;
static int check_described, ask_supers;
static char top_name[256], count_name[256];
static long dumps = 1;
static long failures;

/* ------------------------------------------------------------ tables */

/* Open addressing, id -> value, with tombstones; doubled (tombstones
 * dropped) at three quarters used. */
#define DEAD ((void *)1)
typedef struct table { void **keys, **values; size_t size, used; const char *what; } table;

/* what: the message; name and id: what it is about. */
static void fail(const char *what, const char *name, const void *id) {
    failures++;
    if (failures <= 20) fprintf(stderr, "hprof_like: unresolved: %s %s (%p)\n", what, name, id);
}

static void table_init(table *t, size_t size, const char *what) {
    t->keys = calloc(size, sizeof(void *));
    t->values = calloc(size, sizeof(void *));
    t->size = size;
    t->used = 0;
    t->what = what;
    if (t->keys == NULL || t->values == NULL) { fprintf(stderr, "hprof_like: out of memory\n"); _exit(3); }
}
static size_t slot(const table *t, const void *key) {
    return (size_t)(((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15ull) & (t->size - 1);
}
static void **table_find(table *t, const void *key) {
    for (size_t i = slot(t, key), n = 0; n < t->size; i = (i + 1) & (t->size - 1), n++) {
        if (t->keys[i] == key) return &t->values[i];
        if (t->keys[i] == NULL) return NULL;
    }
    return NULL;
}
static void table_put(table *t, void *key, void *value);
static void table_grow(table *t) {
    table old = *t;
    table_init(t, old.size * 2, old.what);
    for (size_t i = 0; i < old.size; i++)
        if (old.keys[i] != NULL && old.keys[i] != DEAD) table_put(t, old.keys[i], old.values[i]);
    free(old.keys);
    free(old.values);
}
static void table_put(table *t, void *key, void *value) {
    void **v = table_find(t, key);
    if (v) { *v = value; return; }
    if (t->used * 4 >= t->size * 3) table_grow(t);
    for (size_t i = slot(t, key);; i = (i + 1) & (t->size - 1))
        if (t->keys[i] == NULL || t->keys[i] == DEAD) {
            if (t->keys[i] == NULL) t->used++;
            t->keys[i] = key;
            t->values[i] = value;
            return;
        }
}
static void table_remove(table *t, const void *key) {
    void **v = table_find(t, key);
    if (v) t->keys[v - t->values] = DEAD;
}

typedef struct klass {
    char *name;
    jint interfaces, n_statics;
    char *static_sig;
    uint32_t field_bytes;   /* an INSTANCE_DUMP's values, if the class's super has no fields */
} klass;

static table objects;      /* object id -> class id (an array's element class); known objects */
static table classes;      /* class id -> klass */
static table unloaded;     /* class id -> 1: its CLASS_UNLOAD came */
static table methods;      /* jmethodID -> "Class.method" */
static table threads;      /* JNIEnv * -> 1 */
static table trace_methods; /* methods met in traces -> 1 */
static table tops;         /* first frame's method (top=) -> count */
static long requests, refused;
static int depth, max_depth;

static void need_thread(JNIEnv *env, const char *event) {
    if (check_threads && env != NULL && table_find(&threads, env) == NULL)
        fail("a thread never announced by THREAD_START posted", event, env);
}

/* What HPROF's hprof_fetch_object_info does: an object it does not know is
 * asked for. */
static void fetch(jobjectID id) {
    if (id == NULL || table_find(&objects, id) != NULL) return;
    if (++depth > max_depth) max_depth = depth;
    if (depth > 16) {
        fprintf(stderr, "hprof_like: RequestEvent(OBJECT_ALLOC) nested %d deep: the VM delivers a request again "
                "from its own handler\n", depth);
        _exit(3);
    }
    requests++;
    if (jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id) != JVMPI_SUCCESS) refused++;
    depth--;
}

static void class_load(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    need_thread(e->env_id, "CLASS_LOAD");
    if (table_find(&classes, e->u.class_load.class_id) == NULL) {
        klass *k = calloc(1, sizeof *k);
        if (k == NULL) { fprintf(stderr, "hprof_like: out of memory\n"); _exit(3); }
        k->name = strdup(e->u.class_load.class_name ? e->u.class_load.class_name : "?");
        k->interfaces = e->u.class_load.num_interfaces;
        k->n_statics = e->u.class_load.num_static_fields;
        k->static_sig = malloc((size_t)k->n_statics + 1);
        for (jint i = 0; k->static_sig && i < k->n_statics; i++)
            k->static_sig[i] = e->u.class_load.statics[i].field_signature[0];
        for (jint i = 0; i < e->u.class_load.num_instance_fields; i++) {
            int size = primitive_size(e->u.class_load.instances[i].field_signature[0]);
            k->field_bytes += size ? (uint32_t)size : (uint32_t)sizeof(jobjectID);
        }
        table_put(&classes, e->u.class_load.class_id, k);
        for (jint i = 0; i < e->u.class_load.num_methods; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s.%s", k->name, e->u.class_load.methods[i].method_name);
            table_put(&methods, e->u.class_load.methods[i].method_id, strdup(name));
        }
    }
    fetch(e->u.class_load.class_id);
    jvmpi->RawMonitorExit(lock);
}

static jobjectID wanted;            /* fetch_object's request */
static JVMPI_Event answer;          /* its answer (the requests inside it are for other ids) */
static long answers;

static void obj_alloc(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    if (requested && wanted != NULL && e->u.obj_alloc.obj_id == wanted) { answer = *e; answers++; }
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace trace = { e->env_id, 0, frames };
    if (!requested) jvmpi->GetCallTrace(&trace, 4);
    jvmpi->RawMonitorEnter(lock);
    need_thread(e->env_id, "OBJECT_ALLOC");
    jobjectID id = e->u.obj_alloc.obj_id, class_id = e->u.obj_alloc.class_id;
    if (table_find(&objects, id) == NULL) {
        /* The class, as HPROF's site needs it, named now: before the object
         * is in the table, as HPROF files it under its site (so a class
         * object's class, java/lang/Class, asks for its own class object
         * while it is being described). */
        fetch(class_id);
        table_put(&objects, id, class_id);
        int array = e->u.obj_alloc.is_array == JVMPI_CLASS;
        if ((array ? check_arrays : check_classes) && class_id != NULL && table_find(&classes, class_id) == NULL)
            fail("an OBJECT_ALLOC's class had no CLASS_LOAD before it:",
                 array ? "an array's element class" : "an object's class", class_id);
        for (jint i = 0; i < trace.num_frames; i++) table_put(&trace_methods, frames[i].method_id, (void *)1);
        klass **k = class_id ? (klass **)table_find(&classes, class_id) : NULL;
        if (top_name[0] && trace.num_frames > 0 && e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT && k &&
            strcmp((*k)->name, top_name) == 0) {
            /* key: method id and line, packed */
            void *key = (void *)((uintptr_t)frames[0].method_id ^ ((uintptr_t)(uint32_t)frames[0].lineno << 48));
            void **n = table_find(&tops, key);
            table_put(&tops, key, (void *)((n ? (uintptr_t)*n : 0) + 1));
            table_put(&trace_methods, key, frames[0].method_id);  /* to name it at the end */
        }
    }
    jvmpi->RawMonitorExit(lock);
}

/* ------------------------------------------------------------ heap dump */

static klass *dump_class(jobjectID id, const char *what) {
    klass **k = (klass **)table_find(&classes, id);
    /* ask: a class whose CLASS_LOAD is still on its way (its thread waits
     * for the lock this one holds) is asked for. */
    if (k == NULL && ask_classes && id != NULL && jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, id) == JVMPI_SUCCESS)
        k = (klass **)table_find(&classes, id);
    if (k == NULL && table_find(&unloaded, id) != NULL)
        fail("a heap dump's class whose CLASS_UNLOAD came before the dump:", what, id);
    else if (k == NULL) fail("a heap dump's class without CLASS_LOAD:", what, id);
    return k ? *k : NULL;
}

static long dump_records, counted, counted_whole, fetched, fetch_refused, fetch_wrong;

/* described: the ids one dump names, and those it describes. */
static table described;
static void **named;
static size_t n_named, named_cap;
static long named_total, undescribed;

static void name_object(jobjectID id) {
    if (!check_described || id == NULL) return;
    if (n_named == named_cap) {
        named_cap = named_cap ? named_cap * 2 : 4096;
        named = realloc(named, named_cap * sizeof *named);
        if (named == NULL) { fprintf(stderr, "hprof_like: out of memory\n"); _exit(3); }
    }
    named[n_named++] = id;
}

static void describe_object(jobjectID id) {
    if (check_described && id != NULL) table_put(&described, id, (void *)1);
}

/* After a dump: each id it named must have had its record in it. */
static void check_named(void) {
    if (!check_described) return;
    for (size_t i = 0; i < n_named; i++) {
        named_total++;
        if (table_find(&described, named[i]) != NULL) continue;
        if (++undescribed <= 10) fprintf(stderr, "hprof_like: a heap dump names %p and does not describe it\n", named[i]);
        failures++;
    }
    n_named = 0;
    free(described.keys);
    free(described.values);
    table_init(&described, 1u << 16, "described");
}

/* fetch: an object of the dump the agent does not know, asked for; the
 * answer must be that object, of the class (an array's element class, NULL
 * for primitives) and kind the dump gives. */
static void fetch_object(jobjectID id, jobjectID class_id, jint kind) {
    if (!fetch_dump || id == NULL || table_find(&objects, id) != NULL) return;
    long before = answers;
    fetched++;
    wanted = id;
    jint result = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
    wanted = NULL;
    if (result != JVMPI_SUCCESS) { fetch_refused++; return; }
    if (answers != before + 1 || answer.u.obj_alloc.obj_id != id || answer.u.obj_alloc.class_id != class_id ||
        answer.u.obj_alloc.is_array != kind) {
        if (++fetch_wrong <= 5)
            fprintf(stderr, "hprof_like: RequestEvent(OBJECT_ALLOC, %p) answered another object: id %p class %p kind %d, "
                    "the dump says class %p kind %d\n", id, answer.u.obj_alloc.obj_id, answer.u.obj_alloc.class_id,
                    (int)answer.u.obj_alloc.is_array, class_id, (int)kind);
        failures++;
    }
}

/* supers: each class's superclass as the heap dump's CLASS_DUMP and the
 * class's OBJECT_DUMP give it (NO_SUPER: java/lang/Object's). */
#define NO_SUPER ((void *)2)
static table dump_supers, asked_supers;
static long class_dumps, class_dumps_wrong;
static double class_dump_cpu, heap_dump_cpu;
static jobjectID asked_class;
static long asked_answers;

static double process_cpu(void) {
    struct timespec t;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + t.tv_nsec / 1e9 : 0;
}

static void object_dump(JVMPI_Event *e) {
    reader r = { (const unsigned char *)e->u.object_dump.data,
                 (const unsigned char *)e->u.object_dump.data + e->u.object_dump.data_len, 0 };
    if (asked_class == NULL || big_endian(&r, 1) != JVMPI_GC_CLASS_DUMP || pointer(&r) != asked_class) return;
    jobjectID super = pointer(&r);
    if (!r.bad) table_put(&asked_supers, asked_class, super ? super : NO_SUPER);
    asked_answers++;
}

static void ask_super(jobjectID class_id) {
    if (!ask_supers || class_id == NULL || table_find(&asked_supers, class_id) != NULL) return;
    class_dumps++;
    long before = asked_answers;
    asked_class = class_id;
    double start = process_cpu();
    jint result = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, class_id);
    class_dump_cpu += process_cpu() - start;
    asked_class = NULL;
    if (result != JVMPI_SUCCESS || asked_answers != before + 1) {
        if (++class_dumps_wrong <= 5)
            fprintf(stderr, "hprof_like: RequestEvent(OBJECT_DUMP, class %p): %s\n", class_id,
                    result != JVMPI_SUCCESS ? "failed" : "no CLASS_DUMP of that class");
        failures++;
        table_put(&asked_supers, class_id, NO_SUPER);     /* asked once */
    }
}

/* After a dump: each class asked for has the super the dump gave it. */
static void check_supers(void) {
    for (size_t i = 0; ask_supers && i < asked_supers.size; i++) {
        void *id = asked_supers.keys[i];
        if (id == NULL || id == DEAD) continue;
        void **in_dump = table_find(&dump_supers, id);
        if (in_dump != NULL && *in_dump == asked_supers.values[i]) continue;
        if (++class_dumps_wrong <= 5)
            fprintf(stderr, "hprof_like: class %p: OBJECT_DUMP's super %p, the heap dump's %p\n", id,
                    asked_supers.values[i], in_dump ? *in_dump : NULL);
        failures++;
    }
}

static void read_heap_dump(const char *begin, const char *end) {
    reader r = { (const unsigned char *)begin, (const unsigned char *)end, 0 };
    while (r.p < r.end && !r.bad) {
        unsigned type = (unsigned)big_endian(&r, 1);
        dump_records++;
        switch ((jint)type) {
        case JVMPI_GC_ROOT_UNKNOWN: case JVMPI_GC_ROOT_MONITOR_USED:
            name_object(pointer(&r)); break;
        case JVMPI_GC_ROOT_STICKY_CLASS: {
            jobjectID id = pointer(&r);
            dump_class(id, "STICKY_CLASS root");
            name_object(id);
            break;
        }
        case JVMPI_GC_ROOT_JNI_GLOBAL: case JVMPI_GC_ROOT_NATIVE_STACK: case JVMPI_GC_ROOT_THREAD_BLOCK:
            name_object(pointer(&r)); pointer(&r); break;
        case JVMPI_GC_ROOT_JNI_LOCAL: case JVMPI_GC_ROOT_JAVA_FRAME:
            name_object(pointer(&r)); pointer(&r); big_endian(&r, 4); break;
        case JVMPI_GC_CLASS_DUMP: {
            jobjectID class_id = pointer(&r);
            describe_object(class_id);
            klass *k = dump_class(class_id, "CLASS_DUMP");
            jobjectID super = pointer(&r);
            if (super) dump_class(super, "CLASS_DUMP's super");
            if (ask_supers) table_put(&dump_supers, class_id, super ? super : NO_SUPER);
            for (int i = 0; i < 5; i++) pointer(&r);
            big_endian(&r, 4);
            if (k == NULL) { r.bad = 1; break; }       /* its layout is unknown: the rest cannot be read */
            for (jint i = 0; i < k->interfaces; i++) pointer(&r);
            unsigned n_cp = (unsigned)big_endian(&r, 2);
            for (unsigned i = 0; i < n_cp && !r.bad; i++) {
                big_endian(&r, 2);
                int size = ty_size((unsigned)big_endian(&r, 1));
                if (size == 0) pointer(&r); else big_endian(&r, size);
            }
            for (jint i = 0; i < k->n_statics; i++) {
                int size = primitive_size(k->static_sig[i]);
                if (size == 0) name_object(pointer(&r)); else big_endian(&r, size);
            }
            break;
        }
        case JVMPI_GC_INSTANCE_DUMP: {
            jobjectID id = pointer(&r), class_id = pointer(&r);
            describe_object(id);
            klass *k = dump_class(class_id, "INSTANCE_DUMP");
            fetch_object(id, class_id, JVMPI_NORMAL_OBJECT);
            ask_super(class_id);
            uint32_t n = (uint32_t)big_endian(&r, 4);
            if (k && count_name[0] && strcmp(k->name, count_name) == 0) {
                counted++;
                if (n == k->field_bytes) counted_whole++;
            }
            if (has(&r, n)) r.p += n;
            break;
        }
        case JVMPI_GC_OBJ_ARRAY_DUMP: {
            jobjectID id = pointer(&r);
            uint32_t n = (uint32_t)big_endian(&r, 4);
            jobjectID element = pointer(&r);
            describe_object(id);
            if (element) dump_class(element, "OBJ_ARRAY_DUMP's element class");
            fetch_object(id, element, JVMPI_CLASS);
            for (uint32_t i = 0; i < n && !r.bad; i++) pointer(&r);
            break;
        }
        case JVMPI_GC_PRIM_ARRAY_DUMP: {
            jobjectID id = pointer(&r);
            uint32_t n = (uint32_t)big_endian(&r, 4);
            unsigned ty = (unsigned)big_endian(&r, 1);
            int size = ty_size(ty);
            describe_object(id);
            fetch_object(id, NULL, (jint)ty);
            if (size == 0 || !has(&r, (size_t)n * (size_t)size)) { r.bad = 1; break; }
            r.p += (size_t)n * (size_t)size;
            break;
        }
        default:
            fprintf(stderr, "hprof_like: heap dump record of unknown type %u\n", type);
            failures++;
            r.bad = 1;
        }
    }
    if (r.bad) { fprintf(stderr, "hprof_like: heap dump unreadable\n"); failures++; }
    check_named();
    check_supers();
}

/* ------------------------------------------------------------ the end */

static void shut_down(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    need_thread(e->env_id, "JVM_SHUT_DOWN");
    if (events_off)
        for (jint i = 1; i <= JVMPI_MAX_EVENT_TYPE_VAL; i++) jvmpi->DisableEvent(i, NULL);
    /* Not held while the dumps are asked for: the other threads' events go
     * on (a thread defining classes, with count=); held while one is read. */
    jvmpi->RawMonitorExit(lock);
    for (long i = 0; check_dump && i < dumps; i++) {
        JVMPI_HeapDumpArg arg = { JVMPI_DUMP_LEVEL_2 };
        counted = counted_whole = 0;
        double start = process_cpu();
        jint result = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg);
        heap_dump_cpu += process_cpu() - start;
        if (result != JVMPI_SUCCESS) {
            fprintf(stderr, "hprof_like: RequestEvent(HEAP_DUMP) failed\n");
            failures++;
        }
        if (count_name[0]) fprintf(out, "instances %s %ld %ld\n", count_name, counted, counted_whole);
    }
    jvmpi->RawMonitorEnter(lock);
    if (check_traces)
        for (size_t i = 0; i < trace_methods.size; i++) {
            void *m = trace_methods.keys[i];
            if (m == NULL || m == DEAD || trace_methods.values[i] != (void *)1) continue;
            if (table_find(&methods, m) == NULL) fail("a trace's method without CLASS_LOAD:", "method", m);
        }
    for (size_t i = 0; i < tops.size; i++) {
        if (tops.keys[i] == NULL || tops.keys[i] == DEAD) continue;
        void **m = table_find(&trace_methods, tops.keys[i]);
        void **name = m ? table_find(&methods, *m) : NULL;
        fprintf(out, "top %s %s %u %lu\n", top_name, name ? (char *)*name : "?",
                (unsigned)((uintptr_t)tops.keys[i] >> 48), (unsigned long)(uintptr_t)tops.values[i]);
    }
    fprintf(out, "requests %ld refused %ld depth %d dump_records %ld\n", requests, refused, max_depth, dump_records);
    if (fetch_dump) fprintf(out, "fetched %ld refused %ld wrong %ld\n", fetched, fetch_refused, fetch_wrong);
    if (check_described) fprintf(out, "named %ld undescribed %ld\n", named_total, undescribed);
    if (ask_supers)
        fprintf(out, "class_dumps %ld wrong %ld cpu %.3f of %.3f\n", class_dumps, class_dumps_wrong, class_dump_cpu,
                heap_dump_cpu);
    fprintf(out, failures ? "failed %ld\n" : "ok\n", failures);
    fclose(out);
    jvmpi->RawMonitorExit(lock);
    if (failures) {
        fprintf(stderr, "hprof_like: %ld things unresolved\n", failures);
        _exit(3);
    }
}

static void JNICALL notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD: class_load(e); break;
    case JVMPI_EVENT_CLASS_UNLOAD:
        jvmpi->RawMonitorEnter(lock);
        table_remove(&classes, e->u.class_unload.class_id);
        table_put(&unloaded, e->u.class_unload.class_id, (void *)1);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_OBJ_ALLOC: obj_alloc(e); break;
    case JVMPI_EVENT_OBJ_FREE:
        jvmpi->RawMonitorEnter(lock);        /* held since GC_START: entered again */
        table_remove(&objects, e->u.obj_free.obj_id);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_GC_START: jvmpi->RawMonitorEnter(lock); need_thread(e->env_id, "GC_START"); break;
    case JVMPI_EVENT_GC_FINISH: jvmpi->RawMonitorExit(lock); break;
    case JVMPI_EVENT_THREAD_START:
        jvmpi->RawMonitorEnter(lock);
        table_put(&threads, e->u.thread_start.thread_env_id, (void *)1);
        fetch(e->u.thread_start.thread_id);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_THREAD_END:
        jvmpi->RawMonitorEnter(lock);
        need_thread(e->env_id, "THREAD_END");
        table_remove(&threads, e->env_id);   /* as HPROF forgets it: a JNIEnv may be reused */
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_HEAP_DUMP:
        jvmpi->RawMonitorEnter(lock);
        read_heap_dump(e->u.heap_dump.begin, e->u.heap_dump.end);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_OBJECT_DUMP: object_dump(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(e); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    out = agent_open_out(options, "hprof_like: usage: out=FILE[,classes][,arrays][,dump][,traces][,threads][,off][,top=NAME][,fetch][,dumps=N][,count=NAME][,ask][,supers]");
    if (out == NULL) return JNI_ERR;
    check_classes = options && strstr(options, "classes") != NULL;
    check_arrays = options && strstr(options, "arrays") != NULL;
    check_dump = options && strstr(options, "dump") != NULL;
    check_traces = options && strstr(options, "traces") != NULL;
    check_threads = options && strstr(options, "threads") != NULL;
    events_off = options && strstr(options, "off") != NULL;
    fetch_dump = options && strstr(options, "fetch") != NULL;
    ask_classes = options && strstr(options, "ask") != NULL;
    check_described = options && strstr(options, "described") != NULL;
    ask_supers = options && strstr(options, "supers") != NULL;
    if (!agent_option(options, "top=", top_name, sizeof top_name)) top_name[0] = '\0';
    if (!agent_option(options, "count=", count_name, sizeof count_name)) count_name[0] = '\0';
    char number[32];
    if (agent_option(options, "dumps=", number, sizeof number)) dumps = strtol(number, NULL, 10);
    table_init(&objects, 1u << 20, "object");
    table_init(&classes, 1u << 15, "class");
    table_init(&unloaded, 1u << 10, "unloaded class");
    table_init(&methods, 1u << 18, "method");
    table_init(&threads, 1u << 10, "thread");
    table_init(&trace_methods, 1u << 16, "trace method");
    table_init(&tops, 1u << 8, "top");
    table_init(&described, 1u << 16, "described");
    table_init(&dump_supers, 1u << 12, "superclass in the dump");
    table_init(&asked_supers, 1u << 12, "superclass asked for");
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_hprof_like_lock");
    static const jint events[] = {
        JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_UNLOAD,
        JVMPI_EVENT_OBJ_ALLOC, JVMPI_EVENT_OBJ_FREE, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH,
        JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN,
    };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
