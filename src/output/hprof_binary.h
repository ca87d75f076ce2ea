/*
 * hprof_binary: a writer of HPROF's binary format, "JAVA PROFILE 1.0.2".
 *
 * This is the format of the JDK 5-8 HPROF agent's format=b output and of
 * HotSpot's heap dumps (jmap, HeapDumpOnOutOfMemoryError), read by Eclipse
 * MAT, VisualVM and jhat. This file knows only the bytes: callers (the agent's
 * heap walker, the binary profile writer) supply ids, serials and values.
 * There is no JVMTI here, so it is unit-tested on its own.
 *
 * The file: "JAVA PROFILE 1.0.2\0", u4 identifier size (8 here), u8
 * milliseconds since the epoch, then records. Every number is big-endian.
 * A record is u1 tag, u4 microseconds since the header's time (wrapping after
 * about 71 minutes, as the format says), u4 body length, body.
 *
 * A heap dump is a run of HEAP DUMP SEGMENT records (0x1C) closed by one
 * HEAP DUMP END (0x2C, empty). Segments exist because a record's length is a
 * u4 and must be known before its body: the writer gathers sub-records in a
 * bounded buffer and writes it out as one segment when the next sub-record
 * would not fit. Readers parse each segment on its own, so a sub-record is
 * never split across two segments; one bigger than the whole buffer (a large
 * array) gets a segment of its own, streamed to the file, since its length is
 * known when it starts. Memory use is therefore the buffer, whatever the heap.
 *
 * Errors are sticky: the first failed write (or misuse, see below) stores an
 * errno in w->error, and from then on every call returns -1 without writing,
 * so a caller may check once at the end. Misuse is EINVAL: a sub-record
 * outside hb_heap_begin/hb_heap_end, a bad type code, or an INSTANCE DUMP or
 * OBJ ARRAY DUMP given more or fewer value bytes than announced (checked when
 * the next record starts and at hb_heap_end). A record too long for its u4
 * length is EOVERFLOW.
 *
 * Not thread-safe: one writer, one thread at a time.
 */
#ifndef HPROF_BINARY_H
#define HPROF_BINARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/tables.h"

#define HB_ID_SIZE          8u            /* bytes per identifier (object ids, string ids) */
#define HB_DEFAULT_SEGMENT  (1u << 20)    /* heap dump segment buffer when 0 is asked for */

/* Top-level record tags. */
enum {
    HB_TAG_UTF8 = 0x01, HB_TAG_LOAD_CLASS = 0x02, HB_TAG_UNLOAD_CLASS = 0x03,
    HB_TAG_FRAME = 0x04, HB_TAG_TRACE = 0x05, HB_TAG_ALLOC_SITES = 0x06,
    HB_TAG_HEAP_SUMMARY = 0x07, HB_TAG_START_THREAD = 0x0A, HB_TAG_END_THREAD = 0x0B,
    HB_TAG_HEAP_DUMP = 0x0C, HB_TAG_CPU_SAMPLES = 0x0D, HB_TAG_CONTROL_SETTINGS = 0x0E,
    HB_TAG_HEAP_DUMP_SEGMENT = 0x1C, HB_TAG_HEAP_DUMP_END = 0x2C
};

/* Heap dump sub-record tags. */
enum {
    HB_GC_ROOT_UNKNOWN = 0xFF, HB_GC_ROOT_JNI_GLOBAL = 0x01, HB_GC_ROOT_JNI_LOCAL = 0x02,
    HB_GC_ROOT_JAVA_FRAME = 0x03, HB_GC_ROOT_NATIVE_STACK = 0x04, HB_GC_ROOT_STICKY_CLASS = 0x05,
    HB_GC_ROOT_THREAD_BLOCK = 0x06, HB_GC_ROOT_MONITOR_USED = 0x07, HB_GC_ROOT_THREAD_OBJ = 0x08,
    HB_GC_CLASS_DUMP = 0x20, HB_GC_INSTANCE_DUMP = 0x21, HB_GC_OBJ_ARRAY_DUMP = 0x22,
    HB_GC_PRIM_ARRAY_DUMP = 0x23
};

/* HPROF basic type codes (field types, array element types). */
enum { HB_OBJECT = 2, HB_BOOLEAN = 4, HB_CHAR = 5, HB_FLOAT = 6, HB_DOUBLE = 7, HB_BYTE = 8,
       HB_SHORT = 9, HB_INT = 10, HB_LONG = 11 };

