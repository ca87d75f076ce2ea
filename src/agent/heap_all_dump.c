/* heap_all_dump: see heap_all_dump.h. */
#include "heap_all_dump.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/tables.h"
#include "../heap/object_store.h"
#include "../heap/site_table.h"
#include "../output/hprof_patch_traces.h"
#include "events.h"
#include "jvm_heap_dump.h"
#include "jvmti_support.h"
#include "orchestrator.h"

/* GCs begun while a dump is watched (JVMTI GarbageCollectionStart, on the
 * VM thread at a safepoint: a stat and an atomic add). The JVM creates its
 * file before its dump's VM operation and writes nothing to it before the
 * operation's own GC is over: a GC while the file is missing or empty comes
 * before the dump's snapshot of the heap and moves nothing the dump names;
 * any other GC may have moved objects since the dump wrote them. Global:
 * the JVMTI callback gets no user data. */
static struct {
    const char *_Atomic file;
    char                path[4352];    /* static: the callback may still read it as the watch ends;
                                          one dump at a time (agent.lock) */
    atomic_ulong        gcs_after_snapshot;
} watch;

static void JNICALL on_gc_start(jvmtiEnv *jvmti)
{
    (void)jvmti;
    const char *path = atomic_load(&watch.file);
    struct stat st;
    if (path && stat(path, &st) == 0 && st.st_size > 0)
        atomic_fetch_add(&watch.gcs_after_snapshot, 1);
}

int heap_all_dump_subscribe(void)
{
    return events_subscribe(JVMTI_EVENT_GARBAGE_COLLECTION_START, EVENT_FN(on_gc_start));
}

/* HotSpot's JNI handles point to a slot holding the object's address; their
 * low bits tell the kind of handle (weak global 1, and global 2 since JDK
 * 21), and slots are 8-byte aligned. */
static uint64_t address_of(const void *handle)
{
    const uint64_t *slot = (const uint64_t *)((uintptr_t)handle & ~(uintptr_t)7);
    return slot ? *slot : 0;
}

/* The tracked objects by address: open addressing, a power of two of slots
 * at least 4/3 of the store's entries and kept at most 3/4 full, 12 bytes a
 * slot: 16 to 32 bytes a tracked object while the dump is patched. */
typedef struct address_map {
    uint64_t  *address;          /* 0: empty */
    subsite_t *subsite;
    size_t     mask, n;
    int        failed;           /* out of memory */
} address_map;

static size_t slot_of(const address_map *m, uint64_t a)
{
    return (size_t)((a >> 3) * UINT64_C(0x9E3779B97F4A7C15) >> 20) & m->mask;
}

static int map_size(address_map *m, size_t slots)
{
    address_map bigger = { calloc(slots, sizeof *m->address), calloc(slots, sizeof *m->subsite), slots - 1, 0, 0 };
    if (bigger.address == NULL || bigger.subsite == NULL) {
        free(bigger.address);
        free(bigger.subsite);
        return -1;
    }
    for (size_t i = 0; m->address && i <= m->mask; i++) {
        if (m->address[i] == 0)
            continue;
        size_t j = slot_of(&bigger, m->address[i]);
        while (bigger.address[j])
            j = (j + 1) & bigger.mask;
        bigger.address[j] = m->address[i];
        bigger.subsite[j] = m->subsite[i];
    }
    bigger.n = m->n;
    free(m->address);
    free(m->subsite);
    *m = bigger;
    return 0;
}

static void map_put(address_map *m, uint64_t a, subsite_t s)
{
    if (m->failed || ((m->n + 1) * 4 > (m->mask + 1) * 3 && map_size(m, (m->mask + 1) * 2) != 0)) {
        m->failed = 1;
        return;
    }
    size_t i = slot_of(m, a);
    while (m->address[i] && m->address[i] != a)
        i = (i + 1) & m->mask;
    if (m->address[i] == 0)
        m->n++;
    m->address[i] = a;
    m->subsite[i] = s;
}

static subsite_t map_get(const address_map *m, uint64_t a)
{
    for (size_t i = slot_of(m, a); m->address[i]; i = (i + 1) & m->mask)
        if (m->address[i] == a)
            return m->subsite[i];
    return 0;
}

