/*
 * heap_paths: what a path to a GC root says, read again from the dump's
 * bytes: how one object refers to the next (a field, a static field, an
 * array index), a Java frame as "Class.method(File.java:line)", a thread's
 * name from its Thread object, a String's characters.
 */
#include "heap_graph.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static uint64_t be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static size_t value_size(const heap_graph *g, unsigned type)
{
    switch (type) {
    case 2:          return g->id_size;
    case 4: case 8:  return 1;
    case 5: case 9:  return 2;
    case 6: case 10: return 4;
    default:         return 8;     /* 7, 11: the dump was checked when read */
    }
}

/* An instance's values: *values at its first value byte. */
static int instance_values(const heap_graph *g, uint32_t node, const unsigned char **values)
{
    if (node == 0 || node >= g->nnodes || g->kind[node] != HG_INSTANCE)
        return -1;
    *values = g->bytes + heap_graph_at(g, node) + 1 + 2u * g->id_size + 8;
    return 0;
}

/* A class dump's statics (at their count), past its constant pool; and its
 * instance fields (at their count), past its statics. heap_scan checked both. */
static const unsigned char *class_statics(const heap_graph *g, const hg_class *k)
{
    const unsigned char *p = g->bytes + k->dump_at + 1 + 7u * g->id_size + 8;
    unsigned n = (unsigned)be(p, 2);
    p += 2;
    for (unsigned i = 0; i < n; i++)
        p += 3 + value_size(g, p[2]);
    return p;
}

static const unsigned char *class_fields(const heap_graph *g, const hg_class *k)
{
    const unsigned char *p = class_statics(g, k);
    unsigned n = (unsigned)be(p, 2);
    p += 2;
    for (unsigned i = 0; i < n; i++)
        p += g->id_size + 1 + value_size(g, p[g->id_size]);
    return p;
}

static const char *utf8_text(const heap_graph *g, uint64_t id, char *buf, size_t size)
{
    size_t n;
    const unsigned char *text = heap_graph_utf8(g, id, &n);
    if (text == NULL)
        return "?";
    if (n >= size)
        n = size - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return buf;
}

int heap_graph_describe_edge(const heap_graph *g, uint32_t from, uint32_t to, const char **field,
                             int *is_static, int64_t *index, char *name, size_t name_size)
{
    uint64_t want = heap_graph_id(g, to);
    *field = NULL;
    *is_static = 0;
    *index = -1;
    if (from == 0 || from >= g->nnodes)
        return -1;
    const unsigned char *rec = g->bytes + heap_graph_at(g, from);
    uint32_t idn = g->id_size;
    switch (rec[0]) {
    case HG_INSTANCE: {
        const hg_class *k = &g->classes[g->class_of[from]];
        const unsigned char *values;
        if (instance_values(g, from, &values) != 0)
            return -1;
        for (uint32_t r = 0; r < k->nrefs; r++)
            if (be(values + g->refs[k->first_ref + r].offset, idn) == want) {
                *field = g->refs[k->first_ref + r].name;
                return 0;
            }
        if (k->id == want) {
            *field = "<class>";     /* the edge from an instance to its class */
            return 0;
        }
        return -1;
    }
    case HG_OBJ_ARRAY: {
        uint32_t n = (uint32_t)be(rec + 1 + idn + 4, 4);
        const unsigned char *elems = rec + 1 + 2u * idn + 8;
        for (uint32_t i = 0; i < n; i++)
            if (be(elems + (size_t)i * idn, idn) == want) {
                *index = i;
                return 0;
            }
        return -1;
    }
    case HG_CLASS: {
        uint32_t k = heap_graph_class_by_id(g, heap_graph_id(g, from));
        if (k == HG_NONE)
            return -1;
        const unsigned char *p = class_statics(g, &g->classes[k]);
        unsigned n = (unsigned)be(p, 2);
        p += 2;
        for (unsigned i = 0; i < n; i++) {
            uint64_t name_id = be(p, idn);
            unsigned type = p[idn];
            p += idn + 1;
            if (type == 2 && be(p, idn) == want) {
                *field = utf8_text(g, name_id, name, name_size);
                *is_static = 1;
                return 0;
            }
            p += value_size(g, type);
        }
        return -1;
    }
    default:
        return -1;
    }
}