typedef struct hb_writer {
    FILE     *out;
    uint64_t  start_ms;       /* header time (ms since epoch); record times are relative to it */
    int       error;          /* sticky: errno of the first failure, 0 if none */
    uint64_t  bytes;          /* bytes written to out so far (for progress reports) */

    /* Where record times come from: microseconds since the epoch. hb_open
     * sets the real-time clock; tests put a fixed one here to compare bytes. */
    uint64_t (*clock_us)(void);

    /* Heap dump state. seg holds the sub-records of the segment being built
     * (seg_len of seg_cap bytes). The sub-record being written goes to seg,
     * or straight to out when streaming (it was bigger than seg_cap). */
    unsigned char *seg;
    size_t    seg_cap;
    size_t    seg_len;
    int       in_heap;        /* between hb_heap_begin and hb_heap_end */
    uint32_t  heap_dumps;     /* heap dumps in the file (hb_heap_end, or a caller that put one in) */
    /* Set by a caller that put in a heap dump and the records naming its
     * classes: bytes then, and heap_dumps then (the records after it are
     * the ones written since that dump only while heap_dumps is the same). */
    uint64_t  dump_records_end;
    uint32_t  dump_records_dumps;
    int       streaming;

    /* Staging (hb_stage_begin): the output while records go to the stage. */
    FILE     *staged_out;
    FILE     *stage;
    uint64_t  staged;         /* bytes of the stage */

    /* An INSTANCE DUMP or OBJ ARRAY DUMP whose values the caller is still
     * putting: its tag (0 if none) and how many value bytes are still due. */
    uint8_t   open_tag;
    uint64_t  pending;

    /* How far this file has the shared tables' records (names, classes,
     * frames, traces, threads), for a caller that writes only what is new
     * at each dump. Per writer, because each file must be complete on its
     * own: a second file (`dump file=`, net='s local fallback) starts from
     * zero. hb_open zeroes it; only the caller reads and moves it. */
    struct {
        uint32_t strings, classes, frames, traces;
        int      empty_trace;
        thread_records_written threads;     /* START THREAD / END THREAD */
    } tables_written;
} hb_writer;

/* Writes the file header. segment_capacity: bytes of the heap dump segment
 * buffer, 0 for HB_DEFAULT_SEGMENT (at most 4 GiB - 1: a segment's length is a
 * u4). The buffer is allocated here and freed by hb_close, which must be
 * called even if this fails. */
int  hb_open(hb_writer *w, FILE *out, uint64_t start_ms, size_t segment_capacity);

/* ---- top-level records; each returns 0, or -1 once w->error is set ----
 * They may also come between heap dump sub-records (e.g. a UTF8 record for a
 * name met during the walk): the segment so far is written out first. */
int  hb_utf8(hb_writer *w, uint64_t id, const char *s);
int  hb_load_class(hb_writer *w, uint32_t class_serial, uint64_t class_id, uint32_t trace_serial,
                   uint64_t name_id);
/* line: > 0 a line number, 0 none, -1 unknown, -2 compiled, -3 native. */
int  hb_stack_frame(hb_writer *w, uint64_t frame_id, uint64_t method_name_id,
                    uint64_t method_sig_id, uint64_t source_file_id, uint32_t class_serial,
                    int32_t line);
/* frame_ids: innermost first. */
int  hb_stack_trace(hb_writer *w, uint32_t serial, uint32_t thread_serial,
                    const uint64_t *frame_ids, uint32_t n);
int  hb_start_thread(hb_writer *w, uint32_t thread_serial, uint64_t thread_id,
                     uint32_t trace_serial, uint64_t name_id, uint64_t group_name_id,
                     uint64_t parent_group_name_id);
int  hb_end_thread(hb_writer *w, uint32_t thread_serial);

typedef struct hb_site {
    uint8_t  is_array;        /* 0 a normal object, else the array's element type code */
    uint32_t class_serial, trace_serial, live_bytes, live_objs, alloc_bytes, alloc_objs;
} hb_site;

/* flags: 0x1 incremental (vs complete), 0x2 sorted by allocation (vs live),
 * 0x4 a GC was forced. cutoff is written as its IEEE float bits. */
int  hb_alloc_sites(hb_writer *w, uint16_t flags, float cutoff, uint32_t total_live_bytes,
                    uint32_t total_live_objs, uint64_t total_alloc_bytes,
                    uint64_t total_alloc_objs, const hb_site *sites, uint32_t n);
int  hb_heap_summary(hb_writer *w, uint32_t live_bytes, uint32_t live_objs,
                     uint64_t alloc_bytes, uint64_t alloc_objs);

typedef struct hb_sample { uint32_t count, trace_serial; } hb_sample;
int  hb_cpu_samples(hb_writer *w, uint32_t total, const hb_sample *samples, uint32_t n);
/* flags: 0x1 allocation traces on, 0x2 CPU sampling on. */
int  hb_control_settings(hb_writer *w, uint32_t flags, uint16_t depth);

/* ---- heap dump ---- */

/* Bytes a value of `type` takes in the file: HB_ID_SIZE for HB_OBJECT, 1, 2,
 * 4 or 8 for the primitives, 0 for a code that is not a type. */
