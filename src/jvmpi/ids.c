/*
 * ids: JVMPI's jobjectID is an object's JVMTI tag. A tag stays with its
 * object whatever the GC does, so an id never changes: the layer never
 * needs OBJECT_MOVE, and an agent may keep ids with GC enabled. Ids are
 * multiples of 8, so they look like the aligned pointers agents of the time
 * were given (some kept flags in the low bits).
 */
#include <pthread.h>
#include <stdint.h>

#include "layer.h"

static atomic_llong last_id;    /* ids handed out so far, in units of 8 */
static pthread_mutex_t tagging = PTHREAD_MUTEX_INITIALIZER;
/* Tagging (read side, many at once) against a heap walk that tags what it
 * meets (write side): an object a walk gives an id must not get another
 * from a thread that read its tag as 0 before the walk. Writers first, so
 * allocating threads cannot keep a dump waiting. */
static pthread_rwlock_t walking = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static atomic_int walked;       /* a walk has tagged objects: new objects may have ids already */

void jvmpi_ids_hold(void) { pthread_rwlock_wrlock(&walking); atomic_store(&walked, 1); }
void jvmpi_ids_release(void) { pthread_rwlock_unlock(&walking); }

jobjectID jvmpi_id_of(jobject object) {
    if (object == NULL) return NULL;
    jlong tag = 0;
    if (jvmpi_failed((*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag), "GetTag")) return NULL;
    if (tag != 0) return (jobjectID)(intptr_t)tag;
    /* Under a lock: two threads meeting one untagged object must agree. */
    pthread_rwlock_rdlock(&walking);
    pthread_mutex_lock(&tagging);
    if ((*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) == JVMTI_ERROR_NONE && tag == 0) {
        tag = jvmpi_next_tag();
        if (jvmpi_failed((*jvmpi_jvmti)->SetTag(jvmpi_jvmti, object, tag), "SetTag")) tag = 0;
    }
    pthread_mutex_unlock(&tagging);
    pthread_rwlock_unlock(&walking);
    return (jobjectID)(intptr_t)tag;
}

jlong jvmpi_next_tag(void) { return (jlong)(atomic_fetch_add(&last_id, 1) + 1) << 3; }

jobjectID jvmpi_new_id(jobject object) {
    jlong tag = 0;
    pthread_rwlock_rdlock(&walking);
    /* A heap walk between the allocation and here may have given it its id. */
    jvmtiError err = atomic_load(&walked) ? (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) : JVMTI_ERROR_NONE;
    if (err == JVMTI_ERROR_NONE && tag == 0) {
        tag = jvmpi_next_tag();
        err = (*jvmpi_jvmti)->SetTag(jvmpi_jvmti, object, tag);
    }
    pthread_rwlock_unlock(&walking);
    if (jvmpi_failed(err, "SetTag")) return NULL;
    return (jobjectID)(intptr_t)tag;
}

jobject jvmpi_object_of(JNIEnv *jni, jobjectID id) {
    (void)jni;
    if (id == NULL) return NULL;
    jlong tag = (jlong)(intptr_t)id;
    jint count = 0;
    jobject *objects = NULL;
    if (jvmpi_failed((*jvmpi_jvmti)->GetObjectsWithTags(jvmpi_jvmti, 1, &tag, &count, &objects, NULL),
                     "GetObjectsWithTags")) return NULL;
    jobject found = count > 0 ? objects[0] : NULL;
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)objects);
    return found;
}
