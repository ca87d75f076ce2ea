/* strtab.c: see strtab.h. */
#include "strtab.h"

#include "../core/hidden_names.h"

#include <stdlib.h>
#include <string.h>

void strtab_init(strtab *t)
{
    keytab_init(&t->keys, KEYTAB_FULL - 1);
}

uint32_t strtab_add(strtab *t, const char *s)
{
    size_t n = strlen(s) + 1;           /* with its NUL: stored keys read back as C strings */
    return n > UINT32_MAX ? KEYTAB_FULL : keytab_intern(&t->keys, s, (uint32_t)n, NULL);
}

const char *strtab_get(const strtab *t, uint32_t index)
{
    return keytab_key(&t->keys, index, NULL);
}

uint32_t strtab_count(const strtab *t)
{
    return t->keys.count;
}

void strtab_free(strtab *t)
{
    keytab_free(&t->keys);
}

/* The frame's shown name and run suffix in buf, or in a malloc'ed buffer
 * (*heap) when long. */
static char *frame_name(const profile_frame *f, char *buf, size_t size, char **heap)
{
    const char *suffix = profile_run_suffix(f->run);
    size_t suffix_len = strlen(suffix);
    int n = profile_frame_name(f, buf, size);
    if (n < 0)
        return NULL;
    char *name = buf;
    if ((size_t)n + suffix_len >= size) {
        if ((*heap = malloc((size_t)n + suffix_len + 1)) == NULL)
            return NULL;
        profile_frame_name(f, *heap, (size_t)n + 1);
        name = *heap;
    }
    memcpy(name + n, suffix, suffix_len + 1);
    return name;
}

int strtab_add_frame_names(strtab *t, const profile *p, uint32_t **name_of, int drop_addresses)
{
    uint32_t nframes = profile_frame_count(p);
    uint32_t *names = calloc((size_t)nframes + 1, sizeof *names);
    if (names == NULL)
        return -1;
    char buf[512];
    for (uint32_t id = 1; id <= nframes; id++) {
        char *heap = NULL;
        char *name = frame_name(profile_frame_get(p, id), buf, sizeof buf, &heap);
        if (name && drop_addresses)
            hidden_name_drop_addresses(name, strlen(name));
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
