/*
 * elf_symbols: the function symbols of one ELF64 object, read from its bytes,
 * for naming native frames (addresses the sampler recorded) off the signal
 * path.
 *
 * Pure C, no I/O: the caller maps or reads the file and hands over its bytes;
 * every offset, size and index in them is checked before it is used, so a
 * truncated or hostile file gives an error, never a read out of bounds
 * (tests/fuzz/fuzz_elf.c). Addresses are the object's own virtual addresses
 * (st_value): the caller subtracts the load bias (dl_iterate_phdr's
 * dlpi_addr) from a runtime address before looking it up.
 */
#ifndef HPROF_ELF_SYMBOLS_H
#define HPROF_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct elf_symbol {
    uint64_t start;                /* st_value */
    uint64_t size;                 /* st_size; 0: up to the next symbol */
    uint32_t name;                 /* offset of its NUL-terminated name in elf_symbols.names */
} elf_symbol;

typedef struct elf_symbols {
    elf_symbol *symbols;           /* sorted by start, one per address (aliases merged: the
                                    * .symtab name, a global one, the fewest leading '_') */
    size_t      count;
    char       *names;             /* the names, copied: the ELF bytes may go after parsing */
    size_t      names_size;
} elf_symbols;

/* The STT_FUNC and STT_GNU_IFUNC symbols with a non-zero address of .symtab
 * and .dynsym (both, merged; an object stripped of .symtab still has
 * .dynsym). 0, or -1 with a message in err (not ELF64 little-endian, a
 * section out of the file's bounds, ...). An object with no function
 * symbol at all is no error: count 0. *out is always safe to free. */
int  elf_symbols_parse(const uint8_t *bytes, size_t size, elf_symbols *out, char *err, size_t errlen);

/* The symbol that covers vaddr (start <= vaddr < start + size, or up to the
 * next symbol's start where size is 0, at most 1 MiB past its start), its
 * offset from the symbol's start in *offset; NULL if none. */
const char *elf_symbols_lookup(const elf_symbols *syms, uint64_t vaddr, uint64_t *offset);

/* The vaddr of a function symbol by exact name (the lowest if several), 0
 * if none. Only the names elf_symbols_parse kept are seen: an alias that
 * lost its shared address to a preferred name is not (see elf_symbols.c),
 * and data symbols are never collected, so the JVM's statics (CodeCache's
 * _heaps, _low_bound: STT_OBJECT, local, in .symtab) are not found here. */
uint64_t elf_symbols_find(const elf_symbols *syms, const char *name);

void elf_symbols_free(elf_symbols *syms);

/* The NT_GNU_BUILD_ID note as lowercase hex in out ("" if none): 1 if found. */
int  elf_build_id(const uint8_t *bytes, size_t size, char *out, size_t outlen);

/* The file name in .gnu_debuglink ("" if none): 1 if found. */
int  elf_debuglink(const uint8_t *bytes, size_t size, char *out, size_t outlen);

/* 1 if the object has a .symtab section (else only exported .dynsym names:
 * worth looking for separate debug info, see elf_debug_paths). */
int  elf_has_symtab(const uint8_t *bytes, size_t size);

/* Where separate debug info for an object may be, in the order gdb looks:
 * /usr/lib/debug/.build-id/ab/cdef....debug, then <dir>/<debuglink>,
 * <dir>/.debug/<debuglink>, /usr/lib/debug<dir>/<debuglink>. Writes up to
 * max NUL-terminated paths of at most PATH_MAX into paths[i]; returns how
 * many. Pure: it only composes names, the caller tries them. */
int  elf_debug_paths(const char *object_path, const char *build_id_hex, const char *debuglink,
                     char (*paths)[4096], int max);

#endif
