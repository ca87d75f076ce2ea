/*
 * ids: JVMPI's jobjectID is an object's JVMTI tag (or, for a new object
 * nothing has looked up yet, a pending id that becomes its tag at the first
 * look-up: pending_ids.c). A tag stays with its
 * object whatever the GC does, so an id never changes: the layer never
 * needs OBJECT_MOVE, and an agent may keep ids with GC enabled. Ids are
 * multiples of 8, so they look like the aligned pointers agents of the time
 * were given (some kept flags in the low bits).
 *
 * From an id back to its object (RequestEvent by id, jobjectID2jobject, a
 * class id): JVMTI's only way, GetObjectsWithTags, scans every tagged object
 * per call (HotSpot also compares each with every tag asked for, so asking
 * for many at once is no better). So the layer keeps a JNI weak global
 * reference under the ids agents ask for, in two bounded tables
 * (src/core/ref_table.h): classes (HPROF asks for each class object at its
 * CLASS_LOAD, and for an object's class when it does not know it) and other
 * objects, so that a full table of objects never keeps a class out. Listed:
 * every id jvmpi_id_of gives (classes, threads, monitors, references, what
 * a dump names), and at a heap dump every object that had no id yet
 * (jvmpi_ids_name_all: one heap iteration marks them, one GetObjectsWithTags
 * of the mark gets them all), the objects an agent meets first in a dump and
 * asks for. Not listed: the ids OBJECT_ALLOC gives new objects (its event
 * tells the agent all it would ask): a weak reference per allocation filled
 * the table with young objects between two collections (its sweeps found
 * none gone) and cost 10 % of a heap=sites run's CPU; the first look-up of
 * such an id scans and lists it. (pending_ids.c does keep a weak reference
 * per allocation, but instead of the tag, not on top of it, and only until
 * a look-up, found by id or object, makes it a tag.) An entry goes when OBJECT_FREE's JVMTI
 * ObjectFree says its object was freed (the "JVMPI GC" thread, which has
 * JNI, deletes it), or, where that event is off, when a full stripe sweeps
 * out references whose object is gone.
 *
 * A miss falls back to the scan only if some id was given without an entry
 * (an allocation's, one given inside a heap walk's callbacks where JNI
 * cannot be used, one that found its table full); else the id's object is
 * gone (its entry went at its free) and the answer is NULL at once.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../core/ref_table.h"
#include "layer.h"

/* Bounds on the tables: at most this many weak references, some 40 bytes
 * of table each (80 at worst: 50 MB in all), plus the JVM's handle. */
#define CLASS_ENTRIES  (1u << 17)
#define OBJECT_ENTRIES (1u << 19)

/* The tag jvmpi_ids_name_all marks untagged objects with until each gets
 * its id: never an id (not a multiple of 8); read as "no id yet". */
#define UNNAMED ((jlong)4)

/* The layer's ids: one registry per process, as there is one JVMPI agent. */
typedef struct id_registry {
    atomic_llong last_id;       /* ids handed out so far, in units of 8 */
    pthread_mutex_t tagging;
    /* Tagging (read side, many at once) against a heap walk that tags what it
     * meets (write side): an object a walk gives an id must not get another
     * from a thread that read its tag as 0 before the walk. Writers first, so
     * allocating threads cannot keep a dump waiting. Lock order: walking,
     * tagging, a table's stripe; a look-up takes only a stripe. */
    pthread_rwlock_t walking;
    atomic_int walked;          /* a walk has tagged objects: new objects may have ids already */
    ref_table classes_by_id, objects_by_id;
    pthread_once_t tables_made;
    atomic_int unlisted;        /* some id was given that no table holds: a miss may be one */
} id_registry;

static id_registry ids = {
    .tagging = PTHREAD_MUTEX_INITIALIZER,
    .walking = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
    .tables_made = PTHREAD_ONCE_INIT,
};

static void make_tables(void) {
    ref_table_init(&ids.classes_by_id, CLASS_ENTRIES);
    ref_table_init(&ids.objects_by_id, OBJECT_ENTRIES);
}

/* Pending ids (pending_ids.c) become tags first: the walk must not name
 * their objects again; from then on new objects are tagged at once. */
void jvmpi_ids_hold(JNIEnv *jni) {
    pthread_rwlock_wrlock(&ids.walking);
    atomic_store(&ids.walked, 1);
    jvmpi_pending_promote_all(jni);
}
void jvmpi_ids_release(void) { pthread_rwlock_unlock(&ids.walking); }
int jvmpi_ids_walked(void) { return atomic_load(&ids.walked); }

