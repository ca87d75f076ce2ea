/* heap_agent: see heap_agent.h. */
#include "heap_agent.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/trace_builder.h"
#include "../heap/heap_tags.h"
#include "../heap/site_table.h"
#include "../output/hprof_binary.h"
#include "jvmti_support.h"
#include "tracker_agent.h"

/* Subsites kept at most: ~64 bytes each, so 4M is ~256 MB at the very worst. */
#define MAX_SUBSITES (4u << 20)

static struct {
    heap_config   cfg;
    trace_builder builder;
    atomic_int    counting;          /* allocations are being recorded */
    jclass        tracker;           /* global ref (exact mode) */
    jfieldID      heap_engaged;
    serial_t      skip[3];           /* tracker classes and java.lang.Object, left out of traces */
    atomic_uint   warned_lost;
} H;

/* ------------------------------------------------------------ recording */

/* One allocation: name its site, tag the object with its subsite, count it.
 * Runs on the allocating thread, in Java code (the tracker's native) or in
 * a JVMTI event; it calls no Java code, so it cannot recurse. An object
 * already tagged was recorded before: JNI's NewObject, for one, runs the
 * constructor (the tracker sees it) and then posts VMObjectAlloc. */
static void record(JNIEnv *jni, jobject object, jclass klass, jlong size, jthread thread)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jlong tag = 0;
    if (object == NULL || (*jvmti)->GetTag(jvmti, object, &tag) != JVMTI_ERROR_NONE || tag != 0)
        return;
    serial_t thread_serial = H.cfg.per_thread ? thread_serial_of(thread) : 0;
    serial_t trace = stack_trace_of(&H.builder, NULL, H.skip, 3, thread_serial);
    serial_t cls = klass ? class_serial_of_klass(klass) : class_serial_of_object(jni, object);
    if (size < 0 && (*jvmti)->GetObjectSize(jvmti, object, &size) != JVMTI_ERROR_NONE)
        size = -1;
    subsite_t s = trace && cls && size >= 0 ? site_intern(trace, cls, (uint64_t)size) : 0;
    if (s == 0 || (*jvmti)->SetTag(jvmti, object, heap_tag_alloc(s)) != JVMTI_ERROR_NONE) {
        site_count_lost(1);
        if (atomic_exchange(&H.warned_lost, 1) == 0)
            fprintf(stderr, "hprof: heap=sites: an allocation could not be recorded (%s); such "
                    "objects are counted under SITES as lost\n",
                    s == 0 ? "a table is full or out of memory" : "SetTag failed");
        return;
    }
    site_count_alloc(s);
}

/* HprofTracker.allocated: objectInit and newArray (exact mode). */
JNIEXPORT void JNICALL Java_java_lang_HprofTracker_allocated(JNIEnv *jni, jclass cls, jobject object)
{
    (void)cls;
    if (atomic_load_explicit(&tracker_linking, memory_order_relaxed) ||
        !atomic_load_explicit(&H.counting, memory_order_relaxed))
        return;
    record(jni, object, NULL, -1, NULL);
}

/* VMObjectAlloc (exact mode: what the VM allocates without byte code the
 * tracker sees: reflection's arrays, clone(), JNI's AllocObject and arrays)
 * and SampledObjectAlloc (heap_sample=): both events have this signature. */
static void JNICALL on_object_alloc_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                                          jclass klass, jlong size)
{
    (void)jvmti;
    if (atomic_load_explicit(&H.counting, memory_order_relaxed))
        record(jni, object, klass, size, thread);
}

/* Called by the GC machinery for each tagged object that died: atomics only
 * (JVMTI allows almost nothing here). Dump tags carry the subsite too. */
static void JNICALL on_object_free(jvmtiEnv *jvmti, jlong tag)
{
    (void)jvmti;
    subsite_t s = heap_tag_subsite(tag);
    if (s)
        site_count_free(s);
}

/* ------------------------------------------------------------ set-up */

