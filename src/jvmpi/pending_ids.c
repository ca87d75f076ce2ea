/*
 * pending_ids: the ids of new objects not tagged yet (issue 34).
 *
 * An id is a tag (ids.c), but tagging every new object costs a SetTag under
 * the JVM's one tag-map lock, which allocating threads then fight over: the
 * largest part of what OBJECT_ALLOC costs through the layer. Most new
 * objects die young, and an agent of heap=sites never asks anything of
 * them by object. So an object the byte code allocates gets its id without
 * a tag: the layer keeps a JNI weak global reference to it (OopStorage,
 * no global lock) and the id, in striped bounded buffers (a thread always
 * uses the same stripe, so two allocating threads rarely share one).
 *
 * Such an object is "pending". Its id becomes its tag (promotion: SetTag,
 * the weak reference dropped) as soon as something needs object -> id or
 * id -> object: jvmpi_id_of meeting an untagged object that is not a
 * class, RequestEvent or jobjectID2jobject by an id that is not listed, a
 * JVMTI VMObjectAlloc that may be of an object constructed here (JNI
 * NewObject, reflection): then that one object is searched for (by id, or
 * by IsSameObject, newest first) and promoted, no other; before a heap
 * walk, every pending object (and new objects are tagged at once from the
 * first walk on: ids.c). Promoting them all at each such look-up tagged
 * nearly every object again (the look-ups come hundreds of times a run,
 * with up to a million pending), and a search costs far less than the
 * tags. An id never changes and is never given twice: an object is
 * searched for before it gets a new id, and one tagged meanwhile keeps its
 * tag (its pending id reads as freed). A pending object that died
 * is found by sweeping the weak references after each collection (the
 * "JVMPI GC" thread, gc.c), and its OBJECT_FREE posted with those of the
 * tagged objects, between the same GC_START and GC_FINISH.
 *
 * Bounded: at most PENDING_MAX entries in all (16 bytes each, plus the
 * JVM's 8-byte slot for the reference: 48 MB at most; HotSpot's tag map
 * spends more per tagged object, and the tags this saves were as many).
 * It must hold what the threads allocate between two collections, else
 * most new objects end up tagged after all: a thread that finds the bound
 * reached sweeps its stripe (the dead go to the next delivery's frees) and,
 * if that freed less than half of it, promotes it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer.h"

#define STRIPES     16
#define PENDING_MAX (1L << 21)

typedef struct pending {
    jweak ref;
    jlong id;
} pending;

typedef struct stripe {
    pthread_mutex_t lock;
    pending *entries;
    uint32_t n, cap;
} stripe;

/* The pending ids: one table per process, as there is one JVMPI agent. */
typedef struct pending_table {
    stripe stripes[STRIPES];
    pthread_once_t stripes_made;
    atomic_long n_pending;           /* entries in all stripes (a hint: 0 lets look-ups skip them) */
    atomic_uint next_stripe;
} pending_table;

static pending_table pendings = {
    .stripes_made = PTHREAD_ONCE_INIT,
};

static void make_stripes(void) {
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&pendings.stripes[i].lock, NULL);
}

static stripe *stripe_here(void) {
    pthread_once(&pendings.stripes_made, make_stripes);
    jvmpi_thread_words *w = jvmpi_words();
    if (w->pending_stripe == 0) w->pending_stripe = (int)(atomic_fetch_add(&pendings.next_stripe, 1) % STRIPES) + 1;
    return &pendings.stripes[w->pending_stripe - 1];
}

static int add_dead(jlong **dead, size_t *n_dead, size_t *cap_dead, jlong id) {
    if (*n_dead == *cap_dead) {
        size_t cap = *cap_dead ? *cap_dead * 2 : 1024;
        jlong *bigger = realloc(*dead, cap * sizeof *bigger);
        if (bigger == NULL) return 0;
        *dead = bigger;
        *cap_dead = cap;
    }
    (*dead)[(*n_dead)++] = id;
    return 1;
}

/* The stripe's entries: the live ones tagged with their ids, the dead ones
 * freed (dead: their ids go to *dead, malloc'ed, count *n_dead). Under its
 * lock; JNI on this thread. */
static void promote_locked(JNIEnv *jni, stripe *s, jlong **dead, size_t *n_dead, size_t *cap_dead, int tag_live) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        pending p = s->entries[i];
        jobject object = (*jni)->NewLocalRef(jni, p.ref);
        if (object == NULL) {
            if (!add_dead(dead, n_dead, cap_dead, p.id)) { s->entries[kept++] = p; continue; }   /* swept again later */
        } else if (!tag_live) {
            (*jni)->DeleteLocalRef(jni, object);
            s->entries[kept++] = p;
            continue;
        } else {
            /* Tagged since (the VMObjectAlloc of an object a JDK native
             * constructed, which allocs.c did not take for one): it keeps
             * that id, and this one reads as freed, so the agent's counts
             * stay right. If SetTag fails the id is lost to the object: it
             * reads as never named (a new id at its first look-up). */
            jlong tag = 0;
            int tagged = (*jvmpi_jvmti)->GetTag(jvmpi_jvmti, object, &tag) == JVMTI_ERROR_NONE && tag != 0;
            if (!tagged) jvmpi_failed((*jvmpi_jvmti)->SetTag(jvmpi_jvmti, object, p.id), "SetTag (a pending id)");
            (*jni)->DeleteLocalRef(jni, object);
            if (tagged && !add_dead(dead, n_dead, cap_dead, p.id)) { s->entries[kept++] = p; continue; }
        }
        (*jni)->DeleteWeakGlobalRef(jni, p.ref);
    }
    atomic_fetch_sub(&pendings.n_pending, (long)(s->n - kept));
    s->n = kept;
}

