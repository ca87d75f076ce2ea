/* strtab.c: see strtab.h. */
#include "strtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash_string(const char *s)
{
    uint32_t h = 2166136261u;           /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static uint32_t *find_slot(const strtab *t, const char *s, uint32_t hash)
{
    uint32_t mask = t->capacity - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask)
        if (t->slots[i] == 0 || strcmp(t->strings[t->slots[i] - 1], s) == 0)
            return &t->slots[i];
}

static int grow_slots(strtab *t)
{
    uint32_t cap = t->capacity ? t->capacity * 2 : 256;
    uint32_t *old = t->slots, old_cap = t->capacity;
    if (cap == 0 || (t->slots = calloc(cap, sizeof *t->slots)) == NULL) {
        t->slots = old;
        return -1;
    }
    t->capacity = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i] != 0)
            *find_slot(t, t->strings[old[i] - 1], hash_string(t->strings[old[i] - 1])) = old[i];
    free(old);
    return 0;
}

static int grow_strings(strtab *t)
{
    if (t->count < t->strings_cap)
        return 0;
    uint32_t cap = t->strings_cap ? t->strings_cap * 2 : 256;
    char **bigger = cap ? realloc(t->strings, (size_t)cap * sizeof *bigger) : NULL;
    if (bigger == NULL)
        return -1;
    t->strings = bigger;
    t->strings_cap = cap;
    return 0;
}

uint32_t strtab_add(strtab *t, const char *s)
{
    if ((t->count + 1) * 2 > t->capacity && grow_slots(t) != 0)
        return UINT32_MAX;
    uint32_t *slot = find_slot(t, s, hash_string(s));
    if (*slot != 0)
        return *slot - 1;
    char *copy;
    if (grow_strings(t) != 0 || (copy = strdup(s)) == NULL)
        return UINT32_MAX;
    t->strings[t->count] = copy;
    *slot = ++t->count;
    return *slot - 1;
}

void strtab_free(strtab *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The frame's shown name in buf, or in a malloc'ed buffer (*heap) when long. */
static const char *frame_name(const profile_frame *f, char *buf, size_t size, char **heap)
{
    int n = profile_frame_name(f, buf, size);
    if (n < 0 || (size_t)n < size)
        return n < 0 ? NULL : buf;
    if ((*heap = malloc((size_t)n + 1)) == NULL)
        return NULL;
    profile_frame_name(f, *heap, (size_t)n + 1);
    return *heap;
}

int strtab_add_frame_names(strtab *t, const profile *p, uint32_t **name_of)
{
    uint32_t nframes = profile_frame_count(p);
    uint32_t *names = calloc((size_t)nframes + 1, sizeof *names);
    if (names == NULL)
        return -1;
    char buf[512];
    for (uint32_t id = 1; id <= nframes; id++) {
        char *heap = NULL;
        const char *name = frame_name(profile_frame_get(p, id), buf, sizeof buf, &heap);
        names[id] = name ? strtab_add(t, name) : UINT32_MAX;
        free(heap);
        if (names[id] == UINT32_MAX) {
            free(names);
            return -1;
        }
    }
    *name_of = names;
    return 0;
}
