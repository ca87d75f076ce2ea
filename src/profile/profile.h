/*
 * profile: one measurement as stacks with values, the model every modern
 * writer reads (pprof, collapsed stacks, flame graphs, the HTML report) and
 * `hprof diff` compares.
 *
 * Two producers fill it: the agent's collectors at a dump (full stacks of up
 * to PROFILE_MAX_DEPTH frames, not cut at depth=), and the front end's readers
 * of HPROF text and binary files (stacks as deep as the file's traces).
 *
 * A profile owns copies of every string it is given, so a producer may build
 * one from short-lived buffers. Frames are interned (same class, method,
 * signature, file and line: same frame id), and samples with the same stack
 * and thread are merged (values added), so writers see each distinct stack
 * once. Memory grows with the number of distinct frames and stacks only.
 *
 * Pure C, no JVMTI; not thread-safe (one producer builds a profile, then
 * writers read it).
 */
#ifndef HPROF_PROFILE_H
#define HPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define PROFILE_MAX_DEPTH   256     /* frames kept per stack */
#define PROFILE_MAX_VALUES  4       /* values per sample */

/* a + b, held at INT64_MAX (INT64_MIN) instead of overflowing: profiles are
 * also made of counts read from files, which may say anything. */
static inline int64_t profile_add_saturated(int64_t a, int64_t b)
{
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return sum;
}

/* Lines that are not lines (as in src/core/tables.h). */
#define PROFILE_LINE_UNKNOWN  (-1)
#define PROFILE_LINE_NATIVE   (-3)

/* What a value measures: pprof's ValueType ("samples"/"count",
 * "cpu"/"nanoseconds", "alloc_space"/"bytes", "delay"/"nanoseconds"). */
typedef struct profile_value_type {
    const char *type;
    const char *unit;
} profile_value_type;

/* One function at one line. Strings are the profile's own copies; "" when
 * unknown, never NULL. */
typedef struct profile_frame {
    const char *class_name;     /* Java form: "java.util.HashMap", "[unwalkable]" */
    const char *method;         /* "get" */
    const char *signature;      /* "(Ljava/lang/Object;)Ljava/lang/Object;" or "" */
    const char *file;           /* "HashMap.java" or "" */
    int32_t     line;           /* > 0, or PROFILE_LINE_UNKNOWN / PROFILE_LINE_NATIVE */
    int32_t     run;            /* PROFILE_RUN_*: how a Java frame ran, where known */
} profile_frame;

/* How a Java frame ran (the agent knows it for the top Java frames of CPU
 * and wall samples). Part of a frame's identity: the same method
 * interpreted and compiled are two frames, as in async-profiler. */
enum {
    PROFILE_RUN_UNKNOWN = 0,
    PROFILE_RUN_INTERPRETED,
    PROFILE_RUN_COMPILED,
    PROFILE_RUN_INLINED,
};

/* The suffix collapsed stacks and flame graphs put after a frame's name
 * for its run, async-profiler's convention that flame graph tools know:
 * "_[0]" interpreted, "_[j]" compiled (JIT), "_[i]" inlined; "" unknown. */
const char *profile_run_suffix(int32_t run);

/* One distinct (stack, thread) with its values. */
typedef struct profile_sample {
    const uint32_t *frames;     /* frame ids, leaf (callee) first */
    uint32_t        depth;
    const char     *thread;     /* thread name, or "" when stacks are not per thread */
    int64_t         values[PROFILE_MAX_VALUES];
} profile_sample;

typedef struct profile profile;   /* opaque */

/* A new empty profile measuring `nvalues` (1..PROFILE_MAX_VALUES) values.
 * `title` names the section ("CPU samples", "Allocation sites", ...).
 * NULL when out of memory or nvalues is out of range. */
profile *profile_new(const char *title, const profile_value_type *types, uint32_t nvalues);
void     profile_free(profile *p);

/* The value flame graphs and tables show first (default 0), and pprof's
 * period: "one sample stands for `period` units of `period_type`"
 * (cpu=samples: cpu/nanoseconds, interval in ns). */
void profile_set_default_value(profile *p, uint32_t index);
void profile_set_period(profile *p, profile_value_type period_type, int64_t period);
/* Wall-clock start (ns since the epoch) and duration of what was measured; 0 when unknown. */
void profile_set_time(profile *p, int64_t start_nanos, int64_t duration_nanos);

/* Intern a frame; returns its id (>= 1), or 0 when out of memory.
 * NULL strings are taken as "". */
uint32_t profile_frame_id(profile *p, const char *class_name, const char *method,
                          const char *signature, const char *file, int32_t line);

/* The same, for a frame whose run (PROFILE_RUN_*) is known. */
uint32_t profile_frame_id_run(profile *p, const char *class_name, const char *method,
                              const char *signature, const char *file, int32_t line, int32_t run);

/* Add values to the sample of this stack (frame ids leaf first, depth
 * cut at PROFILE_MAX_DEPTH) and thread (NULL or "" for none). `values` has
 * the profile's nvalues entries. 0, or -1 when out of memory or an id is bad. */
int profile_add(profile *p, const uint32_t *frames_leaf_first, uint32_t depth,
                const char *thread, const int64_t *values);

/* Deadlocks: cycles of threads, each thread waiting for a lock that the
 * next one of its cycle holds (the last: the first's). monitor=y's lock
 * profile carries those its dump found; writers that show them (jfr=)
 * read them, the others leave them out. */
typedef struct profile_deadlock_thread {
    const char     *thread;        /* its name */
    const char     *lock_class;    /* the lock it waits for, Java form: "java.lang.Object" */
    int             parked;        /* 1: parked on an ownable synchronizer; 0: entering a monitor */
    const uint32_t *frames;        /* its stack: frame ids of the profile, leaf first */
    uint32_t        depth;
} profile_deadlock_thread;

/* Add one cycle of n threads (the profile keeps copies). 0, or -1 when out
 * of memory, n is 0 or a frame id is bad. */
int profile_add_deadlock(profile *p, const profile_deadlock_thread *threads, uint32_t n);

/* ---- reading ---- */
const char        *profile_title(const profile *p);
uint32_t           profile_value_count(const profile *p);
profile_value_type profile_value(const profile *p, uint32_t index);
uint32_t           profile_default_value(const profile *p);
profile_value_type profile_period_type(const profile *p);   /* {"",""} when unset */
int64_t            profile_period(const profile *p);
int64_t            profile_start_nanos(const profile *p);
int64_t            profile_duration_nanos(const profile *p);

uint32_t             profile_frame_count(const profile *p);
const profile_frame *profile_frame_get(const profile *p, uint32_t id);   /* NULL if no such id */

uint32_t              profile_sample_count(const profile *p);
/* The index-th distinct sample, in insertion order: 0, or -1 if no such
 * index. out->frames stays valid until the next profile_add. */
int profile_sample_get(const profile *p, uint32_t index, profile_sample *out);

/* The deadlock cycles added, and the threads of the index-th (*n of them;
 * NULL if no such index). */
uint32_t                       profile_deadlock_count(const profile *p);
const profile_deadlock_thread *profile_deadlock_get(const profile *p, uint32_t index, uint32_t *n);

/* Sum of one value over all samples. */
int64_t profile_total(const profile *p, uint32_t value_index);

/* "java.util.HashMap.get": the name writers show for a frame. Returns the
 * length it needed (as snprintf). */
int profile_frame_name(const profile_frame *f, char *buf, size_t size);

#endif
