/* heap_agent: see heap_agent.h. */
#include "heap_agent.h"
#include "collector.h"
#include "events.h"
#include "heap_all_dump.h"
#include "heap_dump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../snapshot/stack_profile.h"
#include "../core/trace_builder.h"
#include "../heap/heap_tags.h"
#include "../heap/object_store.h"
#include "../heap/site_table.h"
#include "../options/jvm_args.h"
#include "../output/hprof_binary.h"
#include "jvmti_support.h"
#include "stack_walk_fast.h"
#include "tracker_agent.h"

/* Subsites kept at most: ~64 bytes each, so 4M is ~256 MB at the very worst. */
#define MAX_SUBSITES (4u << 20)

static struct {
    heap_config   cfg;
    trace_builder builder;
    atomic_int    counting;          /* allocations are being recorded */
    jclass        tracker;           /* global ref (exact mode) */
    jfieldID      heap_engaged;
    jmethodID     allocate_instance; /* jdk.internal.misc.Unsafe.allocateInstance (exact mode) */
    jmethodID     clone;             /* java.lang.Object.clone (exact mode) */
    /* Left out of the top of an event's trace: the tracker's classes,
     * java.lang.Object (clone), Unsafe (allocateInstance) and the method
     * handles' classes that call it for a lambda or a constructor handle
     * (SKIP_METHOD_HANDLES): the trace of a capturing lambda begins where
     * the program made it, not in four frames of java.lang.invoke. */
    serial_t      skip[5];
    atomic_uint   warned_lost;
    int           made;              /* heap=sites set up (first start) */
    jvmtiEvent    event;             /* the allocation event wanted while counting, or 0 */
    int           gc_events;         /* GarbageCollectionFinish wanted while counting */
    int           dump_depth, dump_lineno;   /* heap=dump's traces */
    int           dumped_on_request;         /* a heap dump was written since the start (dump,
                                                SIGQUIT, net=): the exit adds none */
    int           zgc;               /* -XX:+UseZGC: no GC in the exit dump (see collect) */
    int           jvm_dumper;        /* heap=dump's binary dump by the JVM's own dumper (dump_start) */
    int           jvm_dumper_all;    /* heap=all's, its objects then given their traces (heap_all_dump.h) */
    int           jvm_dumper_asked;  /* heap_dumper=jvm: say why when the JVM's dumper cannot be used */
    profile      *dumped_profile;    /* of the rows the last dump wrote (stack_profile_keep) */
} heap_sites;

/* ------------------------------------------------------------ tracked objects */

/* Each tracked object is a JNI weak global reference in the object store
 * (see object_store.h for why not a JVMTI tag). These run on a thread with
 * a JNIEnv: the allocating thread, or the agent thread's sweep and census. */
static int weak_dead(void *ctx, void *handle)
{
    JNIEnv *jni = ctx;
    return (*jni)->IsSameObject(jni, (jweak)handle, NULL);
}

static void weak_release(void *ctx, void *handle)
{
    JNIEnv *jni = ctx;
    (*jni)->DeleteWeakGlobalRef(jni, (jweak)handle);
}

static const object_store_ops weak_ops = { weak_dead, weak_release };

/* GarbageCollectionFinish (on the VM thread, at a safepoint: no JNI): the
 * store's weak references may have been cleared, a sweep is worth it. */
static void JNICALL on_gc_finish(jvmtiEnv *jvmti)
{
    (void)jvmti;
    object_store_gc_done();
}

/* ------------------------------------------------------------ recording */

/* Each thread's trace cache (see trace_cache.h): 2048 frames, i.e. 512
 * traces at depth=4, about 44 KB a thread; deep traces get fewer slots.
 * Whole stacks (STACK_MAX_FRAMES frames each) get 16 slots, 64 KB. */
static trace_cache *heap_trace_cache(void)
{
    int frames = heap_sites.builder.full_stacks ? STACK_MAX_FRAMES : heap_sites.cfg.depth;
    unsigned log2 = 9;
    while (log2 > 4 && ((uint32_t)1 << log2) * (uint32_t)frames > 2048)
        log2--;
    return thread_trace_cache(TRACE_CACHE_HEAP, log2, frames);
}

/* Instances the VM allocated on this thread (VMObjectAlloc, recorded then)
 * whose constructor will run next and reach the tracker: since JDK 18,
 * reflection allocates the object first and calls the constructor after. The
 * tracker checks this short list, of weak references, rather than the
 * object store. Oldest dropped when
 * full; an entry goes when its constructor came, its object died, or its
 * thread ends (see constructor_follows for which objects enter). */
#define PENDING_MAX 4
/* This thread's words: those pending instances, and its classes (below). */
static _Thread_local struct {
    struct {
        jweak objects[PENDING_MAX];
        int n;
    } pending_allocs;
    struct class_slot *class_slots;     /* see class_slot */
} this_thread;

