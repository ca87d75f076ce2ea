/*
 * stack_walk_fast: the calling thread's stack walked from a JNI native by
 * HotSpot's AsyncGetCallTrace (src/sampler/async_trace.c binds it) instead
 * of JVMTI's GetStackTrace: about twice as fast per frame. For the
 * collectors that walk a stack per call of the tracker or per park
 * (jvmti_support.c's stack_trace_here*, the JVMPI layer's GetCallTrace).
 */
#ifndef HPROF_STACK_WALK_FAST_H
#define HPROF_STACK_WALK_FAST_H

#include <jni.h>

#include "../core/trace_builder.h"

/* Let the walks below answer (AsyncGetCallTrace needs JVMTI ClassLoad
 * events on: this wants them, for good). -1 if this JVM has no
 * AsyncGetCallTrace: they then answer 0 and the callers walk with JVMTI.
 * Idempotent; from a live start. */
int stack_walk_fast_init(void);
/* The calling thread's top `want` frames by the cheap walk, from a JNI
 * native (jni: its env): 1 with *count set, 0 if that walk cannot be had
 * or could not name every frame (then walk with JVMTI). */
int stack_walk_here(JNIEnv *jni, frame_ref *frames, jint want, jint *count);
/* The same where only the frames from `keep` on must be named (those above
 * are the caller's own and need no name). */
int stack_walk_here_from(JNIEnv *jni, frame_ref *frames, jint want, jint keep, jint *count);

#endif
