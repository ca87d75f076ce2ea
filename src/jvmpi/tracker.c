/*
 * tracker: METHOD_ENTRY/EXIT and OBJECT_ALLOC through the project's
 * class-file rewriter (src/bci), as cpu=times and heap=sites get their
 * calls: every class is rewritten as it loads, and those loaded before are
 * retransformed, so that
 *   - each method calls java.lang.JvmpiTracker.methodEntry(id) first and
 *     methodExit(id) on every way out (exceptions included);
 *   - java.lang.Object.<init> calls objectInit(this), and every array
 *     allocation is followed by newArray(array) (allocs.c posts those).
 * The method natives, here, turn the id into the method's jmethodID (asked
 * of JVMTI once per method, from the instrumented frame) and post the event
 * on the calling thread.
 *
 * Classes get the calls only once an agent enables an event that needs them;
 * after it disables them, the calls stay and return at once in Java.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/class_rewrite.h"
#include "../agent/events.h"
#include "../bci/bci.h"
#include "code_maps.h"
#include "layer.h"

#define TRACKER "java/lang/JvmpiTracker"

/* build/jvmpi_tracker_class.c, made from src/jvmpi/java by the Makefile */
extern const unsigned char jvmpi_tracker_class[];
extern const unsigned jvmpi_tracker_class_len;

#define CHUNK_BITS 12
#define CHUNKS     4096
typedef _Atomic(jmethodID) method_slot;

static struct {
    atomic_int ready;            /* the tracker is defined: the hook instruments */
    atomic_uint what;            /* BCI_* the hook inserts: what was ever wanted */
    atomic_int next_id;          /* method ids handed to the rewriter */
    /* Method id -> jmethodID, in chunks that never move (read without a lock). */
    _Atomic(method_slot *) method_chunks[CHUNKS];
    unsigned   retransformed;    /* BCI_* the loaded classes were last given */
    int        can_get_receiver; /* can_access_local_variables: METHOD_ENTRY2's object */
    int        hook_wanted;
    jclass     tracker;          /* global reference */
    jfieldID   engaged;
    jmethodID  entry_native, exit_native;
} method_ids;

/* Set while the layer itself runs Java code or the agent's handler runs:
 * their method calls are not the program's and must not recurse. */
_Thread_local int jvmpi_in_layer __attribute__((tls_model("initial-exec")));
_Thread_local int jvmpi_in_tracker_call __attribute__((tls_model("initial-exec")));

static int is_tracker_class(const char *name) {
    return strcmp(name, TRACKER) == 0;
}

int jvmpi_methods_is_tracker(jmethodID method) {
    jclass klass = NULL;
    if (method == NULL || method_ids.tracker == NULL ||
        (*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &klass) != JVMTI_ERROR_NONE)
        return 0;
    JNIEnv *jni = NULL;
    (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2);
    int same = jni != NULL && (*jni)->IsSameObject(jni, klass, method_ids.tracker);
    if (jni != NULL) (*jni)->DeleteLocalRef(jni, klass);
    return same;
}

static int32_t next_method_id(void *context, const bci_method_info *m) {
    (void)context; (void)m;
    int32_t id = atomic_fetch_add(&method_ids.next_id, 1) + 1;
    return id < CHUNKS << CHUNK_BITS ? id : -1;     /* out of ids: the method is left alone */
}