static jlong next_tag(void) { return (jlong)(atomic_fetch_add(&ids.last_id, 1) + 1) << 3; }

static int has_id(jlong tag) { return tag != 0 && tag != UNNAMED; }

jlong jvmpi_walk_id(jlong *tag_ptr) {
    if (!has_id(*tag_ptr)) {
        *tag_ptr = next_tag();
        atomic_store(&ids.unlisted, 1);
    }
    return *tag_ptr;
}

static JNIEnv *jni_here(void) {
    JNIEnv *jni = NULL;
    return jvmpi_vm != NULL && (*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) == JNI_OK ? jni : NULL;
}

/* A stripe's sweep: drops a reference whose object is gone (ctx: JNIEnv). */
static int drop_if_gone(void *ref, void *ctx) {
    JNIEnv *jni = ctx;
    if (!(*jni)->IsSameObject(jni, (jweak)ref, NULL)) return 0;
    (*jni)->DeleteWeakGlobalRef(jni, (jweak)ref);
    return 1;
}

/* Only a Class object has a class status. */
static int is_class(jobject object) {
    jint status = 0;
    return (*jvmpi_jvmti)->GetClassStatus(jvmpi_jvmti, (jclass)object, &status) == JVMTI_ERROR_NONE;
}

/* The object's weak reference under the id just given to it. The layer's
 * own references are not the agent's JNI_WEAK_GLOBALREF events (hooks.c). */
static void list(JNIEnv *jni, jlong tag, jobject object) {
    if (jni == NULL || !atomic_load(&jvmpi_live) || (*jni)->ExceptionCheck(jni)) {
        atomic_store(&ids.unlisted, 1);
        return;
    }
    pthread_once(&ids.tables_made, make_tables);
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    int put = -1;
    ref_stripe *s = ref_table_lock(is_class(object) ? &ids.classes_by_id : &ids.objects_by_id, (uint64_t)tag);
    /* A full stripe: no reference made only to be deleted (a dump of a big heap). */
    jweak ref = ref_stripe_may_put(s) ? (*jni)->NewWeakGlobalRef(jni, object) : NULL;
    if (ref != NULL) put = ref_stripe_put(s, (uint64_t)tag, ref, drop_if_gone, jni);
    ref_table_unlock(s);
    if (ref == NULL) (*jni)->ExceptionClear(jni);       /* out of memory (or full): the scan finds it */
    else if (put != 0) (*jni)->DeleteWeakGlobalRef(jni, ref);
    if (put < 0) atomic_store(&ids.unlisted, 1);
    jvmpi_in_layer = was;
}

jobjectID jvmpi_id_of(jobject object) {
    if (object == NULL) return NULL;
    jlong tag = 0;
    if (jvmpi_failed((*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag), "GetTag")) return NULL;
    if (has_id(tag)) return (jobjectID)(intptr_t)tag;
    /* Under a lock: two threads meeting one untagged object must agree;
     * listed before the lock goes, so no thread has the id before its entry. */
    pthread_rwlock_rdlock(&ids.walking);
    pthread_mutex_lock(&ids.tagging);
    jvmtiError err = (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag);
    /* It may be a new object with its id pending; not a class (the JVM
     * allocates those), the first sight of which would promote them all. */
    if (err == JVMTI_ERROR_NONE && !has_id(tag) && jvmpi_pending_any() && !is_class(object)) {
        jvmpi_pending_promote_one(jni_here(), object, 0);
        err = (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag);
    }
    if (err == JVMTI_ERROR_NONE && !has_id(tag)) {
        tag = next_tag();
        if (jvmpi_failed((*jvmpi_jvmti)->SetTag(jvmpi_jvmti, object, tag), "SetTag")) tag = 0;
        else list(jni_here(), tag, object);
    }
    pthread_mutex_unlock(&ids.tagging);
    pthread_rwlock_unlock(&ids.walking);
    return (jobjectID)(intptr_t)tag;
}

jobjectID jvmpi_new_id(JNIEnv *jni, jobject object, int may_pend) {
    jlong tag = 0;
    pthread_rwlock_rdlock(&ids.walking);
    /* A heap walk between the allocation and here may have given it its id. */
    int walked_before = atomic_load(&ids.walked);
    jvmtiError err = walked_before ? (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) : JVMTI_ERROR_NONE;
    if (err == JVMTI_ERROR_NONE && !has_id(tag)) {
        tag = next_tag();
        /* no tag (its lock) unless pending_ids.c cannot keep it */
        if (walked_before || !may_pend || jvmpi_pending_put(jni, object, tag) != 0)
            err = (*jvmpi_jvmti)->SetTag(jvmpi_jvmti, object, tag);
        if (!atomic_load_explicit(&ids.unlisted, memory_order_relaxed)) atomic_store(&ids.unlisted, 1);   /* not listed */
    }
    pthread_rwlock_unlock(&ids.walking);
    if (jvmpi_failed(err, "SetTag")) return NULL;
    return (jobjectID)(intptr_t)tag;
}

