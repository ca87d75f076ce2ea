/* Unit tests: elf_symbols (src/native/elf_symbols.c) on a synthetic object
 * whose every symbol is known (which name wins a shared address, sizes, the
 * reach of a sizeless symbol, an entry point inside a function), on this
 * very binary (/proc/self/exe: a static function of this file found at its
 * runtime address less the load bias; the build id the loader sees), on
 * libc (.dynsym only), on every truncation and thousands of corruptions of
 * both files (0 or -1, never a read out of bounds: run under ASan too), and
 * the debug-file paths. */
#include "unit.h"

#include "native/elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------------------------------- helpers */

static uint8_t *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    *size = len;
    return buf;
}

/* The symbols are sorted, one per address, their names inside names. */
static int well_formed(const elf_symbols *s)
{
    for (size_t i = 0; i < s->count; i++) {
        if (i > 0 && s->symbols[i - 1].start >= s->symbols[i].start)
            return 0;
        size_t at = s->symbols[i].name;
        if (at >= s->names_size || memchr(s->names + at, '\0', s->names_size - at) == NULL)
            return 0;
    }
    return 1;
}

static const elf_symbol *symbol_at(const elf_symbols *s, uint64_t start)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->symbols[i].start == start)
            return &s->symbols[i];
    return NULL;
}

/* Everything the library offers on one input: must not crash, must answer
 * 0 or -1, and well-formed tables when 0. Returns the parse's result. */
static int exercise(const uint8_t *bytes, size_t size)
{
    elf_symbols s;
    char err[200], text[256];
    int rc = elf_symbols_parse(bytes, size, &s, err, sizeof err);
    if (rc == 0) {
        CHECK(well_formed(&s));
        for (size_t i = 0; i < s.count && i < 8; i++) {
            uint64_t off = 1;
            CHECK(elf_symbols_lookup(&s, s.symbols[i].start, &off) != NULL && off == 0);
        }
    } else {
        CHECK(rc == -1 && err[0] != '\0');
        CHECK(s.count == 0 && s.symbols == NULL && s.names == NULL);
    }
    elf_symbols_free(&s);
    int id = elf_build_id(bytes, size, text, sizeof text);
    CHECK((id == 1 && strlen(text) >= 2) || (id == 0 && text[0] == '\0'));
    int link = elf_debuglink(bytes, size, text, sizeof text);
    CHECK((link == 1 && text[0] != '\0') || (link == 0 && text[0] == '\0'));
    int has = elf_has_symtab(bytes, size);
    CHECK(has == 0 || has == 1);
    return rc;
}

/* ------------------------------------------------- a synthetic object */

enum { SYN_SYMTAB = 1, SYN_NO_SECTIONS = 2, SYN_EXTENDED_NUMBERING = 4 };
#define NAME_OUT_OF_TABLE ((const char *)1)

typedef struct syn_sym {
    const char *name;              /* "" no name; NAME_OUT_OF_TABLE past the string table */
    int         type, bind;
    uint64_t    value, size;
    uint16_t    shndx;
} syn_sym;

