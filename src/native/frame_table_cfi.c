/*
 * frame_table_cfi.c: the call-frame information of .eh_frame: CIEs and their
 * augmentations, FDEs, and the CFA programs run into rows of frame rules
 * (appended to the builder, equal neighbours merged). frame_table.c finds
 * the section and orders the FDEs.
 */
#include "frame_table_cfi.h"

#include <stdlib.h>
#include <string.h>

/* DWARF register numbers of the x86-64 psABI. */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA  16

/* remember_state nests this deep at most; compilers use one or two levels. */
#define REMEMBER_DEPTH 16

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
/* CIEs and FDEs                                                       */

/* The entry at `at`. A 64-bit length (0xffffffff, then 8 bytes) makes the id
 * field 8 bytes too, as in DWARF's 64-bit format (and as readelf reads it). */
entry frame_table_read_entry(const eh_section *s, size_t at)
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
    entry e = frame_table_read_entry(s, at);
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

/* An FDE's CIE, address range and instructions; false if any is unreadable
 * (or the range is empty or wraps). */
bool frame_table_read_fde(const eh_section *s, const entry *e, fde_info *fde)
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
void frame_table_emit_gap(builder *b)
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
void frame_table_compile_fde(const eh_section *s, const fde_info *fde, builder *b)
{
    if (b->started && fde->begin > b->covered)
        frame_table_emit_gap(b);
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