/* The value of a named field of an instance (through its superclasses):
 * its bytes and type, or NULL. */
static const unsigned char *field_value(const heap_graph *g, uint32_t node, const char *name, unsigned *type)
{
    const unsigned char *values;
    if (instance_values(g, node, &values) != 0)
        return NULL;
    char buf[256];
    size_t offset = 0;
    uint32_t depth = 0;
    for (uint32_t k = g->class_of[node]; k != HG_NONE && depth < g->nclasses; k = g->classes[k].super, depth++) {
        if (g->classes[k].id == 0)
            return NULL;
        const unsigned char *p = class_fields(g, &g->classes[k]);
        unsigned n = (unsigned)be(p, 2);
        p += 2;
        for (unsigned i = 0; i < n; i++) {
            uint64_t name_id = be(p, g->id_size);
            unsigned t = p[g->id_size];
            p += g->id_size + 1;
            if (strcmp(utf8_text(g, name_id, buf, sizeof buf), name) == 0) {
                *type = t;
                return values + offset;
            }
            offset += value_size(g, t);
        }
    }
    return NULL;
}

static void put_utf8(char *buf, size_t size, size_t *n, unsigned c)
{
    char tmp[4];
    size_t k;
    if (c < 0x80) {
        tmp[0] = (char)c;
        k = 1;
    } else if (c < 0x800) {
        tmp[0] = (char)(0xC0 | c >> 6);
        tmp[1] = (char)(0x80 | (c & 0x3F));
        k = 2;
    } else {
        tmp[0] = (char)(0xE0 | c >> 12);
        tmp[1] = (char)(0x80 | (c >> 6 & 0x3F));
        tmp[2] = (char)(0x80 | (c & 0x3F));
        k = 3;
    }
    if (*n + k < size) {
        memcpy(buf + *n, tmp, k);
        *n += k;
    }
}

const char *heap_graph_string(const heap_graph *g, uint32_t node, char *buf, size_t size)
{
    if (size == 0 || node == 0 || node >= g->nnodes || g->class_of[node] == HG_NONE
        || strcmp(g->classes[g->class_of[node]].name, "java.lang.String") != 0)
        return NULL;
    unsigned type, coder_type;
    const unsigned char *v = field_value(g, node, "value", &type);
    const unsigned char *coder = field_value(g, node, "coder", &coder_type);
    if (v == NULL || type != 2)
        return NULL;
    uint32_t arr = heap_graph_node(g, be(v, g->id_size));
    if (arr == HG_NONE || g->kind[arr] != HG_PRIM_ARRAY)
        return NULL;
    const unsigned char *rec = g->bytes + heap_graph_at(g, arr);
    uint32_t n = (uint32_t)be(rec + 1 + g->id_size + 4, 4);
    unsigned elem = rec[1 + g->id_size + 8];
    const unsigned char *chars = rec + 1 + g->id_size + 9;
    int utf16 = elem == 5 || (coder != NULL && coder_type == 8 && coder[0] == 1);
    size_t out = 0;
    if (utf16) {
        /* char[] values are big-endian in the dump; a byte[] with coder
         * UTF16 holds the JVM's native order: little-endian on x86 */
        for (uint32_t i = 0; i + 1 < (elem == 5 ? 2 * n : n); i += 2) {
            unsigned c = elem == 5 ? (unsigned)chars[i] << 8 | chars[i + 1]
                                   : (unsigned)chars[i + 1] << 8 | chars[i];
            put_utf8(buf, size, &out, c);
        }
    } else if (elem == 8) {
        for (uint32_t i = 0; i < n; i++)
            put_utf8(buf, size, &out, chars[i]);
    } else {
        return NULL;
    }
    buf[out] = '\0';
    return buf;
}

