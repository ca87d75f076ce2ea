/*
 * allocs: OBJECT_ALLOC. Every object a constructor builds passes through
 * JvmpiTracker.objectInit (Object.<init>), every array the byte code makes
 * through newArray; what the VM allocates without byte code (clone(),
 * reflection's and JNI's arrays, Unsafe.allocateInstance) comes as JVMTI
 * VMObjectAlloc. An object is posted when the layer first sees it: giving
 * it its id (a tag) marks it, so the constructor that follows a
 * VMObjectAlloc, or the VMObjectAlloc that follows JNI's NewObject, finds
 * it tagged and posts nothing.
 *
 * One arena (id 1, the Java heap): the objects' ids never move, so there is
 * no OBJECT_MOVE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/events.h"
#include "layer.h"

#define HEAP_ARENA 1

/* The JVMPI kind of an object of the class with this signature: an array's
 * element type, JVMPI_CLASS for an array of references. */
jint jvmpi_kind_of_signature(const char *sig) {
    if (sig[0] != '[') return JVMPI_NORMAL_OBJECT;
    switch (sig[1]) {
    case 'Z': return JVMPI_BOOLEAN;
    case 'B': return JVMPI_BYTE;
    case 'C': return JVMPI_CHAR;
    case 'S': return JVMPI_SHORT;
    case 'I': return JVMPI_INT;
    case 'J': return JVMPI_LONG;
    case 'F': return JVMPI_FLOAT;
    case 'D': return JVMPI_DOUBLE;
    default:  return JVMPI_CLASS;               /* 'L' or '[': an array of references */
    }
}

/* What OBJECT_ALLOC says of a class: its kind, and the id it gives as
 * class_id (the class's own, the element class's for an array of references,
 * NULL for an array of primitives: its kind says it all); an instance's size
 * (the same for every instance), an array's whether it holds arrays (the
 * inner arrays multianewarray made); a class's superclasses (GetCallTrace
 * leaves their constructors out). Kept per thread for the classes met last,
 * by class id (ids are never reused), so that an allocation costs no class
 * signature. */
typedef struct class_kind {
    jobjectID klass, class_id;
    jint kind, size;
    int nested;
    jvmpi_lineage lineage;          /* klass not set (a local reference of its time) */
} class_kind;
#define KINDS 64
/* In the thread's record, not in thread-local storage: the library's TLS is
 * all static (it has initial-exec variables), and glibc leaves little room
 * for that in a library loaded at run time; 1.5 KB here made the ASan build
 * fail to load ("cannot allocate memory in static TLS block"). */
static class_kind *thread_kinds(JNIEnv *jni) {
    jvmpi_thread *t = jvmpi_thread_current();           /* none is made here */
    if (t == NULL || t->env != jni) return NULL;
    if (t->class_kinds == NULL) t->class_kinds = calloc(KINDS, sizeof(class_kind));
    return t->class_kinds;
}

#define DESCRIBING_MAX 8

/* This thread's part in the allocation events, in one thread-local object
 * (static TLS is scarce in a library loaded at run time, above). */
typedef struct alloc_thread {
    int may_link;           /* the tracker's allocation call is handled (Java code may run) */
    /* The class of the object whose OBJECT_ALLOC the tracker's call in
     * Object.<init> is posting on this thread (NULL otherwise): GetCallTrace
     * leaves that object's constructors out (jvmpi_constructing). */
    const jvmpi_lineage *constructing;
    jobjectID describing[DESCRIBING_MAX];  /* the ids it is describing now (below) */
    int n_describing;
} alloc_thread;

static _Thread_local alloc_thread here;

