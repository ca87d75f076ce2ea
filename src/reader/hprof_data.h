/*
 * hprof_data: what the front end's readers take out of one HPROF file (text
 * or binary), before and after it becomes profiles.
 *
 * A reader fills the raw part as the file says it: threads, stack traces with
 * their frames, and the rows of the last section of each kind (a file written
 * with SIGQUIT dumps holds several; each is cumulative, so the last covers the
 * whole run), plus facts that are not stacks (header options, dates, monitor
 * dump and deadlocks text, heap summary and heap dump counts). Then
 * hprof_data_build_profiles() turns each present section into a profile
 * (src/profile/profile.h): a row's trace becomes its stack, a row's class
 * (allocation sites, monitors) a pseudo frame on top of it, as async-profiler
 * shows the allocated class or the lock.
 *
 * Keeping the rows as well as the profiles lets `hprof convert --to text`
 * write the same traces and sections back in HPROF's layout.
 *
 * Pure C, no JVMTI. Memory: the whole file (text) or its strings (binary),
 * one entry per thread, trace, frame and row.
 */
#ifndef HPROF_DATA_H
#define HPROF_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "../profile/profile.h"
#include "string_store.h"

/* Sections that become profiles, in the order reports show them. */
typedef enum hd_kind {
    HD_CPU_SAMPLES, HD_CPU_TIMES, HD_SITES, HD_MONITOR_TIME, HD_MONITOR_WAIT, HD_KINDS
} hd_kind;

/* One frame as the file gives it: Java class name ("java.util.HashMap"),
 * method, signature ("" in text files), file ("" when unknown), line (> 0,
 * or PROFILE_LINE_UNKNOWN / PROFILE_LINE_NATIVE), and how it ran
 * (PROFILE_RUN_*; JFR recordings say it, HPROF files do not). */
typedef struct hd_frame {
    const char *class_name, *method, *signature, *file;
    int32_t     line;
    int32_t     run;
} hd_frame;

typedef struct hd_trace {
    uint32_t serial;
    uint32_t thread;          /* thread serial, 0 when traces are not per thread */
    uint32_t first, depth;    /* frames[first .. first + depth), callee first */
} hd_trace;

typedef struct hd_thread {
    uint32_t    serial;
    const char *name, *group;
    uint64_t    object_id;
    int         ended;
} hd_thread;

/* One row of a section. values by kind:
 *   CPU SAMPLES   [0] samples
 *   CPU TIME      [0] calls, [1] CPU nanoseconds
 *   SITES         [0] live bytes, [1] live objects, [2] allocated bytes, [3] allocated objects
 *   MONITOR TIME / MONITOR WAIT TIME   [0] count, [1] nanoseconds */
typedef struct hd_row {
    uint32_t    trace;
    const char *class_name;   /* SITES: the class allocated; MONITOR: the lock's; else NULL */
    int64_t     values[PROFILE_MAX_VALUES];
} hd_row;

typedef struct hd_section {
    int         present;
    uint32_t    times_seen;   /* how many sections of this kind the file holds */
    int64_t     total;        /* as the file says it: samples, ms (times, monitors), live bytes (sites) */
    int64_t     total_alloc_bytes, total_live_objs, total_alloc_objs;  /* SITES, binary only */
    const char *date;         /* text: the section's date; "" when none */
    hd_row     *rows;
    uint32_t    nrows, rows_cap;
} hd_section;

typedef struct hd_index hd_index;   /* serial -> position */

/* A class of the last heap dump, with why it was loaded: a text CLS record,
 * or a binary LOAD CLASS joined with its CLASS DUMP. */
typedef struct hd_class {
    const char *name;            /* Java form; a hidden class with its address */
    uint32_t    trace;           /* the trace that loaded it; 300000 (or 0): none recorded */
    uint64_t    loader;          /* its loader's object id; 0: the bootstrap loader */
    int         loader_known;    /* 0: no class record of a heap dump gives it */
} hd_class;

/* A class loader object of the last heap dump, by the class of the object. */
typedef struct hd_loader {
    uint64_t    id;
    const char *class_name;      /* Java form */
} hd_loader;

typedef struct hprof_data {
    const char *path;
    const char *format;           /* "HPROF text" or "HPROF binary (JAVA PROFILE 1.0.2)" */
    const char *created;          /* the header's date, "" when unknown */
    int64_t     start_ms;         /* binary: header time, ms since the epoch; 0 when unknown */
    int64_t     duration_ms;      /* binary: last record's time; text: last date - created; -1 unknown */
    const char *options;          /* text: the header's options; "" when unknown */
    const char *events_read;      /* JFR: the events read, by type, with counts; NULL otherwise */
    int         depth_option;     /* depth= from the options or CONTROL SETTINGS, -1 when unknown */
    int         interval_ms;      /* interval= (or its default with cpu=samples), -1 when unknown */

    hd_thread  *threads;
    uint32_t    nthreads, threads_cap;
    hd_trace   *traces;
    uint32_t    ntraces, traces_cap;
    hd_frame   *frames;
    uint32_t    nframes, frames_cap;

    hd_section  sections[HD_KINDS];
    profile    *profiles[HD_KINDS];   /* made by hprof_data_build_profiles; NULL if absent */

    const char *monitor_dump;     /* text of the last MONITOR DUMP (without BEGIN/END), or NULL */
    const char *cpu_summary;      /* text of the last CPU SUMMARY (where the CPU went), or NULL */
    const char *wall_summary;     /* text of the last WALL SUMMARY (wall time by state), or NULL */
    const char *deadlocks;        /* text of the last DEADLOCKS section, or NULL */
    uint32_t    deadlock_cycles;

    /* binary: last HEAP SUMMARY, and what the heap dumps hold */
    int         has_heap_summary;
    int64_t     heap_live_bytes, heap_live_objs, heap_alloc_bytes, heap_alloc_objs;
    uint32_t    heap_dumps;
    uint64_t    heap_classes, heap_instances, heap_obj_arrays, heap_prim_arrays, heap_roots;
    const char *heap_dump_note;   /* why counts stopped early, or NULL */
    /* classes and their loaders, from the class records (hd_class) */
    hd_class   *classes;
    uint32_t    nclasses, classes_cap;
    hd_loader  *loaders;
    uint32_t    nloaders, loaders_cap;
    uint32_t    text_heap_dumps;  /* text: HEAP DUMP sections seen */
    uint32_t    ignored_lines;    /* text: lines outside sections of kinds not read */
    /* text: the AGENT MEMORY lines (one per dump): how many, and the last one's figures */
    uint32_t    agent_memory_lines;
    uint64_t    agent_memory_bytes, agent_memory_max;
    uint64_t    agent_threads_seen, agent_threads_forgotten;

    /* storage */
    char       *buffer;           /* text: the file, split in place */
    string_store *strings;
    hd_index   *trace_index, *thread_index;
} hprof_data;

