/*
 * dumps: the dumps an agent requests, in the specification's byte formats
 * (u1 record types, u4 big-endian, ids and JNIEnvs as native pointers).
 *
 * MONITOR_DUMP: every Java monitor a known thread owns or contends for
 * (JVMTI GetObjectMonitorUsage: owner, entry count, waiters) and every raw
 * monitor of the agent, with each thread's trace and status; taken while
 * the program runs (not with the threads stopped, as JVMPI did).
 * OBJECT_DUMP: one instance or array record with its values, read through
 * JNI; a Class object's CLASS_DUMP comes from heap_dumps.c's walk.
 * HEAP_DUMP: heap_dumps.c.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_buffer.h"
#include "layer.h"

/* ------------------------------------------------------------ monitor dump */

#define DUMP_THREADS 4096
#define TRACE_DEPTH 16

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
    /* Monitors only waited on (JDK 23 and later do not give them above). */
    jobject waited[64];
    int n_waited = jvmpi_monitors_waited_on(jni, (const JNIEnv *const *)ts->envs, ts->n, waited, 64);
    for (int i = 0; i < n_waited; i++) n = add_unique(jni, objects, n, max, waited[i]);
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

JVMPI_CallTrace *jvmpi_thread_traces(JNIEnv *const *envs, int n, jint depth, jint **status, jint **skipped) {
    JVMPI_CallTrace *traces = calloc((size_t)n + 1, sizeof *traces);
    JVMPI_CallFrame *frames = calloc((size_t)n * (size_t)depth + 1, sizeof *frames);
    *status = calloc((size_t)n + 1, sizeof **status);
    jint *left_out = calloc((size_t)n + 1, sizeof *left_out);
    if (traces == NULL || frames == NULL || *status == NULL || left_out == NULL) {
        free(traces); free(frames); free(*status); free(left_out);
        *status = NULL;
        return NULL;
    }
    traces[0].frames = frames;                       /* kept for jvmpi_free_traces, even if n is 0 */
    for (int i = 0; i < n; i++) {
        traces[i].env_id = envs[i];
        traces[i].frames = frames + (size_t)i * (size_t)depth;
        left_out[i] = jvmpi_call_trace_skipping(&traces[i], depth);
        (*status)[i] = jvmpi_thread_status(envs[i]);
    }
    if (skipped != NULL) *skipped = left_out;
    else free(left_out);
    return traces;
}

void jvmpi_free_traces(JVMPI_CallTrace *traces, jint *status, jint *skipped) {
    if (traces != NULL) free(traces[0].frames);
    free(traces);
    free(status);
    free(skipped);
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
    JVMPI_CallTrace *traces = jvmpi_thread_traces(envs, ts.n, TRACE_DEPTH, &status, NULL);
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
    jvmpi_free_traces(traces, status, NULL);
    free(b.bytes);
    (*jni)->PopLocalFrame(jni, NULL);
    pthread_mutex_unlock(&dumping);
    return result;
}

/* ------------------------------------------------------------ object dump */

/* How an instance's values are written: every value (OBJECT_DUMP), or as a
 * heap dump describes an object whose references JVMTI's walk does not
 * follow (references null, primitives only at level 2). */
enum values_mode { ALL_VALUES, UNFOLLOWED_LEVEL_1, UNFOLLOWED_LEVEL_2 };

/* A field value as the dump formats want it: primitives big-endian in
 * their size, references as ids. */
static void put_value(JNIEnv *jni, dump_buffer *b, jobject object, jfieldID field, char type, enum values_mode mode) {
    uint64_t bits = 0;
    int size = 0;
    int reference = type == 'L' || type == '[';
    if (mode == UNFOLLOWED_LEVEL_1 && !reference) return;
    if (mode != ALL_VALUES && reference) { put_pointer(b, NULL); return; }
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
    put_big_endian(b, bits, size);
}

/* The instance fields' values: the object's class first, then its
 * superclasses (the specification's order), each in declaration order. */
static void put_instance_fields(JNIEnv *jni, dump_buffer *values, jobject object, jclass klass, enum values_mode mode) {
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
                    put_value(jni, values, object, fields[i], sig[0], mode);
                (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
            }
            (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)fields);
        }
        jclass super = (*jni)->GetSuperclass(jni, k);
        (*jni)->DeleteLocalRef(jni, k);
        k = super;
    }
}

static void put_instance_values(JNIEnv *jni, dump_buffer *b, jobject object, jclass klass, enum values_mode mode) {
    dump_buffer values;
    memset(&values, 0, sizeof values);
    put_instance_fields(jni, &values, object, klass, mode);
    put_u1(b, JVMPI_GC_INSTANCE_DUMP);
    put_pointer(b, jvmpi_id_of(object));
    put_pointer(b, jvmpi_id_of(klass));
    put_u4(b, (uint32_t)values.used);
    if (values.used) append(b, values.bytes, values.used);
    b->failed |= values.failed;
    free(values.bytes);
}

static void put_instance(JNIEnv *jni, dump_buffer *b, jobject object, jclass klass) {
    put_instance_values(jni, b, object, klass, ALL_VALUES);
}

void jvmpi_put_unfollowed_instance(JNIEnv *jni, dump_buffer *b, jobject object, jint level) {
    jclass klass = (*jni)->GetObjectClass(jni, object);
    if (klass == NULL) return;
    put_instance_values(jni, b, object, klass, level == JVMPI_DUMP_LEVEL_1 ? UNFOLLOWED_LEVEL_1 : UNFOLLOWED_LEVEL_2);
    (*jni)->DeleteLocalRef(jni, klass);
}

/* Primitive array elements, each big-endian in its size. */
static void put_primitive_elements(JNIEnv *jni, dump_buffer *b, jarray array, jsize n, char type) {
    int size = type == 'Z' || type == 'B' ? 1 : type == 'C' || type == 'S' ? 2 : type == 'I' || type == 'F' ? 4 : 8;
    void *elements = (*jni)->GetPrimitiveArrayCritical(jni, array, NULL);
    if (elements == NULL) { b->failed = 1; return; }
    put_elements(b, elements, (size_t)n, size);
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

/* OBJECT_DUMP: one record, at level 2's detail, for an instance, an array
 * or a Class object (its CLASS_DUMP). */
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
        int made = 1;
        if (strcmp(sig, "Ljava/lang/Class;") == 0) made = jvmpi_class_dump(jni, (jclass)object, &b) == JVMPI_SUCCESS;
        else if (sig[0] == '[') put_array(jni, &b, (jarray)object, klass, sig);
        else put_instance(jni, &b, object, klass);
        if (made && !b.failed) {
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
