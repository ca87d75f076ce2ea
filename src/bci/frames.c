/* frames: verification types, StackMapTable, the linear type pass. See frames.h. */
#include "frames.h"

#include <stdarg.h>
#include <stdio.h>

#include "opcodes.h"

__attribute__((format(printf, 2, 3)))
static int terr(type_context *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->err_len, fmt, ap);
    va_end(ap);
    return -1;
}

void type_context_free(type_context *c) {
    for (uint32_t i = 0; i < c->n_strings; i++) free(c->strings[i]);
    free(c->strings);
    c->strings = NULL; c->n_strings = 0;
}

static const char *keep_string(type_context *c, const char *a, size_t an, const char *b, size_t bn,
                               const char *d, size_t dn) {
    char **s = realloc(c->strings, (c->n_strings + 1) * sizeof *s);
    if (!s) return NULL;
    c->strings = s;
    char *p = malloc(an + bn + dn + 1);
    if (!p) return NULL;
    memcpy(p, a, an); memcpy(p + an, b, bn); memcpy(p + an + bn, d, dn); p[an + bn + dn] = 0;
    c->strings[c->n_strings++] = p;
    return p;
}

int state_init(type_state *s, uint16_t max_locals, uint16_t max_stack) {
    memset(s, 0, sizeof *s);
    s->max_locals = max_locals; s->max_stack = max_stack;
    s->locals = calloc(max_locals + 1u, sizeof *s->locals);
    s->stack = calloc(max_stack + 1u, sizeof *s->stack);
    return s->locals && s->stack ? 0 : -1;
}

void state_free(type_state *s) { free(s->locals); free(s->stack); s->locals = s->stack = NULL; }

void state_copy(type_state *dst, const type_state *src) {
    memcpy(dst->locals, src->locals, src->max_locals * sizeof *src->locals);
    memcpy(dst->stack, src->stack, src->sp * sizeof *src->stack);
    dst->sp = src->sp;
}

static vtype vt(uint8_t tag) { vtype t = { tag, 0, 0, NULL }; return t; }
static vtype vt_object(const char *name, size_t len) { vtype t = { VT_OBJECT, (uint16_t)len, 0, name }; return t; }
static int is_cat2(const vtype *t) { return t->tag == VT_LONG || t->tag == VT_DOUBLE; }

/* The type of one field descriptor starting at d (length n); sets *used. */
static int descriptor_type(const char *d, size_t n, vtype *t, size_t *used) {
    if (n == 0) return -1;
    size_t i = 0;
    while (i < n && d[i] == '[') i++;
    if (i == n) return -1;
    size_t end;
    if (d[i] == 'L') {
        const char *semi = memchr(d + i, ';', n - i);
        if (!semi) return -1;
        end = (size_t)(semi - d) + 1;
    } else {
        if (!strchr("BCDFIJSZ", d[i]) || d[i] == 0) return -1;
        end = i + 1;
    }
    *used = end;
    if (i > 0) { *t = vt_object(d, end); return 0; }          /* array: the descriptor is the name */
    switch (d[0]) {
    case 'L': *t = vt_object(d + 1, end - 2); break;
    case 'J': *t = vt(VT_LONG); break;
    case 'D': *t = vt(VT_DOUBLE); break;
    case 'F': *t = vt(VT_FLOAT); break;
    default:  *t = vt(VT_INTEGER); break;
    }
    return 0;
}

static void set_local(type_state *s, uint16_t i, vtype t) {
    if (i > 0 && is_cat2(&s->locals[i - 1])) s->locals[i - 1] = vt(VT_TOP);
    s->locals[i] = t;
    if (is_cat2(&t)) {
        if (i + 1 < s->max_locals) s->locals[i + 1] = vt(VT_TOP);
    }
}

