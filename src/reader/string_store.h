/*
 * string_store: copies of strings kept until the store is freed, in 64 KiB
 * chunks (one malloc per chunk, not per string): readers keep every name of
 * a file, analyses every name they make.
 */
#ifndef HPROF_STRING_STORE_H
#define HPROF_STRING_STORE_H

#include <stddef.h>

typedef struct string_store string_store;

string_store *string_store_new(void);
void          string_store_free(string_store *s);
/* A copy of n bytes of p with a NUL after them; NULL when out of memory. */
const char   *string_store_add(string_store *s, const char *p, size_t n);

#endif
