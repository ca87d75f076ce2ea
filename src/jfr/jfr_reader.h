/*
 * jfr_reader: reads JDK Flight Recorder recordings (.jfr), the chunk format
 * the JDK writes (version 2.x, JDK 11 and later), from bytes in memory.
 *
 * A file is one or more chunks, each self-contained: a 68-byte header
 * ("FLR\0", version, size, where its last constant pool and its metadata
 * are), then events, each "size, type id, payload". The metadata event (type
 * 0) declares every type with its fields in order; checkpoint events (type 1)
 * hold the constant pools (threads, stack traces, methods, classes, symbols,
 * ...) that events name by key. Events are decoded by that metadata, field
 * by name, never by fixed offsets, so the layouts of newer JDKs are read as
 * they declare them; events of types not asked for are skipped by their size.
 *
 * The reader walks chunk by chunk: it reads a chunk's metadata and all its
 * constant pools, then calls the caller once per event. The caller reads the
 * fields it wants with the accessors below; a constant-pool field is resolved
 * to its pool entry as it is read. What a chunk holds (types, pools) is freed
 * when the next chunk begins, so callers copy the strings they keep.
 *
 * Untrusted bytes: every read is bounded by its event's end; nesting and the
 * work per access are bounded; a damaged file is refused with its path, the
 * byte offset and what is wrong, never read out of bounds. Pure C, no JVM.
 */
#ifndef HPROF_JFR_READER_H
#define HPROF_JFR_READER_H

#include <stddef.h>
#include <stdint.h>

typedef struct jfr_chunk jfr_chunk;     /* one chunk's types and pools (opaque) */

/* A value in the file: a type (an index in the chunk's types) at an offset.
 * `null` is a constant-pool key with no entry (JFR's null), or an absent field. */
typedef struct jfr_value {
    jfr_chunk *chunk;
    uint32_t   type;
    uint8_t    array;      /* an array of `type`: a count, then the elements */
    uint8_t    pooled;     /* (arrays) each element is a constant-pool key */
    uint8_t    null;
    size_t     at, end;    /* its bytes start at `at`; the enclosing event ends at `end` */
} jfr_value;

typedef struct jfr_chunk_info {
    uint32_t index;                 /* 0 for the file's first chunk */
    size_t   offset;                /* where it starts in the file */
    uint16_t major, minor;
    int64_t  start_nanos;           /* wall clock, ns since the epoch */
    int64_t  duration_nanos;
    int64_t  start_ticks, ticks_per_second;
} jfr_chunk_info;

typedef struct jfr_event {
    const char           *type_name;    /* "jdk.ExecutionSample" */
    uint64_t              type_id;      /* the chunk's id of that type */
    const jfr_chunk_info *chunk;
    size_t                at;           /* the event's offset in the file */
    jfr_value             fields;       /* the payload: its type's fields */
} jfr_event;

/* Called at the start of each chunk (its metadata and pools read) and for
 * each event of it. 0 goes on; anything else stops the reading, which
 * returns it (with err set by the callback, e.g. by jfr_fail). */
typedef struct jfr_callbacks {
    int (*chunk)(void *ctx, const jfr_chunk_info *c);
    int (*event)(void *ctx, const jfr_event *e);
} jfr_callbacks;

/* Reads a recording. 0, or nonzero with "<path>: offset N (0x..): what"
 * (or the callback's own message) in err. */
int jfr_read(const char *path, const unsigned char *bytes, size_t len, const jfr_callbacks *cb,
             void *ctx, char *err, size_t errlen);

/* ---- accessors; each returns 0 (done), 1 (the value is null or has no such
 * field), or -1 (damaged bytes: the reading's error message is set; the
 * callback should return -1) ---- */

/* The field `name` of a struct value (an event's fields, a pool entry). A
 * constant-pool field is resolved to its entry. */
int jfr_field(const jfr_value *v, const char *name, jfr_value *out);
/* The same along a path of names: jfr_path(ev, &out, "stackTrace", "frames", NULL). */
int jfr_path(const jfr_value *v, jfr_value *out, ...) __attribute__((sentinel));
/* An integer (boolean, byte, char, short, int, long). */
int jfr_long(const jfr_value *v, int64_t *out);
/* A java.lang.String, or a struct whose first string field holds the text
 * (jdk.types.Symbol), as UTF-8 into buf (cut to fit, always NUL-ended). */
int jfr_string(const jfr_value *v, char *buf, size_t size);
/* An array: its length, and a cursor at its first element. */
int jfr_array(const jfr_value *v, uint64_t *count, jfr_value *cursor);
/* The element at cursor into *elem (resolved when pooled), and the cursor
 * moved past it. */
int jfr_array_next(jfr_value *cursor, jfr_value *elem);
/* The name of a value's type ("jdk.types.StackFrame"). */
const char *jfr_type_name(const jfr_value *v);

/* Sets the reading's error to "<path>: offset <at>: <what>"; returns -1. */
int jfr_fail(jfr_chunk *c, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Ticks of a chunk to nanoseconds. */
int64_t jfr_ticks_to_nanos(const jfr_chunk_info *c, int64_t ticks);

#endif
