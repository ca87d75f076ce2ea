/*
 * gc: GC_START, OBJECT_FREE, GC_FINISH (with the heap statistics the
 * specification asks for) and CLASS_UNLOAD, posted by a thread of the layer
 * ("JVMPI GC") after each collection.
 *
 * Why not in the GC: JVMTI's GarbageCollectionStart/Finish run with the world
 * stopped, where nothing can be counted, and since JDK 16 HotSpot posts
 * ObjectFree later, from its service thread. So the GC's finish only wakes
 * this thread, which then posts, as the specification orders them:
 *   GC_START; OBJECT_FREE for every object freed (a heap walk first counts
 *   the live objects and makes HotSpot post the frees still pending);
 *   GC_FINISH with used_objects, used_object_space, total_object_space;
 * all on this one thread, so an agent that takes its locks at GC_START and
 * releases them at GC_FINISH (as the specification asks) holds them across
 * the frees. A freed id that was a class's is a CLASS_UNLOAD instead, posted
 * after GC_FINISH. The collection itself is over by then: GC_START and
 * GC_FINISH bracket the layer's report of it, not the pause.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/events.h"
#include "layer.h"

static struct {
    jrawMonitorID lock;          /* guards the fields below; the thread waits on it */
    jlong        *freed;         /* tags freed since the last delivery */
    size_t        n_freed, cap_freed;
    int           collections;   /* GCs finished since the last delivery */
    int           lost;          /* frees that did not fit (memory): counted only */
    atomic_int    started;
    pthread_mutex_t delivering;  /* one GC_START..GC_FINISH at a time */
} gc_state = { .delivering = PTHREAD_MUTEX_INITIALIZER };

/* ObjectFree: only raw monitors and memory functions may be used here. */
static void JNICALL on_object_free(jvmtiEnv *jvmti, jlong tag) {
    (void)jvmti;
    if ((*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock) != JVMTI_ERROR_NONE) return;
    if (gc_state.n_freed == gc_state.cap_freed) {
        size_t cap = gc_state.cap_freed ? gc_state.cap_freed * 2 : 4096;
        jlong *bigger = realloc(gc_state.freed, cap * sizeof *bigger);
        if (bigger != NULL) { gc_state.freed = bigger; gc_state.cap_freed = cap; }
    }
    if (gc_state.n_freed < gc_state.cap_freed) gc_state.freed[gc_state.n_freed++] = tag;
    else gc_state.lost++;
    (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
}

void jvmpi_gc_freed(const jlong *ids, size_t n) {
    if (!jvmpi_enabled(JVMPI_EVENT_OBJECT_FREE)) return;   /* no delivery would take them */
    if ((*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock) != JVMTI_ERROR_NONE) return;
    if (gc_state.n_freed + n > gc_state.cap_freed) {
        size_t cap = gc_state.cap_freed ? gc_state.cap_freed : 4096;
        while (cap < gc_state.n_freed + n) cap *= 2;
        jlong *bigger = realloc(gc_state.freed, cap * sizeof *bigger);
        if (bigger != NULL) { gc_state.freed = bigger; gc_state.cap_freed = cap; }
    }
    for (size_t i = 0; i < n; i++) {
        if (gc_state.n_freed < gc_state.cap_freed) gc_state.freed[gc_state.n_freed++] = ids[i];
        else gc_state.lost++;
    }
    (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
}

/* In the GC's own callback (world stopped): wake the thread, nothing more. */
static void JNICALL on_gc_finish(jvmtiEnv *jvmti) {
    (void)jvmti;
    if ((*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock) != JVMTI_ERROR_NONE) return;
    gc_state.collections++;
    (*jvmpi_jvmti)->RawMonitorNotifyAll(jvmpi_jvmti, gc_state.lock);
    (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
}

typedef struct heap_totals { jlong objects, bytes; } heap_totals;

static jint JNICALL count_object(jlong class_tag, jlong size, jlong *tag, jint length, void *user) {
    (void)class_tag; (void)tag; (void)length;
    heap_totals *t = user;
    t->objects++;
    t->bytes += size;
    return 0;
}

/* Live objects and their bytes. The walk also makes HotSpot post the
 * ObjectFree events it still holds, so they are in gc_state.freed after it. */
static heap_totals walk_heap(void) {
    heap_totals t = { 0, 0 };
    jvmtiHeapCallbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.heap_iteration_callback = count_object;
    jvmpi_failed((*jvmpi_jvmti)->IterateThroughHeap(jvmpi_jvmti, 0, NULL, &callbacks, &t), "IterateThroughHeap");
    return t;
}

static jlong total_memory(JNIEnv *jni) {
    jclass runtime = (*jni)->FindClass(jni, "java/lang/Runtime");
    jmethodID get = runtime ? (*jni)->GetStaticMethodID(jni, runtime, "getRuntime", "()Ljava/lang/Runtime;") : NULL;
    jmethodID total = runtime ? (*jni)->GetMethodID(jni, runtime, "totalMemory", "()J") : NULL;
    jobject rt = get ? (*jni)->CallStaticObjectMethod(jni, runtime, get) : NULL;
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); rt = NULL; }
    jlong bytes = rt && total ? (*jni)->CallLongMethod(jni, rt, total) : 0;
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); bytes = 0; }
    if (rt) (*jni)->DeleteLocalRef(jni, rt);
    if (runtime) (*jni)->DeleteLocalRef(jni, runtime);
    return bytes;
}

