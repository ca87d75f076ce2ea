/* classfile: parse a class file in place; see classfile.h. */
#include "classfile.h"

#include <stdarg.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t err_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return -1;
}

static int cp_grow(constant_pool *cp, uint32_t need) {
    if (need <= cp->cap) return 1;
    uint32_t cap = cp->cap ? cp->cap : 64;
    while (cap < need) cap *= 2;
    cp_entry *e = realloc(cp->e, cap * sizeof *e);
    if (!e) return 0;
    memset(e + cp->cap, 0, (cap - cp->cap) * sizeof *e);
    cp->e = e; cp->cap = cap;
    return 1;
}

static int parse_cp(constant_pool *cp, reader *r, char *err, size_t err_len) {
    uint16_t count = rd_u2(r);
    if (r->bad || count == 0) return fail(err, err_len, "truncated or empty constant pool");
    if (!cp_grow(cp, count + 16u)) return fail(err, err_len, "out of memory");
    cp->count = cp->original_count = count;
    cp->original = r->p;
    for (uint32_t i = 1; i < count; i++) {
        uint8_t tag = rd_u1(r);
        const uint8_t *body = r->p;
        size_t n;
        switch (tag) {
        case CP_UTF8: {
            uint16_t len = rd_u2(r);
            body = r->p;
            if (!rd_skip(r, len)) goto truncated;
            cp->e[i].len = len;
            n = 0;
            break;
        }
        case CP_INTEGER: case CP_FLOAT: case CP_FIELDREF: case CP_METHODREF:
        case CP_INTERFACE_METHODREF: case CP_NAME_AND_TYPE: case CP_DYNAMIC:
        case CP_INVOKE_DYNAMIC: n = 4; break;
        case CP_LONG: case CP_DOUBLE: n = 8; break;
        case CP_CLASS: case CP_STRING: case CP_METHOD_TYPE: case CP_MODULE: case CP_PACKAGE: n = 2; break;
        case CP_METHOD_HANDLE: n = 3; break;
        default:
            if (r->bad) goto truncated;
            return fail(err, err_len, "constant pool entry %u has unknown tag %u", i, tag);
        }
        if (n && !rd_skip(r, n)) goto truncated;
        cp->e[i].tag = tag;
        cp->e[i].data = body;
        if (tag == CP_LONG || tag == CP_DOUBLE) {
            if (i + 1 >= count) return fail(err, err_len, "constant pool: 8-byte entry %u at the end", i);
            i++;                                   /* the next slot is unusable */
        }
    }
    cp->original_len = (size_t)(r->p - cp->original);
    return 0;
truncated:
    return fail(err, err_len, "truncated constant pool");
}

int cp_tag(const constant_pool *cp, uint32_t index) {
    return index > 0 && index < cp->count ? cp->e[index].tag : 0;
}

const char *cp_utf8(const constant_pool *cp, uint32_t index, uint16_t *len) {
    if (cp_tag(cp, index) != CP_UTF8) return NULL;
    *len = cp->e[index].len;
    return (const char *)cp->e[index].data;
}

const char *cp_class_name(const constant_pool *cp, uint32_t index, uint16_t *len) {
    if (cp_tag(cp, index) != CP_CLASS) return NULL;
    return cp_utf8(cp, be_get_u2(cp->e[index].data), len);
}

int cp_member(const constant_pool *cp, uint32_t index, const char **name, uint16_t *name_len,
              const char **desc, uint16_t *desc_len) {
    int tag = cp_tag(cp, index);
    uint32_t nat;
    switch (tag) {
    case CP_FIELDREF: case CP_METHODREF: case CP_INTERFACE_METHODREF:
    case CP_DYNAMIC: case CP_INVOKE_DYNAMIC:
        nat = be_get_u2(cp->e[index].data + 2); break;
    case CP_NAME_AND_TYPE: nat = index; break;
    default: return -1;
    }
    if (cp_tag(cp, nat) != CP_NAME_AND_TYPE) return -1;
    *name = cp_utf8(cp, be_get_u2(cp->e[nat].data), name_len);
    *desc = cp_utf8(cp, be_get_u2(cp->e[nat].data + 2), desc_len);
    return *name && *desc ? 0 : -1;
}