/* ------------------------------------------------------------ naming before a walk */

static jint JNICALL mark_unnamed(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user) {
    (void)class_tag; (void)size; (void)length;
    *tag_ptr = UNNAMED;
    (*(jlong *)user)++;
    return 0;
}

void jvmpi_ids_name_all(JNIEnv *jni) {
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.heap_iteration_callback = mark_unnamed;
    jlong marked = 0;
    if (jvmpi_failed((*jvmpi_jvmti)->IterateThroughHeap(jvmpi_jvmti, JVMTI_HEAP_FILTER_TAGGED, NULL, &callbacks,
                                                        &marked), "IterateThroughHeap")) return;
    if (marked == 0) return;
    /* If this fails, the marked objects keep the mark, which reads as no
     * id: the walk names them (unlisted). */
    jlong mark = UNNAMED;
    jint n = 0;
    jobject *objects = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetObjectsWithTags(jvmpi_jvmti, 1, &mark, &n, &objects, NULL),
                     "GetObjectsWithTags")) return;
    for (jint i = 0; i < n; i++) {
        jlong tag = next_tag();
        if ((*jvmpi_jvmti)->SetTag(jvmpi_jvmti, objects[i], tag) == JVMTI_ERROR_NONE) list(jni, tag, objects[i]);
        (*jni)->DeleteLocalRef(jni, objects[i]);
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)objects);
}

/* ------------------------------------------------------------ from id to object */

/* The object under tag in t: *listed 1 if t has the id (the object may be
 * gone: NULL then). The local reference is made under the stripe's lock,
 * so the weak reference cannot be deleted meanwhile. */
static jobject listed_object(JNIEnv *jni, ref_table *t, jlong tag, int *listed) {
    ref_stripe *s = ref_table_lock(t, (uint64_t)tag);
    jweak ref = ref_stripe_get(s, (uint64_t)tag);
    jobject object = ref != NULL ? (*jni)->NewLocalRef(jni, ref) : NULL;
    ref_table_unlock(s);
    *listed = ref != NULL;
    return object;
}

jobject jvmpi_object_of(JNIEnv *jni, jobjectID id) {
    if (id == NULL || jni == NULL) return NULL;
    jlong tag = (jlong)(intptr_t)id;
    if (!has_id(tag)) return NULL;
    pthread_once(&ids.tables_made, make_tables);
    int listed = 0;
    jobject found = listed_object(jni, &ids.classes_by_id, tag, &listed);
    if (!listed) found = listed_object(jni, &ids.objects_by_id, tag, &listed);
    /* Every id given is listed until its object is freed: a miss is gone. */
    if (listed || atomic_load(&ids.unlisted) == 0) return found;
    jvmpi_pending_promote_one(jni, NULL, tag);          /* a pending id is found as a tag */
    jint count = 0;
    jobject *objects = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetObjectsWithTags(jvmpi_jvmti, 1, &tag, &count, &objects, NULL),
                     "GetObjectsWithTags")) return NULL;
    found = count > 0 ? objects[0] : NULL;
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)objects);
    if (found != NULL) list(jni, tag, found);            /* found once, a hit from now on */
    return found;
}

size_t jvmpi_ids_forget(JNIEnv *jni, jlong *tags, size_t n) {
    size_t kept = 0;
    pthread_once(&ids.tables_made, make_tables);
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    for (size_t i = 0; i < n; i++) {
        jlong tag = tags[i];
        if (!has_id(tag)) continue;                     /* marked by jvmpi_ids_name_all, freed before named */
        tags[kept++] = tag;
        ref_stripe *s = ref_table_lock(&ids.classes_by_id, (uint64_t)tag);
        jweak ref = ref_stripe_take(s, (uint64_t)tag);
        ref_table_unlock(s);
        if (ref == NULL) {
            s = ref_table_lock(&ids.objects_by_id, (uint64_t)tag);
            ref = ref_stripe_take(s, (uint64_t)tag);
            ref_table_unlock(s);
        }
        if (ref != NULL && jni != NULL) (*jni)->DeleteWeakGlobalRef(jni, ref);
    }
    jvmpi_in_layer = was;
    return kept;
}
