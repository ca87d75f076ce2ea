/* jfr_reader.c: see jfr_reader.h. */
#include "jfr_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reader/hprof_data.h"      /* hd_map_*: 64-bit keys to positions */
#include "../reader/string_store.h"

#define HEADER_SIZE       68
#define TYPE_METADATA     0
#define TYPE_CHECKPOINT   1
#define MAX_NESTING       32            /* struct in struct, metadata elements */
#define MAX_STEPS         (1u << 20)    /* values skipped by one access: a bound on hostile metadata */

/* How a type's values are encoded. */
enum kind { K_STRUCT, K_BOOLEAN, K_BYTE, K_CHAR, K_SHORT, K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_STRING };

typedef struct field_desc {
    const char *name;
    uint64_t    type_id;
    uint32_t    type;          /* index in the chunk's types, set once all are read */
    uint8_t     pooled, array;
} field_desc;

typedef struct type_desc {
    const char *name;
    uint64_t    id;
    enum kind   kind;
    field_desc *fields;
    uint32_t    nfields, fields_cap;
    hd_index   *pool;          /* key -> offset of the entry's value */
} type_desc;

typedef struct reading {
    const char          *path;
    const unsigned char *bytes;
    size_t               len;
    char                *err;
    size_t               errlen;
} reading;

struct jfr_chunk {
    reading        *r;
    jfr_chunk_info  info;
    size_t          end;             /* the chunk's end in the file */
    int             compressed;      /* integers are LEB128-compressed */
    type_desc      *types;
    uint32_t        ntypes, types_cap;
    hd_index       *type_index;      /* type id -> index */
    uint32_t        string_type;     /* index of java.lang.String, UINT32_MAX if none */
    string_store   *strings;
    uint32_t        steps;           /* values skipped by the current access */
};

int jfr_fail(jfr_chunk *c, size_t at, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->r->err, c->r->errlen, "%s: offset %zu (0x%zx): %s", c->r->path, at, at, what);
    return -1;
}

int64_t jfr_ticks_to_nanos(const jfr_chunk_info *c, int64_t ticks)
{
    if (c->ticks_per_second <= 0 || ticks <= 0)
        return 0;
    if (c->ticks_per_second == 1000000000)
        return ticks;
    long double ns = (long double)ticks * 1e9L / (long double)c->ticks_per_second;
    return ns >= 9.2e18L ? INT64_MAX : (int64_t)ns;      /* (a damaged file's ticks) */
}

/* ------------------------------------------------------------ primitives */

static int truncated(jfr_chunk *c, size_t at, const char *what)
{
    return jfr_fail(c, at, "%s runs past the end of its event or chunk (the recording is truncated "
                    "or damaged)", what);
}

