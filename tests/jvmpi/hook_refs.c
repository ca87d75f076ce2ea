/*
 * hook_refs: CLASS_LOAD_HOOK and the JNI global reference events, written
 * to the JVMPI specification alone.
 *
 * CLASS_LOAD_HOOK: every class's bytes pass by (counted; each must start
 * with 0xCAFEBABE); a class holding the string "JVMPI-ORIGINAL" gets it
 * replaced by "JVMPI-REPLACED" (same length), in a new buffer from malloc_f.
 * When JvmpiCalls$Late loads, it enables METHOD_ENTRY (the layer then
 * instruments the classes loaded so far: the replacement must survive it)
 * and counts entries of JvmpiCalls.text().
 * At JVM_INIT_DONE it makes and deletes a global and a weak global reference
 * to its thread's object and checks the four events.
 *
 * Options: out=FILE. Writes at JVM_SHUT_DOWN:
 *   hooks N bad_magic B replaced R
 *   globalref alloc SAME|DIFFERENT|NONE free SAME|NONE
 *   weakref alloc SAME|DIFFERENT|NONE free SAME|NONE
 *   text_entries N
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static long hooks, bad_magic, replaced, text_entries;
static jmethodID text_method;

/* What the reference events said, and what JNI returned. */
static struct ref_check { jobject ref; jobjectID object; jobject alloc_ref; jobjectID alloc_object; jobject free_ref; }
    strong, weak;

static const char original[] = "JVMPI-ORIGINAL", replacement[] = "JVMPI-REPLACED";

static void class_load_hook(JVMPI_Event *e) {
    unsigned char *data = e->u.class_load_hook.class_data;
    jint len = e->u.class_load_hook.class_data_len;
    jvmpi->RawMonitorEnter(lock);
    hooks++;
    if (len < 4 || data[0] != 0xCA || data[1] != 0xFE || data[2] != 0xBA || data[3] != 0xBE) bad_magic++;
    jvmpi->RawMonitorExit(lock);
    size_t n = strlen(original);
    for (jint i = 0; i + (jint)n <= len; i++) {
        if (memcmp(data + i, original, n) != 0) continue;
        unsigned char *copy = e->u.class_load_hook.malloc_f((unsigned int)len);
        if (copy == NULL) return;
        memcpy(copy, data, (size_t)len);
        memcpy(copy + i, replacement, n);
        e->u.class_load_hook.new_class_data = copy;
        e->u.class_load_hook.new_class_data_len = len;
        replaced++;
        return;
    }
}

static void class_load(JVMPI_Event *e) {
    const char *name = e->u.class_load.class_name;
    if (strcmp(name, "JvmpiCalls") == 0)
        for (jint i = 0; i < e->u.class_load.num_methods; i++)
            if (strcmp(e->u.class_load.methods[i].method_name, "text") == 0)
                text_method = e->u.class_load.methods[i].method_id;
    if (strcmp(name, "JvmpiCalls$Late") == 0) jvmpi->EnableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL);
}

static void reference_event(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    switch (e->event_type) {
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
        if (e->u.jni_globalref_alloc.obj_id == strong.object || strong.alloc_ref == NULL) {
            strong.alloc_ref = e->u.jni_globalref_alloc.ref_id;
            strong.alloc_object = e->u.jni_globalref_alloc.obj_id;
        }
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_FREE:
        if (e->u.jni_globalref_free.ref_id == strong.ref) strong.free_ref = e->u.jni_globalref_free.ref_id;
        break;
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC:
        if (e->u.jni_globalref_alloc.obj_id == weak.object || weak.alloc_ref == NULL) {
            weak.alloc_ref = e->u.jni_globalref_alloc.ref_id;
            weak.alloc_object = e->u.jni_globalref_alloc.obj_id;
        }
        break;
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE:
        if (e->u.jni_globalref_free.ref_id == weak.ref) weak.free_ref = e->u.jni_globalref_free.ref_id;
        break;
    default: break;
    }
    jvmpi->RawMonitorExit(lock);
}

/* On the thread of JVM_INIT_DONE: references to its own Thread object. */
static void make_references(JNIEnv *env) {
    jvmpi->DisableGC();
    jobjectID id = jvmpi->GetThreadObject(env);
    jobject thread = jvmpi->jobjectID2jobject(id);
    strong.object = weak.object = id;
    jvmpi->EnableGC();
    if (thread == NULL) return;
    strong.ref = (*env)->NewGlobalRef(env, thread);
    (*env)->DeleteGlobalRef(env, strong.ref);
    weak.ref = (*env)->NewWeakGlobalRef(env, thread);
    (*env)->DeleteWeakGlobalRef(env, weak.ref);
    (*env)->DeleteLocalRef(env, thread);
}

static const char *alloc_verdict(const struct ref_check *c) {
    if (c->alloc_ref == NULL) return "NONE";
    return c->alloc_ref == c->ref && c->alloc_object == c->object ? "SAME" : "DIFFERENT";
}

static void shut_down(void) {
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "hooks %s bad_magic %ld replaced %ld\n", hooks > 100 ? "MANY" : "FEW", bad_magic, replaced);
    fprintf(out, "globalref alloc %s free %s\n", alloc_verdict(&strong), strong.free_ref ? "SAME" : "NONE");
    fprintf(out, "weakref alloc %s free %s\n", alloc_verdict(&weak), weak.free_ref ? "SAME" : "NONE");
    fprintf(out, "text_entries %ld\n", text_entries);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD_HOOK: class_load_hook(e); break;
    case JVMPI_EVENT_CLASS_LOAD:      class_load(e); break;
    case JVMPI_EVENT_METHOD_ENTRY:
        if (e->u.method.method_id == text_method) text_entries++;
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
    case JVMPI_EVENT_JNI_GLOBALREF_FREE:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE: reference_event(e); break;
    case JVMPI_EVENT_JVM_INIT_DONE:   make_references(e->env_id); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:   shut_down(); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1_1) < 0) return JNI_ERR;
    if (options == NULL || strncmp(options, "out=", 4) != 0 || (out = fopen(options + 4, "w")) == NULL) {
        fprintf(stderr, "hook_refs: option out=FILE\n");
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_hook_refs");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD_HOOK, JVMPI_EVENT_CLASS_LOAD,
                                   JVMPI_EVENT_JNI_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_GLOBALREF_FREE,
                                   JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE,
                                   JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
