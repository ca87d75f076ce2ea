/*
 * rewrite: bci_rewrite(), the method-body rewriter. See bci.h for what is
 * inserted where.
 *
 * One method at a time:
 *   1. decode the instructions, checking every length, target and table;
 *   2. lay the new code out: each instruction gets the bytes inserted before
 *      it (methodExit before a return) and after it (newArray after an array
 *      allocation); branches that no longer fit in 16 bits are widened, and
 *      the layout is redone until nothing more needs widening;
 *   3. if the class has stack maps, run the verifier's own linear type pass
 *      to get the frames the new branch targets need (the instruction after
 *      a widened conditional) and, in a constructor, where `this` is still
 *      uninitialized (the exception handler we add must not cover that code:
 *      the verifier would refuse the handler's frame);
 *   4. emit the code and every table, offsets mapped to the new layout.
 * A branch to an instruction lands on the code inserted before it, so a
 * jump to a return still passes through methodExit; a jump to offset 0 lands
 * after the entry call, which runs once.
 */
#include "bci.h"

#include <stdarg.h>
#include <stdio.h>

#include "buf.h"
#include "classfile.h"
#include "frames.h"
#include "opcodes.h"

typedef struct insn {
    uint32_t off, len;       /* original */
    uint8_t  op;             /* OP_WIDE for wide forms */
    uint8_t  wide;           /* branch widened */
    uint8_t  covered;        /* 0, or which exceptional-exit handler covers it (1, 2) */
    int32_t  target;         /* insn index of the branch target, -1 if none */
    uint32_t pre, post;      /* bytes inserted before / after */
    uint32_t start;          /* new offset of the inserted code before it */
    uint32_t new_off, new_len;
} insn;

typedef struct method_rewrite {
    classfile     *cf;
    const bci_config *config;
    const char    *name, *desc;
    uint16_t       name_len, desc_len, access;
    int32_t        id;               /* >= 0: entry/exit calls */
    int            object_init;      /* objectInit call in the prologue */
    int            leaf;             /* methodCount only (BCI_COUNT_LEAVES) */
    int            with_frames;      /* stack maps are written */

    uint16_t       max_stack, max_locals;
    const uint8_t *code;
    uint32_t       code_len;
    const uint8_t *exc;              /* exception table entries (8 bytes each) */
    uint16_t       n_exc;
    const uint8_t *attrs;            /* the Code attribute's attributes */
    const uint8_t *attrs_end;

    insn          *insns;
    uint32_t       n_insns;
    int32_t       *insn_at;          /* original offset -> index of the insn containing it */
    uint32_t       prologue_len, orig_end, handler_len, total_len;
    int            pre_super;        /* a second handler, for a constructor's code before super() */
    uint16_t       ref_entry, ref_exit, ref_count, ref_newarray, ref_object_init, int_id;
    char          *err;
    size_t         err_len;
} method_rewrite;

__attribute__((format(printf, 2, 3)))
static int merr(const method_rewrite *m, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(m->err, m->err_len, "%.*s.%.*s%.*s: %s", (int)m->cf->this_name_len, m->cf->this_name,
             (int)m->name_len, m->name, (int)m->desc_len, m->desc, msg);
    return -1;
}

static int32_t s4(const uint8_t *p) { return (int32_t)be_get_u4(p); }

/* ------------------------------------------------------------ 1. decode */

static int is_branch(uint8_t op) {
    return op_is_cond_branch(op) || op == OP_GOTO || op == OP_JSR || op == OP_GOTO_W || op == OP_JSR_W;
}

static int decode(method_rewrite *m) {
    const uint8_t *code = m->code;
    uint32_t n = m->code_len;
    m->insns = calloc(n, sizeof *m->insns);
    m->insn_at = malloc((n + 1) * sizeof *m->insn_at);
    if (!m->insns || !m->insn_at) return merr(m, "out of memory");
    uint32_t off = 0, k = 0;
    while (off < n) {
        uint8_t op = code[off];
        int len = opcode_length(op);
        if (len < 0) return merr(m, "invalid opcode %u at %u", op, off);
        if (op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH) {
            uint32_t p = (off + 4) & ~3u;                   /* after the padding */
            if (p + (op == OP_TABLESWITCH ? 12u : 8u) > n) return merr(m, "truncated switch at %u", off);
            if (op == OP_TABLESWITCH) {
                int32_t lo = s4(code + p + 4), hi = s4(code + p + 8);
                if (hi < lo) return merr(m, "tableswitch at %u: high < low", off);
                uint64_t count = (uint64_t)((int64_t)hi - lo) + 1;
                if (count > n) return merr(m, "tableswitch at %u too large", off);
                len = (int)(p + 12 + 4 * count - off);
            } else {
                int32_t npairs = s4(code + p + 4);
                if (npairs < 0 || (uint64_t)npairs > n) return merr(m, "lookupswitch at %u: bad npairs", off);
                len = (int)(p + 8 + 8 * (uint64_t)npairs - off);
            }
        } else if (op == OP_WIDE) {
            if (off + 1 >= n) return merr(m, "truncated wide at %u", off);
            uint8_t w = code[off + 1];
            if (w == 132) len = 6;
            else if ((w >= 21 && w <= 25) || (w >= 54 && w <= 58) || w == OP_RET) len = 4;
            else return merr(m, "wide of opcode %u at %u", w, off);
        }
        if ((uint32_t)len > n - off) return merr(m, "instruction at %u runs past the end of the code", off);
        insn *in = &m->insns[k];
        in->off = off; in->len = (uint32_t)len; in->op = op; in->target = -1;
        for (int i = 0; i < len; i++) m->insn_at[off + i] = (int32_t)k;
        off += (uint32_t)len; k++;
    }
    m->n_insns = k;
    m->insn_at[n] = (int32_t)k;                              /* "the end" */
    /* Branch targets must be instruction starts. */
    for (uint32_t i = 0; i < k; i++) {
        insn *in = &m->insns[i];
        if (!is_branch(in->op)) continue;
        int64_t t = (int64_t)in->off + (in->op == OP_GOTO_W || in->op == OP_JSR_W
                                        ? s4(code + in->off + 1) : (int16_t)be_get_u2(code + in->off + 1));
        if (t < 0 || t >= n || m->insns[m->insn_at[t]].off != (uint32_t)t)
            return merr(m, "branch at %u to %lld is not an instruction", in->off, (long long)t);
        in->target = m->insn_at[t];
    }
    for (uint32_t i = 0; i < k; i++) {
        insn *in = &m->insns[i];
        if (in->op != OP_TABLESWITCH && in->op != OP_LOOKUPSWITCH) continue;
        uint32_t p = (in->off + 4) & ~3u, count;
        const uint8_t *targets;
        if (in->op == OP_TABLESWITCH) { count = (uint32_t)(s4(code + p + 8) - s4(code + p + 4)) + 1; targets = code + p + 12; }
        else { count = (uint32_t)s4(code + p + 4); targets = code + p + 12; }
        for (uint32_t j = 0; j <= count; j++) {
            /* j == count: the default; lookupswitch pairs are (match, offset) */
            int32_t rel = j == count ? s4(code + p)
                        : in->op == OP_TABLESWITCH ? s4(targets + 4 * j) : s4(targets + 8 * j);
            int64_t t = (int64_t)in->off + rel;
            if (t < 0 || t >= n || m->insns[m->insn_at[t]].off != (uint32_t)t)
                return merr(m, "switch at %u: target %lld is not an instruction", in->off, (long long)t);
        }
    }
    return 0;
}