/* Take the frees gathered so far (the caller frees the array). */
static jlong *take_freed(size_t *n) {
    (*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock);
    jlong *freed = gc_state.freed;
    *n = gc_state.n_freed;
    gc_state.freed = NULL;
    gc_state.n_freed = gc_state.cap_freed = 0;
    (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
    return freed;
}

/* OBJECT_FREE for objects; classes are kept aside for CLASS_UNLOAD. */
static size_t post_frees(JNIEnv *jni, jlong *freed, size_t n) {
    size_t classes = 0;
    n = jvmpi_ids_forget(jni, freed, n);
    for (size_t i = 0; i < n; i++) {
        jobjectID id = (jobjectID)(intptr_t)freed[i];
        if (jvmpi_forget_class(id)) { freed[classes++] = freed[i]; continue; }
        if (!jvmpi_enabled(JVMPI_EVENT_OBJECT_FREE)) continue;
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_OBJECT_FREE, jni);
        e.u.obj_free.obj_id = id;
        jvmpi_notify(&e);
    }
    /* their methods' jmethodIDs died with them */
    if (classes > 0) jvmpi_method_facts_forget();
    return classes;
}

static void post_class_unloads(JNIEnv *jni, const jlong *classes, size_t n) {
    for (size_t i = 0; i < n && jvmpi_enabled(JVMPI_EVENT_CLASS_UNLOAD); i++) {
        JVMPI_Event e = jvmpi_event(JVMPI_EVENT_CLASS_UNLOAD, jni);
        e.u.class_unload.class_id = (jobjectID)(intptr_t)classes[i];
        jvmpi_notify(&e);
    }
}

static void post_gc_finish(JNIEnv *jni, heap_totals live, jlong total) {
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_GC_FINISH, jni);
    e.u.gc_info.used_objects = live.objects;
    e.u.gc_info.used_object_space = live.bytes;
    e.u.gc_info.total_object_space = total;
    jvmpi_notify(&e);
}

/* A GC_START..GC_FINISH pair per collection since the last report. The
 * heap is walked once, after them all: every pair gets its statistics, and
 * the frees (which HotSpot does not tell per collection) go in the last. */
static void deliver_locked(JNIEnv *jni, int collections) {
    int walk = jvmpi_enabled(JVMPI_EVENT_GC_FINISH) || jvmpi_enabled(JVMPI_EVENT_OBJECT_FREE) ||
               jvmpi_enabled(JVMPI_EVENT_CLASS_UNLOAD);
    heap_totals live = walk ? walk_heap() : (heap_totals){ 0, 0 };
    jlong total = jvmpi_enabled(JVMPI_EVENT_GC_FINISH) ? total_memory(jni) : 0;
    size_t n = 0, classes = 0;
    jlong *freed = NULL;
    for (int i = 0; i < collections; i++) {
        /* Once JVM_SHUT_DOWN is posted only its thread's events reach the
         * agent (loader.c), and events close between two deliveries: a
         * delivery by another thread after that posts nothing and leaves
         * the frees to that thread's (the RunGC of a handler of
         * JVM_SHUT_DOWN, waiting for this one), else they would be lost. */
        if (!jvmpi_may_post()) break;
        if (jvmpi_enabled(JVMPI_EVENT_GC_START)) jvmpi_post_bare(jni, JVMPI_EVENT_GC_START);
        if (i == collections - 1) {
            jvmpi_pending_sweep(jni);           /* the new objects without a tag that died */
            freed = take_freed(&n);
            classes = post_frees(jni, freed, n);
        }
        if (jvmpi_enabled(JVMPI_EVENT_GC_FINISH)) post_gc_finish(jni, live, total);
    }
    post_class_unloads(jni, freed, classes);
    free(freed);
}

/* jvmpi_words()->delivering: this thread holds gc_state.delivering: in a delivery
 * (an agent may ask for a heap dump from a GC event's handler), or around a
 * dump (RunGC from a HEAP_DUMP's handler). */
static void deliver(JNIEnv *jni, int collections) {
    jvmpi_thread_words *w = jvmpi_words();
    int mine = !w->delivering;
    if (mine) {
        pthread_mutex_lock(&gc_state.delivering);
        w->delivering = 1;
    }
    deliver_locked(jni, collections);
    if (mine) {
        w->delivering = 0;
        pthread_mutex_unlock(&gc_state.delivering);
    }
}