size_t hb_type_size(int type);
/* The type code of a JVM field descriptor's first character: 'I' -> HB_INT,
 * 'L' or '[' -> HB_OBJECT; 0 for a character that starts no descriptor. */
uint8_t hb_type_of_descriptor(char c);

int  hb_heap_begin(hb_writer *w);

/* GC roots. frame: depth in the thread's stack trace, -1 if none. */
int  hb_root_unknown(hb_writer *w, uint64_t id);
int  hb_root_jni_global(hb_writer *w, uint64_t id, uint64_t jni_ref_id);
int  hb_root_jni_local(hb_writer *w, uint64_t id, uint32_t thread_serial, int32_t frame);
int  hb_root_java_frame(hb_writer *w, uint64_t id, uint32_t thread_serial, int32_t frame);
int  hb_root_native_stack(hb_writer *w, uint64_t id, uint32_t thread_serial);
int  hb_root_sticky_class(hb_writer *w, uint64_t id);
int  hb_root_thread_block(hb_writer *w, uint64_t id, uint32_t thread_serial);
int  hb_root_monitor_used(hb_writer *w, uint64_t id);
int  hb_root_thread_object(hb_writer *w, uint64_t id, uint32_t thread_serial,
                           uint32_t trace_serial);

/* bits: the value's raw bits, in the low hb_type_size(type) bytes: float and
 * double as their IEEE bits, an object as its id. */
typedef struct hb_value  { uint8_t type; uint64_t bits; } hb_value;
typedef struct hb_static { uint64_t name_id; hb_value value; } hb_static;
typedef struct hb_field  { uint64_t name_id; uint8_t type; } hb_field;

typedef struct hb_class {
    uint64_t id;
    uint32_t trace_serial;
    uint64_t super_id, loader_id, signers_id, protection_domain_id;
    /* Written as given. HotSpot and the JDK agent both write the byte length
     * of this class's INSTANCE DUMP values (every instance field of the class
     * and its superclasses, ids counted as HB_ID_SIZE), and the JDK agent
     * insists the two match; callers should do the same. */
    uint32_t instance_size;
    const hb_static *statics;  uint16_t n_statics;
    const hb_field  *fields;   uint16_t n_fields;  /* own instance fields, declaration order */
} hb_class;

/* CLASS DUMP (0x20); the constant pool is written empty, as HotSpot does. */
int  hb_class_dump(hb_writer *w, const hb_class *c);

/* INSTANCE DUMP (0x21): announce the byte length of the field values, then
 * put exactly that many bytes with hb_put_value (this class's fields first,
 * then its superclass's, and so on up). */
int  hb_instance_begin(hb_writer *w, uint64_t id, uint32_t trace_serial, uint64_t class_id,
                       uint32_t values_len);
/* Writes hb_type_size(type) bytes of bits, big-endian. */
int  hb_put_value(hb_writer *w, uint8_t type, uint64_t bits);

/* OBJ ARRAY DUMP (0x22): then put the n element ids with
 * hb_put_value(w, HB_OBJECT, id); any other type is EINVAL. */
int  hb_obj_array_begin(hb_writer *w, uint64_t id, uint32_t trace_serial, uint32_t n,
                        uint64_t array_class_id);

/* PRIM ARRAY DUMP (0x23): n elements of a primitive type, in host byte order
 * and layout (as JVMTI gives them: jchar, jint, jdouble ...); they are
 * converted to big-endian here. elements may be NULL when n is 0. */
int  hb_prim_array(hb_writer *w, uint64_t id, uint32_t trace_serial, uint8_t type, uint32_t n,
                   const void *elements);

/* Writes the last segment and HEAP DUMP END. */
int  hb_heap_end(hb_writer *w);

/* Records that must precede others known only once those are written: a
 * heap dump of an agent's walk, whose classes loaded during the walk need
 * LOAD CLASS records before it (Eclipse MAT names a class by the LOAD
 * CLASS read before its CLASS DUMP; VisualVM takes no other record between
 * a dump's segments). From hb_stage_begin to hb_stage_end the records go
 * to stage (a new, empty file of the caller's, read and written); after
 * hb_stage_end the caller writes the records that go first, and
 * hb_stage_append copies the staged ones after them (in the kernel where
 * it can). Each 0, or -1 with w->error set. */
int  hb_stage_begin(hb_writer *w, FILE *stage);
int  hb_stage_end(hb_writer *w);
int  hb_stage_append(hb_writer *w);

/* Ends a heap dump left open (so the file stays readable), flushes out and
 * frees the segment buffer. Does not fclose out. Returns -1 if any error
 * happened during the writer's life. Calling it again does nothing. */