/* Unsorted on purpose; the comments say what elf_symbols_parse keeps. */
static const syn_sym synthetic_symtab[] = {
    { "gamma", STT_FUNC, STB_GLOBAL, 0x1200, 0x100, 1 },
    { "beta", STT_FUNC, STB_LOCAL, 0x1100, 0, 1 },             /* takes beta_sized's size */
    { "alpha_local", STT_FUNC, STB_LOCAL, 0x1000, 0x10, 1 },   /* loses to alpha: local */
    { "alpha", STT_FUNC, STB_GLOBAL, 0x1000, 0x10, 1 },
    { "gamma_entry", STT_FUNC, STB_GLOBAL, 0x1240, 0x10, 1 },  /* an entry point inside gamma */
    { "delta", STT_FUNC, STB_GLOBAL, 0x2000, 0, 1 },           /* last: reaches 1 MiB */
    { "an_object", STT_OBJECT, STB_GLOBAL, 0x3000, 8, 1 },
    { "undefined_fn", STT_FUNC, STB_GLOBAL, 0, 0, SHN_UNDEF },
    { "resolver", STT_GNU_IFUNC, STB_GLOBAL, 0x1800, 8, 1 },
    { "__resolver", STT_FUNC, STB_GLOBAL, 0x1800, 8, 1 },     /* loses: more underscores */
    { "", STT_FUNC, STB_GLOBAL, 0x1900, 4, 1 },
    { "at_zero", STT_FUNC, STB_GLOBAL, 0, 4, 1 },
    { NAME_OUT_OF_TABLE, STT_FUNC, STB_GLOBAL, 0x1910, 4, 1 },
    { "epsilon", STT_FUNC, STB_LOCAL, 0x1c00, 0, 1 },          /* reaches delta */
};
static const syn_sym synthetic_dynsym[] = {
    { "puts", STT_FUNC, STB_GLOBAL, 0, 0, SHN_UNDEF },
    { "__alpha", STT_FUNC, STB_GLOBAL, 0x1000, 0x10, 1 },      /* loses to .symtab's alpha */
    { "exported", STT_FUNC, STB_GLOBAL, 0x1a00, 0x20, 1 },
    { "gamma", STT_FUNC, STB_GLOBAL, 0x1200, 0x100, 1 },
    { "beta_sized", STT_FUNC, STB_GLOBAL, 0x1100, 0x30, 1 },
};
static const uint8_t synthetic_build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
                                                7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

typedef struct syn_image {
    uint8_t buf[8192];
    size_t  len;
    char    shstr[256];
    size_t  shstr_len;
    Elf64_Shdr sh[12];
    size_t  nsh;
} syn_image;

static size_t put(syn_image *im, const void *data, size_t n, size_t align)
{
    while (im->len % align != 0)
        im->buf[im->len++] = 0;
    size_t at = im->len;
    if (n > 0)
        memcpy(im->buf + at, data, n);
    im->len += n;
    return at;
}

static size_t add_section(syn_image *im, const char *name, uint32_t type, size_t off, size_t size)
{
    size_t i = im->nsh++;
    im->sh[i] = (Elf64_Shdr){ .sh_name = (uint32_t)im->shstr_len, .sh_type = type, .sh_offset = off,
                              .sh_size = size, .sh_addralign = 1 };
    size_t n = strlen(name) + 1;
    memcpy(im->shstr + im->shstr_len, name, n);
    im->shstr_len += n;
    return i;
}

/* A symbol table and its string table as sections; returns the symbol
 * table's index. */
static size_t add_symbols(syn_image *im, const syn_sym *syms, size_t n, int dynamic)
{
    char str[512] = "";
    size_t str_len = 1;
    Elf64_Sym out[32] = { { 0 } };
    for (size_t i = 0; i < n; i++) {
        const syn_sym *s = &syms[i];
        uint32_t name = 0;
        if (s->name == NAME_OUT_OF_TABLE) {
            name = 0xffff;
        } else if (s->name[0] != '\0') {
            name = (uint32_t)str_len;
            memcpy(str + str_len, s->name, strlen(s->name) + 1);
            str_len += strlen(s->name) + 1;
        }
        out[i + 1] = (Elf64_Sym){ .st_name = name, .st_info = ELF64_ST_INFO(s->bind, s->type),
                                  .st_shndx = s->shndx, .st_value = s->value, .st_size = s->size };
    }
    size_t str_off = put(im, str, str_len, 1);
    size_t sym_off = put(im, out, (n + 1) * sizeof(Elf64_Sym), 8);
    size_t symtab = add_section(im, dynamic ? ".dynsym" : ".symtab", dynamic ? SHT_DYNSYM : SHT_SYMTAB,
                                sym_off, (n + 1) * sizeof(Elf64_Sym));
    size_t strtab = add_section(im, dynamic ? ".dynstr" : ".strtab", SHT_STRTAB, str_off, str_len);
    im->sh[symtab].sh_link = (uint32_t)strtab;
    im->sh[symtab].sh_entsize = sizeof(Elf64_Sym);
    im->sh[symtab].sh_addralign = 8;
    return symtab;
}

