/*
 * demangle: Itanium C++ ABI names (g++'s _Z...) as a profile shows them: the
 * qualified name with its template arguments, without the outermost
 * function's parameter list, return type and cv/ref qualifiers.
 *
 * The output must be what c++filt (binutils' libiberty, cp-demangle.c)
 * prints for the same name, less those three parts, character for character:
 * people compare our flame graphs with perf's and grep for names they saw in
 * gdb. So this follows libiberty's model, in two passes:
 *   - a parser turns the mangled name into a tree of nodes in a fixed array.
 *     A tree, not text, because later parts of a name refer back to earlier
 *     ones (substitutions S_, template parameters T_) and because C++ type
 *     syntax is inside out (`int (*)[3]`, `void (A::*)() const`): a type is
 *     only printable once the whole of it is known;
 *   - a printer walks the tree into the caller's buffer with libiberty's
 *     rules for spaces, parentheses and the `> >` of nested templates. It
 *     runs twice: first over the whole name, parameters included, into no
 *     buffer, because where c++filt cannot print a name (a template
 *     parameter that does not resolve) we must not print one either; then
 *     the short form into the caller's buffer.
 * Whatever this parser does not know (expressions beyond literals, T_ and
 * &f; decltype, vector types, modules, lambdas with explicit template
 * heads, ...) makes it give up: the mangled name is copied and 0 returned,
 * so a frame is never misnamed. The corner cases follow the c++filt of
 * binutils 2.40 (Debian 12), which tests/unit/test_native_demangle.c
 * compares with on every C++ symbol of libstdc++.
 *
 * No allocation: the tree lives on the stack (DM_MAX_NODES), recursion is
 * bounded (DM_MAX_DEPTH while parsing, DM_MAX_PRINT_DEPTH and a step budget
 * while printing, since substitutions make the tree a DAG that could
 * otherwise expand exponentially), and the input is never read past its NUL.
 */
#include "demangle.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

enum {
    DM_MAX_MANGLED = 1024,      /* longer names c++filt refuses too (libiberty's stack guard) */
    DM_MAX_NODES = 1024,        /* libjvm's longest names (350 characters) need ~250 */
    DM_MAX_SUBS = 256,
    DM_MAX_DEPTH = 64,          /* nesting of types/names while parsing; real names need < 20 */
    DM_MAX_PRINT_DEPTH = 64,    /* nesting while printing; real names need < 32 */
    DM_MAX_PRINT_STEPS = 65536, /* nodes visited while printing */
    DM_MAX_SCOPES = 16,         /* references to template parameters, see print_reference */
    DM_MAX_SCOPE_TEMPLATES = 8,
    DM_MAX_CLONES = 8,          /* ".constprop.0.isra.0.cold" ... */
};

#define NONE (-1)

/* ------------------------------------------------------------------ */
/* The tree                                                            */

enum node_kind {
    NK_NAME,            /* text: an identifier, a literal's digits, a clone suffix */
    NK_SUB_STD,         /* text: a std:: abbreviation (St, Sa, Ss, ...) */
    NK_QUAL,            /* left::right */
    NK_LOCAL,           /* left (a function's encoding)::right */
    NK_TYPED,           /* left (a name) with right (its function type) */
    NK_TEMPLATE,        /* left<right> */
    NK_TPARAM,          /* num: T_ is 0, T0_ is 1 */
    NK_CTOR,            /* left: the class name */
    NK_DTOR,
    NK_SPECIAL,         /* num: enum special_kind; left: what it is for */
    NK_CTOR_VTABLE,     /* construction vtable for left-in-right */
    NK_REFTEMP,         /* reference temporary #right for left */
    NK_RESTRICT, NK_VOLATILE, NK_CONST,                    /* of a type */
    NK_RESTRICT_THIS, NK_VOLATILE_THIS, NK_CONST_THIS,     /* of a member function */
    NK_REF_THIS, NK_RVREF_THIS,
    NK_POINTER, NK_REFERENCE, NK_RVREF, NK_COMPLEX, NK_IMAGINARY,
    NK_VENDOR_TYPE,     /* u <source-name> */
    NK_BUILTIN,         /* num: index into builtin_types */
    NK_FUNC_TYPE,       /* left: return type or NONE, right: NK_ARGLIST */
    NK_ARRAY,           /* left: dimension (NK_NAME) or NONE, right: element */
    NK_PTRMEM,          /* left: class, right: member type */
    NK_ARGLIST,         /* left: a type or NONE (f(void)), right: the next NK_ARGLIST */
    NK_TARGLIST,        /* the same for template arguments */
    NK_OPERATOR,        /* num: index into operators */
    NK_CONVERSION,      /* operator left */
    NK_UNARY,           /* an expression: left (an NK_OPERATOR) applied to right */
    NK_LITERAL,         /* (left)right, with short forms for ints and bool */
    NK_LITERAL_NEG,
    NK_NUMBER,          /* num */
    NK_PACK_EXPANSION,  /* left... */
    NK_LAMBDA,          /* left: parameters, num: discriminator */
    NK_UNNAMED_TYPE,    /* num */
    NK_TAGGED,          /* left[abi:right] */
    NK_DEFAULT_ARG,     /* left: the entity, num: parameter */
    NK_CLONE,           /* left [clone right] */
};

