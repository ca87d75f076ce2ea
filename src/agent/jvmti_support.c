/* jvmti_support.c: see jvmti_support.h. */
#include "jvmti_support.h"

#include <pthread.h>
#include <stdatomic.h>

#include "../core/idmap.h"
#include "../bci/opcodes.h"
#include "../heap/heap_tags.h"
#include "stack_walk_fast.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

JavaVM   *hprof_vm;
jvmtiEnv *hprof_jvmti;

/* ------------------------------------------------------------------ errors */

/* Report a failed JVMTI call with its error name; returns 1 if it failed. */
int jvmti_failed(jvmtiError err, const char *what)
{
    if (err == JVMTI_ERROR_NONE)
        return 0;
    char *name = NULL;
    if (hprof_jvmti == NULL || (*hprof_jvmti)->GetErrorName(hprof_jvmti, err, &name) != JVMTI_ERROR_NONE)
        name = NULL;
    fprintf(stderr, "hprof: JVMTI %s failed: %s (%d)\n", what, name ? name : "unknown error", (int)err);
    if (name)
        (*hprof_jvmti)->Deallocate(hprof_jvmti, (unsigned char *)name);
    return 1;
}

void jvmti_free(void *p)
{
    if (p)
        (*hprof_jvmti)->Deallocate(hprof_jvmti, (unsigned char *)p);
}

/* ---------------------------------------------------------- method resolver */

/* jmethodID -> method serial, asking JVMTI the first time a method is seen.
 * Runs on a Java thread (drain thread, SIGQUIT dump, VMDeath). */
serial_t resolve_method(profile_tables *tables, const void *method_ptr, void *context)
{
    (void)context;
    jmethodID method = (jmethodID)method_ptr;
    if (method == NULL)
        return 0;
    serial_t known = method_find(tables, (uint64_t)(uintptr_t)method);
    if (known)
        return known;

    jvmtiEnv *jvmti = hprof_jvmti;
    JNIEnv *jni = NULL;
    if ((*hprof_vm)->GetEnv(hprof_vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK)
        jni = NULL;

    jclass klass = NULL;
    char *class_sig = NULL, *name = NULL, *msig = NULL, *source = NULL;
    jint line_count = 0;
    jvmtiLineNumberEntry *table = NULL;
    jboolean is_native = JNI_FALSE;
    serial_t serial = 0;

    /* A class unloaded since the sample makes these fail with
     * INVALID_METHODID: the caller then counts an "unresolved_method". */
    if ((*jvmti)->GetMethodDeclaringClass(jvmti, method, &klass) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetMethodName(jvmti, method, &name, &msig, NULL) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetClassSignature(jvmti, klass, &class_sig, NULL) != JVMTI_ERROR_NONE)
        goto done;
    if ((*jvmti)->GetSourceFileName(jvmti, klass, &source) != JVMTI_ERROR_NONE)
        source = NULL;              /* ABSENT_INFORMATION: no SourceFile attribute */
    if ((*jvmti)->IsMethodNative(jvmti, method, &is_native) != JVMTI_ERROR_NONE)
        is_native = JNI_FALSE;
    if (!is_native &&
        (*jvmti)->GetLineNumberTable(jvmti, method, &line_count, &table) != JVMTI_ERROR_NONE) {
        table = NULL;               /* ABSENT_INFORMATION: compiled without -g:lines */
        line_count = 0;
    }

    line_entry stack_lines[256];
    line_entry *lines = line_count <= 256 ? stack_lines : malloc((size_t)line_count * sizeof *lines);
    if (lines == NULL)
        line_count = 0;
    for (jint i = 0; i < line_count; i++) {
        lines[i].start_bci = (int32_t)table[i].start_location;
        lines[i].line = table[i].line_number;
    }
    method_desc d = {
        .class_serial = class_serial_of_klass(klass),
        .name = name,
        .signature = msig,
        .source_file = source,
        .is_native = is_native ? 1 : 0,
        .lines = line_count ? lines : NULL,
        .line_count = (uint32_t)line_count,
    };
    if (d.class_serial)
        serial = method_add(tables, (uint64_t)(uintptr_t)method, &d);
    if (lines != stack_lines)
        free(lines);

done:
    jvmti_free(class_sig);
    jvmti_free(name);
    jvmti_free(msig);
    jvmti_free(source);
    jvmti_free(table);
    if (klass && jni)
        (*jni)->DeleteLocalRef(jni, klass);
    return serial;
}

/* ------------------------------------------------------- classes, threads */

serial_t class_serial_of_klass(jclass klass)
{
    /* The class serial is kept in the class object's JVMTI tag: after the
     * first time, naming a class costs one tag lookup instead of a
     * signature string allocated, hashed and freed. Without can_tag_objects
     * GetTag fails and the slow path is taken every time. */
    jlong tag = 0;
    int tagged = (*hprof_jvmti)->GetTag(hprof_jvmti, klass, &tag) == JVMTI_ERROR_NONE;
    if (tagged && heap_tag_is_class(tag))
        return (serial_t)tag;
    char *sig = NULL;
    serial_t serial = 0;
    if ((*hprof_jvmti)->GetClassSignature(hprof_jvmti, klass, &sig, NULL) != JVMTI_ERROR_NONE) {
        jvmti_free(sig);
        return 0;
    }
    if (!tagged) {
        serial = class_intern(agent_tables(), sig);
        jvmti_free(sig);
        return serial;
    }
    /* A serial of this name already claimed by another class object means
     * another class of the same name (another loader): it gets a serial of
     * its own. One thread at a time, so that two threads meeting one new
     * class agree on its serial. */
    static pthread_mutex_t claiming = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&claiming);
    if ((*hprof_jvmti)->GetTag(hprof_jvmti, klass, &tag) == JVMTI_ERROR_NONE && heap_tag_is_class(tag)) {
        serial = (serial_t)tag;                       /* another thread was first */
    } else {
        serial = class_intern(agent_tables(), sig);
        if (serial && !class_claim(agent_tables(), serial)) {
            serial = class_intern_another(agent_tables(), sig);
            if (serial)
                class_claim(agent_tables(), serial);
        }
        if (serial)
            (*hprof_jvmti)->SetTag(hprof_jvmti, klass, (jlong)serial);
    }
    pthread_mutex_unlock(&claiming);
    jvmti_free(sig);
    return serial;
}