int state_initial(type_context *c, type_state *s, uint16_t access, const char *name, uint16_t name_len,
                  const char *desc, uint16_t desc_len) {
    for (uint16_t i = 0; i < s->max_locals; i++) s->locals[i] = vt(VT_TOP);
    s->sp = 0;
    uint32_t slot = 0;
    if (!(access & ACC_STATIC)) {
        if (s->max_locals < 1) return terr(c, "max_locals too small for `this`");
        int init = name_len == 6 && memcmp(name, "<init>", 6) == 0;
        int object = c->cf->this_name_len == 16 && memcmp(c->cf->this_name, "java/lang/Object", 16) == 0;
        s->locals[slot++] = init && !object ? vt(VT_UNINIT_THIS)
                                            : vt_object(c->cf->this_name, c->cf->this_name_len);
    }
    if (desc_len < 2 || desc[0] != '(') return terr(c, "bad method descriptor");
    size_t i = 1;
    while (i < desc_len && desc[i] != ')') {
        vtype t; size_t used;
        if (descriptor_type(desc + i, desc_len - i, &t, &used) < 0) return terr(c, "bad method descriptor");
        i += used;
        uint32_t need = slot + (is_cat2(&t) ? 2 : 1);
        if (need > s->max_locals) return terr(c, "max_locals %u too small for the arguments", s->max_locals);
        s->locals[slot] = t;
        if (is_cat2(&t)) s->locals[slot + 1] = vt(VT_TOP);
        slot = need;
    }
    return i < desc_len ? 0 : terr(c, "bad method descriptor");
}

/* ---------------------------------------------------------------- StackMapTable */

static int read_vtype(type_context *c, reader *r, vtype *t) {
    uint8_t tag = rd_u1(r);
    *t = vt(tag);
    if (tag == VT_OBJECT) {
        uint16_t idx = rd_u2(r), len;
        const char *name = cp_class_name(&c->cf->cp, idx, &len);
        if (!name) return terr(c, "StackMapTable: bad class index %u", idx);
        *t = vt_object(name, len);
    } else if (tag == VT_UNINIT) {
        t->off = rd_u2(r);
        if (t->off >= c->code_len || c->code[t->off] != OP_NEW)
            return terr(c, "StackMapTable: uninitialized(%u) is not a `new`", t->off);
    } else if (tag > VT_UNINIT) {
        return terr(c, "StackMapTable: bad verification type %u", tag);
    }
    return r->bad ? terr(c, "StackMapTable truncated") : 0;
}

void frames_free(frame *frames, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) { free(frames[i].locals); free(frames[i].stack); }
    free(frames);
}

/* Locals of a state as a JVMS list (a long is one entry, trailing tops dropped). */
static uint16_t list_from_slots(const vtype *slots, uint16_t n, vtype *out) {
    uint16_t k = 0, last = 0;
    for (uint16_t i = 0; i < n; i++) {
        out[k++] = slots[i];
        if (slots[i].tag != VT_TOP) last = k;
        if (is_cat2(&slots[i])) i++;
    }
    return last;
}

