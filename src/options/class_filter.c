/* class_filter.c: see class_filter.h. */
#include "class_filter.h"
#include "option_error.h"

#include <stdio.h>
#include <string.h>

/* Characters of a class name as the JVM allows them in a binary name we
 * accept here: letters, digits, '_', '$', '.', and any byte of a non-ASCII
 * letter (class names may be Unicode, the option's bytes are UTF-8). */
static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.' || c >= 0x80;
}

int class_filter_parse(const char *option, const char *text, class_filter *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t total = text ? strlen(text) : 0;
    if (total == 0) {
        set_err(err, errlen, "hprof: option '%s=' needs class names, e.g. %s=java.*:com.example.Parser "
                "(':' between them; a trailing '*' matches every name that begins so)", option, option);
        return -1;
    }
    if (total >= CLASS_FILTER_TEXT_MAX) {
        set_err(err, errlen, "hprof: option '%s=' is too long (%zu bytes, at most %d): use shorter prefixes "
                "such as java.*", option, total, CLASS_FILTER_TEXT_MAX - 1);
        return -1;
    }
    size_t used = 0;
    const char *p = text;
    for (;;) {
        size_t n = strcspn(p, ":");
        const char *end = p + n;
        if (n == 0) {
            set_err(err, errlen, "hprof: option '%s=' has an empty class name in '%s' (two ':', or one at an "
                    "end)", option, text);
            return -1;
        }
        if (out->n == CLASS_FILTER_MAX) {
            set_err(err, errlen, "hprof: option '%s=' has more than %d class names: use prefixes such as "
                    "com.example.*", option, CLASS_FILTER_MAX);
            return -1;
        }
        int prefix = p[n - 1] == '*';
        size_t body = n - (size_t)prefix;
        for (size_t i = 0; i < body; i++) {
            unsigned char c = (unsigned char)p[i];
            if (!name_char(c) || (c == '.' && (i == 0 || p[i - 1] == '.'))) {
                set_err(err, errlen, "hprof: option '%s=': '%.*s' is not a class name or a prefix ending in "
                        "'*' (e.g. java.* or com.example.Parser); '*' is allowed only at the end",
                        option, (int)n, p);
                return -1;
            }
        }
        if (!prefix && p[body - 1] == '.') {
            set_err(err, errlen, "hprof: option '%s=': '%.*s' ends in '.': add '*' for a package and what is "
                    "in it (e.g. %.*s*)", option, (int)n, p, (int)n, p);
            return -1;
        }
        /* The internal form: '.' -> '/'. */
        out->start[out->n] = (uint16_t)used;
        out->len[out->n] = (uint16_t)body;
        out->prefix[out->n] = (uint8_t)prefix;
        for (size_t i = 0; i < body; i++)
            out->names[used++] = p[i] == '.' ? '/' : p[i];
        out->n++;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    return 0;
}

int class_filter_which(const class_filter *f, const char *name, size_t len)
{
    for (int i = 0; i < f->n; i++) {
        size_t n = f->len[i];
        if (f->prefix[i] ? len >= n : len == n)
            if (memcmp(name, f->names + f->start[i], n) == 0)
                return i;
    }
    return -1;
}

int class_filter_matches(const class_filter *f, const char *name, size_t len)
{
    return class_filter_which(f, name, len) >= 0;
}

void class_filter_pattern(const class_filter *f, int i, char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t n = 0;
    for (size_t k = 0; k < f->len[i] && n + 1 < size; k++) {
        char c = f->names[f->start[i] + k];
        buf[n++] = c == '/' ? '.' : c;
    }
    if (f->prefix[i] && n + 1 < size)
        buf[n++] = '*';
    buf[n] = '\0';
}

int class_filter_times(const class_filter *include, const class_filter *exclude, const char *name, size_t len,
                       int *include_match, int *exclude_match)
{
    int in = include && include->n ? class_filter_which(include, name, len) : -1;
    int ex = exclude && exclude->n ? class_filter_which(exclude, name, len) : -1;
    if (include_match)
        *include_match = in;
    if (exclude_match)
        *exclude_match = ex;
    return (in >= 0 || !(include && include->n)) && ex < 0;
}
