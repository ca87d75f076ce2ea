/*
 * code_maps: original byte-code offsets of the methods the tracker
 * rewrote, for INSTRUCTION_START (code_maps.c says why and how).
 */
#ifndef HPROF_JVMPI_CODE_MAPS_H
#define HPROF_JVMPI_CODE_MAPS_H

#include <jni.h>
#include <jvmti.h>

#include "../bci/bci.h"

typedef struct jvmpi_code_map jvmpi_code_map;
typedef struct jvmpi_layouts jvmpi_layouts;

/* From JVM_OnLoad's end on, when INSTRUCTION_START can be posted. */
void jvmpi_code_maps_keep(void);
int  jvmpi_code_maps_kept(void);

/* Around one class's rewrite in the tracker's ClassFileLoadHook: begin
 * (NULL when not kept), bci_config's layout = jvmpi_code_maps_told with
 * the pending layouts as context, then end with whether the class was
 * rewritten (only then do its layouts apply). */
jvmpi_layouts *jvmpi_code_maps_begin(void);
void jvmpi_code_maps_told(void *context, const bci_method_info *method, const bci_moved_insn *insns, uint32_t n,
                          uint32_t new_code_len);
void jvmpi_code_maps_end(JNIEnv *jni, jvmpi_layouts *pending, jobject loader, int rewritten);

/* The layout of the method whose running code is running_len bytes long;
 * NULL if it runs as its class file has it. */
const jvmpi_code_map *jvmpi_code_map_of(JNIEnv *jni, jmethodID method, jint running_len);

/* How many original instructions the map has, and where the i-th starts
 * in the code that runs. */
uint32_t jvmpi_code_map_count(const jvmpi_code_map *map);
uint32_t jvmpi_code_map_at(const jvmpi_code_map *map, uint32_t i);

/* The original instruction whose code contains the running location `at`
 * (its start, or inside a conditional widened around a goto_w); NULL for
 * the rewriter's own code. */
const bci_moved_insn *jvmpi_code_map_find(const jvmpi_code_map *map, jlocation at);

/* The original offset execution at `at` is headed for: its instruction's,
 * or, in the rewriter's code before an instruction, that instruction's; -1
 * if none. `at` itself when map is NULL. */
jint jvmpi_code_map_landing(const jvmpi_code_map *map, jlocation at);

#endif