/* Reads path (text or binary, told apart by the first bytes). NULL on error
 * with a message naming the file and what is wrong in err. */
hprof_data *hprof_data_read(const char *path, char *err, size_t errlen);
void        hprof_data_free(hprof_data *d);

/* Readers over bytes already in memory (tests; the readers above use them).
 * text (with text[len] == '\0') is split in place and owned by d on success. */
hprof_data *hprof_text_parse(const char *path, char *text, size_t len, char *err, size_t errlen);
hprof_data *hprof_binary_parse(const char *path, const unsigned char *bytes, size_t len,
                               char *err, size_t errlen);
/* A JFR recording (hprof_jfr_reader.c): CPU samples, allocation samples and
 * monitor events become the sections of the kinds they measure. */
hprof_data *hprof_jfr_parse(const char *path, const unsigned char *bytes, size_t len,
                            char *err, size_t errlen);

/* ---- for readers ---- */
hprof_data *hprof_data_new(const char *path, const char *format);
/* "<path>: line <at + 1>: <what>" or "<path>: offset <at> (0x..): <what>" into err; returns -1. */
int         hd_fail(const hprof_data *d, char *err, size_t errlen, int at_offset, size_t at,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Appends item (elem bytes) to *array of *n items and *cap room; 0, or -1 when out of memory. */
int         hd_push(void **array, uint32_t *n, uint32_t *cap, size_t elem, const void *item);
/* A copy of n bytes of s with a NUL, kept until hprof_data_free; NULL when out of memory. */
const char *hd_strndup(hprof_data *d, const char *s, size_t n);
int         hd_add_thread(hprof_data *d, const hd_thread *t);
hd_thread  *hd_find_thread(const hprof_data *d, uint32_t serial);
/* Starts trace `serial`; frames follow with hd_add_frame. -1 when out of memory. */
int         hd_begin_trace(hprof_data *d, uint32_t serial, uint32_t thread);
int         hd_add_frame(hprof_data *d, const hd_frame *f);
const hd_trace *hd_find_trace(const hprof_data *d, uint32_t serial);
/* A map of 64-bit keys (serials, ids) to positions; a key put twice keeps
 * its last position (a trace written again). *map starts NULL. */
int         hd_map_put(hd_index **map, uint64_t key, uint32_t position);
int         hd_map_get(const hd_index *map, uint64_t key, uint32_t *position);   /* 0: found */
void        hd_map_free(hd_index *map);
/* Empties a section (a later one of its kind replaces it). */
void        hd_section_restart(hd_section *s);
int         hd_add_row(hd_section *s, const hd_row *row);
/* The class records of a heap dump: a later dump's replace an earlier's
 * (hd_classes_restart). -1 when out of memory. */
int         hd_add_class(hprof_data *d, const hd_class *c);
int         hd_add_loader(hprof_data *d, uint64_t id, const char *class_name);
void        hd_classes_restart(hprof_data *d);

/* The pseudo frame of CPU samples in rows left out under cutoff=. */
#define HD_CUTOFF_CLASS  "[cutoff]"
#define HD_CUTOFF_METHOD "rows_below_cutoff"

/* Makes d->profiles from the sections. 0, or -1 with a message in err (a row
 * names a trace the file does not have; out of memory). */
int hprof_data_build_profiles(hprof_data *d, char *err, size_t errlen);

/* "cpu", "times", "alloc", "monitor", "wait": the names --profile takes. */
const char *hd_kind_name(hd_kind k);
/* "CPU samples", "CPU time", ...: the profiles' titles. */
const char *hd_kind_title(hd_kind k);

/* The deepest trace, and how many traces are that deep: when every deep
 * trace stops at the same depth (the depth= option), stacks were cut. */
uint32_t hd_max_depth(const hprof_data *d, uint32_t *at_max);

/* Whether the file's stacks were cut at depth=: its deepest traces reach
 * the depth= it was written with, or, where that is unknown, at least a
 * quarter of the traces stop at one deepest depth. *max and *at_max get
 * hd_max_depth's answers. */
int hd_stacks_cut(const hprof_data *d, uint32_t *max, uint32_t *at_max);

/* What a file that is not an HPROF file is (gzip, JFR, HTML, ELF), by its
 * first bytes, with what reads it; NULL if none of those. */
const char *hprof_data_foreign_format(const unsigned char *bytes, size_t len);

#endif
