/*
 * demangle_print_node.c: printing any node of the tree with libiberty's
 * rules: lists, operators, scopes, type modifiers around the types they
 * modify (`int (*)[3]`), references to template parameters, literals,
 * lambdas and pack expansions.
 */
#include "demangle_printer.h"

static void print_mod_list(dm_printer *pr, modifier *mods, int suffix);

/* Argument and parameter lists: "a, b". A trailing run of elements that
 * print nothing (empty packs) loses its ", " too. */
static void print_list(dm_printer *pr, int n)
{
    if (pleft(pr, n) != NONE)
        dm_print_comp(pr, pleft(pr, n));
    size_t keep = pr->len;
    for (int item = pright(pr, n); item != NONE && !pr->failed; item = pright(pr, item)) {
        put_str(pr, ", ");
        size_t mark = pr->len;
        if (pleft(pr, item) != NONE)
            dm_print_comp(pr, pleft(pr, item));
        if (pr->len != mark)
            keep = pr->len;
    }
    pr->len = keep;
}

static void print_operator(dm_printer *pr, int n)
{
    const char *name = dm_operators[pr->nodes[n].u.num].name;
    size_t len = strlen(name);
    put_str(pr, "operator");
    if (is_lower(name[0]))
        put_char(pr, ' ');      /* operator new */
    if (name[len - 1] == ' ')
        len--;
    put_buf(pr, name, len);
}

/* The scope part of a qualified or local name: left::right. */
static void print_scoped(dm_printer *pr, int n)
{
    dm_print_comp(pr, pleft(pr, n));
    put_str(pr, "::");
    dm_print_scope_entity(pr, pright(pr, n), 0);
}

void dm_print_scope_entity(dm_printer *pr, int entity, int drop_fn_quals)
{
    if (pkind(pr, entity) == NK_DEFAULT_ARG) {
        put_str(pr, "{default arg#");
        put_num(pr, pr->nodes[entity].u.num + 1);
        put_str(pr, "}::");
        entity = pleft(pr, entity);
    }
    while (drop_fn_quals && is_fnqual(pkind(pr, entity)))
        entity = pleft(pr, entity);
    dm_print_comp(pr, entity);
}

static void print_function_type(dm_printer *pr, int fn, modifier *mods)
{
    int need_paren = 0;
    int need_space = 0;
    for (modifier *m = mods; m != NULL && !m->printed; m = m->next) {
        int kind = pkind(pr, m->mod);
        if (kind == NK_POINTER || kind == NK_REFERENCE || kind == NK_RVREF) {
            need_paren = 1;
        } else if (is_cv(kind) || kind == NK_COMPLEX || kind == NK_IMAGINARY
                   || kind == NK_PTRMEM) {
            need_space = 1;
            need_paren = 1;
        }
        if (need_paren)
            break;
    }
    if (need_paren) {
        if (!need_space && pr->last != '(' && pr->last != '*')
            need_space = 1;
        if (need_space && pr->last != ' ')
            put_char(pr, ' ');
        put_char(pr, '(');
    }
    modifier *hold_modifiers = pr->modifiers;
    pr->modifiers = NULL;
    print_mod_list(pr, mods, 0);
    if (need_paren)
        put_char(pr, ')');
    put_char(pr, '(');
    if (pright(pr, fn) != NONE)
        dm_print_comp(pr, pright(pr, fn));
    put_char(pr, ')');
    print_mod_list(pr, mods, 1);
    pr->modifiers = hold_modifiers;
}

static void print_array_type(dm_printer *pr, int array, modifier *mods)
{
    int need_space = 1;
    if (mods != NULL) {
        int need_paren = 0;
        for (modifier *m = mods; m != NULL; m = m->next) {
            if (m->printed)
                continue;
            if (pkind(pr, m->mod) == NK_ARRAY)
                need_space = 0;
            else
                need_paren = 1;
            break;
        }
        if (need_paren)
            put_str(pr, " (");
        print_mod_list(pr, mods, 0);
        if (need_paren)
            put_char(pr, ')');
    }
    if (need_space)
        put_char(pr, ' ');
    put_char(pr, '[');
    if (pleft(pr, array) != NONE)
        dm_print_comp(pr, pleft(pr, array));
    put_char(pr, ']');
}

