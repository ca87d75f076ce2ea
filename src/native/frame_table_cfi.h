/*
 * frame_table_cfi.h (private to src/native/frame_table*.c): bounds-checked
 * little-endian reads and DWARF pointer encodings over the file's bytes, and
 * what frame_table.c (ELF, the two passes) and frame_table_cfi.c (CIEs, FDEs,
 * CFA programs) share: the .eh_frame section, its entries and the rule array
 * being built.
 */
#ifndef HPROF_FRAME_TABLE_CFI_H
#define HPROF_FRAME_TABLE_CFI_H

#include "frame_table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pointer encodings (DW_EH_PE_*, LSB 10.5): the low nibble is the format,
 * bits 4-6 what the value is relative to, bit 7 an indirection. */
enum {
    PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04, PE_SIGNED = 0x08, PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_ALIGNED = 0x50,
    PE_APPLICATION = 0x70, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* ------------------------------------------------------------------ */
/* Bytes                                                               */

static inline uint64_t le_bytes(const uint8_t *p, size_t n)
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
static inline bool in_bounds(size_t size, uint64_t off, uint64_t len)
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

static inline bool cur_need(cursor *c, uint64_t n)
{
    if (!c->ok || n > c->end - c->pos) {
        c->ok = false;
        return false;
    }
    return true;
}

static inline uint64_t cur_uint(cursor *c, size_t n)
{
    if (!cur_need(c, n))
        return 0;
    uint64_t v = le_bytes(c->base + c->pos, n);
    c->pos += n;
    return v;
}

static inline void cur_skip(cursor *c, uint64_t n)
{
    if (cur_need(c, n))
        c->pos += (size_t)n;
}

/* LEB128: bits past the 64th are dropped, but the bytes are consumed (up
 * to the cursor's end, which bounds the loop). *bits: 7 per byte read, 0
 * when the cursor ran out (the value is then 0). */
static inline uint64_t cur_leb(cursor *c, unsigned *bits)
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

static inline uint64_t cur_uleb(cursor *c)
{
    unsigned bits;
    return cur_leb(c, &bits);
}

/* The sign is the last byte's bit 6, bit (bits - 1) of the value. */
static inline int64_t cur_sleb(cursor *c)
{
    unsigned bits;
    uint64_t v = cur_leb(c, &bits);
    if (bits > 0 && bits < 64 && ((v >> (bits - 1)) & 1))
        v |= ~(uint64_t)0 << bits;
    return (int64_t)v;
}

/* A signed value that does not fit int64 becomes INT64_MAX: every consumer
 * then finds it out of int32 range and marks the row unknown. */
static inline int64_t uleb_as_signed(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static inline int64_t scaled(int64_t v, int64_t factor)
{
    int64_t out;
    return __builtin_mul_overflow(v, factor, &out) ? INT64_MAX : out;
}

static inline int64_t negated(int64_t v)
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

static inline bool read_format(cursor *c, uint8_t format, uint64_t *value)
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
static inline bool read_pointer(cursor *c, uint8_t enc, const pointer_bases *bases, uint64_t *value)
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

typedef struct eh_section {
    const uint8_t *bytes;        /* its first byte */
    size_t         size;
    uint64_t       vaddr;        /* the address of bytes[0] when mapped */
    bool           size_known;   /* false when found through .eh_frame_hdr */
} eh_section;

enum entry_kind { ENTRY_CIE, ENTRY_FDE, ENTRY_ZERO, ENTRY_END, ENTRY_BROKEN };

typedef struct entry {
    enum entry_kind kind;
    size_t          id_pos;      /* the CIE id or CIE pointer field */
    size_t          body;        /* just past that field */
    size_t          end;         /* just past the entry */
    uint64_t        id;
} entry;

typedef struct cie_info {
    uint64_t code_align;
    int64_t  data_align;
    uint64_t ra_reg;
    uint8_t  fde_enc;            /* how the FDEs' pc_begin and pc_range are written */
    bool     has_aug_length;     /* 'z': FDEs carry an augmentation data length */
    size_t   insns, insns_end;   /* the initial instructions */
} cie_info;

typedef struct fde_info {
    cie_info cie;
    uint64_t begin, end;
    size_t   insns, insns_end;
} fde_info;

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

/* The first pass (frame_table.c) walks the entries and reads each FDE's
 * range; the second compiles the sorted FDEs' programs into the builder. */
entry frame_table_read_entry(const eh_section *s, size_t at);
bool frame_table_read_fde(const eh_section *s, const entry *e, fde_info *fde);
void frame_table_emit_gap(builder *b);
void frame_table_compile_fde(const eh_section *s, const fde_info *fde, builder *b);

#endif
