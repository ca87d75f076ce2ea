/*
 * heap_text_parse: the helpers of the text-to-binary conversion (see
 * heap_text.c): errors, lines, numbers, the output buffers, the names (UTF8
 * records) and the classes with their reference fields' layout.
 */
#include "heap_text_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ errors */

int heap_text_fail(tx *t, uint64_t line, const char *fmt, ...)
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

int heap_text_grow(void **a, uint32_t *cap, uint32_t n, size_t elem)
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


int heap_text_next_line(lines *ls, span *l)
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

/* The first occurrence of s in l at or after from, or NULL. */
const unsigned char *heap_text_find(span l, size_t from, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = from; n <= l.n && i + n <= l.n; i++)
        if (l.p[i] == (unsigned char)s[0] && memcmp(l.p + i, s, n) == 0)
            return l.p + i;
    return NULL;
}

const unsigned char *heap_text_find_last(span l, const char *s)
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
int heap_text_parse_hex(const unsigned char **q, const unsigned char *end, uint64_t *v)
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

int heap_text_parse_dec(const unsigned char **q, const unsigned char *end, int64_t *v, int64_t max)
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
int heap_text_key_dec(span l, const char *key, int64_t *v, int64_t max)
{
    const unsigned char *k = heap_text_find(l, 0, key);
    if (k == NULL)
        return -1;
    const unsigned char *q = k + strlen(key);
    return heap_text_parse_dec(&q, l.p + l.n, v, max);
}

/* ------------------------------------------------------------ output */

int heap_text_put(tx *t, const void *p, size_t n)
{
    if (n > t->max_out - t->written || t->written > t->max_out)
        return heap_text_fail(t, 0, "it would make more than %llu bytes of binary records (a text dump makes about as "
                    "many as it has; a corrupt length or index?)", (unsigned long long)t->max_out);
    if (n && fwrite(p, 1, n, t->out) != n)
        return heap_text_fail(t, 0, "writing its binary form: %s", strerror(errno));
    t->written += n;
    return 0;
}

int heap_text_buf_reserve(tx *t, buf *b, size_t more)
{
    if (more > t->max_out || b->n + more > t->max_out)
        return heap_text_fail(t, 0, "a record of more than %llu bytes (a corrupt length or index?)",
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

int heap_text_buf_bytes(tx *t, buf *b, const void *p, size_t n)
{
    if (heap_text_buf_reserve(t, b, n) != 0)
        return -1;
    if (n)
        memcpy(b->b + b->n, p, n);
    b->n += n;
    return 0;
}

int heap_text_record(tx *t, unsigned tag, const unsigned char *body, size_t n)
{
    unsigned char h[9];
    if (n > UINT32_MAX)
        return heap_text_fail(t, 0, "a record of more than 4 GiB");
    h[0] = (unsigned char)tag;
    be_put(h + 1, 0, 4);
    be_put(h + 5, n, 4);
    return heap_text_put(t, h, sizeof h) != 0 || heap_text_put(t, body, n) != 0 ? -1 : 0;
}

int heap_text_flush_segment(tx *t)
{
    if (t->seg.n == 0)
        return 0;
    int rc = heap_text_record(t, 0x1C, t->seg.b, t->seg.n);
    t->seg.n = 0;
    return rc;
}

/* t->rec, a finished sub-record, into the current segment. */
int heap_text_add_subrecord(tx *t)
{
    if (t->seg.n && t->seg.n + t->rec.n > SEGMENT_BYTES && heap_text_flush_segment(t) != 0)
        return -1;
    if (heap_text_buf_bytes(t, &t->seg, t->rec.b, t->rec.n) != 0)
        return -1;
    t->rec.n = 0;
    return t->seg.n >= SEGMENT_BYTES ? heap_text_flush_segment(t) : 0;
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
uint32_t heap_text_intern(tx *t, const unsigned char *p, size_t n)
{
    if (n > UINT32_MAX - ID_SIZE) {
        heap_text_fail(t, 0, "a name of more than 4 GiB");
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
    if (heap_text_grow((void **)&t->names, &t->names_cap, t->nnames, sizeof *t->names) != 0) {
        out_of_memory(t);
        return 0;
    }
    t->names[t->nnames] = (name_entry){ .p = p, .n = (uint32_t)n };
    uint32_t id = ++t->nnames;
    t->name_slots[h] = id;
    unsigned char rec[9 + ID_SIZE] = { 0x01 };
    be_put(rec + 5, ID_SIZE + n, 4);
    be_put(rec + 9, id, ID_SIZE);
    if (heap_text_put(t, rec, sizeof rec) != 0 || heap_text_put(t, p, n) != 0)
        return 0;
    return id;
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
uint32_t heap_text_class_of(tx *t, uint64_t id, span name, uint32_t line)
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
    if (heap_text_grow((void **)&t->classes, &t->classes_cap, t->nclasses, sizeof *t->classes) != 0) {
        out_of_memory(t);
        return UINT32_MAX;
    }
    uint32_t name_id = heap_text_intern(t, name.p, name.n);
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
uint32_t heap_text_field_slot_of(tx *t, uint32_t k, uint32_t name, uint32_t occ, int add, uint32_t line)
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
        heap_text_fail(t, line, "the objects of one class show more than %u reference fields", MAX_FIELDS);
        return UINT32_MAX;
    }
    t->fields[h] = (field_slot){ .klass = k + 1, .name = name, .occurrence = occ, .slot = c->nown++ };
    t->nfields++;
    return t->fields[h].slot;
}

/* How often this record's fields named `name` so far (the record is `stamp`). */
int heap_text_occurrence(tx *t, uint32_t name, uint32_t stamp, uint32_t *occ)
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
int heap_text_lay_out(tx *t, uint32_t k, uint32_t line)
{
    tclass *c = &t->classes[k];
    if (c->layout != UINT32_MAX)
        return 0;
    uint64_t total = 0;
    uint32_t referent = UINT32_MAX, depth = 0;
    for (uint32_t x = k; x != UINT32_MAX; depth++) {
        if (depth > MAX_SUPERS)
            return heap_text_fail(t, line, "class 0x%llx's superclasses form a cycle or nest deeper than %u",
                        (unsigned long long)c->id, MAX_SUPERS);
        const tclass *cx = &t->classes[x];
        if (x == t->java_lang_ref_reference && referent == UINT32_MAX) {
            uint32_t s = heap_text_field_slot_of(t, x, t->referent_name, 1, 0, line);
            if (s != UINT32_MAX)
                referent = (uint32_t)total + s;
        }
        total += cx->nown;
        if (cx->super == 0)
            break;
        x = class_find(t, cx->super);
    }
    if (total > MAX_FIELDS * 16u)
        return heap_text_fail(t, line, "class 0x%llx has more than %u reference fields with its superclasses",
                    (unsigned long long)c->id, MAX_FIELDS * 16u);
    c->layout = (uint32_t)total;
    c->referent_slot = referent;
    return 0;
}