static jobjectID element_class_id(JNIEnv *jni, jclass klass) {
    jclass class_class = (*jni)->GetObjectClass(jni, klass);
    jmethodID component = class_class ? (*jni)->GetMethodID(jni, class_class, "getComponentType",
                                                            "()Ljava/lang/Class;") : NULL;
    jobject element = component ? (*jni)->CallObjectMethod(jni, klass, component) : NULL;
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); element = NULL; }
    /* An array of arrays names an array class, for which the JVM posts no
     * ClassPrepare: its CLASS_LOAD comes now, before the event that names
     * it. An element class loaded but not linked yet (new Bar[3] makes the
     * array without linking Bar) is linked first, as a JVMPI VM had it
     * announced by then; only from the byte code's allocations (the
     * tracker's call, a Java call where Java code may run), not from
     * JVMTI's VMObjectAlloc. */
    if (element && jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) {
        if (here.may_link) jvmpi_link_class(jni, (jclass)element);
        jvmpi_post_class_load(jni, (jclass)element, 0);
    }
    jobjectID id = jvmpi_id_of(element);
    if (element) (*jni)->DeleteLocalRef(jni, element);
    if (class_class) (*jni)->DeleteLocalRef(jni, class_class);
    return id;
}

/* The class's id and its superclasses', as far as JVMPI_LINEAGE_MAX goes. */
static void read_lineage(JNIEnv *jni, jclass klass, jvmpi_lineage *l) {
    l->n = 0;
    l->complete = 0;
    jclass k = (*jni)->NewLocalRef(jni, klass);
    while (k != NULL && l->n < JVMPI_LINEAGE_MAX) {
        l->ids[l->n++] = jvmpi_id_of(k);
        jclass super = (*jni)->GetSuperclass(jni, k);
        (*jni)->DeleteLocalRef(jni, k);
        k = super;
    }
    l->complete = k == NULL;
    if (k != NULL) (*jni)->DeleteLocalRef(jni, k);
}

static void inner_arrays(JNIEnv *jni, jobject array);

/* A thread without a record (none yet, or out of memory) gets the answer in
 * *uncached, worked out each time. */
static const class_kind *kind_of(JNIEnv *jni, jclass klass, jobject object, class_kind *uncached) {
    jobjectID klass_id = jvmpi_id_of(klass);
    if (klass_id == NULL) return NULL;
    class_kind *kinds = thread_kinds(jni);
    class_kind *k = kinds ? &kinds[((uintptr_t)klass_id >> 3) % KINDS] : uncached;
    if (k->klass == klass_id) return k;
    k->klass = NULL;                    /* filling: a nested call must not take it as made */
    char *sig = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, klass, &sig, NULL), "GetClassSignature"))
        return NULL;
    k->kind = jvmpi_kind_of_signature(sig);
    k->nested = sig[0] == '[' && sig[1] == '[';
    /* a Class object holds its class's statics, a virtual thread's stack
     * chunk its frames: their sizes are their own */
    int sized = k->kind == JVMPI_NORMAL_OBJECT && strcmp(sig, "Ljava/lang/Class;") != 0 &&
                strcmp(sig, "Ljdk/internal/vm/StackChunk;") != 0;
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    /* The class before the event that names it: an array class is met first
     * here (no ClassPrepare for arrays); so is, before the layer's sweep of
     * the classes loaded so far, the class of an object an agent asks for
     * (java/lang/Thread, main's, at its THREAD_START). */
    if (jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) jvmpi_post_class_load(jni, klass, 0);
    k->class_id = k->kind == JVMPI_NORMAL_OBJECT ? klass_id
                : k->kind == JVMPI_CLASS ? element_class_id(jni, klass) : NULL;
    jlong size = 0;
    k->size = -1;
    if (sized && (*jvmpi_jvmti)->GetObjectSize(jvmpi_jvmti, object, &size) == JVMTI_ERROR_NONE)
        k->size = size > 0x7fffffff ? 0x7fffffff : (jint)size;
    k->lineage.n = 0;
    if (k->kind == JVMPI_NORMAL_OBJECT) read_lineage(jni, klass, &k->lineage);
    k->klass = klass_id;
    return k;
}

const jvmpi_lineage *jvmpi_constructing(void) { return here.constructing; }

