/*
 * native_names: names for what native walks find, off the signal path (on
 * the agent's thread, while samples are drained):
 * - a native frame's address -> a method of the shared tables: class
 *   "[<object>]", name the demangled function, kind FRAME_KIND_JVM for
 *   libjvm.so and FRAME_KIND_NATIVE otherwise; one method per function;
 * - a thread that is not a Java thread, by its kernel thread id -> a thread
 *   of the shared tables named by its OS name (/proc/self/task/N/comm: "GC
 *   Thread#0", "C2 CompilerThre"), group "(native)", ended when it is gone.
 */
#ifndef HPROF_NATIVE_NAMES_H
#define HPROF_NATIVE_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/tables.h"

/* 0 if pc is in no known object, or a table is full. */
serial_t native_frame_method(profile_tables *tables, uint64_t pc, void *context);
/* 0 if a table is full. A thread gone before it was named is "thread <tid>
 * (ended)". */
serial_t os_thread_serial(profile_tables *tables, int32_t tid, void *context);
/* The threads alive now (sorted): the named ones not among them have ended. */
void     os_threads_reconcile(profile_tables *tables, const pid_t *live, size_t n);
/* Forget every name (the tables were reset). */
void     os_threads_clear(void);

#endif