static void JNICALL on_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
                                       const char *name, jobject domain, jint len, const unsigned char *data,
                                       jint *new_len, unsigned char **new_data) {
    (void)domain;
    /* any agent's retransformation or redefinition: line tables change */
    if (redefined != NULL) {
        jvmpi_method_facts_forget();
        jvmpi_instructions_redefined();
    }
    if (!atomic_load(&method_ids.ready) || name == NULL || is_tracker_class(name)) return;
    unsigned what = atomic_load(&method_ids.what);
    /* objectInit only in Object.<init>; newArray everywhere else */
    what &= strcmp(name, "java/lang/Object") == 0 ? (BCI_ENTRY_EXIT | BCI_OBJECT_INIT) : ~(unsigned)BCI_OBJECT_INIT;
    if (what == 0) return;
    /* INSTRUCTION_START posts the class file's offsets: where the code went */
    jvmpi_layouts *layouts = jvmpi_code_maps_begin();
    bci_config c = { what, TRACKER, next_method_id, layouts, layouts != NULL ? jvmpi_code_maps_told : NULL };
    int rewritten = class_rewrite_in_hook(jvmti, &c, name, data, len, new_len, new_data, "jvmpi", 1);
    jvmpi_code_maps_end(jni, layouts, loader, rewritten == 1);
}

int jvmpi_methods_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps) {
    if (!potential->can_retransform_classes || !potential->can_generate_all_class_hook_events) {
        fprintf(stderr, "jvmpi: this JVM cannot retransform classes: METHOD_ENTRY/EXIT and OBJECT_ALLOC "
                        "need it\n");
        return -1;
    }
    caps->can_retransform_classes = 1;
    caps->can_generate_all_class_hook_events = 1;
    return 0;
}

/* After JVM_OnLoad, still in the OnLoad phase: only an agent that enabled
 * METHOD_ENTRY2 there pays for can_access_local_variables (HotSpot's JIT
 * then keeps every local, escape analysis off). One enabling it later gets
 * NULL objects: listed in the README. */
void jvmpi_methods_after_onload(void) {
    if (!jvmpi_enabled(JVMPI_EVENT_METHOD_ENTRY2)) return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_access_local_variables = 1;
    if ((*jvmpi_jvmti)->AddCapabilities(jvmpi_jvmti, &caps) == JVMTI_ERROR_NONE) method_ids.can_get_receiver = 1;
    else fprintf(stderr, "jvmpi: this JVM cannot read local variables: METHOD_ENTRY2 carries no object\n");
}

int jvmpi_methods_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, EVENT_FN(on_class_file_load));
}

/* ------------------------------------------------------------ the natives */

static method_slot *chunk_for(int32_t id) {
    size_t c = (size_t)id >> CHUNK_BITS;
    method_slot *chunk = atomic_load(&method_ids.method_chunks[c]);
    if (chunk != NULL) return chunk;
    method_slot *fresh = calloc((size_t)1 << CHUNK_BITS, sizeof *fresh);
    if (fresh == NULL) return NULL;
    if (!atomic_compare_exchange_strong(&method_ids.method_chunks[c], &chunk, fresh)) { free(fresh); return chunk; }
    return fresh;
}

/* The instrumented method is two frames down: the native, methodEntry/Exit. */
static jmethodID method_of(int32_t id) {
    if (id < 0 || id >= CHUNKS << CHUNK_BITS) return NULL;
    method_slot *chunk = chunk_for(id);
    if (chunk == NULL) return NULL;
    method_slot *slot = &chunk[id & ((1 << CHUNK_BITS) - 1)];
    jmethodID method = atomic_load_explicit(slot, memory_order_relaxed);
    if (method != NULL) return method;
    jlocation at = 0;
    if ((*jvmpi_jvmti)->GetFrameLocation(jvmpi_jvmti, NULL, 2, &method, &at) != JVMTI_ERROR_NONE) return NULL;
    atomic_store_explicit(slot, method, memory_order_relaxed);   /* racing threads store the same */
    return method;
}

/* METHOD_ENTRY2's object: the receiver, local 0 of the instrumented frame
 * (NULL for a static method). */