/* An ABI tag note, then the build id: the reader has to walk past one. */
static size_t add_notes(syn_image *im)
{
    uint8_t notes[128];
    size_t n = 0;
    Elf64_Nhdr abi = { 4, 16, NT_GNU_ABI_TAG };
    memcpy(notes + n, &abi, sizeof abi);
    memcpy(notes + n + 12, "GNU", 4);
    memset(notes + n + 16, 0, 16);
    n += 32;
    Elf64_Nhdr id = { 4, sizeof synthetic_build_id, NT_GNU_BUILD_ID };
    memcpy(notes + n, &id, sizeof id);
    memcpy(notes + n + 12, "GNU", 4);
    memcpy(notes + n + 16, synthetic_build_id, sizeof synthetic_build_id);
    n += 16 + sizeof synthetic_build_id;
    size_t at = put(im, notes, n, 4);
    size_t i = add_section(im, ".note.gnu.build-id", SHT_NOTE, at, n);
    im->sh[i].sh_addralign = 4;
    return at;
}

static void add_debuglink(syn_image *im)
{
    static const char link[20] = "synthetic.debug\0\0\0\0";   /* name, padding to 4, then... */
    uint8_t data[24];
    memcpy(data, link, sizeof link);
    memset(data + 20, 0x5a, 4);                                /* ...its CRC */
    size_t at = put(im, data, sizeof data, 4);
    add_section(im, ".gnu_debuglink", SHT_PROGBITS, at, sizeof data);
}

/* The whole object, in a buffer of exactly its size (so ASan sees a read
 * past its end). */
static uint8_t *synthetic_elf(int flags, size_t *size)
{
    static syn_image im;
    memset(&im, 0, sizeof im);
    im.shstr_len = 1;
    im.len = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
    add_section(&im, "", SHT_NULL, 0, 0);
    add_section(&im, ".text", SHT_PROGBITS, sizeof(Elf64_Ehdr), 0);
    if (flags & SYN_SYMTAB)
        add_symbols(&im, synthetic_symtab, sizeof synthetic_symtab / sizeof synthetic_symtab[0], 0);
    add_symbols(&im, synthetic_dynsym, sizeof synthetic_dynsym / sizeof synthetic_dynsym[0], 1);
    size_t notes = add_notes(&im);
    add_debuglink(&im);
    size_t shstrndx = add_section(&im, ".shstrtab", SHT_STRTAB, 0, 0);
    im.sh[shstrndx].sh_offset = put(&im, im.shstr, im.shstr_len, 1);
    im.sh[shstrndx].sh_size = im.shstr_len;
    size_t shoff = put(&im, im.sh, im.nsh * sizeof(Elf64_Shdr), 8);

    Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
                      .e_phoff = sizeof eh, .e_shoff = shoff, .e_ehsize = sizeof eh,
                      .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
                      .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (uint16_t)im.nsh,
                      .e_shstrndx = (uint16_t)shstrndx };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    if (flags & SYN_NO_SECTIONS)
        eh.e_shoff = eh.e_shnum = eh.e_shstrndx = 0;
    if (flags & SYN_EXTENDED_NUMBERING) {
        Elf64_Shdr first = { .sh_size = im.nsh, .sh_link = (uint32_t)shstrndx };
        memcpy(im.buf + shoff, &first, sizeof first);
        eh.e_shnum = 0;
        eh.e_shstrndx = SHN_XINDEX;
    }
    memcpy(im.buf, &eh, sizeof eh);
    Elf64_Phdr note = { .p_type = PT_NOTE, .p_offset = notes, .p_filesz = 32 + 16 + sizeof synthetic_build_id,
                        .p_align = 4 };
    memcpy(im.buf + sizeof eh, &note, sizeof note);

    uint8_t *out = malloc(im.len);
    if (out != NULL)
        memcpy(out, im.buf, im.len);
    *size = im.len;
    return out;
}

static void check_lookup(const elf_symbols *s, uint64_t vaddr, const char *want, uint64_t want_offset)
{
    uint64_t offset = ~0ull;
    const char *got = elf_symbols_lookup(s, vaddr, &offset);
    if (want == NULL) {
        CHECK(got == NULL);
        return;
    }
    CHECK_STR(got, want);
    CHECK(offset == want_offset);
}

