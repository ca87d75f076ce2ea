/*
 * translate: JVMTI events, through the project's fan-out (src/agent/events.c),
 * turned into the JVMPI events the agent enabled. Each JVMPI event turns
 * its JVMTI sources on when enabled and off when the last one needing them
 * is disabled (events_want counts).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../agent/events.h"
#include "layer.h"

static JNIEnv *jni_here(void);

/* ------------------------------------------------------------ classes */

/* The classes the agent was told of. */
typedef struct class_announcements {
    /* Ids of the classes announced, so each gets one CLASS_LOAD (the sweep of
     * loaded classes and ClassPrepare may meet one class both). */
    pthread_mutex_t lock;
    jobjectID      *slot;
    size_t          cap, used;
    /* The agent has had CLASS_LOAD on at some time: it knows classes by
     * their CLASS_LOADs, and a heap dump must name none it has not had. */
    atomic_int      class_load_was_on;
} class_announcements;

static class_announcements announced = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define GONE ((jobjectID)(intptr_t)1)   /* a forgotten class's slot: never an id (ids are multiples of 8) */

static size_t slot_of(jobjectID id, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static int grow_announced(void) {
    size_t cap = announced.cap ? announced.cap * 2 : 4096;
    jobjectID *slot = calloc(cap, sizeof *slot);
    if (slot == NULL) return -1;
    announced.used = 0;
    for (size_t i = 0; i < announced.cap; i++) {
        if (announced.slot[i] == NULL || announced.slot[i] == GONE) continue;
        announced.used++;
        size_t j = slot_of(announced.slot[i], cap);
        while (slot[j] != NULL) j = (j + 1) & (cap - 1);
        slot[j] = announced.slot[i];
    }
    free(announced.slot);
    announced.slot = slot;
    announced.cap = cap;
    return 0;
}

/* 1 if the class was not announced before (and now counts as announced). */
static int first_announcement(jobjectID id) {
    int first = 0;
    pthread_mutex_lock(&announced.lock);
    if ((announced.used + 1) * 2 <= announced.cap || grow_announced() == 0) {
        size_t j = slot_of(id, announced.cap);
        while (announced.slot[j] != NULL && announced.slot[j] != id) j = (j + 1) & (announced.cap - 1);
        if (announced.slot[j] == NULL) {
            announced.slot[j] = id;
            announced.used++;
            first = 1;
        }
    }
    pthread_mutex_unlock(&announced.lock);
    return first;
}

/* A freed class leaves the set (a tombstone keeps the probe chains). */

int jvmpi_forget_class(jobjectID id) {
    int was = 0;
    pthread_mutex_lock(&announced.lock);
    if (announced.cap > 0) {
        size_t j = slot_of(id, announced.cap);
        while (announced.slot[j] != NULL && announced.slot[j] != id) j = (j + 1) & (announced.cap - 1);
        if (announced.slot[j] == id) {
            announced.slot[j] = GONE;
            was = 1;
        }
    }
    pthread_mutex_unlock(&announced.lock);
    return was;
}

/* "Ljava/lang/Object;" -> "java/lang/Object" (JVMPI's internal form);
 * an array class keeps its descriptor ("[I"). In place. */
static char *internal_name(char *signature) {
    size_t n = strlen(signature);
    if (signature[0] == 'L' && n >= 2 && signature[n - 1] == ';') {
        signature[n - 1] = '\0';
        return signature + 1;
    }
    return signature;
}

static void line_range(jmethodID method, jint *first, jint *last) {
    jint n = 0;
    jvmtiLineNumberEntry *table = NULL;
    *first = *last = -1;
    if ((*jvmpi_jvmti)->GetLineNumberTable(jvmpi_jvmti, method, &n, &table) != JVMTI_ERROR_NONE) return;
    for (jint i = 0; i < n; i++) {
        if (*first < 0 || table[i].line_number < *first) *first = table[i].line_number;
        if (table[i].line_number > *last) *last = table[i].line_number;
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)table);
}

/* What a CLASS_LOAD carries, in memory the layer frees after NotifyEvent. */
typedef struct class_info {
    char         *signature, *source;
    jint          interfaces, n_methods, n_fields, n_statics, n_instances;
    JVMPI_Method *methods;
    JVMPI_Field  *statics, *instances;
} class_info;

