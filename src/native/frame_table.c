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
 */
#include "frame_table.h"
#include "../core/error_message.h"

#include <elf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DWARF register numbers of the x86-64 psABI. */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA  16

/* remember_state nests this deep at most; compilers use one or two levels. */
#define REMEMBER_DEPTH 16

/* Pointer encodings (DW_EH_PE_*, LSB 10.5): the low nibble is the format,
 * bits 4-6 what the value is relative to, bit 7 an indirection. */
enum {
    PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04, PE_SIGNED = 0x08, PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_ALIGNED = 0x50,
    PE_APPLICATION = 0x70, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* Call-frame instructions (DWARF 5, 6.4.2, and the GNU extensions). */
enum {
    CFA_ADVANCE_LOC = 0x40, CFA_OFFSET = 0x80, CFA_RESTORE = 0xc0,
    CFA_NOP = 0x00, CFA_SET_LOC = 0x01, CFA_ADVANCE_LOC1 = 0x02,
    CFA_ADVANCE_LOC2 = 0x03, CFA_ADVANCE_LOC4 = 0x04, CFA_OFFSET_EXTENDED = 0x05,
    CFA_RESTORE_EXTENDED = 0x06, CFA_UNDEFINED = 0x07, CFA_SAME_VALUE = 0x08,
    CFA_REGISTER = 0x09, CFA_REMEMBER_STATE = 0x0a, CFA_RESTORE_STATE = 0x0b,
    CFA_DEF_CFA = 0x0c, CFA_DEF_CFA_REGISTER = 0x0d, CFA_DEF_CFA_OFFSET = 0x0e,
    CFA_DEF_CFA_EXPRESSION = 0x0f, CFA_EXPRESSION = 0x10,
    CFA_OFFSET_EXTENDED_SF = 0x11, CFA_DEF_CFA_SF = 0x12,
    CFA_DEF_CFA_OFFSET_SF = 0x13, CFA_VAL_OFFSET = 0x14,
    CFA_VAL_OFFSET_SF = 0x15, CFA_VAL_EXPRESSION = 0x16,
    CFA_MIPS_ADVANCE_LOC8 = 0x1d, CFA_GNU_ARGS_SIZE = 0x2e,
    CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f,
};

/* ------------------------------------------------------------------ */
/* Bytes                                                               */

static uint64_t le_bytes(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0; )
        v = v << 8 | p[i];
    return v;
}

/* A field of an ELF record at `rec` (already checked to lie in the file). */
#define ELF_FIELD(rec, type, member) \
    le_bytes((rec) + offsetof(type, member), sizeof(((type *)0)->member))

/* [off, off + len) lies within a buffer of `size` bytes (no overflow). */
static bool in_bounds(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

/* A reader over base[pos, end). A read that does not fit clears `ok`, and
 * every later read gives 0: callers check `ok` once after a group of reads. */
typedef struct cursor {
    const uint8_t *base;
    size_t         pos, end;
    bool           ok;
} cursor;

static bool cur_need(cursor *c, uint64_t n)
{
    if (!c->ok || n > c->end - c->pos) {
        c->ok = false;
        return false;
    }
    return true;
}

static uint64_t cur_uint(cursor *c, size_t n)
{
    if (!cur_need(c, n))
        return 0;
    uint64_t v = le_bytes(c->base + c->pos, n);
    c->pos += n;
    return v;
}

static void cur_skip(cursor *c, uint64_t n)
{
    if (cur_need(c, n))
        c->pos += (size_t)n;
}

/* LEB128: bits past the 64th are dropped, but the bytes are consumed (up
 * to the cursor's end, which bounds the loop). *bits: 7 per byte read, 0
 * when the cursor ran out (the value is then 0). */
static uint64_t cur_leb(cursor *c, unsigned *bits)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (!cur_need(c, 1)) {
            *bits = 0;
            return 0;
        }
        uint8_t b = c->base[c->pos++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            *bits = shift;
            return v;
        }
    }
}

static uint64_t cur_uleb(cursor *c)
{
    unsigned bits;
    return cur_leb(c, &bits);
}

