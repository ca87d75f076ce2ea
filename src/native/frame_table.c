/* frame_table.c: see frame_table.h.
 *
 * Two passes over .eh_frame. The first reads only each FDE's address range,
 * so the FDEs can be sorted (linkers lay them out in input order, not address
 * order); the second runs the CFA programs of the sorted FDEs and appends
 * their rows in address order. Sorting some 50,000 FDEs instead of a million
 * rows keeps the build fast, and equal neighbours merge as they are appended.
 *
 * What a damaged file gives: a damaged ELF header, section table or
 * program-header table, or an .eh_frame whose entry lengths do not chain up
 * to the section's end, gives -1 (the file is not what a linker wrote; no rule
 * from it is trusted). Inside a well-chained section, a CIE or FDE that cannot
 * be read (an unknown encoding, a CIE pointer to nowhere, an address that
 * wraps) is left out, and an FDE whose program cannot be run (an unknown
 * opcode, an operand past its end, remember_state nested too deep) becomes
 * one FRAME_CFA_UNKNOWN rule over its range. Found through .eh_frame_hdr (no
 * section table), the section's size is unknown: the walk ends at the zero
 * terminator or at the first entry that does not fit, keeping what it read.
 *
 * Everything is read byte by byte in little-endian order through bounds-
 * checked cursors: no alignment is assumed of `bytes`, and nothing is read
 * at or past bytes + size.
 *
 * This file: finding .eh_frame in the ELF file, the two passes, the lookup.
 * frame_table_cfi.c reads the CIEs and FDEs and runs their CFA programs;
 * frame_table_cfi.h has the cursors and the types both share.
 */
#include "frame_table.h"
#include "frame_table_cfi.h"
#include "../core/error_message.h"

#include <elf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Finding .eh_frame                                                   */

enum lookup { LOOKUP_FOUND, LOOKUP_ABSENT, LOOKUP_NO_SECTIONS, LOOKUP_BROKEN };

typedef struct elf_view {
    const uint8_t *bytes;
    size_t         size;
    char          *err;
    size_t         errlen;
} elf_view;

static bool check_header(const elf_view *elf)
{
    const uint8_t *b = elf->bytes;
    if (elf->size < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0) {
        set_err(elf->err, elf->errlen, "not an ELF file");
        return false;
    }
    if (b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB) {
        set_err(elf->err, elf->errlen, "not a 64-bit little-endian ELF file");
        return false;
    }
    uint64_t machine = ELF_FIELD(b, Elf64_Ehdr, e_machine);
    if (machine != EM_X86_64) {
        set_err(elf->err, elf->errlen, "ELF machine %u is not x86-64: its frame rules are not read",
                  (unsigned)machine);
        return false;
    }
    return true;
}

/* The section table: where it is, how many entries, which one holds names. */
typedef struct section_table {
    const uint8_t *first;
    uint64_t       count, entsize, names_index;
} section_table;

static enum lookup read_section_table(const elf_view *elf, section_table *t)
{
    const uint8_t *b = elf->bytes;
    uint64_t off = ELF_FIELD(b, Elf64_Ehdr, e_shoff);
    t->entsize = ELF_FIELD(b, Elf64_Ehdr, e_shentsize);
    t->count = ELF_FIELD(b, Elf64_Ehdr, e_shnum);
    t->names_index = ELF_FIELD(b, Elf64_Ehdr, e_shstrndx);
    if (off == 0)
        return LOOKUP_NO_SECTIONS;
    if (t->entsize < sizeof(Elf64_Shdr) || !in_bounds(elf->size, off, t->entsize)) {
        set_err(elf->err, elf->errlen, "bad section header table (offset %llu, entry size %llu)",
                  (unsigned long long)off, (unsigned long long)t->entsize);
        return LOOKUP_BROKEN;
    }
    t->first = b + off;
    /* More than 0xff00 sections: the real numbers are in section 0. */
    if (t->count == 0)
        t->count = ELF_FIELD(t->first, Elf64_Shdr, sh_size);
    if (t->names_index == SHN_XINDEX)
        t->names_index = ELF_FIELD(t->first, Elf64_Shdr, sh_link);
    if (t->count > (elf->size - off) / t->entsize) {
        set_err(elf->err, elf->errlen, "section header table runs past the end of the file");
        return LOOKUP_BROKEN;
    }
    if (t->names_index == SHN_UNDEF || t->names_index >= t->count)
        return LOOKUP_NO_SECTIONS;   /* sections without names: try the program headers */
    return LOOKUP_FOUND;
}

