/* elf_symbols.c: see elf_symbols.h.
 *
 * Every field of the file is copied out with memcpy (the bytes may be at any
 * alignment) and every offset, size and index is checked against the file's
 * size before it is used, with arithmetic that cannot wrap: the only thing
 * trusted is `size`. */
#include "elf_symbols.h"
#include "../core/error_message.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "elf_symbols copies ELF64 little-endian fields as they are: little-endian hosts only"
#endif

#define ZERO_SIZE_REACH (1u << 20)  /* how far past its start a size-0 symbol may cover */
#define ENCLOSING_LOOKBACK 16       /* symbols searched back for one whose size encloses vaddr */
#define DEBUG_ROOT "/usr/lib/debug"
#define PATH_CAP 4096               /* elf_debug_paths' paths[i] (PATH_MAX on Linux) */

/* The header fields the readers need, checked once. */
typedef struct elf_image {
    const uint8_t *bytes;
    size_t         size;
    uint64_t       shoff;
    size_t         shnum;           /* 0 if there is no section table or it is out of bounds */
    size_t         shentsize;
    size_t         shstrndx;
    int            sections_bad;    /* the header names a section table the file cannot hold */
    uint64_t       phoff;
    size_t         phnum;           /* 0 if there is no program header table or it is out of bounds */
    size_t         phentsize;
} elf_image;

/* One symbol that passed the filter, before sorting and merging. The name
 * points into the caller's bytes, copied only if the symbol survives. */
typedef struct candidate {
    uint64_t    start, size;
    uint64_t    key;                /* preference << 32 | order met: lower wins a shared address */
    const char *name;
    uint32_t    name_len;
} candidate;

/* A symbol table section and its string table, both checked in bounds. */
typedef struct symtab_view {
    const uint8_t *entries;
    size_t         count, entsize;
    const char    *strings;
    size_t         strings_size;
    int            dynamic;         /* .dynsym (else .symtab) */
} symtab_view;


/* [off, off + len) lies inside a file of `size` bytes; no sum is formed, so
 * nothing wraps. */
