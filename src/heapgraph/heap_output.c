/*
 * heap_output: `hprof heap`'s reports, text and JSON, from a heap_analysis.
 */
#include "heap_analysis.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dominators.h"
#include "heap_suspects.h"

static const char *root_kind_name(unsigned kind)
{
    switch (kind) {
    case HG_ROOT_JNI_GLOBAL:    return "JNI global";
    case HG_ROOT_JNI_LOCAL:     return "JNI local";
    case HG_ROOT_JAVA_FRAME:    return "Java frame";
    case HG_ROOT_NATIVE_STACK:  return "native stack";
    case HG_ROOT_STICKY_CLASS:  return "system class";
    case HG_ROOT_THREAD_BLOCK:  return "thread block";
    case HG_ROOT_MONITOR_USED:  return "monitor";
    case HG_ROOT_THREAD_OBJECT: return "thread";
    default:                    return "unknown";
    }
}

/* Which root record names a root object: the most telling kind (a frame
 * says where the program holds it). */
static const hg_root *root_of(const heap_graph *g, uint32_t node)
{
    static const unsigned char rank[256] = {
        [HG_ROOT_JAVA_FRAME] = 9, [HG_ROOT_JNI_LOCAL] = 8, [HG_ROOT_NATIVE_STACK] = 7,
        [HG_ROOT_THREAD_BLOCK] = 6, [HG_ROOT_JNI_GLOBAL] = 5, [HG_ROOT_MONITOR_USED] = 4,
        [HG_ROOT_THREAD_OBJECT] = 3, [HG_ROOT_STICKY_CLASS] = 2, [HG_ROOT_UNKNOWN] = 1
    };
    const hg_root *best = NULL;
    for (uint32_t r = 0; r < g->nroots; r++)
        if (g->roots[r].node == node && (best == NULL || rank[g->roots[r].kind] > rank[best->kind]))
            best = &g->roots[r];
    return best;
}

/* ---- a path's steps, as text or JSON */

typedef struct step {
    enum { STEP_ROOT, STEP_FIELD, STEP_STATIC, STEP_INDEX, STEP_UNKNOWN } kind;
    const char *root_kind, *class_name, *field;
    char        thread[128], frame[512], name[256];
    int64_t     index;
} step;

static void describe_root(const heap_graph *g, uint32_t node, step *s)
{
    memset(s, 0, sizeof *s);
    s->kind = STEP_ROOT;
    const hg_root *r = root_of(g, node);
    /* a class no GC root reaches is a root of its own (heap_graph.h) */
    s->root_kind = r ? root_kind_name(r->kind) : g->kind[node] == HG_CLASS ? "class" : "unknown";
    if (r == NULL)
        return;
    if (r->kind == HG_ROOT_JAVA_FRAME || r->kind == HG_ROOT_JNI_LOCAL || r->kind == HG_ROOT_NATIVE_STACK
        || r->kind == HG_ROOT_THREAD_BLOCK || r->kind == HG_ROOT_THREAD_OBJECT)
        heap_graph_thread_name(g, r->thread_serial, s->thread, sizeof s->thread);
    if (r->kind == HG_ROOT_JAVA_FRAME || r->kind == HG_ROOT_JNI_LOCAL)
        heap_graph_frame_text(g, r->thread_serial, r->frame, s->frame, sizeof s->frame);
}

static void describe_step(const heap_graph *g, uint32_t from, uint32_t to, step *s)
{
    memset(s, 0, sizeof *s);
    int is_static = 0;
    if (g->kind[from] == HG_CLASS) {
        uint32_t k = heap_graph_class_by_id(g, heap_graph_id(g, from));
        s->class_name = k != HG_NONE ? g->classes[k].name : "?";
    } else {
        s->class_name = g->classes[g->class_of[from]].name;
    }
    if (heap_graph_describe_edge(g, from, to, &s->field, &is_static, &s->index, s->name, sizeof s->name) != 0)
        s->kind = STEP_UNKNOWN;
    else if (s->index >= 0)
        s->kind = STEP_INDEX;
    else
        s->kind = is_static ? STEP_STATIC : STEP_FIELD;
}

/* The nodes from a root to node, root first, into a new array; *n set. */
static uint32_t *path_nodes(const heap_analysis *a, uint32_t node, uint32_t *n)
{
    uint32_t len = 0;
    for (uint32_t v = node; v != 0 && v != HG_NONE && len < a->g->nnodes; v = a->path_parent[v])
        len++;
    uint32_t *p = malloc((size_t)(len ? len : 1) * sizeof *p);
    if (p == NULL) {
        *n = 0;
        return NULL;
    }
    uint32_t i = len;
    for (uint32_t v = node; i > 0; v = a->path_parent[v])
        p[--i] = v;
    *n = len;
    return p;
}