serial_t class_serial_of_object(JNIEnv *jni, jobject object)
{
    if (object == NULL)
        return 0;
    jclass klass = (*jni)->GetObjectClass(jni, object);
    if (klass == NULL)
        return 0;
    serial_t serial = class_serial_of_klass(klass);
    (*jni)->DeleteLocalRef(jni, klass);
    return serial;
}

/* Thread serials by java.lang.Thread's `tid` (unique for the life of the
 * VM), for threads other than the caller. GetThreadLocalStorage on another
 * thread reads that thread's JVMTI state, which the thread frees while it
 * exits: HotSpot 25 crashed there once (NULL JvmtiEnvThreadState) when the
 * exit dump listed a thread that was ending. A field of the Thread object
 * can be read at any time. A thread leaves the map at its ThreadEnd. */
static struct {
    pthread_mutex_t lock;
    jfieldID        tid;               /* Thread.tid (NULL if absent), valid once looked_up */
    atomic_int      tid_looked_up;
    idmap           serials;           /* tid -> serial */
    atomic_uint     vthreads_given;    /* virtual threads given a serial (vthread_serial_bounded) */
} tids = { .lock = PTHREAD_MUTEX_INITIALIZER };

void jvmti_hold_locals(JNIEnv *jni, jint n)
{
    if ((*jni)->EnsureLocalCapacity(jni, n + 16) != 0)
        (*jni)->ExceptionClear(jni);        /* out of memory: only -Xcheck:jni would notice */
}

jfieldID thread_tid_field(JNIEnv *jni)
{
    if (!atomic_load_explicit(&tids.tid_looked_up, memory_order_acquire)) {
        jclass c = (*jni)->FindClass(jni, "java/lang/Thread");
        jfieldID f = c ? (*jni)->GetFieldID(jni, c, "tid", "J") : NULL;
        if ((*jni)->ExceptionCheck(jni))
            (*jni)->ExceptionClear(jni);
        if (c)
            (*jni)->DeleteLocalRef(jni, c);
        /* Written once, before the flag: readers read it after seeing the flag. */
        pthread_mutex_lock(&tids.lock);
        if (!atomic_load_explicit(&tids.tid_looked_up, memory_order_relaxed)) {
            tids.tid = f;
            atomic_store_explicit(&tids.tid_looked_up, 1, memory_order_release);
        }
        pthread_mutex_unlock(&tids.lock);
    }
    return tids.tid;
}