int  hb_close(hb_writer *w);
/* Appends another HPROF binary file's records (fd: a file, read with
 * pread from its offset, which is left as it was; callers give it at the
 * file's start) to this one: the JVM's own heap dump (HotSpotDiagnosticMXBean.dumpHeap)
 * in a file of ours. Its header is dropped; its record times are moved to
 * this file's start; the class serials of its LOAD CLASS and STACK FRAME
 * (and UNLOAD CLASS, ALLOC SITES) records get class_serial_offset added,
 * so that they cannot meet this file's own. Everything else is copied as it is (heap dump segments in
 * the kernel where it can: copy_file_range). Not inside a heap dump. 0;
 * 1 with nothing written when fd does not begin as an HPROF file with this
 * file's id size; -1 with w->error set (EIO: the file ends inside a
 * record, of which nothing is written; ESPIPE: fd is not a file; or the
 * writer's own failure). */
int  hb_append_file(hb_writer *w, int fd, uint32_t class_serial_offset);

/* How an appended file's class serials become this file's: offset is
 * added to each, but defined_as (when not NULL) names the classes this
 * file already holds a LOAD CLASS record of: their serial here, or 0 for
 * a class it does not hold. */
typedef struct hb_class_renumber {
    uint32_t offset;
    uint32_t (*defined_as)(void *ctx, uint32_t class_serial);
    void    *ctx;
} hb_class_renumber;

/* hb_append_file with the class serials renumbered by r: the appended
 * file's LOAD CLASS records of classes this file holds are dropped, and
 * its STACK FRAME, ALLOC SITES and UNLOAD CLASS records name those classes
 * by this file's serials, so that each class is defined once, before the
 * records naming it (the agent's records after the JVM's dump). */
int  hb_append_file_renumbered(hb_writer *w, int fd, const hb_class_renumber *r);

/* The class serials of one record's body (tag, len bytes) renumbered by r,
 * in place: 1 to keep the record, 0 to drop it (a LOAD CLASS of a class
 * defined_as knows). Records too short for their fields keep them. */
int  hb_renumber_classes(uint8_t tag, unsigned char *body, uint32_t len, const hb_class_renumber *r);


/* The records this file holds from byte mark on (a caller's mark of where
 * they began, w->bytes then) taken out of it, to be appended again later
 * (hb_append_file_renumbered): written to the empty descriptor `to` after
 * this file's header, so that `to` reads as an HPROF file of its own (its
 * offset back at 0), and this file cut back to mark. 0; 1 when it cannot
 * be done (not a regular file holding exactly what was written, mark not
 * inside it, a failed copy: this file unchanged); -1 with w->error set. */
int  hb_take_records_since(hb_writer *w, uint64_t mark, int to);

/* The other way round, for a file far larger than this one so far: the
 * JVM's dump becomes the output and this file's records follow it.
 * hb_offset_class_serials adds the offset to the class serials of the
 * LOAD CLASS and STACK FRAME records of the HPROF file fd, in place (pread,
 * pwrite), and gives its header's time and its size: 0; 1 when it is not
 * an HPROF binary file with this file's id size (nothing changed); -1 with
 * errno (EIO: it ends inside a record). hb_switch_file then makes w write
 * to the end (size) of fd's file instead of its own (dup2 onto the
 * stream's descriptor), its record times relative to start_ms: 0, or -1
 * with w->error set. The caller appends the old file's records
 * (hb_append_file from a descriptor of its own) and renames. */
int  hb_offset_class_serials(int fd, uint32_t offset, uint64_t *start_ms, uint64_t *size);
int  hb_switch_file(hb_writer *w, int fd, uint64_t start_ms, uint64_t size);

/* The JVM's LOAD CLASS records all carry its empty trace: each gets the
 * trace that loaded its class instead, in place, found by name. For every
 * LOAD CLASS record of fd (an HPROF file with this file's id size),
 * trace_of(ctx, its name (the UTF8 record its name id refers to), the
 * name's length, its class serial as in the file, its class id, shared)
 * gives the trace serial to set, or 0 to keep the record's. One call for
 * the records of one name and one class id (all get its answer); where
 * the name has records of two class ids (two loaders; JDK 17 and 25 after
 * retransformation give some boot classes a second record) one call for
 * each with shared set, to answer only when the class id tells which class
 * it is. Records left so are counted in *ambiguous; *set counts the
 * records changed. 0; 1 when fd is not such a file (nothing changed);
 * -1 with errno (EIO: it ends inside a record; ENOMEM). Memory: 32 bytes a
 * LOAD CLASS record. */
typedef uint32_t (*hb_class_trace_fn)(void *ctx, const char *name, size_t len, uint32_t class_serial,
                                      uint64_t class_id, int shared);
int  hb_set_load_traces(int fd, hb_class_trace_fn trace_of, void *ctx, uint32_t *set, uint32_t *ambiguous);


#endif