int stackmap_decode(type_context *c, const uint8_t *p, uint32_t len, const type_state *initial,
                    frame **frames_out, uint32_t *n_out) {
    reader r = { p, p + len, 0 };
    uint16_t n = rd_u2(&r);
    frame *frames = calloc(n ? n : 1, sizeof *frames);
    uint32_t cap_locals = (uint32_t)c->max_locals + 1;   /* 65535 + 1 must not wrap */
    vtype *locals = calloc(cap_locals, sizeof *locals);      /* current list */
    if (!frames || !locals) { free(frames); free(locals); return terr(c, "out of memory"); }
    uint16_t nlocals = list_from_slots(initial->locals, initial->max_locals, locals);
    int64_t off = -1;
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint8_t type = rd_u1(&r);
        uint32_t delta;
        vtype stack1;
        int has_stack1 = 0;
        frame *f = &frames[i];
        if (type < 64) delta = type;
        else if (type < 128) { delta = type - 64u; if (read_vtype(c, &r, &stack1) < 0) goto bad; has_stack1 = 1; }
        else if (type < 247) { terr(c, "StackMapTable: reserved frame type %u", type); goto bad; }
        else {
            delta = rd_u2(&r);
            if (type == 247) { if (read_vtype(c, &r, &stack1) < 0) goto bad; has_stack1 = 1; }
            else if (type <= 250) {
                uint16_t k = (uint16_t)(251 - type);
                if (k > nlocals) { terr(c, "StackMapTable: chop of %u locals from %u", k, nlocals); goto bad; }
                nlocals = (uint16_t)(nlocals - k);
            } else if (type == 251) {
            } else if (type <= 254) {
                uint16_t k = (uint16_t)(type - 251);
                for (uint16_t j = 0; j < k; j++) {
                    if (nlocals >= cap_locals) { terr(c, "StackMapTable: more locals than max_locals"); goto bad; }
                    if (read_vtype(c, &r, &locals[nlocals++]) < 0) goto bad;
                }
            } else {                                           /* full_frame */
                uint16_t nl = rd_u2(&r);
                if (nl > cap_locals) { terr(c, "StackMapTable: more locals than max_locals"); goto bad; }
                for (uint16_t j = 0; j < nl; j++) if (read_vtype(c, &r, &locals[j]) < 0) goto bad;
                nlocals = nl;
                uint16_t ns = rd_u2(&r);
                if (ns > c->max_stack) { terr(c, "StackMapTable: stack deeper than max_stack"); goto bad; }
                f->stack = calloc(ns ? ns : 1, sizeof *f->stack);
                if (!f->stack) { terr(c, "out of memory"); goto bad; }
                for (uint16_t j = 0; j < ns; j++) if (read_vtype(c, &r, &f->stack[j]) < 0) goto bad;
                f->nstack = ns;
            }
        }
        if (r.bad) { terr(c, "StackMapTable truncated"); goto bad; }
        if (has_stack1) {
            if (c->max_stack < 1) { terr(c, "StackMapTable: stack deeper than max_stack"); goto bad; }
            f->stack = malloc(sizeof *f->stack);
            if (!f->stack) { terr(c, "out of memory"); goto bad; }
            f->stack[0] = stack1; f->nstack = 1;
        }
        off = off < 0 ? (int64_t)delta : off + delta + 1;
        if (off >= c->code_len) { terr(c, "StackMapTable: frame at %lld beyond the code", (long long)off); goto bad; }
        f->off = (uint32_t)off;
        f->locals = malloc((nlocals ? nlocals : 1) * sizeof *f->locals);
        if (!f->locals) { terr(c, "out of memory"); goto bad; }
        memcpy(f->locals, locals, nlocals * sizeof *locals);
        f->nlocals = nlocals;
        /* Slot counts must fit: a long takes two. */
        uint32_t slots = 0;
        for (uint16_t j = 0; j < nlocals; j++) slots += is_cat2(&locals[j]) ? 2 : 1;
        uint32_t sslots = 0;
        for (uint16_t j = 0; j < f->nstack; j++) sslots += is_cat2(&f->stack[j]) ? 2 : 1;
        if (slots > c->max_locals || sslots > c->max_stack) {
            terr(c, "StackMapTable: frame at %u exceeds max_locals/max_stack", f->off); goto bad;
        }
    }
    if (r.p != r.end) { terr(c, "StackMapTable has trailing bytes"); i = n; goto bad; }
    free(locals);
    *frames_out = frames; *n_out = n;
    return 0;
bad:
    free(locals);
    frames_free(frames, n);
    return -1;
}

void state_from_frame(type_state *s, const frame *f) {
    uint16_t k = 0;
    for (uint16_t i = 0; i < f->nlocals && k < s->max_locals; i++) {
        s->locals[k++] = f->locals[i];
        if (is_cat2(&f->locals[i]) && k < s->max_locals) s->locals[k++] = vt(VT_TOP);
    }
    while (k < s->max_locals) s->locals[k++] = vt(VT_TOP);
    k = 0;
    for (uint16_t i = 0; i < f->nstack && k < s->max_stack; i++) {
        s->stack[k++] = f->stack[i];
        if (is_cat2(&f->stack[i]) && k < s->max_stack) s->stack[k++] = vt(VT_TOP);
    }
    s->sp = k;
}

