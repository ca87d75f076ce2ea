/*
 * demangle_parse_type.c: the parser's types (builtin, qualified, pointer,
 * function, array, member pointer, template parameter), template arguments
 * and the expressions it knows (literals), into the tree of demangle_tree.h.
 */
#include "demangle_parser.h"

const builtin_type dm_builtin_types[BT_COUNT] = {
    ['a' - 'a'] = { "signed char", LIT_DEFAULT },
    ['b' - 'a'] = { "bool", LIT_BOOL },
    ['c' - 'a'] = { "char", LIT_DEFAULT },
    ['d' - 'a'] = { "double", LIT_FLOAT },
    ['e' - 'a'] = { "long double", LIT_FLOAT },
    ['f' - 'a'] = { "float", LIT_FLOAT },
    ['g' - 'a'] = { "__float128", LIT_FLOAT },
    ['h' - 'a'] = { "unsigned char", LIT_DEFAULT },
    ['i' - 'a'] = { "int", LIT_INT },
    ['j' - 'a'] = { "unsigned int", LIT_UNSIGNED },
    ['l' - 'a'] = { "long", LIT_LONG },
    ['m' - 'a'] = { "unsigned long", LIT_ULONG },
    ['n' - 'a'] = { "__int128", LIT_DEFAULT },
    ['o' - 'a'] = { "unsigned __int128", LIT_DEFAULT },
    ['s' - 'a'] = { "short", LIT_DEFAULT },
    ['t' - 'a'] = { "unsigned short", LIT_DEFAULT },
    ['v' - 'a'] = { "void", LIT_VOID },
    ['w' - 'a'] = { "wchar_t", LIT_DEFAULT },
    ['x' - 'a'] = { "long long", LIT_LLONG },
    ['y' - 'a'] = { "unsigned long long", LIT_ULLONG },
    ['z' - 'a'] = { "...", LIT_DEFAULT },
    [BT_DECIMAL32] = { "decimal32", LIT_DEFAULT },
    [BT_DECIMAL64] = { "decimal64", LIT_DEFAULT },
    [BT_DECIMAL128] = { "decimal128", LIT_DEFAULT },
    [BT_HALF] = { "half", LIT_FLOAT },
    [BT_CHAR8] = { "char8_t", LIT_DEFAULT },
    [BT_CHAR16] = { "char16_t", LIT_DEFAULT },
    [BT_CHAR32] = { "char32_t", LIT_DEFAULT },
    [BT_NULLPTR] = { "decltype(nullptr)", LIT_DEFAULT },
};

/* [r] [V] [K] as a chain of nodes, outermost first; *inner is the node whose
 * left the qualified thing goes into. Member function qualifiers are the
 * _THIS kinds; so are those of a function type (K before F). */
int dm_parse_cv_chain(dm_parser *p, int member_fn, int *outer, int *inner)
{
    *outer = *inner = NONE;
    for (;;) {
        char c = peek(p);
        int kind;
        if (c == 'r')
            kind = member_fn ? NK_RESTRICT_THIS : NK_RESTRICT;
        else if (c == 'V')
            kind = member_fn ? NK_VOLATILE_THIS : NK_VOLATILE;
        else if (c == 'K')
            kind = member_fn ? NK_CONST_THIS : NK_CONST;
        else if (c == 'D' && strchr("xoOw", peek_next(p)) != NULL && peek_next(p) != '\0')
            return 0;   /* transaction_safe, noexcept, throw(): not supported */
        else
            break;
        advance(p, 1);
        int n = node_new(p, kind, NONE, NONE);
        if (n == NONE)
            return 0;
        if (*inner == NONE)
            *outer = n;
        else
            p->nodes[*inner].left = (int16_t)n;
        *inner = n;
    }
    if (!member_fn && peek(p) == 'F')
        for (int n = *outer; n != NONE; n = p->nodes[n].left)
            p->nodes[n].kind = (uint8_t)(p->nodes[n].kind - NK_RESTRICT + NK_RESTRICT_THIS);
    return 1;
}

