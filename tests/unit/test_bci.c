/*
 * Unit tests of the class-file rewriter (src/bci) on hand-made class files:
 * exact layout after insertion, branch and exception-table relocation,
 * stack-map frames moved and added, far branches widened, the 64 KiB limit,
 * switch padding, and malformed input (every truncation, every bit flip)
 * rejected without a crash (this file also runs under ASan/UBSan).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bci/bci.h"
#include "bci/classfile.h"
#include "bci/opcodes.h"
#include "unit.h"

typedef struct { uint8_t *b; size_t n, cap; } bytes;

static void put(bytes *o, const void *p, size_t n) {
    if (o->n + n > o->cap) { o->cap = (o->n + n) * 2; o->b = realloc(o->b, o->cap); }
    memcpy(o->b + o->n, p, n); o->n += n;
}
static void p1(bytes *o, unsigned v) { uint8_t c = (uint8_t)v; put(o, &c, 1); }
static void p2(bytes *o, unsigned v) { p1(o, v >> 8); p1(o, v); }
static void p4(bytes *o, uint32_t v) { p2(o, v >> 16); p2(o, v & 0xffff); }
static void utf8(bytes *o, const char *s) { p1(o, 1); p2(o, (unsigned)strlen(s)); put(o, s, strlen(s)); }

/* class T { public static int f(int) { <code> } } with constant pool:
 * 1 "T" 2 Class 3 "java/lang/Object" 4 Class 5 "f" 6 "(I)I" 7 "Code"
 * 8 "StackMapTable" 9 "LineNumberTable" */
static bytes make_class(unsigned major, const uint8_t *code, uint32_t code_len, const uint8_t *smt,
                        uint32_t smt_len, const uint16_t *exc, unsigned n_exc) {
    bytes o = { 0 };
    p4(&o, 0xCAFEBABE); p2(&o, 0); p2(&o, major);
    p2(&o, 10);
    utf8(&o, "T"); p1(&o, 7); p2(&o, 1); utf8(&o, "java/lang/Object"); p1(&o, 7); p2(&o, 3);
    utf8(&o, "f"); utf8(&o, "(I)I"); utf8(&o, "Code"); utf8(&o, "StackMapTable"); utf8(&o, "LineNumberTable");
    p2(&o, 0x21); p2(&o, 2); p2(&o, 4); p2(&o, 0); p2(&o, 0);
    p2(&o, 1);
    p2(&o, 0x9); p2(&o, 5); p2(&o, 6); p2(&o, 1);
    bytes c = { 0 };
    p2(&c, 2); p2(&c, 1); p4(&c, code_len); put(&c, code, code_len);
    p2(&c, n_exc);
    for (unsigned i = 0; i < 4 * n_exc; i++) p2(&c, exc[i]);
    p2(&c, (smt ? 1 : 0) + 1);
    if (smt) { p2(&c, 8); p4(&c, smt_len); put(&c, smt, smt_len); }
    p2(&c, 9); p4(&c, 6); p2(&c, 1); p2(&c, 0); p2(&c, 42);     /* line 42 at pc 0 */
    p2(&o, 7); p4(&o, (uint32_t)c.n); put(&o, c.b, c.n);
    free(c.b);
    p2(&o, 0);
    return o;
}

static int32_t id_seven(void *ctx, const bci_method_info *m) { (void)ctx; (void)m; return 7; }

static const bci_config ENTRY_EXIT = { BCI_ENTRY_EXIT | BCI_NEWARRAY, "Trk", id_seven, NULL, NULL };

/* The rewritten method's Code attribute pieces. */
typedef struct {
    classfile cf;
    const uint8_t *code; uint32_t code_len; uint16_t max_stack;
    const uint8_t *exc; uint16_t n_exc;
    const uint8_t *smt; uint32_t smt_len;
    const uint8_t *lnt;
} parsed;

