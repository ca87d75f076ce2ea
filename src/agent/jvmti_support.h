/*
 * jvmti_support: what every JVMTI-facing part of the agent needs: the JVMTI
 * environment, error reporting, naming methods and classes for the shared
 * tables, and turning a thread's stack into a trace serial.
 */
#ifndef HPROF_JVMTI_SUPPORT_H
#define HPROF_JVMTI_SUPPORT_H

#include <jni.h>
#include <jvmti.h>

#include "../core/tables.h"
#include "../core/trace_builder.h"
#include "../core/trace_cache.h"

extern JavaVM   *hprof_vm;
extern jvmtiEnv *hprof_jvmti;

/* The agent's tables (orchestrator_state.tables, agent.c): made at the
 * first load, for the life of the process. Through this function because
 * JVMTI callbacks get no user data to carry them. */
profile_tables *agent_tables(void);

/* Ask for can_support_virtual_threads (JDK 21+: JVMTI functions and events
 * on virtual threads, and the mount/unmount extension events) in caps when
 * potential offers it; 1 if offered. The JDK 17 headers the agent is built
 * with do not name it. */
int  jvmti_want_virtual_threads(const jvmtiCapabilities *potential, jvmtiCapabilities *caps);
/* Is this thread JVMTI's current thread (GetCurrentThread)? */
int  jvmti_is_current(JNIEnv *jni, jthread thread);
/* Does caps hold can_support_virtual_threads? */
int  jvmti_has_virtual_threads(const jvmtiCapabilities *caps);
/* HotSpot's extension events VirtualThreadMount and VirtualThreadUnmount
 * (posted on the carrier just after a mount and just before an unmount;
 * called as jvmtiExtensionEvent, (jvmtiEnv *, JNIEnv *, jthread vthread)),
 * to these callbacks of this environment, on or off. 0, or -1 when this JVM
 * has not both (nothing said) or JVMTI failed (said). */
int  jvmti_mount_events_on(jvmtiEnv *jvmti, jvmtiExtensionEvent on_mount, jvmtiExtensionEvent on_unmount);
void jvmti_mount_events_off(jvmtiEnv *jvmti);
/* A JVMTI environment of a module's own, with can_support_virtual_threads,
 * for callbacks of the mount events (an environment has one callback per
 * event, and the agent's is cpu=samples'); NULL where this JVM offers none
 * (nothing said). Disposed of with DisposeEnvironment. */
jvmtiEnv *jvmti_virtual_thread_env(JavaVM *vm);

/* Report a failed JVMTI call on stderr with its error name; returns 1 if it failed. */
int  jvmti_failed(jvmtiError err, const char *what);
/* After a JVMTI call that returned n local references at once
 * (GetLoadedClasses, GetAllThreads): says they are meant, as JNI asks of
 * more than 16 (-Xcheck:jni warns otherwise). */
void jvmti_hold_locals(JNIEnv *jni, jint n);
void jvmti_free(void *p);

/* jmethodID -> method serial, asking JVMTI the first time (a method_resolver). */
serial_t resolve_method(profile_tables *tables, const void *method, void *context);

/* Class serial of a class, or of an object's class (0 on failure); cached in
 * the class's JVMTI tag when the agent has can_tag_objects, and then two
 * classes of one name (two loaders) get two serials (class_claim). */
serial_t class_serial_of_klass(jclass klass);
serial_t class_serial_of_object(JNIEnv *jni, jobject object);

/* The serial the agent gave a thread (0 if none). thread NULL: the calling
 * thread, from JVMTI thread-local storage (no GetCurrentThread needed);
 * another thread: from the map thread_serial_remember fills, by the Thread
 * object's id (see jvmti_support.c for why not its thread-local storage). */
serial_t thread_serial_of(jthread thread);
/* The same for the calling thread (thread: its jthread, as an event gives
 * it), also after its ThreadEnd took it out of the map: an exiting thread
 * still locks its Thread object to wake join()ers, and can contend there.
 * Its own JVMTI storage still names it. */
serial_t thread_serial_of_self(jthread thread);
/* A virtual thread's serial, given now (thread_register) if it has none
 * and fewer than VTHREADS_NAMED_MAX virtual threads have been given one:
 * there may be millions, each would hold a thread record (thread=y keeps
 * them all). 0 beyond: the caller charges what it records to no thread
 * (monitor=y) or to the carrier (cpu=samples) and says so. */
#define VTHREADS_NAMED_MAX 1000
serial_t vthread_serial_bounded(JNIEnv *jni, jthread vthread);
uint32_t vthreads_named(void);
void     thread_serial_remember(JNIEnv *jni, jthread thread, serial_t serial);

/* java.lang.Thread's `tid` field (unique for the life of the VM, readable
 * at any time), looked up once; NULL if this JDK has none. */
