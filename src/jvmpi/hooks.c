/*
 * hooks: the two JVMPI events that come from neither the fan-out nor the
 * tracker.
 *
 * CLASS_LOAD_HOOK runs in a JVMTI environment of its own that cannot
 * retransform: HotSpot keeps the bytes such an environment produced and
 * starts every later retransformation (the tracker's, for METHOD_ENTRY or
 * OBJECT_ALLOC) from them, so the agent sees each class once, when it
 * loads, and its changes stay under the layer's.
 *
 * JNI_GLOBALREF_ALLOC/FREE and JNI_WEAK_GLOBALREF_ALLOC/FREE: JVMTI has no
 * such events, so the layer puts its own New/Delete(Weak)GlobalRef in the
 * JNI function table (JVMTI SetJNIFunctionTable), which every native
 * library, the agent's included, calls through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

/* The hooks: CLASS_LOAD_HOOK's environment and the JNI function tables. */
typedef struct hook_state {
    jvmtiEnv *hook_env;                  /* the environment of CLASS_LOAD_HOOK */
    const struct JNINativeInterface_ *real_jni;     /* the JVM's table, kept whole */
    struct JNINativeInterface_ ours;
} hook_state;

static hook_state hooks;

/* malloc_f of the event: the agent's new class bytes, freed by the layer. */
static void *class_bytes_alloc(unsigned int size) { return malloc(size ? size : 1); }

static void JNICALL on_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
                                       const char *name, jobject domain, jint len, const unsigned char *data,
                                       jint *new_len, unsigned char **new_data) {
    (void)redefined; (void)loader; (void)name; (void)domain;
    if (!jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) || jvmpi_in_layer) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_CLASS_LOAD_HOOK, jni);
    e.u.class_load_hook.class_data = (unsigned char *)data;
    e.u.class_load_hook.class_data_len = len;
    e.u.class_load_hook.new_class_data = (unsigned char *)data;
    e.u.class_load_hook.new_class_data_len = len;
    e.u.class_load_hook.malloc_f = class_bytes_alloc;
    jvmpi_notify(&e);
    unsigned char *agents = e.u.class_load_hook.new_class_data;
    jint agents_len = e.u.class_load_hook.new_class_data_len;
    if (agents == NULL || agents == data || agents_len <= 0) return;
    unsigned char *mem = NULL;
    if (!jvmpi_failed((*jvmti)->Allocate(jvmti, agents_len, &mem), "Allocate")) {
        memcpy(mem, agents, (size_t)agents_len);
        *new_len = agents_len;
        *new_data = mem;
    }
    free(agents);
}

int jvmpi_hooks_setup(JavaVM *vm) {
    if ((*vm)->GetEnv(vm, (void **)&hooks.hook_env, JVMTI_VERSION_11) != JNI_OK) {
        fprintf(stderr, "jvmpi: no second JVMTI environment for CLASS_LOAD_HOOK\n");
        return -1;
    }
    jvmtiEventCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.ClassFileLoadHook = on_class_file_load;
    return jvmpi_failed((*hooks.hook_env)->SetEventCallbacks(hooks.hook_env, &callbacks, sizeof callbacks),
                        "SetEventCallbacks") ? -1 : 0;
}

jint jvmpi_hooks_switch_class_hook(int on) {
    jvmtiError err = (*hooks.hook_env)->SetEventNotificationMode(hooks.hook_env, on ? JVMTI_ENABLE : JVMTI_DISABLE,
                                                           JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
    return jvmpi_failed(err, "SetEventNotificationMode(ClassFileLoadHook)") ? JVMPI_FAIL : JVMPI_SUCCESS;
}

/* ------------------------------------------------------------ JNI global references */


/* The layer's own references (its threads' records, under jvmpi_in_layer)
 * are not the program's. */
static void post_ref(JNIEnv *jni, jint type, jobject object, jobject ref) {
    if (!jvmpi_enabled(type) || jvmpi_in_layer) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) == NULL) {
        jvmpi_in_layer = 0;
        return;
    }
    JVMPI_Event e = jvmpi_event(type, jni);
    if (type == JVMPI_EVENT_JNI_GLOBALREF_ALLOC || type == JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC) {
        e.u.jni_globalref_alloc.obj_id = jvmpi_id_of(object);
        e.u.jni_globalref_alloc.ref_id = ref;
    } else {
        e.u.jni_globalref_free.ref_id = ref;
    }
    jvmpi_notify(&e);
    jvmpi_in_layer = 0;
}

static jobject JNICALL new_global_ref(JNIEnv *jni, jobject object) {
    jobject ref = hooks.real_jni->NewGlobalRef(jni, object);
    if (ref != NULL) post_ref(jni, JVMPI_EVENT_JNI_GLOBALREF_ALLOC, object, ref);
    return ref;
}

static void JNICALL delete_global_ref(JNIEnv *jni, jobject ref) {
    if (ref != NULL) post_ref(jni, JVMPI_EVENT_JNI_GLOBALREF_FREE, NULL, ref);
    hooks.real_jni->DeleteGlobalRef(jni, ref);
}

static jweak JNICALL new_weak_global_ref(JNIEnv *jni, jobject object) {
    jweak ref = hooks.real_jni->NewWeakGlobalRef(jni, object);
    if (ref != NULL) post_ref(jni, JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC, object, ref);
    return ref;
}

static void JNICALL delete_weak_global_ref(JNIEnv *jni, jweak ref) {
    if (ref != NULL) post_ref(jni, JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE, NULL, ref);
    hooks.real_jni->DeleteWeakGlobalRef(jni, ref);
}

/* Once, the first time a reference event is enabled in the live phase
 * (the table can be changed only then); the functions post nothing while
 * their events are disabled. */
int jvmpi_hooks_wrap_jni(void) {
    static atomic_int wrapped;
    if (!atomic_load(&jvmpi_live) || atomic_exchange(&wrapped, 1)) return 0;
    jniNativeInterface *table = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetJNIFunctionTable(jvmpi_jvmti, &table), "GetJNIFunctionTable")) {
        atomic_store(&wrapped, 0);
        return -1;
    }
    static struct JNINativeInterface_ real_copy;
    real_copy = *table;
    hooks.real_jni = &real_copy;
    hooks.ours = *table;
    hooks.ours.NewGlobalRef = new_global_ref;
    hooks.ours.DeleteGlobalRef = delete_global_ref;
    hooks.ours.NewWeakGlobalRef = new_weak_global_ref;
    hooks.ours.DeleteWeakGlobalRef = delete_weak_global_ref;
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)table);
    return jvmpi_failed((*jvmpi_jvmti)->SetJNIFunctionTable(jvmpi_jvmti, &hooks.ours), "SetJNIFunctionTable") ? -1 : 0;
}
