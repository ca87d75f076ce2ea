/* Unit tests: src/native/frame_table.c, the x86-64 call-frame rules compiled
 * from .eh_frame. Hand-made sections check each instruction and the table's
 * shape; the unit binary and libc are checked row by row against readelf's
 * own interpretation of the same bytes (readelf --debug-dump=frames-interp,
 * from binutils); damaged copies check that nothing is read out of bounds. */
#include "unit.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "native/frame_table.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static uint8_t *read_whole_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *grown = realloc(buf, cap *= 2);
            if (grown == NULL)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    *size = n;
    return buf;
}

/* The table's invariants, whatever bytes it was built from. */
static bool table_is_sane(const frame_table *t)
{
    if (t->count == 0)
        return t->rules == NULL && t->low == 0 && t->high == 0;
    if (t->rules[0].start != t->low || t->low >= t->high
        || t->rules[t->count - 1].start > t->high
        || t->rules[t->count - 1].cfa_reg != FRAME_CFA_UNKNOWN)
        return false;
    for (size_t i = 0; i < t->count; i++) {
        const frame_rule *r = &t->rules[i];
        if (r->cfa_reg > FRAME_CFA_FP)
            return false;
        if (i > 0 && (r->start <= r[-1].start
                      || (r->cfa_reg == r[-1].cfa_reg && r->cfa_offset == r[-1].cfa_offset
                          && r->fp_offset == r[-1].fp_offset)))
            return false;
        if (i + 1 < t->count && frame_table_find(t, r->start) != r)
            return false;
    }
    return frame_table_find(t, t->low - 1) == NULL && frame_table_find(t, t->high) == NULL;
}

static bool rule_is(const frame_rule *r, int cfa_reg, int32_t cfa_offset, int32_t fp_offset)
{
    if (r == NULL || r->cfa_reg != cfa_reg)
        return false;
    return cfa_reg == FRAME_CFA_UNKNOWN
        || (r->cfa_offset == cfa_offset && r->fp_offset == fp_offset);
}

#define SP FRAME_CFA_SP
#define FP FRAME_CFA_FP
#define SAME FRAME_FP_SAME

/* ------------------------------------------------------------------ */
/* Hand-made .eh_frame sections and the ELF files around them          */

typedef struct eh_writer {
    uint8_t  bytes[8192];
    size_t   n;
    uint64_t vaddr;              /* where the section is mapped (pcrel pointers) */
} eh_writer;

static void put(eh_writer *w, const void *p, size_t n)
{
    if (n > 0 && w->n + n <= sizeof w->bytes) {
        memcpy(w->bytes + w->n, p, n);
        w->n += n;
    }
}

static void put_le(eh_writer *w, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)(v >> (8 * i));
        put(w, &b, 1);
    }
}

static void patch_length(eh_writer *w, size_t at)
{
    uint64_t len = w->n - at - 4;
    for (size_t i = 0; i < 4; i++)
        w->bytes[at + i] = (uint8_t)(len >> (8 * i));
}