static jlong tid_of(JNIEnv *jni, jthread thread)
{
    jfieldID tid = thread_tid_field(jni);
    return tid ? (*jni)->GetLongField(jni, thread, tid) : 0;
}

void thread_serial_remember(JNIEnv *jni, jthread thread, serial_t serial)
{
    jlong tid = jni ? tid_of(jni, thread) : 0;
    if (tid <= 0)
        return;
    pthread_mutex_lock(&tids.lock);
    (void)idmap_put(&tids.serials, (uint64_t)tid, serial);   /* out of memory: TLS still answers */
    pthread_mutex_unlock(&tids.lock);
}

void thread_serial_forget(JNIEnv *jni, jthread thread)
{
    jlong tid = jni ? tid_of(jni, thread) : 0;
    if (tid <= 0)
        return;
    pthread_mutex_lock(&tids.lock);
    idmap_remove(&tids.serials, (uint64_t)tid);
    pthread_mutex_unlock(&tids.lock);
}

/* can_support_virtual_threads (JDK 21): the bit after
 * can_generate_sampled_object_alloc_events, which the JDK 17 headers leave
 * unnamed. Found by setting the named one (bit fields are laid out in
 * order): its byte and mask. */
static size_t vt_cap_bit(unsigned char *mask)
{
    jvmtiCapabilities probe;
    memset(&probe, 0, sizeof probe);
    probe.can_generate_sampled_object_alloc_events = 1;
    const unsigned char *p = (const unsigned char *)&probe;
    size_t bit = 0;
    while (bit < 8 * sizeof probe && !(p[bit / 8] & (1u << (bit % 8))))
        bit++;
    bit++;                                  /* the next one */
    if (bit >= 8 * sizeof probe)
        bit = 8 * sizeof probe - 1;         /* not found: a reserved bit, never offered */
    *mask = (unsigned char)(1u << (bit % 8));
    return bit / 8;
}

int jvmti_is_current(JNIEnv *jni, jthread thread)
{
    jthread self = NULL;
    if ((*hprof_jvmti)->GetCurrentThread(hprof_jvmti, &self) != JVMTI_ERROR_NONE || self == NULL)
        return 0;
    int same = (*jni)->IsSameObject(jni, self, thread) == JNI_TRUE;
    (*jni)->DeleteLocalRef(jni, self);
    return same;
}

int jvmti_has_virtual_threads(const jvmtiCapabilities *caps)
{
    unsigned char mask;
    size_t byte = vt_cap_bit(&mask);
    return (((const unsigned char *)caps)[byte] & mask) != 0;
}

int jvmti_want_virtual_threads(const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    if (!jvmti_has_virtual_threads(potential))
        return 0;
    unsigned char mask;
    ((unsigned char *)caps)[vt_cap_bit(&mask)] |= mask;
    return 1;
}

/* The two events' indexes (HotSpot's numbering, the same for every
 * environment). Asked each time: at a collector's start and stop only. */
typedef struct mount_event_ids {
    jint mount;
    jint unmount;
} mount_event_ids;

/* 0 with *ids set, or -1 if this JVM has not both (or JVMTI failed: said). */
static int find_mount_events(jvmtiEnv *jvmti, mount_event_ids *ids)
{
    static const char mount_id[] = "com.sun.hotspot.events.VirtualThreadMount";
    static const char unmount_id[] = "com.sun.hotspot.events.VirtualThreadUnmount";
    jint n = 0, mount = -1, unmount = -1;
    jvmtiExtensionEventInfo *events = NULL;
    if (jvmti_failed((*jvmti)->GetExtensionEvents(jvmti, &n, &events), "GetExtensionEvents"))
        return -1;
    for (jint i = 0; i < n; i++) {
        if (strcmp(events[i].id, mount_id) == 0)
            mount = events[i].extension_event_index;
        else if (strcmp(events[i].id, unmount_id) == 0)
            unmount = events[i].extension_event_index;
        for (jint p = 0; p < events[i].param_count; p++)
            jvmti_free(events[i].params[p].name);
        jvmti_free(events[i].params);
        jvmti_free(events[i].id);
        jvmti_free(events[i].short_description);
    }
    jvmti_free(events);
    if (mount < 0 || unmount < 0)
        return -1;
    *ids = (mount_event_ids){ mount, unmount };
    return 0;
}