int heap_agent_capabilities(const heap_config *c, const jvmtiCapabilities *potential,
                            jvmtiCapabilities *caps)
{
    if (!potential->can_tag_objects) {
        fprintf(stderr, "hprof: heap= needs a JVM that can tag objects (JVMTI can_tag_objects)\n");
        return -1;
    }
    caps->can_tag_objects = 1;
    if (!c->sites)
        return 0;
    if (!potential->can_generate_object_free_events) {
        fprintf(stderr, "hprof: heap=sites needs JVMTI ObjectFree events, which this JVM lacks\n");
        return -1;
    }
    caps->can_generate_object_free_events = 1;
    if (c->sample_interval) {
        if (!potential->can_generate_sampled_object_alloc_events) {
            fprintf(stderr, "hprof: heap_sample= needs JVMTI SampledObjectAlloc (JDK 11 or later)\n");
            return -1;
        }
        caps->can_generate_sampled_object_alloc_events = 1;
    } else {
        if (!potential->can_generate_vm_object_alloc_events) {
            fprintf(stderr, "hprof: heap=sites needs JVMTI VMObjectAlloc events, which this JVM lacks\n");
            return -1;
        }
        caps->can_generate_vm_object_alloc_events = 1;
    }
    return 0;
}

void heap_agent_callbacks(const heap_config *c, jvmtiEventCallbacks *cb)
{
    if (!c->sites)
        return;
    cb->ObjectFree = on_object_free;
    if (c->sample_interval)
        cb->SampledObjectAlloc = on_object_alloc_event;
    else
        cb->VMObjectAlloc = on_object_alloc_event;
}

int heap_agent_enable(jvmtiEnv *jvmti, const heap_config *c)
{
    H.cfg = *c;
    H.builder.depth = c->depth;
    H.builder.lineno = c->lineno;
    H.builder.resolve = resolve_method;
    if (!c->sites)
        return 0;
    if (site_table_init(MAX_SUBSITES) != 0) {
        fprintf(stderr, "hprof: out of memory at start-up (heap=sites)\n");
        return -1;
    }
    if (jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL),
                     "SetEventNotificationMode(ObjectFree)"))
        return -1;
    if (c->sample_interval) {
        jint interval = c->sample_interval > INT32_MAX ? INT32_MAX : (jint)c->sample_interval;
        if (jvmti_failed((*jvmti)->SetHeapSamplingInterval(jvmti, interval), "SetHeapSamplingInterval") ||
            jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
                                                            JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL),
                         "SetEventNotificationMode(SampledObjectAlloc)"))
            return -1;
        atomic_store(&H.counting, 1);
    } else if (jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
                                                               JVMTI_EVENT_VM_OBJECT_ALLOC, NULL),
                            "SetEventNotificationMode(VMObjectAlloc)")) {
        return -1;
    }
    return 0;
}

void heap_agent_vm_init(JNIEnv *jni, jclass tracker)
{
    if (!H.cfg.sites)
        return;
    jclass object = (*jni)->FindClass(jni, "java/lang/Object");
    if (object) {
        H.skip[2] = class_serial_of_klass(object);
        (*jni)->DeleteLocalRef(jni, object);
    }
    H.skip[0] = tracker_classes[0];
    H.skip[1] = tracker_classes[1];
    if (H.cfg.sample_interval || tracker == NULL)
        return;
    H.heap_engaged = (*jni)->GetStaticFieldID(jni, tracker, "heapEngaged", "I");
    if (tracker_jni_failed(jni, H.heap_engaged, "finding HprofTracker.heapEngaged"))
        return;
    H.tracker = tracker;
    atomic_store(&H.counting, 1);
    (*jni)->SetStaticIntField(jni, tracker, H.heap_engaged, 1);
}

void heap_agent_stop(JNIEnv *jni)
{
    atomic_store(&H.counting, 0);
    if (H.tracker)
        (*jni)->SetStaticIntField(jni, H.tracker, H.heap_engaged, 0);
}