/* The initial instructions of every x86-64 CIE: CFA = rsp+8, ra at cfa-8. */
static const uint8_t x86_initial[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

/* A "zR" CIE whose FDEs write their addresses in encoding `fde_enc`. */
static size_t add_cie(eh_writer *w, uint8_t fde_enc, uint8_t ra_reg,
                      const uint8_t *insns, size_t n)
{
    size_t at = w->n;
    put_le(w, 0, 4);
    put_le(w, 0, 4);                                     /* CIE id */
    put(w, "\1zR", 4);                                   /* version 1, "zR\0" */
    put(w, (uint8_t[]){ 0x01, 0x78, ra_reg, 0x01, fde_enc }, 5);  /* caf 1, daf -8, ra, aug */
    put(w, insns, n);
    patch_length(w, at);
    return at;
}

/* An FDE of the CIE at cie_at, with pc_begin as absptr (0x00) or
 * pcrel|sdata4 (0x1b) as that CIE says. */
static void add_fde(eh_writer *w, size_t cie_at, uint8_t enc, uint64_t begin, uint64_t range,
                    const uint8_t *insns, size_t n)
{
    size_t at = w->n;
    put_le(w, 0, 4);
    put_le(w, w->n - cie_at, 4);                         /* back to the CIE */
    if (enc == 0x1b) {
        put_le(w, begin - (w->vaddr + w->n), 4);
        put_le(w, range, 4);
    } else {
        put_le(w, begin, 8);
        put_le(w, range, 8);
    }
    put_le(w, 0, 1);                                     /* no augmentation data */
    put(w, insns, n);
    patch_length(w, at);
}

enum { ROUTE_SECTIONS, ROUTE_PROGRAM_HEADERS };

/* An ELF file around a section: with a section table naming .eh_frame, or
 * with PT_LOAD + PT_GNU_EH_FRAME and .eh_frame_hdr only. In both, the
 * section's bytes are mapped at w->vaddr. Returns the file's size. */
static size_t make_elf(uint8_t *out, size_t cap, const uint8_t *eh, size_t eh_size,
                       uint64_t eh_vaddr, int route, uint16_t machine)
{
    static const char names[] = "\0.eh_frame\0.shstrtab";
    size_t phdrs = sizeof(Elf64_Ehdr), hdr = phdrs + 2 * sizeof(Elf64_Phdr);
    size_t eh_off = route == ROUTE_SECTIONS ? sizeof(Elf64_Ehdr) : hdr + 8;
    size_t names_off = eh_off + eh_size;
    size_t shdrs = (names_off + sizeof names + 7) & ~(size_t)7;
    size_t size = route == ROUTE_SECTIONS ? shdrs + 3 * sizeof(Elf64_Shdr) : eh_off + eh_size;
    if (size > cap)
        return 0;
    memset(out, 0, size);
    Elf64_Ehdr eh_hdr = {
        .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
        .e_type = ET_DYN, .e_machine = machine, .e_version = EV_CURRENT,
        .e_ehsize = sizeof(Elf64_Ehdr),
    };
    memcpy(out + eh_off, eh, eh_size);
    if (route == ROUTE_SECTIONS) {
        eh_hdr.e_shoff = shdrs;
        eh_hdr.e_shentsize = sizeof(Elf64_Shdr);
        eh_hdr.e_shnum = 3;
        eh_hdr.e_shstrndx = 2;
        memcpy(out + names_off, names, sizeof names);
        Elf64_Shdr sh[3] = {
            { 0 },
            { .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = eh_vaddr,
              .sh_offset = eh_off, .sh_size = eh_size, .sh_addralign = 8 },
            { .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = names_off, .sh_size = sizeof names },
        };
        memcpy(out + shdrs, sh, sizeof sh);
    } else {
        uint64_t base = eh_vaddr - eh_off;           /* the file is mapped whole at base */
        eh_hdr.e_phoff = phdrs;
        eh_hdr.e_phentsize = sizeof(Elf64_Phdr);
        eh_hdr.e_phnum = 2;
        Elf64_Phdr ph[2] = {
            { .p_type = PT_LOAD, .p_offset = 0, .p_vaddr = base, .p_filesz = size, .p_memsz = size },
            { .p_type = PT_GNU_EH_FRAME, .p_offset = hdr, .p_vaddr = base + hdr, .p_filesz = 8,
              .p_memsz = 8 },
        };
        memcpy(out + phdrs, ph, sizeof ph);
        /* version 1, eh_frame_ptr pcrel|sdata4, no search table */
        uint8_t h[8] = { 1, 0x1b, 0xff, 0xff };
        uint32_t rel = (uint32_t)(eh_off - (hdr + 4));
        memcpy(h + 4, &rel, 4);
        memcpy(out + hdr, h, sizeof h);
    }
    memcpy(out, &eh_hdr, sizeof eh_hdr);
    return size;
}

/* Builds the table of a hand-made section (through the section table). */
static int build_eh(const eh_writer *w, frame_table *t)
{
    static uint8_t elf[16384];
    char err[200];
    size_t n = make_elf(elf, sizeof elf, w->bytes, w->n, w->vaddr, ROUTE_SECTIONS, EM_X86_64);
    return n == 0 ? -1 : frame_table_build(elf, n, t, err, sizeof err);
}

/* push %rbp; mov %rsp,%rbp; ...; leave at +0x20, then ret. */
static const uint8_t prologue_insns[] = {
    0x41,                        /* advance 1 */
    0x0e, 0x10,                  /* def_cfa_offset 16 */
    0x86, 0x02,                  /* offset rbp at cfa-16 */
    0x43,                        /* advance 3 */
    0x0d, 0x06,                  /* def_cfa_register rbp */
    0x02, 0x1c,                  /* advance_loc1 28 -> +0x20 */
    0x0c, 0x07, 0x08,            /* def_cfa rsp+8 */
    0xc6,                        /* restore rbp */
};

/* ------------------------------------------------------------------ */
/* Hand-made sections                                                  */

TEST(native_frames_synthetic_prologue)
{
    eh_writer w = { .vaddr = 0x400000 };
    size_t abs_cie = add_cie(&w, 0x00, 16, x86_initial, sizeof x86_initial);
    size_t rel_cie = add_cie(&w, 0x1b, 16, x86_initial, sizeof x86_initial);
    add_fde(&w, abs_cie, 0x00, 0x1000, 0x30, prologue_insns, sizeof prologue_insns);
    /* remember_state around an epilogue; an advance by 0 replaces a row;
     * an expression for rbx is nobody's business. */
    static const uint8_t remember[] = {
        0x41, 0x0e, 0x10, 0x86, 0x02,        /* +1: rsp+16, rbp at c-16 */
        0x44, 0x0a,                          /* +5: remember */
        0x0e, 0x08, 0xc6,                    /* rsp+8, rbp restored */
        0x41, 0x0b,                          /* +6: restore_state: rsp+16 again */
        0x10, 0x03, 0x02, 0x77, 0x00,        /* expression rbx: ignored */
        0x40, 0x0e, 0x18,                    /* advance 0, then rsp+24 at +6 */
        0x2e, 0x08,                          /* GNU_args_size */
    };
    add_fde(&w, rel_cie, 0x1b, 0x1030, 0x10, remember, sizeof remember);
    frame_table t;
    CHECK(build_eh(&w, &t) == 0);
    CHECK(table_is_sane(&t));
    CHECK(t.fdes == 2 && t.skipped == 0);
    CHECK(t.low == 0x1000 && t.high == 0x1040);
    CHECK(rule_is(frame_table_find(&t, 0x1000), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1001), SP, 16, -16));
    CHECK(rule_is(frame_table_find(&t, 0x1003), SP, 16, -16));
    CHECK(rule_is(frame_table_find(&t, 0x1004), FP, 16, -16));
    CHECK(rule_is(frame_table_find(&t, 0x101f), FP, 16, -16));
    CHECK(rule_is(frame_table_find(&t, 0x1020), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x102f), SP, 8, SAME));
    /* the next FDE starts where the first ends: no unknown rule between */
    CHECK(rule_is(frame_table_find(&t, 0x1030), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1031), SP, 16, -16));
    CHECK(rule_is(frame_table_find(&t, 0x1035), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1036), SP, 24, -16));
    CHECK(rule_is(frame_table_find(&t, 0x103f), SP, 24, -16));
    CHECK(frame_table_find(&t, 0x0fff) == NULL);
    CHECK(frame_table_find(&t, 0x1040) == NULL);
    CHECK(frame_table_find(NULL, 0x1000) == NULL);
    /* 0x1020 and 0x1030 hold the same rule: merged */
    CHECK(t.count == 8);
    frame_table_free(&t);
    CHECK(t.rules == NULL && t.count == 0);
    frame_table_free(&t);
}