const char *heap_graph_thread_name(const heap_graph *g, uint32_t thread_serial, char *buf, size_t size)
{
    buf[0] = '\0';
    if (g->thread_names) {
        uint32_t i = heap_graph_search(g->thread_names, g->nthread_names, sizeof *g->thread_names,
                                       offsetof(hg_thread_name, serial), 4, thread_serial);
        if (i != HG_NONE)
            snprintf(buf, size, "%s", g->thread_names[i].name);
        return buf;
    }
    for (uint32_t r = 0; r < g->nroots; r++) {
        const hg_root *root = &g->roots[r];
        if (root->kind != HG_ROOT_THREAD_OBJECT || root->thread_serial != thread_serial
            || root->node == HG_NONE)
            continue;
        unsigned type;
        const unsigned char *v = field_value(g, root->node, "name", &type);
        if (v != NULL && type == 2) {
            uint32_t s = heap_graph_node(g, be(v, g->id_size));
            if (s != HG_NONE && heap_graph_string(g, s, buf, size) != NULL)
                return buf;
        }
    }
    buf[0] = '\0';
    return buf;
}

static const hg_trace *trace_by_serial(const heap_graph *g, uint32_t serial)
{
    uint32_t i = heap_graph_search(g->traces, g->ntraces, sizeof *g->traces, offsetof(hg_trace, serial), 4, serial);
    return i == HG_NONE ? NULL : &g->traces[i];
}

static const hg_frame *frame_by_id(const heap_graph *g, uint64_t id)
{
    uint32_t i = heap_graph_search(g->frames, g->nframes, sizeof *g->frames, offsetof(hg_frame, id), 8, id);
    return i == HG_NONE ? NULL : &g->frames[i];
}

static const char *class_of_serial(const heap_graph *g, uint32_t serial)
{
    uint32_t i = heap_graph_search(g->serials, g->nserials, sizeof *g->serials,
                                   offsetof(hg_serial_class, serial), 4, serial);
    return i == HG_NONE ? "?" : g->serials[i].name;
}

const char *heap_graph_frame_text(const heap_graph *g, uint32_t thread_serial, uint32_t depth,
                                  char *buf, size_t size)
{
    /* the thread's stack: the trace its ROOT THREAD OBJECT names, else a
     * trace of that thread */
    const hg_trace *t = NULL;
    for (uint32_t r = 0; r < g->nroots && t == NULL; r++)
        if (g->roots[r].kind == HG_ROOT_THREAD_OBJECT && g->roots[r].thread_serial == thread_serial)
            t = trace_by_serial(g, g->roots[r].frame);
    for (uint32_t i = 0; i < g->ntraces && t == NULL; i++)
        if (g->traces[i].thread_serial == thread_serial && g->traces[i].nframes > 0)
            t = &g->traces[i];
    if (t == NULL) {
        snprintf(buf, size, "?");
        return buf;
    }
    return heap_graph_trace_frame_text(g, (uint32_t)(t - g->traces), depth, buf, size);
}

const char *heap_graph_trace_frame_text(const heap_graph *g, uint32_t trace, uint32_t depth, char *buf, size_t size)
{
    const hg_trace *t = &g->traces[trace];
    if (depth >= t->nframes) {
        snprintf(buf, size, "?");
        return buf;
    }
    const hg_frame *f = frame_by_id(g, be(g->bytes + t->frame_ids_at + (size_t)depth * g->id_size, g->id_size));
    if (f == NULL) {
        snprintf(buf, size, "?");
        return buf;
    }
    const char *cls = class_of_serial(g, f->class_serial);
    if (f->line > 0)
        snprintf(buf, size, "%s.%s(%s:%d)", cls, f->method, f->file, f->line);
    else if (f->line == -3)
        snprintf(buf, size, "%s.%s(Native Method)", cls, f->method);
    else if (f->file[0] != '\0' && strcmp(f->file, "?") != 0)
        snprintf(buf, size, "%s.%s(%s)", cls, f->method, f->file);
    else
        snprintf(buf, size, "%s.%s(Unknown Source)", cls, f->method);
    return buf;
}
