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
 *
 * Here: pass 3 and the entry points; passes 1 and 2 are in heap_text_scan.c,
 * the helpers (errors, lines, numbers, output, names, classes) in
 * heap_text_parse.c, what they share in heap_text_internal.h.
 */
#include "heap_text_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ pass 3: the binary records */

static int buf_u(tx *t, buf *b, uint64_t v, size_t n)
{
    if (heap_text_buf_reserve(t, b, n) != 0)
        return -1;
    be_put(b->b + b->n, v, n);
    b->n += n;
    return 0;
}

static int write_load_classes_and_traces(tx *t)
{
    unsigned char b[4 + ID_SIZE + 4 + ID_SIZE];
    for (uint32_t k = 0; k < t->nclasses; k++) {
        tclass *c = &t->classes[k];
        be_put(b, c->serial, 4);
        be_put(b + 4, c->id, ID_SIZE);
        be_put(b + 4 + ID_SIZE, c->trace, 4);
        be_put(b + 8 + ID_SIZE, c->name, ID_SIZE);
        if (heap_text_record(t, 0x02, b, sizeof b) != 0)
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
            uint32_t klass = heap_text_intern(t, f->klass.p, f->klass.n);
            uint32_t method = heap_text_intern(t, f->method.p, f->method.n);
            uint32_t file = f->file.n ? heap_text_intern(t, f->file.p, f->file.n) : 0;
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
                if (heap_text_record(t, 0x02, b, sizeof b) != 0)
                    return -1;
            }
            unsigned char fr[4 * ID_SIZE + 8];
            be_put(fr, ++frame_id, ID_SIZE);
            be_put(fr + ID_SIZE, method, ID_SIZE);
            be_put(fr + 2 * ID_SIZE, 0, ID_SIZE);
            be_put(fr + 3 * ID_SIZE, file, ID_SIZE);
            be_put(fr + 4 * ID_SIZE, ns->serial, 4);
            be_put(fr + 4 * ID_SIZE + 4, (uint32_t)f->line, 4);
            if (heap_text_record(t, 0x04, fr, sizeof fr) != 0 || buf_u(t, &t->aux, frame_id, ID_SIZE) != 0)
                return -1;
        }
        if (heap_text_record(t, 0x05, t->aux.b, t->aux.n) != 0)
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
        || buf_u(t, r, 0, 2) != 0 || buf_u(t, r, nstatics, 2) != 0
        || heap_text_buf_bytes(t, r, t->aux.b, t->aux.n) != 0
        || buf_u(t, r, c->nown, 2) != 0)
        return -1;
    size_t at = r->n;
    if (heap_text_buf_reserve(t, r, (size_t)c->nown * (ID_SIZE + 1)) != 0)
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
    return heap_text_add_subrecord(t);
}

static int values_room(tx *t, uint64_t n)
{
    if (n * ID_SIZE > t->max_out)
        return heap_text_fail(t, 0, "an object of more than %llu bytes of references (a corrupt length or index?)",
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
        if (heap_text_find(l, 0, key))
            tag = kinds[i].tag;
    }
    if (tag == 0)
        return heap_text_fail(t, no, "a ROOT of no kind known (kind=<JNI global ref>, <JNI local ref>, <Java stack>, "
                    "<native stack>, <system class>, <thread block>, <busy monitor>, <thread>, <unknown>)");
    int64_t thread = 0, frame = -1, trace = 0;
    if ((tag == 0x02 || tag == 0x03 || tag == 0x04 || tag == 0x06)
        && heap_text_key_dec(l, " thread=", &thread, UINT32_MAX) != 0)
        return heap_text_fail(t, no, "a ROOT of a thread without thread=N");
    if ((tag == 0x02 || tag == 0x03) && heap_text_key_dec(l, " frame=", &frame, INT32_MAX) != 0)
        return heap_text_fail(t, no, "a ROOT of a frame without frame=N");
    if (tag == 0x08 && (heap_text_key_dec(l, " id=", &thread, UINT32_MAX) != 0
                        || heap_text_key_dec(l, " trace=", &trace, UINT32_MAX) != 0))
        return heap_text_fail(t, no, "a thread ROOT without id=N, trace=N");
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
    return rc != 0 ? -1 : heap_text_add_subrecord(t);
}