static int parse_out(parsed *p, const uint8_t *b, size_t n) {
    char err[200];
    memset(p, 0, sizeof *p);
    if (classfile_parse(&p->cf, b, n, err, sizeof err) != 0) { classfile_free(&p->cf); return -1; }
    const uint8_t *a = p->cf.methods[0].code_attr + 6;
    p->max_stack = be_get_u2(a);
    p->code_len = be_get_u4(a + 4);
    p->code = a + 8;
    a = p->code + p->code_len;
    p->n_exc = be_get_u2(a);
    p->exc = a + 2;
    a = p->exc + 8u * p->n_exc;
    uint16_t na = be_get_u2(a); a += 2;
    for (uint16_t i = 0; i < na; i++) {
        uint16_t nl; const char *name = cp_utf8(&p->cf.cp, be_get_u2(a), &nl);
        uint32_t len = be_get_u4(a + 2);
        if (nl == 13 && memcmp(name, "StackMapTable", 13) == 0) { p->smt = a + 6; p->smt_len = len; }
        if (nl == 15 && memcmp(name, "LineNumberTable", 15) == 0) p->lnt = a + 6;
        a += 6 + len;
    }
    return 0;
}

/* 0 iload_0; 1 ifeq ->6; 4 iconst_1; 5 ireturn; 6 iconst_2; 7 ireturn */
static const uint8_t SMALL[] = { 0x1a, 0x99, 0x00, 0x05, 0x04, 0xac, 0x05, 0xac };

TEST(bci_layout_old_version)
{
    bytes in = make_class(49, SMALL, sizeof SMALL, NULL, 0, NULL, 0);
    uint8_t *out; size_t n; char err[256];
    CHECK(bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_OK);
    parsed p;
    CHECK(parse_out(&p, out, n) == 0);
    /* prologue: bipush 7; invokestatic (5 bytes) */
    CHECK(p.code[0] == 0x10 && p.code[1] == 7 && p.code[2] == 0xb8);
    CHECK(p.code[5] == 0x1a);                                    /* iload_0 */
    CHECK(p.code[6] == 0x99 && (int16_t)be_get_u2(p.code + 7) == 10); /* ifeq -> iconst_2 at 16 */
    CHECK(p.code[9] == 0x04);                                    /* iconst_1 */
    CHECK(p.code[10] == 0x10 && p.code[12] == 0xb8 && p.code[15] == 0xac);   /* exit; ireturn */
    CHECK(p.code[16] == 0x05);
    CHECK(p.code[22] == 0xac);
    CHECK(p.code_len == 29 && p.code[28] == 0xbf);               /* handler ends in athrow */
    CHECK(p.n_exc == 1 && be_get_u2(p.exc) == 5 && be_get_u2(p.exc + 2) == 23 && be_get_u2(p.exc + 4) == 23 &&
          be_get_u2(p.exc + 6) == 0);
    CHECK(p.max_stack == 3);
    CHECK(p.smt == NULL);                                        /* version 49: no stack maps */
    CHECK(p.lnt && be_get_u2(p.lnt) == 1 && be_get_u2(p.lnt + 2) == 0 && be_get_u2(p.lnt + 4) == 42);
    /* the methodref points at Trk.methodEntry(I)V */
    const char *name, *desc; uint16_t nl, dl;
    CHECK(cp_member(&p.cf.cp, be_get_u2(p.code + 3), &name, &nl, &desc, &dl) == 0 &&
          nl == 11 && memcmp(name, "methodEntry", 11) == 0 && dl == 4 && memcmp(desc, "(I)V", 4) == 0);
    classfile_free(&p.cf);
    bci_free(out);
    free(in.b);
}

TEST(bci_frames_moved_and_added)
{
    static const uint8_t smt[] = { 0x00, 0x01, 0x06 };          /* one same_frame at 6 */
    bytes in = make_class(52, SMALL, sizeof SMALL, smt, sizeof smt, NULL, 0);
    uint8_t *out; size_t n; char err[256];
    CHECK(bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_OK);
    parsed p;
    CHECK(parse_out(&p, out, n) == 0);
    CHECK(p.smt != NULL);
    if (p.smt) {
        const uint8_t *f = p.smt;
        CHECK(be_get_u2(f) == 2);
        /* full_frame at 16: locals [int], empty stack */
        CHECK(f[2] == 255 && be_get_u2(f + 3) == 16 && be_get_u2(f + 5) == 1 && f[7] == 1 && be_get_u2(f + 8) == 0);
        /* full_frame at 23 (delta 6): no locals, stack [java/lang/Throwable] */
        CHECK(f[10] == 255 && be_get_u2(f + 11) == 6 && be_get_u2(f + 13) == 0 && be_get_u2(f + 15) == 1 && f[17] == 7);
        uint16_t l;
        const char *cls = cp_class_name(&p.cf.cp, be_get_u2(f + 18), &l);
        CHECK(cls && l == 19 && memcmp(cls, "java/lang/Throwable", 19) == 0);
    }
    classfile_free(&p.cf);
    bci_free(out);
    free(in.b);
}