static void free_class_info(class_info *c) {
    for (jint i = 0; i < c->n_methods; i++) {
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->methods[i].method_name);
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->methods[i].method_signature);
    }
    for (jint i = 0; i < c->n_statics; i++) {
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->statics[i].field_name);
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->statics[i].field_signature);
    }
    for (jint i = 0; i < c->n_instances; i++) {
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->instances[i].field_name);
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->instances[i].field_signature);
    }
    free(c->methods);
    free(c->statics);
    free(c->instances);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->signature);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)c->source);
}

static int collect_methods(jclass klass, class_info *c) {
    jint n = 0;
    jmethodID *ids = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetClassMethods(jvmpi_jvmti, klass, &n, &ids), "GetClassMethods")) return -1;
    c->methods = calloc((size_t)n + 1, sizeof *c->methods);
    if (c->methods == NULL) { (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)ids); return -1; }
    for (jint i = 0; i < n; i++) {
        JVMPI_Method *m = &c->methods[c->n_methods];
        if ((*jvmpi_jvmti)->GetMethodName(jvmpi_jvmti, ids[i], &m->method_name, &m->method_signature, NULL)
            != JVMTI_ERROR_NONE) continue;
        m->method_id = ids[i];
        line_range(ids[i], &m->start_lineno, &m->end_lineno);
        c->n_methods++;
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)ids);
    return 0;
}

static int collect_fields(jclass klass, class_info *c) {
    jint n = 0;
    jfieldID *ids = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetClassFields(jvmpi_jvmti, klass, &n, &ids), "GetClassFields")) return -1;
    c->statics = calloc((size_t)n + 1, sizeof *c->statics);
    c->instances = calloc((size_t)n + 1, sizeof *c->instances);
    for (jint i = 0; c->statics && c->instances && i < n; i++) {
        jint mods = 0;
        char *name = NULL, *sig = NULL;
        if ((*jvmpi_jvmti)->GetFieldModifiers(jvmpi_jvmti, klass, ids[i], &mods) != JVMTI_ERROR_NONE ||
            (*jvmpi_jvmti)->GetFieldName(jvmpi_jvmti, klass, ids[i], &name, &sig, NULL) != JVMTI_ERROR_NONE)
            continue;
        JVMPI_Field *f = (mods & 0x0008) ? &c->statics[c->n_statics++] : &c->instances[c->n_instances++];
        f->field_name = name;
        f->field_signature = sig;
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)ids);
    return c->statics && c->instances ? 0 : -1;
}

static int collect_class(jclass klass, class_info *c) {
    memset(c, 0, sizeof *c);
    if (jvmpi_failed((*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, klass, &c->signature, NULL),
                     "GetClassSignature")) return -1;
    (*jvmpi_jvmti)->GetSourceFileName(jvmpi_jvmti, klass, &c->source);   /* absent for some: "" then */
    jint n = 0;
    jclass *interfaces = NULL;
    if ((*jvmpi_jvmti)->GetImplementedInterfaces(jvmpi_jvmti, klass, &n, &interfaces) == JVMTI_ERROR_NONE) {
        c->interfaces = n;
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)interfaces);
    }
    if (collect_methods(klass, c) != 0 || collect_fields(klass, c) != 0) return -1;
    return 0;
}

static int post_class_load_now(JNIEnv *jni, jclass klass, jobjectID id, int requested) {
    class_info c;
    int posted = collect_class(klass, &c) == 0;
    if (posted) {
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_CLASS_LOAD | (requested ? JVMPI_REQUESTED_EVENT : 0), jni);
        e.u.class_load.class_name = internal_name(c.signature);
        e.u.class_load.source_name = c.source ? c.source : "";
        e.u.class_load.num_interfaces = c.interfaces;
        e.u.class_load.num_methods = c.n_methods;
        e.u.class_load.methods = c.methods;
        e.u.class_load.num_static_fields = c.n_statics;
        e.u.class_load.statics = c.statics;
        e.u.class_load.num_instance_fields = c.n_instances;
        e.u.class_load.instances = c.instances;
        e.u.class_load.class_id = id;
        jvmpi_notify(&e);
    }
    free_class_info(&c);
    return posted;
}

/* Only a prepared class has its methods and fields to tell. */
static int is_prepared(jclass klass) {
    jint status = 0;
    return (*jvmpi_jvmti)->GetClassStatus(jvmpi_jvmti, klass, &status) == JVMTI_ERROR_NONE &&
           ((status & JVMTI_CLASS_STATUS_PREPARED) || (status & JVMTI_CLASS_STATUS_ARRAY));
}

