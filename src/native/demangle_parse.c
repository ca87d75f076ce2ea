/*
 * demangle_parse.c: the parser's names (source, operator, constructor,
 * nested, local, substitutions and template parameters), special names
 * (vtables, thunks, guards) and encodings, into the tree of demangle_tree.h.
 * Types, template arguments and expressions are in demangle_parse_type.c.
 */
#include "demangle_parser.h"

#include <limits.h>
#include <string.h>

const operator_info dm_operators[] = {
    { "aN", "&=" }, { "aS", "=" }, { "aa", "&&" }, { "ad", "&" }, { "an", "&" },
    { "at", "alignof " }, { "aw", "co_await " }, { "az", "alignof " },
    { "cc", "const_cast" }, { "cl", "()" }, { "cm", "," }, { "co", "~" },
    { "dV", "/=" }, { "dX", "[...]=" }, { "da", "delete[] " }, { "dc", "dynamic_cast" },
    { "de", "*" }, { "di", "=" }, { "dl", "delete " }, { "ds", ".*" }, { "dt", "." },
    { "dv", "/" }, { "dx", "]=" }, { "eO", "^=" }, { "eo", "^" }, { "eq", "==" },
    { "fL", "..." }, { "fR", "..." }, { "fl", "..." }, { "fr", "..." },
    { "ge", ">=" }, { "gs", "::" }, { "gt", ">" }, { "ix", "[]" }, { "lS", "<<=" },
    { "le", "<=" }, { "ls", "<<" }, { "lt", "<" }, { "mI", "-=" }, { "mL", "*=" },
    { "mi", "-" }, { "ml", "*" }, { "mm", "--" }, { "na", "new[]" }, { "ne", "!=" },
    { "ng", "-" }, { "nt", "!" }, { "nw", "new" }, { "oR", "|=" }, { "oo", "||" },
    { "or", "|" }, { "pL", "+=" }, { "pl", "+" }, { "pm", "->*" }, { "pp", "++" },
    { "ps", "+" }, { "pt", "->" }, { "qu", "?" }, { "rM", "%=" }, { "rS", ">>=" },
    { "rc", "reinterpret_cast" }, { "rm", "%" }, { "rs", ">>" }, { "sP", "sizeof..." },
    { "sZ", "sizeof..." }, { "sc", "static_cast" }, { "ss", "<=>" }, { "st", "sizeof " },
    { "sz", "sizeof " }, { "tr", "throw" }, { "tw", "throw " },
};

/* std:: abbreviations. c++filt prints them in full (its default is verbose),
 * and an abbreviation names the class for its constructors (last_name). */
typedef struct {
    char code;
    const char *expansion;
    const char *class_name;     /* for Sa...C1: allocator::allocator */
} std_sub;

static const std_sub std_subs[] = {
    { 't', "std", NULL },
    { 'a', "std::allocator", "allocator" },
    { 'b', "std::basic_string", "basic_string" },
    { 's', "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
      "basic_string" },
    { 'i', "std::basic_istream<char, std::char_traits<char> >", "basic_istream" },
    { 'o', "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream" },
    { 'd', "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream" },
};

/* number ::= [n] <decimal>; -1 on overflow (as libiberty). */
static int parse_number(dm_parser *p)
{
    int negative = accept(p, 'n');
    int value = 0;
    while (is_digit(peek(p))) {
        int digit = peek(p) - '0';
        if (value > (INT_MAX - digit) / 10)
            return -1;
        value = value * 10 + digit;
        advance(p, 1);
    }
    return negative ? -value : value;
}

/* <non-negative number> _ : "_" is 0, "0_" is 1 ... -1 if malformed. */
static int parse_compact_number(dm_parser *p)
{
    int num = 0;
    if (peek(p) == 'n')
        return -1;
    if (peek(p) != '_') {
        num = parse_number(p);
        if (num < 0 || num == INT_MAX)
            return -1;
        num++;
    }
    return accept(p, '_') ? num : -1;
}

/* gcc's name for an anonymous namespace: _GLOBAL__N_1 and variants. */
static int is_anonymous_namespace(const char *name, int len)
{
    return len >= 10 && memcmp(name, "_GLOBAL_", 8) == 0
        && (name[8] == '.' || name[8] == '_' || name[8] == '$') && name[9] == 'N';
}