/* Whether every target of a switch (its default too) is after it: such a
 * switch is a forward jump like an `if`, it cannot make a loop. (Targets were
 * checked to be instructions when the code was decoded.) */
static int switch_is_forward(const method_rewrite *m, const insn *in) {
    const uint8_t *code = m->code;
    uint32_t p = (in->off + 4) & ~3u, count;
    if (s4(code + p) <= 0) return 0;                                 /* the default */
    if (in->op == OP_TABLESWITCH) count = (uint32_t)(s4(code + p + 8) - s4(code + p + 4)) + 1;
    else count = (uint32_t)s4(code + p + 4);
    for (uint32_t j = 0; j < count; j++) {
        int32_t rel = in->op == OP_TABLESWITCH ? s4(code + p + 12 + 4 * j) : s4(code + p + 12 + 8 * j);
        if (rel <= 0) return 0;
    }
    return 1;
}

/* A leaf: no call (so nothing it runs is timed apart from it), no backward
 * branch or switch target (so it runs at most its own length of
 * instructions), no jsr and no monitorenter (which can block), and short.
 * With calls_ok, the same but calls allowed and any length (BCI_METHOD_SHORT:
 * the tracker measures such a method before it stops timing it, and without
 * a loop its time is its callees' plus at most its length of instructions;
 * with the 128-byte limit, CharacterData.of, 136 bytes in JDK 17.0.21, stayed
 * timed, and so did all its callers). Forward
 * switches are allowed: refused, one (java.lang.CharacterData.of, a switch on
 * the code point's plane) kept every caller timed too, since a call with a
 * timed callee never becomes counted-only: on Lucene's indexer,
 * Character.toLowerCase and CharacterData.of were timed 30 million times each
 * (bench/realapps). */
static int is_leaf(const method_rewrite *m, int calls_ok) {
    if (!calls_ok && m->code_len > BCI_LEAF_MAX_CODE) return 0;
    for (uint32_t i = 0; i < m->n_insns; i++) {
        const insn *in = &m->insns[i];
        uint8_t op = in->op;
        if ((!calls_ok && op >= 182 && op <= 186) || op == OP_JSR || op == OP_JSR_W || op == OP_RET || op == 194 ||
            op == OP_WIDE)
            return 0;
        if ((op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH) && !switch_is_forward(m, in)) return 0;
        if (in->target >= 0 && m->insns[in->target].off <= in->off) return 0;
    }
    return 1;
}

/* Offsets that must be instruction starts (or the end, for `end`). */
static int at_boundary(const method_rewrite *m, uint32_t off, int end_ok) {
    if (off == m->code_len) return end_ok;
    return off < m->code_len && m->insns[m->insn_at[off]].off == off;
}

/* ------------------------------------------------------------ 2. layout */

static uint32_t push_int_len(int32_t v) {
    if (v >= -1 && v <= 5) return 1;
    if (v >= -128 && v <= 127) return 2;
    return 3;                                            /* sipush or ldc_w */
}

static uint32_t insn_size(const insn *in, uint32_t at) {
    if (in->op == OP_TABLESWITCH || in->op == OP_LOOKUPSWITCH) {
        uint32_t old_pad = (4 - (in->off + 1) % 4) % 4, new_pad = (4 - (at + 1) % 4) % 4;
        return in->len - old_pad + new_pad;
    }
    if (in->wide) return op_is_cond_branch(in->op) ? 8 : 5;
    return in->len;
}

