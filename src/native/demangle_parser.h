/*
 * demangle_parser.h (private to demangle_parse.c and demangle_parse_type.c):
 * the parser's state over the mangled name and the primitives both halves
 * of the grammar build nodes with.
 */
#ifndef HPROF_DEMANGLE_PARSER_H
#define HPROF_DEMANGLE_PARSER_H

#include "demangle_tree.h"

#include <string.h>

typedef struct {
    const char *pos;
    int depth;
    int last_name;          /* the class a C1/D1 that follows constructs */
    int is_conversion;      /* inside `cv <type>`: see parse_template_param_type */
    int count;
    int sub_count;
    int16_t subs[DM_MAX_SUBS];
    dm_node nodes[DM_MAX_NODES];
} dm_parser;

static inline char peek(const dm_parser *p) { return p->pos[0]; }
static inline char peek_next(const dm_parser *p) { return p->pos[0] ? p->pos[1] : '\0'; }

static inline void advance(dm_parser *p, int n)
{
    while (n-- > 0 && *p->pos)
        p->pos++;
}

static inline char next_char(dm_parser *p)
{
    char c = *p->pos;
    if (c)
        p->pos++;
    return c;
}

static inline int accept(dm_parser *p, char c)
{
    if (c == '\0' || *p->pos != c)
        return 0;
    p->pos++;
    return 1;
}

static inline int node_new(dm_parser *p, int kind, int left, int right)
{
    if (p->count >= DM_MAX_NODES)
        return NONE;
    dm_node *n = &p->nodes[p->count];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->left = (int16_t)left;
    n->right = (int16_t)right;
    return p->count++;
}

/* A node that needs both children: NONE if either failed to parse. */
static inline int node_pair(dm_parser *p, int kind, int left, int right)
{
    if (left == NONE || right == NONE)
        return NONE;
    return node_new(p, kind, left, right);
}

static inline int node_unary(dm_parser *p, int kind, int left)
{
    if (left == NONE)
        return NONE;
    return node_new(p, kind, left, NONE);
}

/* Text nodes are never empty (libiberty refuses those: `LiE` is no literal). */
static inline int node_text(dm_parser *p, int kind, const char *text, size_t len)
{
    if (len == 0 || len > UINT16_MAX)
        return NONE;
    int n = node_new(p, kind, NONE, NONE);
    if (n != NONE) {
        p->nodes[n].u.text = text;
        p->nodes[n].len = (uint16_t)len;
    }
    return n;
}

static inline int node_num(dm_parser *p, int kind, int left, int num)
{
    int n = node_new(p, kind, left, NONE);
    if (n != NONE)
        p->nodes[n].u.num = num;
    return n;
}

static inline int kind_of(const dm_parser *p, int n) { return n == NONE ? -1 : p->nodes[n].kind; }

static inline int add_sub(dm_parser *p, int n)
{
    if (n == NONE || p->sub_count >= DM_MAX_SUBS)
        return 0;
    p->subs[p->sub_count++] = (int16_t)n;
    return 1;
}

/* Recursion guard for the three entry points every cycle of the grammar
 * goes through (dm_parse_type, dm_parse_name, dm_parse_encoding). */
static inline int enter(dm_parser *p)
{
    if (p->depth >= DM_MAX_DEPTH)
        return 0;
    p->depth++;
    return 1;
}

static inline int leave(dm_parser *p, int result)
{
    p->depth--;
    return result;
}

/* The grammar's names and encodings (demangle_parse.c) and its types,
 * template arguments and expressions (demangle_parse_type.c) recurse into
 * each other through these. */
int dm_parse_source_name(dm_parser *p);
int dm_parse_operator_name(dm_parser *p);
int dm_parse_template_param(dm_parser *p);
int dm_parse_name(dm_parser *p, int substable);
int dm_parse_encoding(dm_parser *p, int top_level);
int dm_parse_cv_chain(dm_parser *p, int member_fn, int *outer, int *inner);
int dm_parse_parmlist(dm_parser *p);
int dm_parse_bare_function_type(dm_parser *p, int has_return_type);
int dm_parse_type(dm_parser *p);
int dm_parse_expression(dm_parser *p);
int dm_parse_template_args(dm_parser *p);
/* The whole name: the root node, or NONE (demangle.c's entry point). */
int dm_parse_mangled_name(dm_parser *p);

#endif