/* <type>+ as an NK_ARGLIST chain; a lone `void` is an empty list. Stops
 * before E, the end, a clone suffix, or a function's ref-qualifier. */
int dm_parse_parmlist(dm_parser *p)
{
    int head = NONE;
    int tail = NONE;
    for (;;) {
        char c = peek(p);
        if (c == '\0' || c == 'E' || c == '.')
            break;
        if ((c == 'R' || c == 'O') && peek_next(p) == 'E')
            break;
        int type = dm_parse_type(p);
        int item = node_new(p, NK_ARGLIST, type, NONE);
        if (type == NONE || item == NONE)
            return NONE;
        if (tail == NONE)
            head = item;
        else
            p->nodes[tail].right = (int16_t)item;
        tail = item;
    }
    if (head == NONE)
        return NONE;
    int first = p->nodes[head].left;
    if (p->nodes[head].right == NONE && kind_of(p, first) == NK_BUILTIN
        && dm_builtin_types[p->nodes[first].u.num].style == LIT_VOID)
        p->nodes[head].left = NONE;
    return head;
}

/* [J] [<return type>] <parameter types> */
int dm_parse_bare_function_type(dm_parser *p, int has_return_type)
{
    if (accept(p, 'J'))
        has_return_type = 1;
    int ret = NONE;
    if (has_return_type) {
        ret = dm_parse_type(p);
        if (ret == NONE)
            return NONE;
    }
    int params = dm_parse_parmlist(p);
    if (params == NONE)
        return NONE;
    return node_new(p, NK_FUNC_TYPE, ret, params);
}

/* F [Y] <bare-function-type> [<ref-qualifier>] E */
static int parse_function_type(dm_parser *p)
{
    if (!accept(p, 'F'))
        return NONE;
    accept(p, 'Y');     /* extern "C": not printed */
    int n = dm_parse_bare_function_type(p, 1);
    if (n == NONE)
        return NONE;
    if (accept(p, 'R'))
        n = node_new(p, NK_REF_THIS, n, NONE);
    else if (accept(p, 'O'))
        n = node_new(p, NK_RVREF_THIS, n, NONE);
    return accept(p, 'E') ? n : NONE;
}

/* A <number> _ <type> | A [<expression>] _ <type> */
static int parse_array_type(dm_parser *p)
{
    advance(p, 1);
    int dim = NONE;
    if (is_digit(peek(p))) {
        const char *start = p->pos;
        while (is_digit(peek(p)))
            advance(p, 1);
        dim = node_text(p, NK_NAME, start, (size_t)(p->pos - start));
        if (dim == NONE)
            return NONE;
    } else if (peek(p) != '_') {
        dim = dm_parse_expression(p);
        if (dim == NONE)
            return NONE;
    }
    if (!accept(p, '_'))
        return NONE;
    int element = dm_parse_type(p);
    return element == NONE ? NONE : node_new(p, NK_ARRAY, dim, element);
}

/* M <class type> <member type> */
static int parse_ptrmem_type(dm_parser *p)
{
    advance(p, 1);
    int cls = dm_parse_type(p);
    if (cls == NONE)
        return NONE;
    return node_pair(p, NK_PTRMEM, cls, dm_parse_type(p));
}

/* r V K before a type: the qualified type is one substitution (not each
 * subset of its qualifiers). A ref-qualifier of a function type goes
 * outside so that it prints after the cv-qualifiers. */
static int parse_qualified_type(dm_parser *p)
{
    int outer, inner;
    if (!dm_parse_cv_chain(p, 0, &outer, &inner) || outer == NONE)
        return NONE;
    int type = peek(p) == 'F' ? parse_function_type(p) : dm_parse_type(p);
    if (type == NONE)
        return NONE;
    int result = outer;
    int kind = kind_of(p, type);
    if (kind == NK_REF_THIS || kind == NK_RVREF_THIS) {
        p->nodes[inner].left = p->nodes[type].left;
        p->nodes[type].left = (int16_t)outer;
        result = type;
    } else {
        p->nodes[inner].left = (int16_t)type;
    }
    return add_sub(p, result) ? result : NONE;
}