/* The sign is the last byte's bit 6, bit (bits - 1) of the value. */
static int64_t cur_sleb(cursor *c)
{
    unsigned bits;
    uint64_t v = cur_leb(c, &bits);
    if (bits > 0 && bits < 64 && ((v >> (bits - 1)) & 1))
        v |= ~(uint64_t)0 << bits;
    return (int64_t)v;
}

/* A signed value that does not fit int64 becomes INT64_MAX: every consumer
 * then finds it out of int32 range and marks the row unknown. */
static int64_t uleb_as_signed(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int64_t scaled(int64_t v, int64_t factor)
{
    int64_t out;
    return __builtin_mul_overflow(v, factor, &out) ? INT64_MAX : out;
}

static int64_t negated(int64_t v)
{
    return v == INT64_MIN ? INT64_MAX : -v;
}


/* ------------------------------------------------------------------ */
/* Encoded pointers                                                    */

/* Where the values relative to something start from. */
typedef struct pointer_bases {
    uint64_t cursor_vaddr;       /* the virtual address of cursor.base[0] (pcrel, aligned) */
    bool     has_data;           /* datarel is known (only in .eh_frame_hdr: its start) */
    uint64_t data;
} pointer_bases;

static bool read_format(cursor *c, uint8_t format, uint64_t *value)
{
    switch (format) {
    case PE_ABSPTR: case PE_SIGNED: case PE_UDATA8: case PE_SDATA8:
        *value = cur_uint(c, 8); break;
    case PE_ULEB128: *value = cur_uleb(c); break;
    case PE_SLEB128: *value = (uint64_t)cur_sleb(c); break;
    case PE_UDATA2:  *value = cur_uint(c, 2); break;
    case PE_UDATA4:  *value = cur_uint(c, 4); break;
    case PE_SDATA2:  *value = (uint64_t)(int64_t)(int16_t)cur_uint(c, 2); break;
    case PE_SDATA4:  *value = (uint64_t)(int64_t)(int32_t)cur_uint(c, 4); break;
    default:
        c->ok = false;       /* its size is unknown: nothing after it can be read */
        return false;
    }
    return c->ok;
}

/* Reads a pointer of encoding `enc`. True with *value when it is an address
 * we can know here; false otherwise. The cursor has moved past the pointer
 * whenever its size is known (c->ok), so a caller that only skips it (the
 * personality routine) checks c->ok, not the result. */
static bool read_pointer(cursor *c, uint8_t enc, const pointer_bases *bases, uint64_t *value)
{
    if (enc == PE_OMIT)
        return false;
    uint8_t application = enc & PE_APPLICATION;
    uint8_t format = enc & 0x0f;
    if (application == PE_ALIGNED) {
        /* Aligned to the address size in the mapped object, not in the file. */
        uint64_t misalign = (bases->cursor_vaddr + c->pos) & 7;
        cur_skip(c, misalign ? 8 - misalign : 0);
        format = PE_ABSPTR;
    }
    uint64_t field_vaddr = bases->cursor_vaddr + c->pos;
    uint64_t raw;
    if (!read_format(c, format, &raw))
        return false;
    if (enc & PE_INDIRECT)
        return false;                /* the address of the address: not loaded here */
    switch (application) {
    case 0: case PE_ALIGNED: *value = raw; return true;
    case PE_PCREL:   *value = raw + field_vaddr; return true;
    case PE_DATAREL:
        if (!bases->has_data)
            return false;
        *value = raw + bases->data;
        return true;
    default:
        return false;                /* textrel, funcrel: no base known in a file */
    }
}

/* ------------------------------------------------------------------ */
/* Finding .eh_frame                                                   */

typedef struct eh_section {
    const uint8_t *bytes;        /* its first byte */
    size_t         size;
    uint64_t       vaddr;        /* the address of bytes[0] when mapped */
    bool           size_known;   /* false when found through .eh_frame_hdr */
} eh_section;

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
/* CIEs and FDEs                                                       */

enum entry_kind { ENTRY_CIE, ENTRY_FDE, ENTRY_ZERO, ENTRY_END, ENTRY_BROKEN };

typedef struct entry {
    enum entry_kind kind;
    size_t          id_pos;      /* the CIE id or CIE pointer field */
    size_t          body;        /* just past that field */
    size_t          end;         /* just past the entry */
    uint64_t        id;
} entry;

/* The entry at `at`. A 64-bit length (0xffffffff, then 8 bytes) makes the id
 * field 8 bytes too, as in DWARF's 64-bit format (and as readelf reads it). */
static entry read_entry(const eh_section *s, size_t at)
{
    entry e = { .kind = ENTRY_BROKEN };
    if (at == s->size || (!s->size_known && s->size - at < 4))
        return (entry){ .kind = ENTRY_END };
    cursor c = { s->bytes, at, s->size, true };
    uint64_t length = cur_uint(&c, 4);
    size_t id_size = 4;
    if (length == 0xffffffff) {
        length = cur_uint(&c, 8);
        id_size = 8;
    }
    if (!c.ok)
        return e;
    if (length == 0) {
        e.kind = s->size_known ? ENTRY_ZERO : ENTRY_END;
        e.end = c.pos;
        return e;
    }
    if (length < id_size || length > c.end - c.pos)
        return e;
    e.id_pos = c.pos;
    e.end = c.pos + (size_t)length;
    e.id = cur_uint(&c, id_size);
    e.body = c.pos;
    e.kind = e.id == 0 ? ENTRY_CIE : ENTRY_FDE;
    return e;
}

typedef struct cie_info {
    uint64_t code_align;
    int64_t  data_align;
    uint64_t ra_reg;
    uint8_t  fde_enc;            /* how the FDEs' pc_begin and pc_range are written */
    bool     has_aug_length;     /* 'z': FDEs carry an augmentation data length */
    size_t   insns, insns_end;   /* the initial instructions */
} cie_info;

/* The augmentation letters and their data (LSB 10.6.1.1). With 'z' the data
 * has a length, so an unknown letter ends the list (as libgcc reads it);
 * without, the data follows inline and an unknown letter makes the CIE
 * unreadable. */
static bool read_augmentation(cursor *c, const char *aug, const pointer_bases *bases, cie_info *cie)
{
    bool sized = aug[0] == 'z';
    cursor data = *c;
    if (sized) {
        cie->has_aug_length = true;
        uint64_t data_len = cur_uleb(c);
        if (!cur_need(c, data_len))
            return false;
        data = (cursor){ c->base, c->pos, c->pos + (size_t)data_len, true };
        c->pos += (size_t)data_len;
        aug++;
    }
    for (const char *a = aug; *a != '\0' && data.ok; a++) {
        uint64_t ignored;
        switch (*a) {
        case 'R': cie->fde_enc = (uint8_t)cur_uint(&data, 1); break;
        case 'L': cur_skip(&data, 1); break;                   /* the LSDA's encoding */
        case 'P': {
            uint8_t enc = (uint8_t)cur_uint(&data, 1);
            (void)read_pointer(&data, enc, bases, &ignored);  /* the personality routine */
            break;
        }
        case 'S': case 'B': case 'G': break;  /* signal frame, AArch64 BTI / MTE: no data */
        default:
            return sized && data.ok;
        }
    }
    if (!sized)
        c->pos = data.pos;
    return data.ok;
}

static bool read_cie(const eh_section *s, size_t at, cie_info *cie)
{
    entry e = read_entry(s, at);
    if (e.kind != ENTRY_CIE)
        return false;
    cursor c = { s->bytes, e.body, e.end, true };
    uint64_t version = cur_uint(&c, 1);
    if (version != 1 && version != 3 && version != 4)
        return false;
    const char *aug = (const char *)s->bytes + c.pos;
    const uint8_t *nul = memchr(aug, 0, c.end - c.pos);
    if (nul == NULL)
        return false;
    c.pos += (size_t)(nul - (const uint8_t *)aug) + 1;
    if (aug[0] == 'e' && aug[1] == 'h')
        return false;                /* GCC 2's "eh": no longer written */
    if (version == 4 && (cur_uint(&c, 1) != 8 || cur_uint(&c, 1) != 0))
        return false;                /* address size 8, no segment selector */
    *cie = (cie_info){ .fde_enc = PE_ABSPTR };
    cie->code_align = cur_uleb(&c);
    cie->data_align = cur_sleb(&c);
    cie->ra_reg = version == 1 ? cur_uint(&c, 1) : cur_uleb(&c);
    pointer_bases bases = { .cursor_vaddr = s->vaddr };
    if (!read_augmentation(&c, aug, &bases, cie))
        return false;
    cie->insns = c.pos;
    cie->insns_end = c.end;
    return c.ok;
}

typedef struct fde_info {
    cie_info cie;
    uint64_t begin, end;
    size_t   insns, insns_end;
} fde_info;

/* An FDE's CIE, address range and instructions; false if any is unreadable
 * (or the range is empty or wraps). */
static bool read_fde(const eh_section *s, const entry *e, fde_info *fde)
{
    if (e->id > e->id_pos || !read_cie(s, e->id_pos - (size_t)e->id, &fde->cie))
        return false;
    cursor c = { s->bytes, e->body, e->end, true };
    pointer_bases bases = { .cursor_vaddr = s->vaddr };
    uint64_t range = 0;
    if (!read_pointer(&c, fde->cie.fde_enc, &bases, &fde->begin)
        || !read_format(&c, fde->cie.fde_enc & 0x0f, &range))
        return false;
    if (fde->cie.has_aug_length)
        cur_skip(&c, cur_uleb(&c));
    if (!c.ok || range == 0 || range > UINT64_MAX - fde->begin)
        return false;
    fde->end = fde->begin + range;
    fde->insns = c.pos;
    fde->insns_end = c.end;
    return true;
}

/* ------------------------------------------------------------------ */
/* The rules being built                                               */

typedef struct builder {
    frame_rule *rules;
    size_t      count, cap;
    size_t      fde_mark;        /* count when the current FDE began */
    size_t      skipped_mark;
    uint64_t    covered;         /* addresses below this have rules already */
    uint64_t    fde_end;         /* rows at or past this are dropped */
    size_t      skipped;
    bool        started;         /* an FDE has been compiled: covered is meaningful */
    bool        no_memory;
} builder;

static const frame_rule unknown_rule = {
    .cfa_reg = FRAME_CFA_UNKNOWN, .cfa_offset = 0, .fp_offset = FRAME_FP_SAME,
};

static bool same_rule(const frame_rule *a, const frame_rule *b)
{
    return a->cfa_reg == b->cfa_reg && a->cfa_offset == b->cfa_offset
        && a->fp_offset == b->fp_offset;
}

static bool push_rule(builder *b, const frame_rule *rule)
{
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        frame_rule *grown = cap > SIZE_MAX / sizeof *grown ? NULL
                          : realloc(b->rules, cap * sizeof *grown);
        if (grown == NULL) {
            b->no_memory = true;
            return false;
        }
        b->rules = grown;
        b->cap = cap;
    }
    b->rules[b->count++] = *rule;
    return true;
}