/* A delivery in progress may be waiting for a lock of the agent's (taken
 * at GC_START): an agent that asks for a dump holding that lock would wait
 * here for ever, as it would on a JVMPI VM, where the dump waits for the
 * GC. HPROF's order (dump lock, then the GC's) keeps clear of it. */
void jvmpi_gc_hold(void) {
    if (jvmpi_words()->delivering++ == 0) pthread_mutex_lock(&gc_state.delivering);
}

void jvmpi_gc_release(void) {
    if (--jvmpi_words()->delivering == 0) pthread_mutex_unlock(&gc_state.delivering);
}

/* The collections not reported yet, and none from now on by the thread. */
static int take_collections(void) {
    (*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock);
    int n = gc_state.collections;
    gc_state.collections = 0;
    (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
    return n;
}

static void JNICALL gc_thread(jvmtiEnv *jvmti, JNIEnv *jni, void *arg) {
    (void)jvmti; (void)arg;
    jvmpi_in_layer = 1;                 /* its own Java calls (Runtime) are not the program's */
    for (;;) {
        (*jvmpi_jvmti)->RawMonitorEnter(jvmpi_jvmti, gc_state.lock);
        while (gc_state.collections == 0 || !jvmpi_may_post())   /* after JVM_SHUT_DOWN: its thread delivers */
            if ((*jvmpi_jvmti)->RawMonitorWait(jvmpi_jvmti, gc_state.lock, 0) != JVMTI_ERROR_NONE) {
                (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
                return;                 /* the VM is going away */
            }
        int n = gc_state.collections;
        gc_state.collections = 0;
        (*jvmpi_jvmti)->RawMonitorExit(jvmpi_jvmti, gc_state.lock);
        deliver(jni, n);
    }
}

int jvmpi_gc_subscribe(void) {
    if (jvmpi_failed((*jvmpi_jvmti)->CreateRawMonitor(jvmpi_jvmti, "_jvmpi_gc", &gc_state.lock), "CreateRawMonitor"))
        return -1;
    return events_subscribe(JVMTI_EVENT_OBJECT_FREE, EVENT_FN(on_object_free)) |
           events_subscribe(JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, EVENT_FN(on_gc_finish));
}

/* RunGC: the collection and its events, on the calling thread before it
 * returns (the specification: RunGC's events are synchronous). */
void jvmpi_gc_run(JNIEnv *jni) {
    if (jvmpi_failed((*jvmpi_jvmti)->ForceGarbageCollection(jvmpi_jvmti), "ForceGarbageCollection")) return;
    if (jni == NULL) return;
    int n = take_collections();         /* this thread reports them, not the GC thread */
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    deliver(jni, n > 0 ? n : 1);
    jvmpi_in_layer = was;
}

void jvmpi_gc_flush(JNIEnv *jni) {
    int n = take_collections();
    if (n == 0 || jni == NULL) return;
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    deliver(jni, n);
    jvmpi_in_layer = was;
}

/* The thread, from VMInit on. */
int jvmpi_gc_start(JNIEnv *jni) {
    if (atomic_exchange(&gc_state.started, 1)) return 0;
    jclass k = (*jni)->FindClass(jni, "java/lang/Thread");
    jmethodID init = k ? (*jni)->GetMethodID(jni, k, "<init>", "(Ljava/lang/String;)V") : NULL;
    jstring name = init ? (*jni)->NewStringUTF(jni, "JVMPI GC") : NULL;
    jthread thread = name ? (*jni)->NewObject(jni, k, init, name) : NULL;
    if (thread == NULL) {
        if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
        fprintf(stderr, "jvmpi: cannot make the JVMPI GC thread: GC_START/FINISH, OBJECT_FREE and "
                        "CLASS_UNLOAD will not be posted\n");
        return -1;
    }
    return jvmpi_failed((*jvmpi_jvmti)->RunAgentThread(jvmpi_jvmti, thread, gc_thread, NULL,
                                                       JVMTI_THREAD_MAX_PRIORITY), "RunAgentThread") ? -1 : 0;
}

/* The JVMTI events each JVMPI event of this module needs. */
jint jvmpi_gc_switch(jint event_type, int on) {
    int frees = event_type == JVMPI_EVENT_OBJECT_FREE || event_type == JVMPI_EVENT_CLASS_UNLOAD;
    if (on) {
        if (events_want(jvmpi_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH) != 0) return JVMPI_FAIL;
        if (frees && events_want(jvmpi_jvmti, JVMTI_EVENT_OBJECT_FREE) != 0) return JVMPI_FAIL;
    } else {
        events_unwant(jvmpi_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH);
        if (frees) events_unwant(jvmpi_jvmti, JVMTI_EVENT_OBJECT_FREE);
    }
    return JVMPI_SUCCESS;
}