TEST(native_frames_synthetic_unknown_rows)
{
    eh_writer w = { .vaddr = 0x10000 };
    size_t cie = add_cie(&w, 0x00, 16, x86_initial, sizeof x86_initial);
    static const uint8_t cfa_expression[] = {          /* a PLT entry */
        0x46, 0x0f, 0x05, 0x77, 0x08, 0x80, 0x00, 0x1a,  /* +6: def_cfa_expression */
        0x44, 0x0c, 0x07, 0x10,                          /* +10: def_cfa rsp+16 */
    };
    add_fde(&w, cie, 0x00, 0x1000, 0x20, cfa_expression, sizeof cfa_expression);
    static const uint8_t rbp_expression[] = {
        0x41, 0x10, 0x06, 0x02, 0x76, 0x00,              /* +1: rbp by expression */
        0x41, 0x08, 0x06,                                /* +2: rbp same value */
        0x41, 0x0c, 0x03, 0x08,                          /* +3: CFA = rbx+8 */
        0x41, 0x12, 0x06, 0x7e,                          /* +4: def_cfa_sf rbp, -2*-8 = 16 */
        0x41, 0x09, 0x06, 0x03,                          /* +5: rbp in rbx */
    };
    add_fde(&w, cie, 0x00, 0x2000, 0x10, rbp_expression, sizeof rbp_expression);
    uint8_t deep[40];
    for (size_t i = 0; i < 17; i++) {                  /* remember_state 17 deep */
        deep[2 * i] = 0x41;
        deep[2 * i + 1] = 0x0a;
    }
    add_fde(&w, cie, 0x00, 0x3000, 0x40, deep, 34);
    add_fde(&w, cie, 0x00, 0x4000, 0x10, (const uint8_t[]){ 0x41, 0x3f }, 2);   /* bad opcode */
    add_fde(&w, cie, 0x00, 0x5000, 0x10, (const uint8_t[]){ 0x41, 0x0b }, 2);   /* restore nothing */
    add_fde(&w, cie, 0x00, 0x6000, 0x10, (const uint8_t[]){ 0x41, 0x0e }, 2);   /* cut operand */
    size_t other_ra = add_cie(&w, 0x00, 15, x86_initial, sizeof x86_initial);
    add_fde(&w, other_ra, 0x00, 0x7000, 0x10, NULL, 0);
    static const uint8_t outermost[] = { 0x07, 0x10 };  /* _start: ra undefined */
    add_fde(&w, cie, 0x00, 0x8000, 0x10, outermost, sizeof outermost);

    frame_table t;
    CHECK(build_eh(&w, &t) == 0);
    CHECK(table_is_sane(&t));
    CHECK(t.fdes == 8);
    CHECK(rule_is(frame_table_find(&t, 0x1005), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1006), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x1009), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x100a), SP, 16, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x101f), SP, 16, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1020), FRAME_CFA_UNKNOWN, 0, 0));   /* a gap */
    CHECK(rule_is(frame_table_find(&t, 0x1fff), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x2000), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x2001), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x2002), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x2003), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x2004), FP, 16, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x2005), FRAME_CFA_UNKNOWN, 0, 0));
    for (uint64_t at = 0x3000; at < 0x9000; at += 0x1000) {   /* whole FDEs unknown */
        CHECK(rule_is(frame_table_find(&t, at), FRAME_CFA_UNKNOWN, 0, 0));
        CHECK(rule_is(frame_table_find(&t, at + 1), FRAME_CFA_UNKNOWN, 0, 0));
    }
    CHECK(t.skipped >= 9);
    frame_table_free(&t);
}

