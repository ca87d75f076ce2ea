/*
 * vthread_mounts: which virtual thread each carrier runs, for cpu=samples
 * with thread=y (JDK 21 and later).
 *
 * HotSpot's extension events com.sun.hotspot.events.VirtualThreadMount and
 * VirtualThreadUnmount are posted on the carrier, just after a virtual
 * thread is mounted on it and just before it is unmounted. At a mount the
 * virtual thread gets a thread serial (vthread_serial_bounded: the first
 * VTHREADS_NAMED_MAX of them, there may be millions) and the sampler charges the carrier's
 * samples to it until the unmount (sampler_set_mounted). Beyond the bound
 * samples stay the carrier's, and the mounts are counted. The events need
 * can_support_virtual_threads (jvmti_want_virtual_threads).
 */
#ifndef HPROF_VTHREAD_MOUNTS_H
#define HPROF_VTHREAD_MOUNTS_H

#include <jni.h>
#include <jvmti.h>
#include <stdint.h>

/* Turn the events on: 0, or -1 when this JVM does not offer them (said on
 * stderr once). */
int  vthread_mounts_start(jvmtiEnv *jvmti);
void vthread_mounts_stop(jvmtiEnv *jvmti);
/* Mounts of virtual threads without a serial (charged to their carrier). */
uint64_t vthread_mounts_unnamed(void);

#endif
