/*
 * The JVMPI layer's internals: JVMPI (jvmpi.h) on top of JVMTI, the
 * project's event fan-out (src/agent/events.c) and class-file rewriter
 * (src/bci). One JVMPI agent per JVM, as the specification says, so the
 * layer's state is one instance per module, owned by that module:
 *
 *   loader.c      Agent_OnLoad: loads the JVMPI agent, hands it a JavaVM
 *                 whose GetEnv answers the JVMPI versions
 *   collector.c   the layer as a collector under the profiler's
 *                 orchestrator (src/agent/agent.c): VM start and end,
 *                 threads, SIGQUIT and `hprof dump|reset|status <pid>`
 *                 (DATA_DUMP_REQUEST, DATA_RESET_REQUEST), Agent_OnAttach
 *   interface.c   the JVMPI_Interface functions; which events are enabled
 *   threads.c     a record per thread, keyed by its JNIEnv * (JVMPI's
 *                 thread id): thread-local storage, the Thread object
 *   ids.c         jobjectIDs: JVMTI tags, so an id never moves; from an id
 *                 back to its object through a table of weak references
 *   pending_ids.c the ids of new objects not tagged yet (weak references),
 *                 tagged at their first look-up, swept after each GC
 *   translate.c   JVMTI events to JVMPI events (threads, classes, GC,
 *                 monitors, VM start and end)
 *   tracker.c     the rewriter's calls into java.lang.JvmpiTracker, and
 *                 METHOD_ENTRY/EXIT from them
 *   allocs.c      OBJECT_ALLOC from them and from JVMTI VMObjectAlloc
 *   monitors.c    MONITOR_CONTENDED_ENTER/ENTERED/EXIT, MONITOR_WAIT/WAITED;
 *                 the monitors threads wait on, for MONITOR_DUMP
 *   instructions.c INSTRUCTION_START (JVMTI SingleStep), if enabled in JVM_OnLoad
 *   gc.c          GC_START, OBJECT_FREE, GC_FINISH, CLASS_UNLOAD, posted by
 *                 a thread of the layer after each collection
 *   dumps.c       OBJECT_DUMP, MONITOR_DUMP, on request (dump_buffer.h: their bytes)
 *   heap_dumps.c  HEAP_DUMP at levels 0, 1 and 2, a Class object's CLASS_DUMP
 *                 (the profiler's field layouts, src/agent/field_layout.h)
 *   raw_monitors.c the agent's raw monitors, with their owners and waiters
 *   hooks.c       CLASS_LOAD_HOOK (an environment of its own) and the JNI
 *                 global reference events (the JNI function table)
 */
#ifndef HPROF_JVMPI_LAYER_H
#define HPROF_JVMPI_LAYER_H

#include <jni.h>
#include <jvmti.h>
#include <stdatomic.h>
#include <string.h>

#include "../agent/orchestrator.h"
#include "jvmpi.h"

/* ------------------------------------------------------------ collector.c */
/* What libjvmpi.so is to the orchestrator: one collector, no report. */
extern const agent_product jvmpi_product;

/* ------------------------------------------------------------ loader.c */
extern JavaVM   *jvmpi_vm;        /* the real JavaVM */
extern jvmtiEnv *jvmpi_jvmti;     /* the layer's own JVMTI environment */
/* The JVMPI agent's library, as -agentpath named it. */
const char *jvmpi_agent_library(void);
/* The agent's NotifyEvent (nothing before JVM_OnLoad set it, nor after
 * jvmpi_close_events but on the thread that called it). */
void jvmpi_notify(JVMPI_Event *event);
/* Whether this thread's events still reach the agent: all, until
 * JVM_SHUT_DOWN; after it, only those of the thread that posts it. */
int jvmpi_may_post(void);
/* From now on, events only on the calling thread (which posts JVM_SHUT_DOWN). */
void jvmpi_close_events(void);
/* An event of this type on this thread, its specific part zeroed. */
static inline JVMPI_Event jvmpi_event(jint type, JNIEnv *jni) {
    JVMPI_Event e;
    memset(&e, 0, sizeof e);
    e.event_type = type;
    e.env_id = jni;
    return e;
}
/* An event with no specific part (JVM_INIT_DONE, GC_START, ...), posted. */
void jvmpi_post_bare(JNIEnv *jni, jint type);
/* Report a failed JVMTI call as the layer's; 1 if it failed. */
int  jvmpi_failed(jvmtiError err, const char *what);
/* JVMPI_DIAGNOSTICS is set: the layer may say on stderr what it left out. */
int  jvmpi_diagnostics(void);

