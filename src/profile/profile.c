/* profile.c: see profile.h.
 *
 * Three interning tables of the project's keytab (src/core/keytab.h):
 * strings (with their NUL, so stored keys are C strings that never move),
 * frames (keyed by their interned strings' addresses and the line) and
 * samples (keyed by the thread name's address and the frame ids; the stored
 * key is the stack a reader gets back). Values live in an array parallel to
 * the samples' indexes. */
#include "profile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/keytab.h"

/* Bounded by memory only: keytab's own cap (entries it can index). */
#define PROFILE_MAX_ENTRIES (KEYTAB_FULL - 1)

/* A frame's key: no padding, so its bytes are its identity. */
typedef struct frame_key {
    const char *strings[4];       /* class, method, signature, file: interned */
    int32_t     line;
    int32_t     run;
} frame_key;

/* A sample's key: the thread name's address, then the stack (only `depth`
 * frames of it are part of the key). keytab stores keys 8-byte aligned, so
 * the stored frames are read back in place. */
typedef struct sample_key {
    const char *thread;
    uint32_t    frames[PROFILE_MAX_DEPTH];
} sample_key;

typedef struct sample_values {
    int64_t values[PROFILE_MAX_VALUES];
} sample_values;

struct profile {
    const char        *title;
    uint32_t           nvalues;
    profile_value_type types[PROFILE_MAX_VALUES];
    uint32_t           default_value;
    profile_value_type period_type;
    int64_t            period, start_nanos, duration_nanos;

    keytab             strings;
    keytab             frame_keys;
    profile_frame     *frames;    /* frame id = keytab index + 1 */
    uint32_t           frames_cap;
    keytab             sample_keys;   /* thread name's address, then frame ids leaf first */
    sample_values     *samples;   /* by keytab index */
    uint32_t           samples_cap;

    profile_deadlock_thread *deadlocked;   /* cycle after cycle; strings interned, frames malloc'd */
    uint32_t           n_deadlocked, deadlocked_cap;
    uint32_t          *cycle_starts;       /* index in deadlocked of each cycle's first thread */
    uint32_t           n_cycles, cycles_cap;
};

static int grow_array(void **array, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > UINT32_MAX / 2)
            return -1;
        n *= 2;
    }
    void *bigger = realloc(*array, (size_t)n * elem);
    if (bigger == NULL)
        return -1;
    *array = bigger;
    *cap = n;
    return 0;
}

/* The profile's copy of s; NULL when out of memory. */
static const char *intern(profile *p, const char *s)
{
    if (s == NULL)
        s = "";
    size_t n = strlen(s) + 1;
    uint32_t i = n > UINT32_MAX ? KEYTAB_FULL : keytab_intern(&p->strings, s, (uint32_t)n, NULL);
    return i == KEYTAB_FULL ? NULL : keytab_key(&p->strings, i, NULL);
}

uint32_t profile_frame_id(profile *p, const char *class_name, const char *method,
                          const char *signature, const char *file, int32_t line)
{
    return profile_frame_id_run(p, class_name, method, signature, file, line, PROFILE_RUN_UNKNOWN);
}

const char *profile_run_suffix(int32_t run)
{
    switch (run) {
    case PROFILE_RUN_INTERPRETED: return "_[0]";
    case PROFILE_RUN_COMPILED: return "_[j]";
    case PROFILE_RUN_INLINED: return "_[i]";
    default: return "";
    }
}

uint32_t profile_frame_id_run(profile *p, const char *class_name, const char *method,
                              const char *signature, const char *file, int32_t line, int32_t run)
{
    frame_key key = { { intern(p, class_name), intern(p, method), intern(p, signature), intern(p, file) },
                      line, run };
    for (int i = 0; i < 4; i++)
        if (key.strings[i] == NULL)
            return 0;
    /* Room first: a key keytab has taken always has its frame. */
    if (grow_array((void **)&p->frames, &p->frames_cap, p->frame_keys.count + 1, sizeof *p->frames) != 0)
        return 0;
    int created;
    uint32_t i = keytab_intern(&p->frame_keys, &key, sizeof key, &created);
    if (i == KEYTAB_FULL)
        return 0;
    if (created)
        p->frames[i] = (profile_frame){ key.strings[0], key.strings[1], key.strings[2], key.strings[3], line,
                                        run };
    return i + 1;
}

