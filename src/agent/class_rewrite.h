/*
 * class_rewrite: the JVMTI side of the class-file rewriter (src/bci), shared
 * by every user of its calls: cpu=times and heap=sites (tracker_agent.c) and
 * the JVMPI layer (src/jvmpi/tracker.c). One rewrites a class in its
 * ClassFileLoadHook into JVMTI memory; the other retransforms loaded classes
 * so that the hook sees them again.
 */
#ifndef HPROF_CLASS_REWRITE_H
#define HPROF_CLASS_REWRITE_H

#include <jni.h>
#include <jvmti.h>

#include "../bci/bci.h"

/* In a ClassFileLoadHook: rewrite the class with config c; on success the
 * new bytes are in JVMTI memory in *new_data / *new_len. 1 rewritten, 0
 * nothing to insert, -1 not rewritten (said on stderr, prefixed with who,
 * as a class left uninstrumented, if say_each: else only the caller's
 * counts tell how many). */
int class_rewrite_in_hook(jvmtiEnv *jvmti, const bci_config *c, const char *name, const unsigned char *data,
                          jint len, jint *new_len, unsigned char **new_data, const char *who, int say_each);

/* Retransform classes (local references; each must be modifiable) in
 * batches; a batch that fails is retried one class at a time, so one bad
 * class costs only itself (said on stderr, prefixed with who, if
 * say_each). Returns how many could not be retransformed. */
unsigned class_retransform(jvmtiEnv *jvmti, jclass *classes, jint n, const char *who, int say_each);

/* The loaded classes that can be retransformed, but `except` (NULL: none),
 * as local references in a JVMTI-allocated array (jvmti Deallocate it and
 * delete the references). -1 after a message. */
int class_modifiable(jvmtiEnv *jvmti, JNIEnv *jni, jclass except, jclass **classes, jint *n);

#endif