/* iload_0; ifeq T; iconst_1; newarray int; pop; nop...; T: iconst_0; ireturn,
 * with T exactly 32767 bytes after the ifeq: the 4 bytes inserted after the
 * newarray push it out of range. */
static bytes far_branch_class(unsigned major, uint32_t *t_out) {
    uint32_t t = 1 + 32767, len = t + 2;
    uint8_t *code = calloc(len, 1);                              /* nop = 0 */
    code[0] = 0x1a; code[1] = 0x99; code[2] = 0x7f; code[3] = 0xff;
    code[4] = 0x04; code[5] = 0xbc; code[6] = 10; code[7] = 0x57;
    code[t] = 0x03; code[t + 1] = 0xac;
    uint8_t smt[5] = { 0x00, 0x01, 251, (uint8_t)(t >> 8), (uint8_t)t };   /* same_frame_extended at T */
    bytes b = make_class(major, code, len, major >= 50 ? smt : NULL, 5, NULL, 0);
    free(code);
    *t_out = t;
    return b;
}

TEST(bci_far_branch_widened)
{
    for (unsigned major = 49; major <= 52; major += 3) {
        uint32_t t;
        bytes in = far_branch_class(major, &t);
        uint8_t *out; size_t n; char err[256];
        CHECK(bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_OK);
        parsed p;
        CHECK(parse_out(&p, out, n) == 0);
        /* prologue 5, iload_0 at 5, then ifne +8; goto_w T' */
        CHECK(p.code[6] == 0x9a && be_get_u2(p.code + 7) == 8 && p.code[9] == 0xc8);
        int32_t far = (int32_t)be_get_u4(p.code + 10);
        uint32_t target = 9 + (uint32_t)far;
        CHECK(target < p.code_len && p.code[target] == 0x03);    /* lands on iconst_0 */
        CHECK(p.code[14] == 0x04);                               /* fall-through: iconst_1 */
        CHECK(p.code[15] == 0xbc && p.code[17] == 0x59 && p.code[18] == 0xb8);   /* newarray; dup; call */
        if (major >= 50) {
            /* frames at 14 (new: after the inverted branch), T', handler */
            CHECK(p.smt && be_get_u2(p.smt) == 3 && p.smt[2] == 255 && be_get_u2(p.smt + 3) == 14);
        }
        /* The output is itself well-formed input: a second pass decodes every
         * instruction, branch target and frame again. */
        uint8_t *again; size_t n2;
        CHECK(bci_rewrite(out, n, &ENTRY_EXIT, &again, &n2, err, sizeof err) == BCI_OK);
        if (again) bci_free(again);
        classfile_free(&p.cf);
        bci_free(out);
        free(in.b);
    }
}

/* The layout callback: where each original instruction went. */
typedef struct { bci_moved_insn insns[16]; uint32_t n, code_len, calls; char method[32]; } told_layout;
static void record_layout(void *ctx, const bci_method_info *m, const bci_moved_insn *insns, uint32_t n,
                          uint32_t code_len) {
    told_layout *t = ctx;
    t->calls++;
    t->n = n;
    t->code_len = code_len;
    snprintf(t->method, sizeof t->method, "%s.%s%s", m->class_name, m->name, m->descriptor);
    for (uint32_t i = 0; i < n && i < 16; i++) t->insns[i] = insns[i];
}

