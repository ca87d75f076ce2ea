/*
 * async_trace: HotSpot's AsyncGetCallTrace, exported by libjvm.so and
 * declared in no header, bound in one place for its two users: the
 * sampler's signal handler (sampler_java.c) and the agent's fast stack walk
 * from JNI natives (src/agent/stack_walk_fast.c). HotSpot answers only while
 * some JVMTI environment has ClassLoad events on: each user enables them.
 */
#ifndef HPROF_ASYNC_TRACE_H
#define HPROF_ASYNC_TRACE_H

#include <jni.h>

typedef struct {
    jint      lineno;              /* bci for Java frames, -3 for native frames */
    jmethodID method_id;
} asgct_frame;

typedef struct {
    JNIEnv      *env;
    jint         num_frames;       /* frames filled, or a negative failure code */
    asgct_frame *frames;
    jint         num_frames_requested;  /* ours, after HotSpot's three fields */
} asgct_trace;

typedef void (*asgct_fn)(asgct_trace *trace, jint depth, void *ucontext);

/* The function, or NULL where the JVM does not export it (why: *why, if
 * why is not NULL). Looked up at the first call, which must not be in a
 * signal handler; later calls only read the answer. */
asgct_fn async_trace_function(const char **why);

#endif