static jobjectID receiver_of(JNIEnv *jni, jmethodID method) {
    jint modifiers = 0;
    if (!method_ids.can_get_receiver ||
        (*jvmpi_jvmti)->GetMethodModifiers(jvmpi_jvmti, method, &modifiers) != JVMTI_ERROR_NONE ||
        (modifiers & 0x0008))
        return NULL;
    jobject self = NULL;
    if ((*jvmpi_jvmti)->GetLocalInstance(jvmpi_jvmti, NULL, 2, &self) != JVMTI_ERROR_NONE) return NULL;
    /* a constructor's receiver gets its id before Object.<init>, where the
     * tracker's call then meets it */
    jvmpi_allocs_named_early();
    jobjectID id = jvmpi_id_of(self);
    (*jni)->DeleteLocalRef(jni, self);
    return id;
}

static void post_method(JNIEnv *jni, jint type, jint id) {
    int wanted = jvmpi_enabled(type);
    int entry2 = type == JVMPI_EVENT_METHOD_ENTRY && jvmpi_enabled(JVMPI_EVENT_METHOD_ENTRY2);
    int stepping = type == JVMPI_EVENT_METHOD_ENTRY && jvmpi_instructions_watch_entries();
    if (jvmpi_in_layer || (!wanted && !entry2 && !stepping)) return;
    jvmpi_in_layer = 1;
    jvmpi_in_tracker_call = 1;
    jmethodID method = method_of(id);
    jvmpi_thread *t = method != NULL ? jvmpi_thread_here(jni) : NULL;
    if (t != NULL && stepping) jvmpi_instructions_entered(jni, t, method);
    if (t != NULL && (wanted || entry2)) {
        /* Only the fields these events have are set: zeroing the whole
         * union (jvmpi_event) and copying it out was a third of the
         * layer's time per call (the copy's loads stall on the `rep stos`
         * stores just before). */
        JVMPI_Event e;
        e.env_id = jni;
        if (wanted) {
            e.event_type = type;
            e.u.method.method_id = method;
            jvmpi_notify(&e);
        }
        if (entry2) {
            e.event_type = JVMPI_EVENT_METHOD_ENTRY2;
            e.u.method_entry2.method_id = method;
            e.u.method_entry2.obj_id = receiver_of(jni, method);
            jvmpi_notify(&e);
        }
    }
    jvmpi_in_tracker_call = 0;
    jvmpi_in_layer = 0;
}

JNIEXPORT void JNICALL Java_java_lang_JvmpiTracker_entry(JNIEnv *jni, jclass k, jint id) {
    (void)k;
    post_method(jni, JVMPI_EVENT_METHOD_ENTRY, id);
}

JNIEXPORT void JNICALL Java_java_lang_JvmpiTracker_exit(JNIEnv *jni, jclass k, jint id) {
    (void)k;
    post_method(jni, JVMPI_EVENT_METHOD_EXIT, id);
}

/* ------------------------------------------------------------ switching */

/* HotSpot finds the natives by name in the agent libraries, running Java
 * code to look: call each once now, before any class is instrumented, so
 * that the lookup never happens inside an instrumented call. */
static int bind_natives(JNIEnv *jni, jclass k) {
    static const struct { const char *name, *sig; } natives[] = {
        { "entry", "(I)V" }, { "exit", "(I)V" }, { "allocated", "(Ljava/lang/Object;)V" } };
    jvmpi_in_layer = 1;
    int ok = 1;
    for (size_t i = 0; i < sizeof natives / sizeof natives[0] && ok; i++) {
        jmethodID m = (*jni)->GetStaticMethodID(jni, k, natives[i].name, natives[i].sig);
        if (m != NULL && i < 2) (*jni)->CallStaticVoidMethod(jni, k, m, (jint)-1);
        if (m != NULL && i == 2) (*jni)->CallStaticVoidMethod(jni, k, m, NULL);
        if (m == NULL || (*jni)->ExceptionCheck(jni)) {
            fprintf(stderr, "jvmpi: the natives of " TRACKER " were not found (is libjvmpi.so loaded with "
                            "-agentpath?): METHOD_ENTRY/EXIT and OBJECT_ALLOC cannot be posted\n");
            if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
            ok = 0;
        }
    }
    jvmpi_in_layer = 0;
    return ok ? 0 : -1;
}

