/*
 * heap_walk: one JVMTI FollowReferences walk, turned into whole objects, for
 * every heap dump this project writes: heap=dump's HPROF records
 * (heap_dump.c) and the JVMPI layer's HEAP_DUMP and OBJECT_DUMP
 * (src/jvmpi/heap_dumps.c).
 *
 * JVMTI reports one reference at a time (referrer, referee, a field index)
 * and one primitive field at a time; HotSpot reports all of one object's in
 * a row. The walk assembles them into the object they belong to, by its
 * class's layout (field_layout.h), and hands a sink one complete object at
 * a time: an instance with its values in the dump's order, an object array
 * element by element (nulls included), a primitive array, a class with its
 * statics, a root. What an id is, which classes there are and the bytes
 * written are the sink's; a sink is called inside JVMTI heap callbacks,
 * where neither JNI nor JVMTI may be used.
 */
#ifndef HPROF_HEAP_WALK_H
#define HPROF_HEAP_WALK_H

#include <jni.h>
#include <jvmti.h>
#include <stdint.h>

#include "field_layout.h"

/* What the walk met of an object whose class the sink does not know (a
 * class loaded after the sink read the class list) or knew without its
 * layout (not prepared then: fl_class.unprepared), and of such a class's
 * statics: given to the sink's
 * defer, for it to describe the object after the walk, when JNI and JVMTI
 * can read that class. One object's come in a row, except its ARRAY, given
 * where the array is referenced. */
typedef enum {
    HEAP_WALK_DEFER_OBJECT,       /* a reference without a value: its class, its loader; index the
                                   * jvmtiHeapReferenceKind, bits the id referred to */
    HEAP_WALK_DEFER_FIELD,        /* an instance field's value: index, type, bits */
    HEAP_WALK_DEFER_STATIC,       /* a static field's value (the object is a class): index, type, bits */
    HEAP_WALK_DEFER_ELEMENT,      /* an array element: index, bits the id */
    HEAP_WALK_DEFER_ARRAY,        /* an array of references: index its length, bits its size */
    HEAP_WALK_DEFER_SIZE,         /* any other object: bits its size */
} heap_walk_defer_kind;

typedef struct heap_walk_deferred {
    jlong    id, class_tag;       /* class_tag 0: its Class object had no tag yet */
    uint64_t bits;
    jint     index;
    uint32_t seq;                 /* heap_walk_sort_deferred's */
    uint8_t  kind, type;
} heap_walk_deferred;

/* A sink's deferred values, bounded: at most this many (40 bytes each). */
#define HEAP_WALK_MAX_DEFERRED ((size_t)1 << 20)
typedef struct heap_walk_deferrals {
    heap_walk_deferred *v;
    size_t   n, cap;
    uint64_t dropped;             /* past the bound, or out of memory */
} heap_walk_deferrals;

/* Keeps a copy of d: 0, or -1 when it was dropped (counted). */
int    heap_walk_keep_deferred(heap_walk_deferrals *l, const heap_walk_deferred *d);
/* Orders them by object, each object's in the order they came. */
void   heap_walk_sort_deferred(heap_walk_deferrals *l);
/* After sorting: the index past the entries of the object at i. */
size_t heap_walk_object_end(const heap_walk_deferrals *l, size_t i);
/* The tag of the class of the object whose n entries these are: the
 * first class tag given, or the id its CLASS reference names; 0 if none. */
jlong  heap_walk_deferred_class(const heap_walk_deferred *d, size_t n);
void   heap_walk_free_deferred(heap_walk_deferrals *l);

typedef struct heap_walk_sink {
    void *ctx;
    /* Is this tag a Class object's (a class the dump may describe)? */
    int   (*is_class_tag)(void *ctx, jlong tag);
    /* The layout of the class whose Class object has this tag, NULL if the
     * dump does not know it. */
    fl_class *(*class_of)(void *ctx, jlong tag);
    /* The id of the object whose tag is *tag (the sink may tag it now);
     * 0 stops the walk. *first: 1 if the walk may not have met it before. */
    jlong (*id_of)(void *ctx, jlong *tag, int *first);
    /* Optional: an object met the first time (its id, its class's tag, its
     * size, an array's length or -1). */
    void  (*met)(void *ctx, jlong id, jlong class_tag, jlong size, jint length);
    /* Optional: 1 once the sink cannot go on (its writer failed). */
    int   (*failed)(void *ctx);
    void  (*root)(void *ctx, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong id);
    /* A class's loader, signers, protection domain, or constant-pool entry (index). */
    void  (*class_reference)(void *ctx, fl_class *c, jvmtiHeapReferenceKind kind, jint index, jlong id);
    /* A static field's value (fl_slot.pos: the index in c->statics). */
    void  (*static_value)(void *ctx, fl_class *c, uint32_t pos, uint64_t bits);
    /* A class whose statics the walk reported (tag: its Class object's). */
    void  (*class_done)(void *ctx, fl_class *c, jlong tag);
    /* An instance, values[i] for c->pos[i] (ids or primitive bits, 0 if not reported). */
    void  (*instance)(void *ctx, fl_class *c, jlong class_tag, jlong id, const uint64_t *values);
    /* An array of references: its header, then array_element for each index in order (id 0: null). */
    void  (*array_begin)(void *ctx, fl_class *c, jlong class_tag, jlong id, uint32_t length, jlong size);
    void  (*array_element)(void *ctx, uint32_t index, jlong id);
    void  (*primitive_array)(void *ctx, jlong class_tag, jlong id, jlong size, jint count, uint8_t type,
                             const void *elements);
    /* Optional: an object of an unknown class, or a Class object of one (an
     * instance of defer_class that is_class_tag does not know), is given
     * here value by value instead of being left out. */
    void  (*defer)(void *ctx, const heap_walk_deferred *d);
    jlong defer_class;            /* with defer: java/lang/Class's tag */
    /* What a reference callback returns: JVMTI_VISIT_OBJECTS, or 0 to stay
     * with the initial object's own references (an OBJECT_DUMP of a class). */
    jint  follow;
} heap_walk_sink;

/* An array of references met, before its visit: its length and size by id. */
typedef struct heap_walk_array { jlong id; uint32_t length; jlong size; } heap_walk_array;

typedef struct heap_walk {
    const heap_walk_sink *sink;
    uint64_t *values;             /* the instance being assembled, by position */
    uint32_t  max_positions;
    heap_walk_array *arrays;      /* open addressing on id */
    uint32_t  arrays_mask, arrays_used;
    /* the object being assembled */
    jlong     cur, cur_class_tag;
    int       cur_kind;           /* HEAP_WALK_NONE, _INSTANCE, _ARRAY, _CLASS */
    fl_class *cur_class;
    uint32_t  next_element, n_elements;
    /* results */
    uint64_t  mismatches;         /* values that fit no field, objects of unknown classes (no defer) */
    int       failed;             /* out of memory */
    int       stopped;            /* the sink gave no id */
} heap_walk;

/* A walk whose instances have at most max_positions values. 0, or -1 when
 * out of memory. */
int  heap_walk_init(heap_walk *w, const heap_walk_sink *sink, uint32_t max_positions);
/* FollowReferences from the heap roots (initial NULL) or from one object,
 * then the last object handed over. Its error; w->failed and w->stopped say
 * whether the walk itself gave up. */
jvmtiError heap_walk_run(heap_walk *w, jvmtiEnv *jvmti, jobject initial);
void heap_walk_free(heap_walk *w);

#endif
