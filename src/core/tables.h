/*
 * The shared tables: strings, classes, methods, frames, stack traces and
 * threads, each entry with a stable serial number.
 *
 * Collectors (cpu, later heap and monitor, and the JVMPI layer) put what they
 * see here; writers (text, collapsed, later binary) read it back. Serial
 * numbers follow HPROF's numbering so that old tools see familiar values:
 * threads from 200001, traces from 300001 (300000 is the empty trace),
 * classes from 100001. Serials are dense: serial - base is an index, so a
 * writer can remember "written up to serial N" instead of a flag per entry.
 *
 * Thread safety: every function may be called from any thread except a
 * signal handler (they take a mutex and may allocate). Each table has its own
 * mutex and no function holds two, so there is no lock order to get wrong.
 * Pointers returned (names, frame arrays) point into storage that never moves
 * or changes, so they stay valid until profile_tables_free().
 *
 * Memory is bounded: each table has a maximum entry count (tables_limits).
 * When a table is full, the intern function returns 0 and the caller counts
 * what it could not record (it is reported, never silently lost).
 */
#ifndef HPROF_TABLES_H
#define HPROF_TABLES_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t serial_t;              /* 0 means "none" or "table full" */

/* The tables: an instance, handed to every function below. */
typedef struct profile_tables profile_tables;

#define STRING_SERIAL_BASE   1u
#define CLASS_SERIAL_BASE    100001u
#define THREAD_SERIAL_BASE   200001u
#define EMPTY_TRACE_SERIAL   300000u
#define TRACE_SERIAL_BASE    300001u
#define METHOD_SERIAL_BASE   1u
#define FRAME_SERIAL_BASE    1u

/* Line "numbers" that are not lines, as in HPROF's text output. */
#define LINE_UNKNOWN   (-1)    /* "Unknown line" */
#define LINE_NATIVE    (-3)    /* "Native method" */

typedef struct tables_limits {
    uint32_t max_strings;
    uint32_t max_classes;
    uint32_t max_methods;
    uint32_t max_frames;
    uint32_t max_traces;
    uint32_t max_threads;
} tables_limits;

/* Defaults: generous for real applications, yet a hard bound (~ a few hundred MB worst case). */
tables_limits tables_default_limits(void);

/* One set of tables: the agent owns one (orchestrator_state.tables) and
 * hands it to its collectors and writers; a unit test may make several,
 * which share nothing. NULL when out of memory. */
profile_tables *profile_tables_new(const tables_limits *limits);
/* Frees the tables and all they hold: every name and frame array handed
 * out by them is gone. NULL is allowed. */
void            profile_tables_free(profile_tables *tables);

/* ---- strings ---- */
serial_t    string_intern(profile_tables *tables, const char *s);
const char *string_get(profile_tables *tables, serial_t serial);          /* NULL if no such serial */
uint32_t    string_count(profile_tables *tables);

/* ---- classes, keyed by JVM signature ("Ljava/lang/String;", "[B") ---- */
serial_t    class_intern(profile_tables *tables, const char *jvm_signature);
/* Two classes of one name (two class loaders) are two classes, with two
 * serials and the same name. A caller that knows class objects claims a
 * serial for one (class_claim: 1 the first time, 0 if already claimed);
 * class_intern_another gives the first unclaimed serial of that name other
 * than class_intern's, made if need be. */
serial_t    class_intern_another(profile_tables *tables, const char *jvm_signature);
int         class_claim(profile_tables *tables, serial_t serial);
const char *class_signature(profile_tables *tables, serial_t serial);
const char *class_java_name(profile_tables *tables, serial_t serial);     /* "java.lang.String", "byte[]" */
/* The name frames of its methods show: the Java name, but a hidden class's
 * without its address and JDK 17's lambda counter ("Foo$$Lambda$14.0x7f..."
 * -> "Foo$$Lambda", hidden_name_drop_addresses), so that two runs name
 * them alike. Several classes may share one; class records (heap dumps)
 * keep class_java_name, which tells them apart. */
const char *class_frame_name(profile_tables *tables, serial_t serial);
/* The trace of the stack that loaded the class (the agent's ClassLoad
 * event), for its LOAD CLASS and CLASS DUMP / CLS records. The first one
 * set stays (1: this one was set): HotSpot posts ClassLoad again for a
 * class already loaded (JDK 25: java.lang.Object when a loader with no
 * parent resolves it), and a class loaded before the agent started is set
 * EMPTY_TRACE_SERIAL first. class_load_trace: 0 when none was set. */
int         class_set_load_trace(profile_tables *tables, serial_t serial, serial_t trace);
serial_t    class_load_trace(profile_tables *tables, serial_t serial);
uint32_t    class_count(profile_tables *tables);

/* ---- methods, keyed by an opaque 64-bit id (a jmethodID for Java methods) ---- */
/* What code a method is. Native functions are methods too: class
 * "[<object>]" (e.g. "[libjvm.so]"), name the demangled function, is_native
 * set, source_file the object's base name. */
enum {
    FRAME_KIND_JAVA = 0,          /* a Java method (and the [unwalkable] pseudo methods) */
    FRAME_KIND_NATIVE,            /* native code outside the JVM: libc, JNI libraries, the launcher */
    FRAME_KIND_JVM,               /* the JVM's own code (libjvm.so): GC, JIT, runtime */
    FRAME_KIND_KERNEL,            /* the kernel, on the thread's behalf */
};

typedef struct line_entry {
    int32_t start_bci;     /* first byte-code index of this line */
    int32_t line;
} line_entry;

typedef struct method_desc {
    serial_t          class_serial;
    const char       *name;
    const char       *signature;      /* "(I)V"; may be NULL */
    const char       *source_file;    /* NULL when the class has none */
    int               is_native;
    int               kind;           /* FRAME_KIND_* (0: Java) */
    const line_entry *lines;          /* copied; may be NULL */
    uint32_t          line_count;
} method_desc;