TEST(native_elf_synthetic_symbols)
{
    size_t size;
    uint8_t *elf = synthetic_elf(SYN_SYMTAB, &size);
    elf_symbols s;
    char err[200] = "x";
    CHECK(elf != NULL && elf_symbols_parse(elf, size, &s, err, sizeof err) == 0);
    CHECK_STR(err, "");
    CHECK(s.count == 8 && well_formed(&s));
    static const struct { uint64_t start, size; const char *name; } want[] = {
        { 0x1000, 0x10, "alpha" }, { 0x1100, 0x30, "beta" }, { 0x1200, 0x100, "gamma" },
        { 0x1240, 0x10, "gamma_entry" }, { 0x1800, 8, "resolver" }, { 0x1a00, 0x20, "exported" },
        { 0x1c00, 0, "epsilon" }, { 0x2000, 0, "delta" },
    };
    for (size_t i = 0; i < s.count && i < sizeof want / sizeof want[0]; i++) {
        CHECK(s.symbols[i].start == want[i].start && s.symbols[i].size == want[i].size);
        CHECK_STR(s.names + s.symbols[i].name, want[i].name);
    }
    check_lookup(&s, 0xfff, NULL, 0);
    check_lookup(&s, 0x1000, "alpha", 0);
    check_lookup(&s, 0x100f, "alpha", 0xf);
    check_lookup(&s, 0x1010, NULL, 0);
    check_lookup(&s, 0x112f, "beta", 0x2f);
    check_lookup(&s, 0x1130, NULL, 0);
    check_lookup(&s, 0x1245, "gamma_entry", 5);
    check_lookup(&s, 0x1250, "gamma", 0x50);
    check_lookup(&s, 0x12ff, "gamma", 0xff);
    check_lookup(&s, 0x1300, NULL, 0);
    check_lookup(&s, 0x1fff, "epsilon", 0x3ff);
    check_lookup(&s, 0x2000, "delta", 0);
    check_lookup(&s, 0x2000 + (1u << 20) - 1, "delta", (1u << 20) - 1);
    check_lookup(&s, 0x2000 + (1u << 20), NULL, 0);
    check_lookup(&s, UINT64_MAX, NULL, 0);
    CHECK(elf_symbols_lookup(&s, 0x1001, NULL) != NULL);

    CHECK(elf_symbols_find(&s, "alpha") == 0x1000);
    CHECK(elf_symbols_find(&s, "exported") == 0x1a00);
    CHECK(elf_symbols_find(&s, "delta") == 0x2000);
    CHECK(elf_symbols_find(&s, "alpha_local") == 0 && elf_symbols_find(&s, "__alpha") == 0);
    CHECK(elf_symbols_find(&s, "an_object") == 0 && elf_symbols_find(&s, "undefined_fn") == 0);
    CHECK(elf_symbols_find(&s, "at_zero") == 0 && elf_symbols_find(&s, "") == 0);
    elf_symbols_free(&s);
    CHECK(s.symbols == NULL && s.count == 0);
    elf_symbols_free(&s);

    char text[64];
    CHECK(elf_build_id(elf, size, text, sizeof text) == 1);
    CHECK_STR(text, "deadbeef0102030405060708090a0b0c0d0e0f10");
    CHECK(elf_build_id(elf, size, text, 40) == 0 && text[0] == '\0');   /* no room: none, not cut */
    CHECK(elf_debuglink(elf, size, text, sizeof text) == 1);
    CHECK_STR(text, "synthetic.debug");
    CHECK(elf_debuglink(elf, size, text, 15) == 0 && text[0] == '\0');
    CHECK(elf_has_symtab(elf, size) == 1);
    free(elf);
}

