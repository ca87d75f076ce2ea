/*
 * demangle_print.c: the printer's top: template argument look-ups for T_
 * and packs, the outermost name as a profile shows it (no return type,
 * parameters or qualifiers), clone suffixes, and the full-name check of the
 * first pass. The node printers are in demangle_print_node.c.
 */
#include "demangle_printer.h"

const char *const dm_special_prefix[] = {
    [SP_VTABLE] = "vtable for ",
    [SP_VTT] = "VTT for ",
    [SP_TYPEINFO] = "typeinfo for ",
    [SP_TYPEINFO_NAME] = "typeinfo name for ",
    [SP_TYPEINFO_FN] = "typeinfo fn for ",
    [SP_JAVA_CLASS] = "java Class for ",
    [SP_GUARD] = "guard variable for ",
    [SP_TLS_INIT] = "TLS init function for ",
    [SP_TLS_WRAPPER] = "TLS wrapper function for ",
    [SP_THUNK] = "non-virtual thunk to ",
    [SP_VIRTUAL_THUNK] = "virtual thunk to ",
    [SP_COVARIANT_THUNK] = "covariant return thunk to ",
    [SP_HIDDEN_ALIAS] = "hidden alias for ",
    [SP_TRANSACTION_CLONE] = "transaction clone for ",
    [SP_NONTRANSACTION_CLONE] = "non-transaction clone for ",
};

/* The i-th argument of a template argument list (the whole list for i < 0). */
int dm_template_argument(const dm_printer *pr, int args, int i)
{
    if (i < 0)
        return args;
    int a = args;
    for (; a != NONE; a = pright(pr, a)) {
        if (pkind(pr, a) != NK_TARGLIST)
            return NONE;
        if (i <= 0)
            break;
        i--;
    }
    if (i != 0 || a == NONE)
        return NONE;
    return pleft(pr, a);
}

int dm_lookup_template_argument(dm_printer *pr, int tparam)
{
    if (pr->templates == NULL || pr->templates->decl == NONE) {
        pr->failed = 1;
        return NONE;
    }
    return dm_template_argument(pr, pright(pr, pr->templates->decl), pr->nodes[tparam].u.num);
}

/* A template argument pack that a pack expansion's pattern uses. */
int dm_find_pack(dm_printer *pr, int n, int depth)
{
    if (n == NONE || depth > DM_MAX_PRINT_DEPTH || ++pr->steps > DM_MAX_PRINT_STEPS)
        return NONE;
    switch (pkind(pr, n)) {
    case NK_TPARAM: {
        int a = dm_lookup_template_argument(pr, n);
        return pkind(pr, a) == NK_TARGLIST ? a : NONE;
    }
    case NK_PACK_EXPANSION: case NK_LAMBDA: case NK_NAME: case NK_TAGGED:
    case NK_OPERATOR: case NK_BUILTIN: case NK_SUB_STD: case NK_UNNAMED_TYPE:
    case NK_DEFAULT_ARG: case NK_NUMBER:
        return NONE;
    default: {
        int a = dm_find_pack(pr, pleft(pr, n), depth + 1);
        return a != NONE ? a : dm_find_pack(pr, pright(pr, n), depth + 1);
    }
    }
}

int dm_pack_length(const dm_printer *pr, int n)
{
    int count = 0;
    for (; pkind(pr, n) == NK_TARGLIST && pleft(pr, n) != NONE; n = pright(pr, n))
        count++;
    return count;
}

/* A name as the profile shows it: a function's without return type,
 * parameters or qualifiers of its own (not even on a local class's member:
 * f()::A::g() const -> f()::A::g). */
static void print_outer_name(dm_printer *pr, int name)
{
    while (is_fnqual(pkind(pr, name)))
        name = pleft(pr, name);
    if (pkind(pr, name) != NK_LOCAL) {
        dm_print_comp(pr, name);
        return;
    }
    dm_print_comp(pr, pleft(pr, name));
    put_str(pr, "::");
    dm_print_scope_entity(pr, pright(pr, name), 1);
}

/* The outermost encoding: a function prints as its name only; thunks and
 * transaction clones of a function too, after their "... to ". */
static void print_entity(dm_printer *pr, int n)
{
    while (pkind(pr, n) == NK_SPECIAL && pr->nodes[n].u.num >= SP_THUNK) {
        put_str(pr, dm_special_prefix[pr->nodes[n].u.num]);
        n = pleft(pr, n);
    }
    print_outer_name(pr, pkind(pr, n) == NK_TYPED ? pleft(pr, n) : n);
}

void dm_printer_init(dm_printer *pr, dm_node *nodes, char *out, size_t outlen)
{
    memset(pr, 0, sizeof *pr);
    pr->nodes = nodes;
    pr->out = out;
    pr->outlen = outlen;
    pr->current_template = NONE;
}

/* The whole name as c++filt prints it, parameters included, into no
 * buffer: only to know whether c++filt could print it. (It cannot when a
 * template parameter in the parameter list does not resolve, say; then we
 * give up too, so that the result is always c++filt's, shortened.) */
int dm_printable_in_full(dm_printer *pr, int root)
{
    int clones = 0;
    while (pkind(pr, root) == NK_CLONE) {
        root = pleft(pr, root);
        clones++;
    }
    dm_print_comp(pr, root);
    return !pr->failed && clones <= DM_MAX_CLONES;
}

int dm_print_top(dm_printer *pr, int root)
{
    int clones[DM_MAX_CLONES];
    int clone_count = 0;
    while (pkind(pr, root) == NK_CLONE) {
        if (clone_count >= DM_MAX_CLONES)
            return 0;
        clones[clone_count++] = pright(pr, root);
        root = pleft(pr, root);
    }
    print_entity(pr, root);
    while (clone_count > 0) {
        put_str(pr, " [clone ");
        put_text(pr, clones[--clone_count]);
        put_char(pr, ']');
    }
    if (pr->failed)
        return 0;
    if (pr->outlen > 0)
        pr->out[pr->len < pr->outlen ? pr->len : pr->outlen - 1] = '\0';
    return 1;
}
