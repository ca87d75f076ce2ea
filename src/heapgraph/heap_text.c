/*
 * heap_text: an HPROF text heap dump turned into the binary records that
 * heap_graph_read reads (see heap_text.h).
 *
 * Three passes over the text: (1) the whole file for THREAD START, TRACE
 * and where its last HEAP DUMP lies; (2) that dump for its classes and,
 * per class, the names of the reference fields its objects show (a text
 * dump prints an object's non-null references only, by name); (3) the dump
 * again, each record written as a heap dump sub-record: CLS as a CLASS DUMP
 * declaring the fields its own instances showed (and java.lang.ref.Reference
 * its referent, so that the graph keeps it weak), OBJ as an INSTANCE DUMP
 * whose values are those fields (and its superclasses', left null: a text
 * field names no declaring class, so each is put in the instance's own
 * class), ARR as an OBJ ARRAY DUMP up to its last non-null element, or a
 * PRIM ARRAY DUMP of no elements (the text has none; the size comes from
 * sz=), ROOT as the root of its kind.
 */
#include "heap_text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ------------------------------------------------------------ errors */

static int fail(tx *t, uint64_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(tx *t, uint64_t line, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (line)
        snprintf(t->err, t->errlen, "%s: line %llu: %s", t->path, (unsigned long long)line, what);
    else
        snprintf(t->err, t->errlen, "%s: %s", t->path, what);
    return -1;
}

static int out_of_memory(tx *t) { return fail(t, 0, "out of memory"); }

static int grow(void **a, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    if (*cap >= UINT32_MAX / 2)
        return -1;
    uint32_t ncap = *cap ? *cap * 2 : 64;
    void *p = realloc(*a, (size_t)ncap * elem);
    if (p == NULL)
        return -1;
    *a = p;
    *cap = ncap;
    return 0;
}

/* ------------------------------------------------------------ lines */

typedef struct lines {
    const unsigned char *p, *end;
    uint64_t no;                    /* the line last taken, from 1 */
} lines;

static int next_line(lines *ls, span *l)
{
    if (ls->p >= ls->end)
        return 0;
    const unsigned char *nl = memchr(ls->p, '\n', (size_t)(ls->end - ls->p));
    const unsigned char *e = nl ? nl : ls->end;
    l->p = ls->p;
    l->n = (size_t)(e - ls->p);
    if (l->n && l->p[l->n - 1] == '\r')
        l->n--;
    ls->p = nl ? nl + 1 : ls->end;
    ls->no++;
    return 1;
}

static int starts(span l, const char *s)
{
    size_t n = strlen(s);
    return l.n >= n && memcmp(l.p, s, n) == 0;
}

/* The first occurrence of s in l at or after from, or NULL. */
static const unsigned char *find(span l, size_t from, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = from; n <= l.n && i + n <= l.n; i++)
        if (l.p[i] == (unsigned char)s[0] && memcmp(l.p + i, s, n) == 0)
            return l.p + i;
    return NULL;
}

static const unsigned char *find_last(span l, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = l.n >= n ? l.n - n + 1 : 0; i-- > 0;)
        if (memcmp(l.p + i, s, n) == 0)
            return l.p + i;
    return NULL;
}

static int hexval(unsigned c)
{
    return c >= '0' && c <= '9' ? (int)(c - '0') : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10)
         : c >= 'A' && c <= 'F' ? (int)(c - 'A' + 10) : -1;
}

/* A hex number at *q (before end), *q moved past it: 0, or -1. */
static int parse_hex(const unsigned char **q, const unsigned char *end, uint64_t *v)
{
    const unsigned char *p = *q;
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t x = 0;
    const unsigned char *start = p;
    for (; p < end && hexval(*p) >= 0; p++) {
        if (x >> 60)
            return -1;
        x = x << 4 | (uint64_t)hexval(*p);
    }
    if (p == start)
        return -1;
    *v = x;
    *q = p;
    return 0;
}

static int parse_dec(const unsigned char **q, const unsigned char *end, int64_t *v, int64_t max)
{
    const unsigned char *p = *q;
    int neg = p < end && *p == '-';
    p += neg;
    int64_t x = 0;
    const unsigned char *start = p;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (x > (max - (*p - '0')) / 10)
            return -1;
        x = x * 10 + (*p - '0');
    }
    if (p == start)
        return -1;
    *v = neg ? -x : x;
    *q = p;
    return 0;
}

/* The decimal value after key (e.g. "sz=") in l: 0, or -1. */
static int key_dec(span l, const char *key, int64_t *v, int64_t max)
{
    const unsigned char *k = find(l, 0, key);
    if (k == NULL)
        return -1;
    const unsigned char *q = k + strlen(key);
    return parse_dec(&q, l.p + l.n, v, max);
}

/* ------------------------------------------------------------ output */

static int put(tx *t, const void *p, size_t n)
{
    if (n > t->max_out - t->written || t->written > t->max_out)
        return fail(t, 0, "it would make more than %llu bytes of binary records (a text dump makes about as "
                    "many as it has; a corrupt length or index?)", (unsigned long long)t->max_out);
    if (n && fwrite(p, 1, n, t->out) != n)
        return fail(t, 0, "writing its binary form: %s", strerror(errno));
    t->written += n;
    return 0;
}

static int buf_reserve(tx *t, buf *b, size_t more)
{
    if (more > t->max_out || b->n + more > t->max_out)
        return fail(t, 0, "a record of more than %llu bytes (a corrupt length or index?)",
                    (unsigned long long)t->max_out);
    if (b->n + more <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < b->n + more)
        ncap *= 2;
    unsigned char *p = realloc(b->b, ncap);
    if (p == NULL)
        return out_of_memory(t);
    b->b = p;
    b->cap = ncap;
    return 0;
}