static void print_one_mod(dm_printer *pr, int mod)
{
    switch (pkind(pr, mod)) {
    case NK_RESTRICT: case NK_RESTRICT_THIS: put_str(pr, " restrict"); return;
    case NK_VOLATILE: case NK_VOLATILE_THIS: put_str(pr, " volatile"); return;
    case NK_CONST: case NK_CONST_THIS: put_str(pr, " const"); return;
    case NK_POINTER: put_char(pr, '*'); return;
    case NK_REF_THIS: put_str(pr, " &"); return;
    case NK_REFERENCE: put_char(pr, '&'); return;
    case NK_RVREF_THIS: put_str(pr, " &&"); return;
    case NK_RVREF: put_str(pr, "&&"); return;
    case NK_COMPLEX: put_str(pr, " _Complex"); return;
    case NK_IMAGINARY: put_str(pr, " _Imaginary"); return;
    case NK_PTRMEM:
        if (pr->last != '(')
            put_char(pr, ' ');
        dm_print_comp(pr, pleft(pr, mod));
        put_str(pr, "::*");
        return;
    case NK_TYPED:
        dm_print_comp(pr, pleft(pr, mod));
        return;
    default:
        dm_print_comp(pr, mod);
        return;
    }
}

/* A local name waiting as a modifier: its entity without the qualifiers
 * (those print after the parameter list). */
static void print_local_mod(dm_printer *pr, int local)
{
    modifier *hold_modifiers = pr->modifiers;
    pr->modifiers = NULL;
    dm_print_comp(pr, pleft(pr, local));
    pr->modifiers = hold_modifiers;
    put_str(pr, "::");
    dm_print_scope_entity(pr, pright(pr, local), 1);
}

/* Print the modifiers not yet printed; with suffix 0, not the member
 * function qualifiers (they follow the parameter list). */
static void print_mod_list(dm_printer *pr, modifier *mods, int suffix)
{
    for (; mods != NULL && !pr->failed; mods = mods->next) {
        int kind = pkind(pr, mods->mod);
        if (mods->printed || (!suffix && is_fnqual(kind)))
            continue;
        mods->printed = 1;
        const template_link *hold = pr->templates;
        pr->templates = mods->templates;
        if (kind == NK_FUNC_TYPE || kind == NK_ARRAY || kind == NK_LOCAL) {
            if (kind == NK_FUNC_TYPE)
                print_function_type(pr, mods->mod, mods->next);
            else if (kind == NK_ARRAY)
                print_array_type(pr, mods->mod, mods->next);
            else
                print_local_mod(pr, mods->mod);
            pr->templates = hold;
            return;
        }
        print_one_mod(pr, mods->mod);
        pr->templates = hold;
    }
}

/* A function with its name: the name and qualifiers wait as modifiers
 * while the return type prints, then the parameters. */
static void print_typed_name(dm_printer *pr, int n)
{
    modifier adpm[4];
    unsigned count = 0;
    modifier *hold_modifiers = pr->modifiers;
    pr->modifiers = NULL;
    int name = pleft(pr, n);
    while (name != NONE) {
        if (count >= 4) {
            pr->failed = 1;
            return;
        }
        adpm[count] = (modifier){ pr->modifiers, name, 0, pr->templates };
        pr->modifiers = &adpm[count++];
        if (!is_fnqual(pkind(pr, name)))
            break;
        name = pleft(pr, name);
    }
    if (name == NONE) {
        pr->failed = 1;
        return;
    }
    if (pkind(pr, name) == NK_LOCAL) {
        /* a class local to a function: its member's qualifiers apply here */
        name = pright(pr, name);
        if (pkind(pr, name) == NK_DEFAULT_ARG)
            name = pleft(pr, name);
        while (name != NONE && is_fnqual(pkind(pr, name))) {
            if (count >= 4) {
                pr->failed = 1;
                return;
            }
            adpm[count] = adpm[count - 1];
            adpm[count].next = &adpm[count - 1];
            pr->modifiers = &adpm[count];
            adpm[count - 1] = (modifier){ adpm[count - 1].next, name, 0, pr->templates };
            count++;
            name = pleft(pr, name);
        }
        if (name == NONE) {
            pr->failed = 1;
            return;
        }
    }
    template_link dpt = { pr->templates, name };
    int is_template = pkind(pr, name) == NK_TEMPLATE;
    if (is_template)
        pr->templates = &dpt;
    dm_print_comp(pr, pright(pr, n));
    if (is_template)
        pr->templates = dpt.next;
    while (count > 0) {
        count--;
        if (!adpm[count].printed) {
            put_char(pr, ' ');
            print_one_mod(pr, adpm[count].mod);
        }
    }
    pr->modifiers = hold_modifiers;
}

