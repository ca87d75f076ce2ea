/*
 * heap_dump: heap=dump. With format=b and no allocation traces to carry,
 * the JVM's own dumper (heap_dump_by_jvm). Else a JVMTI FollowReferences
 * walk from the GC roots, so only reachable objects are written, streamed
 * as it goes:
 *   format=b  HPROF binary 1.0.2 heap dump segments (src/output/hprof_binary)
 *   format=a  HPROF's text HEAP DUMP section (ROOT, CLS, OBJ, ARR)
 * Every object carries the trace serial of its allocation site when
 * heap=sites tracked it (its tag names its subsite), else 300000.
 *
 * How it gets field values without JNI (heap callbacks may not call it):
 * before the walk, every loaded class's fields are read (GetClassFields) and
 * laid out in the order of JVMTI's field indexes; during the walk, a
 * FollowReferences callback gives each reference or primitive value with its
 * field index, and HotSpot reports all of one object's fields in a row, so
 * one object at a time is assembled and written. Memory: the classes' layouts,
 * one object's values, and the lengths of object arrays met but not yet
 * visited; the JVM's tag map holds an id per reachable object meanwhile.
 */
#ifndef HPROF_HEAP_DUMP_H
#define HPROF_HEAP_DUMP_H

#include <jni.h>
#include <jvmti.h>
#include <stdio.h>

#include "../heap/site_table.h"
#include "../output/hprof_binary.h"
#include "../output/text_writer.h"

typedef struct heap_dump_target {
    char          format;        /* 'a' or 'b' */
    text_writer  *text;          /* format=a */
    hb_writer    *binary;        /* format=b */
    const char   *out_path;      /* for messages, and where a text dump is staged */
    /* heap=all by the JVM's dumper (heap_all_dump.h): before_dump is told
     * the file the JVM will write, and after_dump patches it (fd) before it
     * is used: 0, or not 0 to drop it (said on stderr). */
    void        (*before_dump)(void *ctx, const char *path);
    int         (*after_dump)(void *ctx, JNIEnv *jni, int fd);
    /* After after_dump: the id the JVM's dump gives a class of ours (its
     * Class object's address), 0 when not known; NULL: none known. */
    uint64_t    (*class_object)(void *ctx, uint32_t class_serial);
    void         *dump_ctx;
    /* The objects heap=sites tracks (heap_agent.c), handed in so that the
     * dumps know no collector: tag_tracked tags each one still in the heap
     * with its allocation tag (heap_tags.h) in `to`, so that the walk's
     * records carry their traces; each_tracked visits each one's JNI weak
     * reference and subsite. NULL without heap=sites. */
    void        (*tag_tracked)(JNIEnv *jni, jvmtiEnv *to);
    void        (*each_tracked)(JNIEnv *jni, void (*visit)(void *arg, void *handle, subsite_t s), void *arg);
} heap_dump_target;

/* Walks the heap and writes one heap dump; the caller has collected
 * garbage. 0 on success; -1 after saying why on stderr. */
int heap_dump_write(JNIEnv *jni, const heap_dump_target *target, int depth, int lineno);

/* format=b without allocation traces: the JVM's own dumper writes the heap
 * dump (jvm_heap_dump.h) to a staging file beside the output; it collects
 * garbage itself. That file then becomes the output, followed by the
 * output's records so far (no copy of the dump), or where the output is
 * not a plain file or holds more than the dump (net='s spool, earlier
 * dumps), its records are appended to the output (hb_append_file). 0 on
 * success; 1 when the JVM could not dump (said on stderr; nothing was
 * written, the caller walks the heap itself); -1 when the output failed. */
int heap_dump_by_jvm(JNIEnv *jni, const heap_dump_target *target);

/* format=b: UTF8, LOAD CLASS, STACK FRAME, STACK TRACE, START THREAD and
 * END THREAD records for every entry of the shared tables this file does
 * not have yet (before a section uses them; w->tables_written says). */
void heap_dump_binary_new_records(hb_writer *w);

#endif