TEST(native_frames_synthetic_fde_order)
{
    eh_writer w = { .vaddr = 0x10000 };
    size_t cie = add_cie(&w, 0x00, 16, x86_initial, sizeof x86_initial);
    static const uint8_t steps[] = { 0x41, 0x0e, 0x10, 0x50, 0x0e, 0x18 };  /* +1: 16, +17: 24 */
    /* out of order, overlapping, inside another, empty, and a 64-bit length */
    add_fde(&w, cie, 0x00, 0x3020, 0x40, steps, sizeof steps);     /* [0x3020, 0x3060) */
    add_fde(&w, cie, 0x00, 0x3000, 0x40, steps, sizeof steps);     /* [0x3000, 0x3040) */
    add_fde(&w, cie, 0x00, 0x3008, 0x08, NULL, 0);                 /* inside: no effect */
    add_fde(&w, cie, 0x00, 0x5000, 0x00, steps, sizeof steps);     /* empty: no effect */
    size_t at = w.n;                                               /* 64-bit length */
    put_le(&w, 0xffffffff, 4);
    put_le(&w, 8 + 8 + 8 + 1 + 1, 8);
    put_le(&w, w.n - cie, 8);
    put_le(&w, 0x1000, 8);
    put_le(&w, 0x10, 8);
    put(&w, "\0\x41", 2);
    CHECK(at + 12 + 26 == w.n);
    put_le(&w, 0, 4);                                              /* a zero terminator */

    frame_table t;
    CHECK(build_eh(&w, &t) == 0);
    CHECK(table_is_sane(&t));
    CHECK(t.fdes == 5);
    CHECK(t.low == 0x1000 && t.high == 0x3060);
    CHECK(rule_is(frame_table_find(&t, 0x1000), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x1010), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x2fff), FRAME_CFA_UNKNOWN, 0, 0));
    CHECK(rule_is(frame_table_find(&t, 0x3000), SP, 8, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x3008), SP, 16, SAME));   /* the earlier FDE wins */
    CHECK(rule_is(frame_table_find(&t, 0x3011), SP, 24, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x3021), SP, 24, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x303f), SP, 24, SAME));
    CHECK(rule_is(frame_table_find(&t, 0x3040), SP, 24, SAME));   /* the later FDE's rest */
    CHECK(rule_is(frame_table_find(&t, 0x305f), SP, 24, SAME));
    CHECK(frame_table_find(&t, 0x3060) == NULL);

    /* The same rules, whichever order the FDEs come in. */
    eh_writer v = { .vaddr = 0x10000 };
    cie = add_cie(&v, 0x00, 16, x86_initial, sizeof x86_initial);
    add_fde(&v, cie, 0x00, 0x3000, 0x40, steps, sizeof steps);
    add_fde(&v, cie, 0x00, 0x3020, 0x40, steps, sizeof steps);
    frame_table u;
    CHECK(build_eh(&v, &u) == 0);
    CHECK(table_is_sane(&u));
    for (uint64_t pc = 0x3000; pc < 0x3060; pc++) {
        const frame_rule *a = frame_table_find(&u, pc);
        CHECK(a != NULL && rule_is(frame_table_find(&t, pc), a->cfa_reg, a->cfa_offset, a->fp_offset));
    }
    frame_table_free(&u);
    frame_table_free(&t);
}

TEST(native_frames_program_headers_route)
{
    /* No section table: .eh_frame found through PT_GNU_EH_FRAME, and ended
     * by its zero terminator; pcrel addresses from the mapped address. */
    eh_writer w = { .vaddr = 0x200000 + 64 + 2 * sizeof(Elf64_Phdr) + 8 };
    size_t cie = add_cie(&w, 0x1b, 16, x86_initial, sizeof x86_initial);
    add_fde(&w, cie, 0x1b, 0x201000, 0x30, prologue_insns, sizeof prologue_insns);
    put_le(&w, 0, 4);
    put(&w, "garbage after the terminator", 28);
    static uint8_t elf[16384];
    size_t n = make_elf(elf, sizeof elf, w.bytes, w.n, w.vaddr, ROUTE_PROGRAM_HEADERS, EM_X86_64);
    frame_table t;
    char err[200];
    CHECK(frame_table_build(elf, n, &t, err, sizeof err) == 0);
    CHECK(table_is_sane(&t));
    CHECK(t.fdes == 1 && t.low == 0x201000 && t.high == 0x201030);
    CHECK(rule_is(frame_table_find(&t, 0x201004), FP, 16, -16));
    frame_table_free(&t);

    eh_writer plain = w;             /* through a section table, the terminator does not end it */
    plain.n -= 28;
    frame_table s;
    CHECK(build_eh(&plain, &s) == 0 && s.fdes == 1 && s.high == 0x201030);
    CHECK(rule_is(frame_table_find(&s, 0x201004), FP, 16, -16));
    frame_table_free(&s);
}