jobjectID jvmpi_post_class_load(JNIEnv *jni, jclass klass, int requested) {
    jobjectID id = jvmpi_id_of(klass);
    if (id == NULL || !is_prepared(klass)) return NULL;
    if (requested) {
        first_announcement(id);
        return post_class_load_now(jni, klass, id, 1) ? id : NULL;
    }
    if (first_announcement(id)) post_class_load_now(jni, klass, id, 0);
    return id;
}

/* java/lang/Class first: every CLASS_LOAD's agent may ask for the class
 * object (RequestEvent(OBJECT_ALLOC)), whose class it is, and HPROF names
 * a site by the class it knows at that OBJECT_ALLOC (<Unknown> before).
 * Then java/lang/Object, as a JVMPI VM loaded them. */
static void announce_first(JNIEnv *jni, const char *name) {
    jclass k = (*jni)->FindClass(jni, name);
    if (k == NULL) {
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        return;
    }
    jvmpi_post_class_load(jni, k, 0);
    (*jni)->DeleteLocalRef(jni, k);
}

int jvmpi_class_load_was_on(void) { return atomic_load(&announced.class_load_was_on); }

void jvmpi_announce_loaded_classes(JNIEnv *jni) {
    jvmpi_announce_classes(jni, 0);
}

void jvmpi_announce_classes(JNIEnv *jni, int even_if_off) {
    jint n = 0;
    jclass *classes = NULL;
    int on = even_if_off || jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD);
    if (on) {
        announce_first(jni, "java/lang/Class");
        announce_first(jni, "java/lang/Object");
    }
    if (jvmpi_failed((*jvmpi_jvmti)->GetLoadedClasses(jvmpi_jvmti, &n, &classes), "GetLoadedClasses")) return;
    (*jni)->EnsureLocalCapacity(jni, n + 32);     /* GetLoadedClasses made n local references */
    for (jint i = 0; i < n; i++) {
        if (on) jvmpi_post_class_load(jni, classes[i], 0);
        (*jni)->DeleteLocalRef(jni, classes[i]);
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)classes);
}

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass) {
    (void)jvmti; (void)thread;
    if (!atomic_load(&jvmpi_live) || !jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) return;
    if (jvmpi_thread_here(jni) == NULL) return;
    jvmpi_post_class_load(jni, klass, 0);
}

/* A JVMPI VM posted CLASS_LOAD as a class loaded, on the loading thread,
 * right after its CLASS_LOAD_HOOK; the layer posts it when JVMTI prepares
 * the class (its methods have no ids before), on the thread that links it,
 * which for a class loaded without linking (Class.forName(name, false,
 * loader), ClassLoader.loadClass, the verifier's loads) may be another
 * thread, later. An agent that takes both events may pair them on the
 * thread, as JCov does (the hook's record waits in the thread's storage;
 * an unpaired class is not profiled, and the record left behind meets a
 * bug of JCov's own at that thread's end, which kills the JVM): for such an
 * agent each class is linked as it loads, on its loading thread, so its
 * CLASS_LOAD follows its hook there. Linking runs none of the class's code;
 * what changes is when a verification error shows: at the load. */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass) {
    (void)jvmti; (void)thread;
    if (!atomic_load(&jvmpi_live) || jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD) ||
        !jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) || jvmpi_thread_here(jni) == NULL)
        return;
    jvmpi_link_class(jni, klass);
}

/* Linking at the load is for agents that take CLASS_LOAD_HOOK: wanted while it is on. */
static jint switch_link_at_load(int on) {
    if (!on) {
        events_unwant(jvmpi_jvmti, JVMTI_EVENT_CLASS_LOAD);
        return JVMPI_SUCCESS;
    }
    return events_want(jvmpi_jvmti, JVMTI_EVENT_CLASS_LOAD) == 0 ? JVMPI_SUCCESS : JVMPI_FAIL;
}

/* ------------------------------------------------------------ VM, threads */

static int is_reference_event(jint e) {
    return e == JVMPI_EVENT_JNI_GLOBALREF_ALLOC || e == JVMPI_EVENT_JNI_GLOBALREF_FREE ||
           e == JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC || e == JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE;
}

/* Reference events enabled in JVM_OnLoad: the JNI table can be changed now. */
static void wrap_jni_if_wanted(void) {
    if (jvmpi_enabled(JVMPI_EVENT_JNI_GLOBALREF_ALLOC) || jvmpi_enabled(JVMPI_EVENT_JNI_GLOBALREF_FREE) ||
        jvmpi_enabled(JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC) || jvmpi_enabled(JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE))
        jvmpi_hooks_wrap_jni();
}