TEST(native_elf_synthetic_variants)
{
    size_t size;
    elf_symbols s;
    char err[200], text[64];

    /* Stripped: .dynsym's names only, its own choice at a shared address. */
    uint8_t *elf = synthetic_elf(0, &size);
    CHECK(elf != NULL && elf_symbols_parse(elf, size, &s, err, sizeof err) == 0);
    CHECK(s.count == 4 && well_formed(&s) && elf_has_symtab(elf, size) == 0);
    check_lookup(&s, 0x1000, "__alpha", 0);
    check_lookup(&s, 0x1101, "beta_sized", 1);
    CHECK(elf_symbols_find(&s, "alpha") == 0 && elf_symbols_find(&s, "exported") == 0x1a00);
    elf_symbols_free(&s);
    free(elf);

    /* No section table: no symbols (no error), the build id from PT_NOTE. */
    elf = synthetic_elf(SYN_SYMTAB | SYN_NO_SECTIONS, &size);
    CHECK(elf != NULL && elf_symbols_parse(elf, size, &s, err, sizeof err) == 0 && s.count == 0);
    CHECK(elf_symbols_lookup(&s, 0x1000, NULL) == NULL && elf_symbols_find(&s, "alpha") == 0);
    CHECK(elf_build_id(elf, size, text, sizeof text) == 1);
    CHECK_STR(text, "deadbeef0102030405060708090a0b0c0d0e0f10");
    CHECK(elf_debuglink(elf, size, text, sizeof text) == 0 && elf_has_symtab(elf, size) == 0);
    elf_symbols_free(&s);
    free(elf);

    /* The section count and names' index in section 0, as with 0xff00+ sections. */
    elf = synthetic_elf(SYN_SYMTAB | SYN_EXTENDED_NUMBERING, &size);
    CHECK(elf != NULL && elf_symbols_parse(elf, size, &s, err, sizeof err) == 0 && s.count == 8);
    CHECK(elf_debuglink(elf, size, text, sizeof text) == 1 && elf_has_symtab(elf, size) == 1);
    elf_symbols_free(&s);
    free(elf);
}

/* One field of the synthetic object overwritten: the parse fails with a
 * message. */
static void check_refused(size_t offset, const void *value, size_t len, const char *why)
{
    size_t size;
    uint8_t *elf = synthetic_elf(SYN_SYMTAB, &size);
    elf_symbols s;
    char err[200] = "";
    CHECK(elf != NULL && offset + len <= size);
    memcpy(elf + offset, value, len);
    int rc = elf_symbols_parse(elf, size, &s, err, sizeof err);
    if (rc != -1 || strstr(err, why) == NULL)
        CHECK_STR(err, why);
    CHECK(rc == -1 && s.count == 0);
    elf_symbols_free(&s);
    free(elf);
}

TEST(native_elf_refuses)
{
    elf_symbols s;
    char err[200];
    static const uint8_t junk[100] = "not an ELF file at all";
    CHECK(elf_symbols_parse(junk, sizeof junk, &s, err, sizeof err) == -1);
    CHECK_STR(err, "not an ELF file");
    CHECK(elf_symbols_parse(NULL, 0, &s, err, sizeof err) == -1);
    CHECK(elf_symbols_parse(junk, 0, &s, NULL, 0) == -1);
    CHECK(elf_build_id(NULL, 0, err, sizeof err) == 0 && elf_debuglink(junk, 4, err, sizeof err) == 0);
    CHECK(elf_has_symtab(junk, sizeof junk) == 0);

    size_t size;
    uint8_t *elf = synthetic_elf(SYN_SYMTAB, &size);
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    CHECK(elf != NULL && elf_symbols_parse(elf, 63, &s, err, sizeof err) == -1);
    free(elf);

    const uint8_t class32 = ELFCLASS32, big = ELFDATA2MSB;
    check_refused(EI_CLASS, &class32, 1, "not a 64-bit ELF file");
    check_refused(EI_DATA, &big, 1, "not a little-endian ELF file");
    const uint64_t far = UINT64_MAX - 10;
    const uint16_t many = 0xfff0, small = 40;
    check_refused(offsetof(Elf64_Ehdr, e_shoff), &far, 8, "section table");
    check_refused(offsetof(Elf64_Ehdr, e_shnum), &many, 2, "section table");
    check_refused(offsetof(Elf64_Ehdr, e_shentsize), &small, 2, "section table");
    /* The .symtab's header (section 2) pointing past the end, at a string
     * table that does not exist, with entries of no size. */
    size_t symtab = eh.e_shoff + 2 * sizeof(Elf64_Shdr);
    const uint32_t no_link = 99;
    const uint64_t zero = 0;
    check_refused(symtab + offsetof(Elf64_Shdr, sh_offset), &far, 8, "out of the file's bounds");
    check_refused(symtab + offsetof(Elf64_Shdr, sh_size), &far, 8, "out of the file's bounds");
    check_refused(symtab + offsetof(Elf64_Shdr, sh_link), &no_link, 4, "no string table");
    check_refused(symtab + offsetof(Elf64_Shdr, sh_entsize), &zero, 8, "entries of 0 bytes");
    size_t strtab = eh.e_shoff + 3 * sizeof(Elf64_Shdr);
    check_refused(strtab + offsetof(Elf64_Shdr, sh_size), &far, 8, "string table");
}