static int in_bounds(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

/* count entries of entsize bytes from off lie inside the file. */
static int table_in_bounds(size_t size, uint64_t off, uint64_t count, uint64_t entsize)
{
    if (!in_bounds(size, off, 0))
        return 0;
    return entsize == 0 || count <= (size - off) / entsize;
}

/* --------------------------------------------------------------- header */

static int read_ident(const uint8_t *bytes, size_t size, char *err, size_t errlen)
{
    if (bytes == NULL || size < sizeof(Elf64_Ehdr) || memcmp(bytes, ELFMAG, SELFMAG) != 0) {
        set_err(err, errlen, "not an ELF file");
        return -1;
    }
    if (bytes[EI_CLASS] != ELFCLASS64) {
        set_err(err, errlen, "not a 64-bit ELF file (class %u)", bytes[EI_CLASS]);
        return -1;
    }
    if (bytes[EI_DATA] != ELFDATA2LSB) {
        set_err(err, errlen, "not a little-endian ELF file (data encoding %u)", bytes[EI_DATA]);
        return -1;
    }
    return 0;
}

static Elf64_Shdr section_at(const elf_image *im, size_t i)
{
    Elf64_Shdr sh;
    memcpy(&sh, im->bytes + im->shoff + i * im->shentsize, sizeof sh);
    return sh;
}

/* With 0xff00 sections or more, e_shnum is 0 and e_shstrndx SHN_XINDEX: the
 * real values are in section 0's sh_size and sh_link (the gABI's extended
 * numbering; large objects built with -ffunction-sections get there). */
static void read_section_table(elf_image *im, const Elf64_Ehdr *eh)
{
    im->shoff = eh->e_shoff;
    im->shentsize = eh->e_shentsize;
    im->shstrndx = eh->e_shstrndx;
    if (eh->e_shoff == 0)
        return;
    if (im->shentsize < sizeof(Elf64_Shdr) || !table_in_bounds(im->size, im->shoff, 1, im->shentsize)) {
        im->sections_bad = 1;
        return;
    }
    Elf64_Shdr first = section_at(im, 0);
    uint64_t n = eh->e_shnum != 0 ? eh->e_shnum : first.sh_size;
    if (eh->e_shstrndx == SHN_XINDEX)
        im->shstrndx = first.sh_link;
    if (!table_in_bounds(im->size, im->shoff, n, im->shentsize)) {
        im->sections_bad = 1;
        return;
    }
    im->shnum = (size_t)n;
}

static void read_program_headers(elf_image *im, const Elf64_Ehdr *eh)
{
    if (eh->e_phoff == 0 || eh->e_phentsize < sizeof(Elf64_Phdr) ||
        !table_in_bounds(im->size, eh->e_phoff, eh->e_phnum, eh->e_phentsize))
        return;
    im->phoff = eh->e_phoff;
    im->phnum = eh->e_phnum;
    im->phentsize = eh->e_phentsize;
}

/* 0, or -1 if the bytes are not ELF64 little-endian. A table the file cannot
 * hold is left out (shnum or phnum 0) with sections_bad saying so for the
 * section table: the symbol reader refuses such a file, the note and
 * debuglink readers just find nothing in it. */
static int open_image(const uint8_t *bytes, size_t size, elf_image *im, char *err, size_t errlen)
{
    memset(im, 0, sizeof *im);
    if (read_ident(bytes, size, err, errlen) != 0)
        return -1;
    im->bytes = bytes;
    im->size = size;
    Elf64_Ehdr eh;
    memcpy(&eh, bytes, sizeof eh);
    read_section_table(im, &eh);
    read_program_headers(im, &eh);
    return 0;
}

/* The bytes of a section that has some in the file; -1 if it claims bytes
 * past the file's end. */
static int section_bytes(const elf_image *im, const Elf64_Shdr *sh, const uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (sh->sh_type == SHT_NOBITS)
        return 0;
    if (!in_bounds(im->size, sh->sh_offset, sh->sh_size))
        return -1;
    *data = im->bytes + sh->sh_offset;
    *len = (size_t)sh->sh_size;
    return 0;
}

/* ------------------------------------------------------------- symbols */

static int open_symtab(const elf_image *im, size_t index, symtab_view *v, char *err, size_t errlen)
{
    Elf64_Shdr sh = section_at(im, index);
    const uint8_t *data;
    size_t len;
    if (sh.sh_entsize < sizeof(Elf64_Sym)) {
        set_err(err, errlen, "symbol table (section %zu) has entries of %llu bytes", index,
             (unsigned long long)sh.sh_entsize);
        return -1;
    }
    if (section_bytes(im, &sh, &data, &len) != 0) {
        set_err(err, errlen, "symbol table (section %zu) is out of the file's bounds", index);
        return -1;
    }
    if (sh.sh_link == 0 || sh.sh_link >= im->shnum) {
        set_err(err, errlen, "symbol table (section %zu) links to no string table (%u)", index, sh.sh_link);
        return -1;
    }
    Elf64_Shdr str = section_at(im, sh.sh_link);
    const uint8_t *strings;
    if (section_bytes(im, &str, &strings, &v->strings_size) != 0) {
        set_err(err, errlen, "string table (section %u) is out of the file's bounds", sh.sh_link);
        return -1;
    }
    v->entries = data;
    v->entsize = (size_t)sh.sh_entsize;
    v->count = len / v->entsize;
    v->strings = (const char *)strings;
    v->dynamic = sh.sh_type == SHT_DYNSYM;
    return 0;
}

static Elf64_Sym symbol_at(const symtab_view *v, size_t i)
{
    Elf64_Sym s;
    memcpy(&s, v->entries + i * v->entsize, sizeof s);
    return s;
}

static int is_function(const Elf64_Sym *s)
{
    int type = ELF64_ST_TYPE(s->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_value != 0 && s->st_shndx != SHN_UNDEF;
}

/* The symbol's name, NUL-terminated inside its string table; NULL if it is
 * empty or not (such a symbol is left out rather than failing the file). */
static const char *symbol_name(const symtab_view *v, const Elf64_Sym *s, uint32_t *len)
{
    if (s->st_name == 0 || s->st_name >= v->strings_size)
        return NULL;
    const char *name = v->strings + s->st_name;
    const char *end = memchr(name, '\0', v->strings_size - s->st_name);
    if (end == NULL || end == name || end - name >= (ptrdiff_t)UINT32_MAX)
        return NULL;
    *len = (uint32_t)(end - name);
    return name;
}

static unsigned leading_underscores(const char *name)
{
    unsigned n = 0;
    while (name[n] == '_' && n < 7)
        n++;
    return n;
}

/* Which name wins an address several symbols share, lower first: a .symtab
 * name over a .dynsym one (.dynsym's is the same symbol, or an exported
 * alias); then a global or weak binding over a local one (a local alias at
 * an exported function's address is an internal entry point such as
 * glibc's __GI_ names); then fewer leading underscores, since glibc exports
 * its public names as weak aliases of the internal ones ("getpid", weak,
 * over "__getpid"; "malloc" over "__libc_malloc"); then global over weak. */
static uint32_t preference(const symtab_view *v, const Elf64_Sym *s, const char *name)
{
    int bind = ELF64_ST_BIND(s->st_info);
    uint32_t local = bind != STB_GLOBAL && bind != STB_WEAK;
    uint32_t weak = bind == STB_WEAK;
    return (uint32_t)v->dynamic << 12 | local << 8 | leading_underscores(name) << 4 | weak;
}

/* Appends the table's function symbols to c (NULL: only counts them);
 * returns the new count. */
static size_t collect(const symtab_view *v, candidate *c, size_t n)
{
    for (size_t i = 0; i < v->count; i++) {
        Elf64_Sym s = symbol_at(v, i);
        uint32_t len;
        const char *name;
        if (!is_function(&s) || (name = symbol_name(v, &s, &len)) == NULL)
            continue;
        if (c != NULL)
            c[n] = (candidate){ .start = s.st_value, .size = s.st_size, .name = name, .name_len = len,
                                .key = (uint64_t)preference(v, &s, name) << 32 | (uint32_t)n };
        n++;
    }
    return n;
}

static int by_start_then_key(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Keeps the first (preferred) candidate of each address, in place; a kept
 * symbol of size 0 takes the size of another one at its address if that has
 * one. Returns how many are kept. */
static size_t merge_shared_addresses(candidate *c, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept > 0 && c[kept - 1].start == c[i].start) {
            if (c[kept - 1].size == 0)
                c[kept - 1].size = c[i].size;
            continue;
        }
        c[kept++] = c[i];
    }
    return kept;
}

static int copy_out(const candidate *c, size_t n, elf_symbols *out, char *err, size_t errlen)
{
    uint64_t names_size = 0;
    for (size_t i = 0; i < n; i++)
        names_size += (uint64_t)c[i].name_len + 1;
    if (names_size > UINT32_MAX) {
        set_err(err, errlen, "symbol names take %llu bytes, more than offsets of 32 bits reach",
             (unsigned long long)names_size);
        return -1;
    }
    out->symbols = malloc(n * sizeof *out->symbols);
    out->names = malloc((size_t)names_size);
    if (out->symbols == NULL || out->names == NULL) {
        set_err(err, errlen, "out of memory for %zu symbols", n);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        out->symbols[i] = (elf_symbol){ .start = c[i].start, .size = c[i].size, .name = (uint32_t)at };
        memcpy(out->names + at, c[i].name, c[i].name_len);
        out->names[at + c[i].name_len] = '\0';
        at += (size_t)c[i].name_len + 1;
    }
    out->count = n;
    out->names_size = (size_t)names_size;
    return 0;
}

/* Opens every .symtab and .dynsym of the file into views (at most max). */
static int open_symtabs(const elf_image *im, symtab_view *views, size_t max, size_t *nviews,
                        char *err, size_t errlen)
{
    *nviews = 0;
    for (size_t i = 0; i < im->shnum && *nviews < max; i++) {
        Elf64_Shdr sh = section_at(im, i);
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
            continue;
        if (open_symtab(im, i, &views[*nviews], err, errlen) != 0)
            return -1;
        (*nviews)++;
    }
    return 0;
}

int elf_symbols_parse(const uint8_t *bytes, size_t size, elf_symbols *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    elf_image im;
    if (open_image(bytes, size, &im, err, errlen) != 0)
        return -1;
    if (im.sections_bad) {
        set_err(err, errlen, "the section table (offset %llu) is out of the file's bounds (%zu bytes)",
             (unsigned long long)im.shoff, size);
        return -1;
    }
    /* The gABI allows one of each; a few more cost nothing to read. */
    symtab_view views[4];
    size_t nviews, n = 0;
    if (open_symtabs(&im, views, sizeof views / sizeof views[0], &nviews, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < nviews; i++)
        n = collect(&views[i], NULL, n);
    if (n == 0)
        return 0;
    if (n > UINT32_MAX) {
        set_err(err, errlen, "%zu function symbols: too many", n);
        return -1;
    }
    candidate *c = malloc(n * sizeof *c);
    if (c == NULL) {
        set_err(err, errlen, "out of memory for %zu symbols", n);
        return -1;
    }
    n = 0;
    for (size_t i = 0; i < nviews; i++)
        n = collect(&views[i], c, n);
    qsort(c, n, sizeof *c, by_start_then_key);
    n = merge_shared_addresses(c, n);
    int rc = copy_out(c, n, out, err, errlen);
    free(c);
    if (rc != 0)
        elf_symbols_free(out);
    return rc;
}

/* Symbol i covers vaddr (>= its start): inside its size, or, sizeless, short
 * of the next symbol and of ZERO_SIZE_REACH. */
static int covers(const elf_symbols *syms, size_t i, uint64_t vaddr)
{
    const elf_symbol *s = &syms->symbols[i];
    uint64_t past = vaddr - s->start;
    if (s->size != 0)
        return past < s->size;
    uint64_t reach = ZERO_SIZE_REACH;
    if (i + 1 < syms->count && syms->symbols[i + 1].start - s->start < reach)
        reach = syms->symbols[i + 1].start - s->start;
    return past < reach;
}

/* Index of the last symbol starting at or before vaddr, or count if none. */
static size_t last_at_or_before(const elf_symbols *syms, uint64_t vaddr)
{
    size_t lo = 0, hi = syms->count;      /* the answer + 1 is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (syms->symbols[mid].start <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? syms->count : lo - 1;
}

const char *elf_symbols_lookup(const elf_symbols *syms, uint64_t vaddr, uint64_t *offset)
{
    if (syms == NULL || syms->count == 0)
        return NULL;
    size_t last = last_at_or_before(syms, vaddr);
    if (last == syms->count)
        return NULL;
    /* An entry point inside a larger function (memcpy's inside memmove's
     * body, say) has a small size of its own: past its end, the address is
     * still the enclosing function's, a few symbols back. */
    for (size_t back = 0; back < ENCLOSING_LOOKBACK && back <= last; back++) {
        size_t i = last - back;
        if (covers(syms, i, vaddr)) {
            if (offset != NULL)
                *offset = vaddr - syms->symbols[i].start;
            return syms->names + syms->symbols[i].name;
        }
    }
    return NULL;
}

uint64_t elf_symbols_find(const elf_symbols *syms, const char *name)
{
    if (syms == NULL || name == NULL)
        return 0;
    for (size_t i = 0; i < syms->count; i++)
        if (strcmp(syms->names + syms->symbols[i].name, name) == 0)
            return syms->symbols[i].start;
    return 0;
}

void elf_symbols_free(elf_symbols *syms)
{
    if (syms == NULL)
        return;
    free(syms->symbols);
    free(syms->names);
    memset(syms, 0, sizeof *syms);
}

/* --------------------------------------------------------------- notes */

static uint64_t align_up(uint64_t n, uint64_t align)
{
    return (n + align - 1) & ~(align - 1);
}

/* The GNU build-id note's descriptor among the notes of [data, data + len),
 * padded to `align` (4, or 8 in a section or segment aligned to 8). */
static const uint8_t *find_build_id(const uint8_t *data, size_t len, uint64_t align, size_t *desc_len)
{
    size_t pos = 0;
    while (len - pos >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        memcpy(&nh, data + pos, sizeof nh);
        pos += sizeof nh;
        uint64_t name_span = align_up(nh.n_namesz, align);   /* n_namesz is 32 bits: no wrap */
        if (name_span > len - pos)
            return NULL;
        const uint8_t *name = data + pos;
        pos += (size_t)name_span;
        if (nh.n_descsz > len - pos)
            return NULL;
        const uint8_t *desc = data + pos;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof ELF_NOTE_GNU &&
            memcmp(name, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0 && nh.n_descsz > 0) {
            *desc_len = nh.n_descsz;
            return desc;
        }
        uint64_t desc_span = align_up(nh.n_descsz, align);
        pos += desc_span < len - pos ? (size_t)desc_span : len - pos;
    }
    return NULL;
}

static const uint8_t *build_id_in_sections(const elf_image *im, size_t *desc_len)
{
    for (size_t i = 0; i < im->shnum; i++) {
        Elf64_Shdr sh = section_at(im, i);
        const uint8_t *data;
        size_t len;
        if (sh.sh_type != SHT_NOTE || section_bytes(im, &sh, &data, &len) != 0)
            continue;
        const uint8_t *desc = find_build_id(data, len, sh.sh_addralign == 8 ? 8 : 4, desc_len);
        if (desc != NULL)
            return desc;
    }
    return NULL;
}

/* For a file without section headers (stripped by sstrip, or a core dump's
 * copy): the loader's view. */
static const uint8_t *build_id_in_segments(const elf_image *im, size_t *desc_len)
{
    for (size_t i = 0; i < im->phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, im->bytes + im->phoff + i * im->phentsize, sizeof ph);
        if (ph.p_type != PT_NOTE || !in_bounds(im->size, ph.p_offset, ph.p_filesz))
            continue;
        const uint8_t *desc = find_build_id(im->bytes + ph.p_offset, (size_t)ph.p_filesz,
                                            ph.p_align == 8 ? 8 : 4, desc_len);
        if (desc != NULL)
            return desc;
    }
    return NULL;
}

int elf_build_id(const uint8_t *bytes, size_t size, char *out, size_t outlen)
{
    if (out == NULL || outlen == 0)
        return 0;
    out[0] = '\0';
    elf_image im;
    if (open_image(bytes, size, &im, NULL, 0) != 0)
        return 0;
    size_t len = 0;
    const uint8_t *desc = build_id_in_sections(&im, &len);
    if (desc == NULL)
        desc = build_id_in_segments(&im, &len);
    /* A cut build id would name some other file: all of it or nothing. */
    if (desc == NULL || len > (outlen - 1) / 2)
        return 0;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[desc[i] >> 4];
        out[2 * i + 1] = hex[desc[i] & 15];
    }
    out[2 * len] = '\0';
    return 1;
}