static enum lookup find_by_sections(const elf_view *elf, eh_section *out)
{
    section_table t;
    enum lookup r = read_section_table(elf, &t);
    if (r != LOOKUP_FOUND)
        return r;
    const uint8_t *names_hdr = t.first + t.names_index * t.entsize;
    uint64_t names_off = ELF_FIELD(names_hdr, Elf64_Shdr, sh_offset);
    uint64_t names_size = ELF_FIELD(names_hdr, Elf64_Shdr, sh_size);
    if (!in_bounds(elf->size, names_off, names_size)) {
        set_err(elf->err, elf->errlen, "section name table runs past the end of the file");
        return LOOKUP_BROKEN;
    }
    static const char wanted[] = ".eh_frame";      /* compared with its NUL */
    for (uint64_t i = 0; i < t.count; i++) {
        const uint8_t *sh = t.first + i * t.entsize;
        uint64_t name = ELF_FIELD(sh, Elf64_Shdr, sh_name);
        if (!in_bounds(names_size, name, sizeof wanted)
            || memcmp(elf->bytes + names_off + name, wanted, sizeof wanted) != 0)
            continue;
        if (ELF_FIELD(sh, Elf64_Shdr, sh_type) == SHT_NOBITS)
            return LOOKUP_ABSENT;    /* a separate debug file: the rules are in the object */
        uint64_t off = ELF_FIELD(sh, Elf64_Shdr, sh_offset);
        uint64_t size = ELF_FIELD(sh, Elf64_Shdr, sh_size);
        if (!in_bounds(elf->size, off, size)) {
            set_err(elf->err, elf->errlen, ".eh_frame runs past the end of the file");
            return LOOKUP_BROKEN;
        }
        *out = (eh_section){ .bytes = elf->bytes + off, .size = (size_t)size,
                             .vaddr = ELF_FIELD(sh, Elf64_Shdr, sh_addr), .size_known = true };
        return LOOKUP_FOUND;
    }
    return LOOKUP_ABSENT;
}

typedef struct program_headers {
    const uint8_t *first;
    uint64_t       count, entsize;
} program_headers;

static bool read_program_headers(const elf_view *elf, program_headers *ph)
{
    uint64_t off = ELF_FIELD(elf->bytes, Elf64_Ehdr, e_phoff);
    ph->entsize = ELF_FIELD(elf->bytes, Elf64_Ehdr, e_phentsize);
    ph->count = ELF_FIELD(elf->bytes, Elf64_Ehdr, e_phnum);
    if (off == 0 || ph->count == 0) {
        ph->count = 0;
        return true;
    }
    /* PN_XNUM keeps the count in section 0, which this route lacks. */
    if (ph->count == PN_XNUM || ph->entsize < sizeof(Elf64_Phdr)
        || !in_bounds(elf->size, off, 0) || ph->count > (elf->size - off) / ph->entsize) {
        set_err(elf->err, elf->errlen, "bad program header table");
        return false;
    }
    ph->first = elf->bytes + off;
    return true;
}

/* The file bytes that hold virtual address `vaddr`, up to the end of its
 * PT_LOAD segment's file image (cut at the end of the file). */
