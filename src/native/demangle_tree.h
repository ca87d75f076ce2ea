/*
 * demangle_tree.h (private to src/native/demangle*.c): the tree the parser
 * builds and the printer walks, its limits, and the tables of builtin types
 * and operators that both sides index (demangle.c says how the passes fit).
 */
#ifndef HPROF_DEMANGLE_TREE_H
#define HPROF_DEMANGLE_TREE_H

#include <stdint.h>

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
    NK_BUILTIN,         /* num: index into dm_builtin_types */
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

/* Defined in demangle_parse_type.c, whose parse_d_type indexes them; the printer writes them. */
extern const builtin_type dm_builtin_types[BT_COUNT];

/* Operator names, as binutils 2.40 knows them (no "nx"); printed "operator"
 * + name, with a space before a word: operator new. */
typedef struct {
    char code[3];
    const char *name;
} operator_info;

/* Defined in demangle_parse.c, whose dm_parse_operator_name looks them up;
 * the printer writes them. */
extern const operator_info dm_operators[];

/* Defined in demangle_print.c: "vtable for " ... by special_kind, for both printer files. */
extern const char *const dm_special_prefix[];

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_lower(char c) { return c >= 'a' && c <= 'z'; }

/* Qualifiers of a member function (`this`), carried on its name. */
static inline int is_fnqual(int kind)
{
    return kind == NK_RESTRICT_THIS || kind == NK_VOLATILE_THIS || kind == NK_CONST_THIS
        || kind == NK_REF_THIS || kind == NK_RVREF_THIS;
}

static inline int is_cv(int kind)
{
    return kind == NK_RESTRICT || kind == NK_VOLATILE || kind == NK_CONST;
}

#endif