static void mount_events_off(jvmtiEnv *jvmti, mount_event_ids ids)
{
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, (jvmtiEvent)ids.mount, NULL);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, (jvmtiEvent)ids.unmount, NULL);
    (*jvmti)->SetExtensionEventCallback(jvmti, ids.mount, NULL);
    (*jvmti)->SetExtensionEventCallback(jvmti, ids.unmount, NULL);
}

int jvmti_mount_events_on(jvmtiEnv *jvmti, jvmtiExtensionEvent on_mount, jvmtiExtensionEvent on_unmount)
{
    mount_event_ids ids;
    if (find_mount_events(jvmti, &ids) != 0)
        return -1;
    /* HotSpot posts them to an environment that set a callback and enabled
     * them, by their index as the event type. */
    if (jvmti_failed((*jvmti)->SetExtensionEventCallback(jvmti, ids.mount, on_mount),
                     "SetExtensionEventCallback (VirtualThreadMount)") ||
        jvmti_failed((*jvmti)->SetExtensionEventCallback(jvmti, ids.unmount, on_unmount),
                     "SetExtensionEventCallback (VirtualThreadUnmount)") ||
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)ids.mount, NULL),
                     "SetEventNotificationMode (VirtualThreadMount)") ||
        jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)ids.unmount, NULL),
                     "SetEventNotificationMode (VirtualThreadUnmount)")) {
        mount_events_off(jvmti, ids);
        return -1;
    }
    return 0;
}

void jvmti_mount_events_off(jvmtiEnv *jvmti)
{
    mount_event_ids ids;
    if (find_mount_events(jvmti, &ids) == 0)
        mount_events_off(jvmti, ids);
}

jvmtiEnv *jvmti_virtual_thread_env(JavaVM *vm)
{
    jvmtiEnv *env = NULL;
    jvmtiCapabilities potential, caps;
    memset(&caps, 0, sizeof caps);
    if ((*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL)
        return NULL;
    if (jvmti_failed((*env)->GetPotentialCapabilities(env, &potential), "GetPotentialCapabilities") ||
        !jvmti_want_virtual_threads(&potential, &caps) ||
        jvmti_failed((*env)->AddCapabilities(env, &caps), "AddCapabilities (can_support_virtual_threads)")) {
        (*env)->DisposeEnvironment(env);
        return NULL;
    }
    return env;
}

serial_t thread_register(JNIEnv *jni, jthread thread, const char *except_name)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmtiThreadInfo info;
    memset(&info, 0, sizeof info);
    if (jvmti_failed((*jvmti)->GetThreadInfo(jvmti, thread, &info), "GetThreadInfo"))
        return 0;
    char *group_name = NULL;
    if (info.thread_group) {
        jvmtiThreadGroupInfo group;
        memset(&group, 0, sizeof group);
        if ((*jvmti)->GetThreadGroupInfo(jvmti, info.thread_group, &group) == JVMTI_ERROR_NONE) {
            group_name = group.name;
            if (group.parent)
                (*jni)->DeleteLocalRef(jni, group.parent);
        }
        (*jni)->DeleteLocalRef(jni, info.thread_group);
    }
    if (info.context_class_loader)
        (*jni)->DeleteLocalRef(jni, info.context_class_loader);

    serial_t serial = 0;
    if (info.name == NULL || except_name == NULL || strcmp(info.name, except_name) != 0) {
        char unnamed[48];
        const char *name = info.name;
        /* Virtual threads are in the JDK's "VirtualThreads" group. */
        if ((name == NULL || name[0] == '\0') && group_name && strcmp(group_name, "VirtualThreads") == 0) {
            snprintf(unnamed, sizeof unnamed, "VirtualThread[#%lld]", (long long)tid_of(jni, thread));
            name = unnamed;
        }
        /* obj=: HPROF printed an object id; ours is derived from the serial. */
        serial = thread_add(agent_tables(), name ? name : "", group_name, 0);
        if (serial) {
            jvmti_failed((*jvmti)->SetThreadLocalStorage(jvmti, thread, (void *)(uintptr_t)serial),
                         "SetThreadLocalStorage");
            thread_serial_remember(jni, thread, serial);
        }
    }
    jvmti_free(info.name);
    jvmti_free(group_name);
    return serial;
}