typedef struct {
    uint8_t kind;
    uint8_t printing;       /* nesting while printing: loops through T_ stop at 2 */
    uint16_t len;           /* of text */
    int16_t left, right;
    union {
        const char *text;
        int num;
    } u;
} dm_node;

enum special_kind {
    SP_VTABLE, SP_VTT, SP_TYPEINFO, SP_TYPEINFO_NAME, SP_TYPEINFO_FN, SP_JAVA_CLASS,
    SP_GUARD, SP_TLS_INIT, SP_TLS_WRAPPER,
    /* these wrap a function's encoding, whose parameters we drop too */
    SP_THUNK, SP_VIRTUAL_THUNK, SP_COVARIANT_THUNK, SP_HIDDEN_ALIAS,
    SP_TRANSACTION_CLONE, SP_NONTRANSACTION_CLONE,
};

static const char *const special_prefix[] = {
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

/* How a literal of a builtin type prints: 5 for int, 5u, 5l, true... */
enum literal_style {
    LIT_DEFAULT, LIT_INT, LIT_UNSIGNED, LIT_LONG, LIT_ULONG, LIT_LLONG, LIT_ULLONG,
    LIT_BOOL, LIT_FLOAT, LIT_VOID,
};

typedef struct {
    const char *name;
    uint8_t style;
} builtin_type;

/* a..z by letter (NULL: not a builtin), then the D-prefixed ones. */
enum { BT_DECIMAL32 = 26, BT_DECIMAL64, BT_DECIMAL128, BT_HALF, BT_CHAR8, BT_CHAR16,
       BT_CHAR32, BT_NULLPTR, BT_COUNT };

static const builtin_type builtin_types[BT_COUNT] = {
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

/* Operator names, as binutils 2.40 knows them (no "nx"); printed "operator"
 * + name, with a space before a word: operator new. */
typedef struct {
    char code[3];
    const char *name;
} operator_info;

static const operator_info operators[] = {
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

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }

/* Qualifiers of a member function (`this`), carried on its name. */
static int is_fnqual(int kind)
{
    return kind == NK_RESTRICT_THIS || kind == NK_VOLATILE_THIS || kind == NK_CONST_THIS
        || kind == NK_REF_THIS || kind == NK_RVREF_THIS;
}

static int is_cv(int kind)
{
    return kind == NK_RESTRICT || kind == NK_VOLATILE || kind == NK_CONST;
}

/* ------------------------------------------------------------------ */
/* Parser                                                              */

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

static char peek(const dm_parser *p) { return p->pos[0]; }
static char peek_next(const dm_parser *p) { return p->pos[0] ? p->pos[1] : '\0'; }

static void advance(dm_parser *p, int n)
{
    while (n-- > 0 && *p->pos)
        p->pos++;
}

static char next_char(dm_parser *p)
{
    char c = *p->pos;
    if (c)
        p->pos++;
    return c;
}

static int accept(dm_parser *p, char c)
{
    if (c == '\0' || *p->pos != c)
        return 0;
    p->pos++;
    return 1;
}

static int node_new(dm_parser *p, int kind, int left, int right)
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
static int node_pair(dm_parser *p, int kind, int left, int right)
{
    if (left == NONE || right == NONE)
        return NONE;
    return node_new(p, kind, left, right);
}

static int node_unary(dm_parser *p, int kind, int left)
{
    if (left == NONE)
        return NONE;
    return node_new(p, kind, left, NONE);
}

/* Text nodes are never empty (libiberty refuses those: `LiE` is no literal). */
static int node_text(dm_parser *p, int kind, const char *text, size_t len)
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

static int node_num(dm_parser *p, int kind, int left, int num)
{
    int n = node_new(p, kind, left, NONE);
    if (n != NONE)
        p->nodes[n].u.num = num;
    return n;
}

static int kind_of(const dm_parser *p, int n) { return n == NONE ? -1 : p->nodes[n].kind; }

static int add_sub(dm_parser *p, int n)
{
    if (n == NONE || p->sub_count >= DM_MAX_SUBS)
        return 0;
    p->subs[p->sub_count++] = (int16_t)n;
    return 1;
}

/* Recursion guard for the three entry points every cycle of the grammar
 * goes through (parse_type, parse_name, parse_encoding). */
static int enter(dm_parser *p)
{
    if (p->depth >= DM_MAX_DEPTH)
        return 0;
    p->depth++;
    return 1;
}

static int leave(dm_parser *p, int result)
{
    p->depth--;
    return result;
}

static int parse_type(dm_parser *p);
static int parse_name(dm_parser *p, int substable);
static int parse_encoding(dm_parser *p, int top_level);
static int parse_template_args(dm_parser *p);
static int parse_parmlist(dm_parser *p);
static int parse_expression(dm_parser *p);

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
static int parse_source_name(dm_parser *p)
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
        n = node_pair(p, NK_TAGGED, n, parse_source_name(p));
    p->last_name = hold_last_name;
    return n;
}

/* operator names: two letters, or cv <type> for a conversion. */
static int parse_operator_name(dm_parser *p)
{
    char c1 = next_char(p);
    char c2 = next_char(p);
    if (c1 == 'c' && c2 == 'v') {
        int was_conversion = p->is_conversion;
        p->is_conversion = 1;
        int n = node_unary(p, NK_CONVERSION, parse_type(p));
        p->is_conversion = was_conversion;
        return n;
    }
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (operators[i].code[0] == c1 && operators[i].code[1] == c2)
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
            (void)parse_type(p);    /* the base whose constructor is inherited; not printed */
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
    int params = parse_parmlist(p);
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
        n = parse_source_name(p);
    } else if (is_lower(c)) {
        if (c == 'o' && peek_next(p) == 'n')
            advance(p, 2);
        n = parse_operator_name(p);
    } else if (c == 'D' && peek_next(p) == 'C') {
        return NONE;    /* structured binding */
    } else if (c == 'C' || c == 'D') {
        n = parse_ctor_dtor_name(p);
    } else if (c == 'L') {
        /* internal linkage (_ZL3foov): the name, then a discriminator */
        advance(p, 1);
        n = parse_source_name(p);
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
static int parse_template_param(dm_parser *p)
{
    if (!accept(p, 'T'))
        return NONE;
    int num = parse_compact_number(p);
    return num < 0 ? NONE : node_num(p, NK_TPARAM, NONE, num);
}

/* [r] [V] [K] as a chain of nodes, outermost first; *inner is the node whose
 * left the qualified thing goes into. Member function qualifiers are the
 * _THIS kinds; so are those of a function type (K before F). */
static int parse_cv_chain(dm_parser *p, int member_fn, int *outer, int *inner)
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
static int parse_parmlist(dm_parser *p)
{
    int head = NONE;
    int tail = NONE;
    for (;;) {
        char c = peek(p);
        if (c == '\0' || c == 'E' || c == '.')
            break;
        if ((c == 'R' || c == 'O') && peek_next(p) == 'E')
            break;
        int type = parse_type(p);
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
        && builtin_types[p->nodes[first].u.num].style == LIT_VOID)
        p->nodes[head].left = NONE;
    return head;
}

/* [J] [<return type>] <parameter types> */
static int parse_bare_function_type(dm_parser *p, int has_return_type)
{
    if (accept(p, 'J'))
        has_return_type = 1;
    int ret = NONE;
    if (has_return_type) {
        ret = parse_type(p);
        if (ret == NONE)
            return NONE;
    }
    int params = parse_parmlist(p);
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
    int n = parse_bare_function_type(p, 1);
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
        dim = parse_expression(p);
        if (dim == NONE)
            return NONE;
    }
    if (!accept(p, '_'))
        return NONE;
    int element = parse_type(p);
    return element == NONE ? NONE : node_new(p, NK_ARRAY, dim, element);
}

/* M <class type> <member type> */
static int parse_ptrmem_type(dm_parser *p)
{
    advance(p, 1);
    int cls = parse_type(p);
    if (cls == NONE)
        return NONE;
    return node_pair(p, NK_PTRMEM, cls, parse_type(p));
}

/* r V K before a type: the qualified type is one substitution (not each
 * subset of its qualifiers). A ref-qualifier of a function type goes
 * outside so that it prints after the cv-qualifiers. */
static int parse_qualified_type(dm_parser *p)
{
    int outer, inner;
    if (!parse_cv_chain(p, 0, &outer, &inner) || outer == NONE)
        return NONE;
    int type = peek(p) == 'F' ? parse_function_type(p) : parse_type(p);
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
    int n = parse_template_param(p);
    if (n == NONE || peek(p) != 'I')
        return n;
    if (!p->is_conversion) {
        if (!add_sub(p, n))
            return NONE;
        return node_pair(p, NK_TEMPLATE, n, parse_template_args(p));
    }
    const char *hold_pos = p->pos;
    int hold_count = p->count;
    int hold_subs = p->sub_count;
    int args = parse_template_args(p);
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
        return node_unary(p, NK_PACK_EXPANSION, parse_type(p));
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
        n = node_unary(p, NK_VENDOR_TYPE, parse_source_name(p));
        break;
    case 'F': n = parse_function_type(p); break;
    case 'A': n = parse_array_type(p); break;
    case 'M': n = parse_ptrmem_type(p); break;
    case 'T': n = parse_template_param_type(p); break;
    case 'P': advance(p, 1); n = node_unary(p, NK_POINTER, parse_type(p)); break;
    case 'R': advance(p, 1); n = node_unary(p, NK_REFERENCE, parse_type(p)); break;
    case 'O': advance(p, 1); n = node_unary(p, NK_RVREF, parse_type(p)); break;
    case 'C': advance(p, 1); n = node_unary(p, NK_COMPLEX, parse_type(p)); break;
    case 'G': advance(p, 1); n = node_unary(p, NK_IMAGINARY, parse_type(p)); break;
    case 'U':
        return NONE;    /* vendor qualifiers */
    case 'D':
        n = parse_d_type(p, &can_subst);
        break;
    default:
        return parse_name(p, 1);    /* class or enum; adds its own substitution */
    }
    if (n == NONE || (can_subst && !add_sub(p, n)))
        return NONE;
    return n;
}