int frame_from_state(frame *f, const type_state *s) {
    f->locals = malloc((s->max_locals + 1u) * sizeof *f->locals);
    f->stack = malloc((s->sp + 1u) * sizeof *f->stack);
    if (!f->locals || !f->stack) return -1;
    f->nlocals = list_from_slots(s->locals, s->max_locals, f->locals);
    uint16_t k = 0;
    for (uint16_t i = 0; i < s->sp; i++) {
        f->stack[k++] = s->stack[i];
        if (is_cat2(&s->stack[i])) i++;
    }
    f->nstack = k;
    return 0;
}

static int descriptor_slots(const char *d, size_t n, uint32_t *args, const char **ret, size_t *ret_len);

int interp_initializes_this(type_context *c, const type_state *s, uint32_t off) {
    if (c->code[off] != OP_INVOKESPECIAL) return 0;
    const char *name, *desc, *ret; uint16_t nl, dl; size_t rl; uint32_t args;
    if (cp_member(&c->cf->cp, be_get_u2(c->code + off + 1), &name, &nl, &desc, &dl) < 0 ||
        nl != 6 || memcmp(name, "<init>", 6) != 0 || descriptor_slots(desc, dl, &args, &ret, &rl) < 0)
        return 0;
    return s->sp > args && s->stack[s->sp - args - 1].tag == VT_UNINIT_THIS;
}

int state_this_uninit(const type_state *s) {
    for (uint16_t i = 0; i < s->max_locals; i++)
        if (s->locals[i].tag == VT_UNINIT_THIS) return 1;
    return 0;
}

static int write_vtype(writer *w, constant_pool *cp, const vtype *t,
                       uint32_t (*map_offset)(void *, uint32_t), void *map_ctx) {
    wr_u1(w, t->tag);
    if (t->tag == VT_OBJECT) {
        uint16_t idx = cp_class_index(cp, t->name, t->len);
        if (!idx) return -1;
        wr_u2(w, idx);
    } else if (t->tag == VT_UNINIT) {
        wr_u2(w, map_offset(map_ctx, t->off));
    } else if (t->tag > VT_UNINIT) {
        return -1;                                    /* a return address can't be in a frame */
    }
    return 0;
}

int stackmap_encode(writer *w, constant_pool *cp, const frame *frames, uint32_t n,
                    uint32_t (*map_offset)(void *, uint32_t), void *map_ctx) {
    wr_u2(w, n);
    int64_t prev = -1;
    for (uint32_t i = 0; i < n; i++) {
        const frame *f = &frames[i];
        uint32_t delta = prev < 0 ? f->off : (uint32_t)(f->off - prev - 1);
        prev = f->off;
        wr_u1(w, 255);
        wr_u2(w, delta);
        wr_u2(w, f->nlocals);
        for (uint16_t j = 0; j < f->nlocals; j++)
            if (write_vtype(w, cp, &f->locals[j], map_offset, map_ctx) < 0) return -1;
        wr_u2(w, f->nstack);
        for (uint16_t j = 0; j < f->nstack; j++)
            if (write_vtype(w, cp, &f->stack[j], map_offset, map_ctx) < 0) return -1;
    }
    return w->failed ? -1 : 0;
}

/* ---------------------------------------------------------------- the type pass */

#define POP(n) do { if (s->sp < (n)) return terr(c, "stack underflow at %u", off); s->sp = (uint16_t)(s->sp - (n)); } while (0)
#define PUSH(t) do { if (s->sp >= s->max_stack) return terr(c, "stack overflow at %u", off); s->stack[s->sp++] = (t); } while (0)
#define PUSH_T(t) do { vtype t_ = (t); PUSH(t_); if (is_cat2(&t_)) PUSH(vt(VT_TOP)); } while (0)

static int push_descriptor(type_context *c, type_state *s, uint32_t off, const char *d, size_t n) {
    if (n == 1 && d[0] == 'V') return 0;
    vtype t; size_t used;
    if (descriptor_type(d, n, &t, &used) < 0 || used != n) return terr(c, "bad descriptor at %u", off);
    PUSH_T(t);
    return 0;
}