/* T_ as a type, perhaps a template template parameter with arguments. In a
 * conversion operator's type, `cv T_ I...E` is ambiguous: the arguments are
 * the parameter's only if a second argument list follows (libiberty). */
static int parse_template_param_type(dm_parser *p)
{
    int n = dm_parse_template_param(p);
    if (n == NONE || peek(p) != 'I')
        return n;
    if (!p->is_conversion) {
        if (!add_sub(p, n))
            return NONE;
        return node_pair(p, NK_TEMPLATE, n, dm_parse_template_args(p));
    }
    const char *hold_pos = p->pos;
    int hold_count = p->count;
    int hold_subs = p->sub_count;
    int args = dm_parse_template_args(p);
    if (peek(p) == 'I') {
        if (!add_sub(p, n))
            return NONE;
        return node_pair(p, NK_TEMPLATE, n, args);
    }
    p->pos = hold_pos;
    p->count = hold_count;
    p->sub_count = hold_subs;
    return n;
}

/* D-prefixed types; *can_subst is cleared for the builtin ones. */
static int parse_d_type(dm_parser *p, int *can_subst)
{
    advance(p, 1);
    char c = next_char(p);
    *can_subst = 0;
    switch (c) {
    case 'p':
        *can_subst = 1;
        return node_unary(p, NK_PACK_EXPANSION, dm_parse_type(p));
    case 'a':
        return node_text(p, NK_NAME, "auto", 4);
    case 'c':
        return node_text(p, NK_NAME, "decltype(auto)", 14);
    case 'f': return node_num(p, NK_BUILTIN, NONE, BT_DECIMAL32);
    case 'd': return node_num(p, NK_BUILTIN, NONE, BT_DECIMAL64);
    case 'e': return node_num(p, NK_BUILTIN, NONE, BT_DECIMAL128);
    case 'h': return node_num(p, NK_BUILTIN, NONE, BT_HALF);
    case 'u': return node_num(p, NK_BUILTIN, NONE, BT_CHAR8);
    case 's': return node_num(p, NK_BUILTIN, NONE, BT_CHAR16);
    case 'i': return node_num(p, NK_BUILTIN, NONE, BT_CHAR32);
    case 'n': return node_num(p, NK_BUILTIN, NONE, BT_NULLPTR);
    default:
        return NONE;    /* decltype (DT, Dt), _FloatN (DF), vectors (Dv) */
    }
}

static int parse_type_inner(dm_parser *p)
{
    char c = peek(p);
    if (c == 'r' || c == 'V' || c == 'K'
        || (c == 'D' && peek_next(p) != '\0' && strchr("xoOw", peek_next(p)) != NULL))
        return parse_qualified_type(p);

    int can_subst = 1;
    int n;
    switch (c) {
    case 'a': case 'b': case 'c': case 'd': case 'e': case 'f': case 'g':
    case 'h': case 'i': case 'j': case 'l': case 'm': case 'n': case 'o':
    case 's': case 't': case 'v': case 'w': case 'x': case 'y': case 'z':
        advance(p, 1);
        n = node_num(p, NK_BUILTIN, NONE, c - 'a');
        can_subst = 0;
        break;
    case 'u':
        advance(p, 1);
        n = node_unary(p, NK_VENDOR_TYPE, dm_parse_source_name(p));
        break;
    case 'F': n = parse_function_type(p); break;
    case 'A': n = parse_array_type(p); break;
    case 'M': n = parse_ptrmem_type(p); break;
    case 'T': n = parse_template_param_type(p); break;
    case 'P': advance(p, 1); n = node_unary(p, NK_POINTER, dm_parse_type(p)); break;
    case 'R': advance(p, 1); n = node_unary(p, NK_REFERENCE, dm_parse_type(p)); break;
    case 'O': advance(p, 1); n = node_unary(p, NK_RVREF, dm_parse_type(p)); break;
    case 'C': advance(p, 1); n = node_unary(p, NK_COMPLEX, dm_parse_type(p)); break;
    case 'G': advance(p, 1); n = node_unary(p, NK_IMAGINARY, dm_parse_type(p)); break;
    case 'U':
        return NONE;    /* vendor qualifiers */
    case 'D':
        n = parse_d_type(p, &can_subst);
        break;
    default:
        return dm_parse_name(p, 1);    /* class or enum; adds its own substitution */
    }
    if (n == NONE || (can_subst && !add_sub(p, n)))
        return NONE;
    return n;
}

