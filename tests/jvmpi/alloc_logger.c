/*
 * alloc_logger: counts OBJECT_ALLOC events of one class, written to the
 * JVMPI specification alone.
 *
 * Options: out=FILE,class=NAME (internal form). Writes at JVM_SHUT_DOWN:
 *   objects N sizes S1[,S2...] distinct_ids D    NAME's instances
 *   arrays N                                     arrays whose element class is NAME
 *   arrays_of_arrays N                           arrays whose element class is
 *                                                NAME[], known by its CLASS_LOAD
 *                                                ("[LNAME;") before
 *   int_arrays SIZE N                            int arrays over 40000 bytes, by size
 *   arena A                                      the arena ids seen (one line each)
 *   arena_new A NAME                             ARENA_NEW events
 *   request_object SAME|DIFFERENT                RequestEvent(OBJECT_ALLOC) of the
 *                                                first NAME object, after the
 *                                                program's GC: same id and class?
 *   request_class CLASS|OTHER                    RequestEvent(OBJECT_ALLOC) of
 *                                                NAME's class object: a
 *                                                java/lang/Class instance?
 *   object_dump instance OK|BAD array OK|BAD class OK|BAD
 *                                                OBJECT_DUMP of the first NAME
 *                                                object (fields int 7, long
 *                                                0x0102030405060708, itself), of
 *                                                the first array of NAME ({ it,
 *                                                null }), and of NAME's class
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 4096
#define MAX_SIZES 16

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char class_name[256];
static jobjectID watched, class_class;      /* NAME's class, java/lang/Class */
static jobjectID ids[MAX_IDS];
static long n_objects, n_arrays;
static jint sizes[MAX_SIZES];
static int n_sizes;
static struct { jint size; long count; } int_arrays[MAX_SIZES];
static int n_int_sizes;
static jint arenas[8];
static int n_arenas;
static int requested_same = -1, requested_class = -1;
static jobjectID first_array;
static int instance_ok, array_ok, class_ok;
static struct { jint id; char name[64]; } new_arenas[8];
static int n_new_arenas;

static long arrays_of_arrays;
static jobjectID watched_array;             /* NAME[]'s class */

static void class_load(JVMPI_Event *e) {
    char array_name[300];
    snprintf(array_name, sizeof array_name, "[L%s;", class_name);
    jvmpi->RawMonitorEnter(lock);
    if (strcmp(e->u.class_load.class_name, array_name) == 0) watched_array = e->u.class_load.class_id;
    if (strcmp(e->u.class_load.class_name, class_name) == 0) watched = e->u.class_load.class_id;
    if (strcmp(e->u.class_load.class_name, "java/lang/Class") == 0) class_class = e->u.class_load.class_id;
    jvmpi->RawMonitorExit(lock);
}

static void note_arena(jint arena) {
    for (int i = 0; i < n_arenas; i++)
        if (arenas[i] == arena) return;
    if (n_arenas < 8) arenas[n_arenas++] = arena;
}

static void note_size(jint size) {
    for (int i = 0; i < n_sizes; i++)
        if (sizes[i] == size) return;
    if (n_sizes < MAX_SIZES) sizes[n_sizes++] = size;
}

static void note_int_array(jint size) {
    for (int i = 0; i < n_int_sizes; i++)
        if (int_arrays[i].size == size) { int_arrays[i].count++; return; }
    if (n_int_sizes < MAX_SIZES) { int_arrays[n_int_sizes].size = size; int_arrays[n_int_sizes++].count = 1; }
}

static void requested(JVMPI_Event *e) {
    if (e->u.obj_alloc.obj_id == ids[0])
        requested_same = e->u.obj_alloc.class_id == watched && e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT;
    else if (e->u.obj_alloc.obj_id == watched)
        requested_class = e->u.obj_alloc.class_id == class_class && class_class != NULL;
}

static void object_alloc(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        requested(e);
    } else {
        note_arena(e->u.obj_alloc.arena_id);
        if (e->u.obj_alloc.is_array == JVMPI_CLASS && watched_array != NULL && e->u.obj_alloc.class_id == watched_array)
            arrays_of_arrays++;
        if (watched != NULL && e->u.obj_alloc.class_id == watched) {
            if (e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT) {
                if (n_objects < MAX_IDS) ids[n_objects] = e->u.obj_alloc.obj_id;
                n_objects++;
                note_size(e->u.obj_alloc.size);
            } else if (e->u.obj_alloc.is_array == JVMPI_CLASS) {
                if (n_arrays == 0) first_array = e->u.obj_alloc.obj_id;
                n_arrays++;
            }
        }
        if (e->u.obj_alloc.is_array == JVMPI_INT && e->u.obj_alloc.size > 40000) note_int_array(e->u.obj_alloc.size);
    }
    jvmpi->RawMonitorExit(lock);
}

static int compare_ids(const void *a, const void *b) {
    jobjectID x = *(const jobjectID *)a, y = *(const jobjectID *)b;
    return x < y ? -1 : x > y;
}

static long distinct_ids(void) {
    long n = n_objects < MAX_IDS ? n_objects : MAX_IDS, d = 0;
    jobjectID *copy = malloc((size_t)n * sizeof *copy + 1);
    if (copy == NULL) return -1;
    memcpy(copy, ids, (size_t)n * sizeof *copy);
    qsort(copy, (size_t)n, sizeof *copy, compare_ids);
    for (long i = 0; i < n; i++)
        if (i == 0 || copy[i] != copy[i - 1]) d++;
    free(copy);
    return d;
}

