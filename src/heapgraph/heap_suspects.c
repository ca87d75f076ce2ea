#include "heap_suspects.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dominators.h"

static int is_big(const heap_analysis *a, uint64_t bytes)
{
    return bytes > 0 && bytes * 100 >= a->reachable_bytes * HEAP_SUSPECT_PERCENT;
}

static int by_retained(const void *x, const void *y)
{
    const heap_suspect *a = x, *b = y;
    if (a->retained != b->retained)
        return a->retained < b->retained ? 1 : -1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Which class's instances retain most inside object v: a depth-first walk
 * of v's dominator subtree counting each class's instances that no other of
 * the class inside dominates (as a class's retained size is counted). */
static void fill_inside(const heap_analysis *a, const heap_domtree *t, heap_suspect *s, uint32_t *stack,
                       uint32_t *next, uint32_t *on_path, uint64_t *bytes, uint64_t *count)
{
    const heap_graph *g = a->g;
    memset(on_path, 0, (size_t)g->nclasses * sizeof *on_path);
    memset(bytes, 0, (size_t)g->nclasses * sizeof *bytes);
    memset(count, 0, (size_t)g->nclasses * sizeof *count);
    uint32_t depth = 0;
    stack[depth++] = s->node;
    next[s->node] = t->start[s->node];
    while (depth > 0) {
        uint32_t v = stack[depth - 1];
        if (next[v] < t->start[v + 1]) {
            uint32_t w = t->child[next[v]++];
            if (g->kind[w] != HG_CLASS) {
                uint32_t k = g->class_of[w];
                if (on_path[k]++ == 0)
                    bytes[k] += a->retained[w];
                count[k]++;
            }
            next[w] = t->start[w];
            stack[depth++] = w;
            continue;
        }
        depth--;
        if (v != s->node && g->kind[v] != HG_CLASS)
            on_path[g->class_of[v]]--;
    }
    s->klass = HG_NONE;
    for (uint32_t k = 0; k < g->nclasses; k++)
        if (bytes[k] > 0 && (s->klass == HG_NONE || bytes[k] > bytes[s->klass]))
            s->klass = k;
    if (s->klass != HG_NONE) {
        s->inside = bytes[s->klass];
        s->count = count[s->klass];
    }
}

int heap_find_suspects(const heap_analysis *a, const heap_domtree *t, heap_suspects *s)
{
    const heap_graph *g = a->g;
    uint32_t n = g->nnodes, nk = g->nclasses ? g->nclasses : 1;
    s->list = NULL;
    s->n = 0;
    if (n < 2 || a->reachable_bytes == 0)
        return 0;
    /* at most 100 / HEAP_SUSPECT_PERCENT objects (their retained sets are
     * disjoint), as many classes */
    uint32_t cap = 2 * (100 / HEAP_SUSPECT_PERCENT) + 2;
    s->list = calloc(cap, sizeof *s->list);
    uint32_t *stack = malloc((size_t)n * sizeof *stack), *next = malloc((size_t)n * sizeof *next);
    uint32_t *on_path = malloc((size_t)nk * sizeof *on_path);
    uint64_t *bytes = malloc((size_t)nk * sizeof *bytes), *count = malloc((size_t)nk * sizeof *count);
    uint32_t *largest = malloc((size_t)nk * sizeof *largest);
    int rc = -1;
    if (s->list == NULL || stack == NULL || next == NULL || on_path == NULL || bytes == NULL || count == NULL
        || largest == NULL)
        goto out;
    /* objects: big, and no child big (the big ones make a tree from the root down) */
    for (uint32_t v = 1; v < n; v++) {
        if (a->idom[v] == DOM_UNREACHED || !is_big(a, a->retained[v]))
            continue;
        uint32_t c = heap_domtree_count(t, v) ? t->child[t->start[v]] : HG_NONE;   /* the largest child */
        if (c != HG_NONE && is_big(a, a->retained[c]))
            continue;
        uint32_t head = v;
        while (g->kind[head] != HG_CLASS && a->idom[head] != 0 && g->kind[a->idom[head]] != HG_CLASS
               && g->class_of[a->idom[head]] == g->class_of[head])
            head = a->idom[head];
        int seen = 0;
        for (uint32_t i = 0; i < s->n; i++)
            seen |= s->list[i].node == head;
        if (!seen && s->n < cap / 2) {
            heap_suspect *x = &s->list[s->n++];
            x->node = head;
            x->retained = a->retained[head];
            fill_inside(a, t, x, stack, next, on_path, bytes, count);
        }
    }
    /* classes: instances the tree's root holds, grouped by class, less the
     * object suspects under them */
    uint32_t nobjects = s->n;
    memset(bytes, 0, (size_t)nk * sizeof *bytes);
    memset(count, 0, (size_t)nk * sizeof *count);
    for (uint32_t i = t->start[0]; i < t->start[1]; i++) {
        uint32_t w = t->child[i];
        if (g->kind[w] == HG_CLASS)
            continue;
        uint32_t k = g->class_of[w];
        if (count[k]++ == 0 || a->retained[w] > a->retained[largest[k]])
            largest[k] = w;
        bytes[k] += a->retained[w];
    }
    for (uint32_t i = 0; i < nobjects; i++) {
        /* a chain's head may hold another suspect: what that one retains is in the head's already */
        int nested = 0;
        uint32_t top = s->list[i].node;
        while (a->idom[top] != 0) {
            top = a->idom[top];
            for (uint32_t j = 0; j < nobjects; j++)
                nested |= s->list[j].node == top;
        }
        uint64_t *left = g->kind[top] != HG_CLASS && !nested ? &bytes[g->class_of[top]] : NULL;
        if (left)
            *left -= *left < s->list[i].retained ? *left : s->list[i].retained;
    }
    for (uint32_t k = 0; k < g->nclasses && s->n < cap; k++) {
        if (count[k] < 2 || !is_big(a, bytes[k]))
            continue;
        heap_suspect *x = &s->list[s->n++];
        x->is_class = 1;
        x->klass = k;
        x->node = largest[k];
        x->retained = bytes[k];
        x->count = count[k];
    }
    if (s->n > 1)
        qsort(s->list, s->n, sizeof *s->list, by_retained);
    rc = 0;
out:
    if (rc != 0)
        heap_suspects_free(s);
    free(stack);
    free(next);
    free(on_path);
    free(bytes);
    free(count);
    free(largest);
    return rc;
}

void heap_suspects_free(heap_suspects *s)
{
    free(s->list);
    s->list = NULL;
    s->n = 0;
}

const char *heap_suspect_sentence(const heap_analysis *a, const heap_suspect *s, char *buf, size_t size)
{
    const heap_graph *g = a->g;
    char b1[32], b2[32], b3[32], name[300];
    double share = 100.0 * (double)s->retained / (double)(a->reachable_bytes ? a->reachable_bytes : 1);
    if (s->is_class) {
        snprintf(buf, size, "%s instances of %s, held by no single object, retain %s bytes (%.1f%% of the "
                 "reachable heap); the largest, 0x%" PRIx64 ", retains %s.",
                 heap_thousands(s->count, b1, sizeof b1), g->classes[s->klass].name,
                 heap_thousands(s->retained, b2, sizeof b2), share, heap_graph_id(g, s->node),
                 heap_thousands(a->retained[s->node], b3, sizeof b3));
    } else if (s->klass != HG_NONE) {
        snprintf(buf, size, "One %s, 0x%" PRIx64 ", retains %s bytes (%.1f%% of the reachable heap), "
                 "%s of them in %s instances of %s.",
                 heap_object_class(g, s->node, name, sizeof name), heap_graph_id(g, s->node),
                 heap_thousands(s->retained, b1, sizeof b1), share, heap_thousands(s->inside, b2, sizeof b2),
                 heap_thousands(s->count, b3, sizeof b3), g->classes[s->klass].name);
    } else {
        snprintf(buf, size, "One %s, 0x%" PRIx64 ", retains %s bytes (%.1f%% of the reachable heap).",
                 heap_object_class(g, s->node, name, sizeof name), heap_graph_id(g, s->node),
                 heap_thousands(s->retained, b1, sizeof b1), share);
    }
    return buf;
}

int heap_write_suspects(const heap_analysis *a, const heap_suspects *s, int mode, FILE *out)
{
    const heap_graph *g = a->g;
    char sentence[1200], name[300];
    if (mode == HEAP_PATH_TEXT) {
        fprintf(out, "\nLeak suspects (an object, or the instances of a class no single object holds, retaining "
                "%d%% or more of the reachable heap): %u\n", HEAP_SUSPECT_PERCENT, s->n);
        for (uint32_t i = 0; i < s->n; i++) {
            fprintf(out, "%3u. %s\n", i + 1, heap_suspect_sentence(a, &s->list[i], sentence, sizeof sentence));
            if (s->list[i].is_class)
                fprintf(out, "      the largest's path:\n");
            heap_write_path(a, s->list[i].node, HEAP_PATH_TEXT, out);
        }
        return 0;
    }
    int html = mode == HEAP_PATH_HTML;
    fputc('[', out);
    for (uint32_t i = 0; i < s->n; i++) {
        const heap_suspect *x = &s->list[i];
        fprintf(out, "%s  {\"kind\": \"%s\", \"id\": \"0x%" PRIx64 "\", \"class\": ", i ? ",\n" : "\n",
                x->is_class ? "class" : "object", heap_graph_id(g, x->node));
        heap_json_text(out, x->is_class ? g->classes[x->klass].name : heap_object_class(g, x->node, name, sizeof name),
                       html);
        fprintf(out, ", \"retained\": %" PRIu64 ", \"percent\": %.2f", x->retained,
                100.0 * (double)x->retained / (double)(a->reachable_bytes ? a->reachable_bytes : 1));
        if (x->is_class)
            fprintf(out, ", \"count\": %" PRIu64, x->count);
        else if (x->klass != HG_NONE) {
            fputs(", \"holds\": {\"class\": ", out);
            heap_json_text(out, g->classes[x->klass].name, html);
            fprintf(out, ", \"count\": %" PRIu64 ", \"retained\": %" PRIu64 "}", x->count, x->inside);
        }
        fputs(", \"sentence\": ", out);
        heap_json_text(out, heap_suspect_sentence(a, x, sentence, sizeof sentence), html);
        fputs(", \"path\": [", out);
        heap_write_path(a, x->node, mode, out);
        fputs("]}", out);
    }
    fputc(']', out);
    return 0;
}