/* One dump's state, from before the JVM's dump to the end of the patch. */
typedef struct patch {
    address_map   objects;
    uint64_t     *mirror;        /* a class's Class object address, by class serial - CLASS_SERIAL_BASE */
    uint32_t      nmirrors;
    int           fail_first;    /* HPROF_TEST_HEAP_ALL_MISMATCH: the first object found "mismatches" */
    uint64_t      found;
    char          why[256];      /* why the patch was abandoned */
    const heap_dump_target *target;   /* its each_tracked: the objects heap=sites tracks */
} patch;

static void add_tracked(void *arg, void *handle, subsite_t s)
{
    uint64_t a = address_of(handle);
    if (a && s)
        map_put(&((patch *)arg)->objects, a, s);
}

/* Every loaded class's Class object address, by its serial. 0, or -1. */
static int read_mirrors(JNIEnv *jni, patch *p)
{
    jint n = 0;
    jclass *classes = NULL;
    if (jvmti_failed((*hprof_jvmti)->GetLoadedClasses(hprof_jvmti, &n, &classes), "GetLoadedClasses"))
        return -1;
    jvmti_hold_locals(jni, n);
    p->nmirrors = class_count(agent_tables()) + 1024;
    p->mirror = calloc(p->nmirrors, sizeof *p->mirror);
    for (jint i = 0; i < n; i++) {
        serial_t s = p->mirror ? class_serial_of_klass(classes[i]) : 0;
        if (s >= CLASS_SERIAL_BASE && s - CLASS_SERIAL_BASE < p->nmirrors)
            p->mirror[s - CLASS_SERIAL_BASE] = address_of(classes[i]);
        (*jni)->DeleteLocalRef(jni, classes[i]);
    }
    jvmti_free(classes);
    return p->mirror ? 0 : -1;
}

/* class_object: a class's id in the JVM's dump, its Class object's
 * address (read_mirrors). */
static uint64_t class_address(void *ctx, uint32_t class_serial)
{
    const patch *p = ctx;
    return class_serial >= CLASS_SERIAL_BASE && class_serial - CLASS_SERIAL_BASE < p->nmirrors && p->mirror
         ? p->mirror[class_serial - CLASS_SERIAL_BASE] : 0;
}

/* HPROF's basic type of a primitive array class's elements ("[I": 10), 0
 * for any other class. */
static uint8_t element_type(const char *sig)
{
    static const char codes[] = "ZCFDBSIJ";
    const char *c = sig && sig[0] == '[' && sig[1] && sig[2] == '\0' ? strchr(codes, sig[1]) : NULL;
    return c ? (uint8_t)(4 + (c - codes)) : 0;
}

/* The patcher's question about each object of the JVM's dump. */
static int trace_of_object(void *ctx, const hpt_object *o, uint32_t *trace)
{
    patch *p = ctx;
    subsite_t s = map_get(&p->objects, o->id);
    serial_t tr = 0, cls = 0;
    if (s == 0 || site_get(s, &tr, &cls, NULL) != 0 || tr == 0)
        return 0;
    p->found++;
    const char *sig = class_signature(agent_tables(), cls);
    uint8_t type = element_type(sig);
    uint64_t mirror = class_address(p, cls);
    int same = o->kind == HPT_PRIM_ARRAY ? type != 0 && type == o->elem_type
             : o->kind == (sig && sig[0] == '[' ? HPT_OBJ_ARRAY : HPT_INSTANCE) && mirror && mirror == o->class_id;
    if (p->fail_first) {
        same = 0;
        p->fail_first = 0;
    }
    if (!same) {
        snprintf(p->why, sizeof p->why, "object 0x%llx of the JVM's dump is not of class %s, recorded at its "
                 "address (class 0x%llx in the dump, 0x%llx expected)", (unsigned long long)o->id,
                 sig ? sig : "?", (unsigned long long)o->class_id, (unsigned long long)mirror);
        return -1;
    }
    *trace = tr;
    return 1;
}

static void patch_free(patch *p)
{
    free(p->objects.address);
    free(p->objects.subsite);
    free(p->mirror);
    p->objects = (address_map){ 0 };
    p->mirror = NULL;
}