static int parse_type(dm_parser *p)
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
        n = parse_encoding(p, 0);
    } else {
        int type = parse_type(p);
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
static int parse_expression(dm_parser *p)
{
    if (!enter(p))
        return NONE;
    int n = NONE;
    if (peek(p) == 'L') {
        n = parse_expr_primary(p);
    } else if (peek(p) == 'T') {
        n = parse_template_param(p);
    } else if (peek(p) == 'a' && peek_next(p) == 'd') {
        int op = parse_operator_name(p);
        n = node_pair(p, NK_UNARY, op, parse_expression(p));
    }
    return leave(p, n);
}

static int parse_template_arg(dm_parser *p)
{
    switch (peek(p)) {
    case 'X': {
        advance(p, 1);
        int n = parse_expression(p);
        return accept(p, 'E') ? n : NONE;
    }
    case 'L':
        return parse_expr_primary(p);
    case 'I':
    case 'J':
        return parse_template_args(p);     /* an argument pack */
    default:
        return parse_type(p);
    }
}

/* I <template-arg>+ E (J ... E for a pack, which may be empty). The
 * arguments' names are not the class a later C1/D1 constructs. */
static int parse_template_args(dm_parser *p)
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
            n = node_pair(p, NK_TEMPLATE, n, parse_template_args(p));
        } else if (c == 'T') {
            if (n != NONE)
                return NONE;
            n = parse_template_param(p);
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
    if (!parse_cv_chain(p, 1, &outer, &inner))
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
    int function = parse_encoding(p, 0);
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
        entity = parse_name(p, 0);
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
            n = node_pair(p, NK_TEMPLATE, n, parse_template_args(p));
            from_sub = 0;
        }
    }
    if (substable && !from_sub && !add_sub(p, n))
        return NONE;
    return n;
}