typedef struct method_info {
    serial_t    class_serial;
    const char *class_name;           /* Java form, as frames show it (class_frame_name) */
    const char *name;
    const char *signature;            /* "" when unknown */
    const char *source_file;          /* NULL when unknown */
    int         is_native;
    int         kind;                 /* FRAME_KIND_* */
} method_info;

serial_t method_find(profile_tables *tables, uint64_t id);                          /* 0 if not known */
serial_t method_add(profile_tables *tables, uint64_t id, const method_desc *desc);  /* returns existing serial if known */
int      method_get(profile_tables *tables, serial_t serial, method_info *out);     /* 0 on success */
/* Source line of a byte-code index: LINE_NATIVE for native methods,
 * LINE_UNKNOWN when the method has no line table or bci < 0. */
int32_t  method_line_of(profile_tables *tables, serial_t serial, int32_t bci);
uint32_t method_count(profile_tables *tables);

/* ---- frames: (method, line) ---- */
serial_t frame_intern(profile_tables *tables, serial_t method_serial, int32_t line);
int      frame_get(profile_tables *tables, serial_t serial, serial_t *method_serial, int32_t *line);
uint32_t frame_count(profile_tables *tables);

/* ---- traces: (thread or 0, frames callee first) ---- */
serial_t trace_intern(profile_tables *tables, serial_t thread_serial, const serial_t *frames, uint32_t frame_count);
/* *frames points to frame_count serials, callee first; stable storage. */
int      trace_get(profile_tables *tables, serial_t serial, serial_t *thread_serial, const serial_t **frames,
                   uint32_t *frame_count);
uint32_t trace_count(profile_tables *tables);

/* ---- threads ---- */
/* Ended threads are held until thread_keep_ended's bound; beyond it the
 * oldest ended one is forgotten: thread_get says -1 for it, and writers leave
 * it out (a long-running program that starts threads all the time must not
 * make the agent's memory grow). By default nothing is forgotten. */
#define THREAD_NAME_MAX 512
typedef struct thread_info {
    char        name[THREAD_NAME_MAX];  /* a copy (cut, with name_truncated set, if longer) */
    int         name_truncated;
    const char *group;
    uint64_t    object_id;    /* printed as obj=<hex> */
    int         ended;
    uint64_t    end_seq;      /* 0, or 1 + how many threads had ended before it */
} thread_info;

/* The object id of a thread added without one: bit 63 and its serial. No
 * object of a heap dump can have it: HotSpot's dumper names objects by their
 * addresses, which on Linux x86-64 are user-space addresses below 2^47 (2^56
 * with five-level paging), and the agent's own walk by JVMTI dump tags (bit
 * 62 set, bit 63 clear, heap/heap_tags.h) and class serials (below 2^32).
 * (It was 0x50000000 + serial, an address inside a heap under 4 GB.) */
#define THREAD_DERIVED_ID(serial) ((UINT64_C(1) << 63) | (uint64_t)(serial))
/* object_id 0: THREAD_DERIVED_ID(serial) (printed as obj=<hex>). */
serial_t thread_add(profile_tables *tables, const char *name, const char *group, uint64_t object_id);
void     thread_mark_ended(profile_tables *tables, serial_t serial);
int      thread_get(profile_tables *tables, serial_t serial, thread_info *out);   /* -1: no such thread, or forgotten */
/* Serials handed out so far (THREAD_SERIAL_BASE + count is the next one). */
uint32_t thread_count(profile_tables *tables);
/* Hold at most max ended threads (UINT32_MAX: all, the default). */
void     thread_keep_ended(profile_tables *tables, uint32_t max);
uint64_t thread_forgotten_count(profile_tables *tables);
/* The serials (malloc'd, *n of them; NULL when out of memory) of the held
 * threads whose end_seq is above `after`; *last_seq: what to pass as `after`
 * next time (ends of threads forgotten meanwhile are skipped). */
serial_t *thread_ended_since(profile_tables *tables, uint64_t after, uint32_t *n, uint64_t *last_seq);
/* How far one file has its THREAD START/END records. Per file, because each
 * file must be complete on its own; zeroed for a new file. */
typedef struct thread_records_written {
    uint32_t started;           /* START written for held serials below THREAD_SERIAL_BASE + this */
    uint64_t ended_seq;         /* END written for threads that ended up to this (thread_ended_since) */
} thread_records_written;
/* The records a file lacks, through the writer's two callbacks: start() for
 * every held thread added since, then end() for every thread that ended
 * since, only if its START is in the file (written now or before): a thread
 * forgotten before its START was written gets neither. Moves *written on.
 * -1 when out of memory: nothing written, the records wait for the next dump. */
typedef void (*thread_start_record)(void *ctx, serial_t serial, const thread_info *ti);
typedef void (*thread_end_record)(void *ctx, serial_t serial);
int thread_records_write(profile_tables *tables, thread_records_written *written, thread_start_record start, thread_end_record end,
                         void *ctx);

/* Bytes of the payload arrays beside the keytabs (classes, methods with their
 * line tables, threads with their names), from their capacities: for `status`. */
size_t   tables_payload_bytes(profile_tables *tables);

/* ---- names (pure helpers, also used by writers) ---- */
/* JVM signature to Java name: "Ljava/lang/String;" -> "java.lang.String",
 * "[[I" -> "int[][]". Writes at most size bytes including the NUL; returns 0,
 * or -1 if it did not fit or the signature is malformed (out then holds the
 * signature as given, truncated). */
int signature_to_java_name(const char *sig, char *out, uint32_t size);

#endif
