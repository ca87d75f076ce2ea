/*
 * Fuzz target for the native-frame readers of src/native: an ELF object's
 * bytes (a library the profiled JVM loaded: any file may be mapped there) go
 * to elf_symbols (symbols, build id, debuglink), to frame_table (.eh_frame
 * rules) and, as a NUL-terminated string, to the demangler, along with the
 * names of the symbols found. Each must take them or refuse them, never read
 * or write out of bounds (the sanitizers; outputs are exactly sized heap
 * buffers), and what it hands back must keep its header's contract: symbols
 * sorted, one per address, each found at its own start; rules sorted and
 * found for the addresses they cover; names NUL-terminated within outlen.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/demangle.h"
#include "native/elf_symbols.h"
#include "native/frame_table.h"

const char fuzz_target_name[] = "fuzz_elf";
const char *const fuzz_target_dictionary[] = {
    /* ELF: magic with class 64, little-endian, version 1; section names. */
    "\x7f" "ELF\x02\x01\x01", "\x7f" "ELF", ".symtab", ".strtab", ".dynsym", ".dynstr", ".eh_frame",
    ".eh_frame_hdr", ".gnu_debuglink", ".note.gnu.build-id", ".shstrtab", ".text", "GNU",
    "\xff\xff\xff\xff", "\xff\xff", "\x01\x01",
    /* .eh_frame: a CIE's augmentations, .eh_frame_hdr's encodings, CFA ops
     * (def_cfa rsp+8, def_cfa_offset 16, offset rbp, def_cfa_register rbp,
     * advance_loc, remember/restore_state, an expression). */
    "zR", "zPLR", "\x01\x1b\x03\x3b", "\x0c\x07\x08", "\x0e\x10", "\x86\x02", "\x0d\x06", "\x41",
    "\x0a", "\x0b", "\x0f\x02\x77\x08", "\x10\x06\x02",
    /* Itanium mangling. */
    "_Z", "_ZN", "_ZNK", "_ZL", "I", "E", "Ev", "St", "S_", "S0_", "T_", "L", "C1", "C2", "D0", "D2",
    "v", "PK", "RK", "Li1E", "cv", "ix", "sz", "Dp", "Dn", "Ul", "Ut_", "Z", "_GLOBAL__sub_I_",
    ".cold", ".part.0", ".isra.0", ".constprop.0", NULL
};

static struct {
    unsigned long elf_ok, elf_some, elf_refused;
    unsigned long frames_ok, frames_some, frames_refused;
    unsigned long demangled, names;
} counts;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size,
             "symbols: %lu parsed (%lu with some), %lu refused; frame tables: %lu built (%lu with "
             "rules), %lu refused; demangled %lu of %lu names",
             counts.elf_ok, counts.elf_some, counts.elf_refused, counts.frames_ok, counts.frames_some,
             counts.frames_refused, counts.demangled, counts.names);
}

/* Exactly sized, so ASan sees a write past len. */
static char *new_buf(size_t len)
{
    char *p = malloc(len ? len : 1);
    if (p == NULL)
        abort();
    return p;
}

static int terminated(const char *s, size_t len)
{
    return memchr(s, '\0', len) != NULL;
}

static uint64_t read_u64(const uint8_t *data, size_t size, size_t at)
{
    uint64_t v = 0;
    if (size >= 8)
        memcpy(&v, data + at % (size - 7), 8);
    return v;
}

/* ---------------------------------------------------------- demangler */

/* outlen 0 writes nothing; otherwise NUL-terminated within outlen; a name
 * it does not take is copied as is; a short buffer gets a prefix of what a
 * long one gets. */