/* ------------------------------------------------------------ interface.c */
extern JVMPI_Interface jvmpi_interface;
/* Is this event (a JVMPI_EVENT_ number) enabled? */
int  jvmpi_enabled(jint event_type);
/* GetCallTrace and GetThreadStatus, for the dumps too. */
void jvmpi_call_trace(JVMPI_CallTrace *trace, jint depth);
/* GetCallTrace's, returning how many frames of the layer's own it left out
 * on top (a JVMTI depth d is frame d - that of the trace). */
jint jvmpi_call_trace_skipping(JVMPI_CallTrace *trace, jint depth);
jint jvmpi_thread_status(JNIEnv *env);
/* 1 once VMInit has run: the live phase, where JNI may be used. */
extern atomic_int jvmpi_live;

/* ------------------------------------------------------------ threads.c */
typedef struct jvmpi_thread {
    JNIEnv   *env;               /* the JVMPI thread id */
    jthread   thread;            /* global reference to the Thread object */
    void     *storage;           /* SetThreadLocalStorage's pointer */
    jlong     cpu_at_suspend[2]; /* ThreadHasRun: the last two suspensions */
    int       started;           /* THREAD_START was posted for it */
    jlong     wait_started_ms;   /* its last MONITOR_WAIT (MONITOR_WAITED's time) */
    _Atomic(jobjectID) waiting_on; /* the object it waits on in Object.wait, NULL if none */
    JNIEnv   *contended_owner;   /* the owner of the monitor it blocked on, as it began */
    unsigned long contended_entries; /* that monitor's contended entries then (monitors.c) */
    void     *class_kinds;       /* allocs.c's cache of the classes it allocated last (malloc'ed) */
    void     *frame_memos;       /* method_facts.c's answers for the frames it met last (malloc'ed) */
    void     *stepping;          /* instructions.c's state of its single steps */
    struct jvmpi_thread *next;
} jvmpi_thread;

/* The layer's words of the calling thread (threads.c holds them, one
 * thread-local object): what each module keeps per thread outside the
 * record, for threads that may have none (the layer's own, a JVM thread
 * in a GC or at shut-down). */
typedef struct jvmpi_thread_words {
    jvmpi_thread *record;        /* threads.c: its record, NULL until made */
    int posting_shut_down;       /* loader.c: it posts JVM_SHUT_DOWN */
    int delivering;              /* gc.c: it holds the GC deliveries' lock (nesting depth) */
    int pending_stripe;          /* pending_ids.c: its stripe + 1 (0: none chosen yet) */
} jvmpi_thread_words;
jvmpi_thread_words *jvmpi_words(void);

/* The calling thread's record, made (and its THREAD_START posted if that
 * is enabled) the first time the thread is seen. NULL if it cannot be made. */
jvmpi_thread *jvmpi_thread_here(JNIEnv *jni);
/* The calling thread's record if it has one (none is made). */
jvmpi_thread *jvmpi_thread_current(void);
/* Another thread's record by its JNIEnv, NULL if unknown. */
jvmpi_thread *jvmpi_thread_of(JNIEnv *env);
/* Post THREAD_START for the calling thread (requested: the agent asked). */
void jvmpi_post_thread_start(JNIEnv *jni, jvmpi_thread *t, int requested);
/* The thread ended: post THREAD_END and forget it. */
void jvmpi_thread_end(JNIEnv *jni);
/* The threads with a record now: their JNIEnvs and local references to
 * their Thread objects, at most max; returns how many. */
int jvmpi_threads_snapshot(JNIEnv *jni, JNIEnv **envs, jthread *threads, int max);
/* The record whose Thread object has this id, NULL if none. */
jvmpi_thread *jvmpi_thread_with_object(JNIEnv *jni, jobjectID id);

/* ------------------------------------------------------------ ids.c */
/* The id of an object (tagged on first sight), NULL for NULL or failure. */
jobjectID jvmpi_id_of(jobject object);
/* In a heap walk's callback (no JNI): the object's id, given now if it has
 * none (*tag_ptr set). */
jlong     jvmpi_walk_id(jlong *tag_ptr);
/* The id of an object just allocated, untagged, that no other thread can
 * have met yet (no look-up, unless a heap dump may have tagged it since);
 * not listed for jvmpi_object_of (ids.c says why). may_pend: no other
 * sight of it can follow on this thread before a look-up would promote
 * it (the byte code's allocations): its id may stay pending (pending_ids.c). */
jobjectID jvmpi_new_id(JNIEnv *jni, jobject object, int may_pend);
/* Around a heap walk that tags the objects it meets: no other thread gives
 * an object an id meanwhile (jvmpi_id_of and jvmpi_new_id wait); every
 * pending id becomes a tag first. */
