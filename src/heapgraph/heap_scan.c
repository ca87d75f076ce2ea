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
 */
#include "heap_graph.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* qsort, which may not be given a NULL array even when empty */
static void sort_array(void *a, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(a, n, size, cmp);
}


enum {
    TAG_UTF8 = 0x01, TAG_LOAD_CLASS = 0x02, TAG_FRAME = 0x04, TAG_TRACE = 0x05,
    TAG_HEAP_DUMP = 0x0C, TAG_HEAP_DUMP_SEGMENT = 0x1C
};
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

static int fail_at(scan *s, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(scan *s, size_t offset, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(s->err, s->errlen, "%s: offset %zu (0x%zx): %s", s->g->path, offset, offset, what);
    return -1;
}

static int out_of_memory(scan *s)
{
    snprintf(s->err, s->errlen, "%s: out of memory reading the heap dump", s->g->path);
    return -1;
}

static size_t offset_of(const scan *s, const unsigned char *p) { return (size_t)(p - s->g->bytes); }

static int has(const cursor *c, size_t n) { return (size_t)(c->end - c->p) >= n; }

static uint64_t be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Reads n bytes big-endian; 0 and *ok cleared when they are not there. */
static uint64_t get(cursor *c, size_t n, int *ok)
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

static int value_size(const heap_graph *g, unsigned type)
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

/* VisualVM's size of a value of this type in the heap (references: oop size). */
static uint32_t heap_value_size(const heap_graph *g, unsigned type)
{
    return type == TYPE_OBJECT ? g->oop_size : (uint32_t)value_size(g, type);
}

static int grow(void **array, size_t *cap, size_t n, size_t elem)
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

static int own_string(scan *s, char *str)
{
    heap_graph *g = s->g;
    size_t cap = g->owned_cap;
    if (grow((void **)&g->owned, &cap, g->nowned, sizeof *g->owned) != 0) {
        free(str);
        return out_of_memory(s);
    }
    g->owned_cap = (uint32_t)cap;
    g->owned[g->nowned++] = str;
    return 0;
}

/* ------------------------------------------------------------ names */

static int cmp_u64_pair(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The key of element i of a sorted array (heap_graph_search). */
static uint64_t key_at(const unsigned char *base, uint32_t i, size_t stride, size_t key_offset, size_t key_size)
{
    if (key_size == 4) {
        uint32_t k4;
        memcpy(&k4, base + (size_t)i * stride + key_offset, 4);
        return k4;
    }
    uint64_t k8;
    memcpy(&k8, base + (size_t)i * stride + key_offset, 8);
    return k8;
}

uint32_t heap_graph_search(const void *base, uint32_t n, size_t stride, size_t key_offset, size_t key_size,
                           uint64_t key)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (key_at(base, mid, stride, key_offset, key_size) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && key_at(base, lo, stride, key_offset, key_size) == key ? lo : HG_NONE;
}

const unsigned char *heap_graph_utf8(const heap_graph *g, uint64_t id, size_t *n)
{
    uint32_t i = heap_graph_search(g->utf8_ids, g->nutf8, sizeof *g->utf8_ids, 0, 8, id);
    if (i == HG_NONE)
        return NULL;
    size_t at = g->utf8_at[i];         /* the body: id, then the characters */
    size_t body = (size_t)be(g->bytes + at - 4, 4);
    *n = body - g->id_size;
    return g->bytes + at + g->id_size;
}

/* A UTF8 record's text as a C string, owned by the graph; "?" when missing. */
static const char *name_of(scan *s, uint64_t id)
{
    size_t n;
    const unsigned char *b = heap_graph_utf8(s->g, id, &n);
    if (b == NULL)
        return "?";
    char *str = malloc(n + 1);
    if (str == NULL)
        return NULL;
    memcpy(str, b, n);
    str[n] = '\0';
    return own_string(s, str) == 0 ? str : NULL;
}

/* "java/util/HashMap" -> "java.util.HashMap"; "[[I" -> "int[][]";
 * "[Ljava/lang/String;" -> "java.lang.String[]". */
static const char *java_name(scan *s, uint64_t name_id)
{
    size_t n;
    const unsigned char *b = heap_graph_utf8(s->g, name_id, &n);
    if (b == NULL)
        return "?";
    size_t dims = 0;
    while (dims < n && b[dims] == '[')
        dims++;
    const char *elem = NULL;
    const unsigned char *base = b + dims;
    size_t base_n = n - dims;
    if (dims > 0 && base_n >= 1) {
        switch (base[0]) {
        case 'Z': elem = "boolean"; break;
        case 'B': elem = "byte"; break;
        case 'C': elem = "char"; break;
        case 'S': elem = "short"; break;
        case 'I': elem = "int"; break;
        case 'J': elem = "long"; break;
        case 'F': elem = "float"; break;
        case 'D': elem = "double"; break;
        case 'L':
            base++;
            base_n--;
            if (base_n > 0 && base[base_n - 1] == ';')
                base_n--;
            break;
        default: break;
        }
    }
    size_t elem_n = elem ? strlen(elem) : base_n;
    char *str = malloc(elem_n + 2 * dims + 1);
    if (str == NULL)
        return NULL;
    if (elem)
        memcpy(str, elem, elem_n);
    else
        for (size_t i = 0; i < base_n; i++)
            str[i] = base[i] == '/' ? '.' : (char)base[i];
    for (size_t i = 0; i < dims; i++)
        memcpy(str + elem_n + 2 * i, "[]", 2);
    str[elem_n + 2 * dims] = '\0';
    return own_string(s, str) == 0 ? str : NULL;
}

/* ------------------------------------------------------------ pass 1 */

static int push_object(scan *s, uint64_t id, size_t at)
{
    heap_graph *g = s->g;
    size_t cap = s->objects_cap;
    if (grow((void **)&g->ids, &cap, g->nnodes, sizeof *g->ids) != 0)
        return out_of_memory(s);
    if (cap != s->objects_cap) {
        uint64_t *a = realloc(g->at, cap * sizeof *g->at);
        if (a == NULL)
            return out_of_memory(s);
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
        return out_of_memory(s);
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
static int skip_constant_pool(scan *s, cursor *c, int *ok)
{
    uint32_t n = (uint32_t)get(c, 2, ok);
    for (uint32_t i = 0; i < n && *ok; i++) {
        get(c, 2, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(s->g, type);
        if (size < 0)
            return fail_at(s, offset_of(s, c->p) - 1, "constant pool entry of unknown type %u", type);
        get(c, (size_t)size, ok);
    }
    return 0;
}

static int skip_statics(scan *s, cursor *c, int *ok)
{
    uint32_t n = (uint32_t)get(c, 2, ok);
    for (uint32_t i = 0; i < n && *ok; i++) {
        get(c, s->g->id_size, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(s->g, type);
        if (size < 0)
            return fail_at(s, offset_of(s, c->p) - 1, "static field of unknown type %u", type);
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
    if (skip_constant_pool(s, c, ok) != 0 || skip_statics(s, c, ok) != 0)
        return -1;
    uint32_t nfields = (uint32_t)get(c, 2, ok);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < nfields && *ok; i++) {
        get(c, idn, ok);
        unsigned type = (unsigned)get(c, 1, ok);
        int size = value_size(g, type);
        if (size < 0)
            return fail_at(s, offset_of(s, c->p) - 1, "instance field of unknown type %u", type);
        bytes += (uint32_t)size;
    }
    if (!*ok)
        return 0;
    if (grow((void **)&g->classes, &s->classes_cap, g->nclasses, sizeof *g->classes) != 0)
        return out_of_memory(s);
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
                return fail_at(s, offset_of(s, c->p) - 1, "primitive array of unknown type %u", type);
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
            return fail_at(s, at, "unknown heap dump sub-record tag 0x%02x", tag);
        }
        if (!ok)
            return fail_at(s, at, "heap dump sub-record (tag 0x%02x) cut short at its record's end "
                           "(a truncated or corrupt file)", tag);
        if (is_root) {
            if (grow((void **)&rids->ids, &rids->cap, rids->n, sizeof *rids->ids) != 0)
                return out_of_memory(s);
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
        return fail_at(s, p, "the header is cut short");
    g->id_size = (uint32_t)be(b + p, 4);
    if (g->id_size != 4 && g->id_size != 8)
        return fail_at(s, p, "identifier size %u (4 or 8 expected)", g->id_size);
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
            return fail_at(s, p, "record header cut short (the file ends %zu bytes into it)", len - p);
        unsigned tag = b[p];
        size_t body_len = (size_t)be(b + p + 5, 4);
        size_t body = p + 9;
        if (body_len > len - body)
            return fail_at(s, p, "record (tag 0x%02x) of %zu bytes runs past the end of the file "
                           "(%zu bytes left): the file is truncated", tag, body_len, len - body);
        cursor c = { b + body, b + body + body_len };
        int ok = 1;
        switch (tag) {
        case TAG_UTF8: {
            if (body_len < idn)
                return fail_at(s, p, "UTF8 record shorter than an id");
            if (grow((void **)&g->utf8_ids, &s->utf8_cap, g->nutf8, sizeof *g->utf8_ids) != 0)
                return out_of_memory(s);
            size_t *a = realloc(g->utf8_at, s->utf8_cap * sizeof *a);
            if (a == NULL)
                return out_of_memory(s);
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
                return fail_at(s, p, "LOAD CLASS record cut short");
            if (grow((void **)&g->serials, &s->serials_cap, g->nserials, sizeof *g->serials) != 0)
                return out_of_memory(s);
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
                return fail_at(s, p, "STACK FRAME record cut short");
            if (grow((void **)&g->frames, &s->frames_cap, g->nframes, sizeof *g->frames) != 0)
                return out_of_memory(s);
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
                return fail_at(s, p, "STACK TRACE record cut short");
            if (grow((void **)&g->traces, &s->traces_cap, g->ntraces, sizeof *g->traces) != 0)
                return out_of_memory(s);
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

/* ------------------------------------------------------------ pass 2 */

typedef struct id_at {
    uint64_t id, at;
} id_at;

static int cmp_id_at(const void *a, const void *b)
{
    const id_at *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorts the objects by id (node 0 stays the virtual root) and builds the
 * bucket index over the ids' high bits. */
static int sort_objects(scan *s)
{
    heap_graph *g = s->g;
    uint32_t n = g->nnodes - 1;
    int sorted = 1;
    for (uint32_t i = 2; i <= n && sorted; i++)
        sorted = g->ids[i - 1] <= g->ids[i];
    if (!sorted) {
        id_at *pairs = malloc((size_t)n * sizeof *pairs);
        if (pairs == NULL)
            return out_of_memory(s);
        for (uint32_t i = 0; i < n; i++)
            pairs[i] = (id_at){ g->ids[i + 1], g->at[i + 1] };
        sort_array(pairs, n, sizeof *pairs, cmp_id_at);
        for (uint32_t i = 0; i < n; i++) {
            g->ids[i + 1] = pairs[i].id;
            g->at[i + 1] = pairs[i].at;
        }
        free(pairs);
    }
    uint64_t lo = n ? g->ids[1] : 0, hi = n ? g->ids[n] : 0;
    uint32_t nb = 2;
    while (nb < n / 2 + 1 && nb < (1u << 30))
        nb <<= 1;
    unsigned shift = 0;
    while (shift < 64 && ((hi - lo) >> shift) >= nb)
        shift++;
    g->min_id = lo;
    g->bucket_shift = shift;
    g->nbuckets = nb;
    g->bucket_start = malloc(((size_t)nb + 1) * sizeof *g->bucket_start);
    if (g->bucket_start == NULL)
        return out_of_memory(s);
    uint32_t b = 0;
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t bi = (uint32_t)((g->ids[i] - lo) >> shift);
        while (b <= bi)
            g->bucket_start[b++] = i;
    }
    while (b <= nb)
        g->bucket_start[b++] = n + 1;
    if (g->len <= UINT32_MAX) {
        /* offsets of 4 bytes: memory is what limits the dumps this reads */
        g->at32 = malloc((size_t)g->nnodes * sizeof *g->at32);
        if (g->at32 == NULL)
            return out_of_memory(s);
        for (uint32_t i = 0; i < g->nnodes; i++)
            g->at32[i] = (uint32_t)g->at[i];
        free(g->at);
        g->at = NULL;
    }
    return 0;
}

uint64_t heap_graph_id(const heap_graph *g, uint32_t node)
{
    if (g->ids)
        return g->ids[node];
    return node == 0 ? 0 : be(g->bytes + heap_graph_at(g, node) + 1, g->id_size);
}

uint32_t heap_graph_node(const heap_graph *g, uint64_t id)
{
    if (g->nnodes < 2 || id < g->min_id)
        return HG_NONE;
    uint64_t bi = (id - g->min_id) >> g->bucket_shift;
    if (bi >= g->nbuckets)
        return HG_NONE;
    /* the buckets go with the ids (heap_graph_read): then all nodes */
    uint32_t lo = g->bucket_start ? g->bucket_start[bi] : 1;
    uint32_t end = g->bucket_start ? g->bucket_start[bi + 1] : g->nnodes, hi = end;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (heap_graph_id(g, mid) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && heap_graph_id(g, lo) == id ? lo : HG_NONE;
}

static int cmp_class_id(const void *a, const void *b)
{
    const hg_class *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

uint32_t heap_graph_class_by_id(const heap_graph *g, uint64_t id)
{
    return heap_graph_search(g->classes, g->nsorted_classes, sizeof *g->classes, offsetof(hg_class, id), 8, id);
}

static int cmp_serial(const void *a, const void *b)
{
    const hg_serial_class *x = a, *y = b;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int cmp_frame(const void *a, const void *b)
{
    const hg_frame *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_trace(const void *a, const void *b)
{
    const hg_trace *x = a, *y = b;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* Sorts the names, then names classes and frames. */
static int resolve_names(scan *s)
{
    heap_graph *g = s->g;
    if (g->nutf8) {
        /* sort the UTF8 ids with their offsets */
        id_at *pairs = malloc(g->nutf8 * sizeof *pairs);
        if (pairs == NULL)
            return out_of_memory(s);
        for (uint32_t i = 0; i < g->nutf8; i++)
            pairs[i] = (id_at){ g->utf8_ids[i], g->utf8_at[i] };
        sort_array(pairs, g->nutf8, sizeof *pairs, cmp_u64_pair);
        for (uint32_t i = 0; i < g->nutf8; i++) {
            g->utf8_ids[i] = pairs[i].id;
            g->utf8_at[i] = (size_t)pairs[i].at;
        }
        free(pairs);
    }
    sort_array(g->classes, g->nclasses, sizeof *g->classes, cmp_class_id);
    g->nsorted_classes = g->nclasses;
    for (uint32_t i = 0; i < g->nserials; i++) {
        const char *name = java_name(s, (uint64_t)(uintptr_t)g->serials[i].name);
        if (name == NULL)
            return out_of_memory(s);
        g->serials[i].name = name;
        uint32_t k = heap_graph_class_by_id(g, g->serials[i].id);
        if (k != HG_NONE)
            g->classes[k].name = name;
    }
    sort_array(g->serials, g->nserials, sizeof *g->serials, cmp_serial);
    for (uint32_t i = 0; i < g->nframes; i++) {
        hg_frame *f = &g->frames[i];
        f->method = name_of(s, (uint64_t)(uintptr_t)f->method);
        f->file = f->file == NULL ? "" : name_of(s, (uint64_t)(uintptr_t)f->file);
        if (f->method == NULL || f->file == NULL)
            return out_of_memory(s);
    }
    sort_array(g->frames, g->nframes, sizeof *g->frames, cmp_frame);
    sort_array(g->traces, g->ntraces, sizeof *g->traces, cmp_trace);
    return 0;
}

static uint32_t align8(uint64_t v) { return (uint32_t)((v + 7) & ~(uint64_t)7); }

/* Parses a class's CLASS DUMP up to its statics (*statics) and its instance
 * fields (*fields); the dump was checked in pass 1. */
static void class_sections(const heap_graph *g, const hg_class *k, cursor *statics, cursor *fields)
{
    scan quiet = { .g = (heap_graph *)g };
    char buf[8];
    quiet.err = buf;
    quiet.errlen = sizeof buf;
    const unsigned char *end = g->bytes + g->len;
    cursor c = { g->bytes + k->dump_at + 1 + 7u * g->id_size + 8, end };
    int ok = 1;
    skip_constant_pool(&quiet, &c, &ok);
    *statics = c;
    skip_statics(&quiet, &c, &ok);
    *fields = c;
}

/* Each class's superclass, reference fields (offsets in its instances'
 * values, names) and instance size. */
static int lay_out_classes(scan *s)
{
    heap_graph *g = s->g;
    uint32_t object = HG_NONE;
    g->java_lang_class = HG_NONE;
    for (uint32_t i = 0; i < g->nclasses; i++) {
        hg_class *k = &g->classes[i];
        k->super = k->super_id ? heap_graph_class_by_id(g, k->super_id) : HG_NONE;
        k->node = heap_graph_node(g, k->id);
        if (strcmp(k->name, "java.lang.Object") == 0)
            object = i;
        else if (strcmp(k->name, "java.lang.Class") == 0)
            g->java_lang_class = i;
    }
    /* VisualVM's model: dumps whose java.lang.Object has a size give real
     * sizes (the header is java.lang.Object's size); others get the header
     * and field sizes added up, references of 4 bytes when the heap names
     * compressed oops. */
    int given = object != HG_NONE && g->classes[object].raw_size > 0;
    if (given) {
        g->min_instance = g->classes[object].raw_size;
        g->oop_size = g->id_size == 8 ? g->min_instance - g->id_size : g->id_size;
        if (g->oop_size != 4 && g->oop_size != 8)
            g->oop_size = g->id_size;
    } else {
        g->oop_size = g->id_size == 8 && s->compressed_hint ? 4 : g->id_size;
        g->min_instance = g->id_size + g->oop_size;
    }
    size_t refs_cap = 0;
    uint32_t *chain = malloc((size_t)(g->nclasses ? g->nclasses : 1) * sizeof *chain);
    if (chain == NULL)
        return out_of_memory(s);
    for (uint32_t i = 0; i < g->nclasses; i++) {
        hg_class *k = &g->classes[i];
        uint32_t depth = 0;
        for (uint32_t x = i; x != HG_NONE && depth < g->nclasses; x = g->classes[x].super)
            chain[depth++] = x;
        if (depth == g->nclasses && g->classes[chain[depth - 1]].super != HG_NONE) {
            free(chain);
            return fail_at(s, k->dump_at, "class %s's superclasses form a cycle", k->name);
        }
        k->first_ref = g->nrefs;
        uint32_t offset = 0;
        uint64_t heap_bytes = 0;
        for (uint32_t d = 0; d < depth; d++) {
            const hg_class *kd = &g->classes[chain[d]];
            int is_reference = strcmp(kd->name, "java.lang.ref.Reference") == 0;
            cursor statics, fields;
            class_sections(g, kd, &statics, &fields);
            int ok = 1;
            uint32_t n = (uint32_t)get(&fields, 2, &ok);
            for (uint32_t f = 0; f < n && ok; f++) {
                uint64_t name = get(&fields, g->id_size, &ok);
                unsigned type = (unsigned)get(&fields, 1, &ok);
                heap_bytes += heap_value_size(g, type);
                if (type == TYPE_OBJECT) {
                    if (grow((void **)&g->refs, &refs_cap, g->nrefs, sizeof *g->refs) != 0) {
                        free(chain);
                        return out_of_memory(s);
                    }
                    const char *fname = name_of(s, name);
                    if (fname == NULL) {
                        free(chain);
                        return out_of_memory(s);
                    }
                    /* a Reference's referent does not keep its object alive */
                    g->refs[g->nrefs++] = (hg_ref_field){ .offset = offset, .name = fname,
                                                          .weak = is_reference && strcmp(fname, "referent") == 0 };
                }
                offset += (uint32_t)value_size(g, type);
            }
        }
        k->nrefs = g->nrefs - k->first_ref;
        k->value_bytes = offset;
        k->shallow = given ? k->raw_size : align8(g->min_instance + heap_bytes);
    }
    free(chain);
    return 0;
}

/* ------------------------------------------------------------ pass 3 */

typedef struct edge_sink {
    scan     *s;
    size_t    cap, weak_cap;
} edge_sink;

static int add_edge(edge_sink *e, uint64_t id, int weak)
{
    if (id == 0)
        return 0;
    heap_graph *g = e->s->g;
    uint32_t to = heap_graph_node(g, id);
    if (to == HG_NONE) {
        g->dangling++;
        return 0;
    }
    if (g->nedges >= UINT32_MAX - 1)
        return fail_at(e->s, 0, "more than 4 billion references");
    if (grow((void **)&g->edges, &e->cap, (size_t)g->nedges, sizeof *g->edges) != 0)
        return out_of_memory(e->s);
    if (weak) {
        size_t bytes = (size_t)(g->nedges / 8 + 1);
        if (bytes > e->weak_cap) {
            size_t ncap = bytes * 2 + 64;
            unsigned char *w = realloc(g->weak, ncap);
            if (w == NULL)
                return out_of_memory(e->s);
            memset(w + e->weak_cap, 0, ncap - e->weak_cap);
            g->weak = w;
            e->weak_cap = ncap;
        }
        g->weak[g->nedges / 8] |= (unsigned char)(1u << (g->nedges % 8));
    }
    g->edges[g->nedges++] = to;
    return 0;
}

static const char *const PRIM_ARRAY_NAMES[12] = {
    [4] = "boolean[]", [5] = "char[]", [6] = "float[]", [7] = "double[]", [8] = "byte[]",
    [9] = "short[]", [10] = "int[]", [11] = "long[]"
};

/* The class of a primitive array type (checked in pass 1), looked up once:
 * stored plus one, 0 meaning not looked up yet. */
static uint32_t prim_class(scan *s, unsigned type)
{
    if (s->prim_classes[type] == 0) {
        s->prim_classes[type] = HG_NONE;
        for (uint32_t i = 0; i < s->g->nclasses; i++)
            if (strcmp(s->g->classes[i].name, PRIM_ARRAY_NAMES[type]) == 0) {
                s->prim_classes[type] = i + 1;
                break;
            }
    }
    return s->prim_classes[type] == HG_NONE ? HG_NONE : s->prim_classes[type] - 1;
}

/* A class for objects whose class the dump does not hold (a primitive
 * array type HotSpot did not dump as a class). */
static uint32_t synthetic_class(scan *s, const char *name)
{
    heap_graph *g = s->g;
    for (uint32_t i = 0; i < g->nclasses; i++)
        if (g->classes[i].id == 0 && strcmp(g->classes[i].name, name) == 0)
            return i;
    if (grow((void **)&g->classes, &s->classes_cap, g->nclasses, sizeof *g->classes) != 0)
        return HG_NONE;
    g->classes[g->nclasses] = (hg_class){ .name = name, .node = HG_NONE, .super = HG_NONE,
                                          .layout_done = 1 };
    return g->nclasses++;
}

/* At most how many references the graph will hold (so that the edge array
 * is allocated once, not doubled past the need): roots, instances' reference
 * fields and class, object arrays' non-null elements, classes' statics. */
static uint64_t count_edges(scan *s)
{
    const heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    uint64_t n = g->nroots;
    uint32_t step = g->nnodes / 50 + 1;
    for (uint32_t i = 1; i < g->nnodes; i++) {
        if (s->progress && i % step == 0)
            s->progress(s->progress_ctx, "counting references", (double)i / g->nnodes);
        const unsigned char *rec = g->bytes + heap_graph_at(g, i);
        if (rec[0] == HG_INSTANCE) {
            uint32_t k = heap_graph_class_by_id(g, be(rec + 1 + idn + 4, idn));
            n += 1 + (k != HG_NONE ? g->classes[k].nrefs : 0);
        } else if (rec[0] == HG_OBJ_ARRAY) {
            uint32_t len = (uint32_t)be(rec + 1 + idn + 4, 4);
            const unsigned char *elems = rec + 1 + 2u * idn + 8;
            for (uint32_t x = 0; x < len; x++)
                n += be(elems + (size_t)x * idn, idn) != 0;
        } else if (rec[0] == HG_CLASS) {
            uint32_t k = heap_graph_class_by_id(g, g->ids[i]);
            if (k == HG_NONE)
                continue;
            cursor statics, fields;
            class_sections(g, &g->classes[k], &statics, &fields);
            n += be(statics.p, 2);
        }
    }
    return n;
}

static int read_edges(scan *s)
{
    heap_graph *g = s->g;
    uint32_t idn = g->id_size;
    edge_sink e = { .s = s };
    uint64_t bound = count_edges(s);
    if (bound >= UINT32_MAX - 1)
        return fail_at(s, 0, "more than 4 billion references");
    e.cap = (size_t)bound + 1;
    if ((g->edges = malloc(e.cap * sizeof *g->edges)) == NULL)
        return out_of_memory(s);
    g->kind = malloc(g->nnodes);
    g->class_of = malloc((size_t)g->nnodes * sizeof *g->class_of);
    g->size = malloc((size_t)g->nnodes * sizeof *g->size);
    g->edge_start = malloc(((size_t)g->nnodes + 1) * sizeof *g->edge_start);
    if (g->kind == NULL || g->class_of == NULL || g->size == NULL || g->edge_start == NULL)
        return out_of_memory(s);
    g->kind[0] = 0;
    g->class_of[0] = HG_NONE;
    g->size[0] = 0;
    g->edge_start[0] = 0;
    /* the virtual root: every GC root's object */
    for (uint32_t r = 0; r < g->nroots; r++)
        if (g->roots[r].node != HG_NONE) {
            if (grow((void **)&g->edges, &e.cap, (size_t)g->nedges, sizeof *g->edges) != 0)
                return out_of_memory(s);
            g->edges[g->nedges++] = g->roots[r].node;
        }
    g->root_edges = (uint32_t)g->nedges;
    const unsigned char *end = g->bytes + g->len;
    uint32_t step = g->nnodes / 50 + 1;
    for (uint32_t i = 1; i < g->nnodes; i++) {
        g->edge_start[i] = (uint32_t)g->nedges;
        size_t at = heap_graph_at(g, i);
        cursor c = { g->bytes + at + 1, end };
        int ok = 1;
        unsigned tag = g->bytes[at];
        uint32_t k = HG_NONE, size = 0;
        if (tag == HG_CLASS) {
            if (g->java_lang_class == HG_NONE
                && (g->java_lang_class = synthetic_class(s, "java.lang.Class")) == HG_NONE)
                return out_of_memory(s);
            uint32_t self = heap_graph_class_by_id(g, g->ids[i]);
            if (self == HG_NONE)
                return fail_at(s, at, "class dump 0x%llx shares its id with another object",
                               (unsigned long long)g->ids[i]);
            const hg_class *kc = &g->classes[self];
            k = g->java_lang_class;
            size = k != HG_NONE ? g->classes[k].shallow : g->min_instance;
            cursor statics, fields;
            class_sections(g, kc, &statics, &fields);
            uint32_t n = (uint32_t)get(&statics, 2, &ok);
            for (uint32_t f = 0; f < n && ok; f++) {
                get(&statics, idn, &ok);
                unsigned type = (unsigned)get(&statics, 1, &ok);
                uint64_t v = get(&statics, (size_t)value_size(g, type), &ok);
                if (type == TYPE_OBJECT && add_edge(&e, v, 0) != 0)
                    return -1;
            }
        } else if (tag == HG_INSTANCE) {
            get(&c, idn + 4, &ok);
            uint64_t class_id = get(&c, idn, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            k = heap_graph_class_by_id(g, class_id);
            if (k == HG_NONE)
                return fail_at(s, at, "instance 0x%llx of class 0x%llx, which the dump does not hold",
                               (unsigned long long)g->ids[i], (unsigned long long)class_id);
            const hg_class *kc = &g->classes[k];
            if (kc->value_bytes > n)
                return fail_at(s, at, "instance of %s holds %u bytes of values, its class's fields "
                               "take %u", kc->name, n, kc->value_bytes);
            size = kc->shallow;
            /* an instance refers to its class, as VisualVM's graph has it */
            if (add_edge(&e, class_id, 0) != 0)
                return -1;
            for (uint32_t r = 0; r < kc->nrefs; r++)
                if (add_edge(&e, be(c.p + g->refs[kc->first_ref + r].offset, idn),
                             g->refs[kc->first_ref + r].weak) != 0)
                    return -1;
        } else if (tag == HG_OBJ_ARRAY) {
            get(&c, idn + 4, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            uint64_t class_id = get(&c, idn, &ok);
            k = heap_graph_class_by_id(g, class_id);
            if (k == HG_NONE && (k = synthetic_class(s, "java.lang.Object[]")) == HG_NONE)
                return out_of_memory(s);
            size = align8((uint64_t)g->min_instance + 4 + (uint64_t)n * g->oop_size);
            for (uint32_t x = 0; x < n; x++)
                if (add_edge(&e, be(c.p + (size_t)x * idn, idn), 0) != 0)
                    return -1;
        } else {
            get(&c, idn + 4, &ok);
            uint32_t n = (uint32_t)get(&c, 4, &ok);
            unsigned type = (unsigned)get(&c, 1, &ok);
            k = prim_class(s, type);
            if (k == HG_NONE) {
                if ((k = synthetic_class(s, PRIM_ARRAY_NAMES[type])) == HG_NONE)
                    return out_of_memory(s);
                s->prim_classes[type] = k + 1;
            }
            size = align8((uint64_t)g->min_instance + 4 + (uint64_t)n * (uint32_t)value_size(g, type));
        }
        if (tag != HG_CLASS && g->ntraces > 0) {
            uint32_t t = heap_graph_search(g->traces, g->ntraces, sizeof *g->traces, offsetof(hg_trace, serial), 4,
                                           be(g->bytes + at + 1 + idn, 4));
            if (t != HG_NONE && g->traces[t].nframes > 0) {
                if (g->site_of == NULL) {
                    if ((g->site_of = malloc((size_t)g->nnodes * sizeof *g->site_of)) == NULL)
                        return out_of_memory(s);
                    for (uint32_t x = 0; x < g->nnodes; x++)
                        g->site_of[x] = HG_NONE;
                }
                g->site_of[i] = t;
            }
        }
        g->kind[i] = (unsigned char)tag;
        g->class_of[i] = k;
        g->size[i] = size;
        if (s->progress && i % step == 0)
            s->progress(s->progress_ctx, "references", (double)i / g->nnodes);
    }
    g->edge_start[g->nnodes] = (uint32_t)g->nedges;
    if (g->weak) {
        /* the bitmap covers every edge */
        size_t bytes = (size_t)(g->nedges / 8 + 1);
        if (bytes > e.weak_cap) {
            unsigned char *w = realloc(g->weak, bytes);
            if (w == NULL)
                return out_of_memory(s);
            memset(w + e.weak_cap, 0, bytes - e.weak_cap);
            g->weak = w;
        }
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
    if (push_object(&s, 0, 0) != 0 || read_records(&s, &rids) != 0 || sort_objects(&s) != 0
        || resolve_names(&s) != 0 || lay_out_classes(&s) != 0)
        goto failed;
    for (uint32_t r = 0; r < g->nroots; r++)
        g->roots[r].node = heap_graph_node(g, rids.ids[r]);
    free(rids.ids);
    rids.ids = NULL;
    if (read_edges(&s) != 0)
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
