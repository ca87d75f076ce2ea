/*
 * native_libs: the native code mapped into this process (the java launcher,
 * libjvm.so, libc, JNI libraries, the vDSO), each object with its ELF
 * symbols and its call-frame rules, for the sampler's native stack walk and
 * for naming native frames.
 *
 * The list is built and extended on the agent's thread (native_libs_refresh,
 * through dl_iterate_phdr: it sees what dlopen loads, System.loadLibrary's
 * JNI libraries included) and read by the signal handler: entries are
 * appended, published with a release store of the count, and never moved or
 * freed while the process lives (an object that is unloaded is marked gone),
 * so the handler reads them without a lock. At most NATIVE_LIBS_MAX objects.
 */
#ifndef HPROF_NATIVE_LIBS_H
#define HPROF_NATIVE_LIBS_H

#include <stddef.h>
#include <stdint.h>

#include "../native/frame_table.h"

#define NATIVE_LIBS_MAX 1024

/* What a native frame is, for reports: the JVM's own code (libjvm.so), or
 * any other native code (libc, JNI libraries, the launcher). */
enum { NATIVE_KIND_NATIVE = 1, NATIVE_KIND_JVM = 2, NATIVE_KIND_KERNEL = 3 };

typedef struct native_lib native_lib;

/* Read the objects loaded since the last call (all at the first). Agent
 * thread only; cheap when nothing was loaded (dl_iterate_phdr's counters).
 * Returns how many objects are known. */
int native_libs_refresh(void);

/* Async-signal-safe: the object whose executable segments hold pc, NULL if
 * none (JIT-compiled Java code, the interpreter and HotSpot's stubs live in
 * the code cache, which no object maps). */
const native_lib *native_libs_find(uintptr_t pc);

/* Async-signal-safe: the call-frame rule in force at pc in lib, NULL if the
 * object's .eh_frame has none there. */
const frame_rule *native_lib_rule(const native_lib *lib, uintptr_t pc);

/* A native frame's name, off the signal path: the object's base name
 * ("libjvm.so") in *object, the demangled function in name (or
 * "[libz.so.1+0x1234]" when no symbol covers pc), the function's address in
 * *function (pc's own address when unknown: frames then group by address).
 * A kernel address (the perf engine's kernel frames) is named from
 * /proc/kallsyms, object "kernel".
 * Returns NATIVE_KIND_*, or 0 if pc is in no known object. */
int native_libs_symbolize(uintptr_t pc, const char **object, char *name, size_t size, uintptr_t *function);

/* For `status` and the docs' figures: objects, symbols and frame rules held. */
void native_libs_stats(size_t *objects, size_t *symbols, size_t *rules, size_t *bytes);

#endif