void      jvmpi_ids_hold(JNIEnv *jni);
void      jvmpi_ids_release(void);
/* Inside jvmpi_ids_hold, before a walk: every object without an id gets
 * one, and its entry for jvmpi_object_of. */
void      jvmpi_ids_name_all(JNIEnv *jni);
/* A local reference to the object with this id, NULL if it is gone (a
 * look-up; the scan of every tagged object only for ids given where no
 * entry could be made). */
jobject   jvmpi_object_of(JNIEnv *jni, jobjectID id);
/* 1 once a heap walk has given objects ids: a new object may have one. */
int       jvmpi_ids_walked(void);
/* ObjectFree's tags (on a thread with JNI): their entries go. The tags
 * that were ids are moved to the front; returns how many. */
size_t    jvmpi_ids_forget(JNIEnv *jni, jlong *tags, size_t n);

/* ------------------------------------------------------------ pending_ids.c */
/* Keeps a new object's id without tagging it; -1 if it cannot (full,
 * memory): the caller tags it. */
int  jvmpi_pending_put(JNIEnv *jni, jobject object, jlong id);
/* Every pending id becomes its object's tag (ids never change); the dead
 * go to the next OBJECT_FREEs. Nothing without JNI. */
void jvmpi_pending_promote_all(JNIEnv *jni);
/* The object's pending id (object NULL: the pending id id) becomes its
 * tag; 1 if there was one and its object lives. A search of every pending
 * id: no tag for the others. */
int  jvmpi_pending_promote_one(JNIEnv *jni, jobject object, jlong id);
/* After a collection, on a thread with JNI: the pending objects that died
 * go to the OBJECT_FREEs being gathered (jvmpi_gc_freed). */
void jvmpi_pending_sweep(JNIEnv *jni);
/* Are there pending ids (a hint, for look-ups to skip promotion)? */
int  jvmpi_pending_any(void);

/* ------------------------------------------------------------ translate.c */
int  jvmpi_translate_subscribe(void);
/* VMInit (the collector's start): the live phase begins; CLASS_LOAD of the
 * classes loaded so far, the tracker, ARENA_NEW, the GC thread, JVM_INIT_DONE. */
void jvmpi_translate_start(JNIEnv *jni);
/* The VM ends (the last dump): the collections not reported yet, JVM_SHUT_DOWN. */
void jvmpi_translate_finish(JNIEnv *jni);
/* EnableEvent/DisableEvent of a JVMPI event: turn its JVMTI sources on or
 * off. JVMPI_SUCCESS or JVMPI_FAIL. */
jint jvmpi_translate_switch(jint event_type, int on);
/* CLASS_LOAD for one class (requested: RequestEvent's) on this thread.
 * The class's id; NULL if it has none or is not prepared (no CLASS_LOAD
 * then), or, requested, if its methods and fields could not be read. */
jobjectID jvmpi_post_class_load(JNIEnv *jni, jclass klass, int requested);
/* CLASS_LOAD for every loaded class not announced yet (if the event is on). */
void jvmpi_announce_loaded_classes(JNIEnv *jni);
/* The same; even_if_off: even with the event off now (a heap dump is about
 * to name them, for an agent that once took CLASS_LOAD). */
void jvmpi_announce_classes(JNIEnv *jni, int even_if_off);
/* The agent has turned CLASS_LOAD on at some time. */
int  jvmpi_class_load_was_on(void);
/* The id was an announced class's (it is forgotten now): 1, else 0. */
int  jvmpi_forget_class(jobjectID id);

/* ------------------------------------------------------------ monitors.c */
int  jvmpi_monitors_subscribe(void);
/* After events_install: JVMTI MonitorWait/Waited from the start. 0 or -1. */
int  jvmpi_monitors_always(void);
/* EnableEvent/DisableEvent of a monitor event (others: JVMPI_SUCCESS, nothing done). */
jint jvmpi_monitors_switch(jint event_type, int on);
/* Local references to the objects the given threads wait on in
 * Object.wait, at most max; returns how many. */
int  jvmpi_monitors_waited_on(JNIEnv *jni, const JNIEnv *const *envs, int n, jobject *objects, int max);

/* ------------------------------------------------------------ instructions.c */
int  jvmpi_instructions_subscribe(void);
/* After the agent's JVM_OnLoad: single-stepping, if it enabled INSTRUCTION_START. */
void jvmpi_instructions_after_onload(void);
jint jvmpi_instructions_switch(jint event_type, int on);
/* Whether the tracker's method entries must be told (below). */
int  jvmpi_instructions_watch_entries(void);
/* The tracker's call at the entry of `method` on this thread: its steps
 * may be hidden from there on (instructions.c says why). */