/* In a VMObjectAlloc event: the VM allocated the object for
 * Unsafe.allocateInstance, which is how method handles and, since JDK 18,
 * reflection create an object before they call its constructor. (clone()'s
 * copies get no constructor.) */
static int constructor_follows(jmethodID top)
{
    return top != NULL && top == heap_sites.allocate_instance;
}

static void pending_remove(JNIEnv *jni, int i)
{
    (*jni)->DeleteWeakGlobalRef(jni, this_thread.pending_allocs.objects[i]);
    for (this_thread.pending_allocs.n--; i < this_thread.pending_allocs.n; i++)
        this_thread.pending_allocs.objects[i] = this_thread.pending_allocs.objects[i + 1];
}

static void pending_add(JNIEnv *jni, jobject object)
{
    jweak w = (*jni)->NewWeakGlobalRef(jni, object);
    if (w == NULL)
        return;
    if (this_thread.pending_allocs.n == PENDING_MAX)
        pending_remove(jni, 0);
    this_thread.pending_allocs.objects[this_thread.pending_allocs.n++] = w;
}

/* object was recorded by VMObjectAlloc already (and leaves the list). */
static int pending_take(JNIEnv *jni, jobject object)
{
    for (int i = this_thread.pending_allocs.n - 1; i >= 0; i--) {
        if ((*jni)->IsSameObject(jni, this_thread.pending_allocs.objects[i], object)) {
            pending_remove(jni, i);
            return 1;
        }
        if ((*jni)->IsSameObject(jni, this_thread.pending_allocs.objects[i], NULL))
            pending_remove(jni, i);
    }
    return 0;
}

/* Each thread's classes, for the tracker's allocations: by the class's
 * identity hash (which the tracker passes), a JNI weak reference to the class
 * (not to keep it, or its loader, alive), its serial, and an instance's size.
 * A hit costs one or two IsSameObject. Naming a class otherwise is
 * GetObjectClass, JVMTI's GetTag (the serial is in the class's tag) and
 * GetObjectSize: on H2 with 8 threads, 12% of the process's CPU, most of it
 * waiting for the lock of the JVMTI environment's tag table. Two ways per
 * set, the newest first; allocated on first use (a __thread array would be
 * static TLS), emptied at the thread's end. A miss costs more than the old
 * way (the weak reference is made, an old one dropped): 64 sets of one way
 * missed often enough on H2 to gain nothing. */
enum { CLASS_SETS = 256, CLASS_WAYS = 2 };
typedef struct class_slot {
    jweak    klass;          /* NULL: empty slot */
    jint     hash;
    serial_t serial;
    int32_t  size;           /* an instance's size; -1 for an array class (each its own) */
    int32_t  lambda;         /* a lambda's class (made through method handles: is_lambda_class) */
} class_slot;

/* A lambda's class, Foo$$Lambda/0x... (JDK 21+) or Foo$$Lambda$12/0x... (JDK
 * 17): its instances are made through method handles, whose frames
 * (java.lang.invoke) stand between its constructor and the program. */
static int is_lambda_class(serial_t serial)
{
    const char *name = serial ? class_java_name(agent_tables(), serial) : NULL;
    return name != NULL && strstr(name, "$$Lambda") != NULL;
}

/* The serial of object's class klass (0 if it cannot be named), its size
 * into *size (-1 if unknown), and whether it is a lambda's into *lambda. */
static serial_t class_serial_cached(JNIEnv *jni, jobject object, jclass klass, jint hash, jlong *size, int *lambda)
{
    class_slot *slots = this_thread.class_slots;
    if (slots == NULL)
        slots = this_thread.class_slots = calloc(CLASS_SETS * CLASS_WAYS, sizeof *slots);
    class_slot *set = slots ? &slots[((uint32_t)hash % CLASS_SETS) * CLASS_WAYS] : NULL;
    for (int way = 0; set && way < CLASS_WAYS; way++) {
        class_slot *slot = &set[way];
        if (slot->klass && slot->hash == hash && (*jni)->IsSameObject(jni, slot->klass, klass)) {
            *size = slot->size;
            *lambda = slot->lambda;
            if (*size < 0 && (*hprof_jvmti)->GetObjectSize(hprof_jvmti, object, size) != JVMTI_ERROR_NONE)
                *size = -1;
            return slot->serial;
        }
    }
    serial_t serial = class_serial_of_klass(klass);
    *lambda = is_lambda_class(serial);
    jboolean array = JNI_TRUE;
    if ((*hprof_jvmti)->GetObjectSize(hprof_jvmti, object, size) != JVMTI_ERROR_NONE)
        *size = -1;
    if (set == NULL || serial == 0 || *size < 0 || *size > INT32_MAX ||
        (*hprof_jvmti)->IsArrayClass(hprof_jvmti, klass, &array) != JVMTI_ERROR_NONE)
        return serial;
    jweak weak = (*jni)->NewWeakGlobalRef(jni, klass);
    if (weak == NULL)
        return serial;
    if (set[CLASS_WAYS - 1].klass)
        (*jni)->DeleteWeakGlobalRef(jni, set[CLASS_WAYS - 1].klass);
    memmove(&set[1], &set[0], (CLASS_WAYS - 1) * sizeof *set);
    set[0] = (class_slot){ weak, hash, serial, array ? -1 : (int32_t)*size, *lambda };
    return serial;
}