static int parse_name(dm_parser *p, int substable)
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
        case 'V': return special_node(p, SP_VTABLE, parse_type(p));
        case 'T': return special_node(p, SP_VTT, parse_type(p));
        case 'I': return special_node(p, SP_TYPEINFO, parse_type(p));
        case 'S': return special_node(p, SP_TYPEINFO_NAME, parse_type(p));
        case 'F': return special_node(p, SP_TYPEINFO_FN, parse_type(p));
        case 'J': return special_node(p, SP_JAVA_CLASS, parse_type(p));
        case 'H': return special_node(p, SP_TLS_INIT, parse_name(p, 0));
        case 'W': return special_node(p, SP_TLS_WRAPPER, parse_name(p, 0));
        case 'h':
            return parse_call_offset(p, 'h') ? special_node(p, SP_THUNK, parse_encoding(p, 0)) : NONE;
        case 'v':
            return parse_call_offset(p, 'v')
                ? special_node(p, SP_VIRTUAL_THUNK, parse_encoding(p, 0)) : NONE;
        case 'c':
            if (!parse_call_offset(p, '\0') || !parse_call_offset(p, '\0'))
                return NONE;
            return special_node(p, SP_COVARIANT_THUNK, parse_encoding(p, 0));
        case 'C': {
            int derived = parse_type(p);
            if (derived == NONE || parse_number(p) < 0 || !accept(p, '_'))
                return NONE;
            return node_pair(p, NK_CTOR_VTABLE, parse_type(p), derived);
        }
        default:
            return NONE;
        }
    }
    if (accept(p, 'G')) {
        switch (next_char(p)) {
        case 'V': return special_node(p, SP_GUARD, parse_name(p, 0));
        case 'A': return special_node(p, SP_HIDDEN_ALIAS, parse_encoding(p, 0));
        case 'R': {
            int name = parse_name(p, 0);
            return node_pair(p, NK_REFTEMP, name, node_num(p, NK_NUMBER, NONE, parse_number(p)));
        }
        case 'T':
            if (next_char(p) == 'n')
                return special_node(p, SP_NONTRANSACTION_CLONE, parse_encoding(p, 0));
            return special_node(p, SP_TRANSACTION_CLONE, parse_encoding(p, 0));
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
    int name = parse_name(p, 0);
    c = peek(p);
    if (name == NONE || c == '\0' || c == 'E')
        return name;
    int type = parse_bare_function_type(p, has_return_type(p, name));
    if (type == NONE)
        return NONE;
    /* a function local to another (its encoding follows Z) prints without
     * return type, which would read as the outer function's */
    if (!top_level && kind_of(p, name) == NK_LOCAL)
        p->nodes[type].left = NONE;
    return node_new(p, NK_TYPED, name, type);
}

static int parse_encoding(dm_parser *p, int top_level)
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
static int parse_mangled_name(dm_parser *p)
{
    if (!accept(p, '_') || !accept(p, 'Z'))
        return NONE;
    int n = parse_encoding(p, 1);
    while (n != NONE && peek(p) == '.'
           && (is_lower(peek_next(p)) || is_digit(peek_next(p)) || peek_next(p) == '_'))
        n = parse_clone_suffix(p, n);
    return peek(p) == '\0' ? n : NONE;
}

/* ------------------------------------------------------------------ */
/* Printer                                                             */

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

static void print_comp(dm_printer *pr, int n);
static void print_mod_list(dm_printer *pr, modifier *mods, int suffix);

static int pkind(const dm_printer *pr, int n) { return n == NONE ? -1 : pr->nodes[n].kind; }
static int pleft(const dm_printer *pr, int n) { return pr->nodes[n].left; }
static int pright(const dm_printer *pr, int n) { return pr->nodes[n].right; }

static void put_char(dm_printer *pr, char c)
{
    if (pr->len + 1 < pr->outlen)
        pr->out[pr->len] = c;
    pr->len++;
    pr->last = c;
}

static void put_buf(dm_printer *pr, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        put_char(pr, s[i]);
}

static void put_str(dm_printer *pr, const char *s) { put_buf(pr, s, strlen(s)); }

static void put_num(dm_printer *pr, int num)
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

static void put_text(dm_printer *pr, int n)
{
    put_buf(pr, pr->nodes[n].u.text, pr->nodes[n].len);
}

/* The i-th argument of a template argument list (the whole list for i < 0). */
static int template_argument(const dm_printer *pr, int args, int i)
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

static int lookup_template_argument(dm_printer *pr, int tparam)
{
    if (pr->templates == NULL || pr->templates->decl == NONE) {
        pr->failed = 1;
        return NONE;
    }
    return template_argument(pr, pright(pr, pr->templates->decl), pr->nodes[tparam].u.num);
}

/* A template argument pack that a pack expansion's pattern uses. */
static int find_pack(dm_printer *pr, int n, int depth)
{
    if (n == NONE || depth > DM_MAX_PRINT_DEPTH || ++pr->steps > DM_MAX_PRINT_STEPS)
        return NONE;
    switch (pkind(pr, n)) {
    case NK_TPARAM: {
        int a = lookup_template_argument(pr, n);
        return pkind(pr, a) == NK_TARGLIST ? a : NONE;
    }
    case NK_PACK_EXPANSION: case NK_LAMBDA: case NK_NAME: case NK_TAGGED:
    case NK_OPERATOR: case NK_BUILTIN: case NK_SUB_STD: case NK_UNNAMED_TYPE:
    case NK_DEFAULT_ARG: case NK_NUMBER:
        return NONE;
    default: {
        int a = find_pack(pr, pleft(pr, n), depth + 1);
        return a != NONE ? a : find_pack(pr, pright(pr, n), depth + 1);
    }
    }
}

static int pack_length(const dm_printer *pr, int n)
{
    int count = 0;
    for (; pkind(pr, n) == NK_TARGLIST && pleft(pr, n) != NONE; n = pright(pr, n))
        count++;
    return count;
}

/* Argument and parameter lists: "a, b". A trailing run of elements that
 * print nothing (empty packs) loses its ", " too. */
static void print_list(dm_printer *pr, int n)
{
    if (pleft(pr, n) != NONE)
        print_comp(pr, pleft(pr, n));
    size_t keep = pr->len;
    for (int item = pright(pr, n); item != NONE && !pr->failed; item = pright(pr, item)) {
        put_str(pr, ", ");
        size_t mark = pr->len;
        if (pleft(pr, item) != NONE)
            print_comp(pr, pleft(pr, item));
        if (pr->len != mark)
            keep = pr->len;
    }
    pr->len = keep;
}

static void print_operator(dm_printer *pr, int n)
{
    const char *name = operators[pr->nodes[n].u.num].name;
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
    print_comp(pr, pleft(pr, n));
    put_str(pr, "::");
    int entity = pright(pr, n);
    if (pkind(pr, entity) == NK_DEFAULT_ARG) {
        put_str(pr, "{default arg#");
        put_num(pr, pr->nodes[entity].u.num + 1);
        put_str(pr, "}::");
        entity = pleft(pr, entity);
    }
    print_comp(pr, entity);
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
        print_comp(pr, pright(pr, fn));
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
        print_comp(pr, pleft(pr, array));
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
        print_comp(pr, pleft(pr, mod));
        put_str(pr, "::*");
        return;
    case NK_TYPED:
        print_comp(pr, pleft(pr, mod));
        return;
    default:
        print_comp(pr, mod);
        return;
    }
}