/* Every truncation, and every byte set to three values, of the synthetic
 * object: 0 or -1 and nothing out of bounds. */
TEST(native_elf_synthetic_hostile)
{
    size_t size;
    uint8_t *elf = synthetic_elf(SYN_SYMTAB, &size);
    CHECK(elf != NULL);
    if (elf == NULL)
        return;
    for (size_t len = 0; len <= size; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, elf, len);
        int rc = exercise(cut, len);
        CHECK(len == size ? rc == 0 : rc == -1);
        free(cut);
    }
    int accepted = 0;
    for (size_t at = 0; at < size; at++) {
        uint8_t was = elf[at];
        const uint8_t values[] = { 0x00, 0xff, (uint8_t)(was ^ 0x80) };
        for (size_t v = 0; v < sizeof values; v++) {
            elf[at] = values[v];
            accepted += exercise(elf, size) == 0;
        }
        elf[at] = was;
    }
    CHECK(accepted > 0);
    free(elf);
}

/* ---------------------------------------------------- this very binary */

int main(int argc, char **argv);   /* unit_main.c's: found in .symtab too */

/* Found by its address, so it must stay a real function of some length. */
__attribute__((noinline, used)) static int native_elf_marker(int x)
{
    volatile int v = x;
    return v * 3 + 1;
}

typedef struct loaded {
    const char *want;              /* "" the main program, else a part of the path */
    uintptr_t   bias;
    char        path[4096];
    char        build_id[64];      /* from the PT_NOTE the loader mapped */
    int         found;
} loaded;

static void note_build_id(const uint8_t *notes, size_t len, size_t align, char *out)
{
    for (size_t pos = 0; pos + sizeof(Elf64_Nhdr) <= len;) {
        Elf64_Nhdr nh;
        memcpy(&nh, notes + pos, sizeof nh);
        size_t name = pos + sizeof nh, desc = name + ((nh.n_namesz + align - 1) & ~(align - 1));
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(notes + name, "GNU", 4) == 0 &&
            nh.n_descsz <= 30) {
            for (size_t i = 0; i < nh.n_descsz; i++)
                sprintf(out + 2 * i, "%02x", notes[desc + i]);
            return;
        }
        pos = desc + ((nh.n_descsz + align - 1) & ~(align - 1));
    }
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    loaded *l = arg;
    int main_program = l->want[0] == '\0';
    if (main_program ? info->dlpi_name[0] != '\0' : strstr(info->dlpi_name, l->want) == NULL)
        return 0;
    l->bias = info->dlpi_addr;
    snprintf(l->path, sizeof l->path, "%s", main_program ? "/proc/self/exe" : info->dlpi_name);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && l->build_id[0] == '\0')
            note_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                          ph->p_align == 8 ? 8 : 4, l->build_id);
    }
    l->found = 1;
    return 1;
}