/* Append one entry: tag + body bytes. `data` for the table must stay valid. */
static uint16_t cp_append(constant_pool *cp, uint8_t tag, const uint8_t *body, size_t n,
                          const uint8_t *stable_data, uint16_t len) {
    if (cp->count >= 0xffff || !cp_grow(cp, cp->count + 1)) return 0;
    wr_u1(&cp->added, tag);
    if (tag == CP_UTF8) wr_u2(&cp->added, len);
    wr_bytes(&cp->added, body, n);
    if (cp->added.failed) return 0;
    uint16_t index = (uint16_t)cp->count++;
    cp->e[index].tag = tag;
    cp->e[index].len = len;
    cp->e[index].data = stable_data;
    return index;
}

/* A heap copy that lives as long as the pool (entries point into it). */
static const uint8_t *cp_keep(constant_pool *cp, const void *p, size_t n) {
    char **owned = realloc(cp->owned, (cp->n_owned + 1) * sizeof *owned);
    if (!owned) return NULL;
    cp->owned = owned;
    char *copy = malloc(n ? n : 1);
    if (!copy) return NULL;
    memcpy(copy, p, n);
    cp->owned[cp->n_owned++] = copy;
    return (const uint8_t *)copy;
}

uint16_t cp_utf8_index(constant_pool *cp, const char *s, uint16_t len) {
    for (uint32_t i = 1; i < cp->count; i++)
        if (cp->e[i].tag == CP_UTF8 && cp->e[i].len == len && memcmp(cp->e[i].data, s, len) == 0)
            return (uint16_t)i;
    const uint8_t *copy = cp_keep(cp, s, len);
    return copy ? cp_append(cp, CP_UTF8, (const uint8_t *)s, len, copy, len) : 0;
}

/* Entries whose body is fixed-size bytes: find an identical one or append. */
static uint16_t cp_fixed_index(constant_pool *cp, uint8_t tag, const uint8_t *body, size_t n) {
    for (uint32_t i = 1; i < cp->count; i++)
        if (cp->e[i].tag == tag && memcmp(cp->e[i].data, body, n) == 0) return (uint16_t)i;
    const uint8_t *copy = cp_keep(cp, body, n);
    return copy ? cp_append(cp, tag, body, n, copy, 0) : 0;
}

uint16_t cp_class_index(constant_pool *cp, const char *name, uint16_t len) {
    uint16_t u = cp_utf8_index(cp, name, len);
    if (!u) return 0;
    uint8_t body[2]; be_put_u2(body, u);
    return cp_fixed_index(cp, CP_CLASS, body, 2);
}

uint16_t cp_methodref_index(constant_pool *cp, const char *cls, const char *name, const char *desc) {
    uint16_t c = cp_class_index(cp, cls, (uint16_t)strlen(cls));
    uint16_t n = cp_utf8_index(cp, name, (uint16_t)strlen(name));
    uint16_t d = cp_utf8_index(cp, desc, (uint16_t)strlen(desc));
    if (!c || !n || !d) return 0;
    uint8_t nat[4]; be_put_u2(nat, n); be_put_u2(nat + 2, d);
    uint16_t nt = cp_fixed_index(cp, CP_NAME_AND_TYPE, nat, 4);
    if (!nt) return 0;
    uint8_t ref[4]; be_put_u2(ref, c); be_put_u2(ref + 2, nt);
    return cp_fixed_index(cp, CP_METHODREF, ref, 4);
}

uint16_t cp_integer_append(constant_pool *cp, int32_t value) {
    uint8_t body[4]; be_put_u4(body, (uint32_t)value);
    const uint8_t *copy = cp_keep(cp, body, 4);
    return copy ? cp_append(cp, CP_INTEGER, body, 4, copy, 0) : 0;
}