/* A local name waiting as a modifier: its entity without the qualifiers
 * (those print after the parameter list). */
static void print_local_mod(dm_printer *pr, int local)
{
    modifier *hold_modifiers = pr->modifiers;
    pr->modifiers = NULL;
    print_comp(pr, pleft(pr, local));
    pr->modifiers = hold_modifiers;
    put_str(pr, "::");
    int entity = pright(pr, local);
    if (pkind(pr, entity) == NK_DEFAULT_ARG) {
        put_str(pr, "{default arg#");
        put_num(pr, pr->nodes[entity].u.num + 1);
        put_str(pr, "}::");
        entity = pleft(pr, entity);
    }
    while (is_fnqual(pkind(pr, entity)))
        entity = pleft(pr, entity);
    print_comp(pr, entity);
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
    print_comp(pr, pright(pr, n));
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
    print_comp(pr, pleft(pr, n));
    if (pr->last == '<')
        put_char(pr, ' ');      /* operator< <int> */
    put_char(pr, '<');
    print_comp(pr, pright(pr, n));
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
    int a = lookup_template_argument(pr, n);
    if (pkind(pr, a) == NK_TARGLIST)
        a = template_argument(pr, a, pr->pack_index);
    if (a == NONE) {
        pr->failed = 1;
        return;
    }
    /* the argument may itself use the parameters of an outer template */
    const template_link *hold = pr->templates;
    pr->templates = hold->next;
    print_comp(pr, a);
    pr->templates = hold;
}

