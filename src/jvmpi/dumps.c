/*
 * dumps: the dumps an agent requests, in the specification's byte formats
 * (u1 record types, u4 big-endian, ids and JNIEnvs as native pointers).
 *
 * HEAP_DUMP at JVMPI_DUMP_LEVEL_0: after a
 * collection, one record per live object (the specification's format:
 * u1 kind, then the object's jobjectID as a native pointer), made by a JVMTI
 * heap iteration that gives every object not yet seen its id (tag).
 * MONITOR_DUMP: every Java monitor a known thread owns or contends for
 * (JVMTI GetObjectMonitorUsage: owner, entry count, waiters) and every raw
 * monitor of the agent, with each thread's trace and status; taken while
 * the program runs (not with the threads stopped, as JVMPI did).
 * OBJECT_DUMP: one instance or array record with its values, read through
 * JNI. Heap dump levels 1 and 2 and a Class object's CLASS_DUMP are not
 * built yet: RequestEvent answers JVMPI_NOT_AVAILABLE for them.
 */
#include <pthread.h>
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

/* ------------------------------------------------------------ monitor dump */

#define DUMP_THREADS 4096
#define TRACE_DEPTH 16

static int put_u1(dump_buffer *b, unsigned v) { unsigned char c = (unsigned char)v; return append(b, &c, 1); }
static int put_u4(dump_buffer *b, uint32_t v) {             /* big-endian, as the formats say */
    unsigned char c[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                           (unsigned char)v };
    return append(b, c, 4);
}
static int put_pointer(dump_buffer *b, const void *p) { return append(b, &p, sizeof p); }

typedef struct thread_set { JNIEnv **envs; jthread *threads; int n; } thread_set;

static JNIEnv *env_of(JNIEnv *jni, const thread_set *ts, jthread thread) {
    for (int i = 0; thread != NULL && i < ts->n; i++)
        if ((*jni)->IsSameObject(jni, ts->threads[i], thread)) return ts->envs[i];
    return NULL;
}

/* u4 count, then the JNIEnvs of those threads the layer knows, leaving out
 * those in except (before JDK 23 the waiters to enter include the threads
 * in Object.wait). */
static void put_env_list(JNIEnv *jni, dump_buffer *b, const thread_set *ts, const jthread *threads, jint n,
                         const jthread *except, jint n_except) {
    JNIEnv *envs[DUMP_THREADS];
    uint32_t k = 0;
    for (jint i = 0; i < n && k < DUMP_THREADS; i++) {
        int excluded = 0;
        for (jint j = 0; j < n_except && !excluded; j++) excluded = (*jni)->IsSameObject(jni, except[j], threads[i]);
        JNIEnv *env = excluded ? NULL : env_of(jni, ts, threads[i]);
        if (env != NULL) envs[k++] = env;
    }
    put_u4(b, k);
    for (uint32_t i = 0; i < k; i++) put_pointer(b, envs[i]);
}

static void put_java_monitor(JNIEnv *jni, dump_buffer *b, const thread_set *ts, jobject object) {
    jvmtiMonitorUsage usage;
    memset(&usage, 0, sizeof usage);
    if ((*jvmpi_jvmti)->GetObjectMonitorUsage(jvmpi_jvmti, object, &usage) != JVMTI_ERROR_NONE) return;
    put_u1(b, JVMPI_MONITOR_JAVA);
    put_pointer(b, jvmpi_id_of(object));
    put_pointer(b, env_of(jni, ts, usage.owner));
    put_u4(b, (uint32_t)usage.entry_count);
    put_env_list(jni, b, ts, usage.waiters, usage.waiter_count, usage.notify_waiters, usage.notify_waiter_count);
    put_env_list(jni, b, ts, usage.notify_waiters, usage.notify_waiter_count, NULL, 0);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)usage.waiters);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)usage.notify_waiters);
}

static int add_unique(JNIEnv *jni, jobject *objects, int n, int max, jobject o) {
    if (o == NULL || n >= max) return n;
    for (int i = 0; i < n; i++)
        if ((*jni)->IsSameObject(jni, objects[i], o)) return n;
    objects[n] = o;
    return n + 1;
}

