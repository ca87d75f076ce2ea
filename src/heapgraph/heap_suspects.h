/*
 * heap_suspects: leak suspects, after Eclipse MAT's: what retains a large
 * share (HEAP_SUSPECT_PERCENT) of the reachable heap.
 *
 * - An object: the deepest objects retaining the share each (an object
 *   whose retained set holds another such object is not named; the one
 *   inside is, so the suspect is where the memory fans out), except that a
 *   chain of one class (a linked list) is named by its head. Each says
 *   which class's instances hold most of it.
 * - A class: many instances of one class that no single object holds (each
 *   is a child of the dominator tree's root: held from GC roots by several
 *   paths or roots of their own) retaining the share together, not
 *   counting what object suspects among them retain.
 */
#ifndef HPROF_HEAP_SUSPECTS_H
#define HPROF_HEAP_SUSPECTS_H

#include <stdio.h>

#include "heap_analysis.h"
#include "heap_domtree.h"

#define HEAP_SUSPECT_PERCENT 10

typedef struct heap_suspect {
    int      is_class;
    uint32_t node;      /* the object; for a class, its instance retaining most */
    uint32_t klass;     /* a class suspect's class; an object's: the class whose instances
                         * retain most inside it (HG_NONE: none) */
    uint64_t retained;
    uint64_t count;     /* a class suspect's instances; an object's: klass's instances inside */
    uint64_t inside;    /* an object's: what klass's instances retain inside it */
} heap_suspect;

typedef struct heap_suspects {
    heap_suspect *list;     /* largest retained first */
    uint32_t      n;
} heap_suspects;

/* 0, or -1 when memory runs out. */
int heap_find_suspects(const heap_analysis *a, const heap_domtree *t, heap_suspects *s);
void heap_suspects_free(heap_suspects *s);

/* One sentence about a suspect (no path), into buf. */
const char *heap_suspect_sentence(const heap_analysis *a, const heap_suspect *s, char *buf, size_t size);
/* The section of the text report, or the "suspects" list of the JSON one
 * (mode HEAP_PATH_JSON or HEAP_PATH_HTML: the list alone, "[...]"). */
int heap_write_suspects(const heap_analysis *a, const heap_suspects *s, int mode, FILE *out);

#endif