/* Skip attributes; return the Code attribute if `code` is not NULL. */
static int skip_attributes(reader *r, const constant_pool *cp, const uint8_t **code, uint32_t *code_len) {
    uint16_t n = rd_u2(r);
    for (uint16_t i = 0; i < n && !r->bad; i++) {
        const uint8_t *at = r->p;
        uint16_t name = rd_u2(r);
        uint32_t len = rd_u4(r);
        if (!rd_skip(r, len)) return -1;
        uint16_t nl;
        const char *s = cp_utf8(cp, name, &nl);
        if (!s) return -2;
        if (code && nl == 4 && memcmp(s, "Code", 4) == 0) {
            if (*code) return -3;
            *code = at; *code_len = len + 6;
        }
    }
    return r->bad ? -1 : 0;
}

int classfile_parse(classfile *cf, const uint8_t *in, size_t len, char *err, size_t err_len) {
    memset(cf, 0, sizeof *cf);
    reader r = { in, in + len, 0 };
    if (rd_u4(&r) != 0xCAFEBABEu) return fail(err, err_len, "not a class file (bad magic)");
    cf->minor = rd_u2(&r);
    cf->major = rd_u2(&r);
    if (r.bad) return fail(err, err_len, "truncated header");
    if (cf->major < 45 || cf->major > 69)
        return fail(err, err_len, "class file version %u.%u is not supported (45 to 69 are)", cf->major, cf->minor);
    if (parse_cp(&cf->cp, &r, err, err_len) < 0) return -1;
    cf->middle = r.p;
    cf->access = rd_u2(&r);
    cf->this_class = rd_u2(&r);
    cf->super_class = rd_u2(&r);
    cf->this_name = cp_class_name(&cf->cp, cf->this_class, &cf->this_name_len);
    if (r.bad || !cf->this_name) return fail(err, err_len, "bad this_class");
    /* Modified UTF-8 has no zero byte (NUL is C0 80): a name with one is malformed. */
    if (cf->this_name_len == 0 || memchr(cf->this_name, 0, cf->this_name_len))
        return fail(err, err_len, "bad this_class name");
    if (cf->super_class && !cp_class_name(&cf->cp, cf->super_class, &(uint16_t){0}))
        return fail(err, err_len, "bad super_class");
    uint16_t n_ifaces = rd_u2(&r);
    if (!rd_skip(&r, 2u * n_ifaces)) return fail(err, err_len, "truncated interfaces");
    uint16_t n_fields = rd_u2(&r);
    for (uint16_t i = 0; i < n_fields; i++) {
        rd_skip(&r, 6);
        if (r.bad || skip_attributes(&r, &cf->cp, NULL, NULL) < 0)
            return fail(err, err_len, "bad field %u", i);
    }
    cf->middle_end = r.p;
    cf->methods_count = rd_u2(&r);
    if (r.bad) return fail(err, err_len, "truncated methods");
    cf->methods = calloc(cf->methods_count ? cf->methods_count : 1, sizeof *cf->methods);
    if (!cf->methods) return fail(err, err_len, "out of memory");
    for (uint16_t i = 0; i < cf->methods_count; i++) {
        method_info *m = &cf->methods[i];
        m->start = r.p;
        m->access = rd_u2(&r);
        m->name_index = rd_u2(&r);
        m->descriptor_index = rd_u2(&r);
        uint16_t l;
        if (r.bad || !cp_utf8(&cf->cp, m->name_index, &l) || !cp_utf8(&cf->cp, m->descriptor_index, &l))
            return fail(err, err_len, "bad method %u", i);
        int rc = skip_attributes(&r, &cf->cp, &m->code_attr, &m->code_attr_len);
        if (rc < 0)
            return fail(err, err_len, rc == -3 ? "method %u has two Code attributes" : "bad attributes in method %u", i);
        m->end = r.p;
    }
    cf->tail = r.p;
    if (skip_attributes(&r, &cf->cp, NULL, NULL) < 0) return fail(err, err_len, "bad class attributes");
    cf->tail_end = r.p;
    if (r.p != r.end) return fail(err, err_len, "%zu bytes of garbage after the class", (size_t)(r.end - r.p));
    return 0;
}

void classfile_free(classfile *cf) {
    for (uint32_t i = 0; i < cf->cp.n_owned; i++) free(cf->cp.owned[i]);
    free(cf->cp.owned);
    free(cf->cp.e);
    free(cf->cp.added.data);
    free(cf->methods);
    memset(cf, 0, sizeof *cf);
}