static uint64_t get_be(const unsigned char *p, int size) {
    uint64_t v = 0;
    for (int i = 0; i < size; i++) v = v << 8 | p[i];
    return v;
}

static jobjectID get_id(const unsigned char *p) {
    jobjectID id;
    memcpy(&id, p, sizeof id);
    return id;
}

/* The formats of the specification's section 4.2, one record. */
static void object_dump(JVMPI_Event *e) {
    const unsigned char *p = (const unsigned char *)e->u.object_dump.data;
    const size_t ptr = sizeof(jobjectID);
    if (e->u.object_dump.data_len < 1) return;
    if (p[0] == JVMPI_GC_INSTANCE_DUMP && (size_t)e->u.object_dump.data_len == 1 + 2 * ptr + 4 + 12 + ptr)
        instance_ok = get_id(p + 1) == ids[0] && get_id(p + 1 + ptr) == watched &&
                      get_be(p + 1 + 2 * ptr, 4) == 12 + ptr && get_be(p + 5 + 2 * ptr, 4) == 7 &&
                      get_be(p + 9 + 2 * ptr, 8) == 0x0102030405060708ull && get_id(p + 17 + 2 * ptr) == ids[0];
    if (p[0] == JVMPI_GC_OBJ_ARRAY_DUMP && (size_t)e->u.object_dump.data_len == 1 + ptr + 4 + ptr + 2 * ptr)
        array_ok = get_id(p + 1) == first_array && get_be(p + 1 + ptr, 4) == 2 && get_id(p + 5 + ptr) == watched &&
                   get_id(p + 5 + 2 * ptr) == ids[0] && get_id(p + 5 + 3 * ptr) == NULL;
    /* CLASS_DUMP of Blob: its id, 5 ids and 2 reserved, u4 instance size
     * (int, long, a reference), its 1 interface (Cloneable), u2 constant
     * pool entries of u2, ty and a value, no statics. */
    size_t head = 1 + 7 * ptr + 4 + 1 * ptr;
    if (p[0] == JVMPI_GC_CLASS_DUMP && (size_t)e->u.object_dump.data_len >= head + 2) {
        uint64_t n_cp = get_be(p + head, 2);
        size_t entry = 2 + 1 + ptr;           /* the resolved entries are references (ty JVMPI_CLASS) */
        class_ok = get_id(p + 1) == watched && get_id(p + 1 + ptr) != NULL && get_be(p + 1 + 7 * ptr, 4) == 12 + ptr &&
                   (size_t)e->u.object_dump.data_len == head + 2 + n_cp * entry;
        for (uint64_t i = 0; class_ok && i < n_cp; i++) class_ok = p[head + 2 + i * entry + 2] == JVMPI_CLASS;
    }
}

static void shut_down(void) {
    jvmpi->DisableGC();
    if (n_objects > 0) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, ids[0]);
    if (watched != NULL) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, watched);
    if (n_objects > 0) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, ids[0]);
    if (first_array != NULL) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, first_array);
    jint class_dump = watched != NULL ? jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, watched) : JVMPI_FAIL;
    if (class_dump != JVMPI_SUCCESS) class_ok = 0;
    jvmpi->EnableGC();
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "objects %ld sizes", n_objects);
    for (int i = 0; i < n_sizes; i++) fprintf(out, "%s%d", i ? "," : " ", (int)sizes[i]);
    fprintf(out, " distinct_ids %ld\n", distinct_ids());
    fprintf(out, "arrays %ld\n", n_arrays);
    fprintf(out, "arrays_of_arrays %ld\n", arrays_of_arrays);
    for (int i = 0; i < n_int_sizes; i++)
        fprintf(out, "int_arrays %d %ld\n", (int)int_arrays[i].size, int_arrays[i].count);
    for (int i = 0; i < n_arenas; i++) fprintf(out, "arena %d\n", (int)arenas[i]);
    for (int i = 0; i < n_new_arenas; i++) fprintf(out, "arena_new %d %s\n", (int)new_arenas[i].id, new_arenas[i].name);
    fprintf(out, "request_object %s\n", requested_same == 1 ? "SAME" : "DIFFERENT");
    fprintf(out, "request_class %s\n", requested_class == 1 ? "CLASS" : "OTHER");
    fprintf(out, "object_dump instance %s array %s class %s\n", instance_ok ? "OK" : "BAD", array_ok ? "OK" : "BAD",
            class_ok ? "OK" : "BAD");
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e); break;
    case JVMPI_EVENT_OBJ_ALLOC:     object_alloc(e); break;      /* the old name, as agents used it */
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    case JVMPI_EVENT_OBJECT_DUMP:   object_dump(e); break;
    case JVMPI_EVENT_NEW_ARENA:
        if (n_new_arenas < 8) {
            new_arenas[n_new_arenas].id = e->u.new_arena.arena_id;
            snprintf(new_arenas[n_new_arenas++].name, sizeof new_arenas[0].name, "%s", e->u.new_arena.arena_name);
        }
        break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    char path[1024];
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1_2) < 0) return JNI_ERR;
    if (options == NULL || !agent_option(options, "out=", path, sizeof path) ||
        !agent_option(options, "class=", class_name, sizeof class_name) || (out = fopen(path, "w")) == NULL) {
        fprintf(stderr, "alloc_logger: options out=FILE,class=NAME\n");
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_alloc_logger");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_OBJ_ALLOC, JVMPI_EVENT_JVM_SHUT_DOWN,
                                   JVMPI_EVENT_NEW_ARENA };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