static void print_template_node(dm_printer *pr, int n)
{
    int hold_current = pr->current_template;
    modifier *hold_modifiers = pr->modifiers;
    pr->current_template = n;
    pr->modifiers = NULL;      /* the arguments are not what the modifiers modify */
    dm_print_comp(pr, pleft(pr, n));
    if (pr->last == '<')
        put_char(pr, ' ');      /* operator< <int> */
    put_char(pr, '<');
    dm_print_comp(pr, pright(pr, n));
    if (pr->last == '>')
        put_char(pr, ' ');      /* A<B<int> > */
    put_char(pr, '>');
    pr->modifiers = hold_modifiers;
    pr->current_template = hold_current;
}

static void print_template_param(dm_printer *pr, int n)
{
    if (pr->lambda_tpl_parms) {
        /* a generic lambda's `auto` parameters are its template parameters */
        put_str(pr, "auto:");
        put_num(pr, pr->nodes[n].u.num + 1);
        return;
    }
    int a = dm_lookup_template_argument(pr, n);
    if (pkind(pr, a) == NK_TARGLIST)
        a = dm_template_argument(pr, a, pr->pack_index);
    if (a == NONE) {
        pr->failed = 1;
        return;
    }
    /* the argument may itself use the parameters of an outer template */
    const template_link *hold = pr->templates;
    pr->templates = hold->next;
    dm_print_comp(pr, a);
    pr->templates = hold;
}

static void print_modifier(dm_printer *pr, int n, int inner)
{
    modifier dpm = { pr->modifiers, n, 0, pr->templates };
    pr->modifiers = &dpm;
    dm_print_comp(pr, inner != NONE ? inner : pleft(pr, n));
    if (!dpm.printed)
        print_one_mod(pr, n);
    pr->modifiers = dpm.next;
}

static saved_scope *find_saved_scope(dm_printer *pr, int container)
{
    for (int i = 0; i < pr->scope_count; i++)
        if (pr->scopes[i].container == container)
            return &pr->scopes[i];
    return NULL;
}

static void save_scope(dm_printer *pr, int container)
{
    if (pr->scope_count >= DM_MAX_SCOPES) {
        pr->failed = 1;
        return;
    }
    saved_scope *scope = &pr->scopes[pr->scope_count++];
    scope->container = container;
    int count = 0;
    for (const template_link *t = pr->templates; t != NULL; t = t->next) {
        if (count >= DM_MAX_SCOPE_TEMPLATES) {
            pr->failed = 1;
            return;
        }
        scope->chain[count] = (template_link){ NULL, t->decl };
        if (count > 0)
            scope->chain[count - 1].next = &scope->chain[count];
        count++;
    }
    if (count == 0)
        scope->container = NONE;    /* nothing to restore; and T_ will fail anyway */
}

/* References collapse: T& with T = int&& is int&, T&& with T = int& is
 * int&. Needs T's argument, in the templates where T appeared first. */