static void print_modifier(dm_printer *pr, int n, int inner)
{
    modifier dpm = { pr->modifiers, n, 0, pr->templates };
    pr->modifiers = &dpm;
    print_comp(pr, inner != NONE ? inner : pleft(pr, n));
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
        int a = lookup_template_argument(pr, sub);
        if (pkind(pr, a) == NK_TARGLIST)
            a = template_argument(pr, a, pr->pack_index);
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
            print_comp(pr, pleft(pr, n));
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
        print_comp(pr, pleft(pr, n));
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
    print_comp(pr, pright(pr, n));
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
    print_comp(pr, pright(pr, n));
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
        print_comp(pr, type);
        if (pr->current_template != NONE)
            pr->templates = dpt.next;
        return;
    }
    print_comp(pr, pleft(pr, type));
    if (pr->current_template != NONE)
        pr->templates = dpt.next;
    if (pr->last == '<')
        put_char(pr, ' ');
    put_char(pr, '<');
    print_comp(pr, pright(pr, type));
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
        style = builtin_types[pr->nodes[type].u.num].style;
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
    print_comp(pr, type);
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
    int pack = pr->lambda_tpl_parms ? NONE : find_pack(pr, pattern, 0);
    if (pack == NONE) {
        /* only function parameter packs: the pattern and "..." */
        int simple = pkind(pr, pattern) == NK_NAME || pkind(pr, pattern) == NK_QUAL;
        if (!simple)
            put_char(pr, '(');
        print_comp(pr, pattern);
        if (!simple)
            put_char(pr, ')');
        put_str(pr, "...");
        return;
    }
    int len = pack_length(pr, pack);
    for (int i = 0; i < len && !pr->failed; i++) {
        if (i)
            put_str(pr, ", ");
        pr->pack_index = i;
        print_comp(pr, pattern);
    }
}