/* The rule `rule` holds from `start` on. Rows of an earlier FDE win where
 * two FDEs overlap (start moves up to `covered`); a later row at the same
 * address replaces an earlier one of the same FDE (an advance by 0, or the
 * rows clipped to `covered`); a rule equal to the one before is not added. */
static void emit_rule(builder *b, uint64_t start, frame_rule rule)
{
    if (start >= b->fde_end)
        return;
    if (start < b->covered)
        start = b->covered;
    if (b->count > b->fde_mark && b->rules[b->count - 1].start == start)
        b->count--;
    if (b->count > 0 && same_rule(&b->rules[b->count - 1], &rule))
        return;
    rule.start = start;
    push_rule(b, &rule);
}

/* ------------------------------------------------------------------ */
/* Running CFA programs                                                */

enum rule_how { HOW_UNSET, HOW_UNDEFINED, HOW_SAME, HOW_OFFSET, HOW_OTHER };

typedef struct reg_rule {
    uint8_t how;                 /* enum rule_how */
    int64_t offset;              /* HOW_OFFSET: saved at CFA + offset */
} reg_rule;

/* The row's rules that the table can use: the CFA, %rbp and the return
 * address. Other registers' rules are read and dropped. */
typedef struct cfa_row {
    bool     cfa_is_expression;
    uint64_t cfa_reg;
    int64_t  cfa_offset;
    reg_rule rbp, ra;
} cfa_row;