serial_t thread_serial_of(jthread thread)
{
    void *data = NULL;
    JNIEnv *jni = NULL;
    if (thread != NULL && (*hprof_vm)->GetEnv(hprof_vm, (void **)&jni, JNI_VERSION_1_8) == JNI_OK) {
        jlong tid = tid_of(jni, thread);
        if (tid > 0) {
            serial_t serial = 0;
            pthread_mutex_lock(&tids.lock);
            serial = idmap_get(&tids.serials, (uint64_t)tid);
            pthread_mutex_unlock(&tids.lock);
            return serial;
        }
    }
    /* The calling thread (its own state cannot go away meanwhile), or a JVM
     * without Thread.tid. */
    if ((*hprof_jvmti)->GetThreadLocalStorage(hprof_jvmti, thread, &data) != JVMTI_ERROR_NONE)
        return 0;
    return (serial_t)(uintptr_t)data;
}

serial_t thread_serial_of_self(jthread thread)
{
    serial_t serial = thread_serial_of(thread);
    void *data = NULL;
    if (serial == 0 && (*hprof_jvmti)->GetThreadLocalStorage(hprof_jvmti, NULL, &data) == JVMTI_ERROR_NONE)
        serial = (serial_t)(uintptr_t)data;
    return serial;
}

serial_t vthread_serial_bounded(JNIEnv *jni, jthread vthread)
{
    serial_t serial = thread_serial_of(vthread);
    if (serial)
        return serial;
    unsigned n = atomic_load_explicit(&tids.vthreads_given, memory_order_relaxed);
    while (n < VTHREADS_NAMED_MAX) {
        if (atomic_compare_exchange_weak(&tids.vthreads_given, &n, n + 1)) {
            serial = thread_register(jni, vthread, NULL);
            if (serial == 0)
                atomic_fetch_sub(&tids.vthreads_given, 1);
            return serial;
        }
    }
    return 0;
}

uint32_t vthreads_named(void)
{
    return atomic_load_explicit(&tids.vthreads_given, memory_order_relaxed);
}

/* --------------------------------------------------------------- stacks */

/* Walk no deeper than the trace keeps, plus a few frames of skip_classes on
 * top: the JVM's stack walk costs per frame, and monitor events are frequent
 * on contended programs. */
enum { WALK_MAX = 256, SKIP_MARGIN = 8 };

/* GetStackTrace's frames as trace_build takes them. */
static void frames_of_jvmti(frame_ref *frames, const jvmtiFrameInfo *info, jint n)
{
    for (jint i = 0; i < n; i++) {
        frames[i].method = info[i].method;
        /* GetStackTrace gives -1 as the location of native frames. */
        frames[i].bci = info[i].location < 0 ? BCI_NATIVE : (int32_t)info[i].location;
    }
}

jmethodID top_method_here(JNIEnv *jni)
{
    frame_ref top;
    jint count = 0;
    if (stack_walk_here(jni, &top, 1, &count) && count == 1)
        return (jmethodID)top.method;
    jmethodID method = NULL;
    jlocation location;
    if ((*hprof_jvmti)->GetFrameLocation(hprof_jvmti, NULL, 0, &method, &location) != JVMTI_ERROR_NONE)
        return NULL;
    return method;
}

/* Frames a walk for b takes: the trace's, or whole stacks. */
static jint walk_depth(const trace_builder *b)
{
    return b->full_stacks ? WALK_MAX : b->depth;
}

/* The trace of these raw frames (and their whole stack into *stack when b
 * keeps them): from the thread's cache, or built and remembered there. */
static serial_t cached_trace(const trace_builder *b, trace_cache *cache, serial_t thread_serial,
                             const frame_ref *frames, uint32_t n, stack_id *stack)
{
    stack_id *want_stack = b->full_stacks ? stack : NULL;
    serial_t trace = trace_cache_get(cache, thread_serial, frames, n, want_stack);
    if (trace == 0) {
        trace = trace_build(b, thread_serial, frames, n, want_stack);
        trace_cache_put(cache, thread_serial, frames, n, trace, want_stack ? *want_stack : 0);
    }
    return trace;
}

serial_t stack_trace_here(JNIEnv *jni, const trace_builder *b, trace_cache *cache, jint start,
                          serial_t thread_serial, stack_id *stack)
{
    jint want = walk_depth(b) < WALK_MAX - start ? walk_depth(b) : WALK_MAX - start;
    if (want <= 0 || start < 0)
        return cached_trace(b, NULL, thread_serial, NULL, 0, stack);
    frame_ref frames[WALK_MAX];
    jint count = 0, first = 0;
    if (stack_walk_here_from(jni, frames, start + want, start, &count)) {
        first = count < start ? count : start;
    } else {
        jvmtiFrameInfo info[WALK_MAX];
        if ((*hprof_jvmti)->GetStackTrace(hprof_jvmti, NULL, start, want, info, &count) != JVMTI_ERROR_NONE)
            return 0;
        frames_of_jvmti(frames, info, count);
    }
    return cached_trace(b, cache, thread_serial, frames + first, (uint32_t)(count - first), stack);
}