void jvmpi_translate_start(JNIEnv *jni) {
    atomic_store(&jvmpi_live, 1);
    jvmpi_thread_here(jni);                               /* main: THREAD_START */
    if (jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) jvmpi_announce_loaded_classes(jni);
    jvmpi_methods_start(jni);
    jvmpi_post_arena_new(jni);
    jvmpi_gc_start(jni);
    wrap_jni_if_wanted();
    if (jvmpi_enabled(JVMPI_EVENT_JVM_INIT_DONE)) jvmpi_post_bare(jni, JVMPI_EVENT_JVM_INIT_DONE);
}

void jvmpi_translate_finish(JNIEnv *jni) {
    /* The thread that ends the VM may be one the layer never met (on JDK 17
     * and later the launcher's main thread detaches and comes back as
     * "DestroyJavaVM", a new JNIEnv): announced before its first event. */
    jvmpi_thread_here(jni);
    jvmpi_gc_flush(jni);
    /* Closed between two deliveries of the "JVMPI GC" thread, not inside
     * one (whose frees would then be dropped, half posted): from here on
     * this thread delivers them (gc.c). */
    jvmpi_gc_hold();
    jvmpi_close_events();
    jvmpi_gc_release();
    if (jvmpi_enabled(JVMPI_EVENT_JVM_SHUT_DOWN)) jvmpi_post_bare(jni, JVMPI_EVENT_JVM_SHUT_DOWN);
}

/* ------------------------------------------------------------ compiled methods */

static jint line_at(const jvmtiLineNumberEntry *table, jint n, jlocation at) {
    jint line = -1;
    for (jint i = 0; i < n && table[i].start_location <= at; i++) line = table[i].line_number;
    return line;
}

/* JVMTI maps code addresses to byte-code indexes; JVMPI wants offsets in
 * the code to source lines. */
static JVMPI_Lineno *line_map(jmethodID method, const void *code, jint map_length,
                              const jvmtiAddrLocationMap *map, jint *count) {
    *count = 0;
    jint n = 0;
    jvmtiLineNumberEntry *table = NULL;
    if (map == NULL || map_length <= 0 ||
        (*jvmpi_jvmti)->GetLineNumberTable(jvmpi_jvmti, method, &n, &table) != JVMTI_ERROR_NONE)
        return NULL;
    JVMPI_Lineno *lines = calloc((size_t)map_length, sizeof *lines);
    for (jint i = 0; lines != NULL && i < map_length; i++) {
        jint line = line_at(table, n, map[i].location);
        if (line < 0) continue;
        lines[*count].offset = (jint)((const char *)map[i].start_address - (const char *)code);
        lines[*count].lineno = line;
        (*count)++;
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)table);
    return lines;
}

static void JNICALL on_compiled_load(jvmtiEnv *jvmti, jmethodID method, jint size, const void *code,
                                     jint map_length, const jvmtiAddrLocationMap *map, const void *info) {
    (void)jvmti; (void)info;
    if (!jvmpi_enabled(JVMPI_EVENT_COMPILED_METHOD_LOAD)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_COMPILED_METHOD_LOAD, jni_here());
    e.u.compiled_method_load.method_id = method;
    e.u.compiled_method_load.code_addr = (void *)code;
    e.u.compiled_method_load.code_size = size;
    e.u.compiled_method_load.lineno_table = line_map(method, code, map_length, map,
                                                     &e.u.compiled_method_load.lineno_table_size);
    jvmpi_notify(&e);
    free(e.u.compiled_method_load.lineno_table);
}

static void JNICALL on_compiled_unload(jvmtiEnv *jvmti, jmethodID method, const void *code) {
    (void)jvmti; (void)code;
    if (!jvmpi_enabled(JVMPI_EVENT_COMPILED_METHOD_UNLOAD)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_COMPILED_METHOD_UNLOAD, jni_here());
    e.u.compiled_method_unload.method_id = method;
    jvmpi_notify(&e);
}

/* ------------------------------------------------------------ switching */

