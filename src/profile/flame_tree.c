/* flame_tree.c: see flame_tree.h. */
#include "flame_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int flame_tree_init(flame_tree *t)
{
    memset(t, 0, sizeof *t);
    t->cap = 1024;
    t->nodes = calloc(t->cap, sizeof *t->nodes);
    strtab_init(&t->names);
    if (t->nodes == NULL || strtab_add(&t->names, FLAME_ROOT_NAME) != 0) {
        flame_tree_free(t);
        return -1;
    }
    t->count = 1;
    return 0;
}

void flame_tree_free(flame_tree *t)
{
    free(t->nodes);
    strtab_free(&t->names);
    idmap_free(&t->children);
    memset(t, 0, sizeof *t);
}

/* The child of `parent` named `name`, made if new; 0 when out of memory. */
static uint32_t child_of(flame_tree *t, uint32_t parent, uint32_t name)
{
    uint64_t key = (uint64_t)parent << 32 | name;
    uint32_t child = idmap_get(&t->children, key);
    if (child != 0)
        return child;
    if (t->count == t->cap) {
        flame_node *bigger = t->cap < UINT32_MAX / 2 ? realloc(t->nodes, (size_t)t->cap * 2 * sizeof *bigger) : NULL;
        if (bigger == NULL)
            return 0;
        t->nodes = bigger;
        t->cap *= 2;
    }
    child = t->count++;
    t->nodes[child] = (flame_node){ .name = name, .next_sibling = t->nodes[parent].first_child };
    t->nodes[parent].first_child = child;
    return idmap_put(&t->children, key, child) == 0 ? child : 0;
}

/* The name index of a thread's node. UINT32_MAX when out of memory. */
static uint32_t thread_name(flame_tree *t, const char *thread)
{
    size_t len = strlen(FLAME_THREAD_PREFIX) + strlen(thread) + 1;
    char buf[256], *name = len <= sizeof buf ? buf : malloc(len);
    if (name == NULL)
        return UINT32_MAX;
    snprintf(name, len, "%s%s", FLAME_THREAD_PREFIX, thread);
    uint32_t index = strtab_add(&t->names, name);
    if (name != buf)
        free(name);
    return index;
}

static int add_stack(flame_tree *t, const profile_sample *s, const uint32_t *name_of, int64_t v,
                     int baseline)
{
    uint32_t node = 0;
    if (t->by_thread) {
        flame_node *root = &t->nodes[0];
        int64_t *sum = baseline ? &root->base : &root->value;
        *sum = profile_add_saturated(*sum, v);
        uint32_t name = thread_name(t, s->thread[0] ? s->thread : "(no thread)");
        if (name == UINT32_MAX || (node = child_of(t, 0, name)) == 0)
            return -1;
    }
    for (uint32_t d = s->depth;; d--) {           /* root first */
        flame_node *n = &t->nodes[node];
        int64_t *sum = baseline ? &n->base : &n->value;
        *sum = profile_add_saturated(*sum, v);
        if (d == 0)
            return 0;
        if ((node = child_of(t, node, name_of[s->frames[d - 1]])) == 0)
            return -1;
    }
}

int flame_tree_add(flame_tree *t, const profile *p, uint32_t value_index, int baseline)
{
    uint32_t *name_of = NULL;
    if (value_index >= profile_value_count(p) || strtab_add_frame_names(&t->names, p, &name_of, t->drop_addresses) != 0)
        return -1;
    profile_sample s;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && profile_sample_get(p, i, &s) == 0; i++)
        if (s.values[value_index] > 0)
            rc = add_stack(t, &s, name_of, s.values[value_index], baseline);
    free(name_of);
    return rc;
}

uint32_t flame_profile_threads(const profile *p)
{
    /* Thread names are interned: equal names are one pointer. Two distinct
     * ones are all a page needs to know that grouping says something. */
    const char *first = NULL;
    uint32_t n = 0;
    profile_sample s;
    for (uint32_t i = 0; profile_sample_get(p, i, &s) == 0 && n < 2; i++) {
        if (s.thread[0] == '\0' || s.thread == first)
            continue;
        if (first == NULL)
            first = s.thread;
        n++;
    }
    return n;
}

/* ------------------------------------------------------------ the walk */

typedef struct named_child {
    const char *name;
    uint32_t    node;
} named_child;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_child *)a)->name, ((const named_child *)b)->name);
}

typedef struct walk {
    const flame_tree *t;
    named_child      *scratch;   /* children of the nodes on the path, as a stack */
    uint32_t          used;
    flame_visit_fn    visit;
    void             *arg;
} walk;

static int walk_node(walk *w, uint32_t node)
{
    const flame_tree *t = w->t;
    uint32_t first = w->used;
    for (uint32_t c = t->nodes[node].first_child; c != 0; c = t->nodes[c].next_sibling)
        if (t->nodes[c].value > 0)
            w->scratch[w->used++] = (named_child){ strtab_get(&t->names, t->nodes[c].name), c };
    uint32_t n = w->used - first;
    qsort(w->scratch + first, n, sizeof *w->scratch, by_name);
    int rc = w->visit(t, &t->nodes[node], n, w->arg);
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = walk_node(w, w->scratch[first + i].node);
    w->used = first;
    return rc;
}

int flame_tree_walk(const flame_tree *t, flame_visit_fn visit, void *arg)
{
    /* Every node is somebody's child at most once on the path: count - 1 slots. */
    walk w = { t, malloc((size_t)t->count * sizeof *w.scratch), 0, visit, arg };
    if (w.scratch == NULL)
        return -1;
    int rc = walk_node(&w, 0);
    free(w.scratch);
    return rc;
}