/* One tagged object in the heap: its subsite has one more live object. */
static jint JNICALL count_live(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user_data)
{
    (void)class_tag; (void)size; (void)length; (void)user_data;
    site_census_add(heap_tag_subsite(*tag_ptr));
    return 0;
}

void heap_agent_collect(void)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jvmti_failed((*jvmti)->ForceGarbageCollection(jvmti), "ForceGarbageCollection");
    /* Since JDK 16 the JVM posts ObjectFree lazily, from its service
     * thread; asking for tagged objects makes it post every pending one
     * first. No object carries tag 1 (class serials start at 100001). */
    jlong none = 1;
    jint count = 0;
    jvmti_failed((*jvmti)->GetObjectsWithTags(jvmti, 1, &none, &count, NULL, NULL), "GetObjectsWithTags");
    /* Even so, some ObjectFree events come late (a benchmark's evicted cache
     * entries were still "live" at exit). Live counts come from counting the
     * tagged objects that are in the heap after the GC instead. */
    if (H.cfg.sites) {
        jvmtiHeapCallbacks cb;
        memset(&cb, 0, sizeof cb);
        cb.heap_iteration_callback = count_live;
        site_census_begin();
        jvmti_failed((*jvmti)->IterateThroughHeap(jvmti, JVMTI_HEAP_FILTER_UNTAGGED, NULL, &cb, NULL),
                     "IterateThroughHeap (counting live objects)");
    }
}

void heap_agent_write_sites(text_writer *w)
{
    if (!H.cfg.sites)
        return;
    site_row *rows = NULL, totals;
    uint32_t n = 0;
    if (site_rows(H.cfg.sample_interval, &rows, &n, &totals) != 0) {
        fprintf(stderr, "hprof: out of memory while writing SITES\n");
        return;
    }
    text_write_sites(w, rows, n, &totals, H.cfg.cutoff, H.cfg.sample_interval, time(NULL));
    uint64_t lost = site_lost();
    if (lost)
        fprintf(stderr, "hprof: heap=sites: %llu allocations could not be recorded (see above)\n",
                (unsigned long long)lost);
    free(rows);
}

static uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

void heap_agent_write_sites_binary(hb_writer *w)
{
    if (!H.cfg.sites)
        return;
    site_row *rows = NULL, totals;
    uint32_t n = 0;
    if (site_rows(H.cfg.sample_interval, &rows, &n, &totals) != 0) {
        fprintf(stderr, "hprof: out of memory while writing ALLOC SITES\n");
        return;
    }
    hb_site *sites = malloc((n ? n : 1) * sizeof *sites);
    uint32_t k = 0;
    for (uint32_t i = 0; sites && i < n; i++) {
        double live = totals.live_bytes ? (double)rows[i].live_bytes / (double)totals.live_bytes : 0;
        double alloc = totals.alloc_bytes ? (double)rows[i].alloc_bytes / (double)totals.alloc_bytes : 0;
        if (live < H.cfg.cutoff && alloc < H.cfg.cutoff)
            continue;
        /* is_array: 0 for an instance, else the HPROF type of the elements. */
        const char *sig = class_signature(rows[i].class_serial);
        uint8_t is_array = sig && sig[0] == '[' ? hb_type_of_descriptor(sig[1]) : 0;
        sites[k++] = (hb_site){ is_array, rows[i].class_serial, rows[i].trace, clamp32(rows[i].live_bytes),
                                clamp32(rows[i].live_objs), clamp32(rows[i].alloc_bytes),
                                clamp32(rows[i].alloc_objs) };
    }
    if (sites)
        hb_alloc_sites(w, 0, (float)H.cfg.cutoff, clamp32(totals.live_bytes), clamp32(totals.live_objs),
                       totals.alloc_bytes, totals.alloc_objs, sites, k);
    else
        fprintf(stderr, "hprof: out of memory while writing ALLOC SITES\n");
    free(sites);
    free(rows);
}