void heap_agent_thread_end(JNIEnv *jni)
{
    while (this_thread.pending_allocs.n > 0)
        pending_remove(jni, this_thread.pending_allocs.n - 1);
    class_slot *slots = this_thread.class_slots;
    this_thread.class_slots = NULL;
    for (int i = 0; slots && i < CLASS_SETS * CLASS_WAYS; i++)
        if (slots[i].klass)
            (*jni)->DeleteWeakGlobalRef(jni, slots[i].klass);
    free(slots);
    object_store_thread_end();
    site_table_thread_end();
}

typedef struct same_object {
    JNIEnv  *jni;
    jobject  object;
    serial_t class_serial;
} same_object;

/* Only an entry of the object's class costs a JNI call. */
static int is_same_object(void *ctx, void *handle, subsite_t s)
{
    same_object *o = ctx;
    serial_t cls = 0;
    return site_get(s, NULL, &cls, NULL) == 0 && cls == o->class_serial &&
           (*o->jni)->IsSameObject(o->jni, (jweak)handle, o->object);
}

/* In a VMObjectAlloc event: JNI's NewObject runs the constructor, which the
 * tracker saw and recorded on this thread, and the JVMTI specification lets
 * a JVM post the event for such an object after that (HotSpot 17 and 25 do
 * not: heap_sites_jni). The event then comes from the native method that
 * called NewObject: only there are the thread's last records searched, not
 * for the natives whose objects get no constructor (Object.clone) or get it
 * later (Unsafe.allocateInstance, see pending). */
static int recorded_already(JNIEnv *jni, jobject object, serial_t class_serial, jmethodID method)
{
    jboolean native = JNI_FALSE;
    if (method == NULL || method == heap_sites.clone || method == heap_sites.allocate_instance ||
        (*hprof_jvmti)->IsMethodNative(hprof_jvmti, method, &native) != JVMTI_ERROR_NONE || !native)
        return 0;
    same_object o = { jni, object, class_serial };
    return object_store_recent(is_same_object, &o, 256);
}

/* One allocation: name its site, keep a weak reference to the object with
 * its subsite in the object store, count it.
 * Runs on the allocating thread, in Java code (the tracker's native) or in
 * a JVMTI event; it calls no Java code, so it cannot recurse.
 *
 * above >= 0: from the tracker, which says how many of its own frames (and
 * Object.<init>'s) are on top of the stack, and gives the object's class and
 * its identity hash (class_serial_cached); each object passes there once,
 * but may have come from VMObjectAlloc before (see pending).
 * above < 0: from a JVMTI event, where the object may have been recorded
 * already (see recorded_already). */