void jvmpi_instructions_entered(JNIEnv *jni, jvmpi_thread *t, jmethodID method);
/* A thread's record goes: its stepping state with it. */
void jvmpi_instructions_forget_thread(void *stepping);
/* A class was redefined or retransformed: a method's code may have changed. */
void jvmpi_instructions_redefined(void);

/* ------------------------------------------------------------ gc.c */
int  jvmpi_gc_subscribe(void);
/* VMInit: start the thread that posts the GC's events. */
int  jvmpi_gc_start(JNIEnv *jni);
jint jvmpi_gc_switch(jint event_type, int on);
/* RunGC: collect, and post the events on the calling thread. */
void jvmpi_gc_run(JNIEnv *jni);
/* VMDeath: the collections not reported yet, on this thread, before
 * JVM_SHUT_DOWN. */
void jvmpi_gc_flush(JNIEnv *jni);
/* Around a heap dump, from before its class list is read until its event
 * has been handled: no GC's OBJECT_FREE or CLASS_UNLOAD is posted meanwhile
 * (one in progress is waited for), so none reaches the agent before the dump
 * that still names its id, as on a JVMPI VM, which dumped with GC disabled. */
void jvmpi_gc_hold(void);
/* Ids of objects found freed other than by ObjectFree (pending_ids.c):
 * posted with the next delivery's OBJECT_FREEs. */
void jvmpi_gc_freed(const jlong *ids, size_t n);
void jvmpi_gc_release(void);

/* ------------------------------------------------------------ allocs.c */
/* A class and its superclasses' ids, the class first, at most
 * JVMPI_LINEAGE_MAX (complete: the list ends at java/lang/Object). */
#define JVMPI_LINEAGE_MAX 12
typedef struct jvmpi_lineage {
    jclass    klass;
    int       n, complete;
    jobjectID ids[JVMPI_LINEAGE_MAX];
} jvmpi_lineage;
/* While an OBJECT_ALLOC from Object.<init> is posted on this thread: the
 * object's class and its superclasses (their constructors are on top of
 * the stack), else NULL. */
const jvmpi_lineage *jvmpi_constructing(void);
/* An object may have been given its id before its constructor ran (a
 * constructor's receiver in METHOD_ENTRY2): from now on the tracker's
 * allocations are each checked for an id. */
void jvmpi_allocs_named_early(void);

/* ------------------------------------------------------------ method_facts.c */
/* What GetCallTrace needs of a frame, cached per jmethodID. */
typedef struct jvmpi_frame_facts {
    jint      line;             /* at the frame's location; -1 if unknown */
    int       is_init;          /* a constructor */
    int       is_tracker;       /* a method of the layer's tracker */
    jobjectID declaring;        /* its class's id */
} jvmpi_frame_facts;
/* The facts of method at location at (need_kind 0: the line is enough). */
void jvmpi_frame_facts_of(jmethodID method, jlocation at, int need_kind, jvmpi_frame_facts *out);
/* From now on the facts are cached: the tracker's class-file hook watches
 * redefinitions. */
void jvmpi_method_facts_watch(void);
/* Classes were (or are being) redefined, or unloaded: forget every method. */
void jvmpi_method_facts_forget(void);

/* ------------------------------------------------------------ tracker.c */
int  jvmpi_methods_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
int  jvmpi_methods_subscribe(void);
/* VMInit: define the tracker; classes get calls from then on. */
int  jvmpi_methods_start(JNIEnv *jni);
/* After the agent's JVM_OnLoad: capabilities for what it enabled there. */
void jvmpi_methods_after_onload(void);
/* METHOD_ENTRY, ENTRY2, EXIT or OBJECT_ALLOC was enabled or disabled. */
void jvmpi_methods_switch(void);
/* Set on a thread while the layer runs Java code of its own (a thread's
 * name, a tracker native being bound): no METHOD_ENTRY/EXIT comes of it. */
/* initial-exec: read on every METHOD_ENTRY/EXIT, where the general TLS model
 * costs a __tls_get_addr call each time; 4 bytes of the static TLS block. */
extern _Thread_local int jvmpi_in_layer __attribute__((tls_model("initial-exec")));
/* Set on a thread while the tracker's native call (METHOD_ENTRY/EXIT,
 * OBJECT_ALLOC from the byte code) posts: its stack can be walked from
 * there the cheap way (AsyncGetCallTrace). */
extern _Thread_local int jvmpi_in_tracker_call __attribute__((tls_model("initial-exec")));
/* A method of the tracker (its frames are left out of GetCallTrace). */
int  jvmpi_methods_is_tracker(jmethodID method);