/* What frames_to_skip needs of a method: its class, and whether that class
 * is in java.lang.invoke. Asking the method table takes its lock three times
 * (the method, its record, its class's name): a fifth of a lambda's
 * allocation (a VMObjectAlloc event under several frames of method handles)
 * went to those locks, which the threads that allocate share. So each
 * thread keeps a small direct-mapped memo, by jmethodID (which HotSpot never
 * reuses for another method, as the method table itself assumes). */
typedef struct skip_memo {
    jmethodID method;        /* NULL: empty */
    serial_t  class_serial;
    int       invoke;        /* the class is in java.lang.invoke */
} skip_memo;
enum { SKIP_MEMO_SLOTS = 256 };

/* Where a thread blocked entering a monitor is, by its top frame's method
 * and location (see stack_trace_entering): the location of its
 * monitorenter, ENTER_CALLER when it waits to enter a synchronized method
 * (the frame is left out: the caller's frame below is at the call), or the
 * location as given. Each thread remembers them in a small direct-mapped
 * memo: contended enters repeat at the same few places, and the byte codes
 * are a copy to ask for. */
enum { ENTER_CALLER = -2, ENTER_MEMO_SLOTS = 64, ACC_SYNCHRONIZED_FLAG = 0x20 };
typedef struct enter_memo {
    jmethodID method;        /* NULL: empty */
    jlocation given, placed;
} enter_memo;

/* What a thread keeps for its walks: its memos and its trace caches (see
 * thread_trace_cache). Made at its first use, and freed with the caches
 * when the thread ends, by the destructor of one pthread key (a thread's
 * value under it is its block). */
typedef struct thread_walks {
    skip_memo     skip[SKIP_MEMO_SLOTS];
    enter_memo    enter[ENTER_MEMO_SLOTS];
    trace_cache  *caches[TRACE_CACHES];
    unsigned char caches_failed[TRACE_CACHES];
} thread_walks;

/* The key, made once; a thread whose block could not be allocated holds
 * `&thread_walks_key` (not retried each time: it walks without memos). */
static struct {
    pthread_key_t  key;
    pthread_once_t once;
    int            ok;
} thread_walks_key = { .once = PTHREAD_ONCE_INIT };
#define THREAD_WALKS_NONE ((void *)&thread_walks_key)

static void free_thread_walks(void *p)
{
    thread_walks *t = p;
    if (p == THREAD_WALKS_NONE)
        return;
    for (int i = 0; i < TRACE_CACHES; i++)
        trace_cache_free(t->caches[i]);
    free(t);
}

static void make_thread_walks_key(void)
{
    thread_walks_key.ok = pthread_key_create(&thread_walks_key.key, free_thread_walks) == 0;
}

/* The calling thread's block, made now if it has none; NULL if it cannot
 * have one (no key, or no memory). */
static thread_walks *thread_walks_here(void)
{
    (void)pthread_once(&thread_walks_key.once, make_thread_walks_key);
    if (!thread_walks_key.ok)
        return NULL;
    void *t = pthread_getspecific(thread_walks_key.key);
    if (t == NULL) {
        t = calloc(1, sizeof(thread_walks));
        if (t == NULL)
            t = THREAD_WALKS_NONE;
        if (pthread_setspecific(thread_walks_key.key, t) != 0) {
            free_thread_walks(t);
            return NULL;
        }
    }
    return t == THREAD_WALKS_NONE ? NULL : t;
}

/* What frames_to_skip needs of method, into *out, from the memo or the
 * method table (then remembered): -1 if the method is unknown (its class
 * unloaded). */