static int write_dump(tx *t, const unsigned char *from, const unsigned char *to, uint64_t first_line)
{
    lines ls = { from, to, first_line - 1 };
    span l;
    head h = { 0 };
    uint32_t nstatics = 0;
    uint64_t nvalues = 0;
    size_t next_progress = (size_t)(from - t->text) + (64u << 20);
    while (heap_text_next_line(&ls, &l)) {
        if (l.n && l.p[0] == '\t') {
            span label;
            uint64_t v;
            if (heap_text_parse_field(t, l, ls.no, &label, &v) != 0)
                return -1;
            if (h.kind == R_OBJ) {
                uint32_t name = heap_text_intern(t, label.p, label.n), occ;
                if (name == 0 || heap_text_occurrence(t, name, h.stamp, &occ) != 0)
                    return -1;
                uint32_t slot = name == t->referent_name && t->classes[h.klass].referent_slot != UINT32_MAX
                              ? t->classes[h.klass].referent_slot
                              : heap_text_field_slot_of(t, h.klass, name, occ, 0, (uint32_t)ls.no);
                if (slot < t->classes[h.klass].layout)
                    t->values[slot] = v;
            } else if (h.kind == R_ARR) {
                uint64_t index;
                if (heap_text_parse_index(t, label, ls.no, h.nelems, &index) != 0 || values_room(t, index + 1) != 0)
                    return -1;
                for (; nvalues <= index; nvalues++)
                    t->values[nvalues] = 0;
                t->values[index] = v;
            } else if (h.kind == R_CLS) {
                tclass *c = &t->classes[h.klass];
                if (starts(label, "static ")) {
                    if (nstatics >= MAX_FIELDS)
                        return heap_text_fail(t, ls.no, "a class of more than %u statics", MAX_FIELDS);
                    uint32_t name = heap_text_intern(t, label.p + 7, label.n - 7);
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
                    return heap_text_fail(t, ls.no, "a CLS field that is none of super, loader, signers, domain, "
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
        if (heap_text_parse_head(t, l, ls.no, &h) != 0)
            return -1;
        h.stamp = ++t->records;
        nstatics = 0;
        nvalues = 0;
        t->aux.n = 0;
        if (h.kind == R_ROOT) {
            if (root(t, l, ls.no, h.id) != 0)
                return -1;
        } else if (h.kind == R_OBJ) {
            if (heap_text_lay_out(t, h.klass, (uint32_t)ls.no) != 0 || values_room(t, t->classes[h.klass].layout) != 0)
                return -1;
            memset(t->values, 0, (size_t)t->classes[h.klass].layout * sizeof *t->values);
        }
    }
    if (finish(t, &h, nstatics, nvalues) != 0)
        return -1;
    /* classes only objects name (their CLS not in the dump) */
    t->aux.n = 0;
    for (uint32_t k = 0; k < t->nclasses; k++)
        if (!t->classes[k].defined && (class_dump(t, k, 0) != 0 || heap_text_add_subrecord(t) != 0))
            return -1;
    if (heap_text_flush_segment(t) != 0)
        return -1;
    return heap_text_record(t, 0x2C, NULL, 0);
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
        heap_text_fail(&t, 0, "not an HPROF text file (it does not begin with \"JAVA PROFILE 1.0.x, created\")");
        goto done;
    }
    if (heap_text_put(&t, header, sizeof header) != 0 || heap_text_put(&t, h, sizeof h) != 0
        || heap_text_scan_file(&t, &dump, &dump_end, &dump_line) != 0)
        goto done;
    if (progress)
        progress(progress_ctx, "reading the text", 1.0 / 3);
    if (heap_text_learn(&t, dump, dump_end, dump_line) != 0 || heap_text_check_ids(&t) != 0
        || write_load_classes_and_traces(&t) != 0 || write_dump(&t, dump, dump_end, dump_line) != 0)
        goto done;
    if (fflush(out) != 0 || ferror(out)) {
        heap_text_fail(&t, 0, "writing its binary form: %s", strerror(errno));
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

