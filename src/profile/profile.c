/* profile.c: see profile.h.
 *
 * Three open-addressing hash tables (strings, frames, samples), each an
 * array of indexes into a growable array, doubled at half load. Strings are
 * interned, so frames and threads compare by pointer. Stacks live in one
 * pool of frame ids; a sample keeps its offset in the pool, and the pointer is
 * made when a sample is read. */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct index_table {      /* slots hold index + 1; 0 is empty */
    uint32_t *slots;
    uint32_t  capacity;           /* a power of two */
} index_table;

typedef struct sample_entry {
    uint32_t    stack_offset;     /* into stack_pool */
    uint32_t    depth;
    uint64_t    hash;
    const char *thread;
    int64_t     values[PROFILE_MAX_VALUES];
} sample_entry;

struct profile {
    const char        *title;
    uint32_t           nvalues;
    profile_value_type types[PROFILE_MAX_VALUES];
    uint32_t           default_value;
    profile_value_type period_type;
    int64_t            period, start_nanos, duration_nanos;

    char             **strings;   /* interned, owned */
    uint32_t           nstrings, strings_cap;
    index_table        string_index;

    profile_frame     *frames;    /* frame id = index + 1 */
    uint32_t           nframes, frames_cap;
    index_table        frame_index;

    sample_entry      *samples;
    uint32_t           nsamples, samples_cap;
    index_table        sample_index;
    uint32_t          *stack_pool;
    uint32_t           pool_used, pool_cap;
};

/* ------------------------------------------------------------ hashing */

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;    /* FNV-1a */
    }
    return h;
}

#define HASH_SEED 14695981039346656037ull

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

/* Find the slot for `hash` where `same(index)` holds, or the empty slot
 * where it would go. */
typedef int (*same_fn)(const profile *p, uint32_t index, const void *key);

static uint32_t *index_find(const profile *p, const index_table *t, uint64_t hash, same_fn same,
                            const void *key)
{
    uint32_t mask = t->capacity - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &t->slots[i];
        if (*slot == 0 || same(p, *slot - 1, key))
            return slot;
    }
}

/* Keep the load under one half: rebuild with twice the slots. `hash_of`
 * gives an entry's hash again. */
typedef uint64_t (*hash_of_fn)(const profile *p, uint32_t index);

static int index_reserve(const profile *p, index_table *t, uint32_t entries, hash_of_fn hash_of)
{
    if (t->capacity != 0 && entries < t->capacity / 2)
        return 0;
    uint32_t cap = t->capacity ? t->capacity * 2 : 64;
    if (cap == 0)
        return -1;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (uint32_t i = 0; i < t->capacity; i++) {
        uint32_t v = t->slots[i];
        if (v == 0)
            continue;
        uint32_t j = (uint32_t)hash_of(p, v - 1) & (cap - 1);
        while (slots[j] != 0)
            j = (j + 1) & (cap - 1);
        slots[j] = v;
    }
    free(t->slots);
    t->slots = slots;
    t->capacity = cap;
    return 0;
}

/* ------------------------------------------------------------ strings */

static uint64_t string_hash(const char *s)
{
    return hash_bytes(HASH_SEED, s, strlen(s));
}

static uint64_t string_hash_at(const profile *p, uint32_t index)
{
    return string_hash(p->strings[index]);
}

static int string_same(const profile *p, uint32_t index, const void *key)
{
    return strcmp(p->strings[index], key) == 0;
}

/* The profile's copy of s; NULL when out of memory. */
static const char *intern(profile *p, const char *s)
{
    if (s == NULL)
        s = "";
    if (index_reserve(p, &p->string_index, p->nstrings + 1, string_hash_at) != 0)
        return NULL;
    uint32_t *slot = index_find(p, &p->string_index, string_hash(s), string_same, s);
    if (*slot != 0)
        return p->strings[*slot - 1];
    if (grow_array((void **)&p->strings, &p->strings_cap, p->nstrings + 1, sizeof *p->strings) != 0)
        return NULL;
    char *copy = strdup(s);
    if (copy == NULL)
        return NULL;
    p->strings[p->nstrings] = copy;
    *slot = ++p->nstrings;
    return copy;
}

/* ------------------------------------------------------------ frames */

static uint64_t frame_hash(const profile_frame *f)
{
    /* Interned strings: their addresses identify them. */
    const void *parts[4] = { f->class_name, f->method, f->signature, f->file };
    uint64_t h = hash_bytes(HASH_SEED, parts, sizeof parts);
    return hash_bytes(h, &f->line, sizeof f->line);
}

static uint64_t frame_hash_at(const profile *p, uint32_t index)
{
    return frame_hash(&p->frames[index]);
}

static int frame_same(const profile *p, uint32_t index, const void *key)
{
    const profile_frame *a = &p->frames[index], *b = key;
    return a->class_name == b->class_name && a->method == b->method &&
           a->signature == b->signature && a->file == b->file && a->line == b->line;
}