jfieldID thread_tid_field(JNIEnv *jni);
/* At its ThreadEnd, the last event of a thread: out of the map (threads that
 * come and go must not make it grow). */
void     thread_serial_forget(JNIEnv *jni, jthread thread);
/* Give a thread a serial (THREAD START's name and group from GetThreadInfo,
 * kept in its JVMTI thread-local storage and remembered by its id); 0 on
 * failure or for the thread named `except_name` (the agent's own). An
 * unnamed virtual thread is named as Thread.toString names it:
 * "VirtualThread[#tid]". Virtual threads get no ThreadStart: they
 * are registered only when a report names them (monitor=y's dump). */
serial_t thread_register(JNIEnv *jni, jthread thread, const char *except_name);

/* In skip_classes: every class of java.lang.invoke, the plumbing of method
 * handles and lambdas (DirectMethodHandle, its Holder, Invokers$Holder, the
 * LambdaForm hidden classes), which Java's own stack traces hide. */
#define SKIP_METHOD_HANDLES ((serial_t)UINT32_MAX)

/* The trace of a thread's current stack (thread NULL: the calling thread),
 * skipping the frames on top whose class is one of skip_classes (class
 * serials, or SKIP_METHOD_HANDLES), cut to b->depth. 0 on failure.
 * These walks, when b->full_stacks, go as deep as STACK_MAX_FRAMES and put
 * the whole stack in *stack (may be NULL; unchanged on failure): the trace
 * is then derived from the same walk (trace_build). */
serial_t stack_trace_of(const trace_builder *b, jthread thread, const serial_t *skip_classes,
                        int n_skip, serial_t thread_serial, stack_id *stack);

/* The trace of a thread blocked entering a monitor (thread NULL: the
 * calling thread, at MonitorContendedEnter), placed where it waits: its
 * top frame at the monitorenter of the `synchronized` statement (HotSpot
 * gives the instruction after it, a line inside the block), and, for a
 * `synchronized` method, without that method's frame (it is at its first
 * instruction, which the thread has not reached): the caller's frame is on
 * top, at the call. Otherwise as stack_trace_of without skip_classes. */
serial_t stack_trace_entering(const trace_builder *b, jthread thread, serial_t thread_serial, stack_id *stack);

/* The calling thread's trace from frame `start` down (the frames above are
 * the caller's own, e.g. the tracker's: known, so not walked for classes),
 * cut to b->depth, through cache (may be NULL; it must serve b only).
 * Cheaper than stack_trace_of: it walks only the frames it keeps. */
serial_t stack_trace_here(JNIEnv *jni, const trace_builder *b, trace_cache *cache, jint start,
                          serial_t thread_serial, stack_id *stack);

/* The same for a walk that starts in a JNI native the caller does not know
 * the callers of (e.g. a wrapped Unsafe.park): the frames on top whose class
 * is one of skip_classes are left out, as stack_trace_of does, but the walk
 * and the cache are those of stack_trace_here. If top is not NULL, it gets
 * the method of the top frame, skipped or not (NULL if the cheap walk could
 * not be used: then top_method_here). */
serial_t stack_trace_here_skipping(JNIEnv *jni, const trace_builder *b, trace_cache *cache,
                                   const serial_t *skip_classes, int n_skip, serial_t thread_serial,
                                   stack_id *stack, jmethodID *top);

/* The method of the calling thread's top frame (a native's, in an event
 * it posts), or NULL. By the cheap walk where it can: JVMTI's
 * GetFrameLocation, like GetStackTrace, holds up every virtual thread's
 * mounts and unmounts while it runs (JDK 21+). */
jmethodID top_method_here(JNIEnv *jni);

/* 1 if the calling thread's stack has a frame the JVM entered from C: a
 * native method's, or a class initializer's (the VM runs <clinit> through
 * a call from C); 0 if not, -1 if the walk failed. skip_top_natives: the
 * natives on top are the blocking call itself (Object.wait0), not counted;
 * without it a native on top counts (JNI's MonitorEnter from a native
 * method). Whole stacks, up to 4,096 frames. A virtual thread cannot
 * unmount across such a frame (JEP 491): monitor=y asks at a virtual
 * thread's contended enter and wait. */
int stack_has_vm_entry_here(int skip_top_natives);

/* The calling thread's trace cache number `which` (one per collector that
 * walks: they have builders of their own), made on first use with
 * 2^log2_slots slots of `depth` frames (up to 256) and freed when the thread ends. NULL
 * if it could not be made (callers walk without one). */
enum { TRACE_CACHE_HEAP, TRACE_CACHE_MONITOR, TRACE_CACHES };
trace_cache *thread_trace_cache(int which, unsigned log2_slots, int depth);

#endif