TEST(native_elf_self)
{
    loaded self = { .want = "" };
    dl_iterate_phdr(find_loaded, &self);
    size_t size;
    uint8_t *exe = read_whole("/proc/self/exe", &size);
    CHECK(self.found && exe != NULL);
    if (exe == NULL)
        return;
    elf_symbols s;
    char err[200];
    CHECK(elf_symbols_parse(exe, size, &s, err, sizeof err) == 0);
    CHECK(s.count > 10 && well_formed(&s));
    CHECK(elf_has_symtab(exe, size) == 1);

    uint64_t marker = (uint64_t)(uintptr_t)&native_elf_marker - self.bias;
    const elf_symbol *sym = symbol_at(&s, marker);
    CHECK(sym != NULL && sym->size > 1);
    check_lookup(&s, marker, "native_elf_marker", 0);
    check_lookup(&s, marker + 1, "native_elf_marker", 1);
    if (sym != NULL)
        check_lookup(&s, marker + sym->size - 1, "native_elf_marker", sym->size - 1);
    CHECK(elf_symbols_find(&s, "native_elf_marker") == marker);
    CHECK(elf_symbols_find(&s, "native_elf_no_such_function") == 0);
    uint64_t main_at = elf_symbols_find(&s, "main");
    CHECK(main_at != 0 && main_at == (uint64_t)(uintptr_t)&main - self.bias);
    elf_symbols_free(&s);

    /* gcc on Debian always emits one; the loader's copy must match. */
    char id[64];
    CHECK(elf_build_id(exe, size, id, sizeof id) == 1);
    CHECK(strlen(id) == 40 && strspn(id, "0123456789abcdef") == 40);
    CHECK_STR(id, self.build_id);
    free(exe);
}

/* readelf's answer to "is there a .symtab?", -1 if readelf cannot run. */
static int readelf_has_symtab(const char *path)
{
    char cmd[4200], line[512];
    snprintf(cmd, sizeof cmd, "readelf -SW '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    int sections = 0, symtab = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        sections += strstr(line, "] .") != NULL;
        symtab += strstr(line, " SYMTAB ") != NULL;
    }
    pclose(p);
    return sections == 0 ? -1 : symtab > 0;
}

TEST(native_elf_libc)
{
    loaded libc = { .want = "/libc.so" };
    dl_iterate_phdr(find_loaded, &libc);
    size_t size = 0;
    uint8_t *bytes = libc.found ? read_whole(libc.path, &size) : NULL;
    CHECK(bytes != NULL);
    if (bytes == NULL)
        return;
    elf_symbols s;
    char err[200];
    CHECK(elf_symbols_parse(bytes, size, &s, err, sizeof err) == 0);
    CHECK(s.count > 1000 && well_formed(&s));
    CHECK(elf_symbols_find(&s, "malloc") != 0 && elf_symbols_find(&s, "memcpy") != 0);

    /* libc's own getpid (dlsym on libc's handle: not a sanitizer's
     * interceptor), where the loader put it. */
    void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *getpid_at = h != NULL ? dlsym(h, "getpid") : NULL;
    CHECK(getpid_at != NULL);
    if (getpid_at != NULL) {
        uint64_t vaddr = (uint64_t)(uintptr_t)getpid_at - libc.bias;
        CHECK(elf_symbols_find(&s, "getpid") == vaddr);
        check_lookup(&s, vaddr + 2, "getpid", 2);
    }
    if (h != NULL)
        dlclose(h);
    int want = readelf_has_symtab(libc.path);
    CHECK(want == -1 || elf_has_symtab(bytes, size) == want);
    char id[64];
    CHECK(elf_build_id(bytes, size, id, sizeof id) == 1);
    CHECK_STR(id, libc.build_id);
    elf_symbols_free(&s);
    free(bytes);
}

/* A real binary cut at lengths around its structures and corrupted in its
 * header, its section headers and its symbol table. */