uint32_t profile_frame_id(profile *p, const char *class_name, const char *method,
                          const char *signature, const char *file, int32_t line)
{
    profile_frame f = { intern(p, class_name), intern(p, method), intern(p, signature),
                        intern(p, file), line };
    if (!f.class_name || !f.method || !f.signature || !f.file)
        return 0;
    if (index_reserve(p, &p->frame_index, p->nframes + 1, frame_hash_at) != 0)
        return 0;
    uint32_t *slot = index_find(p, &p->frame_index, frame_hash(&f), frame_same, &f);
    if (*slot != 0)
        return *slot;
    if (grow_array((void **)&p->frames, &p->frames_cap, p->nframes + 1, sizeof *p->frames) != 0)
        return 0;
    p->frames[p->nframes] = f;
    *slot = ++p->nframes;
    return *slot;
}

/* ------------------------------------------------------------ samples */

typedef struct sample_key {
    const uint32_t *frames;
    uint32_t        depth;
    const char     *thread;
    uint64_t        hash;
} sample_key;

static uint64_t sample_hash(const uint32_t *frames, uint32_t depth, const char *thread)
{
    uint64_t h = hash_bytes(HASH_SEED, &thread, sizeof thread);
    return hash_bytes(h, frames, (size_t)depth * sizeof *frames);
}

static uint64_t sample_hash_at(const profile *p, uint32_t index)
{
    return p->samples[index].hash;
}

static int sample_same(const profile *p, uint32_t index, const void *key)
{
    const sample_entry *s = &p->samples[index];
    const sample_key *k = key;
    return s->hash == k->hash && s->depth == k->depth && s->thread == k->thread &&
           memcmp(p->stack_pool + s->stack_offset, k->frames, (size_t)k->depth * sizeof *k->frames) == 0;
}

int profile_add(profile *p, const uint32_t *frames_leaf_first, uint32_t depth,
                const char *thread, const int64_t *values)
{
    if (depth > PROFILE_MAX_DEPTH)
        depth = PROFILE_MAX_DEPTH;
    for (uint32_t i = 0; i < depth; i++)
        if (frames_leaf_first[i] == 0 || frames_leaf_first[i] > p->nframes)
            return -1;
    sample_key key = { frames_leaf_first, depth, intern(p, thread), 0 };
    if (key.thread == NULL)
        return -1;
    key.hash = sample_hash(frames_leaf_first, depth, key.thread);
    if (index_reserve(p, &p->sample_index, p->nsamples + 1, sample_hash_at) != 0)
        return -1;
    uint32_t *slot = index_find(p, &p->sample_index, key.hash, sample_same, &key);
    if (*slot == 0) {
        if (grow_array((void **)&p->samples, &p->samples_cap, p->nsamples + 1, sizeof *p->samples) != 0 ||
            p->pool_used > UINT32_MAX - depth ||
            grow_array((void **)&p->stack_pool, &p->pool_cap, p->pool_used + depth,
                       sizeof *p->stack_pool) != 0)
            return -1;
        sample_entry *s = &p->samples[p->nsamples];
        memset(s, 0, sizeof *s);
        s->stack_offset = p->pool_used;
        s->depth = depth;
        s->hash = key.hash;
        s->thread = key.thread;
        if (depth)
            memcpy(p->stack_pool + p->pool_used, frames_leaf_first, (size_t)depth * sizeof *frames_leaf_first);
        p->pool_used += depth;
        *slot = ++p->nsamples;
    }
    sample_entry *s = &p->samples[*slot - 1];
    for (uint32_t v = 0; v < p->nvalues; v++)
        s->values[v] += values[v];
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
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->string_index.slots);
    free(p->frames);
    free(p->frame_index.slots);
    free(p->samples);
    free(p->sample_index.slots);
    free(p->stack_pool);
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
uint32_t profile_frame_count(const profile *p) { return p->nframes; }
uint32_t profile_sample_count(const profile *p) { return p->nsamples; }

profile_value_type profile_value(const profile *p, uint32_t index)
{
    if (index >= p->nvalues)
        return (profile_value_type){ "", "" };
    return p->types[index];
}

const profile_frame *profile_frame_get(const profile *p, uint32_t id)
{
    return id >= 1 && id <= p->nframes ? &p->frames[id - 1] : NULL;
}

int profile_sample_get(const profile *p, uint32_t index, profile_sample *out)
{
    if (index >= p->nsamples)
        return -1;
    const sample_entry *s = &p->samples[index];
    out->frames = p->stack_pool + s->stack_offset;
    out->depth = s->depth;
    out->thread = s->thread;
    memcpy(out->values, s->values, sizeof s->values);
    return 0;
}

int64_t profile_total(const profile *p, uint32_t value_index)
{
    int64_t total = 0;
    if (value_index < p->nvalues)
        for (uint32_t i = 0; i < p->nsamples; i++)
            total += p->samples[i].values[value_index];
    return total;
}

int profile_frame_name(const profile_frame *f, char *buf, size_t size)
{
    if (f->class_name[0] == 0)
        return snprintf(buf, size, "%s", f->method);
    return snprintf(buf, size, "%s.%s", f->class_name, f->method);
}