/* <source-name> ::= <length> <identifier> */
int dm_parse_source_name(dm_parser *p)
{
    int len = parse_number(p);
    if (len <= 0)
        return NONE;
    const char *name = p->pos;
    for (int i = 0; i < len; i++)
        if (name[i] == '\0')
            return NONE;
    advance(p, len);
    int n = is_anonymous_namespace(name, len)
        ? node_text(p, NK_NAME, "(anonymous namespace)", strlen("(anonymous namespace)"))
        : node_text(p, NK_NAME, name, (size_t)len);
    p->last_name = n;
    return n;
}

/* <discriminator> ::= _ <digit> | __ <number> _ ; read and not printed. */
static int parse_discriminator(dm_parser *p)
{
    if (!accept(p, '_'))
        return 1;
    int underscores = 1 + accept(p, '_');
    int discriminator = parse_number(p);
    if (discriminator < 0)
        return 0;
    if (underscores > 1 && discriminator >= 10)
        return accept(p, '_');
    return 1;
}

/* B <source-name>, repeated: [abi:cxx11]. The tag is not a class name. */
static int parse_abi_tags(dm_parser *p, int n)
{
    int hold_last_name = p->last_name;
    while (n != NONE && accept(p, 'B'))
        n = node_pair(p, NK_TAGGED, n, dm_parse_source_name(p));
    p->last_name = hold_last_name;
    return n;
}

/* operator names: two letters, or cv <type> for a conversion. */
int dm_parse_operator_name(dm_parser *p)
{
    char c1 = next_char(p);
    char c2 = next_char(p);
    if (c1 == 'c' && c2 == 'v') {
        int was_conversion = p->is_conversion;
        p->is_conversion = 1;
        int n = node_unary(p, NK_CONVERSION, dm_parse_type(p));
        p->is_conversion = was_conversion;
        return n;
    }
    for (size_t i = 0; i < sizeof dm_operators / sizeof dm_operators[0]; i++)
        if (dm_operators[i].code[0] == c1 && dm_operators[i].code[1] == c2)
            return node_num(p, NK_OPERATOR, NONE, (int)i);
    return NONE;    /* includes vendor operators v<digit> and literal operators li */
}

/* C1 C2 C3 CI1 <type> ..., D0 D1 D2: named after the last class name seen. */
static int parse_ctor_dtor_name(dm_parser *p)
{
    if (accept(p, 'C')) {
        int inheriting = accept(p, 'I');
        char kind = next_char(p);
        if (kind < '1' || kind > '5')
            return NONE;
        if (inheriting)
            (void)dm_parse_type(p);    /* the base whose constructor is inherited; not printed */
        return node_unary(p, NK_CTOR, p->last_name);
    }
    if (accept(p, 'D')) {
        char kind = next_char(p);
        if (kind != '0' && kind != '1' && kind != '2' && kind != '4' && kind != '5')
            return NONE;
        return node_unary(p, NK_DTOR, p->last_name);
    }
    return NONE;
}

/* Ul <parameter types> E [<number>] _ : {lambda(int)#1} */
static int parse_lambda(dm_parser *p)
{
    advance(p, 2);
    char next = peek_next(p);
    if (peek(p) == 'T' && next != '\0' && strchr("yntp", next) != NULL)
        return NONE;    /* an explicit template head: []<typename T>(...) */
    int params = dm_parse_parmlist(p);
    if (params == NONE || !accept(p, 'E'))
        return NONE;
    int num = parse_compact_number(p);
    if (num < 0)
        return NONE;
    return node_num(p, NK_LAMBDA, params, num);
}

/* Ut [<number>] _ : {unnamed type#1} */
static int parse_unnamed_type(dm_parser *p)
{
    advance(p, 2);
    int num = parse_compact_number(p);
    if (num < 0)
        return NONE;
    int n = node_num(p, NK_UNNAMED_TYPE, NONE, num);
    return add_sub(p, n) ? n : NONE;
}

/* <unqualified-name> [<abi-tags>], qualified by scope when there is one. */
static int parse_unqualified_name(dm_parser *p, int scope)
{
    char c = peek(p);
    int n;
    if (is_digit(c)) {
        n = dm_parse_source_name(p);
    } else if (is_lower(c)) {
        if (c == 'o' && peek_next(p) == 'n')
            advance(p, 2);
        n = dm_parse_operator_name(p);
    } else if (c == 'D' && peek_next(p) == 'C') {
        return NONE;    /* structured binding */
    } else if (c == 'C' || c == 'D') {
        n = parse_ctor_dtor_name(p);
    } else if (c == 'L') {
        /* internal linkage (_ZL3foov): the name, then a discriminator */
        advance(p, 1);
        n = dm_parse_source_name(p);
        if (n == NONE || !parse_discriminator(p))
            return NONE;
    } else if (c == 'U' && peek_next(p) == 'l') {
        n = parse_lambda(p);
    } else if (c == 'U' && peek_next(p) == 't') {
        n = parse_unnamed_type(p);
    } else {
        return NONE;    /* includes modules (W) and friends (F) */
    }
    if (peek(p) == 'B')
        n = parse_abi_tags(p, n);
    if (scope != NONE)
        n = node_pair(p, NK_QUAL, scope, n);
    return n;
}