static void be_put(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static int buf_u(tx *t, buf *b, uint64_t v, size_t n)
{
    if (buf_reserve(t, b, n) != 0)
        return -1;
    be_put(b->b + b->n, v, n);
    b->n += n;
    return 0;
}

static int buf_bytes(tx *t, buf *b, const void *p, size_t n)
{
    if (buf_reserve(t, b, n) != 0)
        return -1;
    if (n)
        memcpy(b->b + b->n, p, n);
    b->n += n;
    return 0;
}

static int record(tx *t, unsigned tag, const unsigned char *body, size_t n)
{
    unsigned char h[9];
    if (n > UINT32_MAX)
        return fail(t, 0, "a record of more than 4 GiB");
    h[0] = (unsigned char)tag;
    be_put(h + 1, 0, 4);
    be_put(h + 5, n, 4);
    return put(t, h, sizeof h) != 0 || put(t, body, n) != 0 ? -1 : 0;
}

static int flush_segment(tx *t)
{
    if (t->seg.n == 0)
        return 0;
    int rc = record(t, 0x1C, t->seg.b, t->seg.n);
    t->seg.n = 0;
    return rc;
}

/* t->rec, a finished sub-record, into the current segment. */
static int add_subrecord(tx *t)
{
    if (t->seg.n && t->seg.n + t->rec.n > SEGMENT_BYTES && flush_segment(t) != 0)
        return -1;
    if (buf_bytes(t, &t->seg, t->rec.b, t->rec.n) != 0)
        return -1;
    t->rec.n = 0;
    return t->seg.n >= SEGMENT_BYTES ? flush_segment(t) : 0;
}

/* ------------------------------------------------------------ names */

static uint32_t hash_bytes(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The id of a name (a UTF8 record, written the first time): 0 on error. */
static uint32_t intern(tx *t, const unsigned char *p, size_t n)
{
    if (n > UINT32_MAX - ID_SIZE) {
        fail(t, 0, "a name of more than 4 GiB");
        return 0;
    }
    if (t->nnames * 2 >= t->name_slots_cap) {
        uint32_t ncap = t->name_slots_cap ? t->name_slots_cap * 2 : 1024;
        uint32_t *ns = calloc(ncap, sizeof *ns);
        if (ns == NULL) {
            out_of_memory(t);
            return 0;
        }
        for (uint32_t id = 1; id <= t->nnames; id++) {
            uint32_t h = hash_bytes(t->names[id - 1].p, t->names[id - 1].n) & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = id;
        }
        free(t->name_slots);
        t->name_slots = ns;
        t->name_slots_cap = ncap;
    }
    uint32_t h = hash_bytes(p, n) & (t->name_slots_cap - 1);
    while (t->name_slots[h]) {
        const name_entry *e = &t->names[t->name_slots[h] - 1];
        if (e->n == n && (n == 0 || memcmp(e->p, p, n) == 0))
            return t->name_slots[h];
        h = (h + 1) & (t->name_slots_cap - 1);
    }
    if (grow((void **)&t->names, &t->names_cap, t->nnames, sizeof *t->names) != 0) {
        out_of_memory(t);
        return 0;
    }
    t->names[t->nnames] = (name_entry){ .p = p, .n = (uint32_t)n };
    uint32_t id = ++t->nnames;
    t->name_slots[h] = id;
    unsigned char rec[9 + ID_SIZE] = { 0x01 };
    be_put(rec + 5, ID_SIZE + n, 4);
    be_put(rec + 9, id, ID_SIZE);
    if (put(t, rec, sizeof rec) != 0 || put(t, p, n) != 0)
        return 0;
    return id;
}

static name_entry *name_of(tx *t, uint32_t id)
{
    return id >= 1 && id <= t->nnames ? &t->names[id - 1] : NULL;
}

/* ------------------------------------------------------------ classes */

static uint32_t hash_u64(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    return (uint32_t)v;
}

/* The class of an id, or UINT32_MAX. */
static uint32_t class_find(const tx *t, uint64_t id)
{
    if (t->class_slots_cap == 0)
        return UINT32_MAX;
    uint32_t h = hash_u64(id) & (t->class_slots_cap - 1);
    while (t->class_slots[h]) {
        if (t->classes[t->class_slots[h] - 1].id == id)
            return t->class_slots[h] - 1;
        h = (h + 1) & (t->class_slots_cap - 1);
    }
    return UINT32_MAX;
}

/* The class of an id, made (undefined, named name) if new: its index, or
 * UINT32_MAX on error. */
static uint32_t class_of(tx *t, uint64_t id, span name, uint32_t line)
{
    if (t->nclasses * 2 >= t->class_slots_cap) {
        uint32_t ncap = t->class_slots_cap ? t->class_slots_cap * 2 : 1024;
        uint32_t *s = calloc(ncap, sizeof *s);
        if (s == NULL) {
            out_of_memory(t);
            return UINT32_MAX;
        }
        for (uint32_t i = 0; i < t->nclasses; i++) {
            uint32_t h = hash_u64(t->classes[i].id) & (ncap - 1);
            while (s[h])
                h = (h + 1) & (ncap - 1);
            s[h] = i + 1;
        }
        free(t->class_slots);
        t->class_slots = s;
        t->class_slots_cap = ncap;
    }
    uint32_t h = hash_u64(id) & (t->class_slots_cap - 1);
    while (t->class_slots[h]) {
        if (t->classes[t->class_slots[h] - 1].id == id)
            return t->class_slots[h] - 1;
        h = (h + 1) & (t->class_slots_cap - 1);
    }
    if (grow((void **)&t->classes, &t->classes_cap, t->nclasses, sizeof *t->classes) != 0) {
        out_of_memory(t);
        return UINT32_MAX;
    }
    uint32_t name_id = intern(t, name.p, name.n);
    if (name_id == 0)
        return UINT32_MAX;
    t->classes[t->nclasses] = (tclass){ .id = id, .name = name_id, .line = line, .layout = UINT32_MAX,
                                        .referent_slot = UINT32_MAX, .serial = ++t->next_serial };
    t->class_slots[h] = t->nclasses + 1;
    return t->nclasses++;
}

static uint32_t field_hash(uint32_t k, uint32_t name, uint32_t occ)
{
    return hash_u64((uint64_t)k << 32 ^ (uint64_t)name << 12 ^ occ);
}

/* The slot of a class's own field (name, its occurrence-th of that name), or
 * UINT32_MAX; with add, made if new. */
static uint32_t field_slot_of(tx *t, uint32_t k, uint32_t name, uint32_t occ, int add, uint32_t line)
{
    if (add && t->nfields * 2 >= t->fields_cap) {
        uint32_t ncap = t->fields_cap ? t->fields_cap * 2 : 1024;
        field_slot *fs = calloc(ncap, sizeof *fs);
        if (fs == NULL) {
            out_of_memory(t);
            return UINT32_MAX;
        }
        for (uint32_t i = 0; i < t->fields_cap; i++)
            if (t->fields[i].klass) {
                const field_slot *f = &t->fields[i];
                uint32_t h = field_hash(f->klass, f->name, f->occurrence) & (ncap - 1);
                while (fs[h].klass)
                    h = (h + 1) & (ncap - 1);
                fs[h] = *f;
            }
        free(t->fields);
        t->fields = fs;
        t->fields_cap = ncap;
    }
    if (t->fields_cap == 0)
        return UINT32_MAX;
    uint32_t h = field_hash(k + 1, name, occ) & (t->fields_cap - 1);
    while (t->fields[h].klass) {
        const field_slot *f = &t->fields[h];
        if (f->klass == k + 1 && f->name == name && f->occurrence == occ)
            return f->slot;
        h = (h + 1) & (t->fields_cap - 1);
    }
    if (!add)
        return UINT32_MAX;
    tclass *c = &t->classes[k];
    if (c->nown >= MAX_FIELDS) {
        fail(t, line, "the objects of one class show more than %u reference fields", MAX_FIELDS);
        return UINT32_MAX;
    }
    t->fields[h] = (field_slot){ .klass = k + 1, .name = name, .occurrence = occ, .slot = c->nown++ };
    t->nfields++;
    return t->fields[h].slot;
}

/* How often this record's fields named `name` so far (the record is `stamp`). */
static int occurrence(tx *t, uint32_t name, uint32_t stamp, uint32_t *occ)
{
    if (name >= t->stamp_cap) {
        uint32_t ncap = t->stamp_cap ? t->stamp_cap : 1024;
        while (ncap <= name)
            ncap *= 2;
        uint32_t *s = realloc(t->stamp, (size_t)ncap * sizeof *s), *c;
        if (s == NULL)
            return out_of_memory(t);
        t->stamp = s;
        if ((c = realloc(t->count, (size_t)ncap * sizeof *c)) == NULL)
            return out_of_memory(t);
        t->count = c;
        memset(t->stamp + t->stamp_cap, 0, (size_t)(ncap - t->stamp_cap) * sizeof *s);
        t->stamp_cap = ncap;
    }
    if (t->stamp[name] != stamp) {
        t->stamp[name] = stamp;
        t->count[name] = 0;
    }
    *occ = ++t->count[name];
    return 0;
}

/* A class's slots with its superclasses' (its own first, as the graph lays
 * them out), and where java.lang.ref.Reference's referent is among them. */
static int lay_out(tx *t, uint32_t k, uint32_t line)
{
    tclass *c = &t->classes[k];
    if (c->layout != UINT32_MAX)
        return 0;
    uint64_t total = 0;
    uint32_t referent = UINT32_MAX, depth = 0;
    for (uint32_t x = k; x != UINT32_MAX; depth++) {
        if (depth > MAX_SUPERS)
            return fail(t, line, "class 0x%llx's superclasses form a cycle or nest deeper than %u",
                        (unsigned long long)c->id, MAX_SUPERS);
        const tclass *cx = &t->classes[x];
        if (x == t->java_lang_ref_reference && referent == UINT32_MAX) {
            uint32_t s = field_slot_of(t, x, t->referent_name, 1, 0, line);
            if (s != UINT32_MAX)
                referent = (uint32_t)total + s;
        }
        total += cx->nown;
        if (cx->super == 0)
            break;
        x = class_find(t, cx->super);
    }
    if (total > MAX_FIELDS * 16u)
        return fail(t, line, "class 0x%llx has more than %u reference fields with its superclasses",
                    (unsigned long long)c->id, MAX_FIELDS * 16u);
    c->layout = (uint32_t)total;
    c->referent_slot = referent;
    return 0;
}

/* ------------------------------------------------------------ pass 1: the file */

static const char *const PRIM_NAMES[] = { [T_BOOLEAN] = "boolean", [T_CHAR] = "char", [T_FLOAT] = "float",
                                          [T_DOUBLE] = "double", [T_BYTE] = "byte", [T_SHORT] = "short",
                                          [T_INT] = "int", [T_LONG] = "long" };

static int parse_frame(tx *t, span l, uint64_t no, tframe *f)
{
    /* "\tpkg.Class.method(File.java:12)", ":Unknown line", ":Native method", "(<Unknown Source>)" */
    span s = { l.p + 1, l.n - 1 };
    const unsigned char *open = find(s, 0, "(");
    if (open == NULL || s.n < 2 || s.p[s.n - 1] != ')')
        return fail(t, no, "a frame line that is not \"class.method(file:line)\"");
    span head = { s.p, (size_t)(open - s.p) };
    const unsigned char *dot = find_last(head, ".");
    if (dot == NULL)
        return fail(t, no, "a frame with no class before its method");
    f->klass = (span){ head.p, (size_t)(dot - head.p) };
    f->method = (span){ dot + 1, (size_t)(head.p + head.n - dot - 1) };
    span in = { open + 1, (size_t)(s.p + s.n - 1 - open - 1) };
    const unsigned char *colon = find_last(in, ":");
    span file = colon ? (span){ in.p, (size_t)(colon - in.p) } : in;
    span where = colon ? (span){ colon + 1, (size_t)(in.p + in.n - colon - 1) } : (span){ in.p + in.n, 0 };
    f->line = 0;
    if (where.n == 13 && memcmp(where.p, "Native method", 13) == 0) {
        f->line = -3;
    } else if (where.n > 0) {
        const unsigned char *q = where.p;
        int64_t v;
        if (parse_dec(&q, where.p + where.n, &v, INT32_MAX) == 0 && q == where.p + where.n && v > 0)
            f->line = (int32_t)v;
    }
    if (file.n == 16 && memcmp(file.p, "<Unknown Source>", 16) == 0)
        file.n = 0;
    f->file = file;
    return 0;
}

static int parse_thread(tx *t, span l, uint64_t no, hg_thread_name **threads, uint32_t *n, uint32_t *cap,
                        buf *names)
{
    int64_t serial;
    if (key_dec(l, "id = ", &serial, UINT32_MAX) != 0)
        return fail(t, no, "THREAD START without \"id = N\"");
    const unsigned char *q = find(l, 0, "name=\"");
    if (q == NULL)
        return fail(t, no, "THREAD START without name=\"...\"");
    q += 6;
    span rest = { q, (size_t)(l.p + l.n - q) };
    const unsigned char *e = find_last(rest, "\", group=\"");
    if (e == NULL)
        e = find_last(rest, "\"");
    if (e == NULL)
        return fail(t, no, "THREAD START whose name=\" has no closing quote");
    if (grow((void **)threads, cap, *n, sizeof **threads) != 0)
        return out_of_memory(t);
    /* the name's offset in names, made a pointer once names stops moving */
    (*threads)[(*n)++] = (hg_thread_name){ .serial = (uint32_t)serial, .name = (const char *)(uintptr_t)names->n };
    if (buf_bytes(t, names, q, (size_t)(e - q)) != 0 || buf_bytes(t, names, "", 1) != 0)
        return -1;
    return 0;
}

static int cmp_thread(const void *a, const void *b)
{
    const hg_thread_name *x = a, *y = b;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int cmp_trace(const void *a, const void *b)
{
    const ttrace *x = a, *y = b;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* THREAD STARTs, TRACEs, and the last HEAP DUMP's lines: [*dump, *dump_end),
 * its first line numbered *dump_line. */
static int scan_file(tx *t, const unsigned char **dump, const unsigned char **dump_end, uint64_t *dump_line)
{
    lines ls = { t->text, t->text + t->len, 0 };
    span l;
    hg_thread_name *threads = NULL;
    uint32_t nthreads = 0, threads_cap = 0;
    buf names = { 0 };
    ttrace *trace = NULL;
    uint64_t begin_line = 0;
    const unsigned char *begin = NULL;
    uint32_t dumps = 0;
    size_t next_progress = 64u << 20;
    int rc = 0;
    *dump = NULL;
    /* the records follow the header's free text, after a line of dashes */
    int past_header = 0;
    while (!past_header && next_line(&ls, &l))
        past_header = l.n == 8 && memcmp(l.p, "--------", 8) == 0;
    if (!past_header)
        return fail(t, 0, "no line \"--------\" ends the header: not an HPROF text file, or cut short");
    while (rc == 0 && next_line(&ls, &l)) {
        if (t->progress && (size_t)(ls.p - t->text) >= next_progress) {
            t->progress(t->progress_ctx, "reading the text", (double)(ls.p - t->text) / (double)t->len / 3);
            next_progress += 64u << 20;
        }
        if (l.n && l.p[0] == '\t') {
            if (trace == NULL)
                continue;
            if (l.n == 8 && memcmp(l.p, "\t<empty>", 8) == 0)
                continue;
            if (grow((void **)&t->frames, &t->frames_cap, t->nframes, sizeof *t->frames) != 0) {
                rc = out_of_memory(t);
                break;
            }
            if ((rc = parse_frame(t, l, ls.no, &t->frames[t->nframes])) == 0) {
                t->nframes++;
                trace->n++;
            }
            continue;
        }
        trace = NULL;
        if (begin) {
            if (starts(l, "HEAP DUMP END")) {
                *dump = begin;
                *dump_end = l.p;
                *dump_line = begin_line;
                begin = NULL;
            }
            continue;
        }
        if (starts(l, "HEAP DUMP BEGIN")) {
            begin = ls.p;
            begin_line = ls.no + 1;
            dumps++;
        } else if (starts(l, "THREAD START ")) {
            rc = parse_thread(t, l, ls.no, &threads, &nthreads, &threads_cap, &names);
        } else if (starts(l, "TRACE ")) {
            const unsigned char *q = l.p + 6;
            int64_t serial, thread = 0;
            if (parse_dec(&q, l.p + l.n, &serial, UINT32_MAX) != 0 || q >= l.p + l.n || *q != ':') {
                rc = fail(t, ls.no, "a TRACE line that is not \"TRACE N:\"");
                break;
            }
            key_dec(l, "thread=", &thread, UINT32_MAX);
            if (grow((void **)&t->traces, &t->traces_cap, t->ntraces, sizeof *t->traces) != 0) {
                rc = out_of_memory(t);
                break;
            }
            trace = &t->traces[t->ntraces++];
            *trace = (ttrace){ .serial = (uint32_t)serial, .thread = (uint32_t)thread, .first = t->nframes };
        }
    }
    if (rc == 0 && begin)
        rc = fail(t, begin_line - 1, "the heap dump that begins here has no HEAP DUMP END: the file is cut short");
    if (rc == 0 && *dump == NULL)
        rc = fail(t, 0, "the file holds no heap dump (HEAP DUMP BEGIN ... END; write one with heap=dump,format=a)");
    if (rc == 0) {
        /* names stop moving: offsets become pointers; by serial, the first of each */
        for (uint32_t i = 0; i < nthreads; i++)
            threads[i].name = (const char *)names.b + (uintptr_t)threads[i].name;
        if (nthreads)
            qsort(threads, nthreads, sizeof *threads, cmp_thread);
        uint32_t w = 0;
        for (uint32_t i = 0; i < nthreads; i++)
            if (w == 0 || threads[w - 1].serial != threads[i].serial)
                threads[w++] = threads[i];
        t->facts->threads = threads;
        t->facts->nthreads = w;
        t->facts->thread_text = (char *)names.b;
        t->facts->heap_dumps = dumps;
        threads = NULL;
        names.b = NULL;
        /* a trace written twice is the same trace: the first is kept */
        if (t->ntraces)
            qsort(t->traces, t->ntraces, sizeof *t->traces, cmp_trace);
        w = 0;
        for (uint32_t i = 0; i < t->ntraces; i++)
            if (w == 0 || t->traces[w - 1].serial != t->traces[i].serial)
                t->traces[w++] = t->traces[i];
        t->ntraces = w;
    }
    free(threads);
    free(names.b);
    return rc;
}

/* ------------------------------------------------------------ the heap dump's records */

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

/* "NAME@HEX)" at the end of l, after key: the name and the id. */
static int name_at_id(span l, const char *key, span *name, uint64_t *id)
{
    const unsigned char *k = find(l, 0, key);
    if (k == NULL)
        return -1;
    const unsigned char *p = k + strlen(key), *end = l.p + l.n - 1;     /* at ')' */
    span rest = { p, (size_t)(end - p) };
    const unsigned char *at = find_last(rest, "@");
    if (at == NULL)
        return -1;
    *name = (span){ p, (size_t)(at - p) };
    const unsigned char *q = at + 1;
    return parse_hex(&q, end, id) != 0 || q != end ? -1 : 0;
}

static unsigned prim_type(span name)
{
    for (unsigned t = T_BOOLEAN; t <= T_LONG; t++)
        if (name.n == strlen(PRIM_NAMES[t]) && memcmp(name.p, PRIM_NAMES[t], name.n) == 0)
            return t;
    return 0;
}

/* A record line ("OBJ 1a2b (sz=16, ...)"): its head; classes made as named. */
static int parse_head(tx *t, span l, uint64_t no, head *h)
{
    static const struct { const char *word; int kind; } words[] = {
        { "ROOT ", R_ROOT }, { "CLS ", R_CLS }, { "OBJ ", R_OBJ }, { "ARR ", R_ARR }
    };
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (starts(l, words[i].word))
            h->kind = words[i].kind;
    if (h->kind == R_NONE)
        return fail(t, no, "\"%.*s\" is no ROOT, CLS, OBJ or ARR record, nor a field of one (a tab first)",
                    (int)(l.n > 40 ? 40 : l.n), (const char *)l.p);
    const unsigned char *q = l.p + (h->kind == R_ROOT ? 5 : 4);
    if (parse_hex(&q, l.p + l.n, &h->id) != 0 || q + 2 > l.p + l.n || q[0] != ' ' || q[1] != '('
        || l.p[l.n - 1] != ')')
        return fail(t, no, "a record line that is not \"%.4s<hex id> (...)\"", (const char *)words[h->kind - 1].word);
    if (h->id == 0)
        return fail(t, no, "an object of id 0 (0 is null)");
    int64_t v;
    if (h->kind == R_OBJ || h->kind == R_ARR) {
        if (key_dec(l, "(sz=", &v, INT64_MAX) != 0)
            return fail(t, no, "no sz=N (the object's size)");
        h->size = (uint64_t)v;
        if (key_dec(l, " trace=", &v, UINT32_MAX) != 0)
            return fail(t, no, "no trace=N");
        h->trace = (uint32_t)v;
    }
    span name;
    if (h->kind == R_OBJ) {
        uint64_t cid;
        if (name_at_id(l, " class=", &name, &cid) != 0)
            return fail(t, no, "no class=NAME@ID at the end");
        if ((h->klass = class_of(t, cid, name, (uint32_t)no)) == UINT32_MAX)
            return -1;
    } else if (h->kind == R_ARR) {
        if (key_dec(l, " nelems=", &v, INT32_MAX) != 0)
            return fail(t, no, "no nelems=N");
        h->nelems = (uint64_t)v;
        uint64_t cid;
        if (name_at_id(l, " elem type=", &name, &cid) == 0) {
            if ((h->klass = class_of(t, cid, name, (uint32_t)no)) == UINT32_MAX)
                return -1;
        } else {
            const unsigned char *k = find(l, 0, " elem type=");
            span pn = k ? (span){ k + 11, (size_t)(l.p + l.n - 1 - (k + 11)) } : (span){ l.p, 0 };
            if (k == NULL || (h->prim = prim_type(pn)) == 0)
                return fail(t, no, "no elem type=CLASS@ID or a primitive type (boolean, char, float, double, "
                            "byte, short, int, long)");
            h->kind = R_PRIM;
        }
    } else if (h->kind == R_CLS) {
        const unsigned char *k = find(l, 0, "(name=");
        span rest = { l.p, l.n };
        const unsigned char *e = find_last(rest, ", trace=");
        if (k == NULL || e == NULL || e < k + 6)
            return fail(t, no, "a CLS line that is not \"CLS <id> (name=NAME, trace=N)\"");
        name = (span){ k + 6, (size_t)(e - k - 6) };
        if (key_dec((span){ e, (size_t)(l.p + l.n - e) }, ", trace=", &v, UINT32_MAX) != 0)
            return fail(t, no, "no trace=N");
        h->trace = (uint32_t)v;
        if ((h->klass = class_of(t, h->id, name, (uint32_t)no)) == UINT32_MAX)
            return -1;
    }
    return 0;
}

/* A field line "\tLABEL\t[\t]HEX": the label and the value. */
static int parse_field(tx *t, span l, uint64_t no, span *label, uint64_t *v)
{
    span s = { l.p + 1, l.n - 1 };
    const unsigned char *tab = find(s, 0, "\t");
    if (tab == NULL || tab == s.p)
        return fail(t, no, "a field line that is not \"<tab>NAME<tab>HEX\"");
    *label = (span){ s.p, (size_t)(tab - s.p) };
    const unsigned char *q = tab, *end = l.p + l.n;
    while (q < end && *q == '\t')
        q++;
    if (parse_hex(&q, end, v) != 0 || q != end)
        return fail(t, no, "a field whose value is not a hex id");
    return 0;
}

/* "[N]" with N < nelems. */
static int parse_index(tx *t, span label, uint64_t no, uint64_t nelems, uint64_t *index)
{
    const unsigned char *q = label.p + 1;
    int64_t v;
    if (label.n < 3 || label.p[0] != '[' || parse_dec(&q, label.p + label.n - 1, &v, INT32_MAX) != 0
        || q != label.p + label.n - 1 || label.p[label.n - 1] != ']' || v < 0)
        return fail(t, no, "an array element that is not \"[N]\"");
    if ((uint64_t)v >= nelems)
        return fail(t, no, "element [%lld] of an array of %llu", (long long)v, (unsigned long long)nelems);
    *index = (uint64_t)v;
    return 0;
}

static int push_id(tx *t, uint64_t id, uint64_t no, uint32_t what)
{
    if (t->nids == t->ids_cap) {
        size_t ncap = t->ids_cap ? t->ids_cap * 2 : 4096;
        id_line *p = realloc(t->ids, ncap * sizeof *p);
        if (p == NULL)
            return out_of_memory(t);
        t->ids = p;
        t->ids_cap = ncap;
    }
    t->ids[t->nids++] = (id_line){ .id = id, .line = no > UINT32_MAX ? UINT32_MAX : (uint32_t)no, .what = what };
    return 0;
}

/* Pass 2: the classes, the fields their objects show, the ids and sizes. */
static int learn(tx *t, const unsigned char *from, const unsigned char *to, uint64_t first_line)
{
    lines ls = { from, to, first_line - 1 };
    span l;
    head h = { 0 };
    heap_text_facts *f = t->facts;
    uint32_t sizes_cap = 0;
    size_t next_progress = (size_t)(from - t->text) + (64u << 20);
    while (next_line(&ls, &l)) {
        if (t->progress && (size_t)(ls.p - t->text) >= next_progress) {
            t->progress(t->progress_ctx, "reading the text",
                        (1.0 + (double)(ls.p - from) / (double)(to - from)) / 3);
            next_progress += 64u << 20;
        }
        if (l.n && l.p[0] == '\t') {
            span label;
            uint64_t v;
            if (h.kind == R_NONE || h.kind == R_ROOT || h.kind == R_PRIM)
                return fail(t, ls.no, "a field line (a tab first) under no CLS, OBJ or object ARR record");
            if (parse_field(t, l, ls.no, &label, &v) != 0)
                return -1;
            if (h.kind == R_OBJ) {
                uint32_t name = intern(t, label.p, label.n), occ;
                if (name == 0 || occurrence(t, name, h.stamp, &occ) != 0
                    || field_slot_of(t, h.klass, name, occ, 1, (uint32_t)ls.no) == UINT32_MAX)
                    return -1;
            } else if (h.kind == R_ARR) {
                uint64_t index;
                if (parse_index(t, label, ls.no, h.nelems, &index) != 0)
                    return -1;
            } else if (h.kind == R_CLS && label.n == 5 && memcmp(label.p, "super", 5) == 0) {
                t->classes[h.klass].super = v;
            }
            continue;
        }
        if (l.n == 0)
            continue;
        if (parse_head(t, l, ls.no, &h) != 0)
            return -1;
        h.stamp = ++t->records;
        if (h.kind == R_CLS) {
            tclass *c = &t->classes[h.klass];
            if (c->defined)
                return fail(t, ls.no, "class 0x%llx is written twice (also line %u)", (unsigned long long)h.id,
                            c->line);
            c->defined = 1;
            c->line = (uint32_t)ls.no;
            c->trace = h.trace;
            name_entry *ns = name_of(t, c->name);
            if (ns && ns->n == 23 && memcmp(ns->p, "java.lang.ref.Reference", 23) == 0)
                t->java_lang_ref_reference = h.klass;
            if (push_id(t, h.id, ls.no, 0) != 0)
                return -1;
        } else if (h.kind == R_OBJ || h.kind == R_ARR || h.kind == R_PRIM) {
            if (push_id(t, h.id, ls.no, 1) != 0)
                return -1;
            if (grow((void **)&f->size_ids, &sizes_cap, f->nsizes, sizeof *f->size_ids) != 0)
                return out_of_memory(t);
            uint32_t *s = realloc(f->sizes, (size_t)sizes_cap * sizeof *s);
            if (s == NULL)
                return out_of_memory(t);
            f->sizes = s;
            f->size_ids[f->nsizes] = h.id;
            f->sizes[f->nsizes++] = h.size > UINT32_MAX ? UINT32_MAX : (uint32_t)h.size;
            if (h.kind == R_OBJ && t->classes[h.klass].size == 0)
                t->classes[h.klass].size = h.size;
        }
    }
    if (t->java_lang_ref_reference != UINT32_MAX) {
        /* a Reference's referent is its field: declared there, it stays weak */
        static const char referent[] = "referent";
        if ((t->referent_name = intern(t, (const unsigned char *)referent, sizeof referent - 1)) == 0
            || field_slot_of(t, t->java_lang_ref_reference, t->referent_name, 1, 1, 0) == UINT32_MAX)
            return -1;
    }
    return 0;
}

static int cmp_id_line(const void *a, const void *b)
{
    const id_line *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : x->line < y->line ? -1 : x->line > y->line;
}

/* No id twice, classes named only by objects included. */
static int check_ids(tx *t)
{
    for (uint32_t k = 0; k < t->nclasses; k++)
        if (!t->classes[k].defined && push_id(t, t->classes[k].id, t->classes[k].line, 2) != 0)
            return -1;
    if (t->nids)
        qsort(t->ids, t->nids, sizeof *t->ids, cmp_id_line);
    for (size_t i = 1; i < t->nids; i++)
        if (t->ids[i].id == t->ids[i - 1].id) {
            const id_line *a = &t->ids[i - 1], *b = &t->ids[i];
            if (b->what == 2 || a->what == 2)
                return fail(t, a->what == 2 ? b->line : a->line, "object 0x%llx is the class of the object on "
                            "line %u too", (unsigned long long)a->id, a->what == 2 ? a->line : b->line);
            return fail(t, b->line, "object 0x%llx is written twice (also line %u)", (unsigned long long)b->id,
                        a->line);
        }
    free(t->ids);
    t->ids = NULL;
    t->nids = t->ids_cap = 0;
    return 0;
}

/* ------------------------------------------------------------ pass 3: the binary records */

static int write_load_classes_and_traces(tx *t)
{
    unsigned char b[4 + ID_SIZE + 4 + ID_SIZE];
    for (uint32_t k = 0; k < t->nclasses; k++) {
        tclass *c = &t->classes[k];
        be_put(b, c->serial, 4);
        be_put(b + 4, c->id, ID_SIZE);
        be_put(b + 4 + ID_SIZE, c->trace, 4);
        be_put(b + 8 + ID_SIZE, c->name, ID_SIZE);
        if (record(t, 0x02, b, sizeof b) != 0)
            return -1;
        name_entry *ns = name_of(t, c->name);
        if (ns && ns->serial == 0)
            ns->serial = c->serial;
    }
    uint64_t frame_id = 0;
    for (uint32_t i = 0; i < t->ntraces; i++) {
        const ttrace *tr = &t->traces[i];
        t->aux.n = 0;
        if (buf_u(t, &t->aux, tr->serial, 4) != 0 || buf_u(t, &t->aux, tr->thread, 4) != 0
            || buf_u(t, &t->aux, tr->n, 4) != 0)
            return -1;
        for (uint32_t j = 0; j < tr->n; j++) {
            const tframe *f = &t->frames[tr->first + j];
            uint32_t klass = intern(t, f->klass.p, f->klass.n), method = intern(t, f->method.p, f->method.n);
            uint32_t file = f->file.n ? intern(t, f->file.p, f->file.n) : 0;
            if (klass == 0 || method == 0 || (f->file.n && file == 0))
                return -1;
            name_entry *ns = name_of(t, klass);
            if (ns == NULL)
                return out_of_memory(t);
            if (ns->serial == 0) {
                /* a class no CLS names: a LOAD CLASS of its name only */
                ns->serial = ++t->next_serial;
                be_put(b, ns->serial, 4);
                be_put(b + 4, 0, ID_SIZE);
                be_put(b + 4 + ID_SIZE, 0, 4);
                be_put(b + 8 + ID_SIZE, klass, ID_SIZE);
                if (record(t, 0x02, b, sizeof b) != 0)
                    return -1;
            }
            unsigned char fr[4 * ID_SIZE + 8];
            be_put(fr, ++frame_id, ID_SIZE);
            be_put(fr + ID_SIZE, method, ID_SIZE);
            be_put(fr + 2 * ID_SIZE, 0, ID_SIZE);
            be_put(fr + 3 * ID_SIZE, file, ID_SIZE);
            be_put(fr + 4 * ID_SIZE, ns->serial, 4);
            be_put(fr + 4 * ID_SIZE + 4, (uint32_t)f->line, 4);
            if (record(t, 0x04, fr, sizeof fr) != 0 || buf_u(t, &t->aux, frame_id, ID_SIZE) != 0)
                return -1;
        }
        if (record(t, 0x05, t->aux.b, t->aux.n) != 0)
            return -1;
    }
    return 0;
}

/* A CLASS DUMP into t->rec: statics from t->aux (count first), then the
 * reference fields its own instances showed, in slot order. */
static int class_dump(tx *t, uint32_t k, uint32_t nstatics)
{
    tclass *c = &t->classes[k];
    buf *r = &t->rec;
    r->n = 0;
    if (buf_u(t, r, 0x20, 1) != 0 || buf_u(t, r, c->id, ID_SIZE) != 0 || buf_u(t, r, c->trace, 4) != 0
        || buf_u(t, r, c->super, ID_SIZE) != 0 || buf_u(t, r, c->loader, ID_SIZE) != 0
        || buf_u(t, r, c->signers, ID_SIZE) != 0 || buf_u(t, r, c->domain, ID_SIZE) != 0
        || buf_u(t, r, 0, ID_SIZE) != 0 || buf_u(t, r, 0, ID_SIZE) != 0
        || buf_u(t, r, c->size > UINT32_MAX ? UINT32_MAX : c->size, 4) != 0
        || buf_u(t, r, 0, 2) != 0 || buf_u(t, r, nstatics, 2) != 0 || buf_bytes(t, r, t->aux.b, t->aux.n) != 0
        || buf_u(t, r, c->nown, 2) != 0)
        return -1;
    size_t at = r->n;
    if (buf_reserve(t, r, (size_t)c->nown * (ID_SIZE + 1)) != 0)
        return -1;
    memset(r->b + at, 0, (size_t)c->nown * (ID_SIZE + 1));
    r->n += (size_t)c->nown * (ID_SIZE + 1);
    /* the slots are the hash table's: each own field's name at its slot */
    for (uint32_t i = 0; i < t->fields_cap; i++) {
        const field_slot *f = &t->fields[i];
        if (f->klass != k + 1)
            continue;
        unsigned char *p = r->b + at + (size_t)f->slot * (ID_SIZE + 1);
        be_put(p, f->name, ID_SIZE);
        p[ID_SIZE] = T_OBJECT;
    }
    return 0;
}

static int finish(tx *t, head *h, uint32_t nstatics, uint64_t nvalues)
{
    buf *r = &t->rec;
    r->n = 0;
    switch (h->kind) {
    case R_CLS:
        if (class_dump(t, h->klass, nstatics) != 0)
            return -1;
        break;
    case R_OBJ: {
        const tclass *c = &t->classes[h->klass];
        if (buf_u(t, r, 0x21, 1) != 0 || buf_u(t, r, h->id, ID_SIZE) != 0 || buf_u(t, r, h->trace, 4) != 0
            || buf_u(t, r, c->id, ID_SIZE) != 0 || buf_u(t, r, (uint64_t)c->layout * ID_SIZE, 4) != 0)
            return -1;
        for (uint32_t i = 0; i < c->layout; i++)
            if (buf_u(t, r, t->values[i], ID_SIZE) != 0)
                return -1;
        break;
    }
    case R_ARR:
        if (buf_u(t, r, 0x22, 1) != 0 || buf_u(t, r, h->id, ID_SIZE) != 0 || buf_u(t, r, h->trace, 4) != 0
            || buf_u(t, r, nvalues, 4) != 0 || buf_u(t, r, t->classes[h->klass].id, ID_SIZE) != 0)
            return -1;
        for (uint64_t i = 0; i < nvalues; i++)
            if (buf_u(t, r, t->values[i], ID_SIZE) != 0)
                return -1;
        break;
    case R_PRIM:
        if (buf_u(t, r, 0x23, 1) != 0 || buf_u(t, r, h->id, ID_SIZE) != 0 || buf_u(t, r, h->trace, 4) != 0
            || buf_u(t, r, 0, 4) != 0 || buf_u(t, r, h->prim, 1) != 0)
            return -1;
        break;
    default:
        return 0;
    }
    return add_subrecord(t);
}

static int values_room(tx *t, uint64_t n)
{
    if (n * ID_SIZE > t->max_out)
        return fail(t, 0, "an object of more than %llu bytes of references (a corrupt length or index?)",
                    (unsigned long long)t->max_out);
    if (n <= t->values_cap && t->values)
        return 0;
    size_t ncap = t->values_cap ? t->values_cap : 256;
    while (ncap < n)
        ncap *= 2;
    uint64_t *v = realloc(t->values, ncap * sizeof *v);
    if (v == NULL)
        return out_of_memory(t);
    t->values = v;
    t->values_cap = ncap;
    return 0;
}

static int root(tx *t, span l, uint64_t no, uint64_t id)
{
    static const struct { const char *kind; unsigned tag; } kinds[] = {
        { "<JNI global ref>", 0x01 }, { "<JNI local ref>", 0x02 }, { "<Java stack>", 0x03 },
        { "<native stack>", 0x04 }, { "<system class>", 0x05 }, { "<thread block>", 0x06 },
        { "<busy monitor>", 0x07 }, { "<thread>", 0x08 }, { "<unknown>", 0xFF },
    };
    unsigned tag = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds && tag == 0; i++) {
        char key[40];
        snprintf(key, sizeof key, "(kind=%s", kinds[i].kind);
        if (find(l, 0, key))
            tag = kinds[i].tag;
    }
    if (tag == 0)
        return fail(t, no, "a ROOT of no kind known (kind=<JNI global ref>, <JNI local ref>, <Java stack>, "
                    "<native stack>, <system class>, <thread block>, <busy monitor>, <thread>, <unknown>)");
    int64_t thread = 0, frame = -1, trace = 0;
    if ((tag == 0x02 || tag == 0x03 || tag == 0x04 || tag == 0x06)
        && key_dec(l, " thread=", &thread, UINT32_MAX) != 0)
        return fail(t, no, "a ROOT of a thread without thread=N");
    if ((tag == 0x02 || tag == 0x03) && key_dec(l, " frame=", &frame, INT32_MAX) != 0)
        return fail(t, no, "a ROOT of a frame without frame=N");
    if (tag == 0x08 && (key_dec(l, " id=", &thread, UINT32_MAX) != 0 || key_dec(l, " trace=", &trace, UINT32_MAX) != 0))
        return fail(t, no, "a thread ROOT without id=N, trace=N");
    buf *r = &t->rec;
    r->n = 0;
    if (buf_u(t, r, tag, 1) != 0 || buf_u(t, r, id, ID_SIZE) != 0)
        return -1;
    int rc = 0;
    switch (tag) {
    case 0x01: rc = buf_u(t, r, 0, ID_SIZE); break;
    case 0x02: case 0x03:
        rc = buf_u(t, r, (uint64_t)thread, 4) || buf_u(t, r, (uint32_t)(int32_t)frame, 4);
        break;
    case 0x04: case 0x06: rc = buf_u(t, r, (uint64_t)thread, 4); break;
    case 0x08: rc = buf_u(t, r, (uint64_t)thread, 4) || buf_u(t, r, (uint64_t)trace, 4); break;
    default: break;
    }
    return rc != 0 ? -1 : add_subrecord(t);
}

static int write_dump(tx *t, const unsigned char *from, const unsigned char *to, uint64_t first_line)
{
    lines ls = { from, to, first_line - 1 };
    span l;
    head h = { 0 };
    uint32_t nstatics = 0;
    uint64_t nvalues = 0;
    size_t next_progress = (size_t)(from - t->text) + (64u << 20);
    while (next_line(&ls, &l)) {
        if (l.n && l.p[0] == '\t') {
            span label;
            uint64_t v;
            if (parse_field(t, l, ls.no, &label, &v) != 0)
                return -1;
            if (h.kind == R_OBJ) {
                uint32_t name = intern(t, label.p, label.n), occ;
                if (name == 0 || occurrence(t, name, h.stamp, &occ) != 0)
                    return -1;
                uint32_t slot = name == t->referent_name && t->classes[h.klass].referent_slot != UINT32_MAX
                              ? t->classes[h.klass].referent_slot
                              : field_slot_of(t, h.klass, name, occ, 0, (uint32_t)ls.no);
                if (slot < t->classes[h.klass].layout)
                    t->values[slot] = v;
            } else if (h.kind == R_ARR) {
                uint64_t index;
                if (parse_index(t, label, ls.no, h.nelems, &index) != 0 || values_room(t, index + 1) != 0)
                    return -1;
                for (; nvalues <= index; nvalues++)
                    t->values[nvalues] = 0;
                t->values[index] = v;
            } else if (h.kind == R_CLS) {
                tclass *c = &t->classes[h.klass];
                if (starts(label, "static ")) {
                    if (nstatics >= MAX_FIELDS)
                        return fail(t, ls.no, "a class of more than %u statics", MAX_FIELDS);
                    uint32_t name = intern(t, label.p + 7, label.n - 7);
                    if (name == 0 || buf_u(t, &t->aux, name, ID_SIZE) != 0 || buf_u(t, &t->aux, T_OBJECT, 1) != 0
                        || buf_u(t, &t->aux, v, ID_SIZE) != 0)
                        return -1;
                    nstatics++;
                } else if (label.n == 5 && memcmp(label.p, "super", 5) == 0) {
                    c->super = v;
                } else if (label.n == 6 && memcmp(label.p, "loader", 6) == 0) {
                    c->loader = v;
                } else if (label.n == 7 && memcmp(label.p, "signers", 7) == 0) {
                    c->signers = v;
                } else if (label.n == 6 && memcmp(label.p, "domain", 6) == 0) {
                    c->domain = v;
                } else if (!starts(label, "constant pool entry")) {
                    return fail(t, ls.no, "a CLS field that is none of super, loader, signers, domain, "
                                "static NAME, constant pool entry N");
                }
            }
            continue;
        }
        if (l.n == 0)
            continue;
        if (finish(t, &h, nstatics, nvalues) != 0)
            return -1;
        if (t->progress && (size_t)(ls.p - t->text) >= next_progress) {
            t->progress(t->progress_ctx, "reading the text",
                        (2.0 + (double)(ls.p - from) / (double)(to - from)) / 3);
            next_progress += 64u << 20;
        }
        if (parse_head(t, l, ls.no, &h) != 0)
            return -1;
        h.stamp = ++t->records;
        nstatics = 0;
        nvalues = 0;
        t->aux.n = 0;
        if (h.kind == R_ROOT) {
            if (root(t, l, ls.no, h.id) != 0)
                return -1;
        } else if (h.kind == R_OBJ) {
            if (lay_out(t, h.klass, (uint32_t)ls.no) != 0 || values_room(t, t->classes[h.klass].layout) != 0)
                return -1;
            memset(t->values, 0, (size_t)t->classes[h.klass].layout * sizeof *t->values);
        }
    }
    if (finish(t, &h, nstatics, nvalues) != 0)
        return -1;
    /* classes only objects name (their CLS not in the dump) */
    t->aux.n = 0;
    for (uint32_t k = 0; k < t->nclasses; k++)
        if (!t->classes[k].defined && (class_dump(t, k, 0) != 0 || add_subrecord(t) != 0))
            return -1;
    if (flush_segment(t) != 0)
        return -1;
    return record(t, 0x2C, NULL, 0);
}

/* ------------------------------------------------------------ entry points */

int heap_text_is(const unsigned char *bytes, size_t len)
{
    static const char magic[] = "JAVA PROFILE 1.0.";
    if (len < sizeof magic || memcmp(bytes, magic, sizeof magic - 1) != 0)
        return 0;
    /* the binary header ends its version with a NUL, the text with ", created" */
    for (size_t i = sizeof magic - 1; i < len && i < 64; i++)
        if (bytes[i] == '\0')
            return 0;
        else if (bytes[i] == '\n')
            return 1;
    return 1;
}

int heap_text_convert(const unsigned char *text, size_t len, const char *path, FILE *out, uint64_t max_out,
                      heap_text_facts *facts, hg_progress progress, void *progress_ctx, char *err, size_t errlen)
{
    memset(facts, 0, sizeof *facts);
    tx t = { .text = text, .len = len, .path = path, .err = err, .errlen = errlen, .out = out,
             .max_out = max_out, .progress = progress, .progress_ctx = progress_ctx, .facts = facts,
             .java_lang_ref_reference = UINT32_MAX };
    const unsigned char *dump = NULL, *dump_end = NULL;
    uint64_t dump_line = 0;
    static const char header[] = "JAVA PROFILE 1.0.2";
    unsigned char h[12];
    be_put(h, ID_SIZE, 4);
    be_put(h + 4, 0, 8);
    int rc = -1;
    if (!heap_text_is(text, len)) {
        fail(&t, 0, "not an HPROF text file (it does not begin with \"JAVA PROFILE 1.0.x, created\")");
        goto done;
    }
    if (put(&t, header, sizeof header) != 0 || put(&t, h, sizeof h) != 0
        || scan_file(&t, &dump, &dump_end, &dump_line) != 0)
        goto done;
    if (progress)
        progress(progress_ctx, "reading the text", 1.0 / 3);
    if (learn(&t, dump, dump_end, dump_line) != 0 || check_ids(&t) != 0
        || write_load_classes_and_traces(&t) != 0 || write_dump(&t, dump, dump_end, dump_line) != 0)
        goto done;
    if (fflush(out) != 0 || ferror(out)) {
        fail(&t, 0, "writing its binary form: %s", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(t.names);
    free(t.name_slots);
    free(t.classes);
    free(t.class_slots);
    free(t.fields);
    free(t.stamp);
    free(t.count);
    free(t.frames);
    free(t.traces);
    free(t.ids);
    free(t.rec.b);
    free(t.aux.b);
    free(t.seg.b);
    free(t.values);
    if (rc != 0)
        heap_text_facts_free(facts);
    return rc;
}

void heap_text_facts_free(heap_text_facts *facts)
{
    free(facts->size_ids);
    free(facts->sizes);
    free(facts->threads);
    free(facts->thread_text);
    memset(facts, 0, sizeof *facts);
}

int heap_text_apply(heap_graph *g, heap_text_facts *facts, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < facts->nsizes; i++) {
        uint32_t node = heap_graph_node(g, facts->size_ids[i]);
        if (node != HG_NONE && node < g->nnodes)
            g->size[node] = facts->sizes[i];
    }
    g->heap_dumps = facts->heap_dumps;
    /* the graph frees what it owns: the names' table and characters */
    if (g->nowned + 2 > g->owned_cap) {
        uint32_t ncap = g->owned_cap * 2 + 4;
        char **o = realloc(g->owned, (size_t)ncap * sizeof *o);
        if (o == NULL) {
            snprintf(err, errlen, "%s: out of memory", g->path);
            return -1;
        }
        g->owned = o;
        g->owned_cap = ncap;
    }
    g->owned[g->nowned++] = (char *)facts->threads;
    g->owned[g->nowned++] = facts->thread_text;
    g->thread_names = facts->threads;
    g->nthread_names = facts->nthreads;
    facts->threads = NULL;
    facts->thread_text = NULL;
    return 0;
}

/* The graph of the binary form in bytes[0..n), with the facts put in. */
static heap_graph *graph_of(const unsigned char *bytes, size_t n, const char *path, heap_text_facts *facts,
                            hg_progress progress, void *progress_ctx, char *err, size_t errlen)
{
    heap_graph *g = heap_graph_read(bytes, n, path, progress, progress_ctx, err, errlen);
    if (g != NULL && heap_text_apply(g, facts, err, errlen) != 0) {
        heap_graph_free(g);
        g = NULL;
    }
    heap_text_facts_free(facts);
    return g;
}

heap_graph *heap_text_read_memory(const unsigned char *text, size_t len, const char *path, uint64_t max_out,
                                  unsigned char **binary, char *err, size_t errlen)
{
    char *b = NULL;
    size_t n = 0;
    *binary = NULL;
    FILE *out = open_memstream(&b, &n);
    if (out == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    heap_text_facts facts;
    int rc = heap_text_convert(text, len, path, out, max_out, &facts, NULL, NULL, err, errlen);
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        heap_text_facts_free(&facts);
        rc = -1;
    }
    if (rc != 0) {
        free(b);
        return NULL;
    }
    *binary = (unsigned char *)b;
    return graph_of(*binary, n, path, &facts, NULL, NULL, err, errlen);
}

/* The caller's progress, the binary form's pages read so far let go first
 * (as the caller does for the file it mapped). */
typedef struct binary_progress {
    hg_progress      progress;
    void            *ctx;
    const heap_file *bin;
} binary_progress;

static void binary_read_progress(void *ctx, const char *phase, double done)
{
    binary_progress *b = ctx;
    heap_file_drop_pages(b->bin);
    if (b->progress)
        b->progress(b->ctx, phase, done);
}

heap_graph *heap_text_read(const unsigned char *text, size_t len, const char *path, hg_progress progress,
                           void *progress_ctx, heap_file *bin, char *err, size_t errlen)
{
    memset(bin, 0, sizeof *bin);
    int fd = heap_file_temp(path, "for its binary form", err, errlen);
    if (fd < 0)
        return NULL;
    FILE *out = fdopen(fd, "w+");
    if (out == NULL) {
        snprintf(err, errlen, "%s: a temporary file for its binary form: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    heap_text_facts facts;
    /* a text dump holds more bytes than its binary form but for arrays'
     * nulls, which it leaves out */
    uint64_t max_out = (uint64_t)len * 16 + (8u << 20);
    heap_graph *g = NULL;
    if (heap_text_convert(text, len, path, out, max_out, &facts, progress, progress_ctx, err, errlen) == 0
        && heap_file_map(fd, path, bin, err, errlen) == 0) {
        binary_progress bp = { progress, progress_ctx, bin };
        g = graph_of(bin->bytes, bin->len, path, &facts, binary_read_progress, &bp, err, errlen);
        if (g == NULL)
            heap_file_close(bin);
    }
    heap_text_facts_free(&facts);
    fclose(out);
    return g;
}