static void print_reference(dm_printer *pr, int n)
{
    int sub = pleft(pr, n);
    int inner = NONE;
    const template_link *saved_templates = NULL;
    int restore = 0;
    if (!pr->lambda_tpl_parms && pkind(pr, sub) == NK_TPARAM) {
        saved_scope *scope = find_saved_scope(pr, sub);
        if (scope == NULL) {
            save_scope(pr, sub);
            if (pr->failed)
                return;
        } else {
            int found = 0;
            for (const comp_stack *s = pr->stack; s != NULL; s = s->parent)
                if (s->node == sub || (s->node == n && s != pr->stack)) {
                    found = 1;
                    break;
                }
            if (!found) {
                saved_templates = pr->templates;
                pr->templates = &scope->chain[0];
                restore = 1;
            }
        }
        int a = dm_lookup_template_argument(pr, sub);
        if (pkind(pr, a) == NK_TARGLIST)
            a = dm_template_argument(pr, a, pr->pack_index);
        if (a == NONE) {
            if (restore)
                pr->templates = saved_templates;
            pr->failed = 1;
            return;
        }
        sub = a;
    }
    if (pkind(pr, sub) == NK_REFERENCE || pkind(pr, sub) == pkind(pr, n))
        n = sub;
    else if (pkind(pr, sub) == NK_RVREF)
        inner = pleft(pr, sub);
    print_modifier(pr, n, inner);
    if (restore)
        pr->templates = saved_templates;
}

static void print_cv(dm_printer *pr, int n)
{
    /* arrays push the same qualifier more than once; print it once */
    for (modifier *m = pr->modifiers; m != NULL; m = m->next) {
        if (m->printed)
            continue;
        if (!is_cv(pkind(pr, m->mod)))
            break;
        if (pkind(pr, m->mod) == pkind(pr, n)) {
            dm_print_comp(pr, pleft(pr, n));
            return;
        }
    }
    print_modifier(pr, n, NONE);
}

static void print_func_type_node(dm_printer *pr, int n)
{
    if (pleft(pr, n) != NONE) {
        /* the return type first; the rest waits as a modifier */
        modifier dpm = { pr->modifiers, n, 0, pr->templates };
        pr->modifiers = &dpm;
        dm_print_comp(pr, pleft(pr, n));
        pr->modifiers = dpm.next;
        if (dpm.printed)
            return;
        put_char(pr, ' ');
    }
    print_function_type(pr, n, pr->modifiers);
}

static void print_array_node(dm_printer *pr, int n)
{
    modifier adpm[4];
    unsigned count = 1;
    modifier *hold_modifiers = pr->modifiers;
    adpm[0] = (modifier){ hold_modifiers, n, 0, pr->templates };
    pr->modifiers = &adpm[0];
    /* a qualified array is an array of qualified elements */
    for (modifier *m = hold_modifiers; m != NULL && is_cv(pkind(pr, m->mod)); m = m->next) {
        if (m->printed)
            continue;
        if (count >= 4) {
            pr->failed = 1;
            return;
        }
        adpm[count] = *m;
        adpm[count].next = pr->modifiers;
        pr->modifiers = &adpm[count];
        m->printed = 1;
        count++;
    }
    dm_print_comp(pr, pright(pr, n));
    pr->modifiers = hold_modifiers;
    if (adpm[0].printed)
        return;
    while (count > 1) {
        count--;
        print_one_mod(pr, adpm[count].mod);
    }
    print_array_type(pr, n, pr->modifiers);
}

static void print_ptrmem_node(dm_printer *pr, int n)
{
    modifier dpm = { pr->modifiers, n, 0, pr->templates };
    pr->modifiers = &dpm;
    dm_print_comp(pr, pright(pr, n));
    if (!dpm.printed)
        print_one_mod(pr, n);
    pr->modifiers = dpm.next;
}

/* operator T: the type may use the enclosing template's parameters, but
 * (binutils 2.40) not in the type's own template arguments, which are
 * printed here without them: a T_ there fails, as in c++filt. */
static void print_conversion(dm_printer *pr, int n)
{
    template_link dpt = { pr->templates, pr->current_template };
    int type = pleft(pr, n);
    put_str(pr, "operator ");
    if (pr->current_template != NONE)
        pr->templates = &dpt;
    if (pkind(pr, type) != NK_TEMPLATE) {
        dm_print_comp(pr, type);
        if (pr->current_template != NONE)
            pr->templates = dpt.next;
        return;
    }
    dm_print_comp(pr, pleft(pr, type));
    if (pr->current_template != NONE)
        pr->templates = dpt.next;
    if (pr->last == '<')
        put_char(pr, ' ');
    put_char(pr, '<');
    dm_print_comp(pr, pright(pr, type));
    if (pr->last == '>')
        put_char(pr, ' ');
    put_char(pr, '>');
}