static void post_alloc(JNIEnv *jni, jobject object, jclass klass, const class_kind *k, jobjectID id,
                       int requested) {
    jlong size = k->size;
    if (size < 0) (*jvmpi_jvmti)->GetObjectSize(jvmpi_jvmti, object, &size);
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_OBJECT_ALLOC | (requested ? JVMPI_REQUESTED_EVENT : 0), jni);
    e.u.obj_alloc.arena_id = HEAP_ARENA;
    e.u.obj_alloc.class_id = k->class_id;
    e.u.obj_alloc.is_array = k->kind;
    e.u.obj_alloc.size = size > 0x7fffffff ? 0x7fffffff : (jint)size;
    e.u.obj_alloc.obj_id = id;
    /* A JVMPI VM posted OBJECT_ALLOC at `new`; the tracker's call comes from
     * Object.<init>, under the object's own constructors. Arrays come from
     * the allocating method itself. The lineage is copied: the handler may
     * allocate, and the thread's cache entry be taken by another class. */
    const jvmpi_lineage *was = here.constructing;
    jvmpi_lineage lineage;
    if (!requested && here.may_link && k->kind == JVMPI_NORMAL_OBJECT) {
        lineage = k->lineage;
        lineage.klass = klass;
        here.constructing = &lineage;
    }
    jvmpi_notify(&e);
    here.constructing = was;
}

/* Ids given to instances by VMObjectAlloc (not clones), whose constructor
 * may run after (JNI AllocObject, Unsafe.allocateInstance, JDK 18's
 * reflection): while some may not have reached Object.<init> yet, each
 * object the tracker meets there is checked for an id. */
typedef struct constructor_watch {
    atomic_long unconstructed;
    /* An id was given to an object before its constructor in some other way
     * (METHOD_ENTRY2's receivers): every object is checked from then on. */
    atomic_int named_early;
} constructor_watch;

static constructor_watch unfinished;

void jvmpi_allocs_named_early(void) { atomic_store(&unfinished.named_early, 1); }

/* Might a constructor have run for this instance before its VMObjectAlloc
 * (JNI's NewObject, reflection's newInstance0)? Only from a native method;
 * not from those through which the JVM makes its own objects without a
 * constructor (clone, reflection's Method and Constructor objects, a
 * class's name), which are most instances VMObjectAlloc reports: each
 * answer yes costs a search of the pending ids. One wrongly answered no
 * costs the object a second id, not a changed one (pending_ids.c's
 * promotion). */
static int may_follow_constructor(jthread thread) {
    static const char *const makes_own[] = {
        "clone", "initClassName", "getDeclaredConstructors0", "getDeclaredMethods0", "getDeclaredFields0",
        "getDeclaredClasses0", "getStackAccessControlContext", "getConstantPool", "getRawAnnotations",
        "getEnclosingMethod0", "getInterfaces0", "getGenericSignature0", "intern", NULL,
    };
    jmethodID method = NULL;
    jlocation at = 0;
    jint modifiers = 0;
    if ((*jvmpi_jvmti)->GetFrameLocation(jvmpi_jvmti, thread, 0, &method, &at) != JVMTI_ERROR_NONE ||
        method == NULL || (*jvmpi_jvmti)->GetMethodModifiers(jvmpi_jvmti, method, &modifiers) != JVMTI_ERROR_NONE)
        return 1;                       /* not known: yes, to be safe */
    if (!(modifiers & 0x0100)) return 0;            /* not ACC_NATIVE: the VM's own allocation */
    char *name = NULL;
    if ((*jvmpi_jvmti)->GetMethodName(jvmpi_jvmti, method, &name, NULL, NULL) != JVMTI_ERROR_NONE) return 1;
    int own = 0;
    for (int i = 0; makes_own[i] != NULL && !own; i++) own = strcmp(name, makes_own[i]) == 0;
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)name);
    return !own;
}

/* Had the object an id before this sight of it? An object the byte code
 * just made (from_code: the tracker's call) cannot, unless a heap walk
 * named every object since, or it is an instance named early (above). */