int jvmpi_translate_subscribe(void) {
    static const struct { jvmtiEvent ev; event_fn fn; } subs[] = {
        { JVMTI_EVENT_CLASS_PREPARE, EVENT_FN(on_class_prepare) },
        { JVMTI_EVENT_CLASS_LOAD, EVENT_FN(on_class_load) },
        { JVMTI_EVENT_COMPILED_METHOD_LOAD, EVENT_FN(on_compiled_load) },
        { JVMTI_EVENT_COMPILED_METHOD_UNLOAD, EVENT_FN(on_compiled_unload) },
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (events_subscribe(subs[i].ev, subs[i].fn) != 0) return -1;
    return 0;
}

/* The JVMTI event a JVMPI event comes from, or 0 if the layer makes it
 * without one (or never posts it: see the README). */
static jvmtiEvent source_of(jint event_type) {
    switch (event_type) {
    case JVMPI_EVENT_CLASS_LOAD:                return JVMTI_EVENT_CLASS_PREPARE;
    case JVMPI_EVENT_COMPILED_METHOD_LOAD:      return JVMTI_EVENT_COMPILED_METHOD_LOAD;
    case JVMPI_EVENT_COMPILED_METHOD_UNLOAD:    return JVMTI_EVENT_COMPILED_METHOD_UNLOAD;
    default:                                    return (jvmtiEvent)0;
    }
}

static JNIEnv *jni_here(void) {
    JNIEnv *jni = NULL;
    return (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) == JNI_OK ? jni : NULL;
}

jint jvmpi_translate_switch(jint event_type, int on) {
    jvmtiEvent source = source_of(event_type);
    if (source != 0) {
        if (on && events_want(jvmpi_jvmti, source) != 0) return JVMPI_FAIL;
        if (!on) events_unwant(jvmpi_jvmti, source);
    }
    if (event_type == JVMPI_EVENT_OBJECT_ALLOC && jvmpi_allocs_switch(on) != JVMPI_SUCCESS) return JVMPI_FAIL;
    if (jvmpi_monitors_switch(event_type, on) != JVMPI_SUCCESS) return JVMPI_FAIL;
    if (jvmpi_instructions_switch(event_type, on) != JVMPI_SUCCESS) return JVMPI_FAIL;
    if ((event_type == JVMPI_EVENT_GC_START || event_type == JVMPI_EVENT_GC_FINISH ||
         event_type == JVMPI_EVENT_OBJECT_FREE || event_type == JVMPI_EVENT_CLASS_UNLOAD) &&
        jvmpi_gc_switch(event_type, on) != JVMPI_SUCCESS)
        return JVMPI_FAIL;
    if (event_type == JVMPI_EVENT_CLASS_LOAD_HOOK && jvmpi_hooks_switch_class_hook(on) != JVMPI_SUCCESS)
        return JVMPI_FAIL;
    if (event_type == JVMPI_EVENT_CLASS_LOAD_HOOK && switch_link_at_load(on) != JVMPI_SUCCESS) {
        jvmpi_hooks_switch_class_hook(0);
        return JVMPI_FAIL;
    }
    if (on && is_reference_event(event_type)) jvmpi_hooks_wrap_jni();
    if (event_type == JVMPI_EVENT_METHOD_ENTRY || event_type == JVMPI_EVENT_METHOD_ENTRY2 ||
        event_type == JVMPI_EVENT_METHOD_EXIT || event_type == JVMPI_EVENT_OBJECT_ALLOC ||
        event_type == JVMPI_EVENT_INSTRUCTION_START)
        jvmpi_methods_switch();
    /* Enabled while the program runs: the classes loaded so far are told
     * now, on the enabling thread (at VMInit if enabled in JVM_OnLoad). */
    JNIEnv *jni = NULL;
    if (on && event_type == JVMPI_EVENT_CLASS_LOAD) atomic_store(&announced.class_load_was_on, 1);
    if (on && event_type == JVMPI_EVENT_CLASS_LOAD && atomic_load(&jvmpi_live) && (jni = jni_here()) != NULL)
        jvmpi_announce_loaded_classes(jni);
    /* Methods compiled before: told now, as JVMTI can replay them. */
    if (on && event_type == JVMPI_EVENT_COMPILED_METHOD_LOAD && atomic_load(&jvmpi_live))
        jvmpi_failed((*jvmpi_jvmti)->GenerateEvents(jvmpi_jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD), "GenerateEvents");
    if (on && event_type == JVMPI_EVENT_ARENA_NEW && atomic_load(&jvmpi_live) && (jni = jni_here()) != NULL)
        jvmpi_post_arena_new(jni);
    return JVMPI_SUCCESS;
}
