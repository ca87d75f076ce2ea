/*
 * heap_analysis: over a heap_graph, the dominator tree from the GC roots,
 * retained sizes (per object, and per class as VisualVM and MAT define it:
 * the retained size of the set of the class's instances, i.e. the sum over
 * its instances that no other instance of the class dominates), the
 * shortest path from a GC root to each object, and the reports of
 * `hprof heap` (text and JSON).
 */
#ifndef HPROF_HEAP_ANALYSIS_H
#define HPROF_HEAP_ANALYSIS_H

#include <stdio.h>

#include "heap_graph.h"

typedef struct heap_analysis {
    heap_graph *g;
    uint32_t   *idom;           /* DOM_UNREACHED for garbage */
    uint64_t   *retained;
    uint32_t   *path_parent;    /* breadth-first from the roots: the node before, 0 for a root */
    uint32_t    nreachable;
    uint64_t    objects, bytes;             /* all objects in the dump, class objects included */
    uint64_t    reachable_bytes;
    /* by allocation trace (index in g->traces), when g->site_of: as for a
     * class, retained = the sum over its objects no object of the same
     * trace dominates */
    uint64_t   *site_count, *site_shallow, *site_retained;
} heap_analysis;

/* 0, or -1 with the reason in err. The graph's edges are used up (freed,
 * g->edges NULL): what comes after needs only the results. */
int heap_analyze(heap_graph *g, heap_analysis *a, hg_progress progress, void *ctx, char *err, size_t errlen);
void heap_analysis_free(heap_analysis *a);

/* The top objects by retained size, with a chain of sole holders shown by
 * its last link only (an object whose whole retained set but itself is one
 * dominated object's is left out for that object): up to max nodes into
 * out, their count returned. */
uint32_t heap_top_objects(const heap_analysis *a, uint32_t max, uint32_t *out);

/* Class indexes with instances, largest retained first; *n set. Freed by the caller. */
uint32_t *heap_classes_by_retained(const heap_analysis *a, uint32_t *n);

/* A dump's classes by name (two classes of one name, from two loaders, are
 * one row), or its allocation sites by their frames (named by the frames'
 * texts joined by newlines: trace serials differ from dump to dump), sorted
 * by name: what `--baseline OLD` keeps of the old dump. */
typedef struct heap_class_row {
    char    *name;
    uint64_t count, shallow, retained;
} heap_class_row;
typedef struct heap_class_rows {
    heap_class_row *rows;
    uint32_t        n;
} heap_class_rows;
/* 0, or -1 when memory runs out. */
int heap_class_rows_of(const heap_analysis *a, heap_class_rows *out);
void heap_class_rows_free(heap_class_rows *r);

typedef struct heap_baseline {
    heap_class_rows classes, sites;
    int             has_sites;      /* its objects carried allocation traces */
} heap_baseline;
/* 0, or -1 when memory runs out (heap_growth.c, heap_sites.c). */
int heap_baseline_of(const heap_analysis *a, heap_baseline *out);
void heap_baseline_free(heap_baseline *b);
int heap_site_rows_of(const heap_analysis *a, heap_class_rows *out);
/* Sorts rows by name and merges the rows of one name (heap_growth.c). */
void heap_rows_merge(heap_class_rows *out);

/* The reports; with a baseline (else NULL), what grew by class since it:
 * a "growth" list in JSON, a table in text, largest retained growth first;
 * and by allocation site when both dumps' objects carry traces
 * ("site_growth"). */
int heap_write_text(const heap_analysis *a, uint32_t top, const heap_baseline *baseline, FILE *out);
int heap_write_json(const heap_analysis *a, uint32_t top, const heap_baseline *baseline, FILE *out);
/* The page of --html (heap_html.c): suspects, dominator tree, histogram. */
int heap_write_html(const heap_analysis *a, FILE *out);
/* (heap_sites.c: retained by allocation site, when the objects carry traces;
 * heap_growth.c; heap_output.c's helpers: used by the two above) */
int heap_write_sites(const heap_analysis *a, uint32_t top, int json, FILE *out);
void heap_json_string(FILE *out, const char *s);
/* As heap_json_string; in_html: <, > and & escaped too, for JSON inside a page's <script>. */
void heap_json_text(FILE *out, const char *s, int in_html);
/* A path from a GC root to node: text lines, or JSON steps (no brackets). */
enum { HEAP_PATH_TEXT, HEAP_PATH_JSON, HEAP_PATH_HTML };
void heap_write_path(const heap_analysis *a, uint32_t node, int mode, FILE *out);
/* An object's class name ("class X" for a class object), into buf or a class's name. */
const char *heap_object_class(const heap_graph *g, uint32_t v, char *buf, size_t size);
const char *heap_thousands(uint64_t v, char *buf, size_t size);   /* "1,234,567" */
int heap_write_growth(const heap_analysis *a, const heap_baseline *baseline, uint32_t top, int json, FILE *out);

#endif
