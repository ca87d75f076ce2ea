/*
 * dumps: HEAP_DUMP at JVMPI_DUMP_LEVEL_0, requested by the agent: after a
 * collection, one record per live object (the specification's format:
 * u1 kind, then the object's jobjectID as a native pointer), made by a JVMTI
 * heap iteration that gives every object not yet seen its id (tag).
 * Levels 1 and 2 (fields and references), OBJECT_DUMP and MONITOR_DUMP are
 * not built yet: RequestEvent answers JVMPI_NOT_AVAILABLE for them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

/* The kind (JVMPI_NORMAL_OBJECT, JVMPI_INT, ...) of each loaded class, by its
 * id, sorted for look-up during the walk (where JVMTI may not be called). */
typedef struct class_kind_row { jlong class_tag; jint kind; } class_kind_row;

typedef struct dump_buffer {
    char                 *bytes;
    size_t                used, cap;
    int                   failed;            /* out of memory: the dump is not posted */
    const class_kind_row *kinds;
    size_t                n_kinds;
} dump_buffer;

static int compare_rows(const void *a, const void *b) {
    jlong x = ((const class_kind_row *)a)->class_tag, y = ((const class_kind_row *)b)->class_tag;
    return x < y ? -1 : x > y;
}

static class_kind_row *class_kinds(JNIEnv *jni, size_t *n) {
    jint count = 0;
    jclass *classes = NULL;
    *n = 0;
    if (jvmpi_failed((*jvmpi_jvmti)->GetLoadedClasses(jvmpi_jvmti, &count, &classes), "GetLoadedClasses"))
        return NULL;
    (*jni)->EnsureLocalCapacity(jni, count + 32);
    class_kind_row *rows = calloc((size_t)count + 1, sizeof *rows);
    for (jint i = 0; i < count; i++) {
        char *sig = NULL;
        jobjectID id = jvmpi_id_of(classes[i]);
        if (rows != NULL && id != NULL &&
            (*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, classes[i], &sig, NULL) == JVMTI_ERROR_NONE) {
            rows[*n].class_tag = (jlong)(intptr_t)id;
            rows[*n].kind = jvmpi_kind_of_signature(sig);
            (*n)++;
        }
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
        (*jni)->DeleteLocalRef(jni, classes[i]);
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)classes);
    if (rows != NULL) qsort(rows, *n, sizeof *rows, compare_rows);
    return rows;
}

static int append(dump_buffer *b, const void *data, size_t len) {
    if (b->used + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (cap < b->used + len) cap *= 2;
        char *bigger = realloc(b->bytes, cap);
        if (bigger == NULL) { b->failed = 1; return -1; }
        b->bytes = bigger;
        b->cap = cap;
    }
    memcpy(b->bytes + b->used, data, len);
    b->used += len;
    return 0;
}

/* One object: its record. No JNI or JVMTI here (heap callback). */
static jint JNICALL level0_record(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user) {
    (void)size; (void)length;
    dump_buffer *b = user;
    if (*tag_ptr == 0) *tag_ptr = jvmpi_next_tag();
    class_kind_row key = { class_tag, 0 };
    const class_kind_row *row = bsearch(&key, b->kinds, b->n_kinds, sizeof key, compare_rows);
    unsigned char kind = (unsigned char)(row ? row->kind : JVMPI_NORMAL_OBJECT);
    jobjectID id = (jobjectID)(intptr_t)*tag_ptr;
    if (append(b, &kind, 1) != 0 || append(b, &id, sizeof id) != 0) return JVMTI_VISIT_ABORT;
    return 0;
}

static jint heap_dump_level0(JNIEnv *jni) {
    jvmpi_failed((*jvmpi_jvmti)->ForceGarbageCollection(jvmpi_jvmti), "ForceGarbageCollection");
    dump_buffer b;
    memset(&b, 0, sizeof b);
    class_kind_row *kinds = class_kinds(jni, &b.n_kinds);
    if (kinds == NULL) return JVMPI_FAIL;
    b.kinds = kinds;
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.heap_iteration_callback = level0_record;
    int walked = !jvmpi_failed((*jvmpi_jvmti)->IterateThroughHeap(jvmpi_jvmti, 0, NULL, &callbacks, &b),
                               "IterateThroughHeap");
    jint result = JVMPI_FAIL;
    if (walked && !b.failed) {
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT, jni);
        e.u.heap_dump.dump_level = JVMPI_DUMP_LEVEL_0;
        e.u.heap_dump.begin = b.bytes;
        e.u.heap_dump.end = b.bytes + b.used;
        e.u.heap_dump.num_traces = 0;
        e.u.heap_dump.traces = NULL;
        jvmpi_notify(&e);
        result = JVMPI_SUCCESS;
    } else if (b.failed) {
        fprintf(stderr, "jvmpi: HEAP_DUMP: out of memory for %zu bytes of records; no dump\n", b.cap * 2);
    }
    free(b.bytes);
    free(kinds);
    return result;
}

jint jvmpi_request_heap_dump(JNIEnv *jni, const JVMPI_HeapDumpArg *arg) {
    jint level = arg != NULL ? arg->heap_dump_level : JVMPI_DUMP_LEVEL_2;
    if (level != JVMPI_DUMP_LEVEL_0) return JVMPI_NOT_AVAILABLE;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    jint result = heap_dump_level0(jni);
    jvmpi_in_layer = was;
    return result;
}
