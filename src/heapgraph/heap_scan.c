/*
 * heap_scan: an HPROF binary dump's records into a heap_graph (heap_graph.h).
 *
 * Three passes over the bytes in place: (1) the records: names, classes'
 * serials, frames, traces; in heap dump (segment) records every object's id
 * and offset, every class dump, every GC root; (2) after the objects are
 * sorted by id, each class's layout (its reference fields through its
 * superclasses) and size; (3) each object's references, as dense node
 * indexes, appended in node order (so one array with a start per node).
 *
 * Every read goes through a cursor bounded by its record or sub-record.
 *
 * This file: pass 1 and the entry points (heap_graph_read, heap_graph_free);
 * heap_scan_index.c pass 2 and the look-ups by id and name; heap_scan_edges.c
 * pass 3; heap_scan_internal.h what they share.
 */
#include "heap_scan_internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TAG_UTF8 = 0x01, TAG_LOAD_CLASS = 0x02, TAG_FRAME = 0x04, TAG_TRACE = 0x05,
    TAG_HEAP_DUMP = 0x0C, TAG_HEAP_DUMP_SEGMENT = 0x1C
};

int heap_scan_fail_at(scan *s, size_t offset, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(s->err, s->errlen, "%s: offset %zu (0x%zx): %s", s->g->path, offset, offset, what);
    return -1;
}

int heap_scan_out_of_memory(scan *s)
{
    snprintf(s->err, s->errlen, "%s: out of memory reading the heap dump", s->g->path);
    return -1;
}

static size_t offset_of(const scan *s, const unsigned char *p) { return (size_t)(p - s->g->bytes); }

/* ------------------------------------------------------------ pass 1 */

static int push_object(scan *s, uint64_t id, size_t at)
{
    heap_graph *g = s->g;
    size_t cap = s->objects_cap;
    if (grow((void **)&g->ids, &cap, g->nnodes, sizeof *g->ids) != 0)
        return heap_scan_out_of_memory(s);
    if (cap != s->objects_cap) {
        uint64_t *a = realloc(g->at, cap * sizeof *g->at);
        if (a == NULL)
            return heap_scan_out_of_memory(s);
        g->at = a;
        s->objects_cap = cap;
    }
    g->ids[g->nnodes] = id;
    g->at[g->nnodes] = at;
    g->nnodes++;
    return 0;
}

static int push_root(scan *s, uint8_t kind, uint32_t thread, uint32_t frame)
{
    heap_graph *g = s->g;
    if (grow((void **)&g->roots, &s->roots_cap, g->nroots, sizeof *g->roots) != 0)
        return heap_scan_out_of_memory(s);
    /* the node is resolved once the objects are sorted: keep the id for now */
    /* the node is known once the objects are sorted (root_ids keeps the id) */
    g->roots[g->nroots++] = (hg_root){ .node = HG_NONE, .kind = kind, .thread_serial = thread,
                                       .frame = frame };
    return 0;
}

typedef struct root_ids {
    uint64_t *ids;
    size_t    n, cap;
} root_ids;

