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

static int is_tagged(jobject object) {
    jlong tag = 0;
    return (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) == JVMTI_ERROR_NONE && tag != 0;
}

/* What OBJECT_ALLOC says of a class: its kind, and the id it gives as
 * class_id (the class's own, the element class's for an array of references,
 * NULL for an array of primitives: its kind says it all). Kept per thread
 * for the classes met last, by class id (ids are never reused), so that an
 * allocation costs no class signature. */
typedef struct class_kind { jobjectID klass, class_id; jint kind; } class_kind;
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

/* Set while the tracker's allocation call is handled (Java code may run). */
static _Thread_local int may_link;

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
        if (may_link) jvmpi_link_class(jni, (jclass)element);
        jvmpi_post_class_load(jni, (jclass)element, 0);
    }
    jobjectID id = jvmpi_id_of(element);
    if (element) (*jni)->DeleteLocalRef(jni, element);
    if (class_class) (*jni)->DeleteLocalRef(jni, class_class);
    return id;
}

/* A thread without a record (none yet, or out of memory) gets the answer in
 * *uncached, worked out each time. */
static const class_kind *kind_of(JNIEnv *jni, jclass klass, class_kind *uncached) {
    jobjectID klass_id = jvmpi_id_of(klass);
    if (klass_id == NULL) return NULL;
    class_kind *kinds = thread_kinds(jni);
    class_kind *k = kinds ? &kinds[((uintptr_t)klass_id >> 3) % KINDS] : uncached;
    if (k->klass == klass_id) return k;
    char *sig = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, klass, &sig, NULL), "GetClassSignature"))
        return NULL;
    k->kind = jvmpi_kind_of_signature(sig);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    /* The class before the event that names it: an array class is met first
     * here (no ClassPrepare for arrays); so is, before the layer's sweep of
     * the classes loaded so far, the class of an object an agent asks for
     * (java/lang/Thread, main's, at its THREAD_START). */
    if (jvmpi_enabled(JVMPI_EVENT_CLASS_LOAD)) jvmpi_post_class_load(jni, klass, 0);
    k->class_id = k->kind == JVMPI_NORMAL_OBJECT ? klass_id
                : k->kind == JVMPI_CLASS ? element_class_id(jni, klass) : NULL;
    k->klass = klass_id;
    return k;
}

/* The class of the object whose OBJECT_ALLOC the tracker's call in
 * Object.<init> is posting on this thread (NULL otherwise): GetCallTrace
 * leaves that object's constructors out (jvmpi_constructing). */
static _Thread_local jclass constructing;

jclass jvmpi_constructing(void) { return constructing; }

static void post_alloc(JNIEnv *jni, jobject object, jclass klass, jobjectID id, int requested) {
    class_kind uncached = { NULL, NULL, 0 };
    const class_kind *k = kind_of(jni, klass, &uncached);
    if (k == NULL) return;
    jlong size = 0;
    (*jvmpi_jvmti)->GetObjectSize(jvmpi_jvmti, object, &size);
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_OBJECT_ALLOC | (requested ? JVMPI_REQUESTED_EVENT : 0), jni);
    e.u.obj_alloc.arena_id = HEAP_ARENA;
    e.u.obj_alloc.class_id = k->class_id;
    e.u.obj_alloc.is_array = k->kind;
    e.u.obj_alloc.size = size > 0x7fffffff ? 0x7fffffff : (jint)size;
    e.u.obj_alloc.obj_id = id;
    /* A JVMPI VM posted OBJECT_ALLOC at `new`; the tracker's call comes from
     * Object.<init>, under the object's own constructors. Arrays come from
     * the allocating method itself. */
    jclass was = constructing;
    if (!requested && may_link && k->kind == JVMPI_NORMAL_OBJECT) constructing = klass;
    jvmpi_notify(&e);
    constructing = was;
}

/* A new object, posted once (see above). */
static void allocated(JNIEnv *jni, jobject object, jclass klass) {
    if (object == NULL || is_tagged(object)) return;
    jobjectID id = jvmpi_new_id(object);
    if (id == NULL) return;
    jclass own = klass ? NULL : (*jni)->GetObjectClass(jni, object);
    post_alloc(jni, object, klass ? klass : own, id, 0);
    if (own) (*jni)->DeleteLocalRef(jni, own);
}

/* multianewarray made the inner arrays too: the non-null elements of a
 * new array of arrays. */
static void inner_arrays(JNIEnv *jni, jobject array) {
    jclass k = (*jni)->GetObjectClass(jni, array);
    char *sig = NULL;
    int nested = k && (*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, k, &sig, NULL) == JVMTI_ERROR_NONE &&
                 sig[0] == '[' && sig[1] == '[';
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    if (k) (*jni)->DeleteLocalRef(jni, k);
    if (!nested) return;
    jsize n = (*jni)->GetArrayLength(jni, (jarray)array);
    for (jsize i = 0; i < n; i++) {
        jobject inner = (*jni)->GetObjectArrayElement(jni, (jobjectArray)array, i);
        if (inner == NULL) continue;
        allocated(jni, inner, NULL);
        inner_arrays(jni, inner);
        (*jni)->DeleteLocalRef(jni, inner);
    }
}

JNIEXPORT void JNICALL Java_java_lang_JvmpiTracker_allocated(JNIEnv *jni, jclass tracker, jobject object) {
    (void)tracker;
    if (object == NULL || jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_OBJECT_ALLOC)) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) != NULL) {
        may_link = 1;
        allocated(jni, object, NULL);
        inner_arrays(jni, object);
        may_link = 0;
    }
    jvmpi_in_layer = 0;
}

static void JNICALL on_vm_object_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                                       jclass klass, jlong size) {
    (void)jvmti; (void)thread; (void)size;
    if (jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_OBJECT_ALLOC) || !atomic_load(&jvmpi_live)) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) != NULL) allocated(jni, object, klass);
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
#define DESCRIBING_MAX 8
static _Thread_local jobjectID describing[DESCRIBING_MAX];
static _Thread_local int n_describing;

/* Answered synchronously on the asking thread, whatever the object (a Class
 * object too), once per object in a chain of nested requests. */
jint jvmpi_request_object_alloc(JNIEnv *jni, jobjectID id) {
    if (id == NULL || n_describing >= DESCRIBING_MAX) return JVMPI_FAIL;
    for (int i = 0; i < n_describing; i++)
        if (describing[i] == id) return JVMPI_FAIL;
    jobject object = jvmpi_object_of(jni, id);
    if (object == NULL) return JVMPI_FAIL;
    jclass klass = (*jni)->GetObjectClass(jni, object);
    if (klass != NULL) {
        describing[n_describing++] = id;
        post_alloc(jni, object, klass, id, 1);
        n_describing--;
        (*jni)->DeleteLocalRef(jni, klass);
    }
    (*jni)->DeleteLocalRef(jni, object);
    return klass != NULL ? JVMPI_SUCCESS : JVMPI_FAIL;
}