static int layout(method_rewrite *m) {
    for (int round = 0; ; round++) {
        uint32_t pos = m->prologue_len;
        for (uint32_t i = 0; i < m->n_insns; i++) {
            insn *in = &m->insns[i];
            in->start = pos;
            pos += in->pre;
            in->new_off = pos;
            in->new_len = insn_size(in, pos);
            pos += in->new_len + in->post;
            if (pos > 0x7fffffffu) return merr(m, "code too large");
        }
        m->orig_end = pos;
        m->total_len = pos + m->handler_len;
        int changed = 0;
        for (uint32_t i = 0; i < m->n_insns; i++) {
            insn *in = &m->insns[i];
            if (in->target < 0 || in->wide || in->op == OP_GOTO_W || in->op == OP_JSR_W) continue;
            int64_t d = (int64_t)m->insns[in->target].start - in->new_off;
            if (d < -32768 || d > 32767) { in->wide = 1; changed = 1; }
        }
        if (!changed) break;
        if (round > 100000) return merr(m, "layout does not converge");
    }
    if (m->total_len > 65535)
        return merr(m, "code too large after instrumentation (%u bytes, the limit is 65535)", m->total_len);
    return 0;
}

/* New offset for an original one, as a branch target / range start. */
static uint32_t map_start(const method_rewrite *m, uint32_t off) {
    if (off >= m->code_len) return m->orig_end;
    return m->insns[m->insn_at[off]].start;
}

static uint32_t map_uninit(void *ctx, uint32_t off) {
    const method_rewrite *m = ctx;
    return m->insns[m->insn_at[off]].new_off;
}

/* ------------------------------------------------------------ 3. frames */

typedef struct frame_list { frame *v; uint32_t n, cap; } frame_list;

static int frame_list_add(frame_list *l, const frame *f) {
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        frame *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v; l->cap = cap;
    }
    l->v[l->n++] = *f;
    return 0;
}

static const uint8_t *find_code_attr(const method_rewrite *m, const char *want, uint32_t *len) {
    reader r = { m->attrs, m->attrs_end, 0 };
    uint16_t n = rd_u2(&r);
    size_t wl = strlen(want);
    for (uint16_t i = 0; i < n; i++) {
        uint16_t name = rd_u2(&r), nl;
        uint32_t l = rd_u4(&r);
        const uint8_t *body = rd_skip(&r, l);
        const char *s = cp_utf8(&m->cf->cp, name, &nl);
        if (!body || !s) return NULL;
        if (nl == wl && memcmp(s, want, wl) == 0) { *len = l; return body; }
    }
    return NULL;
}