static bool map_vaddr(const elf_view *elf, const program_headers *ph, uint64_t vaddr,
                      size_t *off, size_t *len)
{
    for (uint64_t i = 0; i < ph->count; i++) {
        const uint8_t *p = ph->first + i * ph->entsize;
        if (ELF_FIELD(p, Elf64_Phdr, p_type) != PT_LOAD)
            continue;
        uint64_t seg_vaddr = ELF_FIELD(p, Elf64_Phdr, p_vaddr);
        uint64_t seg_off = ELF_FIELD(p, Elf64_Phdr, p_offset);
        uint64_t seg_filesz = ELF_FIELD(p, Elf64_Phdr, p_filesz);
        if (vaddr < seg_vaddr || vaddr - seg_vaddr >= seg_filesz)
            continue;
        uint64_t delta = vaddr - seg_vaddr;
        if (seg_off > elf->size || delta > elf->size - seg_off)
            return false;
        *off = (size_t)(seg_off + delta);
        uint64_t room = elf->size - *off, want = seg_filesz - delta;
        *len = (size_t)(want < room ? want : room);
        return true;
    }
    return false;
}

/* PT_GNU_EH_FRAME -> .eh_frame_hdr -> eh_frame_ptr -> the PT_LOAD holding it. */
static enum lookup find_by_program_headers(const elf_view *elf, eh_section *out)
{
    program_headers ph;
    if (!read_program_headers(elf, &ph))
        return LOOKUP_BROKEN;
    for (uint64_t i = 0; i < ph.count; i++) {
        const uint8_t *p = ph.first + i * ph.entsize;
        if (ELF_FIELD(p, Elf64_Phdr, p_type) != PT_GNU_EH_FRAME)
            continue;
        uint64_t hdr_off = ELF_FIELD(p, Elf64_Phdr, p_offset);
        uint64_t hdr_size = ELF_FIELD(p, Elf64_Phdr, p_filesz);
        uint64_t hdr_vaddr = ELF_FIELD(p, Elf64_Phdr, p_vaddr);
        if (!in_bounds(elf->size, hdr_off, hdr_size)) {
            set_err(elf->err, elf->errlen, ".eh_frame_hdr runs past the end of the file");
            return LOOKUP_BROKEN;
        }
        cursor c = { elf->bytes + hdr_off, 0, (size_t)hdr_size, true };
        uint64_t version = cur_uint(&c, 1);
        uint8_t ptr_enc = (uint8_t)cur_uint(&c, 1);
        cur_skip(&c, 2);             /* the search table's encodings: not used */
        pointer_bases bases = { .cursor_vaddr = hdr_vaddr, .has_data = true, .data = hdr_vaddr };
        uint64_t eh_vaddr = 0;
        size_t off, len;
        if (!c.ok || version != 1 || !read_pointer(&c, ptr_enc, &bases, &eh_vaddr)
            || !map_vaddr(elf, &ph, eh_vaddr, &off, &len)) {
            set_err(elf->err, elf->errlen, "unreadable .eh_frame_hdr");
            return LOOKUP_BROKEN;
        }
        *out = (eh_section){ .bytes = elf->bytes + off, .size = len, .vaddr = eh_vaddr,
                             .size_known = false };
        return LOOKUP_FOUND;
    }
    return LOOKUP_ABSENT;
}

/* ------------------------------------------------------------------ */
/* The two passes                                                      */

typedef struct fde_ref {
    uint64_t begin, end;
    size_t   at;                 /* the entry's offset in the section */
} fde_ref;

typedef struct fde_list {
    fde_ref *refs;
    size_t   count, cap;
    size_t   read;               /* FDE entries seen, readable or not */
} fde_list;

static bool push_fde(fde_list *l, const fde_ref *ref)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        fde_ref *grown = cap > SIZE_MAX / sizeof *grown ? NULL : realloc(l->refs, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        l->refs = grown;
        l->cap = cap;
    }
    l->refs[l->count++] = *ref;
    return true;
}