static void record(JNIEnv *jni, jobject object, jclass klass, jint class_hash, jlong size, jthread thread,
                   jint above)
{
    serial_t thread_serial = heap_sites.cfg.per_thread ? thread_serial_of(thread) : 0;
    serial_t trace, cls;                 /* size: the event's, or class_serial_cached's */
    stack_id stack = 0;
    jmethodID top = NULL;                /* events only: the top frame's method */
    if (above >= 0) {
        if (this_thread.pending_allocs.n > 0 && pending_take(jni, object))
            return;
        int lambda = 0;
        cls = class_serial_cached(jni, object, klass, class_hash, &size, &lambda);
        if (lambda) {
            /* Made through method handles (JDK 17; on 21+ the VM allocates
             * it, see VMObjectAlloc): its trace begins where the program made
             * it, as an event's does, not at its constructor under two frames
             * of java.lang.invoke. */
            serial_t skip[5] = { heap_sites.skip[0], heap_sites.skip[1], heap_sites.skip[2], cls, SKIP_METHOD_HANDLES };
            trace = stack_trace_here_skipping(jni, &heap_sites.builder, heap_trace_cache(), skip, 5, thread_serial, &stack,
                                              NULL);
        } else {
            trace = stack_trace_here(jni, &heap_sites.builder, heap_trace_cache(), above, thread_serial, &stack);
        }
    } else {
        /* The cheap walk here too: GetStackTrace of the current thread
         * stops every virtual thread's mounts and unmounts while it runs
         * (JDK 21+), so on a virtual thread each Unsafe.allocateInstance
         * (a lambda's allocation) made all the carriers wait. The walk also
         * gives the top frame's method, which says whether the object was
         * recorded already or will be at its constructor (a 1-frame walk of
         * its own, twice per event, was a quarter of an event's cost). */
        trace = stack_trace_here_skipping(jni, &heap_sites.builder, heap_trace_cache(), heap_sites.skip, 5, thread_serial, &stack,
                                          &top);
        if (top == NULL && !heap_sites.cfg.sample_interval)
            top = top_method_here(jni);
        cls = klass ? class_serial_of_klass(klass) : class_serial_of_object(jni, object);
        if (!heap_sites.cfg.sample_interval && cls && recorded_already(jni, object, cls, top))
            return;
    }
    /* An allocation event from a thread still running while the VM shuts
     * down (seen on JDK 25: GetStackTrace says WRONG_PHASE) is after the
     * end of the profile, not a loss. */
    jvmtiPhase phase;
    if (trace == 0 && (*hprof_jvmti)->GetPhase(hprof_jvmti, &phase) == JVMTI_ERROR_NONE &&
        phase != JVMTI_PHASE_LIVE)
        return;
    subsite_t s = trace && cls && size >= 0 ? site_intern(trace, stack, cls, (uint64_t)size) : 0;
    jweak weak = s ? (*jni)->NewWeakGlobalRef(jni, object) : NULL;
    if (weak && object_store_add(&weak_ops, jni, weak, s) != 0) {
        (*jni)->DeleteWeakGlobalRef(jni, weak);
        weak = NULL;
    }
    if (weak == NULL) {
        site_count_lost(1);
        if (atomic_exchange(&heap_sites.warned_lost, 1) == 0)
            fprintf(stderr, "hprof: heap=sites: an allocation could not be recorded (%s); such "
                    "objects are counted under SITES as lost\n",
                    !trace ? "its stack could not be walked, or the trace table is full" :
                    !cls ? "its class could not be named" : size < 0 ? "its size is unknown" :
                    s == 0 ? "the site table is full or out of memory" : "out of memory");
        return;
    }
    site_count_alloc(s);
    if (above < 0 && heap_sites.allocate_instance && constructor_follows(top))
        pending_add(jni, object);
}

/* HprofTracker.allocated: objectInit and newArray (exact mode). */
JNIEXPORT void JNICALL Java_java_lang_HprofTracker_allocated(JNIEnv *jni, jclass cls, jobject object,
                                                             jclass klass, jint class_hash, jint above)
{
    (void)cls;
    if (atomic_load_explicit(&tracker_linking, memory_order_relaxed) ||
        !atomic_load_explicit(&heap_sites.counting, memory_order_relaxed) || object == NULL || klass == NULL ||
        above < 0)
        return;
    record(jni, object, klass, class_hash, -1, NULL, above);
}

/* VMObjectAlloc (exact mode: what the VM allocates without byte code the
 * tracker sees: reflection's arrays, clone(), Unsafe.allocateInstance; not
 * JNI's AllocObject and New*Array, for which HotSpot posts no event)
 * and SampledObjectAlloc (heap_sample=): both events have this signature. */
static void JNICALL on_object_alloc_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                                          jclass klass, jlong size)
{
    (void)jvmti;
    if (atomic_load_explicit(&heap_sites.counting, memory_order_relaxed))
        record(jni, object, klass, 0, size, thread, -1);
}

/* ------------------------------------------------------------ set-up */

static int sites_wanted(const hprof_options *o) { return o->heap == HEAP_SITES || o->heap == HEAP_ALL; }
static int dump_wanted(const hprof_options *o) { return o->heap == HEAP_DUMP || o->heap == HEAP_ALL; }

static int tag_capability(const jvmtiCapabilities *potential, jvmtiCapabilities *caps)
{
    if (!potential->can_tag_objects) {
        fprintf(stderr, "hprof: heap= needs a JVM that can tag objects (JVMTI can_tag_objects)\n");
        return -1;
    }
    caps->can_tag_objects = 1;
    caps->can_get_line_numbers = potential->can_get_line_numbers;
    caps->can_get_source_file_name = potential->can_get_source_file_name;
    return 0;
}

