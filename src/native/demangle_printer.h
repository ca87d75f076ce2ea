/*
 * demangle_printer.h (private to demangle_print.c and demangle_print_node.c):
 * the printer's state as it walks the tree into the caller's buffer, and its
 * primitives for writing text.
 */
#ifndef HPROF_DEMANGLE_PRINTER_H
#define HPROF_DEMANGLE_PRINTER_H

#include "demangle_tree.h"

#include <stddef.h>
#include <string.h>

/* The templates whose parameters T_ refers to, innermost first. */
typedef struct template_link {
    const struct template_link *next;
    int decl;                   /* an NK_TEMPLATE, or NONE inside a lambda */
} template_link;

/* Type modifiers (pointer, const, function type, ...) wait on this list
 * while the type they modify prints, then print around or after it:
 * that is how `int (*)[3]` gets its parentheses. */
typedef struct modifier {
    struct modifier *next;
    int mod;
    int printed;
    const template_link *templates;
} modifier;

typedef struct comp_stack {
    const struct comp_stack *parent;
    int node;
} comp_stack;

/* The templates in scope where a reference to T_ was first printed, for
 * when the same node prints again as a substitution elsewhere. */
typedef struct {
    int container;
    template_link chain[DM_MAX_SCOPE_TEMPLATES];
} saved_scope;

typedef struct {
    dm_node *nodes;
    char *out;
    size_t outlen;
    size_t len;                 /* may exceed outlen: the text is cut, not the walk */
    char last;
    int failed;
    int depth;
    long steps;
    int lambda_tpl_parms;
    int pack_index;
    int current_template;
    const template_link *templates;
    modifier *modifiers;
    const comp_stack *stack;
    int scope_count;
    saved_scope scopes[DM_MAX_SCOPES];
} dm_printer;

static inline int pkind(const dm_printer *pr, int n) { return n == NONE ? -1 : pr->nodes[n].kind; }
static inline int pleft(const dm_printer *pr, int n) { return pr->nodes[n].left; }
static inline int pright(const dm_printer *pr, int n) { return pr->nodes[n].right; }

static inline void put_char(dm_printer *pr, char c)
{
    if (pr->len + 1 < pr->outlen)
        pr->out[pr->len] = c;
    pr->len++;
    pr->last = c;
}

static inline void put_buf(dm_printer *pr, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        put_char(pr, s[i]);
}

static inline void put_str(dm_printer *pr, const char *s) { put_buf(pr, s, strlen(s)); }

static inline void put_num(dm_printer *pr, int num)
{
    char digits[16];
    int count = 0;
    unsigned value = num < 0 ? 0u - (unsigned)num : (unsigned)num;
    if (num < 0)
        put_char(pr, '-');
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    while (count > 0)
        put_char(pr, digits[--count]);
}

static inline void put_text(dm_printer *pr, int n)
{
    put_buf(pr, pr->nodes[n].u.text, pr->nodes[n].len);
}

/* Template arguments and packs (demangle_print.c), for the node printers. */
int dm_template_argument(const dm_printer *pr, int args, int i);
int dm_lookup_template_argument(dm_printer *pr, int tparam);
int dm_find_pack(dm_printer *pr, int n, int depth);
int dm_pack_length(const dm_printer *pr, int n);
/* Any node (demangle_print_node.c), for the top of the printer. */
void dm_print_comp(dm_printer *pr, int n);
/* What follows `scope::` in a qualified or local name: a default argument's
 * "{default arg#N}::" first, then the entity, without the qualifiers of a
 * member function when drop_fn_quals (demangle_print_node.c). */
void dm_print_scope_entity(dm_printer *pr, int entity, int drop_fn_quals);
/* The two passes of demangle.c's entry point (demangle_print.c). */
void dm_printer_init(dm_printer *pr, dm_node *nodes, char *out, size_t outlen);
int dm_printable_in_full(dm_printer *pr, int root);
int dm_print_top(dm_printer *pr, int root);

#endif
