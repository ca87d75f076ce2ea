/*
 * heap_graph: the object graph of one HPROF binary heap dump, read in place,
 * for `hprof heap` (retained sizes, paths to GC roots).
 *
 * The dump is any HPROF binary file with a heap dump: ours (format=b, HEAP
 * DUMP SEGMENTs or a HEAP DUMP) or HotSpot's (`jcmd GC.heap_dump`). The
 * bytes stay where they are (a mapping of the file, src/heapgraph/heap_file.c);
 * the graph keeps, per object, its id, the offset of its record and a few
 * numbers, and the references as one array of dense indexes (node 0 is a
 * virtual root whose successors are every GC root's object). References
 * are VisualVM's: instance fields, array elements, class statics; no object
 * refers to its class, and a class to its loader only through the loader's
 * own fields. A java.lang.ref.Reference's referent is a weak edge: it does
 * not make its object reachable, but counts as a referrer of an object
 * that is (as VisualVM's jfluid-heap computes dominators). Field values
 * and names are read again from the bytes when a path is printed.
 *
 * Every read is bounded by its record: a truncated or corrupt file is an
 * error naming the file and the byte offset, never a read past the end.
 *
 * Pure C, no JVMTI. Memory: about 40 bytes an object and 4 a reference.
 */
#ifndef HPROF_HEAP_GRAPH_H
#define HPROF_HEAP_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#define HG_NONE UINT32_MAX

/* Object kinds, as their sub-record tags say. */
enum { HG_CLASS = 0x20, HG_INSTANCE = 0x21, HG_OBJ_ARRAY = 0x22, HG_PRIM_ARRAY = 0x23 };

/* GC root kinds, as their sub-record tags say. */
enum {
    HG_ROOT_UNKNOWN = 0xFF, HG_ROOT_JNI_GLOBAL = 0x01, HG_ROOT_JNI_LOCAL = 0x02,
    HG_ROOT_JAVA_FRAME = 0x03, HG_ROOT_NATIVE_STACK = 0x04, HG_ROOT_STICKY_CLASS = 0x05,
    HG_ROOT_THREAD_BLOCK = 0x06, HG_ROOT_MONITOR_USED = 0x07, HG_ROOT_THREAD_OBJECT = 0x08
};

typedef struct hg_class {
    uint64_t    id;                 /* the class object's id */
    const char *name;               /* Java name: "java.util.HashMap", "byte[]" */
    uint32_t    node;               /* the class object's node */
    uint32_t    super;              /* class index, HG_NONE for none */
    uint64_t    super_id, loader_id;
    size_t      dump_at;            /* offset of its CLASS DUMP sub-record */
    uint32_t    raw_size;           /* the instance size its CLASS DUMP says */
    uint32_t    value_bytes;        /* bytes of an instance's values, superclasses' too */
    uint32_t    shallow;            /* an instance's size (arrays: 0) */
    uint32_t    first_ref, nrefs;   /* its instances' reference fields: refs[first_ref ..] */
    int         layout_done;
    /* the histogram */
    uint64_t    count, shallow_total, retained;
} hg_class;

/* A reference field of an instance: where its value sits in the instance's
 * values, and its name (the class declaring it may be a superclass). */
typedef struct hg_ref_field {
    uint32_t    offset;
    const char *name;
    int         weak;               /* java.lang.ref.Reference.referent */
} hg_ref_field;

typedef struct hg_root {
    uint32_t node;
    uint8_t  kind;
    uint32_t thread_serial;         /* JNI local, Java frame, native stack, thread block/object */
    uint32_t frame;                 /* Java frame and JNI local: the frame's depth; thread object: its trace */
} hg_root;

typedef struct hg_frame {
    uint64_t    id;
    const char *method, *file;
    uint32_t    class_serial;
    int32_t     line;
} hg_frame;

typedef struct hg_trace {
    uint32_t  serial, thread_serial, nframes;
    size_t    frame_ids_at;         /* offset of its frame ids */
} hg_trace;

/* A thread's name by its serial (a text dump's THREAD START). */
typedef struct hg_thread_name {
    uint32_t    serial;
    const char *name;
} hg_thread_name;

typedef struct hg_serial_class {
    uint32_t    serial;
    uint64_t    id;
    const char *name;
} hg_serial_class;