static int sites_capabilities(const collector_env *env, const jvmtiCapabilities *potential,
                              jvmtiCapabilities *caps)
{
    if (tag_capability(potential, caps) != 0)
        return -1;
    /* Without GC events the store is swept at every tick instead. */
    caps->can_generate_garbage_collection_events = potential->can_generate_garbage_collection_events;
    if (env->opt->heap_sample) {
        if (!potential->can_generate_sampled_object_alloc_events) {
            fprintf(stderr, "hprof: heap_sample= needs JVMTI SampledObjectAlloc (JDK 11 or later)\n");
            return -1;
        }
        caps->can_generate_sampled_object_alloc_events = 1;
        if (env->live)
            env->limit("heap=sites,heap_sample=: each thread's allocations are sampled from its next "
                       "TLAB on (HotSpot sets a thread's sample point when it refills its TLAB)");
        return 0;
    }
    if (tracker_agent_capabilities(potential, caps) != 0)
        return -1;
    if (potential->can_generate_vm_object_alloc_events)
        caps->can_generate_vm_object_alloc_events = 1;
    else if (env->live)
        env->limit("heap=sites: this JVM offers VMObjectAlloc events only at start-up: objects the VM "
                   "allocates itself (reflection, clone, JNI) are not counted after an attach");
    else {
        fprintf(stderr, "hprof: heap=sites needs JVMTI VMObjectAlloc events, which this JVM lacks\n");
        return -1;
    }
    if (env->live)
        env->limit("heap=sites: objects allocated before the attach are not counted (exact counts "
                   "start with it)");
    return 0;
}


static int sampling_on(void);
static int sites_make(const collector_env *env);

static int sites_subscribe(const collector_env *env)
{
    if (events_subscribe(JVMTI_EVENT_VM_OBJECT_ALLOC, EVENT_FN(on_object_alloc_event)) |
        events_subscribe(JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, EVENT_FN(on_object_alloc_event)) |
        events_subscribe(JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, EVENT_FN(on_gc_finish)) |
        heap_all_dump_subscribe() | tracker_agent_subscribe())
        return -1;
    /* Sampled, at start-up: on before any thread has a TLAB (sampling_on). */
    if (!env->live && env->opt->heap_sample && !heap_sites.made)
        return sites_make(env) != 0 || sampling_on() != 0 ? -1 : 0;
    return 0;
}

/* Exact mode: the tracker's switch, Unsafe.allocateInstance (objects it
 * makes wait for their constructor: see pending), and the classes left out
 * of traces. */
static int exact_setup(const collector_env *env, JNIEnv *jni)
{
    jclass tracker = tracker_agent_define(jni, env->live);
    if (tracker == NULL)
        return -1;
    heap_sites.skip[0] = tracker_classes[0];
    heap_sites.skip[1] = tracker_classes[1];
    if (heap_sites.tracker)
        return 0;
    jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
    if (unsafe) {
        heap_sites.allocate_instance = (*jni)->GetMethodID(jni, unsafe, "allocateInstance",
                                                  "(Ljava/lang/Class;)Ljava/lang/Object;");
        (*jni)->DeleteLocalRef(jni, unsafe);
    }
    jclass object = (*jni)->FindClass(jni, "java/lang/Object");
    if (object) {
        heap_sites.clone = (*jni)->GetMethodID(jni, object, "clone", "()Ljava/lang/Object;");
        (*jni)->DeleteLocalRef(jni, object);
    }
    if ((*jni)->ExceptionCheck(jni))                /* none: objects it makes may count twice */
        (*jni)->ExceptionClear(jni);
    heap_sites.heap_engaged = (*jni)->GetStaticFieldID(jni, tracker, "heapEngaged", "I");
    if (tracker_jni_failed(jni, heap_sites.heap_engaged, "finding HprofTracker.heapEngaged"))
        return -1;
    heap_sites.tracker = tracker;
    return 0;
}

/* The site table and the settings, at the first start (or, sampled, at
 * start-up: see sites_subscribe). */
static int sites_make(const collector_env *env)
{
    const hprof_options *o = env->opt;
    if (heap_sites.made) {
        if (o->heap_sample != heap_sites.cfg.sample_interval || o->depth != heap_sites.cfg.depth ||
            options_want_stacks(o) != heap_sites.builder.full_stacks)
            env->limit("heap=sites: heap_sample=, depth= and whether whole stacks are kept (pprof=, "
                       "flamegraph=, collapsed=) keep the values of the first start");
        return 0;
    }
    heap_sites.cfg = (heap_config){ .sites = 1, .dump = dump_wanted(o), .sample_interval = o->heap_sample,
                           .depth = o->depth, .lineno = o->lineno, .per_thread = o->thread };
    heap_sites.builder.depth = o->depth;
    heap_sites.builder.lineno = o->lineno;
    heap_sites.builder.full_stacks = options_want_stacks(o);
    heap_sites.builder.tables = env->tables;
    heap_sites.builder.resolve = resolve_method;
    if (site_table_init(MAX_SUBSITES) != 0) {
        fprintf(stderr, "hprof: out of memory at start-up (heap=sites)\n");
        return -1;
    }
    heap_sites.zgc = jvm_uses_zgc(NULL, 0);
    heap_sites.made = 1;
    return 0;
}

/* GC events while counting: each GC is a reason to sweep the store. Without
 * the capability (no HotSpot lacks it) every tick sweeps. */
