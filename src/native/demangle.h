/*
 * demangle: C++ symbol names (the Itanium ABI's _Z... mangling, what g++ and
 * clang emit on Linux) as people read them in a profile: the qualified name
 * with template arguments, without the parameter list or return type, as
 * async-profiler and perf's flame graphs show them:
 *   _ZN20G1ParScanThreadState20steal_and_trim_queueEP19GenericTaskQueueSet...
 *     -> G1ParScanThreadState::steal_and_trim_queue
 *   _ZN10JavaThread3runEv -> JavaThread::run
 *   _ZN8G1RemSet13scan_heap_rootsI...EEvv ... -> with its <...> template arguments
 * Exactly c++filt's text (binutils 2.40) less the outermost function's
 * parameter list, its return type (templates) and its own const/volatile/&/&&
 * qualifiers: the std:: abbreviations written out as c++filt writes them
 * (std::basic_string<char, std::char_traits<char>, std::allocator<char> >),
 * a local entity's enclosing function with its parameters
 * (foo()::{lambda(int)#1}::operator()), "vtable for X", "non-virtual thunk
 * to X::f". Pure C, no allocation beyond the caller's buffer, no global
 * state (reentrant); about 22 KB of stack, at most ~40 KB for pathological
 * input; never reads past the input's NUL; fuzzed (tests/fuzz/fuzz_elf.c).
 */
#ifndef HPROF_DEMANGLE_H
#define HPROF_DEMANGLE_H

#include <stddef.h>

/* Write the demangled name of `mangled` into out (always NUL-terminated when
 * outlen > 0, cut to fit; nothing written when outlen is 0; out must not
 * overlap mangled). Returns 1 if it was a mangled C++ name that was
 * demangled; 0 if it is not one (a C name such as "memcpy", copied as is) or
 * uses a part of the grammar this demangler does not know (the mangled name
 * is copied as is, so a frame is never misnamed): most expressions in
 * template arguments, decltype, vector types, modules; and whatever c++filt
 * does not demangle either (names over 1024 characters, a data symbol with
 * a clone suffix). The return value does not depend on outlen. Clones'
 * suffixes (".cold", ".part.0", ".isra.0", ".constprop.0", ".lto_priv.0")
 * are kept after the name as " [clone .cold]", as c++filt writes them. */
int demangle_symbol(const char *mangled, char *out, size_t outlen);

#endif