int dm_parse_type(dm_parser *p)
{
    if (!enter(p))
        return NONE;
    return leave(p, parse_type_inner(p));
}

/* L <type> <value> E | L <nullptr type> E | L _Z <encoding> E */
static int parse_expr_primary(dm_parser *p)
{
    if (!accept(p, 'L'))
        return NONE;
    int n;
    if (peek(p) == '_' || peek(p) == 'Z') {
        accept(p, '_');
        if (!accept(p, 'Z'))
            return NONE;
        n = dm_parse_encoding(p, 0);
    } else {
        int type = dm_parse_type(p);
        if (type == NONE)
            return NONE;
        if (kind_of(p, type) == NK_BUILTIN && p->nodes[type].u.num == BT_NULLPTR
            && accept(p, 'E'))
            return type;
        int kind = accept(p, 'n') ? NK_LITERAL_NEG : NK_LITERAL;
        const char *start = p->pos;
        while (peek(p) != 'E') {
            if (peek(p) == '\0')
                return NONE;
            advance(p, 1);
        }
        n = node_pair(p, kind, type, node_text(p, NK_NAME, start, (size_t)(p->pos - start)));
    }
    return accept(p, 'E') ? n : NONE;
}

/* The expressions g++ puts in libjvm's names: a literal, a template
 * parameter, the address of a function (&f as a template argument, T_ as an
 * array bound). Anything else gives up. */
int dm_parse_expression(dm_parser *p)
{
    if (!enter(p))
        return NONE;
    int n = NONE;
    if (peek(p) == 'L') {
        n = parse_expr_primary(p);
    } else if (peek(p) == 'T') {
        n = dm_parse_template_param(p);
    } else if (peek(p) == 'a' && peek_next(p) == 'd') {
        int op = dm_parse_operator_name(p);
        n = node_pair(p, NK_UNARY, op, dm_parse_expression(p));
    }
    return leave(p, n);
}

static int parse_template_arg(dm_parser *p)
{
    switch (peek(p)) {
    case 'X': {
        advance(p, 1);
        int n = dm_parse_expression(p);
        return accept(p, 'E') ? n : NONE;
    }
    case 'L':
        return parse_expr_primary(p);
    case 'I':
    case 'J':
        return dm_parse_template_args(p);     /* an argument pack */
    default:
        return dm_parse_type(p);
    }
}

/* I <template-arg>+ E (J ... E for a pack, which may be empty). The
 * arguments' names are not the class a later C1/D1 constructs. */
int dm_parse_template_args(dm_parser *p)
{
    if (peek(p) != 'I' && peek(p) != 'J')
        return NONE;
    advance(p, 1);
    int hold_last_name = p->last_name;
    if (accept(p, 'E'))
        return node_new(p, NK_TARGLIST, NONE, NONE);
    int head = NONE;
    int tail = NONE;
    do {
        int arg = parse_template_arg(p);
        int item = node_new(p, NK_TARGLIST, arg, NONE);
        if (arg == NONE || item == NONE)
            return NONE;
        if (tail == NONE)
            head = item;
        else
            p->nodes[tail].right = (int16_t)item;
        tail = item;
    } while (!accept(p, 'E'));
    p->last_name = hold_last_name;
    return head;
}

