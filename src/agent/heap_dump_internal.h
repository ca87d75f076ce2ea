/*
 * heap_dump_internal.h (private to src/agent/heap_dump*.c): what the parts
 * of heap=dump share: the ids of the binary file, a class as the dump
 * describes it, the walk's state, and the functions each part gives the
 * others.
 */
#ifndef HPROF_HEAP_DUMP_INTERNAL_H
#define HPROF_HEAP_DUMP_INTERNAL_H

#include "heap_dump.h"

#include <stdint.h>
#include <time.h>

#include "../core/tables.h"
#include "field_layout.h"
#include "heap_walk.h"

/* Ids in the binary file. Objects are their dump tags (bit 62 set) and
 * classes their class serials (under 2^32); names and frames get ranges of
 * their own, so that no two kinds of id can meet. */
#define STRING_ID(serial) ((UINT64_C(1) << 60) | (uint64_t)(serial))
#define FRAME_ID(serial)  ((UINT64_C(2) << 60) | (uint64_t)(serial))
/* A thread's name: see write_thread_start. */
#define THREAD_NAME_ID(serial) ((UINT64_C(3) << 60) | (uint64_t)(serial))

/* Where the JVM's dump describes the classes: the serials of their LOAD
 * CLASS records there, by our class serial - CLASS_SERIAL_BASE (0: none,
 * or not known for sure), for the first n classes of ours. */
typedef struct jvm_classes {
    uint32_t *serial;
    uint32_t  n;
} jvm_classes;

/* The JVM dump's serial of a class of ours (class_serial), or 0 when that
 * dump does not name it (or jvm is NULL). */
uint32_t heap_dump_jvm_serial_of(const jvm_classes *jvm, serial_t class_serial);

/* ------------------------------------------------------ class layouts */

/* A class the dump describes: its field layout (field_layout.h) and what
 * the HPROF records add. */
typedef struct dclass {
    fl_class    f;               /* first: a dclass * is its fl_class * */
    int         loaded;
    uint64_t    loader, signers, domain;
    const char *name;            /* Java form, for the text dump */
    hb_static  *statics;         /* f.statics' names as string ids; values filled by the walk */
    int64_t     obj_size;        /* size of an instance (from the walk) */
    int         dumped;
    /* The id of its Class object in the dump where that is not its serial:
     * a class loaded after the class list was read, whose Class object the
     * walk met untagged and numbered like any object. */
    uint64_t    object_id;
} dclass;

/* ------------------------------------------------------------ the walk */

/* What heap=dump keeps around the shared walk (heap_walk.h), which
 * assembles the objects; heap_dump_sink.c gives them their ids and writes them. */
struct walk {
    const heap_dump_target *t;
    jvmtiEnv    *tags;             /* whose tag map holds the ids: the dump's own environment,
                                    * or the agent's (hprof_jvmti) when copying costs too much */
    hb_writer   *bin;
    FILE        *text;             /* format=a: the staging file */
    dclass      *classes;          /* by class serial - CLASS_SERIAL_BASE */
    uint32_t     nclasses;
    uint32_t     max_positions;    /* the most values an instance has */
    serial_t     class_class;      /* java.lang.Class */
    uint32_t     next_number;      /* dump numbers handed out */
    int          out_of_numbers;
    /* thread objects: dump number -> thread serial and stack trace */
    struct { uint32_t number; serial_t serial, trace; uint32_t frames; } *threads;
    uint32_t     nthreads;
    /* totals and progress */
    uint64_t     objects, bytes;
    /* Class objects that are not classes the dump describes (the mirrors of
     * int, void ...): written as instances of java.lang.Class at the end
     * unless the walk visited them. */
    struct { int64_t id; int64_t size; int written; } *mirrors;
    uint32_t     nmirrors, mirrors_cap;
    time_t       last_progress;
    int          progress_shown;
    int          failed;
    /* What the walk met of objects of classes loaded after the class list
     * was read (heap_walk.h), written after it (write_deferred). */
    heap_walk_deferrals deferred;
    uint64_t     left_out;         /* of those, values no class read after the walk could place */
    struct new_class *resolved;    /* their Class objects' ids and serials, sorted by id */
    size_t       nresolved;
};
typedef struct walk walk;

/* heap_dump_records.c: shared because the walk's classes (heap_dump_sink.c)
 * and the JVM's dump (heap_dump_jvm.c) name the same records. */
serial_t heap_dump_internal_name(serial_t class_serial);
void heap_dump_write_new_strings(hb_writer *w);
serial_t heap_dump_load_trace_written(serial_t class_serial, uint32_t traces_in_file);
void heap_dump_write_new_records(hb_writer *w, const jvm_classes *jvm, const walk *objects);

/* heap_dump_sink.c: the walk's classes, its sink, and what heap_dump_write
 * (heap_dump.c) does with them after the walk; shared because the walk is
 * prepared and run there. */
dclass *heap_dump_class_of_serial(const walk *w, serial_t s);
uint64_t heap_dump_class_object_id(const walk *w, serial_t serial);
heap_walk_sink heap_dump_sink(walk *w);
void heap_dump_write_class(walk *w, serial_t serial, dclass *c);
void heap_dump_sink_instance(void *ctx, fl_class *f, jlong class_tag, jlong id, const uint64_t *values);
void heap_dump_write_deferred(JNIEnv *jni, walk *w);
void heap_dump_load_new_classes(walk *w);

/* heap_dump.c: every loaded class not read yet gets its layout; shared
 * because the deferred objects' classes are read again after the walk. */
int heap_dump_read_classes(JNIEnv *jni, walk *w, int tag);

#endif
