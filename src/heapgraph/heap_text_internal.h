/*
 * heap_text_internal: what heap_text.c (pass 3 and the entry points),
 * heap_text_scan.c (passes 1 and 2) and heap_text_parse.c (the helpers)
 * share: the conversion's state and the functions more than one calls.
 */
#ifndef HPROF_HEAP_TEXT_INTERNAL_H
#define HPROF_HEAP_TEXT_INTERNAL_H

#include "heap_text.h"

#include <string.h>

#define ID_SIZE       8
#define SEGMENT_BYTES (1u << 20)
#define MAX_SUPERS    1024          /* superclasses: deeper is taken for a cycle */
#define MAX_FIELDS    65535         /* a CLASS DUMP's count of fields or statics */

enum { T_OBJECT = 2, T_BOOLEAN = 4, T_CHAR, T_FLOAT, T_DOUBLE, T_BYTE, T_SHORT, T_INT, T_LONG };

typedef struct span {
    const unsigned char *p;
    size_t n;
} span;

typedef struct name_entry {
    const unsigned char *p;
    uint32_t n;
    uint32_t serial;                /* a LOAD CLASS of this name, 0 for none yet */
} name_entry;

typedef struct tclass {
    uint64_t id, super;
    uint64_t loader, signers, domain;
    uint32_t name;                  /* name id */
    uint32_t trace, line, defined, serial;
    uint32_t nown;                  /* reference fields its instances showed */
    uint32_t layout;                /* with its superclasses' (UINT32_MAX: not known yet) */
    uint32_t referent_slot;         /* of java.lang.ref.Reference's referent; UINT32_MAX: none */
    uint64_t size;                  /* sz= of an instance (0 if none seen) */
} tclass;

typedef struct field_slot {
    uint32_t klass, name, occurrence;   /* klass + 1; 0: empty slot */
    uint32_t slot;
} field_slot;

typedef struct tframe {
    span klass, method, file;
    int32_t line;
} tframe;

typedef struct ttrace {
    uint32_t serial, thread, first, n;
} ttrace;

typedef struct id_line {
    uint64_t id;
    uint32_t line, what;            /* 0: CLS, 1: OBJ or ARR, 2: a class only named by objects */
} id_line;

typedef struct buf {
    unsigned char *b;
    size_t n, cap;
} buf;

typedef struct tx {
    const unsigned char *text;
    size_t len;
    const char *path;
    char *err;
    size_t errlen;
    FILE *out;
    uint64_t written, max_out;
    hg_progress progress;
    void *progress_ctx;
    heap_text_facts *facts;

    uint32_t *name_slots;           /* hash table of name ids (0: empty) */
    uint32_t name_slots_cap;
    name_entry *names;              /* by id - 1 */
    uint32_t nnames, names_cap;
    tclass *classes;
    uint32_t nclasses, classes_cap;
    uint32_t *class_slots, class_slots_cap;
    field_slot *fields;
    uint32_t fields_cap, nfields;
    uint32_t *stamp;                /* per name id: the record whose fields last named it */
    uint32_t *count;                /* ...and how often */
    uint32_t stamp_cap, records;    /* records: the stamp of the last record */
    tframe *frames;
    uint32_t nframes, frames_cap;
    ttrace *traces;
    uint32_t ntraces, traces_cap;
    id_line *ids;
    size_t nids, ids_cap;
    uint32_t java_lang_ref_reference;   /* class index, UINT32_MAX: none */
    uint32_t referent_name;
    uint32_t next_serial;

    buf rec, aux, seg;
    uint64_t *values;
    size_t values_cap;
} tx;

typedef struct lines {
    const unsigned char *p, *end;
    uint64_t no;                    /* the line last taken, from 1 */
} lines;

enum { R_NONE, R_ROOT, R_CLS, R_OBJ, R_ARR, R_PRIM };

typedef struct head {
    int kind;
    uint64_t id;
    uint32_t klass;                 /* class index (OBJ, object ARR) */
    uint32_t trace;
    uint64_t size, nelems;
    unsigned prim;
    uint32_t stamp;
} head;

/* Functions more than one file calls, each with why it is shared; the
 * helpers are in heap_text_parse.c, passes 1 and 2 in heap_text_scan.c. */