static int skip_memo_get(jmethodID method, skip_memo *out)
{
    thread_walks *walks = thread_walks_here();
    skip_memo *memo = walks ? walks->skip : NULL, *slot = NULL;
    if (memo) {
        uintptr_t h = (uintptr_t)method;
        slot = &memo[((h ^ (h >> 9)) >> 3) & (SKIP_MEMO_SLOTS - 1)];
        if (slot->method == method) {
            *out = *slot;
            return 0;
        }
    }
    method_info mi;
    profile_tables *tables = agent_tables();
    serial_t m = resolve_method(tables, method, NULL);
    if (m == 0 || method_get(tables, m, &mi) != 0)
        return -1;
    *out = (skip_memo){ method, mi.class_serial,
                        mi.class_name && strncmp(mi.class_name, "java.lang.invoke.", 17) == 0 };
    if (slot)
        *slot = *out;
    return 0;
}

/* How many of the top `count` frames belong to skip_classes (known through
 * the method table rather than asking JVMTI per frame). */
static jint frames_to_skip(const frame_ref *frames, jint count, const serial_t *skip_classes, int n_skip)
{
    jint first = 0;
    while (n_skip && first < count) {
        skip_memo known;
        int skip = 0;
        if (skip_memo_get((jmethodID)frames[first].method, &known) == 0)
            for (int k = 0; k < n_skip && !skip; k++)
                skip = skip_classes[k] == SKIP_METHOD_HANDLES ? known.invoke
                     : skip_classes[k] && known.class_serial == skip_classes[k];
        if (!skip)
            break;
        first++;
    }
    return first;
}

/* The top `want` (at most WALK_MAX) frames of `thread` (NULL: the calling
 * thread) by JVMTI's GetStackTrace: 0, or -1 when it refused. */
static int walk_jvmti(jthread thread, jint want, frame_ref *frames, jint *count)
{
    jvmtiFrameInfo info[WALK_MAX];
    *count = 0;
    if ((*hprof_jvmti)->GetStackTrace(hprof_jvmti, thread, 0, want, info, count) != JVMTI_ERROR_NONE)
        return -1;
    frames_of_jvmti(frames, info, *count);
    return 0;
}


static jlocation enter_location(jmethodID method, jlocation given)
{
    uintptr_t h = (uintptr_t)method ^ ((uintptr_t)given * 0x9e3779b1u);
    thread_walks *walks = thread_walks_here();
    enter_memo *slot = walks ? &walks->enter[((h ^ (h >> 11)) >> 3) & (ENTER_MEMO_SLOTS - 1)] : NULL;
    if (slot && slot->method == method && slot->given == given)
        return slot->placed;
    jlocation placed = given;
    jint modifiers = 0;
    if (given == 0 && (*hprof_jvmti)->GetMethodModifiers(hprof_jvmti, method, &modifiers) == JVMTI_ERROR_NONE &&
        (modifiers & ACC_SYNCHRONIZED_FLAG)) {
        placed = ENTER_CALLER;     /* no monitorenter can be at 0: it needs its object pushed */
    } else {
        jint len = 0;
        unsigned char *code = NULL;
        if ((*hprof_jvmti)->GetBytecodes(hprof_jvmti, method, &len, &code) == JVMTI_ERROR_NONE) {
            int64_t at = len > 0 ? bytecode_monitorenter_at(code, (uint32_t)len, (uint32_t)given) : -1;
            if (at >= 0)
                placed = (jlocation)at;
            (*hprof_jvmti)->Deallocate(hprof_jvmti, code);
        }
    }
    if (slot)
        *slot = (enter_memo){ method, given, placed };
    return placed;
}

/* How many frames on top to leave out of a thread blocked entering a
 * monitor, whose top frame frames[0] is then placed at the enter. */
static jint place_enter(frame_ref *frames, jint count)
{
    if (count <= 0 || frames[0].bci < 0)
        return 0;
    jlocation placed = enter_location((jmethodID)frames[0].method, frames[0].bci);
    if (placed == ENTER_CALLER)
        return count > 1;
    if (placed >= 0)
        frames[0].bci = (int32_t)placed;
    return 0;
}

/* stack_trace_of, and with `entering` stack_trace_entering. */
static serial_t trace_of_walk(const trace_builder *b, jthread thread, const serial_t *skip_classes, int n_skip,
                              int entering, serial_t thread_serial, stack_id *stack)
{
    jint want = walk_depth(b) + (n_skip ? SKIP_MARGIN : 0) + (entering ? 1 : 0);
    if (want > WALK_MAX)
        want = WALK_MAX;
    if (want <= entering)
        return cached_trace(b, NULL, thread_serial, NULL, 0, stack);
    frame_ref frames[WALK_MAX];
    jint count = 0;
    if (walk_jvmti(thread, want, frames, &count) != 0)
        return 0;
    jint first = frames_to_skip(frames, count, skip_classes, n_skip);
    if (entering)
        first += place_enter(frames + first, count - first);
    return cached_trace(b, NULL, thread_serial, frames + first, (uint32_t)(count - first), stack);
}