TEST(native_frames_rejects_other_objects)
{
    eh_writer w = { .vaddr = 0x10000 };
    size_t cie = add_cie(&w, 0x00, 16, x86_initial, sizeof x86_initial);
    add_fde(&w, cie, 0x00, 0x1000, 0x30, prologue_insns, sizeof prologue_insns);
    static uint8_t elf[16384];
    size_t n = make_elf(elf, sizeof elf, w.bytes, w.n, w.vaddr, ROUTE_SECTIONS, EM_AARCH64);
    frame_table t;
    char err[200] = "";
    CHECK(frame_table_build(elf, n, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "x86-64") != NULL);
    CHECK(t.count == 0 && t.rules == NULL);
    frame_table_free(&t);
    CHECK(frame_table_build((const uint8_t *)"#!/bin/sh\n", 10, &t, err, sizeof err) == -1);
    CHECK(err[0] != '\0');
    CHECK(frame_table_build(elf, 10, &t, NULL, 0) == -1);

    /* An object without .eh_frame has no rules, and that is no error. */
    n = make_elf(elf, sizeof elf, w.bytes, w.n, w.vaddr, ROUTE_SECTIONS, EM_X86_64);
    memcpy(elf + sizeof(Elf64_Ehdr) + w.n + 1, ".eh_framX", 9);   /* rename it */
    CHECK(frame_table_build(elf, n, &t, err, sizeof err) == 0);
    CHECK(t.count == 0 && frame_table_find(&t, 0x1000) == NULL);

    /* Entries that do not chain up to the section's end: the file is broken. */
    eh_writer bad = w;
    bad.bytes[cie + 0] = 0xf0;                      /* the CIE's length past the end */
    CHECK(build_eh(&bad, &t) == -1);
}

/* ------------------------------------------------------------------ */
/* readelf, the oracle                                                 */

/* One row of readelf --debug-dump=frames-interp, as the rule we expect. */
typedef struct oracle_row {
    uint64_t   loc;
    frame_rule want;
} oracle_row;

typedef struct oracle_fde {
    uint64_t begin, end, cie;
    int      ra_reg;             /* its CIE's return address column */
    size_t   first, count;       /* its rows in oracle.rows; none: the CIE's row */
} oracle_fde;

typedef struct oracle_cie {
    uint64_t   offset;
    int        ra_reg;
    bool       has_row;
    frame_rule row;
} oracle_cie;

typedef struct oracle {
    oracle_row *rows;
    size_t      nrows, rows_cap;
    oracle_fde *fdes;
    size_t      nfdes, fdes_cap;
    oracle_cie  cies[64];
    size_t      ncies;
    size_t      rbp_col, ra_col;  /* columns after CFA; SIZE_MAX: none */
    bool        in_cie;
} oracle;

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, c * size);
    if (q == NULL)
        return false;
    *p = q;
    *cap = c;
    return true;
}

/* readelf's column text as our rule: CFA "rsp+8", "rbp+16" (anything else,
 * like "exp" or "rbx+8", is unknown); rbp "c-16", or "u"/"s"/no column for
 * "not saved"; ra must be "c-8" (readelf shows "u" where it is undefined:
 * the outermost frame, unknown to us). */
static frame_rule expected_rule(const char *cfa, const char *rbp, const char *ra, int ra_reg)
{
    frame_rule unknown = { .cfa_reg = FRAME_CFA_UNKNOWN, .fp_offset = SAME };
    frame_rule r = { .fp_offset = SAME };
    int off, end = 0;
    if (ra_reg != 16 || ra == NULL || strcmp(ra, "c-8") != 0)
        return unknown;
    if (sscanf(cfa, "rsp%d%n", &off, &end) == 1 && cfa[end] == '\0')
        r.cfa_reg = FRAME_CFA_SP;
    else if (sscanf(cfa, "rbp%d%n", &off, &end) == 1 && cfa[end] == '\0')
        r.cfa_reg = FRAME_CFA_FP;
    else
        return unknown;
    r.cfa_offset = off;
    if (rbp != NULL && strcmp(rbp, "u") != 0 && strcmp(rbp, "s") != 0) {
        end = 0;
        if (sscanf(rbp, "c%d%n", &off, &end) != 1 || rbp[end] != '\0')
            return unknown;
        r.fp_offset = off;
    }
    return r;
}

static void oracle_header(oracle *o, char **tok, size_t ntok)
{
    unsigned long long a, b, c;
    if (strcmp(tok[3], "CIE") == 0 && o->ncies < 64) {
        oracle_cie cie = { .offset = strtoull(tok[0], NULL, 16), .ra_reg = -1 };
        for (size_t i = 4; i < ntok; i++)
            if (strncmp(tok[i], "ra=", 3) == 0)
                cie.ra_reg = atoi(tok[i] + 3);
        o->cies[o->ncies++] = cie;
        o->in_cie = true;
    } else if (strcmp(tok[3], "FDE") == 0 && ntok >= 6
               && sscanf(tok[4], "cie=%llx", &a) == 1 && sscanf(tok[5], "pc=%llx..%llx", &b, &c) == 2
               && grow((void **)&o->fdes, &o->fdes_cap, o->nfdes, sizeof *o->fdes)) {
        oracle_fde fde = { .begin = b, .end = c, .cie = a, .ra_reg = -1, .first = o->nrows };
        for (size_t i = 0; i < o->ncies; i++)       /* a CIE comes before its FDEs */
            if (o->cies[i].offset == a)
                fde.ra_reg = o->cies[i].ra_reg;
        o->fdes[o->nfdes++] = fde;
        o->in_cie = false;
    }
    o->rbp_col = o->ra_col = SIZE_MAX;
}