/* before_dump: GCs are watched from now on (on_gc_start). */
static void watch_dump(void *ctx, const char *path)
{
    (void)ctx;
    snprintf(watch.path, sizeof watch.path, "%s", path);
    atomic_store(&watch.gcs_after_snapshot, 0);
    atomic_store(&watch.file, watch.path);
}

/* after_dump: the addresses read, then the JVM's file (fd) patched. */
static int patch_dump(void *ctx, JNIEnv *jni, int fd)
{
    patch *p = ctx;
    size_t entries = object_store_stats_now().entries, slots = 1024;
    while (slots < entries + entries / 3 && slots < ((size_t)1 << 40))
        slots <<= 1;
    if (map_size(&p->objects, slots) != 0 || read_mirrors(jni, p) != 0) {
        fprintf(stderr, "hprof: heap dump: out of memory for the tracked objects' addresses (%zu objects); the "
                "agent walks the heap itself\n", entries);
        return -1;
    }
    p->target->each_tracked(jni, add_tracked, p);
    atomic_store(&watch.file, NULL);
    unsigned long gcs = atomic_load(&watch.gcs_after_snapshot);
    if (p->objects.failed || gcs != 0) {
        fprintf(stderr, "hprof: heap dump: %s; the agent walks the heap itself\n", p->objects.failed
                ? "out of memory for the tracked objects' addresses"
                : "a garbage collection ran while the objects' addresses were read (they may have moved)");
        return -1;
    }
    hpt_result r;
    int rc = hpt_patch_file(fd, trace_of_object, p, &r);
    if (rc == 0)
        return 0;
    if (rc == -2)
        fprintf(stderr, "hprof: heap dump: the JVM's dump does not match the agent's record of its objects (%s); "
                "the agent walks the heap itself\n", p->why);
    else if (rc == -3)
        fprintf(stderr, "hprof: heap dump: cannot map the JVM's dump to give its objects their traces: %s; the "
                "agent walks the heap itself\n", strerror(errno));
    else
        fprintf(stderr, "hprof: heap dump: the JVM's dump cannot be read to give its objects their traces (%s "
                "at byte %llu); the agent walks the heap itself\n", rc == 1 ? "not an HPROF file with 8-byte ids"
                : r.what, (unsigned long long)r.offset);
    return -1;
}

/* Only collectors that move objects at safepoints alone (each one a
 * GarbageCollectionStart) and keep plain addresses in handles. */
static int collector_known(JNIEnv *jni, int asked)
{
    static const char *const flags[] = { "UseG1GC", "UseParallelGC", "UseSerialGC" };
    char why[512] = "none of -XX:+UseG1GC, -XX:+UseParallelGC, -XX:+UseSerialGC";
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int on = jvm_flag_is_true(jni, flags[i], why, sizeof why);
        if (on == 1)
            return 1;
        if (on < 0)
            break;
    }
    if (asked)
        fprintf(stderr, "hprof: heap dump: heap=all by the JVM's dumper needs the G1, Parallel or Serial collector "
            "(%s); the agent walks the heap itself\n", why);
    return 0;
}

int heap_all_dump_by_jvm(JNIEnv *jni, const heap_dump_target *t, int asked)
{
    if (t->each_tracked == NULL || !collector_known(jni, asked))
        return 1;
    if (events_want(hprof_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_START) != 0) {
        if (asked)
            fprintf(stderr, "hprof: heap dump: heap=all by the JVM's dumper needs JVMTI's GarbageCollectionStart "
                "events, which this JVM does not give; the agent walks the heap itself\n");
        return 1;
    }
    patch p;
    memset(&p, 0, sizeof p);
    const char *test = getenv("HPROF_TEST_HEAP_ALL_MISMATCH");
    p.fail_first = test && *test && strcmp(test, "0") != 0;
    p.target = t;
    heap_dump_target by_jvm = *t;
    by_jvm.before_dump = watch_dump;
    by_jvm.after_dump = patch_dump;
    by_jvm.class_object = class_address;
    by_jvm.dump_ctx = &p;
    int rc = heap_dump_by_jvm(jni, &by_jvm);
    atomic_store(&watch.file, NULL);
    events_unwant(hprof_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_START);
    patch_free(&p);
    return rc;
}
