/*
 * code_map: which Java code an address of the code cache belongs to, so a
 * sample can say how its top Java frames ran: interpreted, or compiled
 * with the frames above the compiled method inlined into it.
 *
 * AsyncGetCallTrace gives methods and byte-code indexes only. The JVM tells
 * an agent where compiled code lies (JVMTI CompiledMethodLoad and
 * CompiledMethodUnload, with the compiled method's jmethodID) and where its
 * own generated code is (DynamicCodeGenerated: "Interpreter" is the
 * template interpreter). A sample's Java part begins at one PC (the
 * interrupted one, or the return address a native walk stopped at): looked
 * up here, it names the code the top Java frames run in. Deeper frames'
 * PCs are not known (compiled frames keep no frame pointer), so their kind
 * stays unknown, as async-profiler's does when it walks by AsyncGetCallTrace.
 *
 * Ranges do not overlap: a new range replaces any it overlaps (code freed
 * without an unload event the agent saw, then reused). Bounded by
 * CODE_MAP_MAX ranges. Thread-safe (one mutex); never called from a signal
 * handler. Pure C: unit-tested on made-up addresses.
 */
#ifndef HPROF_CODE_MAP_H
#define HPROF_CODE_MAP_H

#include <stdint.h>

#define CODE_MAP_MAX (1u << 20)

enum {
    CODE_NONE = 0,           /* no code the map knows (a stub, native code, nothing) */
    CODE_INTERPRETER,        /* the template interpreter */
    CODE_COMPILED,           /* a compiled method (its jmethodID in *method) */
};

typedef struct code_map code_map;

code_map *code_map_new(void);
void      code_map_free(code_map *m);

/* Add [start, start + size) of this kind (method: the jmethodID of a
 * compiled method, 0 for the interpreter). 0, or -1 when full or out of memory. */
int code_map_add(code_map *m, uint64_t start, uint64_t size, int kind, uint64_t method);

/* Remove the range that starts at start (CompiledMethodUnload). */
void code_map_remove(code_map *m, uint64_t start);

/* The kind of code pc lies in (CODE_*), and for compiled code its method. */
int code_map_find(code_map *m, uint64_t pc, uint64_t *method);

/* Forget every range (before the JVM describes its code anew). */
void code_map_clear(code_map *m);

uint32_t code_map_count(code_map *m);

#endif