serial_t stack_trace_of(const trace_builder *b, jthread thread, const serial_t *skip_classes,
                        int n_skip, serial_t thread_serial, stack_id *stack)
{
    return trace_of_walk(b, thread, skip_classes, n_skip, 0, thread_serial, stack);
}

serial_t stack_trace_entering(const trace_builder *b, jthread thread, serial_t thread_serial, stack_id *stack)
{
    return trace_of_walk(b, thread, NULL, 0, 1, thread_serial, stack);
}

serial_t stack_trace_here_skipping(JNIEnv *jni, const trace_builder *b, trace_cache *cache,
                                   const serial_t *skip_classes, int n_skip, serial_t thread_serial,
                                   stack_id *stack, jmethodID *top)
{
    if (top)
        *top = NULL;
    /* Usually one frame per skipped class is on top (Unsafe.park under
     * LockSupport.park*): walk that far first, and again deeper only if the
     * walk was cut short of the trace's depth. */
    jint depth = walk_depth(b);
    jint want = depth + n_skip;
    if (want > WALK_MAX)
        want = WALK_MAX;
    frame_ref frames[WALK_MAX];
    jint count = 0, first = 0;
    if (!stack_walk_here(jni, frames, want, &count))
        return stack_trace_of(b, NULL, skip_classes, n_skip, thread_serial, stack);
    if (top && count > 0)
        *top = (jmethodID)frames[0].method;
    first = frames_to_skip(frames, count, skip_classes, n_skip);
    if (count == want && count - first < depth && want < WALK_MAX) {
        want = depth + SKIP_MARGIN < WALK_MAX ? depth + SKIP_MARGIN : WALK_MAX;
        if (!stack_walk_here(jni, frames, want, &count))
            return stack_trace_of(b, NULL, skip_classes, n_skip, thread_serial, stack);
        first = frames_to_skip(frames, count, skip_classes, n_skip);
    }
    /* Frames below what is kept would only make the cache's keys differ. */
    uint32_t n = (uint32_t)(count - first);
    if (n > (uint32_t)depth)
        n = (uint32_t)depth;
    return cached_trace(b, cache, thread_serial, frames + first, n, stack);
}

int stack_has_vm_entry_here(int skip_top_natives)
{
    enum { CHUNK = 64, FRAMES_MAX = 4096 };
    jvmtiFrameInfo info[CHUNK];
    int on_top = skip_top_natives;          /* still in the natives on top, skipped */
    for (jint start = 0; start < FRAMES_MAX; start += CHUNK) {
        jint count = 0;
        jvmtiError err = (*hprof_jvmti)->GetStackTrace(hprof_jvmti, NULL, start, CHUNK, info, &count);
        if (err == JVMTI_ERROR_ILLEGAL_ARGUMENT && start > 0)
            return 0;                       /* the stack was a multiple of CHUNK frames deep */
        if (err != JVMTI_ERROR_NONE)
            return -1;
        for (jint i = 0; i < count; i++) {
            if (info[i].location < 0) {     /* native */
                if (!on_top)
                    return 1;
                continue;
            }
            on_top = 0;
            method_info mi;
            serial_t m = resolve_method(agent_tables(), info[i].method, NULL);
            if (m != 0 && method_get(agent_tables(), m, &mi) == 0 && mi.name && strcmp(mi.name, "<clinit>") == 0)
                return 1;
        }
        if (count < CHUNK)
            return 0;
    }
    return 0;
}

trace_cache *thread_trace_cache(int which, unsigned log2_slots, int depth)
{
    thread_walks *walks = which >= 0 && which < TRACE_CACHES ? thread_walks_here() : NULL;
    if (walks == NULL)
        return NULL;
    if (walks->caches[which] || walks->caches_failed[which])
        return walks->caches[which];
    trace_cache *c = depth > 0 && depth <= WALK_MAX ? trace_cache_new(log2_slots, (uint32_t)depth) : NULL;
    walks->caches[which] = c;
    walks->caches_failed[which] = c == NULL;   /* walk without a cache, don't retry each time */
    return c;
}
