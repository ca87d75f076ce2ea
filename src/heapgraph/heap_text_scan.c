/*
 * heap_text_scan: passes 1 and 2 of the text-to-binary conversion (see
 * heap_text.c): the file's frames, threads and traces and where its last
 * heap dump lies; that dump's record lines parsed and its classes, fields
 * and ids learnt; no id twice.
 */
#include "heap_text_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ pass 1: the file */

static int parse_frame(tx *t, span l, uint64_t no, tframe *f)
{
    /* "\tpkg.Class.method(File.java:12)", ":Unknown line", ":Native method", "(<Unknown Source>)" */
    span s = { l.p + 1, l.n - 1 };
    const unsigned char *open = heap_text_find(s, 0, "(");
    if (open == NULL || s.n < 2 || s.p[s.n - 1] != ')')
        return heap_text_fail(t, no, "a frame line that is not \"class.method(file:line)\"");
    span qualified = { s.p, (size_t)(open - s.p) };
    const unsigned char *dot = heap_text_find_last(qualified, ".");
    if (dot == NULL)
        return heap_text_fail(t, no, "a frame with no class before its method");
    f->klass = (span){ qualified.p, (size_t)(dot - qualified.p) };
    f->method = (span){ dot + 1, (size_t)(qualified.p + qualified.n - dot - 1) };
    span in = { open + 1, (size_t)(s.p + s.n - 1 - open - 1) };
    const unsigned char *colon = heap_text_find_last(in, ":");
    span file = colon ? (span){ in.p, (size_t)(colon - in.p) } : in;
    span where = colon ? (span){ colon + 1, (size_t)(in.p + in.n - colon - 1) } : (span){ in.p + in.n, 0 };
    f->line = 0;
    if (where.n == 13 && memcmp(where.p, "Native method", 13) == 0) {
        f->line = -3;
    } else if (where.n > 0) {
        const unsigned char *q = where.p;
        int64_t v;
        if (heap_text_parse_dec(&q, where.p + where.n, &v, INT32_MAX) == 0 && q == where.p + where.n && v > 0)
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
    if (heap_text_key_dec(l, "id = ", &serial, UINT32_MAX) != 0)
        return heap_text_fail(t, no, "THREAD START without \"id = N\"");
    const unsigned char *q = heap_text_find(l, 0, "name=\"");
    if (q == NULL)
        return heap_text_fail(t, no, "THREAD START without name=\"...\"");
    q += 6;
    span rest = { q, (size_t)(l.p + l.n - q) };
    const unsigned char *e = heap_text_find_last(rest, "\", group=\"");
    if (e == NULL)
        e = heap_text_find_last(rest, "\"");
    if (e == NULL)
        return heap_text_fail(t, no, "THREAD START whose name=\" has no closing quote");
    if (heap_text_grow((void **)threads, cap, *n, sizeof **threads) != 0)
        return out_of_memory(t);
    /* the name's offset in names, made a pointer once names stops moving */
    (*threads)[(*n)++] = (hg_thread_name){ .serial = (uint32_t)serial, .name = (const char *)(uintptr_t)names->n };
    if (heap_text_buf_bytes(t, names, q, (size_t)(e - q)) != 0 || heap_text_buf_bytes(t, names, "", 1) != 0)
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
int heap_text_scan_file(tx *t, const unsigned char **dump, const unsigned char **dump_end, uint64_t *dump_line)
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
    while (!past_header && heap_text_next_line(&ls, &l))
        past_header = l.n == 8 && memcmp(l.p, "--------", 8) == 0;
    if (!past_header)
        return heap_text_fail(t, 0, "no line \"--------\" ends the header: not an HPROF text file, or cut short");
    while (rc == 0 && heap_text_next_line(&ls, &l)) {
        if (t->progress && (size_t)(ls.p - t->text) >= next_progress) {
            t->progress(t->progress_ctx, "reading the text", (double)(ls.p - t->text) / (double)t->len / 3);
            next_progress += 64u << 20;
        }
        if (l.n && l.p[0] == '\t') {
            if (trace == NULL)
                continue;
            if (l.n == 8 && memcmp(l.p, "\t<empty>", 8) == 0)
                continue;
            if (heap_text_grow((void **)&t->frames, &t->frames_cap, t->nframes, sizeof *t->frames) != 0) {
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
            if (heap_text_parse_dec(&q, l.p + l.n, &serial, UINT32_MAX) != 0 || q >= l.p + l.n || *q != ':') {
                rc = heap_text_fail(t, ls.no, "a TRACE line that is not \"TRACE N:\"");
                break;
            }
            heap_text_key_dec(l, "thread=", &thread, UINT32_MAX);
            if (heap_text_grow((void **)&t->traces, &t->traces_cap, t->ntraces, sizeof *t->traces) != 0) {
                rc = out_of_memory(t);
                break;
            }
            trace = &t->traces[t->ntraces++];
            *trace = (ttrace){ .serial = (uint32_t)serial, .thread = (uint32_t)thread, .first = t->nframes };
        }
    }
    if (rc == 0 && begin)
        rc = heap_text_fail(t, begin_line - 1,
                            "the heap dump that begins here has no HEAP DUMP END: the file is cut short");
    if (rc == 0 && *dump == NULL)
        rc = heap_text_fail(t, 0, "the file holds no heap dump (HEAP DUMP BEGIN ... END; write one with "
                            "heap=dump,format=a)");
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


/* "NAME@HEX)" at the end of l, after key: the name and the id. */
static int name_at_id(span l, const char *key, span *name, uint64_t *id)
{
    const unsigned char *k = heap_text_find(l, 0, key);
    if (k == NULL)
        return -1;
    const unsigned char *p = k + strlen(key), *end = l.p + l.n - 1;     /* at ')' */
    span rest = { p, (size_t)(end - p) };
    const unsigned char *at = heap_text_find_last(rest, "@");
    if (at == NULL)
        return -1;
    *name = (span){ p, (size_t)(at - p) };
    const unsigned char *q = at + 1;
    return heap_text_parse_hex(&q, end, id) != 0 || q != end ? -1 : 0;
}

static const char *const PRIM_NAMES[] = { [T_BOOLEAN] = "boolean", [T_CHAR] = "char", [T_FLOAT] = "float",
                                          [T_DOUBLE] = "double", [T_BYTE] = "byte", [T_SHORT] = "short",
                                          [T_INT] = "int", [T_LONG] = "long" };

static unsigned prim_type(span name)
{
    for (unsigned t = T_BOOLEAN; t <= T_LONG; t++)
        if (name.n == strlen(PRIM_NAMES[t]) && memcmp(name.p, PRIM_NAMES[t], name.n) == 0)
            return t;
    return 0;
}

/* A record line ("OBJ 1a2b (sz=16, ...)"): its head; classes made as named. */
int heap_text_parse_head(tx *t, span l, uint64_t no, head *h)
{
    static const struct { const char *word; int kind; } words[] = {
        { "ROOT ", R_ROOT }, { "CLS ", R_CLS }, { "OBJ ", R_OBJ }, { "ARR ", R_ARR }
    };
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (starts(l, words[i].word))
            h->kind = words[i].kind;
    if (h->kind == R_NONE)
        return heap_text_fail(t, no, "\"%.*s\" is no ROOT, CLS, OBJ or ARR record, nor a field of one (a tab first)",
                    (int)(l.n > 40 ? 40 : l.n), (const char *)l.p);
    const unsigned char *q = l.p + (h->kind == R_ROOT ? 5 : 4);
    if (heap_text_parse_hex(&q, l.p + l.n, &h->id) != 0 || q + 2 > l.p + l.n || q[0] != ' ' || q[1] != '('
        || l.p[l.n - 1] != ')')
        return heap_text_fail(t, no, "a record line that is not \"%.4s<hex id> (...)\"",
                              (const char *)words[h->kind - 1].word);
    if (h->id == 0)
        return heap_text_fail(t, no, "an object of id 0 (0 is null)");
    int64_t v;
    if (h->kind == R_OBJ || h->kind == R_ARR) {
        if (heap_text_key_dec(l, "(sz=", &v, INT64_MAX) != 0)
            return heap_text_fail(t, no, "no sz=N (the object's size)");
        h->size = (uint64_t)v;
        if (heap_text_key_dec(l, " trace=", &v, UINT32_MAX) != 0)
            return heap_text_fail(t, no, "no trace=N");
        h->trace = (uint32_t)v;
    }
    span name;
    if (h->kind == R_OBJ) {
        uint64_t cid;
        if (name_at_id(l, " class=", &name, &cid) != 0)
            return heap_text_fail(t, no, "no class=NAME@ID at the end");
        if ((h->klass = heap_text_class_of(t, cid, name, (uint32_t)no)) == UINT32_MAX)
            return -1;
    } else if (h->kind == R_ARR) {
        if (heap_text_key_dec(l, " nelems=", &v, INT32_MAX) != 0)
            return heap_text_fail(t, no, "no nelems=N");
        h->nelems = (uint64_t)v;
        uint64_t cid;
        if (name_at_id(l, " elem type=", &name, &cid) == 0) {
            if ((h->klass = heap_text_class_of(t, cid, name, (uint32_t)no)) == UINT32_MAX)
                return -1;
        } else {
            const unsigned char *k = heap_text_find(l, 0, " elem type=");
            span pn = k ? (span){ k + 11, (size_t)(l.p + l.n - 1 - (k + 11)) } : (span){ l.p, 0 };
            if (k == NULL || (h->prim = prim_type(pn)) == 0)
                return heap_text_fail(t, no, "no elem type=CLASS@ID or a primitive type (boolean, char, float, double, "
                            "byte, short, int, long)");
            h->kind = R_PRIM;
        }
    } else if (h->kind == R_CLS) {
        const unsigned char *k = heap_text_find(l, 0, "(name=");
        span rest = { l.p, l.n };
        const unsigned char *e = heap_text_find_last(rest, ", trace=");
        if (k == NULL || e == NULL || e < k + 6)
            return heap_text_fail(t, no, "a CLS line that is not \"CLS <id> (name=NAME, trace=N)\"");
        name = (span){ k + 6, (size_t)(e - k - 6) };
        if (heap_text_key_dec((span){ e, (size_t)(l.p + l.n - e) }, ", trace=", &v, UINT32_MAX) != 0)
            return heap_text_fail(t, no, "no trace=N");
        h->trace = (uint32_t)v;
        if ((h->klass = heap_text_class_of(t, h->id, name, (uint32_t)no)) == UINT32_MAX)
            return -1;
    }
    return 0;
}

/* A field line "\tLABEL\t[\t]HEX": the label and the value. */
int heap_text_parse_field(tx *t, span l, uint64_t no, span *label, uint64_t *v)
{
    span s = { l.p + 1, l.n - 1 };
    const unsigned char *tab = heap_text_find(s, 0, "\t");
    if (tab == NULL || tab == s.p)
        return heap_text_fail(t, no, "a field line that is not \"<tab>NAME<tab>HEX\"");
    *label = (span){ s.p, (size_t)(tab - s.p) };
    const unsigned char *q = tab, *end = l.p + l.n;
    while (q < end && *q == '\t')
        q++;
    if (heap_text_parse_hex(&q, end, v) != 0 || q != end)
        return heap_text_fail(t, no, "a field whose value is not a hex id");
    return 0;
}

/* "[N]" with N < nelems. */
int heap_text_parse_index(tx *t, span label, uint64_t no, uint64_t nelems, uint64_t *index)
{
    const unsigned char *q = label.p + 1;
    int64_t v;
    if (label.n < 3 || label.p[0] != '[' || heap_text_parse_dec(&q, label.p + label.n - 1, &v, INT32_MAX) != 0
        || q != label.p + label.n - 1 || label.p[label.n - 1] != ']' || v < 0)
        return heap_text_fail(t, no, "an array element that is not \"[N]\"");
    if ((uint64_t)v >= nelems)
        return heap_text_fail(t, no, "element [%lld] of an array of %llu", (long long)v, (unsigned long long)nelems);
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
int heap_text_learn(tx *t, const unsigned char *from, const unsigned char *to, uint64_t first_line)
{
    lines ls = { from, to, first_line - 1 };
    span l;
    head h = { 0 };
    heap_text_facts *f = t->facts;
    uint32_t sizes_cap = 0;
    size_t next_progress = (size_t)(from - t->text) + (64u << 20);
    while (heap_text_next_line(&ls, &l)) {
        if (t->progress && (size_t)(ls.p - t->text) >= next_progress) {
            t->progress(t->progress_ctx, "reading the text",
                        (1.0 + (double)(ls.p - from) / (double)(to - from)) / 3);
            next_progress += 64u << 20;
        }
        if (l.n && l.p[0] == '\t') {
            span label;
            uint64_t v;
            if (h.kind == R_NONE || h.kind == R_ROOT || h.kind == R_PRIM)
                return heap_text_fail(t, ls.no, "a field line (a tab first) under no CLS, OBJ or object ARR record");
            if (heap_text_parse_field(t, l, ls.no, &label, &v) != 0)
                return -1;
            if (h.kind == R_OBJ) {
                uint32_t name = heap_text_intern(t, label.p, label.n), occ;
                if (name == 0 || heap_text_occurrence(t, name, h.stamp, &occ) != 0
                    || heap_text_field_slot_of(t, h.klass, name, occ, 1, (uint32_t)ls.no) == UINT32_MAX)
                    return -1;
            } else if (h.kind == R_ARR) {
                uint64_t index;
                if (heap_text_parse_index(t, label, ls.no, h.nelems, &index) != 0)
                    return -1;
            } else if (h.kind == R_CLS && label.n == 5 && memcmp(label.p, "super", 5) == 0) {
                t->classes[h.klass].super = v;
            }
            continue;
        }
        if (l.n == 0)
            continue;
        if (heap_text_parse_head(t, l, ls.no, &h) != 0)
            return -1;
        h.stamp = ++t->records;
        if (h.kind == R_CLS) {
            tclass *c = &t->classes[h.klass];
            if (c->defined)
                return heap_text_fail(t, ls.no, "class 0x%llx is written twice (also line %u)",
                                      (unsigned long long)h.id, c->line);
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
            if (heap_text_grow((void **)&f->size_ids, &sizes_cap, f->nsizes, sizeof *f->size_ids) != 0)
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
        if ((t->referent_name = heap_text_intern(t, (const unsigned char *)referent, sizeof referent - 1)) == 0
            || heap_text_field_slot_of(t, t->java_lang_ref_reference, t->referent_name, 1, 1, 0) == UINT32_MAX)
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
int heap_text_check_ids(tx *t)
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
                return heap_text_fail(t, a->what == 2 ? b->line : a->line, "object 0x%llx is the class of the object "
                                      "on line %u too", (unsigned long long)a->id, a->what == 2 ? a->line : b->line);
            return heap_text_fail(t, b->line, "object 0x%llx is written twice (also line %u)",
                                  (unsigned long long)b->id, a->line);
        }
    free(t->ids);
    t->ids = NULL;
    t->nids = t->ids_cap = 0;
    return 0;
}