static int define_tracker(JNIEnv *jni) {
    jclass k = (*jni)->DefineClass(jni, TRACKER, NULL, (const jbyte *)jvmpi_tracker_class,
                                   (jsize)jvmpi_tracker_class_len);
    jfieldID engaged = k ? (*jni)->GetStaticFieldID(jni, k, "engaged", "I") : NULL;  /* runs <clinit> */
    jclass global = engaged ? (*jni)->NewGlobalRef(jni, k) : NULL;
    if (global == NULL) {
        fprintf(stderr, "jvmpi: defining " TRACKER " failed: METHOD_ENTRY/EXIT and OBJECT_ALLOC cannot be "
                        "posted\n");
        if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionDescribe(jni); (*jni)->ExceptionClear(jni); }
        return -1;
    }
    method_ids.engaged = engaged;
    method_ids.tracker = global;
    return bind_natives(jni, k);
}

static void retransform_loaded(JNIEnv *jni) {
    jint n = 0;
    jclass *classes = NULL;
    if (class_modifiable(jvmpi_jvmti, jni, method_ids.tracker, &classes, &n) != 0) return;
    class_retransform(jvmpi_jvmti, classes, n, "jvmpi", 1);
    for (jint i = 0; i < n; i++) (*jni)->DeleteLocalRef(jni, classes[i]);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)classes);
}

/* The tracker's switch (JvmpiTracker.engaged) for the events enabled now. */
static int engaged_bits(void) {
    /* INSTRUCTION_START watches the entries too (instructions.c: hidden steps) */
    return (jvmpi_enabled(JVMPI_EVENT_METHOD_ENTRY) || jvmpi_enabled(JVMPI_EVENT_METHOD_ENTRY2) ||
            jvmpi_instructions_watch_entries() ? 1 : 0) | (jvmpi_enabled(JVMPI_EVENT_METHOD_EXIT) ? 4 : 0) |
           (jvmpi_enabled(JVMPI_EVENT_OBJECT_ALLOC) ? 8 : 0);
}

/* Give the loaded classes the calls enabled events need (once per kind of
 * call: they stay), and set the tracker's switch. Agents may switch events
 * on several threads at once: one applies at a time. */
static void apply_locked(JNIEnv *jni);

static void apply(JNIEnv *jni) {
    static pthread_mutex_t applying = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&applying);
    apply_locked(jni);
    pthread_mutex_unlock(&applying);
}

static void apply_locked(JNIEnv *jni) {
    int bits = engaged_bits();
    unsigned want = ((bits & 5) ? BCI_ENTRY_EXIT : 0u) | ((bits & 8) ? (BCI_NEWARRAY | BCI_OBJECT_INIT) : 0u);
    atomic_fetch_or(&method_ids.what, want);
    if (want != 0 && !method_ids.hook_wanted) {
        if (events_want(jvmpi_jvmti, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK) != 0) return;
        method_ids.hook_wanted = 1;
        jvmpi_method_facts_watch();
    }
    unsigned what = atomic_load(&method_ids.what);
    if (what != method_ids.retransformed) {
        method_ids.retransformed = what;
        int was = jvmpi_in_layer;
        jvmpi_in_layer = 1;
        retransform_loaded(jni);
        jvmpi_method_facts_forget();    /* again: a table read during it may be the old one's */
        jvmpi_in_layer = was;
    }
    (*jni)->SetStaticIntField(jni, method_ids.tracker, method_ids.engaged, bits);
}

int jvmpi_methods_start(JNIEnv *jni) {
    if (define_tracker(jni) != 0) return -1;
    atomic_store(&method_ids.ready, 1);
    apply(jni);
    return 0;
}

void jvmpi_methods_switch(void) {
    JNIEnv *jni = NULL;
    if (!atomic_load(&method_ids.ready) || (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) != JNI_OK) return;
    apply(jni);
}