/* S_ S0_ ... (back references, base 36) and St Sa Sb Ss Si So Sd. */
static int parse_substitution(dm_parser *p)
{
    if (!accept(p, 'S'))
        return NONE;
    char c = next_char(p);
    if (c == '_' || is_digit(c) || is_upper(c)) {
        unsigned id = 0;
        if (c != '_') {
            do {
                unsigned digit;
                if (is_digit(c))
                    digit = (unsigned)(c - '0');
                else if (is_upper(c))
                    digit = (unsigned)(c - 'A' + 10);
                else
                    return NONE;
                if (id > (UINT_MAX - digit) / 36)
                    return NONE;
                id = id * 36 + digit;
                c = next_char(p);
            } while (c != '_');
            id++;
        }
        return id < (unsigned)p->sub_count ? p->subs[id] : NONE;
    }
    for (size_t i = 0; i < sizeof std_subs / sizeof std_subs[0]; i++) {
        const std_sub *sub = &std_subs[i];
        if (sub->code != c)
            continue;
        if (sub->class_name != NULL)
            p->last_name = node_text(p, NK_SUB_STD, sub->class_name, strlen(sub->class_name));
        int n = node_text(p, NK_SUB_STD, sub->expansion, strlen(sub->expansion));
        if (peek(p) == 'B') {
            /* with ABI tags the abbreviation becomes a substitution candidate */
            n = parse_abi_tags(p, n);
            if (!add_sub(p, n))
                return NONE;
        }
        return n;
    }
    return NONE;
}

/* T_ T0_ ... */
int dm_parse_template_param(dm_parser *p)
{
    if (!accept(p, 'T'))
        return NONE;
    int num = parse_compact_number(p);
    return num < 0 ? NONE : node_num(p, NK_TPARAM, NONE, num);
}

/* The components of a nested name, each (but the last) a substitution. */
static int parse_prefix(dm_parser *p)
{
    int n = NONE;
    for (;;) {
        char c = peek(p);
        if (c == 'D' && (peek_next(p) == 'T' || peek_next(p) == 't')) {
            return NONE;    /* decltype */
        } else if (c == 'I') {
            if (n == NONE)
                return NONE;
            n = node_pair(p, NK_TEMPLATE, n, dm_parse_template_args(p));
        } else if (c == 'T') {
            if (n != NONE)
                return NONE;
            n = dm_parse_template_param(p);
        } else if (c == 'M') {
            advance(p, 1);  /* a lambda's initializer scope: prints as a plain scope */
            continue;
        } else if (c == 'S') {
            if (n != NONE)
                return NONE;
            n = parse_substitution(p);
            if (n == NONE)
                return NONE;
            continue;       /* already a substitution */
        } else {
            n = parse_unqualified_name(p, n);
        }
        if (n == NONE)
            return NONE;
        if (peek(p) == 'E')
            return n;
        if (!add_sub(p, n))
            return NONE;
    }
}

/* N [<CV-qualifiers>] [<ref-qualifier>] <prefix> E */
static int parse_nested_name(dm_parser *p)
{
    int outer, inner;
    advance(p, 1);
    if (!dm_parse_cv_chain(p, 1, &outer, &inner))
        return NONE;
    int ref = NONE;
    if (peek(p) == 'R' || peek(p) == 'O') {
        ref = node_new(p, next_char(p) == 'R' ? NK_REF_THIS : NK_RVREF_THIS, NONE, NONE);
        if (ref == NONE)
            return NONE;
    }
    int prefix = parse_prefix(p);
    if (prefix == NONE)
        return NONE;
    int n = prefix;
    if (inner != NONE) {
        p->nodes[inner].left = (int16_t)prefix;
        n = outer;
    }
    if (ref != NONE) {
        p->nodes[ref].left = (int16_t)n;
        n = ref;
    }
    return accept(p, 'E') ? n : NONE;
}