static void gc_events_on(void)
{
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if (!heap_sites.gc_events && (*hprof_jvmti)->GetCapabilities(hprof_jvmti, &caps) == JVMTI_ERROR_NONE &&
        caps.can_generate_garbage_collection_events &&
        events_want(hprof_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH) == 0)
        heap_sites.gc_events = 1;
}

/* heap_sample=: JVMTI SampledObjectAlloc on (idempotent). HotSpot puts a
 * thread's next sample point in its TLAB when the TLAB is refilled, so a
 * thread's current TLAB goes unsampled: at start-up this is done in
 * Agent_OnLoad, before any TLAB (at VMInit, 37% of AllocTruth's first
 * 2.4 MB on the main thread were missed). */
static int sampling_on(void)
{
    if (heap_sites.event == JVMTI_EVENT_SAMPLED_OBJECT_ALLOC)
        return 0;
    gc_events_on();
    jvmtiEnv *jvmti = hprof_jvmti;
    jint interval = heap_sites.cfg.sample_interval > INT32_MAX ? INT32_MAX : (jint)heap_sites.cfg.sample_interval;
    if (jvmti_failed((*jvmti)->SetHeapSamplingInterval(jvmti, interval), "SetHeapSamplingInterval") ||
        events_want(jvmti, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC) != 0)
        return -1;
    heap_sites.event = JVMTI_EVENT_SAMPLED_OBJECT_ALLOC;
    atomic_store(&heap_sites.counting, 1);
    return 0;
}

static int sites_start(const collector_env *env, JNIEnv *jni)
{
    if (sites_make(env) != 0)
        return -1;
    if (heap_sites.skip[2] == 0) {
        jclass object = (*jni)->FindClass(jni, "java/lang/Object");
        if (object) {
            heap_sites.skip[2] = class_serial_of_klass(object);
            (*jni)->DeleteLocalRef(jni, object);
        }
        jclass unsafe = (*jni)->FindClass(jni, "jdk/internal/misc/Unsafe");
        if (unsafe) {
            heap_sites.skip[3] = class_serial_of_klass(unsafe);
            (*jni)->DeleteLocalRef(jni, unsafe);
        }
        (*jni)->ExceptionClear(jni);
        heap_sites.skip[4] = SKIP_METHOD_HANDLES;
    }
    heap_sites.cfg.cutoff = env->opt->cutoff;
    if (heap_sites.cfg.sample_interval)
        return sampling_on();
    jvmtiEnv *jvmti = hprof_jvmti;
    if (exact_setup(env, jni) != 0)
        return -1;
    stack_walk_fast_init();              /* a stack per allocation: the cheap walk */
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    if ((*jvmti)->GetCapabilities(jvmti, &caps) == JVMTI_ERROR_NONE && caps.can_generate_vm_object_alloc_events) {
        if (events_want(jvmti, JVMTI_EVENT_VM_OBJECT_ALLOC) != 0)
            return -1;
        heap_sites.event = JVMTI_EVENT_VM_OBJECT_ALLOC;
    }
    gc_events_on();
    (*jni)->SetStaticIntField(jni, heap_sites.tracker, heap_sites.heap_engaged, 1);
    tracker_agent_say_each(env->opt->verbose > 1);   /* else tracker_agent_apply says how many */
    tracker_agent_want(-1, 1);
    atomic_store(&heap_sites.counting, 1);
    return 0;
}

static void sites_stop(JNIEnv *jni)
{
    if (!atomic_exchange(&heap_sites.counting, 0))
        return;
    if (heap_sites.tracker) {
        (*jni)->SetStaticIntField(jni, heap_sites.tracker, heap_sites.heap_engaged, 0);
        tracker_agent_want(-1, 0);
    }
    if (heap_sites.event) {
        events_unwant(hprof_jvmti, heap_sites.event);
        heap_sites.event = 0;
    }
    if (heap_sites.gc_events) {
        events_unwant(hprof_jvmti, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH);
        heap_sites.gc_events = 0;
    }
}

/* The store's sweep, on the agent thread (every tick: cheap when no GC
 * came since the last, as it looks only at chunks retired before one). */
static int sites_tick(JNIEnv *jni)
{
    if (!heap_sites.gc_events)
        object_store_gc_done();
    object_store_sweep(&weak_ops, jni);
    return 0;
}

static void sites_thread_end(JNIEnv *jni, jthread thread)
{
    (void)thread;
    heap_agent_thread_end(jni);
}

/* One tracked object still in the heap: its subsite has one more live object. */
static void count_live(void *arg, void *handle, subsite_t s)
{
    (void)arg;
    (void)handle;
    site_census_add(s);
}

/* A dead object's handle gives INVALID_OBJECT: nothing to tag. */
static void tag_tracked(void *to, void *handle, subsite_t s)
{
    jvmtiEnv *env = to;
    (*env)->SetTag(env, (jweak)handle, heap_tag_alloc(s));
}