TEST(bci_layout_told)
{
    told_layout t;
    memset(&t, 0, sizeof t);
    bci_config c = ENTRY_EXIT;
    c.context = &t;
    c.layout = record_layout;
    /* the layout of bci_layout_old_version: entry call at 0..4, exit calls before the ireturns */
    bytes in = make_class(49, SMALL, sizeof SMALL, NULL, 0, NULL, 0);
    uint8_t *out; size_t n; char err[256];
    CHECK(bci_rewrite(in.b, in.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    static const uint32_t want[6][3] = { { 0, 5, 1 }, { 1, 6, 3 }, { 4, 9, 1 }, { 5, 15, 1 }, { 6, 16, 1 },
                                         { 7, 22, 1 } };
    CHECK(t.calls == 1 && t.n == 6 && t.code_len == 29 && strcmp(t.method, "T.f(I)I") == 0);
    for (unsigned i = 0; i < 6 && t.n == 6; i++)
        CHECK(t.insns[i].old_off == want[i][0] && t.insns[i].new_off == want[i][1] &&
              t.insns[i].new_len == want[i][2]);
    bci_free(out);
    free(in.b);
    /* a conditional widened around a goto_w: 8 bytes where it was 3 */
    uint32_t target;
    memset(&t, 0, sizeof t);
    in = far_branch_class(52, &target);
    CHECK(bci_rewrite(in.b, in.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(t.calls == 1 && t.insns[1].old_off == 1 && t.insns[1].new_off == 6 && t.insns[1].new_len == 8 &&
          t.insns[2].old_off == 4 && t.insns[2].new_off == 14);
    bci_free(out);
    free(in.b);
}

TEST(bci_too_large_after_insertion)
{
    uint32_t len = 65533;
    uint8_t *code = calloc(len, 1);
    code[len - 2] = 0x03; code[len - 1] = 0xac;
    bytes in = make_class(49, code, len, NULL, 0, NULL, 0);
    uint8_t *out; size_t n; char err[256];
    CHECK(bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_ERROR);
    CHECK(strstr(err, "too large") != NULL && strstr(err, "T.f(I)I") != NULL);
    free(code);
    free(in.b);
}

TEST(bci_switch_padding)
{
    /* k nops; iload_0; tableswitch default->A, 0..1 -> B, C; A: iconst_0; ireturn ... */
    for (unsigned k = 0; k < 4; k++) {
        bytes c = { 0 };
        for (unsigned i = 0; i < k; i++) p1(&c, 0);
        p1(&c, 0x1a);
        uint32_t sw = (uint32_t)c.n;
        p1(&c, 0xaa);
        while (c.n % 4) p1(&c, 0);
        uint32_t a = (uint32_t)c.n + 20;                         /* after default, low, high, 2 offsets */
        p4(&c, a - sw); p4(&c, 0); p4(&c, 1); p4(&c, a + 2 - sw); p4(&c, a + 4 - sw);
        p1(&c, 0x03); p1(&c, 0xac); p1(&c, 0x04); p1(&c, 0xac); p1(&c, 0x05); p1(&c, 0xac);
        bytes in = make_class(49, c.b, (uint32_t)c.n, NULL, 0, NULL, 0);
        uint8_t *out; size_t n; char err[256];
        CHECK(bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_OK);
        parsed p;
        CHECK(parse_out(&p, out, n) == 0);
        uint32_t nsw = 5 + k + 1;
        CHECK(p.code[nsw] == 0xaa);
        uint32_t q = (nsw + 4) & ~3u;
        for (uint32_t i = nsw + 1; i < q; i++) CHECK(p.code[i] == 0);
        /* default -> exit call before `iconst_0; ireturn`? No: before iconst_0 nothing is
         * inserted, so it lands on iconst_0 itself; case 1 on iconst_2 */
        CHECK(p.code[nsw + (int32_t)be_get_u4(p.code + q)] == 0x03);
        CHECK(p.code[nsw + (int32_t)be_get_u4(p.code + q + 12)] == 0x04);
        CHECK(p.code[nsw + (int32_t)be_get_u4(p.code + q + 16)] == 0x05);
        classfile_free(&p.cf);
        bci_free(out);
        free(in.b);
        free(c.b);
    }
}

TEST(bci_malformed_input)
{
    static const uint8_t smt[] = { 0x00, 0x01, 0x06 };
    bytes in = make_class(52, SMALL, sizeof SMALL, smt, sizeof smt, NULL, 0);
    char err[256];
    uint8_t *out; size_t n;
    for (size_t len = 0; len < in.n; len++) {                     /* every truncation */
        bci_result r = bci_rewrite(in.b, len, &ENTRY_EXIT, &out, &n, err, sizeof err);
        CHECK(r == BCI_ERROR && out == NULL && err[0] != 0);
    }
    unsigned ok = 0, rejected = 0;
    for (size_t i = 0; i < in.n; i++)                            /* every bit flip */
        for (int bit = 0; bit < 8; bit++) {
            in.b[i] ^= (uint8_t)(1u << bit);
            bci_result r = bci_rewrite(in.b, in.n, &ENTRY_EXIT, &out, &n, err, sizeof err);
            if (r == BCI_OK) { ok++; bci_free(out); } else rejected++;
            in.b[i] ^= (uint8_t)(1u << bit);
        }
    CHECK(rejected > 0 && ok > 0);
    /* a branch into the middle of an instruction */
    static const uint8_t bad_target[] = { 0x1a, 0x99, 0x00, 0x02, 0x04, 0xac, 0x05, 0xac };
    bytes b2 = make_class(49, bad_target, sizeof bad_target, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(b2.b, b2.n, &ENTRY_EXIT, &out, &n, err, sizeof err) == BCI_ERROR);
    CHECK(strstr(err, "not an instruction") != NULL);
    free(b2.b);
    free(in.b);
}

TEST(bci_leaf_methods_only_counted)
{
    /* SMALL has no call and no loop: with BCI_COUNT_LEAVES it gets
     * methodCount at entry and nothing else. */
    static const bci_config leaves = { BCI_ENTRY_EXIT | BCI_COUNT_LEAVES, "Trk", id_seven, NULL, NULL };
    bytes in = make_class(52, SMALL, sizeof SMALL, NULL, 0, NULL, 0);
    uint8_t *out; size_t n; char err[256];
    CHECK(bci_rewrite(in.b, in.n, &leaves, &out, &n, err, sizeof err) == BCI_OK);
    parsed p;
    CHECK(parse_out(&p, out, n) == 0);
    CHECK(p.code_len == sizeof SMALL + 5 && p.n_exc == 0 && p.smt == NULL);
    CHECK(memcmp(p.code + 5, SMALL, sizeof SMALL) == 0);
    const char *name, *desc; uint16_t nl, dl;
    CHECK(cp_member(&p.cf.cp, be_get_u2(p.code + 3), &name, &nl, &desc, &dl) == 0 &&
          nl == 11 && memcmp(name, "methodCount", 11) == 0);
    classfile_free(&p.cf);
    bci_free(out);
    free(in.b);
    /* a backward branch (a loop) makes it a timed method again */
    static const uint8_t loop[] = { 0x1a, 0x9a, 0xff, 0xff, 0x03, 0xac };   /* iload_0; ifne 0 */
    bytes in2 = make_class(49, loop, sizeof loop, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in2.b, in2.n, &leaves, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(parse_out(&p, out, n) == 0);
    CHECK(p.n_exc == 1);                                         /* the exceptional-exit handler */
    CHECK(cp_member(&p.cf.cp, be_get_u2(p.code + 3), &name, &nl, &desc, &dl) == 0 &&
          nl == 11 && memcmp(name, "methodEntry", 11) == 0);
    /* the backward branch still lands on iload_0, after the entry call */
    CHECK(p.code[6] == 0x9a && (int16_t)be_get_u2(p.code + 7) == -1);
    classfile_free(&p.cf);
    bci_free(out);
    free(in2.b);
}

static unsigned seen_flags;
static int32_t record_flags(void *ctx, const bci_method_info *m) { (void)ctx; seen_flags = m->flags; return 9; }

TEST(bci_method_flags_leaf_and_short)
{
    bci_config c = { BCI_ENTRY_EXIT | BCI_COUNT_LEAVES, "Trk", record_flags, NULL, NULL };
    uint8_t *out; size_t n; char err[256];
    bytes in = make_class(49, SMALL, sizeof SMALL, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in.b, in.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == (BCI_METHOD_LEAF | BCI_METHOD_SHORT));
    bci_free(out);
    free(in.b);
    /* iload_0; invokestatic #10 (T.f, resolved or not, it is a call); ireturn */
    static const uint8_t call[] = { 0x1a, 0xb8, 0x00, 0x0a, 0xac };
    bytes in2 = make_class(49, call, sizeof call, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in2.b, in2.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == BCI_METHOD_SHORT);
    if (out) bci_free(out);
    free(in2.b);
    /* a loop: neither */
    static const uint8_t loop[] = { 0x1a, 0x9a, 0xff, 0xff, 0x03, 0xac };
    bytes in3 = make_class(49, loop, sizeof loop, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in3.b, in3.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == 0);
    if (out) bci_free(out);
    free(in3.b);
    /* iload_0 at 0; tableswitch at 1 (padding to 4, then default, low 0, high 1, two
     * targets, relative to 1), ending at 24; 4 nops; iconst_0; ireturn at 28; iconst_1;
     * ireturn at 30. Cases 0 and default to 28, 1 to 30: forward only, a leaf */
    uint8_t sw[] = { 0x1a, 0xaa, 0, 0, 0, 0, 0, 27, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 27, 0, 0, 0, 29,
                     0x00, 0x00, 0x00, 0x00, 0x03, 0xac, 0x04, 0xac };
    bytes in4 = make_class(49, sw, sizeof sw, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in4.b, in4.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == (BCI_METHOD_LEAF | BCI_METHOD_SHORT));
    if (out) bci_free(out);
    free(in4.b);
    /* the same switch with its target for 1 back at iload_0 (-1): a loop, neither */
    sw[20] = sw[21] = sw[22] = sw[23] = 0xff;
    bytes in5 = make_class(49, sw, sizeof sw, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in5.b, in5.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == 0);
    if (out) bci_free(out);
    free(in5.b);
    /* longer than BCI_LEAF_MAX_CODE, no call, no loop: short (it learns), not a leaf */
    uint8_t longer[BCI_LEAF_MAX_CODE + 40];
    memset(longer, 0x00, sizeof longer);                     /* nops */
    longer[sizeof longer - 2] = 0x1a; longer[sizeof longer - 1] = 0xac;    /* iload_0; ireturn */
    bytes in6 = make_class(49, longer, sizeof longer, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in6.b, in6.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == BCI_METHOD_SHORT);
    if (out) bci_free(out);
    free(in6.b);
    /* the same with a loop at its end (goto itself): neither */
    longer[sizeof longer - 3] = 0xa7; longer[sizeof longer - 2] = 0x00; longer[sizeof longer - 1] = 0x00;
    bytes in7 = make_class(49, longer, sizeof longer, NULL, 0, NULL, 0);
    CHECK(bci_rewrite(in7.b, in7.n, &c, &out, &n, err, sizeof err) == BCI_OK);
    CHECK(seen_flags == 0);
    if (out) bci_free(out);
    free(in7.b);
}

/* class T { <access> <name><desc> { <code> } }, no attribute but Code:
 * 1 "T" 2 Class 3 "java/lang/Object" 4 Class 5 name 6 desc 7 "Code" */
static bytes make_method(const char *name, const char *desc, unsigned access, const uint8_t *code,
                         uint32_t code_len) {
    bytes o = { 0 };
    p4(&o, 0xCAFEBABE); p2(&o, 0); p2(&o, 52);
    p2(&o, 8);
    utf8(&o, "T"); p1(&o, 7); p2(&o, 1); utf8(&o, "java/lang/Object"); p1(&o, 7); p2(&o, 3);
    utf8(&o, name); utf8(&o, desc); utf8(&o, "Code");
    p2(&o, 0x21); p2(&o, 2); p2(&o, 4); p2(&o, 0); p2(&o, 0);
    p2(&o, 1);
    p2(&o, access); p2(&o, 5); p2(&o, 6); p2(&o, 1);
    p2(&o, 7); p4(&o, 12 + code_len);
    p2(&o, 2); p2(&o, 2); p4(&o, code_len); put(&o, code, code_len); p2(&o, 0); p2(&o, 0);
    p2(&o, 0);
    return o;
}

static int ids_asked;
static int32_t count_asks(void *ctx, const bci_method_info *m) { (void)ctx; (void)m; ids_asked++; return 3; }

/* An instance finalize()V that only returns is left as it is (a call in it
 * would make the JVM register every instance for finalization); any other
 * finalize is instrumented like any method. */
TEST(bci_empty_finalizer_left_alone)
{
    static const bci_config c = { BCI_ENTRY_EXIT | BCI_COUNT_LEAVES, "Trk", count_asks, NULL, NULL };
    static const uint8_t ret[] = { 0xb1 };                      /* return */
    static const uint8_t work[] = { 0x2a, 0x57, 0xb1 };         /* aload_0; pop; return */
    struct { const char *name, *desc; unsigned access; const uint8_t *code; uint32_t len; int kept; } cases[] = {
        { "finalize", "()V", 0x0004, ret, sizeof ret, 1 },      /* protected: empty */
        { "finalize", "()V", 0x0014, ret, sizeof ret, 1 },      /* protected final (Jython's PyObject) */
        { "finalize", "()V", 0x0004, work, sizeof work, 0 },    /* does something */
        { "finalize", "()V", 0x0009, ret, sizeof ret, 0 },      /* static: not a finalizer */
        { "finalize", "(I)V", 0x0004, ret, sizeof ret, 0 },     /* another signature */
        { "finalizx", "()V", 0x0004, ret, sizeof ret, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bytes in = make_method(cases[i].name, cases[i].desc, cases[i].access, cases[i].code, cases[i].len);
        uint8_t *out = NULL; size_t n; char err[256];
        ids_asked = 0;
        bci_result r = bci_rewrite(in.b, in.n, &c, &out, &n, err, sizeof err);
        if (cases[i].kept) {
            CHECK(r == BCI_UNCHANGED && out == NULL && ids_asked == 0);
        } else {
            CHECK(r == BCI_OK && ids_asked == 1);
            parsed p;
            CHECK(parse_out(&p, out, n) == 0);
            /* a leaf: iconst_3; invokestatic methodCount; then the code as it was */
            CHECK(p.code_len == cases[i].len + 4 && p.code[0] == 0x06 && p.code[1] == 0xb8);
            CHECK(memcmp(p.code + 4, cases[i].code, cases[i].len) == 0);
            classfile_free(&p.cf);
        }
        if (out) bci_free(out);
        free(in.b);
    }
}

/* The return instructions of a void method, found past a tableswitch, a
 * lookupswitch and a wide iinc; truncated code does not decode. */
TEST(bytecode_void_returns_walks_instructions)
{
    static const uint8_t code[] = {
        0x03,                                   /* 0 iconst_0 */
        0xaa, 0, 0,                             /* 1 tableswitch, padding to 4 */
        0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 1,    /* 4 default, low 0, high 1 */
        0, 0, 0, 20, 0, 0, 0, 20,               /* 16 two offsets */
        0xb1,                                   /* 24 return */
        0x03,                                   /* 25 iconst_0 */
        0xab, 0,                                /* 26 lookupswitch, padding to 28 */
        0, 0, 0, 10, 0, 0, 0, 1,                /* 28 default, 1 pair */
        0, 0, 0, 5, 0, 0, 0, 10,                /* 36 the pair */
        0xc4, 0x84, 0, 1, 0, 1,                 /* 44 wide iinc 1, 1 */
        0xb1,                                   /* 50 return */
        0xbf,                                   /* 51 athrow */
    };
    uint32_t at[4];
    CHECK(bytecode_void_returns(code, sizeof code, at, 4) == 2);
    CHECK(at[0] == 24 && at[1] == 50);
    CHECK(bytecode_void_returns(code, sizeof code, at, 1) == 1 && at[0] == 24);
    CHECK(bytecode_void_returns(code, 20, at, 4) == -1);        /* cut inside the switch */
    static const uint8_t bad[] = { 0xb1, 0xff };
    CHECK(bytecode_void_returns(bad, sizeof bad, at, 4) == -1);
}

/* Where a thread blocked entering a monitor is: javac's `synchronized`
 * statement (getstatic, dup, astore_2, monitorenter) as HotSpot's
 * interpreter gives it (the instruction after the monitorenter) or as
 * compiled code may (the monitorenter); a 0xc2 operand byte is no
 * monitorenter. */
TEST(bytecode_monitorenter_at_finds_the_enter)
{
    static const uint8_t code[] = {
        0xb2, 0, 13,                            /* 0 getstatic */
        0x59,                                   /* 3 dup */
        0x4d,                                   /* 4 astore_2 */
        0xc2,                                   /* 5 monitorenter */
        0x10, 0xc2,                             /* 6 bipush -62 */
        0x57,                                   /* 8 pop */
        0x2c,                                   /* 9 aload_2 */
        0xc3,                                   /* 10 monitorexit */
        0xb1,                                   /* 11 return */
    };
    CHECK(bytecode_monitorenter_at(code, sizeof code, 6) == 5);    /* the interpreter's location */
    CHECK(bytecode_monitorenter_at(code, sizeof code, 5) == 5);    /* at the enter itself */
    CHECK(bytecode_monitorenter_at(code, sizeof code, 8) == -1);   /* after bipush's 0xc2 operand */
    CHECK(bytecode_monitorenter_at(code, sizeof code, 0) == -1);
    CHECK(bytecode_monitorenter_at(code, sizeof code, 11) == -1);
    CHECK(bytecode_monitorenter_at(code, sizeof code, 40) == -1);  /* beyond the code */
    CHECK(bytecode_monitorenter_at(code, 7, 6) == 5);
    static const uint8_t bad[] = { 0xff, 0xc2, 0x00 };
    CHECK(bytecode_monitorenter_at(bad, sizeof bad, 2) == -1);
}