void heap_json_string(FILE *out, const char *s)
{
    heap_json_text(out, s, 0);
}

void heap_json_text(FILE *out, const char *s, int in_html)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || (in_html && (*p == '<' || *p == '>' || *p == '&')))
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_step(FILE *out, const step *s, int in_html)
{
    switch (s->kind) {
    case STEP_ROOT:
        fputs("{\"root\": ", out);
        heap_json_text(out, s->root_kind, in_html);
        if (s->thread[0]) {
            fputs(", \"thread\": ", out);
            heap_json_text(out, s->thread, in_html);
        }
        if (s->frame[0]) {
            fputs(", \"frame\": ", out);
            heap_json_text(out, s->frame, in_html);
        }
        fputc('}', out);
        break;
    case STEP_INDEX:
        fputs("{\"class\": ", out);
        heap_json_text(out, s->class_name, in_html);
        fprintf(out, ", \"index\": %" PRId64 "}", s->index);
        break;
    case STEP_FIELD: case STEP_STATIC:
        fputs("{\"class\": ", out);
        heap_json_text(out, s->class_name, in_html);
        fputs(s->kind == STEP_STATIC ? ", \"static\": " : ", \"field\": ", out);
        heap_json_text(out, s->field, in_html);
        fputc('}', out);
        break;
    default:
        fputs("{\"class\": ", out);
        heap_json_text(out, s->class_name, in_html);
        fputs(", \"field\": \"?\"}", out);
        break;
    }
}

static void text_step(FILE *out, const step *s)
{
    switch (s->kind) {
    case STEP_ROOT:
        fprintf(out, "      root: %s", s->root_kind);
        if (s->thread[0])
            fprintf(out, ", thread \"%s\"", s->thread);
        if (s->frame[0])
            fprintf(out, ", %s", s->frame);
        fputc('\n', out);
        break;
    case STEP_INDEX:  fprintf(out, "      -> %s[%" PRId64 "]\n", s->class_name, s->index); break;
    case STEP_FIELD:  fprintf(out, "      -> %s.%s\n", s->class_name, s->field); break;
    case STEP_STATIC: fprintf(out, "      -> %s.%s (static)\n", s->class_name, s->field); break;
    default:          fprintf(out, "      -> %s.?\n", s->class_name); break;
    }
}

void heap_write_path(const heap_analysis *a, uint32_t node, int mode, FILE *out)
{
    uint32_t n;
    uint32_t *p = path_nodes(a, node, &n);
    if (p == NULL)
        return;
    step s;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0)
            describe_root(a->g, p[0], &s);
        else
            describe_step(a->g, p[i - 1], p[i], &s);
        if (mode != HEAP_PATH_TEXT) {
            if (i)
                fputs(", ", out);
            json_step(out, &s, mode == HEAP_PATH_HTML);
        } else {
            text_step(out, &s);
        }
    }
    free(p);
}

const char *heap_object_class(const heap_graph *g, uint32_t v, char *buf, size_t size)
{
    if (g->kind[v] == HG_CLASS) {
        uint32_t k = heap_graph_class_by_id(g, heap_graph_id(g, v));
        snprintf(buf, size, "class %s", k != HG_NONE ? g->classes[k].name : "?");
        return buf;
    }
    return g->classes[g->class_of[v]].name;
}

const char *heap_thousands(uint64_t v, char *buf, size_t size)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* The leak suspects section (text) or list (JSON). */
static int write_suspects(const heap_analysis *a, int mode, FILE *out)
{
    heap_domtree t;
    heap_suspects s;
    if (heap_domtree_make(a, &t) != 0)
        return -1;
    int rc = heap_find_suspects(a, &t, &s);
    heap_domtree_free(&t);
    if (rc != 0)
        return -1;
    rc = heap_write_suspects(a, &s, mode, out);
    heap_suspects_free(&s);
    return rc;
}