int profile_add(profile *p, const uint32_t *frames_leaf_first, uint32_t depth,
                const char *thread, const int64_t *values)
{
    if (depth > PROFILE_MAX_DEPTH)
        depth = PROFILE_MAX_DEPTH;
    uint32_t nframes = profile_frame_count(p);
    for (uint32_t i = 0; i < depth; i++)
        if (frames_leaf_first[i] == 0 || frames_leaf_first[i] > nframes)
            return -1;
    const char *thread_name = intern(p, thread);
    if (thread_name == NULL)
        return -1;
    sample_key key;
    key.thread = thread_name;
    memcpy(key.frames, frames_leaf_first, (size_t)depth * sizeof *frames_leaf_first);
    /* Room first: a key keytab has taken always has its values. */
    if (grow_array((void **)&p->samples, &p->samples_cap, p->sample_keys.count + 1, sizeof *p->samples) != 0)
        return -1;
    int created;
    uint32_t len = (uint32_t)(offsetof(sample_key, frames) + depth * sizeof key.frames[0]);
    uint32_t i = keytab_intern(&p->sample_keys, &key, len, &created);
    if (i == KEYTAB_FULL)
        return -1;
    if (created)
        memset(&p->samples[i], 0, sizeof p->samples[i]);
    for (uint32_t v = 0; v < p->nvalues; v++)
        p->samples[i].values[v] = profile_add_saturated(p->samples[i].values[v], values[v]);
    return 0;
}

/* ------------------------------------------------------------ life */

profile *profile_new(const char *title, const profile_value_type *types, uint32_t nvalues)
{
    if (nvalues == 0 || nvalues > PROFILE_MAX_VALUES)
        return NULL;
    profile *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    keytab_init(&p->strings, PROFILE_MAX_ENTRIES);
    keytab_init(&p->frame_keys, PROFILE_MAX_ENTRIES);
    keytab_init(&p->sample_keys, PROFILE_MAX_ENTRIES);
    p->nvalues = nvalues;
    p->title = intern(p, title);
    p->period_type.type = p->period_type.unit = intern(p, "");
    for (uint32_t i = 0; i < nvalues && p->title; i++) {
        p->types[i].type = intern(p, types[i].type);
        p->types[i].unit = intern(p, types[i].unit);
        if (!p->types[i].type || !p->types[i].unit) {
            profile_free(p);
            return NULL;
        }
    }
    if (p->title == NULL || p->period_type.type == NULL) {
        profile_free(p);
        return NULL;
    }
    return p;
}

void profile_free(profile *p)
{
    if (p == NULL)
        return;
    keytab_free(&p->strings);
    keytab_free(&p->frame_keys);
    keytab_free(&p->sample_keys);
    free(p->frames);
    free(p->samples);
    for (uint32_t i = 0; i < p->n_deadlocked; i++)
        free((void *)p->deadlocked[i].frames);
    free(p->deadlocked);
    free(p->cycle_starts);
    free(p);
}

void profile_set_default_value(profile *p, uint32_t index)
{
    if (index < p->nvalues)
        p->default_value = index;
}

void profile_set_period(profile *p, profile_value_type period_type, int64_t period)
{
    const char *type = intern(p, period_type.type), *unit = intern(p, period_type.unit);
    if (type && unit) {
        p->period_type.type = type;
        p->period_type.unit = unit;
        p->period = period;
    }
}

void profile_set_time(profile *p, int64_t start_nanos, int64_t duration_nanos)
{
    p->start_nanos = start_nanos;
    p->duration_nanos = duration_nanos;
}

/* ------------------------------------------------------------ reading */

