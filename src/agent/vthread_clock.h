/*
 * vthread_clock: a virtual thread's own CPU time, for cpu=times (JDK 21 and
 * later).
 *
 * A virtual thread runs on carrier threads it shares with many others, and
 * moves between them: the carrier's CPU clock counts all of them. Its own
 * time is the sum, over its mounts, of its carrier's CPU time from the mount
 * to the unmount. HotSpot's extension events VirtualThreadMount and
 * VirtualThreadUnmount (posted on the carrier, just after a mount and just
 * before an unmount) bracket those spans; each virtual thread that asked
 * for its time has a clock (its accumulated CPU time, the carrier's CPU time
 * at its mount), kept in the JVMTI thread-local storage of an environment
 * of this module's own (the agent's environment keeps thread serials there).
 */
#ifndef HPROF_VTHREAD_CLOCK_H
#define HPROF_VTHREAD_CLOCK_H

#include <jni.h>
#include <jvmti.h>

/* Set up (once) and turn the events on. 0, or -1 when this JVM cannot
 * (no virtual threads, or no mount events: said on stderr once). */
int   vthread_clock_start(JavaVM *vm, JNIEnv *jni);
void  vthread_clock_stop(void);
/* The calling OS thread's word of CPU ns lent to virtual threads (as a
 * carrier): their own clocks count it, so its own does not. Its address is
 * the thread's for life. */
jlong *vthread_clock_lent_word(void);
/* Is this Thread object a virtual thread's? */
int   vthread_clock_is_virtual(JNIEnv *jni, jthread thread);
/* A virtual thread's CPU time, ns, read on itself; -1 if it has no clock
 * now (the clocks are off, or JVMTI does not see it alive). */
jlong vthread_clock_now(JNIEnv *jni, jthread vthread);
/* A virtual thread ends (on itself): its clock is freed, and it is marked
 * ended. */
void  vthread_clock_end(jthread vthread);

#endif