static int cmp_frame(const void *a, const void *b) {
    const frame *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Builds the method's frames (original ones moved, new ones added) in
 * `out`, and marks which instructions the exceptional-exit handler covers. */
static int compute_frames(method_rewrite *m, frame_list *out) {
    char msg[200];                   /* prefixed with class.method by merr at the end */
    type_context c = { m->cf, m->code, m->code_len, m->max_locals, m->max_stack, NULL, 0, msg, sizeof msg };
    type_state s, initial;
    frame *orig = NULL;
    uint32_t n_orig = 0;
    int rc = -1;
    if (state_init(&s, m->max_locals, m->max_stack) < 0 || state_init(&initial, m->max_locals, m->max_stack) < 0) {
        state_free(&s);
        return merr(m, "out of memory");
    }
    if (state_initial(&c, &initial, m->access, m->name, m->name_len, m->desc, m->desc_len) < 0) goto done;
    uint32_t smt_len = 0;
    const uint8_t *smt = find_code_attr(m, "StackMapTable", &smt_len);
    if (smt && stackmap_decode(&c, smt, smt_len, &initial, &orig, &n_orig) < 0) goto done;

    int is_init = m->name_len == 6 && memcmp(m->name, "<init>", 6) == 0;
    int need_pass = is_init;
    for (uint32_t i = 0; i < m->n_insns; i++) if (m->insns[i].wide && op_is_cond_branch(m->insns[i].op)) need_pass = 1;

    /* Frames for instructions after a widened conditional (now branch targets). */
    uint8_t *frame_here = calloc(m->n_insns + 1, 1);
    if (!frame_here) { snprintf(msg, sizeof msg, "out of memory"); goto done; }
    for (uint32_t j = 0; j < n_orig; j++) {
        if (!at_boundary(m, orig[j].off, 0)) {
            snprintf(msg, sizeof msg, "StackMapTable frame at %u is not an instruction", orig[j].off);
            free(frame_here); goto done;
        }
        frame_here[m->insn_at[orig[j].off]] = 1;
    }
    if (need_pass) {
        uint32_t fi = 0;
        int live = 1;
        state_copy(&s, &initial);
        for (uint32_t i = 0; i < m->n_insns; i++) {
            insn *in = &m->insns[i];
            while (fi < n_orig && orig[fi].off < in->off) fi++;
            if (fi < n_orig && orig[fi].off == in->off) { state_from_frame(&s, &orig[fi]); live = 1; }
            else if (!live) {
                snprintf(msg, sizeof msg, "no stack map frame at %u after an unconditional branch", in->off);
                free(frame_here); goto done;
            }
            /* Handler 1 (no locals) covers code where `this` is initialized.
             * Before super(...), the verifier only accepts a handler whose
             * frame has uninitializedThis: handler 2, which covers all of that
             * code but the super(...) call itself (HotSpot refuses any handler
             * there). */
            if (!state_this_uninit(&s)) in->covered = 1;
            else if (m->pre_super && s.locals[0].tag == VT_UNINIT_THIS && !interp_initializes_this(&c, &s, in->off))
                in->covered = 2;
            else in->covered = 0;
            if (i > 0 && m->insns[i - 1].wide && op_is_cond_branch(m->insns[i - 1].op) && !frame_here[i]) {
                frame f = { in->off, 0, 0, NULL, NULL };
                if (frame_from_state(&f, &s) < 0 || frame_list_add(out, &f) < 0) {
                    free(f.locals); free(f.stack);
                    snprintf(msg, sizeof msg, "out of memory"); free(frame_here); goto done;
                }
                frame_here[i] = 1;
            }
            if (interp_step(&c, &s, in->off) < 0) { free(frame_here); goto done; }
            uint8_t op = in->op;
            live = !(op == OP_GOTO || op == OP_GOTO_W || op == OP_ATHROW || (op >= OP_IRETURN && op <= OP_RETURN)
                     || op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH || op == OP_RET
                     || (op == OP_WIDE && m->code[in->off + 1] == OP_RET));
        }
    } else {
        for (uint32_t i = 0; i < m->n_insns; i++) m->insns[i].covered = 1;
    }
    free(frame_here);
    /* The original frames, then ours: moved to the new layout below. */
    for (uint32_t j = 0; j < n_orig; j++) {
        if (frame_list_add(out, &orig[j]) < 0) { snprintf(msg, sizeof msg, "out of memory"); goto done; }
        orig[j].locals = orig[j].stack = NULL;
    }
    rc = 0;
done:
    if (rc < 0) merr(m, "%s", msg);
    frames_free(orig, n_orig);
    state_free(&s);
    state_free(&initial);
    type_context_free(&c);
    return rc;
}

/* ------------------------------------------------------------ 4. emit */

static void emit_push_int(writer *w, method_rewrite *m, int32_t v) {
    if (v >= -1 && v <= 5) wr_u1(w, (unsigned)(OP_ICONST_0 + v));
    else if (v >= -128 && v <= 127) { wr_u1(w, OP_BIPUSH); wr_u1(w, (uint8_t)v); }
    else if (v >= -32768 && v <= 32767) { wr_u1(w, OP_SIPUSH); wr_u2(w, (uint16_t)v); }
    else { wr_u1(w, OP_LDC_W); wr_u2(w, m->int_id); }
}

static void emit_call(writer *w, uint16_t ref) { wr_u1(w, OP_INVOKESTATIC); wr_u2(w, ref); }

static void emit_insn(writer *w, const method_rewrite *m, const insn *in) {
    const uint8_t *code = m->code;
    uint8_t op = in->op;
    if (in->target >= 0) {
        int32_t target = (int32_t)m->insns[in->target].start;
        if (!in->wide && op != OP_GOTO_W && op != OP_JSR_W) {
            wr_u1(w, op); wr_u2(w, (uint16_t)(int16_t)(target - (int32_t)in->new_off));
        } else if (op == OP_GOTO_W || op == OP_JSR_W) {
            wr_u1(w, op); wr_u4(w, (uint32_t)(target - (int32_t)in->new_off));
        } else if (op == OP_GOTO || op == OP_JSR) {
            wr_u1(w, op == OP_GOTO ? OP_GOTO_W : OP_JSR_W);
            wr_u4(w, (uint32_t)(target - (int32_t)in->new_off));
        } else {                           /* if<cond> far -> if<!cond> +8; goto_w far */
            wr_u1(w, op_invert(op)); wr_u2(w, 8);
            wr_u1(w, OP_GOTO_W); wr_u4(w, (uint32_t)(target - (int32_t)(in->new_off + 3)));
        }
        return;
    }
    if (op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH) {
        uint32_t p = (in->off + 4) & ~3u;
        wr_u1(w, op);
        uint32_t pad = (4 - (in->new_off + 1) % 4) % 4;
        for (uint32_t i = 0; i < pad; i++) wr_u1(w, 0);
        int32_t base = (int32_t)in->new_off;
#define TARGET(rel) (int32_t)(m->insns[m->insn_at[in->off + (rel)]].start) - base
        wr_u4(w, (uint32_t)(TARGET(s4(code + p))));
        if (op == OP_TABLESWITCH) {
            int32_t lo = s4(code + p + 4), hi = s4(code + p + 8);
            wr_u4(w, (uint32_t)lo); wr_u4(w, (uint32_t)hi);
            for (int64_t j = 0; j <= (int64_t)hi - lo; j++) wr_u4(w, (uint32_t)(TARGET(s4(code + p + 12 + 4 * j))));
        } else {
            int32_t npairs = s4(code + p + 4);
            wr_u4(w, (uint32_t)npairs);
            for (int32_t j = 0; j < npairs; j++) {
                wr_u4(w, be_get_u4(code + p + 8 + 8 * (uint32_t)j));
                wr_u4(w, (uint32_t)(TARGET(s4(code + p + 12 + 8 * (uint32_t)j))));
            }
        }
#undef TARGET
        return;
    }
    wr_bytes(w, code + in->off, in->len);
}

/* LineNumberTable, LocalVariableTable, LocalVariableTypeTable: pcs moved. */
static int emit_line_numbers(writer *w, const method_rewrite *m, const uint8_t *body, uint32_t len) {
    reader r = { body, body + len, 0 };
    uint16_t n = rd_u2(&r);
    if (!rd_need(&r, 4u * n)) return merr(m, "truncated LineNumberTable");
    wr_u2(w, n);
    for (uint16_t i = 0; i < n; i++) {
        uint16_t pc = rd_u2(&r), line = rd_u2(&r);
        if (pc >= m->code_len) return merr(m, "LineNumberTable pc %u beyond the code", pc);
        wr_u2(w, pc == 0 ? 0 : map_start(m, pc));   /* pc 0's line covers the entry call */
        wr_u2(w, line);
    }
    return 0;
}

static int emit_local_variables(writer *w, const method_rewrite *m, const uint8_t *body, uint32_t len) {
    reader r = { body, body + len, 0 };
    uint16_t n = rd_u2(&r);
    if (!rd_need(&r, 10u * n)) return merr(m, "truncated LocalVariable(Type)Table");
    wr_u2(w, n);
    for (uint16_t i = 0; i < n; i++) {
        uint16_t start = rd_u2(&r), length = rd_u2(&r);
        uint32_t end = (uint32_t)start + length;
        if (end > m->code_len) return merr(m, "local variable range %u+%u beyond the code", start, length);
        uint32_t ns = start == 0 ? 0 : map_start(m, start), ne = map_start(m, end);
        wr_u2(w, ns); wr_u2(w, ne - ns);
        wr_bytes(w, r.p, 6); r.p += 6;
    }
    return 0;
}

static int write_attr_header(writer *w, constant_pool *cp, const char *name, size_t *len_at) {
    uint16_t idx = cp_utf8_index(cp, name, (uint16_t)strlen(name));
    if (!idx) return -1;
    wr_u2(w, idx);
    *len_at = w->len;
    wr_u4(w, 0);
    return 0;
}

static void patch_len(writer *w, size_t at) {
    if (!w->failed) be_put_u4(w->data + at, (uint32_t)(w->len - at - 4));
}

static int emit_code_attr(writer *w, method_rewrite *m, frame_list *frames, uint16_t code_name_index) {
    wr_u2(w, code_name_index);
    size_t len_at = w->len;
    wr_u4(w, 0);
    uint32_t max_stack = m->max_stack + 1u;
    if (max_stack < 2) max_stack = 2;
    if (max_stack > 65535) return merr(m, "max_stack overflow");
    wr_u2(w, max_stack);
    wr_u2(w, m->max_locals);
    wr_u4(w, m->total_len);
    size_t code_at = w->len;

    /* prologue */
    if (m->id >= 0) { emit_push_int(w, m, m->id); emit_call(w, m->leaf ? m->ref_count : m->ref_entry); }
    if (m->object_init) { wr_u1(w, OP_ALOAD_0); emit_call(w, m->ref_object_init); }
    for (uint32_t i = 0; i < m->n_insns; i++) {
        const insn *in = &m->insns[i];
        if (in->pre) { emit_push_int(w, m, m->id); emit_call(w, m->ref_exit); }
        emit_insn(w, m, in);
        if (in->post) { wr_u1(w, OP_DUP); emit_call(w, m->ref_newarray); }
    }
    for (int h = 0; h < (m->handler_len ? 1 + m->pre_super : 0); h++) {
        emit_push_int(w, m, m->id); emit_call(w, m->ref_exit); wr_u1(w, OP_ATHROW);
    }
    if (!w->failed && w->len - code_at != m->total_len)
        return merr(m, "internal error: emitted %zu bytes, laid out %u", w->len - code_at, m->total_len);

    /* exception table: the method's own entries first (they take precedence) */
    size_t count_at = w->len;
    wr_u2(w, 0);
    uint32_t n_exc = 0;
    reader r = { m->exc, m->exc + 8u * m->n_exc, 0 };
    for (uint16_t i = 0; i < m->n_exc; i++) {
        uint16_t start = rd_u2(&r), end = rd_u2(&r), handler = rd_u2(&r), type = rd_u2(&r);
        wr_u2(w, map_start(m, start)); wr_u2(w, map_start(m, end));
        wr_u2(w, map_start(m, handler)); wr_u2(w, type);
        n_exc++;
    }
    if (m->handler_len) {
        uint32_t one = m->handler_len / (1u + (unsigned)m->pre_super);
        for (uint32_t i = 0; i < m->n_insns; ) {
            uint8_t h = m->insns[i].covered;
            if (!h) { i++; continue; }
            uint32_t j = i;
            while (j < m->n_insns && m->insns[j].covered == h) j++;
            uint32_t start = m->insns[i].start, end = j < m->n_insns ? m->insns[j].start : m->orig_end;
            if (end > start) {
                wr_u2(w, start); wr_u2(w, end); wr_u2(w, m->orig_end + (h - 1u) * one); wr_u2(w, 0);
                n_exc++;
            }
            i = j;
        }
    }
    if (n_exc > 65535) return merr(m, "exception table overflow");
    if (!w->failed) be_put_u2(w->data + count_at, (uint16_t)n_exc);

    /* attributes */
    size_t attr_count_at = w->len;
    wr_u2(w, 0);
    uint16_t n_attrs = 0;
    reader a = { m->attrs, m->attrs_end, 0 };
    uint16_t n = rd_u2(&a);
    for (uint16_t i = 0; i < n; i++) {
        uint16_t name_idx = rd_u2(&a), nl;
        uint32_t len = rd_u4(&a);
        const uint8_t *body = rd_skip(&a, len);
        const char *name = cp_utf8(&m->cf->cp, name_idx, &nl);
        if (!body || !name) return merr(m, "bad Code attribute");
#define IS(s) (nl == sizeof(s) - 1 && memcmp(name, s, nl) == 0)
        if (IS("LineNumberTable")) {
            wr_u2(w, name_idx); size_t at = w->len; wr_u4(w, 0);
            if (emit_line_numbers(w, m, body, len) < 0) return -1;
            patch_len(w, at); n_attrs++;
        } else if (IS("LocalVariableTable") || IS("LocalVariableTypeTable")) {
            wr_u2(w, name_idx); size_t at = w->len; wr_u4(w, 0);
            if (emit_local_variables(w, m, body, len) < 0) return -1;
            patch_len(w, at); n_attrs++;
        }
        /* StackMapTable is rewritten below. Type annotations and unknown
         * attributes hold code offsets we can't map: dropped (the JVM
         * doesn't need them to run the code). */
#undef IS
    }
    if (frames->n) {
        size_t at;
        if (write_attr_header(w, &m->cf->cp, "StackMapTable", &at) < 0) return merr(m, "constant pool full");
        if (stackmap_encode(w, &m->cf->cp, frames->v, frames->n, map_uninit, m) < 0)
            return merr(m, "cannot encode the stack map (constant pool full or a return address in a frame)");
        patch_len(w, at); n_attrs++;
    }
    if (!w->failed) be_put_u2(w->data + attr_count_at, n_attrs);
    patch_len(w, len_at);
    return w->failed ? merr(m, "out of memory") : 0;
}

/* ------------------------------------------------------------ per method */

/* The tracker's Methodref `which`, appended to the pool on first use (one
 * scan of the pool per class, not per method). */
static uint16_t tracker_ref(classfile *cf, const char *tracker, int which) {
    static const char *const names[] = { BCI_ENTRY_NAME, BCI_EXIT_NAME, BCI_COUNT_NAME,
                                         BCI_NEWARRAY_NAME, BCI_OBJECT_INIT_NAME };
    static const char *const descs[] = { BCI_ENTRY_DESC, BCI_EXIT_DESC, BCI_COUNT_DESC,
                                         BCI_NEWARRAY_DESC, BCI_OBJECT_INIT_DESC };
    if (!cf->tracker_refs[which])
        cf->tracker_refs[which] = cp_methodref_index(&cf->cp, tracker, names[which], descs[which]);
    return cf->tracker_refs[which];
}
enum { REF_ENTRY, REF_EXIT, REF_COUNT, REF_NEWARRAY, REF_OBJECT_INIT };

/* An instance method finalize()V whose code is a lone `return`. The JVM
 * registers an object for finalization only if its class or a superclass
 * declares a finalize()V with more code than that (HotSpot: a class whose own
 * finalize() is empty has no finalizer, whatever its superclasses have), so
 * a call inserted here would make every instance of the class finalizable:
 * Jython's PyObject declares `protected final void finalize() {}`, and timed
 * by cpu=times it sent every Python object through the Finalizer thread
 * (1.2 million Finalizers waiting, the live heap 6x as big, CPU 1.5x). Left
 * alone, it is neither counted nor timed; the JVM never calls it either. */
static int is_empty_finalizer(const method_rewrite *m) {
    return !(m->access & ACC_STATIC) && m->name_len == 8 && memcmp(m->name, "finalize", 8) == 0
           && m->desc_len == 3 && memcmp(m->desc, "()V", 3) == 0
           && m->code_len == 1 && m->code[0] == OP_RETURN;
}

/* config->layout: where each original instruction went. */
static int report_layout(const method_rewrite *m, uint32_t index) {
    bci_moved_insn *moved = malloc((m->n_insns ? m->n_insns : 1) * sizeof *moved);
    char *cls = strndup(m->cf->this_name, m->cf->this_name_len);
    char *name = strndup(m->name, m->name_len), *desc = strndup(m->desc, m->desc_len);
    int rc = 0;
    if (!moved || !cls || !name || !desc) {
        rc = merr(m, "out of memory");
    } else {
        for (uint32_t i = 0; i < m->n_insns; i++)
            moved[i] = (bci_moved_insn){ m->insns[i].off, m->insns[i].new_off, m->insns[i].new_len };
        bci_method_info info = { cls, name, desc, m->access, index, 0 };
        m->config->layout(m->config->context, &info, moved, m->n_insns, m->total_len);
    }
    free(moved); free(cls); free(name); free(desc);
    return rc;
}

static int rewrite_method(writer *w, classfile *cf, const bci_config *config, uint32_t index,
                          char *err, size_t err_len, int *changed) {
    method_info *mi = &cf->methods[index];
    method_rewrite m;
    memset(&m, 0, sizeof m);
    m.cf = cf; m.config = config; m.err = err; m.err_len = err_len; m.access = mi->access;
    m.name = cp_utf8(&cf->cp, mi->name_index, &m.name_len);
    m.desc = cp_utf8(&cf->cp, mi->descriptor_index, &m.desc_len);
    m.id = -1;
    if (!mi->code_attr) { wr_bytes(w, mi->start, (size_t)(mi->end - mi->start)); return 0; }

    reader r = { mi->code_attr + 6, mi->code_attr + mi->code_attr_len, 0 };
    m.max_stack = rd_u2(&r);
    m.max_locals = rd_u2(&r);
    m.code_len = rd_u4(&r);
    if (r.bad || m.code_len == 0 || m.code_len > 65535) return merr(&m, "bad code length %u", m.code_len);
    m.code = rd_skip(&r, m.code_len);
    m.n_exc = rd_u2(&r);
    m.exc = rd_skip(&r, 8u * m.n_exc);
    m.attrs = r.p;
    {   /* the attributes must fill the rest of the Code attribute exactly */
        uint16_t na = rd_u2(&r);
        for (uint16_t i = 0; i < na && !r.bad; i++) { rd_u2(&r); rd_skip(&r, rd_u4(&r)); }
    }
    m.attrs_end = r.p;
    if (r.bad || !m.code || !m.exc || r.p != r.end) return merr(&m, "malformed Code attribute");

    int is_object_init = cf->this_name_len == 16 && memcmp(cf->this_name, "java/lang/Object", 16) == 0
                         && m.name_len == 6 && memcmp(m.name, "<init>", 6) == 0;
    m.object_init = (config->what & BCI_OBJECT_INIT) && is_object_init;

    int rc = -1;
    frame_list frames = { NULL, 0, 0 };
    if (decode(&m) < 0) goto out;
    /* exception table sanity */
    for (uint16_t i = 0; i < m.n_exc; i++) {
        const uint8_t *e = m.exc + 8u * i;
        uint16_t start = be_get_u2(e), end = be_get_u2(e + 2), handler = be_get_u2(e + 4);
        if (start >= end || !at_boundary(&m, start, 0) || !at_boundary(&m, end, 1) || !at_boundary(&m, handler, 0)) {
            merr(&m, "bad exception table entry %u", i); goto out;
        }
    }
    if ((config->what & BCI_ENTRY_EXIT) && !is_empty_finalizer(&m)) {
        m.leaf = (config->what & BCI_COUNT_LEAVES) && is_leaf(&m, 0);
        char *cls = strndup(cf->this_name, cf->this_name_len);
        char *name = strndup(m.name, m.name_len), *desc = strndup(m.desc, m.desc_len);
        if (!cls || !name || !desc) { free(cls); free(name); free(desc); merr(&m, "out of memory"); goto out; }
        bci_method_info info = { cls, name, desc, mi->access, index,
                                 (m.leaf ? BCI_METHOD_LEAF : 0u) | (is_leaf(&m, 1) ? BCI_METHOD_SHORT : 0u) };
        m.id = config->method_id ? config->method_id(config->context, &info) : (int32_t)index;
        free(cls); free(name); free(desc);
        if (m.id < 0) { m.id = -1; m.leaf = 0; }
    }
    uint32_t id_len = push_int_len(m.id);
    int any = 0;
    if (m.id >= 0) {
        m.prologue_len += id_len + 3;
        if (!m.leaf)
            for (uint32_t i = 0; i < m.n_insns; i++)
                if (m.insns[i].op >= OP_IRETURN && m.insns[i].op <= OP_RETURN) m.insns[i].pre = id_len + 3;
        any = 1;
    }
    if (m.object_init) { m.prologue_len += 4; any = 1; }
    if (config->what & BCI_NEWARRAY)
        for (uint32_t i = 0; i < m.n_insns; i++) {
            uint8_t op = m.insns[i].op;
            if (op == OP_NEWARRAY || op == OP_ANEWARRAY || op == OP_MULTIANEWARRAY) { m.insns[i].post = 4; any = 1; }
        }
    if (!any) {                                        /* nothing to insert: copy as is */
        wr_bytes(w, mi->start, (size_t)(mi->end - mi->start));
        rc = 0;
        goto out;
    }
    /* Stack maps: always from 51 (the verifier requires them); in 50 when
     * the method had them or has no branch (then they can be computed: a 50
     * class whose frames don't check is verified again by the old verifier,
     * whole, which we avoid). Before 50 the old inferencing verifier needs none. */
    uint32_t smt_len;
    int straight = m.n_exc == 0;                      /* no branch target: frames are computable */
    for (uint32_t i = 0; i < m.n_insns && straight; i++)
        straight = m.insns[i].target < 0 && m.insns[i].op != OP_TABLESWITCH && m.insns[i].op != OP_LOOKUPSWITCH;
    m.with_frames = cf->major >= 51 ||
                    (cf->major == 50 && (find_code_attr(&m, "StackMapTable", &smt_len) || straight));
    int is_init = m.name_len == 6 && memcmp(m.name, "<init>", 6) == 0;
    /* The exceptional-exit handler. Without stack maps we can't tell where a
     * constructor's `this` is initialized, so old constructors go without. */
    /* Without stack maps (old verifier) one handler covers a constructor
     * whole; with them, code before super(...) needs a handler of its own. */
    m.pre_super = m.with_frames && is_init && !is_object_init;
    if (m.id >= 0 && !m.leaf) m.handler_len = (id_len + 3 + 1) * (1u + (unsigned)m.pre_super);
    else m.pre_super = 0;

    if (layout(&m) < 0) goto out;
    if (m.with_frames) {
        if (compute_frames(&m, &frames) < 0) goto out;
    } else {
        for (uint32_t i = 0; i < m.n_insns; i++) m.insns[i].covered = 1;
    }
    if (m.handler_len && m.with_frames) {
        /* Handler 1: no locals; handler 2: uninitializedThis in local 0; the
         * throwable on the stack. Marked with offsets past the code, moved below. */
        for (uint8_t h = 1; h <= 1 + m.pre_super; h++) {
            vtype *thr = malloc(sizeof *thr), *self = malloc(sizeof *self);
            if (!thr || !self) { free(thr); free(self); merr(&m, "out of memory"); goto out; }
            thr->tag = VT_OBJECT; thr->name = "java/lang/Throwable"; thr->len = 19; thr->off = 0;
            self->tag = VT_UNINIT_THIS; self->name = NULL; self->len = 0; self->off = 0;
            frame f = { UINT32_MAX - 2 + h, h == 2, 1, self, thr };
            if (frame_list_add(&frames, &f) < 0) { free(thr); free(self); merr(&m, "out of memory"); goto out; }
        }
    }
    /* Move frames to the new layout; the handlers' go after the method's code. */
    uint32_t one_handler = m.handler_len / (1u + (unsigned)m.pre_super);
    for (uint32_t i = 0; i < frames.n; i++) {
        uint32_t off = frames.v[i].off;
        frames.v[i].off = off >= UINT32_MAX - 1 ? m.orig_end + (off - (UINT32_MAX - 1)) * one_handler
                                                : map_start(&m, off);
    }
    if (frames.n) qsort(frames.v, frames.n, sizeof *frames.v, cmp_frame);
    for (uint32_t i = 1; i < frames.n; i++)
        if (frames.v[i].off == frames.v[i - 1].off) { merr(&m, "internal error: two frames at %u", frames.v[i].off); goto out; }

    if (m.id >= 0) {
        if (m.leaf) {
            m.ref_count = tracker_ref(cf, config->tracker, REF_COUNT);
        } else {
            m.ref_entry = tracker_ref(cf, config->tracker, REF_ENTRY);
            m.ref_exit = tracker_ref(cf, config->tracker, REF_EXIT);
        }
        if (id_len == 3 && (m.id < -32768 || m.id > 32767)) m.int_id = cp_integer_append(&cf->cp, m.id);
        if ((m.leaf ? !m.ref_count : (!m.ref_entry || !m.ref_exit)) ||
            (id_len == 3 && m.id > 32767 && !m.int_id)) { merr(&m, "constant pool full"); goto out; }
    }
    if (config->what & BCI_NEWARRAY) {
        m.ref_newarray = tracker_ref(cf, config->tracker, REF_NEWARRAY);
        if (!m.ref_newarray) { merr(&m, "constant pool full"); goto out; }
    }
    if (m.object_init) {
        m.ref_object_init = tracker_ref(cf, config->tracker, REF_OBJECT_INIT);
        if (!m.ref_object_init) { merr(&m, "constant pool full"); goto out; }
    }

    if (config->layout && report_layout(&m, index) < 0) goto out;

    /* method_info: access, name, descriptor, attributes with Code replaced */
    wr_u2(w, mi->access); wr_u2(w, mi->name_index); wr_u2(w, mi->descriptor_index);
    reader a = { mi->start + 6, mi->end, 0 };
    uint16_t n = rd_u2(&a);
    wr_u2(w, n);
    for (uint16_t i = 0; i < n; i++) {
        const uint8_t *at = a.p;
        uint16_t name_idx = rd_u2(&a);
        uint32_t len = rd_u4(&a);
        rd_skip(&a, len);
        if (at == mi->code_attr) { if (emit_code_attr(w, &m, &frames, name_idx) < 0) goto out; }
        else wr_bytes(w, at, len + 6);
    }
    *changed = 1;
    rc = 0;
out:
    frames_free(frames.v, frames.n);
    free(m.insns);
    free(m.insn_at);
    return rc;
}

/* ------------------------------------------------------------ public */

bci_result bci_rewrite(const uint8_t *in, size_t in_len, const bci_config *config,
                       uint8_t **out, size_t *out_len, char *err, size_t err_len) {
    *out = NULL; *out_len = 0;
    if (err_len) err[0] = 0;
    classfile cf;
    if (classfile_parse(&cf, in, in_len, err, err_len) < 0) { classfile_free(&cf); return BCI_ERROR; }
    size_t tl = config->tracker ? strlen(config->tracker) : 0;
    if (!config->tracker || (cf.this_name_len >= tl && memcmp(cf.this_name, config->tracker, tl) == 0 &&
                             (cf.this_name_len == tl || cf.this_name[tl] == '$'))) {
        classfile_free(&cf);
        return BCI_UNCHANGED;                          /* never the tracker or its nested classes */
    }
    writer methods = { 0 };
    int changed = 0;
    for (uint32_t i = 0; i < cf.methods_count; i++)
        if (rewrite_method(&methods, &cf, config, i, err, err_len, &changed) < 0) {
            free(methods.data); classfile_free(&cf); return BCI_ERROR;
        }
    if (!changed) { free(methods.data); classfile_free(&cf); return BCI_UNCHANGED; }
    writer w = { 0 };
    wr_u4(&w, 0xCAFEBABEu);
    wr_u2(&w, cf.minor); wr_u2(&w, cf.major);
    wr_u2(&w, cf.cp.count);
    wr_bytes(&w, cf.cp.original, cf.cp.original_len);
    wr_bytes(&w, cf.cp.added.data, cf.cp.added.len);
    wr_bytes(&w, cf.middle, (size_t)(cf.middle_end - cf.middle));
    wr_u2(&w, cf.methods_count);
    wr_bytes(&w, methods.data, methods.len);
    wr_bytes(&w, cf.tail, (size_t)(cf.tail_end - cf.tail));
    int failed = w.failed || methods.failed || cf.cp.added.failed;
    free(methods.data);
    classfile_free(&cf);
    if (failed) { free(w.data); snprintf(err, err_len, "out of memory"); return BCI_ERROR; }
    *out = w.data; *out_len = w.len;
    return BCI_OK;
}

void bci_free(uint8_t *bytes) { free(bytes); }

int bci_class_name(const uint8_t *in, size_t in_len, char *buf, size_t buf_len) {
    char err[160];
    classfile cf;
    int rc = -1;
    if (classfile_parse(&cf, in, in_len, err, sizeof err) == 0 && cf.this_name_len < buf_len &&
        memchr(cf.this_name, 0, cf.this_name_len) == NULL) {
        memcpy(buf, cf.this_name, cf.this_name_len);
        buf[cf.this_name_len] = 0;
        rc = 0;
    }
    classfile_free(&cf);
    return rc;
}
