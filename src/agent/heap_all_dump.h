/*
 * heap_all_dump: heap=all,format=b written by the JVM's own dumper (the one
 * behind `jcmd GC.heap_dump`), its objects then given their allocation
 * traces in place, instead of the agent's JVMTI walk (22-30 times jcmd's
 * time: docs/heap.md, "heap=all by the JVM's dumper").
 *
 * How an object of the JVM's file is matched to the agent's record of it:
 * HotSpot's dump names each object by its address, and each object
 * heap=sites tracks is a JNI weak global reference in the object store,
 * which in HotSpot points to a slot holding that address. Right after the
 * dump the agent reads those slots (and the Class objects' addresses, from
 * local references, to check the classes), and patches each object record
 * whose id it finds (src/output/hprof_patch_traces). This relies on
 * HotSpot's handles and on no object moving in between, so it is checked:
 * a GC that starts once the JVM has begun to write its file may move
 * objects (JVMTI GarbageCollectionStart, each compared with the file's size:
 * there must be none until every address is read); collectors whose
 * pointers carry colors or move objects concurrently (ZGC, Shenandoah) are
 * left out (only G1, Parallel and Serial); and every object found must be
 * of the class the agent recorded. When any check fails, the
 * JVM's file is dropped and the agent walks the heap as before.
 */
#ifndef HPROF_HEAP_ALL_DUMP_H
#define HPROF_HEAP_ALL_DUMP_H

#include <jni.h>

#include "heap_dump.h"

/* GarbageCollectionStart's subscriber (before the events are installed):
 * 0, or -1. */
int heap_all_dump_subscribe(void);

/* One heap dump as above (the JVM's dumper collects garbage first): 0 written;
 * 1 not (nothing was written: the caller walks the heap); -1 the output
 * failed. Why not is said on stderr, except that a collector or a JVM this
 * cannot work with is said only when the user asked for it (heap_dumper=jvm,
 * `asked`): by default heap=all then walks the heap as it always did. */
int heap_all_dump_by_jvm(JNIEnv *jni, const heap_dump_target *target, int asked);

#endif