/* The CLASS DUMP at c: skips to its statics and instance fields. */
int heap_scan_skip_constant_pool(scan *s, cursor *c, int *ok)
{
    uint32_t n = (uint32_t)get(c, 2, ok);
    for (uint32_t i = 0; i < n && *ok; i++) {
        get(c, 2, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(s->g, type);
        if (size < 0)
            return heap_scan_fail_at(s, offset_of(s, c->p) - 1, "constant pool entry of unknown type %u", type);
        get(c, (size_t)size, ok);
    }
    return 0;
}

int heap_scan_skip_statics(scan *s, cursor *c, int *ok)
{
    uint32_t n = (uint32_t)get(c, 2, ok);
    for (uint32_t i = 0; i < n && *ok; i++) {
        get(c, s->g->id_size, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(s->g, type);
        if (size < 0)
            return heap_scan_fail_at(s, offset_of(s, c->p) - 1, "static field of unknown type %u", type);
        if (!has(c, (size_t)size)) {
            *ok = 0;
            return 0;
        }
        c->p += size;
    }
    return 0;
}

static int read_class_dump(scan *s, cursor *c, size_t at, int *ok)
{
    heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    uint64_t id = get(c, idn, ok);
    get(c, 4, ok);
    uint64_t super_id = get(c, idn, ok);
    uint64_t loader_id = get(c, idn, ok);
    get(c, 4u * idn, ok);                   /* signers, protection domain, two reserved */
    uint32_t raw = (uint32_t)get(c, 4, ok);
    if (heap_scan_skip_constant_pool(s, c, ok) != 0 || heap_scan_skip_statics(s, c, ok) != 0)
        return -1;
    uint32_t nfields = (uint32_t)get(c, 2, ok);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < nfields && *ok; i++) {
        get(c, idn, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(g, type);
        if (size < 0)
            return heap_scan_fail_at(s, offset_of(s, c->p) - 1, "instance field of unknown type %u", type);
        bytes += (uint32_t)size;
    }
    if (!*ok)
        return 0;
    if (grow((void **)&g->classes, &s->classes_cap, g->nclasses, sizeof *g->classes) != 0)
        return heap_scan_out_of_memory(s);
    g->classes[g->nclasses++] = (hg_class){ .id = id, .name = "?", .node = HG_NONE, .super = HG_NONE,
                                            .super_id = super_id, .loader_id = loader_id,
                                            .dump_at = at, .raw_size = raw, .value_bytes = bytes };
    return push_object(s, id, at);
}

static const char COMPRESSED_OOPS_KEY[] = "java.vm.compressedOopsMode";

static int read_heap_records(scan *s, cursor *c, root_ids *rids)
{
    heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    int ok = 1;
    while (c->p < c->end) {
        size_t at = offset_of(s, c->p);
        unsigned tag = *c->p++;
        uint64_t id = 0;
        uint32_t thread = 0, frame = 0;
        int is_root = 1;
        switch (tag) {
        case HG_ROOT_UNKNOWN: case HG_ROOT_STICKY_CLASS: case HG_ROOT_MONITOR_USED:
            id = get(c, idn, &ok);
            break;
        case HG_ROOT_JNI_GLOBAL:
            id = get(c, idn, &ok);
            get(c, idn, &ok);
            break;
        case HG_ROOT_JNI_LOCAL: case HG_ROOT_JAVA_FRAME: case HG_ROOT_THREAD_OBJECT:
            id = get(c, idn, &ok);
            thread = (uint32_t)get(c, 4, &ok);
            frame = (uint32_t)get(c, 4, &ok);
            break;
        case HG_ROOT_NATIVE_STACK: case HG_ROOT_THREAD_BLOCK:
            id = get(c, idn, &ok);
            thread = (uint32_t)get(c, 4, &ok);
            break;
        case HG_CLASS:
            is_root = 0;
            if (read_class_dump(s, c, at, &ok) != 0)
                return -1;
            break;
        case HG_INSTANCE: {
            is_root = 0;
            id = get(c, idn, &ok);
            get(c, 4 + idn, &ok);
            uint32_t n = (uint32_t)get(c, 4, &ok);
            if (!has(c, n))
                ok = 0;
            else
                c->p += n;
            if (ok && push_object(s, id, at) != 0)
                return -1;
            break;
        }
        case HG_OBJ_ARRAY: {
            is_root = 0;
            id = get(c, idn, &ok);
            get(c, 4, &ok);
            uint32_t n = (uint32_t)get(c, 4, &ok);
            get(c, idn, &ok);
            if (!has(c, (uint64_t)n * idn))
                ok = 0;
            else
                c->p += (size_t)n * idn;
            if (ok && push_object(s, id, at) != 0)
                return -1;
            break;
        }
        case HG_PRIM_ARRAY: {
            is_root = 0;
            id = get(c, idn, &ok);
            get(c, 4, &ok);
            uint32_t n = (uint32_t)get(c, 4, &ok);
            unsigned type = (unsigned)get(c, 1, &ok);
            int size = value_size(g, type);
            if (ok && (size < 0 || type == TYPE_OBJECT))
                return heap_scan_fail_at(s, offset_of(s, c->p) - 1, "primitive array of unknown type %u", type);
            if (!has(c, (uint64_t)n * (uint32_t)size)) {
                ok = 0;
                break;
            }
            if (type == 8 && n == sizeof COMPRESSED_OOPS_KEY - 1
                && memcmp(c->p, COMPRESSED_OOPS_KEY, n) == 0)
                s->compressed_hint = 1;
            c->p += (size_t)n * (uint32_t)size;
            if (push_object(s, id, at) != 0)
                return -1;
            break;
        }
        default:
            return heap_scan_fail_at(s, at, "unknown heap dump sub-record tag 0x%02x", tag);
        }
        if (!ok)
            return heap_scan_fail_at(s, at, "heap dump sub-record (tag 0x%02x) cut short at its record's end "
                           "(a truncated or corrupt file)", tag);
        if (is_root) {
            if (grow((void **)&rids->ids, &rids->cap, rids->n, sizeof *rids->ids) != 0)
                return heap_scan_out_of_memory(s);
            rids->ids[rids->n++] = id;
            if (push_root(s, (uint8_t)tag, thread, frame) != 0)
                return -1;
        }
    }
    return 0;
}

static int read_records(scan *s, root_ids *rids)
{
    heap_graph *g = s->g;
    const unsigned char *b = g->bytes;
    size_t len = g->len;
    const char *magic = memchr(b, '\0', len < 64 ? len : 64) ? (const char *)b : NULL;
    if (magic == NULL || strncmp(magic, "JAVA PROFILE 1.0.", 17) != 0) {
        snprintf(s->err, s->errlen, "%s: not an HPROF binary file (it does not begin with "
                 "\"JAVA PROFILE 1.0.x\")", g->path);
        return -1;
    }
    size_t p = strlen(magic) + 1;
    if (len - p < 12)
        return heap_scan_fail_at(s, p, "the header is cut short");
    g->id_size = (uint32_t)be(b + p, 4);
    if (g->id_size != 4 && g->id_size != 8)
        return heap_scan_fail_at(s, p, "identifier size %u (4 or 8 expected)", g->id_size);
    p += 12;
    uint32_t idn = g->id_size;
    /* A file may hold several dumps (the agent's SIGQUIT dumps, then its
     * exit dump): the last one is read, the newest, as the other readers
     * take a file's last section. It begins at the last HEAP DUMP, or at the
     * first segment after the last HEAP DUMP END. (A record that lies about
     * its length is found in the pass below.) */
    size_t last_dump = len, q = p;
    int dumps = 0, in_segments = 0;
    while (q < len && len - q >= 9) {
        unsigned t = b[q];
        size_t blen = (size_t)be(b + q + 5, 4);
        if (t == TAG_HEAP_DUMP || (t == TAG_HEAP_DUMP_SEGMENT && !in_segments)) {
            last_dump = q;
            dumps++;
        }
        if (t == TAG_HEAP_DUMP_SEGMENT)
            in_segments = 1;
        else if (t == 0x2C || t == TAG_HEAP_DUMP)
            in_segments = 0;
        if (blen > len - q - 9)
            break;
        q += 9 + blen;
    }
    g->heap_dumps = (uint32_t)dumps;
    int heap_dumps = 0, past_dump = 0;
    size_t next_progress = 0;
    while (p < len) {
        if (len - p < 9)
            return heap_scan_fail_at(s, p, "record header cut short (the file ends %zu bytes into it)", len - p);
        unsigned tag = b[p];
        size_t body_len = (size_t)be(b + p + 5, 4);
        size_t body = p + 9;
        if (body_len > len - body)
            return heap_scan_fail_at(s, p, "record (tag 0x%02x) of %zu bytes runs past the end of the file "
                           "(%zu bytes left): the file is truncated", tag, body_len, len - body);
        cursor c = { b + body, b + body + body_len };
        int ok = 1;
        switch (tag) {
        case TAG_UTF8: {
            if (body_len < idn)
                return heap_scan_fail_at(s, p, "UTF8 record shorter than an id");
            if (grow((void **)&g->utf8_ids, &s->utf8_cap, g->nutf8, sizeof *g->utf8_ids) != 0)
                return heap_scan_out_of_memory(s);
            size_t *a = realloc(g->utf8_at, s->utf8_cap * sizeof *a);
            if (a == NULL)
                return heap_scan_out_of_memory(s);
            g->utf8_at = a;
            g->utf8_ids[g->nutf8] = be(b + body, idn);
            g->utf8_at[g->nutf8++] = body;
            break;
        }
        case TAG_LOAD_CLASS: {
            uint32_t serial = (uint32_t)get(&c, 4, &ok);
            uint64_t id = get(&c, idn, &ok);
            get(&c, 4, &ok);
            uint64_t name = get(&c, idn, &ok);
            if (!ok)
                return heap_scan_fail_at(s, p, "LOAD CLASS record cut short");
            if (grow((void **)&g->serials, &s->serials_cap, g->nserials, sizeof *g->serials) != 0)
                return heap_scan_out_of_memory(s);
            /* the name id waits in .name's place until the names are sorted */
            g->serials[g->nserials++] = (hg_serial_class){ .serial = serial, .id = id,
                                                           .name = (const char *)(uintptr_t)name };
            break;
        }
        case TAG_FRAME: {
            uint64_t id = get(&c, idn, &ok);
            uint64_t method = get(&c, idn, &ok);
            get(&c, idn, &ok);
            uint64_t file = get(&c, idn, &ok);
            uint32_t serial = (uint32_t)get(&c, 4, &ok);
            int32_t line = (int32_t)(uint32_t)get(&c, 4, &ok);
            if (!ok)
                return heap_scan_fail_at(s, p, "STACK FRAME record cut short");
            if (grow((void **)&g->frames, &s->frames_cap, g->nframes, sizeof *g->frames) != 0)
                return heap_scan_out_of_memory(s);
            g->frames[g->nframes++] = (hg_frame){ .id = id, .method = (const char *)(uintptr_t)method,
                                                  .file = (const char *)(uintptr_t)file,
                                                  .class_serial = serial, .line = line };
            break;
        }
        case TAG_TRACE: {
            uint32_t serial = (uint32_t)get(&c, 4, &ok);
            uint32_t thread = (uint32_t)get(&c, 4, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            if (!ok || !has(&c, (uint64_t)n * idn))
                return heap_scan_fail_at(s, p, "STACK TRACE record cut short");
            if (grow((void **)&g->traces, &s->traces_cap, g->ntraces, sizeof *g->traces) != 0)
                return heap_scan_out_of_memory(s);
            g->traces[g->ntraces++] = (hg_trace){ .serial = serial, .thread_serial = thread,
                                                  .nframes = n, .frame_ids_at = offset_of(s, c.p) };
            break;
        }
        case TAG_HEAP_DUMP: case TAG_HEAP_DUMP_SEGMENT:
            if (p < last_dump || past_dump || (tag == TAG_HEAP_DUMP && p != last_dump))
                break;
            heap_dumps++;
            past_dump = tag == TAG_HEAP_DUMP;
            if (read_heap_records(s, &c, rids) != 0)
                return -1;
            break;
        case 0x2C:
            past_dump = p > last_dump;
            break;
        default:
            break;
        }
        p = body + body_len;
        if (s->progress && p >= next_progress) {
            s->progress(s->progress_ctx, "reading", (double)p / (double)len);
            next_progress = p + (64u << 20);
        }
    }
    if (heap_dumps == 0) {
        snprintf(s->err, s->errlen, "%s: the file holds no heap dump (write one with heap=dump,format=b "
                 "or jcmd PID GC.heap_dump FILE)", g->path);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ entry */

heap_graph *heap_graph_read(const unsigned char *bytes, size_t len, const char *path,
                            hg_progress progress, void *progress_ctx, char *err, size_t errlen)
{
    heap_graph *g = calloc(1, sizeof *g);
    if (g == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    g->path = path;
    g->bytes = bytes;
    g->len = len;
    scan s = { .g = g, .err = err, .errlen = errlen, .progress = progress, .progress_ctx = progress_ctx };
    root_ids rids = { 0 };
    /* node 0: the virtual root */
    if (push_object(&s, 0, 0) != 0 || read_records(&s, &rids) != 0 || heap_scan_sort_objects(&s) != 0
        || heap_scan_resolve_names(&s) != 0 || heap_scan_lay_out_classes(&s) != 0)
        goto failed;
    for (uint32_t r = 0; r < g->nroots; r++)
        g->roots[r].node = heap_graph_node(g, rids.ids[r]);
    free(rids.ids);
    rids.ids = NULL;
    if (heap_scan_read_edges(&s) != 0)
        goto failed;
    /* each id is in its record: the array was for the many look-ups above */
    free(g->ids);
    g->ids = NULL;
    free(g->bucket_start);
    g->bucket_start = NULL;
    return g;
failed:
    free(rids.ids);
    heap_graph_free(g);
    return NULL;
}

void heap_graph_free(heap_graph *g)
{
    if (g == NULL)
        return;
    for (uint32_t i = 0; i < g->nowned; i++)
        free(g->owned[i]);
    free(g->owned);
    free(g->ids);
    free(g->at);
    free(g->at32);
    free(g->kind);
    free(g->site_of);
    free(g->class_of);
    free(g->size);
    free(g->edge_start);
    free(g->edges);
    free(g->weak);
    free(g->classes);
    free(g->refs);
    free(g->roots);
    free(g->frames);
    free(g->traces);
    free(g->serials);
    free(g->bucket_start);
    free(g->utf8_ids);
    free(g->utf8_at);
    free(g);
}