static void check_demangle(const char *name)
{
    char *edge = new_buf(1);
    int none_rc = demangle_symbol(name, edge + 1, 0);     /* writing anything there is an overflow */
    size_t big_len = 4096, small_len = 12;
    char *big = new_buf(big_len), *small = new_buf(small_len);
    int rc = demangle_symbol(name, big, big_len);
    FUZZ_CHECK(rc == 0 || rc == 1);
    FUZZ_CHECK(terminated(big, big_len));
    if (rc == 0)
        FUZZ_CHECK(strncmp(big, name, big_len - 1) == 0);
    int small_rc = demangle_symbol(name, small, small_len);
    FUZZ_CHECK(small_rc == rc && none_rc == rc);
    FUZZ_CHECK(terminated(small, small_len));
    FUZZ_CHECK(strncmp(small, big, strlen(small)) == 0);
    counts.names++;
    counts.demangled += (unsigned long)rc;
    free(big);
    free(small);
    free(edge);
}

/* ------------------------------------------------------------- symbols */

/* A lookup's answer is a name in the table, at the start of a symbol that
 * lookup itself finds at offset 0. */
static void check_lookup(const elf_symbols *s, uint64_t vaddr)
{
    uint64_t offset = 0, again = 1;
    const char *name = elf_symbols_lookup(s, vaddr, &offset);
    if (name == NULL)
        return;
    FUZZ_CHECK(name >= s->names && name < s->names + s->names_size);
    FUZZ_CHECK(offset <= vaddr);
    FUZZ_CHECK(elf_symbols_lookup(s, vaddr - offset, &again) == name && again == 0);
}

static void check_symbols(const elf_symbols *s, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(s->count == 0 || (s->symbols != NULL && s->names != NULL));
    for (size_t i = 0; i < s->count; i++) {
        const elf_symbol *sym = &s->symbols[i];
        FUZZ_CHECK(i == 0 || s->symbols[i - 1].start < sym->start);
        FUZZ_CHECK(sym->start != 0);
        FUZZ_CHECK(sym->name < s->names_size && terminated(s->names + sym->name, s->names_size - sym->name));
    }
    /* A spread of symbols: each covers its own start, its name finds it (or
     * an earlier one of the same name). */
    size_t step = s->count / 32 + 1;
    for (size_t i = 0; i < s->count; i += step) {
        const elf_symbol *sym = &s->symbols[i];
        const char *name = s->names + sym->name;
        uint64_t offset = 1;
        FUZZ_CHECK(elf_symbols_lookup(s, sym->start, &offset) == name && offset == 0);
        uint64_t found = elf_symbols_find(s, name);
        FUZZ_CHECK(found != 0 && found <= sym->start);
        check_lookup(s, sym->start - 1);
        check_lookup(s, sym->start + (sym->size ? sym->size : 1));
        if (i < 8 * step)
            check_demangle(name);
    }
    for (size_t k = 0; k < 4; k++)
        check_lookup(s, read_u64(data, size, k * 977));
    check_lookup(s, 0);
    check_lookup(s, UINT64_MAX);
}

static void check_notes(const uint8_t *data, size_t size)
{
    size_t id_len = 41 + (size & 64);
    char *id = new_buf(id_len), *link = new_buf(64);
    int has_id = elf_build_id(data, size, id, id_len);
    FUZZ_CHECK(has_id == 0 || has_id == 1);
    FUZZ_CHECK(terminated(id, id_len));
    FUZZ_CHECK(has_id ? strlen(id) % 2 == 0 && strspn(id, "0123456789abcdef") == strlen(id) : id[0] == '\0');
    int has_link = elf_debuglink(data, size, link, 64);
    FUZZ_CHECK(has_link == 0 || has_link == 1);
    FUZZ_CHECK(terminated(link, 64));
    FUZZ_CHECK(has_link ? link[0] != '\0' && strchr(link, '/') == NULL : link[0] == '\0');
    int has_symtab = elf_has_symtab(data, size);
    FUZZ_CHECK(has_symtab == 0 || has_symtab == 1);

    static char paths[4][4096];
    int n = elf_debug_paths("/usr/lib/fuzz/libfuzz.so", id, link, paths, 4);
    FUZZ_CHECK(n >= 0 && n <= 4 && n == (id[0] != '\0' && strlen(id) > 2) + 3 * has_link);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(terminated(paths[i], sizeof paths[i]) && paths[i][0] != '\0');
    free(id);
    free(link);
}