/* errors */
/* Shared: every pass refuses bad text with the line at fault. */
int heap_text_fail(tx *t, uint64_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Shared: pass 1 grows its threads, frames and traces, pass 2 the sizes. */
int heap_text_grow(void **a, uint32_t *cap, uint32_t n, size_t elem);

/* lines and numbers */
/* Shared: passes 1, 2 and 3 walk the text line by line. */
int heap_text_next_line(lines *ls, span *l);
/* Shared: passes 1 to 3 look for keys in their lines. */
const unsigned char *heap_text_find(span l, size_t from, const char *s);
/* Shared: frame and THREAD START lines and the records' "NAME@ID" are parsed from the end. */
const unsigned char *heap_text_find_last(span l, const char *s);
/* Shared: the record and field lines' ids are parsed in heap_text_scan.c. */
int heap_text_parse_hex(const unsigned char **q, const unsigned char *end, uint64_t *v);
/* Shared: pass 1 parses line numbers and trace serials, passes 2 and 3 array indexes. */
int heap_text_parse_dec(const unsigned char **q, const unsigned char *end, int64_t *v, int64_t max);
/* Shared: passes 1 to 3 read "key=N" values (sz=, trace=, thread=, ...). */
int heap_text_key_dec(span l, const char *key, int64_t *v, int64_t max);

/* output */
/* Shared: heap_text_convert writes the file header with it. */
int heap_text_put(tx *t, const void *p, size_t n);
/* Shared: pass 3 makes room in a record before writing numbers into it. */
int heap_text_buf_reserve(tx *t, buf *b, size_t more);
/* Shared: pass 1 keeps the thread names in a buf, pass 3 appends bytes to records. */
int heap_text_buf_bytes(tx *t, buf *b, const void *p, size_t n);
/* Shared: pass 3 writes LOAD CLASS, STACK FRAME, STACK TRACE and HEAP DUMP END. */
int heap_text_record(tx *t, unsigned tag, const unsigned char *body, size_t n);
/* Shared: pass 3 ends the last heap dump segment. */
int heap_text_flush_segment(tx *t);
/* Shared: pass 3 adds each sub-record to the segment. */
int heap_text_add_subrecord(tx *t);

/* names and classes */
/* Shared: passes 2 and 3 name fields, pass 3 frames and classes. */
uint32_t heap_text_intern(tx *t, const unsigned char *p, size_t n);
/* Shared: pass 2 makes the classes that records define or name. */
uint32_t heap_text_class_of(tx *t, uint64_t id, span name, uint32_t line);
/* Shared: pass 2 makes the fields' slots, pass 3 finds them. */
uint32_t heap_text_field_slot_of(tx *t, uint32_t k, uint32_t name, uint32_t occ, int add, uint32_t line);
/* Shared: passes 2 and 3 tell a record's fields of one name apart the same way. */
int heap_text_occurrence(tx *t, uint32_t name, uint32_t stamp, uint32_t *occ);
/* Shared: pass 3 writes each class's fields and its instances' values by it. */
int heap_text_lay_out(tx *t, uint32_t k, uint32_t line);

/* heap_text_scan.c */
/* Shared: pass 1, called from heap_text_convert. */
int heap_text_scan_file(tx *t, const unsigned char **dump, const unsigned char **dump_end, uint64_t *dump_line);
/* Shared: passes 2 and 3 parse each record line alike. */
int heap_text_parse_head(tx *t, span l, uint64_t no, head *h);
/* Shared: passes 2 and 3 parse each field line alike. */
int heap_text_parse_field(tx *t, span l, uint64_t no, span *label, uint64_t *v);
/* Shared: passes 2 and 3 parse each array element's index alike. */
int heap_text_parse_index(tx *t, span label, uint64_t no, uint64_t nelems, uint64_t *index);
/* Shared: pass 2, called from heap_text_convert. */
int heap_text_learn(tx *t, const unsigned char *from, const unsigned char *to, uint64_t first_line);
/* Shared: after pass 2, called from heap_text_convert. */
int heap_text_check_ids(tx *t);

/* Tiny helpers, inline: more than one file uses each. */
static inline int out_of_memory(tx *t) { return heap_text_fail(t, 0, "out of memory"); }

static inline int starts(span l, const char *s)
{
    size_t n = strlen(s);
    return l.n >= n && memcmp(l.p, s, n) == 0;
}

static inline void be_put(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static inline name_entry *name_of(tx *t, uint32_t id)
{
    return id >= 1 && id <= t->nnames ? &t->names[id - 1] : NULL;
}

#endif
