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

extern JavaVM   *hprof_vm;
extern jvmtiEnv *hprof_jvmti;

/* Report a failed JVMTI call on stderr with its error name; returns 1 if it failed. */
int  jvmti_failed(jvmtiError err, const char *what);
void jvmti_free(void *p);

/* jmethodID -> method serial, asking JVMTI the first time (a method_resolver). */
serial_t resolve_method(const void *method, void *context);

/* Class serial of a class, or of an object's class (0 on failure); cached in
 * the class's JVMTI tag when the agent has can_tag_objects. */
serial_t class_serial_of_klass(jclass klass);
serial_t class_serial_of_object(JNIEnv *jni, jobject object);

/* The serial the agent gave a thread (0 if none): kept in JVMTI thread-local
 * storage. thread NULL: the calling thread (no GetCurrentThread needed). */
serial_t thread_serial_of(jthread thread);

/* The trace of a thread's current stack (thread NULL: the calling thread),
 * skipping the frames on top whose class is one of skip_classes (class
 * serials), cut to b->depth. 0 on failure. */
serial_t stack_trace_of(const trace_builder *b, jthread thread, const serial_t *skip_classes,
                        int n_skip, serial_t thread_serial);

#endif
