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
 *
 * Files: demangle_tree.h (the tree, limits, tables); demangle_parser.h,
 * demangle_parse.c (names, encodings), demangle_parse_type.c (types,
 * template arguments, expressions); demangle_printer.h, demangle_print.c
 * (the top of the printer), demangle_print_node.c (each kind of node); this
 * file, the entry point.
 *
 * No allocation: the tree lives on the stack (DM_MAX_NODES), recursion is
 * bounded (DM_MAX_DEPTH while parsing, DM_MAX_PRINT_DEPTH and a step budget
 * while printing, since substitutions make the tree a DAG that could
 * otherwise expand exponentially), and the input is never read past its NUL.
 */
#include "demangle.h"
#include "demangle_parser.h"
#include "demangle_printer.h"

#include <string.h>

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
        int root = dm_parse_mangled_name(&parser);
        if (root != NONE) {
            dm_printer printer;
            dm_printer_init(&printer, parser.nodes, NULL, 0);
            if (dm_printable_in_full(&printer, root)) {
                dm_printer_init(&printer, parser.nodes, out, outlen);
                if (dm_print_top(&printer, root))
                    return 1;
            }
        }
    }
    copy_name(mangled, out, outlen);
    return 0;
}