/* ------------------------------------------------- sections by name */

/* The section named `name` (through e_shstrndx), or -1. */
static int section_named(const elf_image *im, const char *name, Elf64_Shdr *out)
{
    if (im->shstrndx == SHN_UNDEF || im->shstrndx >= im->shnum)
        return -1;
    Elf64_Shdr strsh = section_at(im, im->shstrndx);
    const uint8_t *strings;
    size_t strings_size;
    if (section_bytes(im, &strsh, &strings, &strings_size) != 0)
        return -1;
    size_t want = strlen(name) + 1;
    for (size_t i = 0; i < im->shnum; i++) {
        Elf64_Shdr sh = section_at(im, i);
        if (sh.sh_name < strings_size && want <= strings_size - sh.sh_name &&
            memcmp(strings + sh.sh_name, name, want) == 0) {
            *out = sh;
            return 0;
        }
    }
    return -1;
}

int elf_debuglink(const uint8_t *bytes, size_t size, char *out, size_t outlen)
{
    if (out == NULL || outlen == 0)
        return 0;
    out[0] = '\0';
    elf_image im;
    Elf64_Shdr sh;
    const uint8_t *data;
    size_t len;
    if (open_image(bytes, size, &im, NULL, 0) != 0 || section_named(&im, ".gnu_debuglink", &sh) != 0 ||
        section_bytes(&im, &sh, &data, &len) != 0 || len == 0)
        return 0;
    const uint8_t *end = memchr(data, '\0', len);
    size_t name_len = end != NULL ? (size_t)(end - data) : 0;
    /* The name is of a file beside the object or under a debug directory:
     * one with a '/' would point elsewhere, so it is not taken. */
    if (name_len == 0 || name_len >= outlen || memchr(data, '/', name_len) != NULL)
        return 0;
    memcpy(out, data, name_len);
    out[name_len] = '\0';
    return 1;
}