/* The Java monitors the known threads own or contend for. */
static int monitors_in_use(JNIEnv *jni, const thread_set *ts, jobject *objects, int max) {
    int n = 0;
    for (int i = 0; i < ts->n; i++) {
        jint owned_n = 0;
        jobject *owned = NULL;
        if ((*jvmpi_jvmti)->GetOwnedMonitorInfo(jvmpi_jvmti, ts->threads[i], &owned_n, &owned) == JVMTI_ERROR_NONE) {
            for (jint j = 0; j < owned_n; j++) n = add_unique(jni, objects, n, max, owned[j]);
            (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)owned);
        }
        jobject contended = NULL;
        if ((*jvmpi_jvmti)->GetCurrentContendedMonitor(jvmpi_jvmti, ts->threads[i], &contended) == JVMTI_ERROR_NONE)
            n = add_unique(jni, objects, n, max, contended);
    }
    return n;
}

static void put_raw_monitor(const jvmpi_raw_monitor *m, void *context) {
    dump_buffer *b = context;
    put_u1(b, JVMPI_MONITOR_RAW);
    put_pointer(b, m->name);
    put_pointer(b, m);
    put_pointer(b, m->owner);
    put_u4(b, (uint32_t)m->entries);
    put_u4(b, (uint32_t)m->n_entering);
    for (int i = 0; i < m->n_entering; i++) put_pointer(b, m->entering[i]);
    put_u4(b, (uint32_t)m->n_notified);
    for (int i = 0; i < m->n_notified; i++) put_pointer(b, m->notified[i]);
}

/* Every known thread's trace and status, as the event carries them. */
static JVMPI_CallTrace *thread_traces(const thread_set *ts, jint **status) {
    JVMPI_CallTrace *traces = calloc((size_t)ts->n + 1, sizeof *traces);
    JVMPI_CallFrame *frames = calloc((size_t)ts->n * TRACE_DEPTH + 1, sizeof *frames);
    *status = calloc((size_t)ts->n + 1, sizeof **status);
    if (traces == NULL || frames == NULL || *status == NULL) {
        free(traces); free(frames); free(*status);
        *status = NULL;
        return NULL;
    }
    for (int i = 0; i < ts->n; i++) {
        traces[i].env_id = ts->envs[i];
        traces[i].frames = frames + (size_t)i * TRACE_DEPTH;
        jvmpi_call_trace(&traces[i], TRACE_DEPTH);
        (*status)[i] = jvmpi_thread_status(ts->envs[i]);
    }
    return traces;
}

jint jvmpi_request_monitor_dump(JNIEnv *jni) {
    static JNIEnv *envs[DUMP_THREADS];          /* one dump at a time (under dumping) */
    static jthread threads[DUMP_THREADS];
    static jobject objects[DUMP_THREADS];
    static pthread_mutex_t dumping = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&dumping);
    (*jni)->PushLocalFrame(jni, 3 * DUMP_THREADS + 64);
    thread_set ts = { envs, threads, 0 };
    ts.n = jvmpi_threads_snapshot(jni, envs, threads, DUMP_THREADS);
    dump_buffer b;
    memset(&b, 0, sizeof b);
    int n_objects = monitors_in_use(jni, &ts, objects, DUMP_THREADS);
    for (int i = 0; i < n_objects; i++) put_java_monitor(jni, &b, &ts, objects[i]);
    jvmpi_raw_each(put_raw_monitor, &b);
    jint *status = NULL;
    JVMPI_CallTrace *traces = thread_traces(&ts, &status);
    jint result = JVMPI_FAIL;
    if (!b.failed && traces != NULL) {
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_MONITOR_DUMP | JVMPI_REQUESTED_EVENT, jni);
        e.u.monitor_dump.begin = b.bytes;
        e.u.monitor_dump.end = b.bytes + b.used;
        e.u.monitor_dump.num_traces = ts.n;
        e.u.monitor_dump.traces = traces;
        e.u.monitor_dump.threads_status = status;
        jvmpi_notify(&e);
        result = JVMPI_SUCCESS;
    }
    if (traces != NULL) free(traces[0].frames);
    free(traces);
    free(status);
    free(b.bytes);
    (*jni)->PopLocalFrame(jni, NULL);
    pthread_mutex_unlock(&dumping);
    return result;
}