typedef struct cfa_program {
    cursor         code;
    pointer_bases  bases;
    const cie_info *cie;
    builder        *out;         /* NULL while running a CIE's initial instructions */
    cfa_row        row;
    cfa_row        initial;      /* what DW_CFA_restore goes back to */
    cfa_row        saved[REMEMBER_DEPTH];
    unsigned       depth;
    uint64_t       loc;
} cfa_program;

static frame_rule rule_of_row(const cfa_row *row, const cie_info *cie)
{
    frame_rule r = unknown_rule;
    if (cie->ra_reg != DWARF_REG_RA || row->cfa_is_expression
        || row->ra.how != HOW_OFFSET || row->ra.offset != -8
        || row->cfa_offset < INT32_MIN || row->cfa_offset > INT32_MAX)
        return r;
    if (row->cfa_reg == DWARF_REG_RSP)
        r.cfa_reg = FRAME_CFA_SP;
    else if (row->cfa_reg == DWARF_REG_RBP)
        r.cfa_reg = FRAME_CFA_FP;
    else
        return r;
    switch (row->rbp.how) {
    case HOW_UNSET: case HOW_UNDEFINED: case HOW_SAME:
        r.fp_offset = FRAME_FP_SAME;     /* undefined: no better guess than the current %rbp */
        break;
    case HOW_OFFSET:
        if (row->rbp.offset <= INT32_MIN || row->rbp.offset > INT32_MAX)
            return unknown_rule;
        r.fp_offset = (int32_t)row->rbp.offset;
        break;
    default:
        return unknown_rule;             /* in another register, or an expression */
    }
    r.cfa_offset = (int32_t)row->cfa_offset;
    return r;
}