static void fuzz_symbols(const uint8_t *data, size_t size)
{
    elf_symbols s;
    size_t err_len = 96;
    char *err = new_buf(err_len);
    int rc = elf_symbols_parse(data, size, &s, err, err_len);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        counts.elf_ok++;
        counts.elf_some += s.count > 0;
        check_symbols(&s, data, size);
    } else {
        counts.elf_refused++;
        FUZZ_CHECK(terminated(err, err_len) && err[0] != '\0');
        FUZZ_CHECK(s.count == 0 && s.symbols == NULL && s.names == NULL);
    }
    elf_symbols_free(&s);
    elf_symbols_free(&s);
    free(err);
    check_notes(data, size);
}

/* --------------------------------------------------------- frame table */

/* The rule in force at vaddr: the last one starting at or before it, and
 * only inside [low, high). */
static void check_find(const frame_table *t, uint64_t vaddr)
{
    const frame_rule *r = frame_table_find(t, vaddr);
    if (t->count == 0 || vaddr < t->low || vaddr >= t->high) {
        FUZZ_CHECK(r == NULL);
        return;
    }
    FUZZ_CHECK(r != NULL && r >= t->rules && r < t->rules + t->count);
    FUZZ_CHECK(r->start <= vaddr);
    FUZZ_CHECK(r + 1 == t->rules + t->count || r[1].start > vaddr);
}

static void check_rules(const frame_table *t, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(t->count == 0 || t->rules != NULL);
    FUZZ_CHECK(t->low <= t->high);
    FUZZ_CHECK(t->count == 0 || t->rules[0].start == t->low);
    for (size_t i = 0; i < t->count; i++) {
        const frame_rule *r = &t->rules[i];
        FUZZ_CHECK(r->cfa_reg == FRAME_CFA_UNKNOWN || r->cfa_reg == FRAME_CFA_SP || r->cfa_reg == FRAME_CFA_FP);
        if (i == 0)
            continue;
        const frame_rule *before = &t->rules[i - 1];
        FUZZ_CHECK(before->start < r->start);
        FUZZ_CHECK(before->cfa_reg != r->cfa_reg || before->cfa_offset != r->cfa_offset ||
                   before->fp_offset != r->fp_offset);
    }
    size_t step = t->count / 32 + 1;
    for (size_t i = 0; i < t->count; i += step) {
        check_find(t, t->rules[i].start);
        check_find(t, t->rules[i].start - 1);
        check_find(t, t->rules[i].start + 1);
    }
    check_find(t, t->low);
    check_find(t, t->low - 1);
    check_find(t, t->high);
    check_find(t, t->high - 1);
    check_find(t, t->low + (t->high - t->low) / 2);
    for (size_t k = 0; k < 4; k++)
        check_find(t, read_u64(data, size, 13 + k * 1231));
}

static void fuzz_frames(const uint8_t *data, size_t size)
{
    frame_table t;
    size_t err_len = 96;
    char *err = new_buf(err_len);
    int rc = frame_table_build(data, size, &t, err, err_len);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        counts.frames_ok++;
        counts.frames_some += t.count > 0;
        check_rules(&t, data, size);
    } else {
        counts.frames_refused++;
        FUZZ_CHECK(terminated(err, err_len) && err[0] != '\0');
        FUZZ_CHECK(t.count == 0);
    }
    frame_table_free(&t);
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_symbols(data, size);
    fuzz_frames(data, size);
    /* The bytes as one name, up to their first NUL (a text seed is one
     * mangled name). */
    char *text = new_buf(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_demangle(text);
    free(text);
    return 0;
}