static int descriptor_slots(const char *d, size_t n, uint32_t *args, const char **ret, size_t *ret_len) {
    if (n < 3 || d[0] != '(') return -1;
    size_t i = 1;
    uint32_t slots = 0;
    while (i < n && d[i] != ')') {
        int cat2 = d[i] == 'J' || d[i] == 'D';
        while (i < n && d[i] == '[') { i++; cat2 = 0; }
        if (i >= n) return -1;
        if (d[i] == 'L') {
            const char *semi = memchr(d + i, ';', n - i);
            if (!semi) return -1;
            i = (size_t)(semi - d) + 1;
        } else {
            if (!strchr("BCDFIJSZ", d[i]) || d[i] == 0) return -1;
            i++;
        }
        slots += cat2 ? 2 : 1;
    }
    if (i >= n) return -1;
    *args = slots; *ret = d + i + 1; *ret_len = n - i - 1;
    return 0;
}

static uint16_t local_index(const uint8_t *code, uint32_t off, int wide) {
    return wide ? be_get_u2(code + off + 2) : code[off + 1];
}

static int load_local(type_context *c, type_state *s, uint32_t off, uint16_t i, uint8_t tag) {
    if (i >= s->max_locals || (tag == VT_LONG || tag == VT_DOUBLE ? i + 1 >= s->max_locals : 0))
        return terr(c, "local %u out of range at %u", i, off);
    if (tag == VT_OBJECT) { PUSH(s->locals[i]); return 0; }    /* aload: whatever reference is there */
    PUSH_T(vt(tag));
    return 0;
}

static int store_local(type_context *c, type_state *s, uint32_t off, uint16_t i, int cat2) {
    if (i >= s->max_locals || (cat2 && i + 1 >= s->max_locals)) return terr(c, "local %u out of range at %u", i, off);
    POP(cat2 ? 2 : 1);
    set_local(s, i, s->stack[s->sp]);
    return 0;
}

static const uint8_t newarray_types[][3] = {
    [4] = "[Z", [5] = "[C", [6] = "[F", [7] = "[D", [8] = "[B", [9] = "[S", [10] = "[I", [11] = "[J",
};