TEST(native_elf_self_hostile)
{
    size_t size;
    uint8_t *exe = read_whole("/proc/self/exe", &size);
    CHECK(exe != NULL && size > 4096);
    if (exe == NULL || size <= 4096)
        return;
    Elf64_Ehdr eh;
    memcpy(&eh, exe, sizeof eh);
    size_t shtab = eh.e_shoff, shend = shtab + (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
    CHECK(shend <= size);
    size_t cuts[] = { 0, 1, 4, 5, 6, 16, 63, 64, 65, 200, 4096, size / 2, shtab - 1, shtab, shtab + 1,
                      shtab + 64, shend - 65, shend - 64, shend - 1, size - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        if (cuts[i] > size)
            continue;
        uint8_t *cut = malloc(cuts[i] ? cuts[i] : 1);
        memcpy(cut, exe, cuts[i]);
        CHECK(exercise(cut, cuts[i]) == (cuts[i] >= shend ? 0 : -1));
        free(cut);
    }
    /* Flips in the header, every section header, and the first entries of
     * each symbol table: three patterns in turn. */
    static const uint8_t masks[] = { 0x01, 0x80, 0xff };
    size_t flips = 0;
    for (size_t at = 0; at < sizeof eh; at++, flips++) {
        exe[at] ^= masks[flips % 3];
        exercise(exe, size);
        exe[at] ^= masks[flips % 3];
    }
    for (size_t at = shtab; at < shend && at < size; at += 3, flips++) {
        exe[at] ^= masks[flips % 3];
        exercise(exe, size);
        exe[at] ^= masks[flips % 3];
    }
    for (size_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, exe + shtab + i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
            continue;
        for (size_t at = sh.sh_offset; at < sh.sh_offset + 48 * sizeof(Elf64_Sym) && at < size; at += 5) {
            exe[at] ^= masks[flips % 3];
            exercise(exe, size);
            exe[at] ^= masks[flips++ % 3];
        }
    }
    CHECK(exercise(exe, size) == 0);
    free(exe);
}

/* ------------------------------------------------------ debug paths */

TEST(native_elf_debug_paths)
{
    static char paths[5][4096];
    const char *jvm = "/usr/lib/jvm/java-17/lib/server/libjvm.so";
    const char *id = "97da31b249941f25ff26a6126471221bb579d67f";
    CHECK(elf_debug_paths(jvm, id, "libjvm.debuginfo", paths, 5) == 4);
    CHECK_STR(paths[0], "/usr/lib/debug/.build-id/97/da31b249941f25ff26a6126471221bb579d67f.debug");
    CHECK_STR(paths[1], "/usr/lib/jvm/java-17/lib/server/libjvm.debuginfo");
    CHECK_STR(paths[2], "/usr/lib/jvm/java-17/lib/server/.debug/libjvm.debuginfo");
    CHECK_STR(paths[3], "/usr/lib/debug/usr/lib/jvm/java-17/lib/server/libjvm.debuginfo");

    CHECK(elf_debug_paths(jvm, id, "libjvm.debuginfo", paths, 2) == 2);
    CHECK_STR(paths[1], "/usr/lib/jvm/java-17/lib/server/libjvm.debuginfo");
    CHECK(elf_debug_paths(jvm, id, "libjvm.debuginfo", paths, 0) == 0);
    CHECK(elf_debug_paths(jvm, "", "libjvm.debuginfo", paths, 5) == 3);
    CHECK_STR(paths[0], "/usr/lib/jvm/java-17/lib/server/libjvm.debuginfo");
    CHECK(elf_debug_paths(jvm, NULL, NULL, paths, 5) == 0);
    CHECK(elf_debug_paths(jvm, id, "", paths, 5) == 1);
    CHECK(elf_debug_paths(NULL, id, "x.debug", paths, 5) == 1);
    /* Not lowercase hex, or too short to split: no build-id path. */
    CHECK(elf_debug_paths(jvm, "97DA31", NULL, paths, 5) == 0);
    CHECK(elf_debug_paths(jvm, "ab", NULL, paths, 5) == 0);
    CHECK(elf_debug_paths(jvm, "../../etc", NULL, paths, 5) == 0);
    CHECK(elf_debug_paths(jvm, "abc", NULL, paths, 5) == 1);
    CHECK_STR(paths[0], "/usr/lib/debug/.build-id/ab/c.debug");
    /* A debuglink is a file name, never a path. */
    CHECK(elf_debug_paths(jvm, id, "../../etc/passwd", paths, 5) == 1);
    CHECK(elf_debug_paths("libfoo.so", "", "libfoo.debug", paths, 5) == 2);
    CHECK_STR(paths[0], "libfoo.debug");
    CHECK_STR(paths[1], ".debug/libfoo.debug");
    CHECK(elf_debug_paths("/libfoo.so", "", "libfoo.debug", paths, 5) == 3);
    CHECK_STR(paths[2], "/usr/lib/debug/libfoo.debug");

    /* Paths longer than PATH_MAX are left out, not cut. */
    static char deep[5000];
    memset(deep, 'd', sizeof deep - 1);
    deep[0] = '/';
    deep[4080] = '/';
    CHECK(elf_debug_paths(deep, id, "libjvm.debuginfo", paths, 5) == 1);
}