static void oracle_row_line(oracle *o, char **tok, size_t ntok)
{
    const char *rbp = o->rbp_col < ntok - 2 ? tok[o->rbp_col + 2] : NULL;
    const char *ra = o->ra_col < ntok - 2 ? tok[o->ra_col + 2] : NULL;
    if (o->in_cie) {
        oracle_cie *c = &o->cies[o->ncies - 1];
        c->has_row = true;
        c->row = expected_rule(tok[1], rbp, ra, c->ra_reg);
    } else if (o->nfdes > 0 && grow((void **)&o->rows, &o->rows_cap, o->nrows, sizeof *o->rows)) {
        frame_rule want = expected_rule(tok[1], rbp, ra, o->fdes[o->nfdes - 1].ra_reg);
        o->rows[o->nrows++] = (oracle_row){ .loc = strtoull(tok[0], NULL, 16), .want = want };
        o->fdes[o->nfdes - 1].count++;
    }
}

static void oracle_line(oracle *o, char *line)
{
    char *tok[64];
    size_t ntok = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\n", &save); t && ntok < 64;
         t = strtok_r(NULL, " \t\n", &save))
        if (t[0] != '(')             /* "r10 (r10)": a register's name, said twice */
            tok[ntok++] = t;
    if (ntok >= 4 && (strcmp(tok[3], "CIE") == 0 || strcmp(tok[3], "FDE") == 0)) {
        oracle_header(o, tok, ntok);
    } else if (ntok >= 2 && strcmp(tok[0], "LOC") == 0) {
        for (size_t i = 2; i < ntok; i++) {
            if (strcmp(tok[i], "rbp") == 0)
                o->rbp_col = i - 2;
            if (strcmp(tok[i], "ra") == 0)
                o->ra_col = i - 2;
        }
    } else if (ntok >= 2 && strlen(tok[0]) == 16 && strspn(tok[0], "0123456789abcdef") == 16) {
        oracle_row_line(o, tok, ntok);
    }
}

static bool readelf_present(void)
{
    FILE *p = popen("readelf --version 2>/dev/null", "r");
    if (p == NULL)
        return false;
    char line[256];
    bool found = fgets(line, sizeof line, p) != NULL && strstr(line, "readelf") != NULL;
    while (fgets(line, sizeof line, p) != NULL)
        ;
    return pclose(p) == 0 && found;
}

/* readelf's rows for `path` (a real path, not /proc/self/exe: that would be
 * readelf itself). False if readelf could not be run. Its exit status is not
 * looked at: it is 1 for a stripped libc whose .gnu_debuglink file is not
 * installed, with the .eh_frame rows printed all the same. */
static bool run_readelf(const char *path, oracle *o)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool seen = false;
    while (getline(&line, &cap, p) > 0) {
        seen |= strstr(line, "Contents of the .eh_frame section") != NULL;
        oracle_line(o, line);
    }
    free(line);
    pclose(p);
    return seen && o->ncies > 0;
}

/* Address ranges covered by two FDEs: the table picks one; not compared. */
typedef struct span { uint64_t begin, end; } span;

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static size_t overlaps(const oracle *o, span **out)
{
    span *all = calloc(o->nfdes + 1, sizeof *all), *shared = calloc(o->nfdes + 1, sizeof *shared);
    size_t n = 0, nshared = 0;
    for (size_t i = 0; all && i < o->nfdes; i++)
        if (o->fdes[i].end > o->fdes[i].begin)
            all[n++] = (span){ o->fdes[i].begin, o->fdes[i].end };
    if (all != NULL)
        qsort(all, n, sizeof *all, span_order);
    uint64_t reach = 0;
    for (size_t i = 0; shared && i < n; i++) {
        if (i > 0 && all[i].begin < reach)
            shared[nshared++] = (span){ all[i].begin, all[i].end < reach ? all[i].end : reach };
        if (all[i].end > reach)
            reach = all[i].end;
    }
    free(all);
    *out = shared;
    return nshared;
}

static bool in_spans(const span *s, size_t n, uint64_t pc)
{
    for (size_t i = 0; i < n; i++)
        if (pc >= s[i].begin && pc < s[i].end)
            return true;
    return false;
}

typedef struct comparison {
    size_t checked;              /* rows compared */
    size_t known;                /* of which readelf's CFA is rsp/rbp + N */
    size_t mismatches;
    char   first_mismatch[200];
} comparison;

static void compare_at(const frame_table *t, uint64_t pc, const frame_rule *want, comparison *cmp)
{
    const frame_rule *got = frame_table_find(t, pc);
    cmp->checked++;
    if (want->cfa_reg != FRAME_CFA_UNKNOWN)
        cmp->known++;
    if (got != NULL && rule_is(got, want->cfa_reg, want->cfa_offset, want->fp_offset))
        return;
    if (cmp->mismatches++ == 0)
        snprintf(cmp->first_mismatch, sizeof cmp->first_mismatch,
                 "at %#llx: readelf %d%+d fp %d, table %d%+d fp %d", (unsigned long long)pc,
                 want->cfa_reg, want->cfa_offset, want->fp_offset, got ? got->cfa_reg : -1,
                 got ? got->cfa_offset : 0, got ? got->fp_offset : 0);
}