/* Z <function encoding> E <entity> [<discriminator>] (or s: a string
 * literal, or d <number> _: in a default argument). The enclosing
 * function prints with its parameters but without its return type. */
static int parse_local_name(dm_parser *p)
{
    advance(p, 1);
    int function = dm_parse_encoding(p, 0);
    if (function == NONE || !accept(p, 'E'))
        return NONE;
    int entity;
    if (accept(p, 's')) {
        if (!parse_discriminator(p))
            return NONE;
        entity = node_text(p, NK_NAME, "string literal", 14);
    } else {
        int default_arg = -1;
        if (accept(p, 'd')) {
            default_arg = parse_compact_number(p);
            if (default_arg < 0)
                return NONE;
        }
        entity = dm_parse_name(p, 0);
        if (entity == NONE)
            return NONE;
        int kind = kind_of(p, entity);
        if (kind != NK_LAMBDA && kind != NK_UNNAMED_TYPE && !parse_discriminator(p))
            return NONE;
        if (default_arg >= 0)
            entity = node_num(p, NK_DEFAULT_ARG, entity, default_arg);
    }
    if (kind_of(p, function) == NK_TYPED) {
        int type = p->nodes[function].right;
        if (kind_of(p, type) == NK_FUNC_TYPE)
            p->nodes[type].left = NONE;
    }
    return node_pair(p, NK_LOCAL, function, entity);
}

static int parse_name_inner(dm_parser *p, int substable)
{
    char c = peek(p);
    int n = NONE;
    int from_sub = 0;
    if (c == 'N')
        n = parse_nested_name(p);
    else if (c == 'Z')
        n = parse_local_name(p);
    else if (c == 'U')
        n = parse_unqualified_name(p, NONE);
    else {
        if (c == 'S' && peek_next(p) == 't') {
            advance(p, 2);
            n = node_text(p, NK_NAME, "std", 3);
        }
        if (peek(p) == 'S') {
            if (n != NONE)
                return NONE;
            n = parse_substitution(p);
            if (n == NONE)
                return NONE;
            from_sub = 1;
        }
        if (!from_sub)
            n = parse_unqualified_name(p, n);
        if (n != NONE && peek(p) == 'I') {
            /* <unscoped-template-name> <template-args>: the template's
             * name is a substitution candidate unless it was one */
            if (!from_sub && !add_sub(p, n))
                return NONE;
            n = node_pair(p, NK_TEMPLATE, n, dm_parse_template_args(p));
            from_sub = 0;
        }
    }
    if (substable && !from_sub && !add_sub(p, n))
        return NONE;
    return n;
}

int dm_parse_name(dm_parser *p, int substable)
{
    if (!enter(p))
        return NONE;
    return leave(p, parse_name_inner(p, substable));
}

/* h <offset> _ | v <offset> _ <virtual offset> _ */
static int parse_call_offset(dm_parser *p, char c)
{
    if (c == '\0')
        c = next_char(p);
    if (c == 'h') {
        parse_number(p);
    } else if (c == 'v') {
        parse_number(p);
        if (!accept(p, '_'))
            return 0;
        parse_number(p);
    } else {
        return 0;
    }
    return accept(p, '_');
}

/* "vtable for " and the like, for `of` */
static int special_node(dm_parser *p, int kind, int of)
{
    return of == NONE ? NONE : node_num(p, NK_SPECIAL, of, kind);
}