/* What promote_locked found dead: freed at the next delivery. */
static void hand_dead(jlong *dead, size_t n_dead) {
    if (n_dead > 0) jvmpi_gc_freed(dead, n_dead);
    free(dead);
}

int jvmpi_pending_put(JNIEnv *jni, jobject object, jlong id) {
    if (jni == NULL) return -1;
    stripe *s = stripe_here();
    int was = jvmpi_in_layer;             /* the layer's own reference: no JNI_WEAK_GLOBALREF event */
    jvmpi_in_layer = 1;
    jweak ref = (*jni)->NewWeakGlobalRef(jni, object);
    if (ref == NULL) {
        (*jni)->ExceptionClear(jni);
        jvmpi_in_layer = was;
        return -1;
    }
    jlong *dead = NULL;
    size_t n_dead = 0, cap_dead = 0;
    pthread_mutex_lock(&s->lock);
    if (s->n > 0 && atomic_load_explicit(&pendings.n_pending, memory_order_relaxed) >= PENDING_MAX) {
        uint32_t was_n = s->n;
        promote_locked(jni, s, &dead, &n_dead, &cap_dead, 0);
        if (s->n > was_n / 2) promote_locked(jni, s, &dead, &n_dead, &cap_dead, 1);
    }
    if (s->n == s->cap && atomic_load_explicit(&pendings.n_pending, memory_order_relaxed) < PENDING_MAX) {
        uint32_t cap = s->cap ? s->cap * 2 : 1024;
        pending *bigger = realloc(s->entries, (size_t)cap * sizeof *bigger);
        if (bigger != NULL) { s->entries = bigger; s->cap = cap; }
    }
    if (s->n == s->cap) promote_locked(jni, s, &dead, &n_dead, &cap_dead, 1);      /* out of memory */
    int put = s->n < s->cap;
    if (put) {
        s->entries[s->n++] = (pending){ ref, id };
        atomic_fetch_add(&pendings.n_pending, 1);
    }
    pthread_mutex_unlock(&s->lock);
    if (!put) (*jni)->DeleteWeakGlobalRef(jni, ref);
    jvmpi_in_layer = was;
    hand_dead(dead, n_dead);
    return put ? 0 : -1;
}

static void each_stripe(JNIEnv *jni, int tag_live) {
    if (jni == NULL || atomic_load(&pendings.n_pending) == 0) return;
    pthread_once(&pendings.stripes_made, make_stripes);
    jlong *dead = NULL;
    size_t n_dead = 0, cap_dead = 0;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_lock(&pendings.stripes[i].lock);
        promote_locked(jni, &pendings.stripes[i], &dead, &n_dead, &cap_dead, tag_live);
        pthread_mutex_unlock(&pendings.stripes[i].lock);
    }
    jvmpi_in_layer = was;
    hand_dead(dead, n_dead);
}

void jvmpi_pending_promote_all(JNIEnv *jni) { each_stripe(jni, 1); }

void jvmpi_pending_sweep(JNIEnv *jni) { each_stripe(jni, 0); }

/* The entry of the object (or, object NULL, of the id) in s, promoted;
 * -1 if s has none, 0 if it was dead (freed), 1 if tagged. Under s's lock. */
static int promote_one_locked(JNIEnv *jni, stripe *s, jobject object, jlong id, jlong **dead, size_t *n_dead,
                              size_t *cap_dead) {
    for (uint32_t i = s->n; i-- > 0;) {             /* newest first: most look-ups are of recent objects */
        pending p = s->entries[i];
        if (object != NULL ? !(*jni)->IsSameObject(jni, p.ref, object) : p.id != id) continue;
        jobject live = (*jni)->NewLocalRef(jni, p.ref);
        if (live != NULL) {
            jvmpi_failed((*jvmpi_jvmti)->SetTag(jvmpi_jvmti, live, p.id), "SetTag (a pending id)");
            (*jni)->DeleteLocalRef(jni, live);
        } else if (!add_dead(dead, n_dead, cap_dead, p.id)) {
            return 0;                                   /* kept, swept later */
        }
        (*jni)->DeleteWeakGlobalRef(jni, p.ref);
        s->entries[i] = s->entries[--s->n];
        atomic_fetch_sub(&pendings.n_pending, 1);
        return live != NULL;
    }
    return -1;
}

int jvmpi_pending_promote_one(JNIEnv *jni, jobject object, jlong id) {
    if (jni == NULL || atomic_load(&pendings.n_pending) == 0) return 0;
    stripe *mine = stripe_here();
    jlong *dead = NULL;
    size_t n_dead = 0, cap_dead = 0;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    int found = -1;
    for (int i = -1; i < STRIPES && found < 0; i++) {  /* this thread's stripe first */
        stripe *s = i < 0 ? mine : &pendings.stripes[i];
        if (i >= 0 && s == mine) continue;
        pthread_mutex_lock(&s->lock);
        found = promote_one_locked(jni, s, object, id, &dead, &n_dead, &cap_dead);
        pthread_mutex_unlock(&s->lock);
    }
    jvmpi_in_layer = was;
    hand_dead(dead, n_dead);
    return found > 0;
}

int jvmpi_pending_any(void) { return atomic_load(&pendings.n_pending) > 0; }