/* Every row of every FDE, at its first and its last address. */
static void compare_fde(const oracle *o, const oracle_fde *f, const span *shared, size_t nshared,
                        const frame_table *t, comparison *cmp)
{
    oracle_row cie_row = { .loc = f->begin, .want = { .cfa_reg = FRAME_CFA_UNKNOWN } };
    const oracle_row *rows = o->rows + f->first;
    size_t n = f->count;
    if (n == 0) {                    /* no instructions: the CIE's row throughout */
        for (size_t i = 0; i < o->ncies; i++)
            if (o->cies[i].offset == f->cie && o->cies[i].has_row) {
                cie_row.want = o->cies[i].row;
                cie_row.want.start = 0;
                n = 1;
            }
        rows = &cie_row;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t from = rows[i].loc;
        uint64_t to = i + 1 < n && rows[i + 1].loc < f->end ? rows[i + 1].loc : f->end;
        if (from < f->begin || from >= to)
            continue;                /* past the FDE, or replaced by the next row */
        if (!in_spans(shared, nshared, from))
            compare_at(t, from, &rows[i].want, cmp);
        if (!in_spans(shared, nshared, to - 1))
            compare_at(t, to - 1, &rows[i].want, cmp);
    }
}

/* Builds the table of `path` and compares it with readelf's rows. */
static bool compare_with_readelf(const char *path, comparison *cmp, frame_table *t)
{
    oracle o = { .rbp_col = SIZE_MAX, .ra_col = SIZE_MAX };
    size_t size = 0;
    uint8_t *bytes = read_whole_file(path, &size);
    char err[200] = "";
    bool ok = bytes != NULL && frame_table_build(bytes, size, t, err, sizeof err) == 0
           && run_readelf(path, &o);
    free(bytes);
    span *shared = NULL;
    size_t nshared = ok ? overlaps(&o, &shared) : 0;
    for (size_t i = 0; ok && i < o.nfdes; i++)
        compare_fde(&o, &o.fdes[i], shared, nshared, t, cmp);
    if (ok && t->fdes != o.nfdes) {
        snprintf(cmp->first_mismatch, sizeof cmp->first_mismatch, "%zu FDEs, readelf %zu",
                 t->fdes, o.nfdes);
        ok = false;
    }
    free(shared);
    free(o.rows);
    free(o.fdes);
    return ok;
}

static bool require_readelf(void)
{
    if (readelf_present())
        return true;
    fprintf(stderr, "    native_frames: readelf not found; install binutils "
                    "(apt-get install binutils): it is the oracle these tests compare with\n");
    CHECK(!"readelf (binutils) is required: install binutils");
    return false;
}

static void check_against_readelf(const char *path, size_t min_rows)
{
    comparison cmp = { 0 };
    frame_table t = { 0 };
    bool ok = compare_with_readelf(path, &cmp, &t);
    if (!ok || cmp.mismatches != 0 || cmp.known < min_rows)
        fprintf(stderr, "    %s: %zu rows compared (%zu rsp/rbp-based), %zu differ; %s\n", path,
                cmp.checked, cmp.known, cmp.mismatches, cmp.first_mismatch);
    CHECK(ok);
    CHECK(cmp.mismatches == 0);
    CHECK(cmp.known >= min_rows);
    CHECK(table_is_sane(&t));
    frame_table_free(&t);
}

static char *self_path(void)
{
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    return path;
}

TEST(native_frames_match_readelf_self)
{
    if (require_readelf())
        check_against_readelf(self_path(), 500);
}

/* The object's path and load bias for an address in it (or its name). */
typedef struct object_query {
    uintptr_t   addr;            /* find the object holding this, */
    const char *name_part;       /* or the one whose name contains this */
    char        path[PATH_MAX];
    uintptr_t   bias;
    bool        found;
} object_query;

static int match_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    object_query *q = arg;
    bool match = false;
    if (q->name_part != NULL) {
        match = info->dlpi_name != NULL && strstr(info->dlpi_name, q->name_part) != NULL;
    } else {
        for (size_t i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz)
                match = true;
        }
    }
    if (!match)
        return 0;
    q->bias = info->dlpi_addr;
    snprintf(q->path, sizeof q->path, "%s", info->dlpi_name && info->dlpi_name[0]
                                            ? info->dlpi_name : self_path());
    q->found = true;
    return 1;
}

TEST(native_frames_match_readelf_libc)
{
    object_query q = { .name_part = "/libc.so" };
    dl_iterate_phdr(match_object, &q);
    CHECK(q.found);
    if (q.found && require_readelf())
        check_against_readelf(q.path, 5000);
}

/* A function whose first instruction the table must know: CFA = rsp+8,
 * %rbp not saved yet. */
__attribute__((noinline)) static int native_frames_probe(volatile int *v)
{
    int sum = 0;
    for (int i = 0; i < *v; i++)
        sum += v[i % 2] * i;
    return sum;
}

TEST(native_frames_probe_function_entry)
{
    volatile int v[2] = { 3, 4 };
    CHECK(native_frames_probe(v) == 10);
    int (*volatile fn)(volatile int *) = native_frames_probe;
    object_query q = { .addr = (uintptr_t)fn };
    dl_iterate_phdr(match_object, &q);
    CHECK(q.found);
    size_t size = 0;
    uint8_t *bytes = read_whole_file("/proc/self/exe", &size);
    CHECK(bytes != NULL);
    frame_table t;
    char err[200] = "";
    CHECK(bytes != NULL && frame_table_build(bytes, size, &t, err, sizeof err) == 0);
    uint64_t vaddr = (uint64_t)((uintptr_t)fn - q.bias);
    CHECK(t.fdes > 10 && t.low <= vaddr && vaddr < t.high);
    CHECK(rule_is(frame_table_find(&t, vaddr), SP, 8, SAME));
    frame_table_free(&t);
    free(bytes);
}