/* ------------------------------------------------------------ hooks.c */
/* In Agent_OnLoad: the CLASS_LOAD_HOOK environment. 0, or -1 after a message. */
int  jvmpi_hooks_setup(JavaVM *vm);
jint jvmpi_hooks_switch_class_hook(int on);
/* The layer's New/Delete(Weak)GlobalRef in the JNI table (live phase, once). */
int  jvmpi_hooks_wrap_jni(void);

/* ------------------------------------------------------------ raw_monitors.c */
#define JVMPI_RAW_WAITERS 64        /* threads listed per monitor and list */
typedef struct jvmpi_raw_monitor {
    jrawMonitorID id;
    char         *name;
    JNIEnv       *owner;            /* NULL when free */
    int           entries;          /* the owner's entry count */
    JNIEnv       *entering[JVMPI_RAW_WAITERS];
    int           n_entering;
    JNIEnv       *notified[JVMPI_RAW_WAITERS];   /* in RawMonitorWait */
    int           n_notified;
    struct jvmpi_raw_monitor *next;
} jvmpi_raw_monitor;

JVMPI_RawMonitor jvmpi_raw_create(char *name);
void jvmpi_raw_enter(JVMPI_RawMonitor m);
void jvmpi_raw_exit(JVMPI_RawMonitor m);
void jvmpi_raw_wait(JVMPI_RawMonitor m, jlong ms);
void jvmpi_raw_notify_all(JVMPI_RawMonitor m);
void jvmpi_raw_destroy(JVMPI_RawMonitor m);
/* fn for every live raw monitor, under the monitors' lock (fn must not
 * call the functions above). */
void jvmpi_raw_each(void (*fn)(const jvmpi_raw_monitor *m, void *context), void *context);

/* ------------------------------------------------------------ dumps.c */
/* Every given thread's trace (at most depth frames) and status, as the dump
 * events carry them; skipped (may be NULL) gets each trace's frames left
 * out on top. NULL when out of memory; jvmpi_free_traces frees the lot. */
JVMPI_CallTrace *jvmpi_thread_traces(JNIEnv *const *envs, int n, jint depth, jint **status, jint **skipped);
void jvmpi_free_traces(JVMPI_CallTrace *traces, jint *status, jint *skipped);
/* RequestEvent(OBJECT_DUMP, id): the object's record, posted on this thread. */
jint jvmpi_request_object_dump(JNIEnv *jni, jobjectID id);
/* RequestEvent(MONITOR_DUMP): the dump, posted on this thread. */
jint jvmpi_request_monitor_dump(JNIEnv *jni);
/* A heap dump's INSTANCE_DUMP of an object whose references JVMTI's walk
 * does not follow (a primitive type's Class object): its references null,
 * its primitive values at level 2, read through JNI, into b (a struct
 * dump_buffer). */
struct dump_buffer;
void jvmpi_put_unfollowed_instance(JNIEnv *jni, struct dump_buffer *b, jobject object, jint level);

/* ------------------------------------------------------------ heap_dumps.c */
/* RequestEvent(HEAP_DUMP, arg): the dump, posted on this thread. */
jint jvmpi_request_heap_dump(JNIEnv *jni, const JVMPI_HeapDumpArg *arg);
/* OBJECT_DUMP of a Class object: its CLASS_DUMP record (level 2) into b
 * (a struct dump_buffer, dump_buffer.h). JVMPI_SUCCESS or JVMPI_FAIL. */
struct dump_buffer;
jint jvmpi_class_dump(JNIEnv *jni, jclass klass, struct dump_buffer *b);
/* Link a class loaded but not linked (Class.getDeclaredFields, which runs
 * none of its code): its ClassPrepare, and so its CLASS_LOAD, follow. */
void jvmpi_link_class(JNIEnv *jni, jclass klass);

/* ------------------------------------------------------------ allocs.c */
int  jvmpi_allocs_subscribe(void);
/* OBJECT_ALLOC was enabled or disabled: VMObjectAlloc follows. */
jint jvmpi_allocs_switch(int on);
/* ARENA_NEW for the one arena (the Java heap, id 1), once, if enabled. */
void jvmpi_post_arena_new(JNIEnv *jni);
/* JVMPI_NORMAL_OBJECT, JVMPI_INT, ... for a class signature. */
jint jvmpi_kind_of_signature(const char *sig);
/* RequestEvent(OBJECT_ALLOC, id): the object's OBJECT_ALLOC, now. */
jint jvmpi_request_object_alloc(JNIEnv *jni, jobjectID id);

#endif