/* Lmj5E -> 5ul, Lb1E -> true, L8MEMFLAGS5E -> (MEMFLAGS)5, Lf...E -> (float)[...] */
static void print_literal(dm_printer *pr, int n)
{
    int type = pleft(pr, n);
    int value = pright(pr, n);
    int negative = pkind(pr, n) == NK_LITERAL_NEG;
    int style = LIT_DEFAULT;
    if (pkind(pr, type) == NK_BUILTIN) {
        style = dm_builtin_types[pr->nodes[type].u.num].style;
        static const char *const suffix[] = {
            [LIT_INT] = "", [LIT_UNSIGNED] = "u", [LIT_LONG] = "l", [LIT_ULONG] = "ul",
            [LIT_LLONG] = "ll", [LIT_ULLONG] = "ull",
        };
        if (style >= LIT_INT && style <= LIT_ULLONG) {
            if (negative)
                put_char(pr, '-');
            put_text(pr, value);
            put_str(pr, suffix[style]);
            return;
        }
        if (style == LIT_BOOL && !negative && pr->nodes[value].len == 1) {
            char digit = pr->nodes[value].u.text[0];
            if (digit == '0' || digit == '1') {
                put_str(pr, digit == '1' ? "true" : "false");
                return;
            }
        }
    }
    put_char(pr, '(');
    dm_print_comp(pr, type);
    put_char(pr, ')');
    if (negative)
        put_char(pr, '-');
    if (style == LIT_FLOAT)
        put_char(pr, '[');
    put_text(pr, value);
    if (style == LIT_FLOAT)
        put_char(pr, ']');
}

static void print_pack_expansion(dm_printer *pr, int n)
{
    int pattern = pleft(pr, n);
    int pack = pr->lambda_tpl_parms ? NONE : dm_find_pack(pr, pattern, 0);
    if (pack == NONE) {
        /* only function parameter packs: the pattern and "..." */
        int simple = pkind(pr, pattern) == NK_NAME || pkind(pr, pattern) == NK_QUAL;
        if (!simple)
            put_char(pr, '(');
        dm_print_comp(pr, pattern);
        if (!simple)
            put_char(pr, ')');
        put_str(pr, "...");
        return;
    }
    int len = dm_pack_length(pr, pack);
    for (int i = 0; i < len && !pr->failed; i++) {
        if (i)
            put_str(pr, ", ");
        pr->pack_index = i;
        dm_print_comp(pr, pattern);
    }
}

static void print_lambda(dm_printer *pr, int n)
{
    int saved_tpl_parms = pr->lambda_tpl_parms;
    template_link dpt = { pr->templates, NONE };
    put_str(pr, "{lambda(");
    pr->templates = &dpt;
    pr->lambda_tpl_parms = 1;
    dm_print_comp(pr, pleft(pr, n));
    pr->lambda_tpl_parms = saved_tpl_parms;
    pr->templates = dpt.next;
    put_str(pr, ")#");
    put_num(pr, pr->nodes[n].u.num + 1);
    put_char(pr, '}');
}

/* &f: the address of a member function without its parameter list;
 * anything but a plain name in parentheses: &(f(int)). */
static void print_unary(dm_printer *pr, int n)
{
    int operand = pright(pr, n);
    if (pkind(pr, operand) == NK_TYPED && pkind(pr, pleft(pr, operand)) == NK_QUAL
        && pkind(pr, pright(pr, operand)) == NK_FUNC_TYPE)
        operand = pleft(pr, operand);
    put_str(pr, dm_operators[pr->nodes[pleft(pr, n)].u.num].name);
    int simple = pkind(pr, operand) == NK_NAME || pkind(pr, operand) == NK_QUAL;
    if (!simple)
        put_char(pr, '(');
    dm_print_comp(pr, operand);
    if (!simple)
        put_char(pr, ')');
}