static uint64_t big_endian(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* An integer of `width` bytes when not compressed; LEB128 (at most 9 bytes,
 * the 9th holding 8 bits) when compressed. */
static int read_int(jfr_chunk *c, size_t *at, size_t end, unsigned width, uint64_t *out)
{
    if (!c->compressed) {
        if (*at > end || end - *at < width)
            return truncated(c, *at, "an integer");
        *out = big_endian(c->r->bytes + *at, width);
        *at += width;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < 9; i++) {
        if (*at >= end)
            return truncated(c, *at, "a compressed integer");
        unsigned char b = c->r->bytes[(*at)++];
        if (i == 8) {
            v |= (uint64_t)b << 56;
            break;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            break;
    }
    *out = v;
    return 0;
}

static int read_u8(jfr_chunk *c, size_t *at, size_t end, unsigned char *out)
{
    if (*at >= end)
        return truncated(c, *at, "a byte");
    *out = c->r->bytes[(*at)++];
    return 0;
}

static int skip_bytes(jfr_chunk *c, size_t *at, size_t end, uint64_t n, const char *what)
{
    if (*at > end || end - *at < n)
        return truncated(c, *at, what);
    *at += (size_t)n;
    return 0;
}

/* A 32-bit count no bigger than the bytes left (each counted item takes at least one). */
static int read_count(jfr_chunk *c, size_t *at, size_t end, uint64_t *out, const char *what)
{
    size_t was = *at;
    if (read_int(c, at, end, 4, out) != 0)
        return -1;
    if (*out > end - *at)
        return jfr_fail(c, was, "%s: a count of %llu, more than the %zu bytes left", what,
                        (unsigned long long)*out, end - *at);
    return 0;
}

/* String encodings: 0 null, 1 "", 2 constant pool key, 3 UTF-8, 4 char array, 5 Latin-1. */
static int append_utf8(char *buf, size_t size, size_t *n, uint32_t ch)
{
    unsigned char tmp[4];
    unsigned k;
    if (ch < 0x80) {
        tmp[0] = (unsigned char)ch;
        k = 1;
    } else if (ch < 0x800) {
        tmp[0] = (unsigned char)(0xc0 | ch >> 6);
        tmp[1] = (unsigned char)(0x80 | (ch & 0x3f));
        k = 2;
    } else {
        tmp[0] = (unsigned char)(0xe0 | ch >> 12);
        tmp[1] = (unsigned char)(0x80 | (ch >> 6 & 0x3f));
        tmp[2] = (unsigned char)(0x80 | (ch & 0x3f));
        k = 3;
    }
    if (*n + k >= size)
        return -1;
    memcpy(buf + *n, tmp, k);
    *n += k;
    return 0;
}

static int pool_lookup(jfr_chunk *c, uint32_t type, uint64_t key, size_t *at);

/* Reads (buf != NULL) or skips a string at *at. 1 when null. */
static int read_string(jfr_chunk *c, size_t *at, size_t end, char *buf, size_t size, int depth)
{
    size_t n = 0, was = *at;
    unsigned char enc = 0;
    if (buf && size)
        buf[0] = '\0';
    if (read_u8(c, at, end, &enc) != 0)
        return -1;
    switch (enc) {
    case 0:
        return 1;
    case 1:
        return 0;
    case 2: {
        uint64_t key;
        size_t entry;
        if (read_int(c, at, end, 8, &key) != 0)
            return -1;
        if (buf == NULL)
            return 0;
        if (depth > 2 || c->string_type >= c->ntypes || pool_lookup(c, c->string_type, key, &entry) != 0)
            return jfr_fail(c, was, "a string names constant %llu, which no java.lang.String pool holds",
                            (unsigned long long)key);
        return read_string(c, &entry, c->end, buf, size, depth + 1);
    }
    case 3:
    case 5: {
        uint64_t len;
        if (read_count(c, at, end, &len, "a string") != 0)
            return -1;
        const unsigned char *p = c->r->bytes + *at;
        *at += (size_t)len;
        if (buf == NULL || size == 0)
            return 0;
        for (uint64_t i = 0; i < len; i++) {
            if (enc == 3) {                  /* UTF-8: copied as is, cut at a whole byte */
                if (n + 1 >= size)
                    break;
                buf[n++] = (char)p[i];
            } else if (append_utf8(buf, size, &n, p[i]) != 0) {
                break;
            }
        }
        buf[n] = '\0';
        return 0;
    }
    case 4: {
        uint64_t len;
        if (read_count(c, at, end, &len, "a string") != 0)
            return -1;
        int full = 0;
        for (uint64_t i = 0; i < len; i++) {
            uint64_t ch;
            if (read_int(c, at, end, 2, &ch) != 0)
                return -1;
            if (buf && size && !full)
                full = append_utf8(buf, size, &n, (uint32_t)(ch & 0xffff)) != 0;
        }
        if (buf && size)
            buf[n] = '\0';
        return 0;
    }
    default:
        return jfr_fail(c, was, "a string of unknown encoding %u (known: 0-5)", enc);
    }
}

/* ------------------------------------------------------------ values */

static unsigned kind_width(enum kind k)
{
    switch (k) {
    case K_BOOLEAN: case K_BYTE: return 1;
    case K_CHAR: case K_SHORT: return 2;
    case K_INT: case K_FLOAT: return 4;
    default: return 8;
    }
}

static int skip_value(jfr_chunk *c, uint32_t type, size_t *at, size_t end, int depth);

/* A field's value (an array of, a pool key of, or an inline value of its type). */
static int skip_field(jfr_chunk *c, const field_desc *f, size_t *at, size_t end, int depth)
{
    uint64_t n = 1, key;
    if (f->array && read_count(c, at, end, &n, "an array") != 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (++c->steps > MAX_STEPS)
            return jfr_fail(c, *at, "a value too large or too deeply nested to read");
        int rc = f->pooled ? read_int(c, at, end, 8, &key) : skip_value(c, f->type, at, end, depth + 1);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int skip_value(jfr_chunk *c, uint32_t type, size_t *at, size_t end, int depth)
{
    const type_desc *t = &c->types[type];
    uint64_t ignored;
    if (depth > MAX_NESTING)
        return jfr_fail(c, *at, "values of %s nest more than %d deep", t->name, MAX_NESTING);
    switch (t->kind) {
    case K_BOOLEAN: case K_BYTE:
        return skip_bytes(c, at, end, 1, t->name);
    case K_FLOAT: case K_DOUBLE:
        return skip_bytes(c, at, end, kind_width(t->kind), t->name);
    case K_CHAR: case K_SHORT: case K_INT: case K_LONG:
        return read_int(c, at, end, kind_width(t->kind), &ignored);
    case K_STRING:
        return read_string(c, at, end, NULL, 0, 0) < 0 ? -1 : 0;
    case K_STRUCT:
        break;
    }
    for (uint32_t i = 0; i < t->nfields; i++)
        if (skip_field(c, &t->fields[i], at, end, depth) != 0)
            return -1;
    return 0;
}

static int pool_lookup(jfr_chunk *c, uint32_t type, uint64_t key, size_t *at)
{
    uint32_t pos;
    if (hd_map_get(c->types[type].pool, key, &pos) != 0)
        return 1;
    *at = pos;
    return 0;
}

static void null_value(jfr_value *out, jfr_chunk *c, uint32_t type)
{
    memset(out, 0, sizeof *out);
    out->chunk = c;
    out->type = type;
    out->null = 1;
}

/* A pooled value by key: its entry (which lies in a checkpoint: bounded by the chunk). */
static int resolve(jfr_chunk *c, uint32_t type, uint64_t key, jfr_value *out)
{
    size_t entry;
    if (pool_lookup(c, type, key, &entry) != 0) {
        null_value(out, c, type);
        return 1;
    }
    memset(out, 0, sizeof *out);
    out->chunk = c;
    out->type = type;
    out->at = entry;
    out->end = c->end;
    return 0;
}

int jfr_field(const jfr_value *value, const char *name, jfr_value *out)
{
    const jfr_value copy = *value, *v = &copy;     /* out may be value */
    jfr_chunk *c = v->chunk;
    if (v->null || v->array || c->types[v->type].kind != K_STRUCT) {
        null_value(out, c, v->type);
        return 1;
    }
    const type_desc *t = &c->types[v->type];
    size_t at = v->at;
    c->steps = 0;
    for (uint32_t i = 0; i < t->nfields; i++) {
        const field_desc *f = &t->fields[i];
        if (strcmp(f->name, name) != 0) {
            if (skip_field(c, f, &at, v->end, 0) != 0)
                return -1;
            continue;
        }
        if (f->pooled && !f->array) {
            uint64_t key;
            if (read_int(c, &at, v->end, 8, &key) != 0)
                return -1;
            return resolve(c, f->type, key, out);
        }
        memset(out, 0, sizeof *out);
        out->chunk = c;
        out->type = f->type;
        out->array = f->array;
        out->pooled = f->pooled;
        out->at = at;
        out->end = v->end;
        return 0;
    }
    null_value(out, c, v->type);
    return 1;
}

int jfr_path(const jfr_value *v, jfr_value *out, ...)
{
    va_list ap;
    va_start(ap, out);
    jfr_value cur = *v;
    int rc = 0;
    for (const char *name; rc == 0 && (name = va_arg(ap, const char *)) != NULL;)
        rc = jfr_field(&cur, name, &cur);
    va_end(ap);
    *out = cur;
    return rc;
}

int jfr_long(const jfr_value *v, int64_t *out)
{
    jfr_chunk *c = v->chunk;
    *out = 0;
    if (v->null || v->array)
        return 1;
    enum kind k = c->types[v->type].kind;
    size_t at = v->at;
    uint64_t u;
    switch (k) {
    case K_BOOLEAN: case K_BYTE: {
        unsigned char b = 0;
        if (read_u8(c, &at, v->end, &b) != 0)
            return -1;
        *out = k == K_BYTE ? (int8_t)b : b;
        return 0;
    }
    case K_CHAR: case K_SHORT: case K_INT: case K_LONG:
        if (read_int(c, &at, v->end, kind_width(k), &u) != 0)
            return -1;
        /* Signed types come back two's complement in their width. */
        *out = k == K_INT ? (int32_t)(uint32_t)u : k == K_SHORT ? (int16_t)(uint16_t)u
             : k == K_CHAR ? (int64_t)(uint16_t)u : (int64_t)u;
        return 0;
    default:
        return 1;
    }
}

int jfr_string(const jfr_value *v, char *buf, size_t size)
{
    jfr_chunk *c = v->chunk;
    if (size)
        buf[0] = '\0';
    if (v->null || v->array)
        return 1;
    const type_desc *t = &c->types[v->type];
    if (t->kind == K_STRING) {
        size_t at = v->at;
        return read_string(c, &at, v->end, buf, size, 0);
    }
    for (uint32_t i = 0; t->kind == K_STRUCT && i < t->nfields; i++)
        if (c->types[t->fields[i].type].kind == K_STRING && !t->fields[i].array && !t->fields[i].pooled) {
            jfr_value s;
            int rc = jfr_field(v, t->fields[i].name, &s);
            return rc != 0 ? rc : jfr_string(&s, buf, size);
        }
    return 1;
}

int jfr_array(const jfr_value *v, uint64_t *count, jfr_value *cursor)
{
    *count = 0;
    *cursor = *v;
    if (v->null || !v->array)
        return 1;
    size_t at = v->at;
    if (read_count(v->chunk, &at, v->end, count, "an array") != 0)
        return -1;
    cursor->at = at;
    return 0;
}

int jfr_array_next(jfr_value *cursor, jfr_value *elem)
{
    jfr_chunk *c = cursor->chunk;
    size_t at = cursor->at;
    if (cursor->pooled) {
        uint64_t key;
        if (read_int(c, &at, cursor->end, 8, &key) != 0)
            return -1;
        cursor->at = at;
        return resolve(c, cursor->type, key, elem);
    }
    c->steps = 0;
    if (skip_value(c, cursor->type, &at, cursor->end, 0) != 0)
        return -1;
    *elem = *cursor;
    elem->array = 0;
    cursor->at = at;
    return 0;
}

const char *jfr_type_name(const jfr_value *v)
{
    return v->chunk->types[v->type].name;
}

/* ------------------------------------------------------------ metadata */

typedef struct metadata_reader {
    jfr_chunk   *c;
    size_t       end;
    const char **strings;
    uint64_t     nstrings;
} metadata_reader;

static int metadata_string(metadata_reader *m, size_t *at, const char **out)
{
    uint64_t i;
    size_t was = *at;
    if (read_int(m->c, at, m->end, 4, &i) != 0)
        return -1;
    if (i >= m->nstrings)
        return jfr_fail(m->c, was, "the metadata names string %llu of %llu", (unsigned long long)i,
                        (unsigned long long)m->nstrings);
    *out = m->strings[i];
    return 0;
}

static enum kind kind_of(const char *name)
{
    static const struct { const char *name; enum kind kind; } prims[] = {
        { "boolean", K_BOOLEAN }, { "byte", K_BYTE }, { "char", K_CHAR }, { "short", K_SHORT },
        { "int", K_INT }, { "long", K_LONG }, { "float", K_FLOAT }, { "double", K_DOUBLE },
        { "java.lang.String", K_STRING },
    };
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (strcmp(name, prims[i].name) == 0)
            return prims[i].kind;
    return K_STRUCT;
}

static int parse_id(const char *s, uint64_t *out)
{
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    *out = strtoull(s, &end, 10);
    return *end == '\0' ? 0 : -1;
}

/* One element and its children: "class" elements become types, their
 * "field" children fields; every other element (annotations, settings,
 * the region) is read past. `in_class` is the index + 1 of the type whose
 * element encloses this one. */
static int parse_element(metadata_reader *m, size_t *at, int depth, uint32_t in_class)
{
    jfr_chunk *c = m->c;
    size_t was = *at;
    const char *name;
    uint64_t nattrs, nchildren;
    if (depth > MAX_NESTING)
        return jfr_fail(c, was, "metadata elements nest more than %d deep", MAX_NESTING);
    if (metadata_string(m, at, &name) != 0 || read_count(c, at, m->end, &nattrs, "metadata attributes") != 0)
        return -1;
    const char *a_name = NULL, *a_id = NULL, *a_class = NULL, *a_pool = NULL, *a_dim = NULL;
    for (uint64_t i = 0; i < nattrs; i++) {
        const char *k, *v;
        if (metadata_string(m, at, &k) != 0 || metadata_string(m, at, &v) != 0)
            return -1;
        if (strcmp(k, "name") == 0) a_name = v;
        else if (strcmp(k, "id") == 0) a_id = v;
        else if (strcmp(k, "class") == 0) a_class = v;
        else if (strcmp(k, "constantPool") == 0) a_pool = v;
        else if (strcmp(k, "dimension") == 0) a_dim = v;
    }
    uint32_t children_class = 0;
    if (strcmp(name, "class") == 0) {
        type_desc t = { 0 };
        if (a_name == NULL || parse_id(a_id, &t.id) != 0)
            return jfr_fail(c, was, "a metadata class without a name or a numeric id");
        t.name = a_name;
        t.kind = kind_of(a_name);
        uint32_t ignored;
        if (hd_map_get(c->type_index, t.id, &ignored) == 0)
            return jfr_fail(c, was, "the metadata declares type id %llu twice", (unsigned long long)t.id);
        if (hd_map_put(&c->type_index, t.id, c->ntypes) != 0 ||
            hd_push((void **)&c->types, &c->ntypes, &c->types_cap, sizeof t, &t) != 0)
            return jfr_fail(c, was, "out of memory");
        children_class = c->ntypes;
    } else if (strcmp(name, "field") == 0 && in_class) {
        field_desc f = { 0 };
        if (a_name == NULL || parse_id(a_class, &f.type_id) != 0)
            return jfr_fail(c, was, "a metadata field without a name or a numeric class");
        f.name = a_name;
        f.pooled = a_pool && strcmp(a_pool, "true") == 0;
        if (a_dim && strcmp(a_dim, "0") != 0) {
            if (strcmp(a_dim, "1") != 0)
                return jfr_fail(c, was, "field %s has dimension %s (JFR writes 0 or 1)", a_name, a_dim);
            f.array = 1;
        }
        type_desc *t = &c->types[in_class - 1];
        if (hd_push((void **)&t->fields, &t->nfields, &t->fields_cap, sizeof f, &f) != 0)
            return jfr_fail(c, was, "out of memory");
    }
    if (read_count(c, at, m->end, &nchildren, "metadata elements") != 0)
        return -1;
    for (uint64_t i = 0; i < nchildren; i++)
        if (parse_element(m, at, depth + 1, children_class) != 0)
            return -1;
    return 0;
}

/* Reads an event's size and type id at *at; *at moves past them, *end is the event's end. */
static int event_header(jfr_chunk *c, size_t *at, size_t *end, uint64_t *type)
{
    size_t start = *at;
    uint64_t size;
    if (read_int(c, at, c->end, 4, &size) != 0)
        return -1;
    if (size > c->end - start || start + size <= *at)
        return jfr_fail(c, start, "an event of %llu bytes where the chunk has %zu left", (unsigned long long)size,
                        c->end - start);
    *end = start + (size_t)size;
    return read_int(c, at, *end, 8, type);
}

static int read_metadata(jfr_chunk *c, size_t at)
{
    metadata_reader m = { c, 0, NULL, 0 };
    uint64_t type, skip;
    size_t start = at;
    if (event_header(c, &at, &m.end, &type) != 0)
        return -1;
    if (type != TYPE_METADATA)
        return jfr_fail(c, start, "the chunk header's metadata offset points at an event of type %llu, not 0",
                        (unsigned long long)type);
    for (int i = 0; i < 3; i++)              /* start time, duration, metadata id */
        if (read_int(c, &at, m.end, 8, &skip) != 0)
            return -1;
    if (read_count(c, &at, m.end, &m.nstrings, "metadata strings") != 0)
        return -1;
    m.strings = calloc(m.nstrings ? (size_t)m.nstrings : 1, sizeof *m.strings);
    if (m.strings == NULL)
        return jfr_fail(c, at, "out of memory");
    int rc = 0;
    char *buf = malloc(65536);
    for (uint64_t i = 0; rc == 0 && i < m.nstrings; i++) {
        if (buf == NULL) {
            rc = jfr_fail(c, at, "out of memory");
            break;
        }
        rc = read_string(c, &at, m.end, buf, 65536, 0) < 0 ? -1 : 0;
        if (rc == 0 && (m.strings[i] = string_store_add(c->strings, buf, strlen(buf))) == NULL)
            rc = jfr_fail(c, at, "out of memory");
    }
    free(buf);
    if (rc == 0)
        rc = parse_element(&m, &at, 0, 0);
    free(m.strings);
    if (rc != 0)
        return -1;
    /* Fields name their types by id: now every type is known. */
    c->string_type = UINT32_MAX;
    for (uint32_t i = 0; i < c->ntypes; i++) {
        type_desc *t = &c->types[i];
        if (t->kind == K_STRING)
            c->string_type = i;
        for (uint32_t k = 0; k < t->nfields; k++)
            if (hd_map_get(c->type_index, t->fields[k].type_id, &t->fields[k].type) != 0)
                return jfr_fail(c, start, "field %s of %s has type id %llu, which the metadata does not declare",
                                t->fields[k].name, t->name, (unsigned long long)t->fields[k].type_id);
    }
    return 0;
}

/* ------------------------------------------------------------ checkpoints */

static int read_checkpoint(jfr_chunk *c, size_t at, size_t end)
{
    uint64_t skip, npools;
    unsigned char kind = 0;
    for (int i = 0; i < 3; i++)              /* start time, duration, delta to the previous checkpoint */
        if (read_int(c, &at, end, 8, &skip) != 0)
            return -1;
    if (read_u8(c, &at, end, &kind) != 0 || read_count(c, &at, end, &npools, "constant pools") != 0)
        return -1;
    for (uint64_t p = 0; p < npools; p++) {
        uint64_t type_id, count;
        uint32_t type;
        size_t was = at;
        if (read_int(c, &at, end, 8, &type_id) != 0 || read_count(c, &at, end, &count, "a constant pool") != 0)
            return -1;
        if (hd_map_get(c->type_index, type_id, &type) != 0)
            return jfr_fail(c, was, "a constant pool of type id %llu, which the metadata does not declare",
                            (unsigned long long)type_id);
        for (uint64_t i = 0; i < count; i++) {
            uint64_t key;
            if (read_int(c, &at, end, 8, &key) != 0)
                return -1;
            if (at >= UINT32_MAX || hd_map_put(&c->types[type].pool, key, (uint32_t)at) != 0)
                return jfr_fail(c, at, "out of memory (or a chunk beyond 4 GiB)");
            c->steps = 0;
            if (skip_value(c, type, &at, end, 0) != 0)
                return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ chunks */

static void chunk_clear(jfr_chunk *c)
{
    for (uint32_t i = 0; i < c->ntypes; i++) {
        free(c->types[i].fields);
        hd_map_free(c->types[i].pool);
    }
    free(c->types);
    hd_map_free(c->type_index);
    string_store_free(c->strings);
    reading *r = c->r;
    memset(c, 0, sizeof *c);
    c->r = r;
    c->string_type = UINT32_MAX;     /* none until the metadata names java.lang.String */
}

static int read_chunk_header(jfr_chunk *c, size_t at, uint32_t index)
{
    const unsigned char *b = c->r->bytes + at;
    size_t left = c->r->len - at;
    c->end = c->r->len;
    if (left < HEADER_SIZE)
        return jfr_fail(c, at, "a chunk header of %zu bytes, want %d (the recording is truncated)", left,
                        HEADER_SIZE);
    if (memcmp(b, "FLR", 4) != 0)
        return jfr_fail(c, at, "no chunk starts here (want the magic \"FLR\\0\")");
    c->info.index = index;
    c->info.offset = at;
    c->info.major = (uint16_t)big_endian(b + 4, 2);
    c->info.minor = (uint16_t)big_endian(b + 6, 2);
    if (c->info.major != 2)
        return jfr_fail(c, at, "JFR format version %u.%u; this reader reads 2.x (JDK 11 and later)",
                        c->info.major, c->info.minor);
    uint64_t size = big_endian(b + 8, 8), pools = big_endian(b + 16, 8), meta = big_endian(b + 24, 8);
    c->info.start_nanos = (int64_t)big_endian(b + 32, 8);
    c->info.duration_nanos = (int64_t)big_endian(b + 40, 8);
    c->info.start_ticks = (int64_t)big_endian(b + 48, 8);
    c->info.ticks_per_second = (int64_t)big_endian(b + 56, 8);
    c->compressed = b[67] & 1;
    if (size == 0)
        return jfr_fail(c, at, "a chunk still being written (size 0): dump a finished recording "
                        "(jcmd PID JFR.dump) and read that");
    if (size < HEADER_SIZE || size > left)
        return jfr_fail(c, at, "a chunk of %llu bytes where the file has %zu left (the recording is truncated)",
                        (unsigned long long)size, left);
    c->end = at + (size_t)size;
    if (meta < HEADER_SIZE || meta >= size || pools >= size)
        return jfr_fail(c, at, "the chunk header's metadata offset %llu or constant pool offset %llu is "
                        "outside its %llu bytes", (unsigned long long)meta, (unsigned long long)pools,
                        (unsigned long long)size);
    if ((c->strings = string_store_new()) == NULL)
        return jfr_fail(c, at, "out of memory");
    return read_metadata(c, at + (size_t)meta);
}

/* Every event of the chunk in file order; checkpoints (pass 0) or the others (pass 1). */
static int walk_events(jfr_chunk *c, int pass, const jfr_callbacks *cb, void *ctx)
{
    size_t at = c->info.offset + HEADER_SIZE;
    while (at < c->end) {
        size_t start = at, end;
        uint64_t type_id;
        if (event_header(c, &at, &end, &type_id) != 0)
            return -1;
        if (pass == 0 && type_id == TYPE_CHECKPOINT) {
            if (read_checkpoint(c, at, end) != 0)
                return -1;
        } else if (pass == 1 && type_id > TYPE_CHECKPOINT && cb->event) {
            uint32_t type;
            if (hd_map_get(c->type_index, type_id, &type) == 0) {
                jfr_event e = { c->types[type].name, type_id, &c->info, start,
                                { c, type, 0, 0, 0, at, end } };
                int rc = cb->event(ctx, &e);
                if (rc != 0)
                    return rc;
            }
        }
        at = end;
    }
    return 0;
}

int jfr_read(const char *path, const unsigned char *bytes, size_t len, const jfr_callbacks *cb,
             void *ctx, char *err, size_t errlen)
{
    reading r = { path, bytes, len, err, errlen };
    jfr_chunk c;
    memset(&c, 0, sizeof c);
    c.r = &r;
    c.string_type = UINT32_MAX;
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < len; at = c.end) {
        uint32_t index = c.info.index + (at > 0);
        chunk_clear(&c);
        rc = read_chunk_header(&c, at, index);
        if (rc == 0)
            rc = walk_events(&c, 0, cb, ctx);
        if (rc == 0 && cb->chunk)
            rc = cb->chunk(ctx, &c.info);
        if (rc == 0)
            rc = walk_events(&c, 1, cb, ctx);
    }
    if (len == 0)
        rc = jfr_fail(&c, 0, "an empty file");
    chunk_clear(&c);
    return rc;
}