static void emit_row(cfa_program *p)
{
    if (p->out == NULL || p->loc >= p->out->fde_end)
        return;
    frame_rule r = rule_of_row(&p->row, p->cie);
    if (r.cfa_reg == FRAME_CFA_UNKNOWN)
        p->out->skipped++;
    emit_rule(p->out, p->loc, r);
}

/* Ends the current row and starts the next at loc + delta (or at `to`). */
static bool advance_to(cfa_program *p, uint64_t to)
{
    if (p->out == NULL || to < p->loc)
        return false;                /* no rows in a CIE; locations only go up */
    emit_row(p);
    p->loc = to;
    return true;
}

static bool advance_by(cfa_program *p, uint64_t delta)
{
    uint64_t bytes;
    if (!p->code.ok || __builtin_mul_overflow(delta, p->cie->code_align, &bytes) || bytes > UINT64_MAX - p->loc)
        return false;
    return advance_to(p, p->loc + bytes);
}

static reg_rule *tracked(cfa_row *row, uint64_t reg)
{
    return reg == DWARF_REG_RBP ? &row->rbp : reg == DWARF_REG_RA ? &row->ra : NULL;
}

static void set_reg(cfa_program *p, uint64_t reg, enum rule_how how, int64_t offset)
{
    reg_rule *r = tracked(&p->row, reg);
    if (r != NULL)
        *r = (reg_rule){ .how = (uint8_t)how, .offset = offset };
}

static void restore_reg(cfa_program *p, uint64_t reg)
{
    reg_rule *r = tracked(&p->row, reg);
    if (r != NULL)
        *r = *tracked(&p->initial, reg);
}

static void skip_block(cursor *c)
{
    cur_skip(c, cur_uleb(c));
}

static int64_t factored(cfa_program *p, int64_t v)
{
    return scaled(v, p->cie->data_align);
}