typedef struct heap_graph {
    const char          *path;
    const unsigned char *bytes;
    size_t               len;
    uint32_t             id_size;
    uint32_t             heap_dumps;        /* how many the file holds; the last is read */

    /* nodes 1..nnodes-1 are the objects, by id; node 0 is the virtual root */
    uint32_t  nnodes;
    uint64_t *ids;                  /* [nnodes], ids[0] = 0, while reading (then NULL: heap_graph_id) */
    uint64_t *at;                   /* offset of each object's sub-record (its tag)... */
    uint32_t *at32;                 /* ...or, in a file under 4 GiB, this (at NULL): heap_graph_at */
    unsigned char *kind;            /* HG_CLASS, HG_INSTANCE, HG_OBJ_ARRAY, HG_PRIM_ARRAY; 0 for node 0 */
    uint32_t *site_of;              /* each object's allocation trace (index in traces), HG_NONE for
                                     * none; NULL when no object names a trace with frames (heap=all
                                     * dumps name one, HotSpot's an empty one) */
    uint32_t *class_of;             /* class index of each object; HG_NONE for node 0 */
    uint32_t *size;                 /* shallow size */
    uint32_t *edge_start;           /* [nnodes + 1] */
    uint32_t *edges;                /* successors, node indexes */
    uint64_t  nedges;               /* (heap_analyze frees the edges themselves) */
    uint32_t  root_edges;           /* node 0's edges: to every GC root's object */
    unsigned char *weak;            /* a bit per edge: a Reference's referent (NULL: none) */
    uint64_t  dangling;             /* references to ids the dump does not hold */

    hg_class *classes;              /* the dump's, by id; then classes made up for objects without one */
    uint32_t  nclasses, nsorted_classes;
    uint32_t  java_lang_class;      /* class index of java.lang.Class, or HG_NONE */
    hg_ref_field *refs;
    uint32_t  nrefs;

    hg_root  *roots;
    uint32_t  nroots;
    hg_frame *frames;               /* by id */
    uint32_t  nframes;
    hg_trace *traces;               /* by serial */
    uint32_t  ntraces;
    hg_serial_class *serials;       /* LOAD CLASS records, by serial */
    uint32_t  nserials;

    /* the object size model (VisualVM's, so that retained sizes compare) */
    uint32_t  oop_size, min_instance;

    /* id -> node lookup: buckets of the sorted ids by their high bits */
    uint64_t  min_id;
    unsigned  bucket_shift;
    uint32_t  nbuckets;
    uint32_t *bucket_start;

    /* strings the graph made (names) */
    char    **owned;
    uint32_t  nowned, owned_cap;
    /* a text dump's thread names, by serial (heap_text.c; its Strings have
     * no characters to read the names from); NULL for a binary dump */
    const hg_thread_name *thread_names;
    uint32_t  nthread_names;
    /* UTF8 records: id -> offset, sorted by id */
    uint64_t *utf8_ids;
    size_t   *utf8_at;
    uint32_t  nutf8;
} heap_graph;

/* Progress, called now and then with a phase name and a fraction done. */
typedef void (*hg_progress)(void *ctx, const char *phase, double done);

/* Reads the dump in bytes[0..len) (which must outlive the graph): the graph,
 * or NULL with the reason in err ("PATH: offset N (0xN): what"). */
heap_graph *heap_graph_read(const unsigned char *bytes, size_t len, const char *path,
                            hg_progress progress, void *progress_ctx, char *err, size_t errlen);
void heap_graph_free(heap_graph *g);

/* The index of the element of a sorted array (n elements of stride bytes)
 * whose key (a uint32_t or uint64_t, key_size 4 or 8, at key_offset in the
 * element) equals key: the first of equal ones; HG_NONE if none. */
uint32_t heap_graph_search(const void *base, uint32_t n, size_t stride, size_t key_offset, size_t key_size,
                           uint64_t key);
/* A UTF8 record's characters (not NUL-terminated) and their count, or NULL. */
const unsigned char *heap_graph_utf8(const heap_graph *g, uint64_t id, size_t *n);
/* The offset of an object's sub-record. */
static inline size_t heap_graph_at(const heap_graph *g, uint32_t node)
{
    return g->at32 ? g->at32[node] : (size_t)g->at[node];
}
/* An object's id (read from its record once the graph is made). */
uint64_t heap_graph_id(const heap_graph *g, uint32_t node);
/* The node of an object id, or HG_NONE. */
uint32_t heap_graph_node(const heap_graph *g, uint64_t id);
/* The class index of a class object id, or HG_NONE. */
uint32_t heap_graph_class_by_id(const heap_graph *g, uint64_t id);

/* A frame's description, "app.Loader.load(Loader.java:19)", into buf. */
const char *heap_graph_frame_text(const heap_graph *g, uint32_t thread_serial, uint32_t depth,
                                  char *buf, size_t size);
/* Frame depth of traces[trace] as text (as heap_graph_frame_text), into buf. */
const char *heap_graph_trace_frame_text(const heap_graph *g, uint32_t trace, uint32_t depth, char *buf, size_t size);
/* The name of a thread (its Thread object's name field), into buf; "" if unknown. */
const char *heap_graph_thread_name(const heap_graph *g, uint32_t thread_serial, char *buf, size_t size);
/* How node `from` refers to node `to`: the field's name (instances, class
 * statics: *is_static set; a static's name is copied into name) or the
 * array index (*index >= 0). 0, or -1 when no reference of from names to. */
int heap_graph_describe_edge(const heap_graph *g, uint32_t from, uint32_t to, const char **field,
                             int *is_static, int64_t *index, char *name, size_t name_size);
/* A String object's characters (Latin-1 or UTF-16 as UTF-8), into buf; NULL if not a String. */
const char *heap_graph_string(const heap_graph *g, uint32_t node, char *buf, size_t size);

#endif