static int named_before(JNIEnv *jni, jthread thread, jobject object, jint kind, int from_code) {
    int walked = jvmpi_ids_walked();
    /* JNI's NewObject, reflection's newInstance: the constructor gave the
     * instance a pending id on this thread (jvmpi_new_id); JVMTI's
     * VMObjectAlloc follows. (No constructor runs for an array.) */
    if (!from_code && kind == JVMPI_NORMAL_OBJECT && thread != NULL && may_follow_constructor(thread))
        jvmpi_pending_promote_one(jni, object, 0);
    if (from_code && !walked && !atomic_load(&unfinished.named_early) &&
        (kind != JVMPI_NORMAL_OBJECT || atomic_load(&unfinished.unconstructed) == 0))
        return 0;
    jlong tag = 0;
    int named = (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) == JVMTI_ERROR_NONE && tag != 0;
    if (named && from_code && kind == JVMPI_NORMAL_OBJECT && !walked) {
        long n = atomic_load(&unfinished.unconstructed);
        while (n > 0 && !atomic_compare_exchange_weak(&unfinished.unconstructed, &n, n - 1)) {}
    }
    return named;
}

/* Might the constructor of this instance, just given its id at
 * VMObjectAlloc, still run? Only if it was made by Unsafe.allocateInstance
 * (method handles' `new`, JDK 18's reflection), or by an application's JNI
 * code (AllocObject; not a String, JNI's NewString*). Not for the
 * instances the JVM's own natives make without a constructor (a class's
 * name, reflection's Method objects), which would keep every allocation
 * checked; not for a clone. */
static int may_be_constructed(JNIEnv *jni, jthread thread, jclass klass) {
    static jmethodID allocate_instance;
    static jclass string_class;         /* global reference */
    if (allocate_instance == NULL) {
        jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
        allocate_instance = unsafe ? (*jni)->GetMethodID(jni, unsafe, "allocateInstance",
                                                         "(Ljava/lang/Class;)Ljava/lang/Object;") : NULL;
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        if (unsafe) (*jni)->DeleteLocalRef(jni, unsafe);
    }
    if (string_class == NULL) {
        jclass string = (*jni)->FindClass(jni, "java/lang/String");
        string_class = string ? (*jni)->NewGlobalRef(jni, string) : NULL;
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        if (string) (*jni)->DeleteLocalRef(jni, string);
    }
    jmethodID method = NULL;
    jlocation at = 0;
    if (thread == NULL || (*jvmpi_jvmti)->GetFrameLocation(jvmpi_jvmti, thread, 0, &method, &at) != JVMTI_ERROR_NONE ||
        method == NULL)
        return 1;                       /* not known: counted, to be safe */
    if (method == allocate_instance) return 1;
    jint modifiers = 0;
    if ((*jvmpi_jvmti)->GetMethodModifiers(jvmpi_jvmti, method, &modifiers) != JVMTI_ERROR_NONE) return 1;
    if (!(modifiers & 0x0100)) return 0;            /* ACC_NATIVE: else the VM's own allocation */
    if (string_class != NULL && (*jni)->IsSameObject(jni, klass, string_class)) return 0;
    jclass declaring = NULL;
    jobject loader = NULL;
    if ((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &declaring) != JVMTI_ERROR_NONE) return 1;
    jvmtiError err = (*jvmpi_jvmti)->GetClassLoader(jvmpi_jvmti, declaring, &loader);
    (*jni)->DeleteLocalRef(jni, declaring);
    if (err != JVMTI_ERROR_NONE) return 1;
    if (loader == NULL) return 0;                   /* the JDK's boot natives */
    (*jni)->DeleteLocalRef(jni, loader);
    return 1;
}

/* A new object, posted once (see above): from the tracker's call
 * (from_code), or from VMObjectAlloc (thread: its thread). */
static void allocated(JNIEnv *jni, jobject object, jclass klass, int from_code, jthread thread) {
    if (object == NULL) return;
    jclass own = klass ? NULL : (*jni)->GetObjectClass(jni, object);
    if (klass == NULL) klass = own;
    class_kind uncached = { 0 };
    const class_kind *k = klass ? kind_of(jni, klass, object, &uncached) : NULL;
    if (k != NULL && !named_before(jni, thread, object, k->kind, from_code)) {
        int counted = !from_code && k->kind == JVMPI_NORMAL_OBJECT && may_be_constructed(jni, thread, klass);
        if (counted) atomic_fetch_add(&unfinished.unconstructed, 1);       /* before its id: before its constructor */
        jobjectID id = jvmpi_new_id(jni, object, from_code);
        if (id != NULL) post_alloc(jni, object, klass, k, id, 0);
        else if (counted) atomic_fetch_sub(&unfinished.unconstructed, 1);
        /* multianewarray made the inner arrays too */
        if (id != NULL && from_code && k->nested) inner_arrays(jni, object);
    }
    if (own) (*jni)->DeleteLocalRef(jni, own);
}