void heap_agent_tag_tracked(JNIEnv *jni, jvmtiEnv *to)
{
    if (heap_sites.made)
        object_store_each(&weak_ops, jni, tag_tracked, to);
}

void heap_agent_each_tracked(JNIEnv *jni, void (*visit)(void *arg, void *handle, subsite_t s), void *arg)
{
    if (heap_sites.made)
        object_store_each(&weak_ops, jni, visit, arg);
}

/* Force a GC and count the tracked objects still live, once per dump. */
static void collect(dump_target *t, JNIEnv *jni)
{
    if (t->heap_collected)
        return;
    t->heap_collected = 1;
    jvmtiEnv *jvmti = hprof_jvmti;
    /* ZGC's collector thread has stopped by the time the JVM exits: there a
     * ForceGarbageCollection never returns and the JVM never ends (JDK 17
     * and 25). The exit dump then counts without a collection. */
    if (t->final && heap_sites.zgc && heap_sites.made)
        dump_note(t, "hprof: heap=sites: ZGC cannot collect while the JVM exits: the exit dump's live counts "
                     "were taken without a collection (objects no longer reachable may be counted live)");
    else if (t->final && heap_sites.zgc)
        dump_note(t, "hprof: heap=dump: ZGC cannot collect while the JVM exits: the exit heap dump was "
                     "written without a collection (it may hold objects no longer reachable)");
    else
        jvmti_failed((*jvmti)->ForceGarbageCollection(jvmti), "ForceGarbageCollection");
    /* Live counts come from the tracked objects whose weak references the
     * GC left, not from ObjectFree events (and not from JVMTI tags, see
     * object_store.h): since JDK 16 the JVM posts those lazily, and some
     * came after the report (a benchmark's evicted cache entries were still
     * "live" at exit). */
    if (heap_sites.made) {
        site_census_begin();
        object_store_each(&weak_ops, jni, count_live, NULL);
    }
}

/* A SITES row by whole stack as a profile row: the allocated class is a
 * frame above the allocating method (as in async-profiler's allocation
 * profiles), counts weighted as SITES weighs them (heap_sample=). */
static void site_profile_row(const void *rows, uint32_t i, stack_id *stack, const char **leaf, const char **note,
                             int64_t *values)
{
    (void)note;
    const site_row *r = (const site_row *)rows + i;
    const char *cls = class_java_name(agent_tables(), r->class_serial);
    *stack = r->stack;
    *leaf = cls ? cls : "<unknown class>";
    values[0] = (int64_t)r->alloc_objs;
    values[1] = (int64_t)r->alloc_bytes;
    values[2] = (int64_t)r->live_objs;
    values[3] = (int64_t)r->live_bytes;
}

static profile *profile_of_rows(const site_row *rows, uint32_t n)
{
    static const profile_value_type types[] = {
        { "alloc_objects", "count" }, { "alloc_space", "bytes" },
        { "inuse_objects", "count" }, { "inuse_space", "bytes" },
    };
    return stack_profile_of_rows(agent_tables(), heap_sites.cfg.sample_interval ? "Allocation sites (estimated from samples)"
                                                       : "Allocation sites", types, 4, 1, rows, n, site_profile_row);
}

static profile *sites_snapshot(JNIEnv *jni)
{
    (void)jni;
    return stack_profile_take(&heap_sites.dumped_profile);
}

static void sites_dump(dump_target *t, JNIEnv *jni)
{
    if (!heap_sites.made)
        return;
    collect(t, jni);
    site_row *rows = NULL, totals;
    uint32_t n = 0;
    if (site_stack_rows(heap_sites.cfg.sample_interval, &rows, &n) != 0) {
        fprintf(stderr, "hprof: out of memory while writing SITES\n");
        return;
    }
    if (heap_sites.builder.full_stacks)
        stack_profile_keep(&heap_sites.dumped_profile, profile_of_rows(rows, n));
    site_rows_merge(rows, &n, &totals);
    report_sites(&t->report, rows, n, &totals, heap_sites.cfg.sample_interval, time(NULL));
    uint64_t lost = site_lost();
    if (lost)
        fprintf(stderr, "hprof: heap=sites: %llu allocations could not be recorded (see above)\n",
                (unsigned long long)lost);
    free(rows);
}

/* Objects allocated before a reset are no longer counted, live or not: their
 * entries go too. */
static void sites_reset(JNIEnv *jni)
{
    if (heap_sites.made) {
        site_table_reset();
        object_store_clear(&weak_ops, jni);
    }
}