/* The register-rule instructions. False for an opcode that is not one. */
static bool run_register_op(cfa_program *p, uint8_t op)
{
    cursor *c = &p->code;
    uint64_t reg;
    switch (op) {
    case CFA_OFFSET_EXTENDED:
        reg = cur_uleb(c);
        set_reg(p, reg, HOW_OFFSET, factored(p, uleb_as_signed(cur_uleb(c))));
        return true;
    case CFA_OFFSET_EXTENDED_SF:
        reg = cur_uleb(c);
        set_reg(p, reg, HOW_OFFSET, factored(p, cur_sleb(c)));
        return true;
    case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
        reg = cur_uleb(c);
        set_reg(p, reg, HOW_OFFSET, negated(factored(p, uleb_as_signed(cur_uleb(c)))));
        return true;
    case CFA_RESTORE_EXTENDED: restore_reg(p, cur_uleb(c)); return true;
    case CFA_UNDEFINED:        set_reg(p, cur_uleb(c), HOW_UNDEFINED, 0); return true;
    case CFA_SAME_VALUE:       set_reg(p, cur_uleb(c), HOW_SAME, 0); return true;
    case CFA_REGISTER: {
        reg = cur_uleb(c);
        uint64_t other = cur_uleb(c);
        set_reg(p, reg, reg == other ? HOW_SAME : HOW_OTHER, 0);
        return true;
    }
    case CFA_VAL_OFFSET:
        reg = cur_uleb(c);
        (void)cur_uleb(c);
        set_reg(p, reg, HOW_OTHER, 0);
        return true;
    case CFA_VAL_OFFSET_SF:
        reg = cur_uleb(c);
        (void)cur_sleb(c);
        set_reg(p, reg, HOW_OTHER, 0);
        return true;
    case CFA_EXPRESSION: case CFA_VAL_EXPRESSION:
        reg = cur_uleb(c);
        skip_block(c);
        set_reg(p, reg, HOW_OTHER, 0);
        return true;
    default:
        return false;
    }
}

/* The CFA-definition instructions. False for an opcode that is not one. */
static bool run_cfa_op(cfa_program *p, uint8_t op)
{
    cursor *c = &p->code;
    cfa_row *row = &p->row;
    switch (op) {
    case CFA_DEF_CFA:
        row->cfa_reg = cur_uleb(c);
        row->cfa_offset = uleb_as_signed(cur_uleb(c));
        row->cfa_is_expression = false;
        return true;
    case CFA_DEF_CFA_SF:
        row->cfa_reg = cur_uleb(c);
        row->cfa_offset = factored(p, cur_sleb(c));
        row->cfa_is_expression = false;
        return true;
    case CFA_DEF_CFA_REGISTER:
        row->cfa_reg = cur_uleb(c);
        row->cfa_is_expression = false;
        return true;
    /* An offset alone keeps an expression an expression (as readelf shows it). */
    case CFA_DEF_CFA_OFFSET:    row->cfa_offset = uleb_as_signed(cur_uleb(c)); return true;
    case CFA_DEF_CFA_OFFSET_SF: row->cfa_offset = factored(p, cur_sleb(c)); return true;
    case CFA_DEF_CFA_EXPRESSION:
        skip_block(c);
        row->cfa_is_expression = true;   /* PLT entries and signal frames: not followed */
        return true;
    default:
        return false;
    }
}

/* The location and state instructions, and the ones with nothing to do.
 * False for an opcode that is not one, or one that cannot be applied. */
static bool run_flow_op(cfa_program *p, uint8_t op, bool *known)
{
    cursor *c = &p->code;
    uint64_t to;
    *known = true;
    switch (op) {
    case CFA_NOP: return true;
    case CFA_GNU_ARGS_SIZE: (void)cur_uleb(c); return true;
    case CFA_ADVANCE_LOC1: return advance_by(p, cur_uint(c, 1));
    case CFA_ADVANCE_LOC2: return advance_by(p, cur_uint(c, 2));
    case CFA_ADVANCE_LOC4: return advance_by(p, cur_uint(c, 4));
    case CFA_MIPS_ADVANCE_LOC8: return advance_by(p, cur_uint(c, 8));
    case CFA_SET_LOC:
        if (!read_pointer(c, p->cie->fde_enc, &p->bases, &to))
            return false;
        return advance_to(p, to);
    case CFA_REMEMBER_STATE:
        if (p->depth == REMEMBER_DEPTH)
            return false;
        p->saved[p->depth++] = p->row;
        return true;
    case CFA_RESTORE_STATE:
        if (p->depth == 0)
            return false;
        p->row = p->saved[--p->depth];
        return true;
    default:
        *known = false;
        return false;
    }
}