/* The non-null elements of a new array of arrays. */
static void inner_arrays(JNIEnv *jni, jobject array) {
    jsize n = (*jni)->GetArrayLength(jni, (jarray)array);
    for (jsize i = 0; i < n; i++) {
        jobject inner = (*jni)->GetObjectArrayElement(jni, (jobjectArray)array, i);
        if (inner == NULL) continue;
        allocated(jni, inner, NULL, 1, NULL);
        (*jni)->DeleteLocalRef(jni, inner);
    }
}

JNIEXPORT void JNICALL Java_java_lang_JvmpiTracker_allocated(JNIEnv *jni, jclass tracker, jobject object) {
    (void)tracker;
    if (object == NULL || jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_OBJECT_ALLOC)) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) != NULL) {
        here.may_link = 1;
        jvmpi_in_tracker_call = 1;
        allocated(jni, object, NULL, 1, NULL);
        jvmpi_in_tracker_call = 0;
        here.may_link = 0;
    }
    jvmpi_in_layer = 0;
}

static void JNICALL on_vm_object_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                                       jclass klass, jlong size) {
    (void)jvmti; (void)size;
    if (jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_OBJECT_ALLOC) || !atomic_load(&jvmpi_live)) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) != NULL) allocated(jni, object, klass, 0, thread);
    jvmpi_in_layer = 0;
}

void jvmpi_post_arena_new(JNIEnv *jni) {
    static atomic_int posted;
    if (!jvmpi_enabled(JVMPI_EVENT_ARENA_NEW) || atomic_exchange(&posted, 1)) return;
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_ARENA_NEW, jni);
    e.u.new_arena.arena_id = HEAP_ARENA;
    e.u.new_arena.arena_name = "Java heap";
    jvmpi_notify(&e);
}

int jvmpi_allocs_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_VM_OBJECT_ALLOC, EVENT_FN(on_vm_object_alloc));
}

jint jvmpi_allocs_switch(int on) {
    if (on) return events_want(jvmpi_jvmti, JVMTI_EVENT_VM_OBJECT_ALLOC) == 0 ? JVMPI_SUCCESS : JVMPI_FAIL;
    events_unwant(jvmpi_jvmti, JVMTI_EVENT_VM_OBJECT_ALLOC);
    return JVMPI_SUCCESS;
}

/* The ids this thread is describing now (RequestEvent(OBJECT_ALLOC) in the
 * making, outermost first). An agent answers an OBJECT_ALLOC by asking for
 * the object's class, and HPROF asks for the class of that: for
 * java/lang/Class's own Class object it is the same id, and would be asked
 * for again from its own handler forever. A JVMPI VM does not deliver again
 * a request for an object it is already describing on that thread; the
 * inner request fails (no event), as does one nested deeper than this. */

/* Answered synchronously on the asking thread, whatever the object (a Class
 * object too), once per object in a chain of nested requests. */
jint jvmpi_request_object_alloc(JNIEnv *jni, jobjectID id) {
    if (id == NULL || here.n_describing >= DESCRIBING_MAX) return JVMPI_FAIL;
    for (int i = 0; i < here.n_describing; i++)
        if (here.describing[i] == id) return JVMPI_FAIL;
    jobject object = jvmpi_object_of(jni, id);
    if (object == NULL) return JVMPI_FAIL;
    jclass klass = (*jni)->GetObjectClass(jni, object);
    class_kind uncached = { 0 };
    const class_kind *k = klass != NULL ? kind_of(jni, klass, object, &uncached) : NULL;
    if (k != NULL) {
        here.describing[here.n_describing++] = id;
        post_alloc(jni, object, klass, k, id, 1);
        here.n_describing--;
    }
    if (klass != NULL) (*jni)->DeleteLocalRef(jni, klass);
    (*jni)->DeleteLocalRef(jni, object);
    return k != NULL ? JVMPI_SUCCESS : JVMPI_FAIL;
}