static void sites_status(char *line, size_t size)
{
    site_row *rows = NULL, totals;
    uint32_t n = 0;
    memset(&totals, 0, sizeof totals);
    if (heap_sites.made && site_rows(heap_sites.cfg.sample_interval, &rows, &n, &totals) == 0)
        free(rows);
    /* The store: its chunks' bytes here, plus a JNI weak reference (8 bytes
     * in the JVM) per entry. */
    object_store_stats st = object_store_stats_now();
    snprintf(line, size, "heap=sites: %s, %llu objects (%llu bytes) allocated at %u sites%s; %zu objects "
             "tracked (%zu of them not swept since a GC), %zu KB of entries",
             atomic_load(&heap_sites.counting) ? "counting" : "stopped", (unsigned long long)totals.alloc_objs,
             (unsigned long long)totals.alloc_bytes, n, heap_sites.cfg.sample_interval ? " (estimated from samples)" : "",
             st.entries, st.young_entries, st.bytes / 1024);
}

const collector heap_sites_collector = {
    .name = "heap=sites", .wanted = sites_wanted, .capabilities = sites_capabilities,
    .subscribe = sites_subscribe, .start = sites_start, .thread_end = sites_thread_end,
    .tick_ms = 20, .tick = sites_tick,
    .dump = sites_dump, .reset = sites_reset, .stop = sites_stop, .status = sites_status,
    .profile_kind = "alloc", .snapshot = sites_snapshot,
};

/* heap=dump: the walk itself is heap_dump.c's; it needs tags and a GC first. */
static int dump_capabilities(const collector_env *env, const jvmtiCapabilities *potential,
                             jvmtiCapabilities *caps)
{
    (void)env;
    return tag_capability(potential, caps);
}

static int dump_start(const collector_env *env, JNIEnv *jni)
{
    (void)jni;
    heap_sites.dump_depth = env->opt->depth;
    heap_sites.dump_lineno = env->opt->lineno;
    heap_sites.dumped_on_request = 0;             /* a start asks for a heap dump at exit again */
    if (!heap_sites.made)
        heap_sites.zgc = jvm_uses_zgc(NULL, 0);
    /* The JVM's dumper names classes by its own serials and ids; a file in
     * which the agent's samples name them too would have two LOAD CLASS
     * records, two ids, for each class. Only a heap dump alone uses it. */
    const hprof_options *o = env->opt;
    heap_sites.jvm_dumper = o->heap == HEAP_DUMP && o->cpu == CPU_OFF && o->wall_ms == 0 && o->heap_dumper != 'w';
    /* heap=all too unless heap_dumper=walk: the JVM's dumper, its objects then given their traces in place,
     * took 1.5-2.7x jcmd's time where the walk took 23-29x (docs/measurements.md). The file is the JVM's:
     * its ids, its quirks (docs/heap.md). */
    heap_sites.jvm_dumper_all = o->heap == HEAP_ALL && o->cpu == CPU_OFF && o->wall_ms == 0 && o->heap_dumper != 'w';
    heap_sites.jvm_dumper_asked = o->heap_dumper == 'j';
    return 0;
}

static void heap_dump_dump(dump_target *t, JNIEnv *jni)
{
    /* A heap dump asked for during the run is what was wanted: a second
     * full one at exit doubled a 561 MB file and the shutdown took 10 s
     * more. doe=y still writes one at exit when none was asked for. */
    if (t->final && heap_sites.dumped_on_request) {
        dump_note(t, "hprof: heap=dump: no heap dump at exit, one was written on request since the start");
        return;
    }
    if (!t->final)
        heap_sites.dumped_on_request = 1;
    heap_dump_target target = { .format = t->report.format, .text = t->report.text, .binary = t->report.binary,
                                .out_path = t->out_path, .tag_tracked = heap_agent_tag_tracked,
                                .each_tracked = heap_agent_each_tracked };
    /* Without allocation traces to put in it, and without other sections
     * naming classes, the JVM's own dumper writes the binary dump: a JVMTI
     * walk pays a tag map look-up per reference and took 3.7 to 9.5 times
     * as long (docs/heap.md). It collects garbage itself. Not at exit under ZGC, which cannot collect then (see
     * collect): the walk below dumps without a collection there. */
    if (t->report.format == 'b' && heap_sites.jvm_dumper && !heap_sites.made && !(t->final && heap_sites.zgc) &&
        heap_dump_by_jvm(jni, &target) <= 0)
        return;
    collect(t, jni);
    if (t->report.format == 'b' && heap_sites.jvm_dumper_all && heap_sites.made &&
        heap_all_dump_by_jvm(jni, &target, heap_sites.jvm_dumper_asked) <= 0)
        return;
    heap_dump_write(jni, &target, heap_sites.dump_depth, heap_sites.dump_lineno);
}

static void dump_status(char *line, size_t size)
{
    snprintf(line, size, "heap=dump: a heap dump at every dump");
}

const collector heap_dump_collector = {
    .name = "heap=dump", .wanted = dump_wanted, .capabilities = dump_capabilities,
    .start = dump_start, .dump = heap_dump_dump, .status = dump_status,
};