/* Pass 1: the range of every readable FDE. */
static bool collect_fdes(const eh_section *s, fde_list *l, char *err, size_t errlen)
{
    size_t at = 0;
    for (;;) {                       /* each entry moves `at` forward by 4 bytes or more */
        entry e = frame_table_read_entry(s, at);
        switch (e.kind) {
        case ENTRY_END: return true;
        case ENTRY_BROKEN:
            if (!s->size_known)
                return true;         /* past the section, most likely: keep what was read */
            set_err(err, errlen, ".eh_frame entry at offset %zu runs past the section", at);
            return false;
        case ENTRY_FDE: {
            l->read++;
            fde_info fde;
            if (frame_table_read_fde(s, &e, &fde)
                && !push_fde(l, &(fde_ref){ .begin = fde.begin, .end = fde.end, .at = at })) {
                set_err(err, errlen, "out of memory");
                return false;
            }
            break;
        }
        case ENTRY_CIE: case ENTRY_ZERO: break;
        }
        at = e.end;
    }
}

static int compare_fdes(const void *a, const void *b)
{
    const fde_ref *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Pass 2: the rules of the sorted FDEs, then an unknown rule at the end. */
static bool compile_fdes(const eh_section *s, const fde_list *l, builder *b)
{
    for (size_t i = 0; i < l->count && !b->no_memory; i++) {
        const fde_ref *ref = &l->refs[i];
        if (b->started && ref->end <= b->covered)
            continue;                /* wholly inside an earlier FDE */
        entry e = frame_table_read_entry(s, ref->at);
        fde_info fde;
        if (frame_table_read_fde(s, &e, &fde))   /* read in pass 1 already: cannot fail */
            frame_table_compile_fde(s, &fde, b);
    }
    if (b->started)
        frame_table_emit_gap(b);                 /* marks `high`: frame_table_find stops before it */
    return !b->no_memory;
}

static int compile_section(const eh_section *s, frame_table *out, char *err, size_t errlen)
{
    fde_list fdes = { 0 };
    builder b = { 0 };
    if (!collect_fdes(s, &fdes, err, errlen)) {
        free(fdes.refs);
        return -1;
    }
    if (fdes.count > 1)              /* qsort(NULL, 0, ...) is undefined */
        qsort(fdes.refs, fdes.count, sizeof *fdes.refs, compare_fdes);
    bool ok = compile_fdes(s, &fdes, &b);
    free(fdes.refs);
    if (!ok) {
        free(b.rules);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (b.count > 0 && b.count < b.cap) {
        frame_rule *fitted = realloc(b.rules, b.count * sizeof *fitted);
        if (fitted != NULL)
            b.rules = fitted;
    }
    *out = (frame_table){
        .rules = b.rules, .count = b.count,
        .low = b.count ? b.rules[0].start : 0, .high = b.started ? b.covered : 0,
        .fdes = fdes.read, .skipped = b.skipped,
    };
    return 0;
}

int frame_table_build(const uint8_t *bytes, size_t size, frame_table *out, char *err, size_t errlen)
{
    *out = (frame_table){ 0 };
    set_err(err, errlen, "%s", "");
    if (bytes == NULL) {
        set_err(err, errlen, "no bytes");
        return -1;
    }
    elf_view elf = { bytes, size, err, errlen };
    if (!check_header(&elf))
        return -1;
    eh_section s;
    enum lookup found = find_by_sections(&elf, &s);
    if (found == LOOKUP_NO_SECTIONS)
        found = find_by_program_headers(&elf, &s);
    if (found == LOOKUP_BROKEN)
        return -1;
    if (found == LOOKUP_ABSENT)
        return 0;
    return compile_section(&s, out, err, errlen);
}

const frame_rule *frame_table_find(const frame_table *table, uint64_t vaddr)
{
    if (table == NULL || table->count == 0 || vaddr < table->low || vaddr >= table->high)
        return NULL;
    /* The last rule starting at or below vaddr; rules[0].start == low. */
    size_t lo = 0, hi = table->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (table->rules[mid].start <= vaddr)
            lo = mid;
        else
            hi = mid;
    }
    return &table->rules[lo];
}

void frame_table_free(frame_table *table)
{
    if (table == NULL)
        return;
    free(table->rules);
    *table = (frame_table){ 0 };
}