/* ------------------------------------------------------------ object dump */

/* A field value as the dump formats want it: primitives big-endian in
 * their size, references as ids. */
static void put_value(JNIEnv *jni, dump_buffer *b, jobject object, jfieldID field, char type) {
    unsigned char bytes[8];
    uint64_t bits = 0;
    int size = 0;
    switch (type) {
    case 'Z': bits = (*jni)->GetBooleanField(jni, object, field); size = 1; break;
    case 'B': bits = (uint8_t)(*jni)->GetByteField(jni, object, field); size = 1; break;
    case 'C': bits = (*jni)->GetCharField(jni, object, field); size = 2; break;
    case 'S': bits = (uint16_t)(*jni)->GetShortField(jni, object, field); size = 2; break;
    case 'I': bits = (uint32_t)(*jni)->GetIntField(jni, object, field); size = 4; break;
    case 'F': { jfloat f = (*jni)->GetFloatField(jni, object, field); uint32_t u; memcpy(&u, &f, 4); bits = u; size = 4; break; }
    case 'J': bits = (uint64_t)(*jni)->GetLongField(jni, object, field); size = 8; break;
    case 'D': { jdouble d = (*jni)->GetDoubleField(jni, object, field); memcpy(&bits, &d, 8); size = 8; break; }
    default: {
        jobject value = (*jni)->GetObjectField(jni, object, field);
        put_pointer(b, jvmpi_id_of(value));
        if (value) (*jni)->DeleteLocalRef(jni, value);
        return;
    }
    }
    for (int i = 0; i < size; i++) bytes[i] = (unsigned char)(bits >> (8 * (size - 1 - i)));
    append(b, bytes, (size_t)size);
}

/* The instance fields' values: the object's class first, then its
 * superclasses (the specification's order), each in declaration order. */
static void put_instance_fields(JNIEnv *jni, dump_buffer *values, jobject object, jclass klass) {
    for (jclass k = (*jni)->NewLocalRef(jni, klass); k != NULL;) {
        jint n = 0;
        jfieldID *fields = NULL;
        if ((*jvmpi_jvmti)->GetClassFields(jvmpi_jvmti, k, &n, &fields) == JVMTI_ERROR_NONE) {
            for (jint i = 0; i < n; i++) {
                jint modifiers = 0;
                char *sig = NULL;
                if ((*jvmpi_jvmti)->GetFieldModifiers(jvmpi_jvmti, k, fields[i], &modifiers) == JVMTI_ERROR_NONE &&
                    !(modifiers & 0x0008) &&
                    (*jvmpi_jvmti)->GetFieldName(jvmpi_jvmti, k, fields[i], NULL, &sig, NULL) == JVMTI_ERROR_NONE)
                    put_value(jni, values, object, fields[i], sig[0]);
                (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
            }
            (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)fields);
        }
        jclass super = (*jni)->GetSuperclass(jni, k);
        (*jni)->DeleteLocalRef(jni, k);
        k = super;
    }
}

static void put_instance(JNIEnv *jni, dump_buffer *b, jobject object, jclass klass) {
    dump_buffer values;
    memset(&values, 0, sizeof values);
    put_instance_fields(jni, &values, object, klass);
    put_u1(b, JVMPI_GC_INSTANCE_DUMP);
    put_pointer(b, jvmpi_id_of(object));
    put_pointer(b, jvmpi_id_of(klass));
    put_u4(b, (uint32_t)values.used);
    if (values.used) append(b, values.bytes, values.used);
    b->failed |= values.failed;
    free(values.bytes);
}

