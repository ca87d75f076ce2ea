/*
 * jvm_heap_dump: the JVM's own heap dumper (the one behind `jcmd
 * GC.heap_dump`), asked through com.sun.management.HotSpotDiagnosticMXBean
 * with JNI. heap=dump uses it where no allocation traces are wanted: it
 * walks the heap at the JVM's speed, where a JVMTI walk pays a tag map
 * look-up for every reference (docs/heap.md).
 */
#ifndef HPROF_JVM_HEAP_DUMP_H
#define HPROF_JVM_HEAP_DUMP_H

#include <jni.h>
#include <stddef.h>

/* Has the JVM write an HPROF heap dump to path (which must not exist and
 * must end in .hprof), of the live objects after a full GC if live. 0, or
 * -1 with the reason in why (the exception the JVM threw, or the class it
 * does not have, e.g. a runtime without the jdk.management module). */
int jvm_heap_dump(JNIEnv *jni, const char *path, int live, char *why, size_t why_size);

/* The JVM's flag (-XX:...) of that name through the same bean's getVMOption:
 * 1 when its value is "true", 0 when another, -1 with the reason in why. */
int jvm_flag_is_true(JNIEnv *jni, const char *flag, char *why, size_t why_size);

#endif