/* Runs the program to its end (or until its rows are past the FDE). False
 * when it cannot be run: the rows it emitted must then be dropped. */
static bool run_program(cfa_program *p)
{
    cursor *c = &p->code;
    while (c->ok && c->pos < c->end) {
        if (p->out != NULL && p->loc >= p->out->fde_end)
            return true;             /* the rest describes addresses past the FDE */
        uint8_t op = (uint8_t)cur_uint(c, 1);
        uint8_t operand = op & 0x3f;
        bool ok, known;
        switch (op & 0xc0) {
        case CFA_ADVANCE_LOC: ok = advance_by(p, operand); break;
        case CFA_OFFSET:
            set_reg(p, operand, HOW_OFFSET, factored(p, uleb_as_signed(cur_uleb(c))));
            ok = true;
            break;
        case CFA_RESTORE: restore_reg(p, operand); ok = true; break;
        default:
            ok = run_flow_op(p, op, &known);
            if (!known)
                ok = run_register_op(p, op) || run_cfa_op(p, op);
            break;
        }
        if (!ok)
            return false;
    }
    return c->ok;
}

/* The row in force at an FDE's start: its CIE's initial instructions run. */
static bool initial_row(const eh_section *s, const cie_info *cie, cfa_row *row)
{
    cfa_program p = {
        .code = { s->bytes, cie->insns, cie->insns_end, true },
        .bases = { .cursor_vaddr = s->vaddr },
        .cie = cie,
    };
    if (!run_program(&p))
        return false;
    *row = p.row;
    return true;
}

/* An unknown rule from `covered` on: between FDEs, and after the last (even
 * when that one ends at the top of the address space). Every rule so far
 * starts below `covered`, so this one never replaces another. */
static void emit_gap(builder *b)
{
    b->fde_mark = b->count;
    if (b->count > 0 && same_rule(&b->rules[b->count - 1], &unknown_rule))
        return;
    frame_rule gap = unknown_rule;
    gap.start = b->covered;
    push_rule(b, &gap);
}

/* Appends the FDE's rules; an FDE whose program cannot be run becomes one
 * unknown rule over its range. */
static void compile_fde(const eh_section *s, const fde_info *fde, builder *b)
{
    if (b->started && fde->begin > b->covered)
        emit_gap(b);
    b->fde_mark = b->count;
    b->skipped_mark = b->skipped;
    b->fde_end = fde->end;
    cfa_program p = {
        .code = { s->bytes, fde->insns, fde->insns_end, true },
        .bases = { .cursor_vaddr = s->vaddr },
        .cie = &fde->cie,
        .out = b,
        .loc = fde->begin,
    };
    bool ok = initial_row(s, &fde->cie, &p.row);
    if (ok) {
        p.initial = p.row;
        ok = run_program(&p);
        if (ok)
            emit_row(&p);            /* the last row runs to the FDE's end */
    }
    if (!ok) {
        b->count = b->fde_mark;
        b->skipped = b->skipped_mark + 1;
        emit_rule(b, fde->begin, unknown_rule);
    }
    b->covered = b->started && b->covered > fde->end ? b->covered : fde->end;
    b->started = true;
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
        entry e = read_entry(s, at);
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
            if (read_fde(s, &e, &fde)
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
        entry e = read_entry(s, ref->at);
        fde_info fde;
        if (read_fde(s, &e, &fde))   /* read in pass 1 already: cannot fail */
            compile_fde(s, &fde, b);
    }
    if (b->started)
        emit_gap(b);                 /* marks `high`: frame_table_find stops before it */
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
