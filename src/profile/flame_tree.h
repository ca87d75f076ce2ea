/*
 * flame_tree: the stacks of a profile merged into one call tree by shown
 * frame name (root first; threads are not frames), what a flame graph draws.
 * A second profile can be added as the baseline of a differential graph:
 * each node then has the value in both. Pure C.
 */
#ifndef HPROF_FLAME_TREE_H
#define HPROF_FLAME_TREE_H

#include <stdint.h>

#include "../core/idmap.h"
#include "profile.h"
#include "strtab.h"

typedef struct flame_node {
    uint32_t name;            /* index into the tree's names */
    uint32_t first_child;     /* 0: none (node 0 is the root, never a child) */
    uint32_t next_sibling;
    int64_t  value;           /* the profile's value through this node */
    int64_t  base;            /* the baseline's */
} flame_node;

typedef struct flame_tree {
    flame_node *nodes;        /* nodes[0]: the root, named FLAME_ROOT_NAME */
    uint32_t    count, cap;
    strtab      names;
    idmap       children;     /* (parent, name) -> child */
    int         by_thread;    /* each stack under a node of its thread, named
                               * FLAME_THREAD_PREFIX + the thread's name */
    int         drop_addresses; /* names without hidden classes' addresses
                                 * (hidden_name_drop_addresses): set for a
                                 * differential graph of two runs */
} flame_tree;

#define FLAME_ROOT_NAME "all"
#define FLAME_THREAD_PREFIX "[thread] "

/* How many distinct threads p's samples name: 0, 1, or 2 for two or more. */
uint32_t flame_profile_threads(const profile *p);

/* An empty tree (just the root). 0, or -1 when out of memory. */
int  flame_tree_init(flame_tree *t);
void flame_tree_free(flame_tree *t);

/* Add p's positive values of value_index: to the nodes' value, or to their
 * base when `baseline`. 0, or -1 when out of memory. */
int flame_tree_add(flame_tree *t, const profile *p, uint32_t value_index, int baseline);

/* Visit the nodes whose value is > 0 (and the root) depth first, parent
 * before children, children in name order; `nchildren` counts the children
 * that will be visited. 0, or -1 when out of memory or visit returned -1. */
typedef int (*flame_visit_fn)(const flame_tree *t, const flame_node *n, uint32_t nchildren, void *arg);
int flame_tree_walk(const flame_tree *t, flame_visit_fn visit, void *arg);

#endif