int elf_has_symtab(const uint8_t *bytes, size_t size)
{
    elf_image im;
    if (open_image(bytes, size, &im, NULL, 0) != 0)
        return 0;
    for (size_t i = 0; i < im.shnum; i++)
        if (section_at(&im, i).sh_type == SHT_SYMTAB)
            return 1;
    return 0;
}

/* ----------------------------------------------------------- debug paths */

static int is_hex(const char *s)
{
    for (; *s != '\0'; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

/* Writes one composed path into paths[*n] if it fits whole (a cut path would
 * name another file) and there is room. */
static void add_path(char (*paths)[PATH_CAP], int max, int *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_path(char (*paths)[PATH_CAP], int max, int *n, const char *fmt, ...)
{
    if (*n >= max)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(paths[*n], PATH_CAP, fmt, ap);
    va_end(ap);
    if (len >= 0 && len < PATH_CAP)
        (*n)++;
    else
        paths[*n][0] = '\0';
}

int elf_debug_paths(const char *object_path, const char *build_id_hex, const char *debuglink,
                    char (*paths)[4096], int max)
{
    int n = 0;
    if (paths == NULL || max <= 0)
        return 0;
    /* gdb's layout: the first byte names a directory, the rest the file. */
    if (build_id_hex != NULL && strlen(build_id_hex) > 2 && is_hex(build_id_hex))
        add_path(paths, max, &n, DEBUG_ROOT "/.build-id/%.2s/%s.debug", build_id_hex, build_id_hex + 2);
    if (debuglink == NULL || debuglink[0] == '\0' || strchr(debuglink, '/') != NULL || object_path == NULL)
        return n;
    const char *slash = strrchr(object_path, '/');
    if (slash == NULL) {
        /* A bare name is relative to the current directory; the global debug
         * directory mirrors absolute paths only. */
        add_path(paths, max, &n, "%s", debuglink);
        add_path(paths, max, &n, ".debug/%s", debuglink);
        return n;
    }
    if (slash - object_path >= PATH_CAP)
        return n;
    int dir_len = (int)(slash - object_path);
    add_path(paths, max, &n, "%.*s/%s", dir_len, object_path, debuglink);
    add_path(paths, max, &n, "%.*s/.debug/%s", dir_len, object_path, debuglink);
    if (object_path[0] == '/')
        add_path(paths, max, &n, DEBUG_ROOT "%.*s/%s", dir_len, object_path, debuglink);
    return n;
}
