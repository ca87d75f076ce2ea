/*
 * heap_scan_index: pass 2 of heap_scan (heap_scan.c): the objects sorted by
 * id and the look-ups by id (objects, classes), the UTF8 names sorted and
 * given to classes and frames, each class's layout (its reference fields
 * through its superclasses) and instance size.
 */
#include "heap_scan_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* qsort, which may not be given a NULL array even when empty */
static void sort_array(void *a, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(a, n, size, cmp);
}

/* VisualVM's size of a value of this type in the heap (references: oop size). */
static uint32_t heap_value_size(const heap_graph *g, unsigned type)
{
    return type == TYPE_OBJECT ? g->oop_size : (uint32_t)value_size(g, type);
}

static int own_string(scan *s, char *str)
{
    heap_graph *g = s->g;
    size_t cap = g->owned_cap;
    if (grow((void **)&g->owned, &cap, g->nowned, sizeof *g->owned) != 0) {
        free(str);
        return heap_scan_out_of_memory(s);
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
int heap_scan_sort_objects(scan *s)
{
    heap_graph *g = s->g;
    uint32_t n = g->nnodes - 1;
    int sorted = 1;
    for (uint32_t i = 2; i <= n && sorted; i++)
        sorted = g->ids[i - 1] <= g->ids[i];
    if (!sorted) {
        id_at *pairs = malloc((size_t)n * sizeof *pairs);
        if (pairs == NULL)
            return heap_scan_out_of_memory(s);
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
        return heap_scan_out_of_memory(s);
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
            return heap_scan_out_of_memory(s);
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
int heap_scan_resolve_names(scan *s)
{
    heap_graph *g = s->g;
    if (g->nutf8) {
        /* sort the UTF8 ids with their offsets */
        id_at *pairs = malloc(g->nutf8 * sizeof *pairs);
        if (pairs == NULL)
            return heap_scan_out_of_memory(s);
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
            return heap_scan_out_of_memory(s);
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
            return heap_scan_out_of_memory(s);
    }
    sort_array(g->frames, g->nframes, sizeof *g->frames, cmp_frame);
    sort_array(g->traces, g->ntraces, sizeof *g->traces, cmp_trace);
    return 0;
}

/* Parses a class's CLASS DUMP up to its statics (*statics) and its instance
 * fields (*fields); the dump was checked in pass 1. */
void heap_scan_class_sections(const heap_graph *g, const hg_class *k, cursor *statics, cursor *fields)
{
    scan quiet = { .g = (heap_graph *)g };
    char buf[8];
    quiet.err = buf;
    quiet.errlen = sizeof buf;
    const unsigned char *end = g->bytes + g->len;
    cursor c = { g->bytes + k->dump_at + 1 + 7u * g->id_size + 8, end };
    int ok = 1;
    heap_scan_skip_constant_pool(&quiet, &c, &ok);
    *statics = c;
    heap_scan_skip_statics(&quiet, &c, &ok);
    *fields = c;
}

/* Each class's superclass, reference fields (offsets in its instances'
 * values, names) and instance size. */
int heap_scan_lay_out_classes(scan *s)
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
        return heap_scan_out_of_memory(s);
    for (uint32_t i = 0; i < g->nclasses; i++) {
        hg_class *k = &g->classes[i];
        uint32_t depth = 0;
        for (uint32_t x = i; x != HG_NONE && depth < g->nclasses; x = g->classes[x].super)
            chain[depth++] = x;
        if (depth == g->nclasses && g->classes[chain[depth - 1]].super != HG_NONE) {
            free(chain);
            return heap_scan_fail_at(s, k->dump_at, "class %s's superclasses form a cycle", k->name);
        }
        k->first_ref = g->nrefs;
        uint32_t offset = 0;
        uint64_t heap_bytes = 0;
        for (uint32_t d = 0; d < depth; d++) {
            const hg_class *kd = &g->classes[chain[d]];
            int is_reference = strcmp(kd->name, "java.lang.ref.Reference") == 0;
            cursor statics, fields;
            heap_scan_class_sections(g, kd, &statics, &fields);
            int ok = 1;
            uint32_t n = (uint32_t)get(&fields, 2, &ok);
            for (uint32_t f = 0; f < n && ok; f++) {
                uint64_t name = get(&fields, g->id_size, &ok);
                unsigned type = (unsigned)get(&fields, 1, &ok);
                heap_bytes += heap_value_size(g, type);
                if (type == TYPE_OBJECT) {
                    if (grow((void **)&g->refs, &refs_cap, g->nrefs, sizeof *g->refs) != 0) {
                        free(chain);
                        return heap_scan_out_of_memory(s);
                    }
                    const char *fname = name_of(s, name);
                    if (fname == NULL) {
                        free(chain);
                        return heap_scan_out_of_memory(s);
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