static void print_lambda(dm_printer *pr, int n)
{
    int saved_tpl_parms = pr->lambda_tpl_parms;
    template_link dpt = { pr->templates, NONE };
    put_str(pr, "{lambda(");
    pr->templates = &dpt;
    pr->lambda_tpl_parms = 1;
    print_comp(pr, pleft(pr, n));
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
    put_str(pr, operators[pr->nodes[pleft(pr, n)].u.num].name);
    int simple = pkind(pr, operand) == NK_NAME || pkind(pr, operand) == NK_QUAL;
    if (!simple)
        put_char(pr, '(');
    print_comp(pr, operand);
    if (!simple)
        put_char(pr, ')');
}

static void print_special(dm_printer *pr, int n)
{
    put_str(pr, special_prefix[pr->nodes[n].u.num]);
    print_comp(pr, pleft(pr, n));
}

static void print_comp_inner(dm_printer *pr, int n)
{
    switch (pkind(pr, n)) {
    case NK_NAME: case NK_SUB_STD:
        put_text(pr, n);
        return;
    case NK_TAGGED:
        print_comp(pr, pleft(pr, n));
        put_str(pr, "[abi:");
        print_comp(pr, pright(pr, n));
        put_char(pr, ']');
        return;
    case NK_QUAL: case NK_LOCAL:
        print_scoped(pr, n);
        return;
    case NK_TYPED: print_typed_name(pr, n); return;
    case NK_TEMPLATE: print_template_node(pr, n); return;
    case NK_TPARAM: print_template_param(pr, n); return;
    case NK_CTOR:
        print_comp(pr, pleft(pr, n));
        return;
    case NK_DTOR:
        put_char(pr, '~');
        print_comp(pr, pleft(pr, n));
        return;
    case NK_SPECIAL: print_special(pr, n); return;
    case NK_CTOR_VTABLE:
        put_str(pr, "construction vtable for ");
        print_comp(pr, pleft(pr, n));
        put_str(pr, "-in-");
        print_comp(pr, pright(pr, n));
        return;
    case NK_REFTEMP:
        put_str(pr, "reference temporary #");
        print_comp(pr, pright(pr, n));
        put_str(pr, " for ");
        print_comp(pr, pleft(pr, n));
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
        put_str(pr, builtin_types[pr->nodes[n].u.num].name);
        return;
    case NK_VENDOR_TYPE:
        print_comp(pr, pleft(pr, n));
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

static void print_comp(dm_printer *pr, int n)
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

/* A name as the profile shows it: a function's without return type,
 * parameters or qualifiers of its own (not even on a local class's member:
 * f()::A::g() const -> f()::A::g). */
static void print_outer_name(dm_printer *pr, int name)
{
    while (is_fnqual(pkind(pr, name)))
        name = pleft(pr, name);
    if (pkind(pr, name) != NK_LOCAL) {
        print_comp(pr, name);
        return;
    }
    print_comp(pr, pleft(pr, name));
    put_str(pr, "::");
    int entity = pright(pr, name);
    if (pkind(pr, entity) == NK_DEFAULT_ARG) {
        put_str(pr, "{default arg#");
        put_num(pr, pr->nodes[entity].u.num + 1);
        put_str(pr, "}::");
        entity = pleft(pr, entity);
    }
    while (is_fnqual(pkind(pr, entity)))
        entity = pleft(pr, entity);
    print_comp(pr, entity);
}

/* The outermost encoding: a function prints as its name only; thunks and
 * transaction clones of a function too, after their "... to ". */
static void print_entity(dm_printer *pr, int n)
{
    while (pkind(pr, n) == NK_SPECIAL && pr->nodes[n].u.num >= SP_THUNK) {
        put_str(pr, special_prefix[pr->nodes[n].u.num]);
        n = pleft(pr, n);
    }
    print_outer_name(pr, pkind(pr, n) == NK_TYPED ? pleft(pr, n) : n);
}

static void printer_init(dm_printer *pr, dm_node *nodes, char *out, size_t outlen)
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
static int printable_in_full(dm_printer *pr, int root)
{
    int clones = 0;
    while (pkind(pr, root) == NK_CLONE) {
        root = pleft(pr, root);
        clones++;
    }
    print_comp(pr, root);
    return !pr->failed && clones <= DM_MAX_CLONES;
}

static int print_top(dm_printer *pr, int root)
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

static void copy_name(const char *name, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    size_t i = 0;
    for (; name[i] != '\0' && i + 1 < outlen; i++)
        out[i] = name[i];
    out[i] = '\0';
}

int demangle_symbol(const char *mangled, char *out, size_t outlen)
{
    if (mangled == NULL) {
        copy_name("", out, outlen);
        return 0;
    }
    if (mangled[0] == '_' && mangled[1] == 'Z' && strnlen(mangled, DM_MAX_MANGLED + 1) <= DM_MAX_MANGLED) {
        dm_parser parser;
        parser.pos = mangled;
        parser.depth = 0;
        parser.last_name = NONE;
        parser.is_conversion = 0;
        parser.count = 0;
        parser.sub_count = 0;
        int root = parse_mangled_name(&parser);
        if (root != NONE) {
            dm_printer printer;
            printer_init(&printer, parser.nodes, NULL, 0);
            if (printable_in_full(&printer, root)) {
                printer_init(&printer, parser.nodes, out, outlen);
                if (print_top(&printer, root))
                    return 1;
            }
        }
    }
    copy_name(mangled, out, outlen);
    return 0;
}