static void print_special(dm_printer *pr, int n)
{
    put_str(pr, dm_special_prefix[pr->nodes[n].u.num]);
    dm_print_comp(pr, pleft(pr, n));
}

static void print_comp_inner(dm_printer *pr, int n)
{
    switch (pkind(pr, n)) {
    case NK_NAME: case NK_SUB_STD:
        put_text(pr, n);
        return;
    case NK_TAGGED:
        dm_print_comp(pr, pleft(pr, n));
        put_str(pr, "[abi:");
        dm_print_comp(pr, pright(pr, n));
        put_char(pr, ']');
        return;
    case NK_QUAL: case NK_LOCAL:
        print_scoped(pr, n);
        return;
    case NK_TYPED: print_typed_name(pr, n); return;
    case NK_TEMPLATE: print_template_node(pr, n); return;
    case NK_TPARAM: print_template_param(pr, n); return;
    case NK_CTOR:
        dm_print_comp(pr, pleft(pr, n));
        return;
    case NK_DTOR:
        put_char(pr, '~');
        dm_print_comp(pr, pleft(pr, n));
        return;
    case NK_SPECIAL: print_special(pr, n); return;
    case NK_CTOR_VTABLE:
        put_str(pr, "construction vtable for ");
        dm_print_comp(pr, pleft(pr, n));
        put_str(pr, "-in-");
        dm_print_comp(pr, pright(pr, n));
        return;
    case NK_REFTEMP:
        put_str(pr, "reference temporary #");
        dm_print_comp(pr, pright(pr, n));
        put_str(pr, " for ");
        dm_print_comp(pr, pleft(pr, n));
        return;
    case NK_RESTRICT: case NK_VOLATILE: case NK_CONST:
        print_cv(pr, n);
        return;
    case NK_REFERENCE: case NK_RVREF:
        print_reference(pr, n);
        return;
    case NK_POINTER: case NK_COMPLEX: case NK_IMAGINARY:
    case NK_RESTRICT_THIS: case NK_VOLATILE_THIS: case NK_CONST_THIS:
    case NK_REF_THIS: case NK_RVREF_THIS:
        print_modifier(pr, n, NONE);
        return;
    case NK_BUILTIN:
        put_str(pr, dm_builtin_types[pr->nodes[n].u.num].name);
        return;
    case NK_VENDOR_TYPE:
        dm_print_comp(pr, pleft(pr, n));
        return;
    case NK_FUNC_TYPE: print_func_type_node(pr, n); return;
    case NK_ARRAY: print_array_node(pr, n); return;
    case NK_PTRMEM: print_ptrmem_node(pr, n); return;
    case NK_ARGLIST: case NK_TARGLIST: print_list(pr, n); return;
    case NK_OPERATOR: print_operator(pr, n); return;
    case NK_CONVERSION: print_conversion(pr, n); return;
    case NK_UNARY: print_unary(pr, n); return;
    case NK_LITERAL: case NK_LITERAL_NEG: print_literal(pr, n); return;
    case NK_NUMBER: put_num(pr, pr->nodes[n].u.num); return;
    case NK_PACK_EXPANSION: print_pack_expansion(pr, n); return;
    case NK_LAMBDA: print_lambda(pr, n); return;
    case NK_UNNAMED_TYPE:
        put_str(pr, "{unnamed type#");
        put_num(pr, pr->nodes[n].u.num + 1);
        put_char(pr, '}');
        return;
    default:
        pr->failed = 1;     /* a default argument or clone out of place */
        return;
    }
}

void dm_print_comp(dm_printer *pr, int n)
{
    if (pr->failed)
        return;
    if (n == NONE || pr->nodes[n].printing > 1 || pr->depth >= DM_MAX_PRINT_DEPTH
        || ++pr->steps > DM_MAX_PRINT_STEPS) {
        pr->failed = 1;
        return;
    }
    comp_stack self = { pr->stack, n };
    pr->nodes[n].printing++;
    pr->depth++;
    pr->stack = &self;
    print_comp_inner(pr, n);
    pr->stack = self.parent;
    pr->depth--;
    pr->nodes[n].printing--;
}