const char *profile_title(const profile *p) { return p->title; }
uint32_t profile_value_count(const profile *p) { return p->nvalues; }
uint32_t profile_default_value(const profile *p) { return p->default_value; }
profile_value_type profile_period_type(const profile *p) { return p->period_type; }
int64_t profile_period(const profile *p) { return p->period; }
int64_t profile_start_nanos(const profile *p) { return p->start_nanos; }
int64_t profile_duration_nanos(const profile *p) { return p->duration_nanos; }
uint32_t profile_frame_count(const profile *p) { return p->frame_keys.count; }
uint32_t profile_sample_count(const profile *p) { return p->sample_keys.count; }

profile_value_type profile_value(const profile *p, uint32_t index)
{
    if (index >= p->nvalues)
        return (profile_value_type){ "", "" };
    return p->types[index];
}

const profile_frame *profile_frame_get(const profile *p, uint32_t id)
{
    return id >= 1 && id <= profile_frame_count(p) ? &p->frames[id - 1] : NULL;
}

int profile_sample_get(const profile *p, uint32_t index, profile_sample *out)
{
    if (index >= profile_sample_count(p))
        return -1;
    uint32_t len;
    const char *key = keytab_key(&p->sample_keys, index, &len);   /* only `depth` frames long */
    memcpy(&out->thread, key + offsetof(sample_key, thread), sizeof out->thread);
    out->frames = (const uint32_t *)(const void *)(key + offsetof(sample_key, frames));
    out->depth = (uint32_t)((len - offsetof(sample_key, frames)) / sizeof out->frames[0]);
    memcpy(out->values, p->samples[index].values, sizeof out->values);
    return 0;
}

int64_t profile_total(const profile *p, uint32_t value_index)
{
    int64_t total = 0;
    if (value_index < p->nvalues)
        for (uint32_t i = 0; i < profile_sample_count(p); i++)
            total = profile_add_saturated(total, p->samples[i].values[value_index]);
    return total;
}

int profile_frame_name(const profile_frame *f, char *buf, size_t size)
{
    if (f->class_name[0] == 0)
        return snprintf(buf, size, "%s", f->method);
    return snprintf(buf, size, "%s.%s", f->class_name, f->method);
}

int profile_add_deadlock(profile *p, const profile_deadlock_thread *threads, uint32_t n)
{
    if (n == 0 || n > UINT32_MAX - p->n_deadlocked ||
        grow_array((void **)&p->deadlocked, &p->deadlocked_cap, p->n_deadlocked + n, sizeof *p->deadlocked) != 0 ||
        grow_array((void **)&p->cycle_starts, &p->cycles_cap, p->n_cycles + 1, sizeof *p->cycle_starts) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t f = 0; f < threads[i].depth; f++)
            if (threads[i].frames[f] == 0 || threads[i].frames[f] > p->frame_keys.count)
                return -1;
    uint32_t first = p->n_deadlocked;
    for (uint32_t i = 0; i < n; i++) {
        const profile_deadlock_thread *t = &threads[i];
        uint32_t depth = t->depth < PROFILE_MAX_DEPTH ? t->depth : PROFILE_MAX_DEPTH;
        uint32_t *frames = malloc((depth ? depth : 1) * sizeof *frames);
        const char *thread = intern(p, t->thread), *lock_class = intern(p, t->lock_class);
        if (frames == NULL || thread == NULL || lock_class == NULL) {
            free(frames);
            while (p->n_deadlocked > first)            /* the cycle whole or not at all */
                free((void *)p->deadlocked[--p->n_deadlocked].frames);
            return -1;
        }
        if (depth)
            memcpy(frames, t->frames, depth * sizeof *frames);
        p->deadlocked[p->n_deadlocked++] = (profile_deadlock_thread){ thread, lock_class, t->parked != 0, frames,
                                                                      depth };
    }
    p->cycle_starts[p->n_cycles++] = first;
    return 0;
}

uint32_t profile_deadlock_count(const profile *p)
{
    return p->n_cycles;
}

const profile_deadlock_thread *profile_deadlock_get(const profile *p, uint32_t index, uint32_t *n)
{
    if (index >= p->n_cycles)
        return NULL;
    uint32_t start = p->cycle_starts[index];
    uint32_t end = index + 1 < p->n_cycles ? p->cycle_starts[index + 1] : p->n_deadlocked;
    *n = end - start;
    return &p->deadlocked[start];
}