int heap_write_text(const heap_analysis *a, uint32_t top, const heap_baseline *baseline, FILE *out)
{
    const heap_graph *g = a->g;
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "Heap dump %s: %s objects (instances and arrays), %s bytes; %s objects and classes "
            "reachable from %u GC roots, %s bytes\n",
            g->path, heap_thousands(a->objects, b1, sizeof b1), heap_thousands(a->bytes, b2, sizeof b2),
            heap_thousands(a->nreachable, b3, sizeof b3), g->nroots, heap_thousands(a->reachable_bytes, b4, sizeof b4));
    if (g->heap_dumps > 1)
        fprintf(out, "(the file holds %u heap dumps: this is the last)\n", g->heap_dumps);
    if (g->dangling)
        fprintf(out, "(%" PRIu64 " references to objects the dump does not hold, left out)\n", g->dangling);
    if (write_suspects(a, HEAP_PATH_TEXT, out) != 0)
        return -1;
    uint32_t nk;
    uint32_t *ks = heap_classes_by_retained(a, &nk);
    if (ks == NULL)
        return -1;
    fprintf(out, "\nClasses by retained size (top %u of %u):\n", top < nk ? top : nk, nk);
    fprintf(out, "%16s %16s %12s  %s\n", "retained", "shallow", "count", "class");
    for (uint32_t i = 0; i < nk && i < top; i++) {
        const hg_class *k = &g->classes[ks[i]];
        fprintf(out, "%16s %16s %12s  %s\n", heap_thousands(k->retained, b1, sizeof b1),
                heap_thousands(k->shallow_total, b2, sizeof b2), heap_thousands(k->count, b3, sizeof b3), k->name);
    }
    free(ks);
    uint32_t *objs = malloc((size_t)(top ? top : 1) * sizeof *objs);
    if (objs == NULL)
        return -1;
    uint32_t no = heap_top_objects(a, top, objs);
    fprintf(out, "\nBiggest objects by retained size (top %u), each with its path from a GC root:\n", no);
    char name[300];
    for (uint32_t i = 0; i < no; i++) {
        uint32_t v = objs[i];
        fprintf(out, "%3u. %s 0x%" PRIx64 ": retained %s bytes, shallow %s\n", i + 1,
                heap_object_class(g, v, name, sizeof name), heap_graph_id(g, v),
                heap_thousands(a->retained[v], b1, sizeof b1), heap_thousands(g->size[v], b2, sizeof b2));
        heap_write_path(a, v, HEAP_PATH_TEXT, out);
    }
    free(objs);
    if (heap_write_sites(a, top, 0, out) != 0 || (baseline && heap_write_growth(a, baseline, top, 0, out) != 0))
        return -1;
    return ferror(out) ? -1 : 0;
}

int heap_write_json(const heap_analysis *a, uint32_t top, const heap_baseline *baseline, FILE *out)
{
    const heap_graph *g = a->g;
    fprintf(out, "{\"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ",\n \"classes\": [", a->objects, a->bytes);
    uint32_t nk;
    uint32_t *ks = heap_classes_by_retained(a, &nk);
    if (ks == NULL)
        return -1;
    for (uint32_t i = 0; i < nk; i++) {
        const hg_class *k = &g->classes[ks[i]];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
        heap_json_string(out, k->name);
        fprintf(out, ", \"count\": %" PRIu64 ", \"shallow\": %" PRIu64 ", \"retained\": %" PRIu64 "}",
                k->count, k->shallow_total, k->retained);
    }
    free(ks);
    fputs("],\n \"dominators\": [", out);
    uint32_t *objs = malloc((size_t)(top ? top : 1) * sizeof *objs);
    if (objs == NULL)
        return -1;
    uint32_t no = heap_top_objects(a, top, objs);
    char name[300];
    for (uint32_t i = 0; i < no; i++) {
        uint32_t v = objs[i];
        fprintf(out, "%s  {\"id\": \"0x%" PRIx64 "\", \"class\": ", i ? ",\n" : "\n", heap_graph_id(g, v));
        heap_json_string(out, heap_object_class(g, v, name, sizeof name));
        fprintf(out, ", \"shallow\": %u, \"retained\": %" PRIu64 ", \"path\": [", g->size[v], a->retained[v]);
        heap_write_path(a, v, HEAP_PATH_JSON, out);
        fputs("]}", out);
    }
    free(objs);
    fputs("],\n \"suspects\": ", out);
    if (write_suspects(a, HEAP_PATH_JSON, out) != 0)
        return -1;
    if (heap_write_sites(a, top, 1, out) != 0 || (baseline && heap_write_growth(a, baseline, top, 1, out) != 0))
        return -1;
    fputs("}\n", out);
    return ferror(out) ? -1 : 0;
}
