/*
 * heap_scan_internal.h (private to src/heapgraph/heap_scan*.c): what the
 * passes of heap_scan share: the scan's state, the bounded cursor and its
 * one-line readers, and each pass's entry for heap_graph_read.
 */
#ifndef HPROF_HEAP_SCAN_INTERNAL_H
#define HPROF_HEAP_SCAN_INTERNAL_H

#include "heap_graph.h"

#include <stdint.h>
#include <stdlib.h>

enum { TYPE_OBJECT = 2, TYPE_BOOLEAN = 4, TYPE_LONG = 11 };

typedef struct cursor {
    const unsigned char *p, *end;
} cursor;

typedef struct scan {
    heap_graph *g;
    char       *err;
    size_t      errlen;
    hg_progress progress;
    void       *progress_ctx;
    size_t      objects_cap, classes_cap, roots_cap, frames_cap, traces_cap, serials_cap, utf8_cap;
    int         compressed_hint;    /* the heap holds "java.vm.compressedOopsMode" */
    uint32_t    prim_classes[12];   /* class index of each primitive array type; 0: not looked up */
} scan;

static inline int has(const cursor *c, size_t n) { return (size_t)(c->end - c->p) >= n; }

static inline uint64_t be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Reads n bytes big-endian; 0 and *ok cleared when they are not there. */
static inline uint64_t get(cursor *c, size_t n, int *ok)
{
    if (!has(c, n)) {
        *ok = 0;
        c->p = c->end;
        return 0;
    }
    uint64_t v = be(c->p, n);
    c->p += n;
    return v;
}

static inline int value_size(const heap_graph *g, unsigned type)
{
    switch (type) {
    case TYPE_OBJECT: return (int)g->id_size;
    case 4: case 8:   return 1;
    case 5: case 9:   return 2;
    case 6: case 10:  return 4;
    case 7: case 11:  return 8;
    default:          return -1;
    }
}

static inline int grow(void **array, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 256;
    void *a = realloc(*array, ncap * elem);
    if (a == NULL)
        return -1;
    *array = a;
    *cap = ncap;
    return 0;
}

static inline uint32_t align8(uint64_t v) { return (uint32_t)((v + 7) & ~(uint64_t)7); }

/* The error "PATH: offset N (0xN): what" into s->err; -1 (every pass reports so). */
int heap_scan_fail_at(scan *s, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The out-of-memory error into s->err; -1 (every pass reports so). */
int heap_scan_out_of_memory(scan *s);

/* Pass 1 (heap_scan.c): the CLASS DUMP at c, skipped past its constant pool
 * or its statics; shared because pass 2 reads the class dumps again. */
int heap_scan_skip_constant_pool(scan *s, cursor *c, int *ok);
int heap_scan_skip_statics(scan *s, cursor *c, int *ok);

/* Pass 2 (heap_scan_index.c), called in turn by heap_graph_read: the
 * objects sorted by id, the names resolved, the classes laid out. */
int heap_scan_sort_objects(scan *s);
int heap_scan_resolve_names(scan *s);
int heap_scan_lay_out_classes(scan *s);
/* A class's CLASS DUMP at its statics and instance fields; shared with pass 3, which reads the statics. */
void heap_scan_class_sections(const heap_graph *g, const hg_class *k, cursor *statics, cursor *fields);

/* Pass 3 (heap_scan_edges.c), called by heap_graph_read: every object's references. */
int heap_scan_read_edges(scan *s);

#endif