/* T...: vtables, typeinfo, thunks; G...: guard variables, clones. */
static int parse_special_name(dm_parser *p)
{
    if (accept(p, 'T')) {
        switch (next_char(p)) {
        case 'V': return special_node(p, SP_VTABLE, dm_parse_type(p));
        case 'T': return special_node(p, SP_VTT, dm_parse_type(p));
        case 'I': return special_node(p, SP_TYPEINFO, dm_parse_type(p));
        case 'S': return special_node(p, SP_TYPEINFO_NAME, dm_parse_type(p));
        case 'F': return special_node(p, SP_TYPEINFO_FN, dm_parse_type(p));
        case 'J': return special_node(p, SP_JAVA_CLASS, dm_parse_type(p));
        case 'H': return special_node(p, SP_TLS_INIT, dm_parse_name(p, 0));
        case 'W': return special_node(p, SP_TLS_WRAPPER, dm_parse_name(p, 0));
        case 'h':
            return parse_call_offset(p, 'h') ? special_node(p, SP_THUNK, dm_parse_encoding(p, 0)) : NONE;
        case 'v':
            return parse_call_offset(p, 'v')
                ? special_node(p, SP_VIRTUAL_THUNK, dm_parse_encoding(p, 0)) : NONE;
        case 'c':
            if (!parse_call_offset(p, '\0') || !parse_call_offset(p, '\0'))
                return NONE;
            return special_node(p, SP_COVARIANT_THUNK, dm_parse_encoding(p, 0));
        case 'C': {
            int derived = dm_parse_type(p);
            if (derived == NONE || parse_number(p) < 0 || !accept(p, '_'))
                return NONE;
            return node_pair(p, NK_CTOR_VTABLE, dm_parse_type(p), derived);
        }
        default:
            return NONE;
        }
    }
    if (accept(p, 'G')) {
        switch (next_char(p)) {
        case 'V': return special_node(p, SP_GUARD, dm_parse_name(p, 0));
        case 'A': return special_node(p, SP_HIDDEN_ALIAS, dm_parse_encoding(p, 0));
        case 'R': {
            int name = dm_parse_name(p, 0);
            return node_pair(p, NK_REFTEMP, name, node_num(p, NK_NUMBER, NONE, parse_number(p)));
        }
        case 'T':
            if (next_char(p) == 'n')
                return special_node(p, SP_NONTRANSACTION_CLONE, dm_parse_encoding(p, 0));
            return special_node(p, SP_TRANSACTION_CLONE, dm_parse_encoding(p, 0));
        default:
            return NONE;
        }
    }
    return NONE;
}

/* Whether a function's encoding starts with its return type: templates do,
 * except constructors, destructors and conversion operators. */
static int is_ctor_dtor_or_conversion(const dm_parser *p, int n)
{
    for (;;) {
        int kind = kind_of(p, n);
        if (kind == NK_QUAL || kind == NK_LOCAL)
            n = p->nodes[n].right;
        else
            return kind == NK_CTOR || kind == NK_DTOR || kind == NK_CONVERSION;
    }
}

static int has_return_type(const dm_parser *p, int n)
{
    for (;;) {
        int kind = kind_of(p, n);
        if (kind == NK_LOCAL)
            n = p->nodes[n].right;
        else if (is_fnqual(kind))
            n = p->nodes[n].left;
        else if (kind == NK_TEMPLATE)
            return !is_ctor_dtor_or_conversion(p, p->nodes[n].left);
        else
            return 0;
    }
}

/* <encoding> ::= <function name> <bare-function-type> | <data name> |
 * <special-name> */
static int parse_encoding_inner(dm_parser *p, int top_level)
{
    char c = peek(p);
    if (c == 'G' || c == 'T')
        return parse_special_name(p);
    int name = dm_parse_name(p, 0);
    c = peek(p);
    if (name == NONE || c == '\0' || c == 'E')
        return name;
    int type = dm_parse_bare_function_type(p, has_return_type(p, name));
    if (type == NONE)
        return NONE;
    /* a function local to another (its encoding follows Z) prints without
     * return type, which would read as the outer function's */
    if (!top_level && kind_of(p, name) == NK_LOCAL)
        p->nodes[type].left = NONE;
    return node_new(p, NK_TYPED, name, type);
}

int dm_parse_encoding(dm_parser *p, int top_level)
{
    if (!enter(p))
        return NONE;
    return leave(p, parse_encoding_inner(p, top_level));
}

/* .cold .part.0 .isra.0 .constprop.0 .lto_priv.0 ...: gcc's clones */
static int parse_clone_suffix(dm_parser *p, int encoding)
{
    const char *start = p->pos;
    const char *end = start;
    if (end[0] == '.' && (is_lower(end[1]) || is_digit(end[1]) || end[1] == '_')) {
        end += 2;
        while (is_lower(*end) || is_digit(*end) || *end == '_')
            end++;
    }
    while (end[0] == '.' && is_digit(end[1])) {
        end += 2;
        while (is_digit(*end))
            end++;
    }
    advance(p, (int)(end - start));
    return node_pair(p, NK_CLONE, encoding, node_text(p, NK_NAME, start, (size_t)(end - start)));
}

/* _Z <encoding> <clone suffix>*, all of the input. */
int dm_parse_mangled_name(dm_parser *p)
{
    if (!accept(p, '_') || !accept(p, 'Z'))
        return NONE;
    int n = dm_parse_encoding(p, 1);
    while (n != NONE && peek(p) == '.'
           && (is_lower(peek_next(p)) || is_digit(peek_next(p)) || peek_next(p) == '_'))
        n = parse_clone_suffix(p, n);
    return peek(p) == '\0' ? n : NONE;
}