/* Primitive array elements, each big-endian in its size. */
static void put_primitive_elements(JNIEnv *jni, dump_buffer *b, jarray array, jsize n, char type) {
    int size = type == 'Z' || type == 'B' ? 1 : type == 'C' || type == 'S' ? 2 : type == 'I' || type == 'F' ? 4 : 8;
    void *elements = (*jni)->GetPrimitiveArrayCritical(jni, array, NULL);
    if (elements == NULL) { b->failed = 1; return; }
    for (jsize i = 0; i < n && !b->failed; i++) {
        const unsigned char *e = (const unsigned char *)elements + (size_t)i * (size_t)size;
        uint64_t v = 0;
        if (size == 1) v = e[0];
        else if (size == 2) { uint16_t u; memcpy(&u, e, 2); v = u; }
        else if (size == 4) { uint32_t u; memcpy(&u, e, 4); v = u; }
        else memcpy(&v, e, 8);
        unsigned char be[8];
        for (int j = 0; j < size; j++) be[j] = (unsigned char)(v >> (8 * (size - 1 - j)));
        append(b, be, (size_t)size);
    }
    (*jni)->ReleasePrimitiveArrayCritical(jni, array, elements, JNI_ABORT);
}

static void put_array(JNIEnv *jni, dump_buffer *b, jarray array, jclass klass, const char *sig) {
    jsize n = (*jni)->GetArrayLength(jni, array);
    if (sig[1] == 'L' || sig[1] == '[') {
        put_u1(b, JVMPI_GC_OBJ_ARRAY_DUMP);
        put_pointer(b, jvmpi_id_of(array));
        put_u4(b, (uint32_t)n);
        jclass class_class = (*jni)->GetObjectClass(jni, klass);
        jmethodID component = (*jni)->GetMethodID(jni, class_class, "getComponentType", "()Ljava/lang/Class;");
        jobject element = component ? (*jni)->CallObjectMethod(jni, klass, component) : NULL;
        if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); element = NULL; }
        put_pointer(b, jvmpi_id_of(element));
        for (jsize i = 0; i < n; i++) {
            jobject e = (*jni)->GetObjectArrayElement(jni, (jobjectArray)array, i);
            put_pointer(b, jvmpi_id_of(e));
            if (e) (*jni)->DeleteLocalRef(jni, e);
        }
        return;
    }
    put_u1(b, JVMPI_GC_PRIM_ARRAY_DUMP);
    put_pointer(b, jvmpi_id_of(array));
    put_u4(b, (uint32_t)n);
    put_u1(b, (unsigned)jvmpi_kind_of_signature(sig));
    put_primitive_elements(jni, b, array, n, sig[1]);
}

/* OBJECT_DUMP: one record, at level 2's detail, for an instance or an
 * array. A Class object's CLASS_DUMP (constant pool, statics) is not built:
 * JVMPI_NOT_AVAILABLE. */
jint jvmpi_request_object_dump(JNIEnv *jni, jobjectID id) {
    jobject object = jvmpi_object_of(jni, id);
    if (object == NULL) return JVMPI_FAIL;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    jclass klass = (*jni)->GetObjectClass(jni, object);
    char *sig = NULL;
    jint result = JVMPI_FAIL;
    if (klass != NULL && (*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, klass, &sig, NULL) == JVMTI_ERROR_NONE) {
        dump_buffer b;
        memset(&b, 0, sizeof b);
        if (strcmp(sig, "Ljava/lang/Class;") == 0) result = JVMPI_NOT_AVAILABLE;
        else if (sig[0] == '[') put_array(jni, &b, (jarray)object, klass, sig);
        else put_instance(jni, &b, object, klass);
        if (result != JVMPI_NOT_AVAILABLE && !b.failed) {
            JVMPI_Event e = jvmpi_event(JVMPI_EVENT_OBJECT_DUMP | JVMPI_REQUESTED_EVENT, jni);
            e.u.object_dump.data_len = (jint)b.used;
            e.u.object_dump.data = b.bytes;
            jvmpi_notify(&e);
            result = JVMPI_SUCCESS;
        }
        free(b.bytes);
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    if (klass) (*jni)->DeleteLocalRef(jni, klass);
    (*jni)->DeleteLocalRef(jni, object);
    jvmpi_in_layer = was;
    return result;
}