/* ------------------------------------------------------------------ */
/* Damaged files                                                       */

/* Builds a copy of exactly `n` bytes (so ASan sees any read past them). */
static void build_copy(const uint8_t *bytes, size_t n, size_t *built)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (copy == NULL)
        return;
    memcpy(copy, bytes, n);
    frame_table t;
    char err[200];
    if (frame_table_build(copy, n, &t, err, sizeof err) == 0) {
        CHECK(table_is_sane(&t));
        ++*built;
    } else {
        CHECK(t.count == 0 && t.rules == NULL && err[0] != '\0');
    }
    frame_table_free(&t);
    free(copy);
}

/* A copy of the unit binary's own .eh_frame and its address: wrapped in a
 * small ELF file, damage falls inside the CFI instead of only in headers. */
static uint8_t *self_eh_frame(size_t *size, uint64_t *vaddr)
{
    size_t file_size = 0;
    uint8_t *bytes = read_whole_file("/proc/self/exe", &file_size), *eh = NULL;
    if (bytes == NULL)
        return NULL;
    Elf64_Ehdr ehdr;
    Elf64_Shdr names_sh;
    memcpy(&ehdr, bytes, sizeof ehdr);
    memcpy(&names_sh, bytes + ehdr.e_shoff + ehdr.e_shstrndx * sizeof(Elf64_Shdr), sizeof names_sh);
    const char *names = (const char *)bytes + names_sh.sh_offset;
    for (size_t i = 0; i < ehdr.e_shnum && eh == NULL; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, bytes + ehdr.e_shoff + i * sizeof sh, sizeof sh);
        if (strcmp(names + sh.sh_name, ".eh_frame") == 0 && (eh = malloc(sh.sh_size)) != NULL) {
            memcpy(eh, bytes + sh.sh_offset, sh.sh_size);
            *size = sh.sh_size;
            *vaddr = sh.sh_addr;
        }
    }
    free(bytes);
    return eh;
}

TEST(native_frames_survive_truncation)
{
    size_t size = 0, built = 0;
    uint8_t *whole = read_whole_file("/proc/self/exe", &size);
    CHECK(whole != NULL && size > 4096);
    for (size_t i = 0; whole && i <= 32; i++)          /* the file cut anywhere */
        build_copy(whole, i * (size / 32), &built);
    for (size_t n = 0; whole && n < 200; n++)
        build_copy(whole, n, &built);
    free(whole);

    size_t eh_size = 0;
    uint64_t vaddr = 0;
    uint8_t *eh = self_eh_frame(&eh_size, &vaddr);
    CHECK(eh != NULL && eh_size > 1000);
    size_t cap = eh_size + 4096;
    uint8_t *elf = malloc(cap);
    size_t step = eh_size / 500 + 1;
    for (size_t cut = 0; eh && elf && cut <= eh_size; cut += cut < 300 ? 1 : step) {
        /* .eh_frame cut short, the section table saying so */
        size_t n = make_elf(elf, cap, eh, cut, vaddr, ROUTE_SECTIONS, EM_X86_64);
        build_copy(elf, n, &built);
        /* the file cut short, its PT_LOAD saying otherwise */
        n = make_elf(elf, cap, eh, eh_size, vaddr, ROUTE_PROGRAM_HEADERS, EM_X86_64);
        build_copy(elf, n - (eh_size - cut), &built);
    }
    free(elf);
    free(eh);
    CHECK(built > 500);
}

TEST(native_frames_survive_flipped_bytes)
{
    uint64_t seed = 0x9e3779b97f4a7c15u;
    size_t built = 0, eh_size = 0;
    uint64_t vaddr = 0;
    uint8_t *eh = self_eh_frame(&eh_size, &vaddr);
    CHECK(eh != NULL);
    size_t cap = eh_size + 4096;
    uint8_t *elf = malloc(cap), *copy = malloc(cap);
    for (int route = ROUTE_SECTIONS; eh && elf && copy && route <= ROUTE_PROGRAM_HEADERS; route++) {
        size_t n = make_elf(elf, cap, eh, eh_size, vaddr, route, EM_X86_64);
        for (int round = 0; round < 400; round++) {
            memcpy(copy, elf, n);
            for (int k = 0; k < 1 + round % 4; k++) {       /* 1 to 4 bytes each round */
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                size_t at = (size_t)(seed >> 33) % n;
                if (round % 3 == 0)
                    at = (size_t)(seed >> 33) % (n < 1024 ? n : 1024);   /* the headers, CIEs */
                copy[at] ^= (uint8_t)(1u << ((seed >> 20) & 7));
                if (round % 5 == 0)
                    copy[at] = (uint8_t)(seed >> 40);        /* or any value */
            }
            build_copy(copy, n, &built);
        }
    }
    free(copy);
    free(elf);
    free(eh);
    /* and the whole binary, damaged in its ELF header */
    size_t size = 0;
    uint8_t *whole = read_whole_file("/proc/self/exe", &size);
    for (int round = 0; whole && round < 20; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        whole[(size_t)(seed >> 33) % sizeof(Elf64_Ehdr)] ^= (uint8_t)(seed >> 48);
        build_copy(whole, size, &built);
    }
    free(whole);
    CHECK(built > 200);
}
