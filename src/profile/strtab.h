/*
 * strtab: distinct strings numbered in the order first seen, for pprof's
 * string_table and the name tables of collapsed stacks and flame graphs.
 * Owns copies of its strings. Pure C.
 */
#ifndef HPROF_STRTAB_H
#define HPROF_STRTAB_H

#include <stdint.h>

#include "../core/keytab.h"
#include "profile.h"

/* The project's interning table (src/core/keytab) over NUL-terminated
 * strings: indexes dense from 0, stored strings never move. */
typedef struct strtab {
    keytab keys;
} strtab;

void     strtab_init(strtab *t);
/* The index of s, added if new; UINT32_MAX (KEYTAB_FULL) when out of memory. */
uint32_t strtab_add(strtab *t, const char *s);
const char *strtab_get(const strtab *t, uint32_t index);
uint32_t strtab_count(const strtab *t);
void     strtab_free(strtab *t);

/* The shown name (profile_frame_name) of every frame of p as an index into t:
 * (*name_of)[frame id], entry 0 unused; with drop_addresses, without hidden
 * classes' addresses (hidden_name_drop_addresses). 0, or -1 when out of
 * memory. The caller frees *name_of. */
int strtab_add_frame_names(strtab *t, const profile *p, uint32_t **name_of, int drop_addresses);

#endif