int interp_step(type_context *c, type_state *s, uint32_t off) {
    const uint8_t *code = c->code;
    uint8_t op = code[off];
    constant_pool *cp = &c->cf->cp;
    int wide = 0;
    if (op == OP_WIDE) { wide = 1; op = code[off + 1]; }

    if (op == 0) return 0;
    if (op == OP_ACONST_NULL) { PUSH(vt(VT_NULL)); return 0; }
    if (op >= 2 && op <= 8) { PUSH(vt(VT_INTEGER)); return 0; }
    if (op == 9 || op == 10) { PUSH_T(vt(VT_LONG)); return 0; }
    if (op >= 11 && op <= 13) { PUSH(vt(VT_FLOAT)); return 0; }
    if (op == 14 || op == 15) { PUSH_T(vt(VT_DOUBLE)); return 0; }
    if (op == OP_BIPUSH || op == OP_SIPUSH) { PUSH(vt(VT_INTEGER)); return 0; }
    if (op == OP_LDC || op == OP_LDC_W || op == OP_LDC2_W) {
        uint16_t idx = op == OP_LDC ? code[off + 1] : be_get_u2(code + off + 1);
        const char *name, *desc; uint16_t nl, dl;
        switch (cp_tag(cp, idx)) {
        case CP_INTEGER: PUSH(vt(VT_INTEGER)); return 0;
        case CP_FLOAT:   PUSH(vt(VT_FLOAT)); return 0;
        case CP_LONG:    PUSH_T(vt(VT_LONG)); return 0;
        case CP_DOUBLE:  PUSH_T(vt(VT_DOUBLE)); return 0;
        case CP_STRING:  PUSH(vt_object("java/lang/String", 16)); return 0;
        case CP_CLASS:   PUSH(vt_object("java/lang/Class", 15)); return 0;
        case CP_METHOD_TYPE:   PUSH(vt_object("java/lang/invoke/MethodType", 27)); return 0;
        case CP_METHOD_HANDLE: PUSH(vt_object("java/lang/invoke/MethodHandle", 29)); return 0;
        case CP_DYNAMIC:
            if (cp_member(cp, idx, &name, &nl, &desc, &dl) < 0) break;
            return push_descriptor(c, s, off, desc, dl);
        default: break;
        }
        return terr(c, "ldc of a bad constant %u at %u", idx, off);
    }
    /* loads */
    if (op >= 21 && op <= 25) {
        static const uint8_t tags[] = { VT_INTEGER, VT_LONG, VT_FLOAT, VT_DOUBLE, VT_OBJECT };
        return load_local(c, s, off, local_index(code, off, wide), tags[op - 21]);
    }
    if (op >= 26 && op <= 45) {
        static const uint8_t tags[] = { VT_INTEGER, VT_LONG, VT_FLOAT, VT_DOUBLE, VT_OBJECT };
        return load_local(c, s, off, (uint16_t)((op - 26) % 4), tags[(op - 26) / 4]);
    }
    if (op >= 46 && op <= 53) {                               /* xaload */
        POP(2);
        vtype arr = s->stack[s->sp];
        switch (op) {
        case 47: PUSH_T(vt(VT_LONG)); return 0;
        case 48: PUSH(vt(VT_FLOAT)); return 0;
        case 49: PUSH_T(vt(VT_DOUBLE)); return 0;
        case 50:
            if (arr.tag == VT_NULL) { PUSH(vt(VT_NULL)); return 0; }
            if (arr.tag != VT_OBJECT || arr.len < 2 || arr.name[0] != '[')
                return terr(c, "aaload on a non-array at %u", off);
            if (arr.name[1] == 'L') {
                if (arr.len < 4) return terr(c, "aaload: bad array type at %u", off);
                PUSH(vt_object(arr.name + 2, arr.len - 3u));
            } else if (arr.name[1] == '[') {
                PUSH(vt_object(arr.name + 1, arr.len - 1u));
            } else {
                return terr(c, "aaload on a primitive array at %u", off);
            }
            return 0;
        default: PUSH(vt(VT_INTEGER)); return 0;
        }
    }
    if (op >= 54 && op <= 58) return store_local(c, s, off, local_index(code, off, wide), op == 55 || op == 57);
    if (op >= 59 && op <= 78) {
        int kind = (op - 59) / 4;
        return store_local(c, s, off, (uint16_t)((op - 59) % 4), kind == 1 || kind == 3);
    }
    if (op >= 79 && op <= 86) { POP(op == 80 || op == 82 ? 4 : 3); return 0; }   /* xastore */
    if (op >= 87 && op <= 95) {
        vtype v[4];
        switch (op) {
        case 87: POP(1); return 0;
        case 88: POP(2); return 0;
        case 89: POP(1); v[0] = s->stack[s->sp]; PUSH(v[0]); PUSH(v[0]); return 0;
        case 90: POP(2); v[1] = s->stack[s->sp]; v[0] = s->stack[s->sp + 1];          /* dup_x1 */
                 PUSH(v[0]); PUSH(v[1]); PUSH(v[0]); return 0;
        case 91: POP(3); v[2] = s->stack[s->sp]; v[1] = s->stack[s->sp + 1]; v[0] = s->stack[s->sp + 2];
                 PUSH(v[0]); PUSH(v[2]); PUSH(v[1]); PUSH(v[0]); return 0;            /* dup_x2 */
        case 92: POP(2); v[1] = s->stack[s->sp]; v[0] = s->stack[s->sp + 1];          /* dup2 */
                 PUSH(v[1]); PUSH(v[0]); PUSH(v[1]); PUSH(v[0]); return 0;
        case 93: POP(3); v[2] = s->stack[s->sp]; v[1] = s->stack[s->sp + 1]; v[0] = s->stack[s->sp + 2];
                 PUSH(v[1]); PUSH(v[0]); PUSH(v[2]); PUSH(v[1]); PUSH(v[0]); return 0; /* dup2_x1 */
        case 94: POP(4); v[3] = s->stack[s->sp]; v[2] = s->stack[s->sp + 1]; v[1] = s->stack[s->sp + 2];
                 v[0] = s->stack[s->sp + 3];                                           /* dup2_x2 */
                 PUSH(v[1]); PUSH(v[0]); PUSH(v[3]); PUSH(v[2]); PUSH(v[1]); PUSH(v[0]); return 0;
        case 95: POP(2); v[1] = s->stack[s->sp]; v[0] = s->stack[s->sp + 1];          /* swap */
                 PUSH(v[0]); PUSH(v[1]); return 0;
        }
    }
    if (op >= 96 && op <= 119) {                              /* add sub mul div rem neg */
        static const uint8_t tags[] = { VT_INTEGER, VT_LONG, VT_FLOAT, VT_DOUBLE };
        int k = (op - 96) % 4, size = (k == 1 || k == 3) ? 2 : 1;
        POP(op >= 116 ? size : 2 * size);
        PUSH_T(vt(tags[k]));
        return 0;
    }
    if (op >= 120 && op <= 131) {                             /* shifts and bitwise */
        int is_long = (op - 120) % 2;
        if (!is_long) { POP(2); PUSH(vt(VT_INTEGER)); return 0; }
        POP(op <= 125 ? 3 : 4);
        PUSH_T(vt(VT_LONG));
        return 0;
    }
    if (op == 132) return 0;                                  /* iinc */
    if (op >= 133 && op <= 147) {
        static const uint8_t from[] = { 1,1,1, 2,2,2, 1,1,1, 2,2,2, 1,1,1 };   /* source size */
        static const uint8_t to[] = { VT_LONG, VT_FLOAT, VT_DOUBLE, VT_INTEGER, VT_FLOAT, VT_DOUBLE,
                                      VT_INTEGER, VT_LONG, VT_DOUBLE, VT_INTEGER, VT_LONG, VT_FLOAT,
                                      VT_INTEGER, VT_INTEGER, VT_INTEGER };
        POP(from[op - 133]);
        PUSH_T(vt(to[op - 133]));
        return 0;
    }
    if (op >= 148 && op <= 152) { POP(op == 149 || op == 150 ? 2 : 4); PUSH(vt(VT_INTEGER)); return 0; }
    if ((op >= 153 && op <= 158) || op == OP_IFNULL || op == OP_IFNONNULL) { POP(1); return 0; }
    if (op >= 159 && op <= 166) { POP(2); return 0; }
    if (op == OP_GOTO || op == OP_GOTO_W) return 0;
    if (op == OP_JSR || op == OP_JSR_W) { PUSH(vt(VT_RETURN_ADDRESS)); return 0; }
    if (op == OP_RET) return 0;
    if (op == OP_TABLESWITCH || op == OP_LOOKUPSWITCH) { POP(1); return 0; }
    if (op >= 172 && op <= 177) { s->sp = 0; return 0; }      /* returns: no successor */
    if (op >= 178 && op <= 181) {
        const char *name, *desc; uint16_t nl, dl;
        uint16_t idx = be_get_u2(code + off + 1);
        if (cp_tag(cp, idx) != CP_FIELDREF || cp_member(cp, idx, &name, &nl, &desc, &dl) < 0)
            return terr(c, "bad field reference at %u", off);
        int size = dl > 0 && (desc[0] == 'J' || desc[0] == 'D') ? 2 : 1;
        switch (op) {
        case 178: return push_descriptor(c, s, off, desc, dl);
        case 179: POP(size); return 0;
        case 180: POP(1); return push_descriptor(c, s, off, desc, dl);
        default:  POP(size + 1); return 0;
        }
    }
    if (op >= 182 && op <= 186) {
        const char *name, *desc; uint16_t nl, dl;
        uint16_t idx = be_get_u2(code + off + 1);
        int tag = cp_tag(cp, idx);
        int ok = op == 186 ? tag == CP_INVOKE_DYNAMIC
                           : (tag == CP_METHODREF || tag == CP_INTERFACE_METHODREF);
        if (!ok || cp_member(cp, idx, &name, &nl, &desc, &dl) < 0)
            return terr(c, "bad method reference at %u", off);
        uint32_t args; const char *ret; size_t ret_len;
        if (descriptor_slots(desc, dl, &args, &ret, &ret_len) < 0) return terr(c, "bad method descriptor at %u", off);
        POP(args);
        if (op == 182 || op == 183 || op == 185) {
            POP(1);
            vtype recv = s->stack[s->sp];
            if (op == 183 && nl == 6 && memcmp(name, "<init>", 6) == 0) {
                vtype done;
                if (recv.tag == VT_UNINIT_THIS) {
                    done = vt_object(c->cf->this_name, c->cf->this_name_len);
                } else if (recv.tag == VT_UNINIT) {
                    uint16_t cl;
                    const char *cn = cp_class_name(cp, be_get_u2(code + recv.off + 1), &cl);
                    if (!cn) return terr(c, "bad `new` at %u", recv.off);
                    done = vt_object(cn, cl);
                } else {
                    return terr(c, "<init> on an initialized object at %u", off);
                }
                for (uint16_t i = 0; i < s->max_locals; i++)
                    if (s->locals[i].tag == recv.tag && s->locals[i].off == recv.off) s->locals[i] = done;
                for (uint16_t i = 0; i < s->sp; i++)
                    if (s->stack[i].tag == recv.tag && s->stack[i].off == recv.off) s->stack[i] = done;
            }
        }
        return push_descriptor(c, s, off, ret, ret_len);
    }
    if (op == OP_NEW) { vtype t = vt(VT_UNINIT); t.off = off; PUSH(t); return 0; }
    if (op == OP_NEWARRAY) {
        uint8_t atype = code[off + 1];
        if (atype < 4 || atype > 11) return terr(c, "newarray of bad type %u at %u", atype, off);
        POP(1);
        PUSH(vt_object((const char *)newarray_types[atype], 2));
        return 0;
    }
    if (op == OP_ANEWARRAY) {
        uint16_t cl;
        const char *cn = cp_class_name(cp, be_get_u2(code + off + 1), &cl);
        if (!cn || cl == 0) return terr(c, "bad anewarray class at %u", off);
        POP(1);
        const char *name = cn[0] == '[' ? keep_string(c, "[", 1, cn, cl, "", 0)
                                        : keep_string(c, "[L", 2, cn, cl, ";", 1);
        if (!name) return terr(c, "out of memory");
        PUSH(vt_object(name, strlen(name)));
        return 0;
    }
    if (op == 190) { POP(1); PUSH(vt(VT_INTEGER)); return 0; }         /* arraylength */
    if (op == OP_ATHROW) { s->sp = 0; return 0; }
    if (op == 192) {                                                    /* checkcast */
        uint16_t cl;
        const char *cn = cp_class_name(cp, be_get_u2(code + off + 1), &cl);
        if (!cn) return terr(c, "bad checkcast class at %u", off);
        POP(1); PUSH(vt_object(cn, cl)); return 0;
    }
    if (op == 193) { POP(1); PUSH(vt(VT_INTEGER)); return 0; }         /* instanceof */
    if (op == 194 || op == 195) { POP(1); return 0; }                  /* monitorenter/exit */
    if (op == OP_MULTIANEWARRAY) {
        uint16_t cl;
        const char *cn = cp_class_name(cp, be_get_u2(code + off + 1), &cl);
        uint8_t dims = code[off + 3];
        if (!cn || dims == 0) return terr(c, "bad multianewarray at %u", off);
        POP(dims); PUSH(vt_object(cn, cl)); return 0;
    }
    return terr(c, "unexpected opcode %u at %u", op, off);
}
