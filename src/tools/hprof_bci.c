/*
 * hprof-bci: run the class-file rewriter (src/bci) ahead of time over a
 * .class file, a jar/zip or a directory tree, writing the same kind of thing.
 *
 *   hprof-bci [--entry-exit] [--newarray] [--object-init] [--tracker NAME]
 *             [--ids FILE] [--quiet] INPUT OUTPUT
 *
 * Classes that the rewriter rejects are reported and copied unchanged; every
 * other file (or jar entry) is copied byte for byte, except jar signature
 * files, which are dropped because rewritten classes no longer match them.
 * Exit status: 0 all classes rewritten or left unchanged, 1 some class failed,
 * 2 usage error or a fatal I/O / archive error (the partial output file is
 * removed).
 *
 * Method ids come from one counter for the whole run, in the order classes
 * are processed (jar entries in archive order, directories sorted by name).
 * A class that ends up unchanged or failed gives its ids back, so the ids in
 * the output (and in --ids FILE) are dense: 0, 1, 2, ...
 */
#define ZLIB_CONST              /* zlib's next_in is then const */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bci/bci.h"

#define PROG            "hprof-bci"
#define DEFAULT_TRACKER "java/lang/HprofTracker"
/* Largest class we read or inflate. Class files are far smaller in practice;
 * the cap keeps a corrupt size field from turning into a huge allocation. */
#define CLASS_CAP       ((size_t)64 << 20)
#define MAX_DEPTH       256     /* directory nesting */

/* ------------------------------------------------------------ utilities */

typedef struct strbuf {
    char  *p;
    size_t len, cap;
} strbuf;

static struct {
    bci_config    config;
    bool          quiet;
    const char   *ids_path;
    FILE         *ids;
    int32_t       next_id;
    strbuf        pending_ids;  /* --ids lines of the class being rewritten */
    unsigned long rewritten, unchanged, failed;
    char         *temp_path;    /* output being written, removed on early exit */
    mode_t        umask;
} g;

static void msgv(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void msgv(const char *fmt, va_list ap)
{
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    msgv(fmt, ap);
    va_end(ap);
}

/* Fatal error: the atexit handler removes a half-written output file. */
static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    msgv(fmt, ap);
    va_end(ap);
    exit(2);
}

static void remove_temp(void)
{
    if (g.temp_path) {
        (void)unlink(g.temp_path);
        free(g.temp_path);
        g.temp_path = NULL;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fatal("out of memory (allocating %zu bytes)", n);
    return p;
}

static void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        fatal("out of memory (allocating %zu bytes)", n);
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static void sb_reserve(strbuf *b, size_t more)
{
    if (more > SIZE_MAX / 2 - b->len)
        fatal("out of memory (buffer too large)");
    if (b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void sb_append(strbuf *b, const void *data, size_t n)
{
    sb_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        fatal("formatting failed");
    sb_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    int m = vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (m != n)
        fatal("formatting failed");
    b->len += (size_t)n;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static char *path_join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = strlen(name);
    bool slash = d > 0 && dir[d - 1] == '/';
    char *p = xmalloc(d + n + 2);
    memcpy(p, dir, d);
    if (!slash)
        p[d++] = '/';
    memcpy(p + d, name, n + 1);
    return p;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put16(strbuf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    sb_append(b, x, 2);
}
static void put32(strbuf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    sb_append(b, x, 4);
}

/* ------------------------------------------------------------ output files */

/* Output goes to a temporary file next to the target and is renamed into
 * place when complete, so a failed run never leaves a truncated jar/class
 * (and INPUT may equal OUTPUT). */
typedef struct out_file {
    FILE       *f;
    const char *path;       /* final name, for messages */
    uint64_t    off;        /* bytes written so far */
} out_file;

static void out_open(out_file *o, const char *path)
{
    if (g.temp_path)
        fatal("internal error: nested output files");
    size_t n = strlen(path);
    char *tmp = xmalloc(n + sizeof ".hprof-bci-XXXXXX");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".hprof-bci-XXXXXX", sizeof ".hprof-bci-XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0)
        fatal("%s: cannot create output file: %s (check that its directory exists and is writable)",
              path, strerror(errno));
    g.temp_path = tmp;
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        (void)close(fd);
        fatal("%s: cannot write: %s", path, strerror(e));
    }
    o->path = path;
    o->off = 0;
}

static void out_write(out_file *o, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n)
        fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    o->off += n;
}

/* Finishes the output: permission bits `mode`, then rename over the target. */
static void out_commit(out_file *o, mode_t mode)
{
    if (fflush(o->f) != 0 || ferror(o->f))
        fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    if (fchmod(fileno(o->f), mode & 07777) != 0)
        fatal("%s: cannot set permissions: %s", o->path, strerror(errno));
    FILE *f = o->f;
    o->f = NULL;
    if (fclose(f) != 0)
        fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    if (rename(g.temp_path, o->path) != 0)
        fatal("%s: cannot replace it: %s", o->path, strerror(errno));
    free(g.temp_path);
    g.temp_path = NULL;
}

static void write_whole(const char *path, const uint8_t *data, size_t len, mode_t mode)
{
    out_file o;
    out_open(&o, path);
    out_write(&o, data, len);
    out_commit(&o, mode);
}

/* Streams `in_path` to `out_path` (any size, bounded memory). */
static void copy_file(const char *in_path, const char *out_path, mode_t mode)
{
    int fd = open(in_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fatal("%s: cannot read: %s", in_path, strerror(errno));
    out_file o;
    out_open(&o, out_path);
    static uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fatal("%s: read failed: %s", in_path, strerror(errno));
        if (n == 0)
            break;
        out_write(&o, buf, (size_t)n);
    }
    if (close(fd) != 0)
        fatal("%s: read failed: %s", in_path, strerror(errno));
    out_commit(&o, mode);
}

/* Reads a whole file of at most `cap` bytes. Returns false (nothing
 * allocated) if it is larger; fatal if it cannot be read. */
static bool read_capped(const char *path, size_t cap, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fatal("%s: cannot read: %s", path, strerror(errno));
    size_t size = 0, alloc = 1 << 16;
    uint8_t *buf = xmalloc(alloc);
    for (;;) {
        if (size == alloc) {
            if (alloc > cap) {          /* holds cap + 1 bytes: too large */
                free(buf);
                (void)close(fd);
                return false;
            }
            alloc = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
            buf = xrealloc(buf, alloc);
        }
        ssize_t n = read(fd, buf + size, alloc - size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fatal("%s: read failed: %s", path, strerror(errno));
        if (n == 0)
            break;
        size += (size_t)n;
    }
    if (close(fd) != 0)
        fatal("%s: read failed: %s", path, strerror(errno));
    if (size > cap) {
        free(buf);
        return false;
    }
    *data = buf;
    *len = size;
    return true;
}

/* ------------------------------------------------------------ rewriting */

/* bci_method_id_fn: the next id of the run's global counter. The --ids line
 * is held back until we know the class was really rewritten. */
static int32_t next_method_id(void *context, const bci_method_info *m)
{
    (void)context;
    if (g.next_id == INT32_MAX)
        return -1;                      /* out of ids: leave the method alone */
    int32_t id = g.next_id++;
    if (g.ids)
        sb_printf(&g.pending_ids, "%" PRId32 " %s %s %s\n", id,
                  m->class_name ? m->class_name : "?", m->name ? m->name : "?",
                  m->descriptor ? m->descriptor : "?");
    return id;
}

typedef enum { CLASS_REWRITTEN, CLASS_UNCHANGED, CLASS_FAILED } class_outcome;

/* Rewrites one class; `label` names it in messages. On CLASS_REWRITTEN *out
 * holds the new bytes (free with bci_free); otherwise *out is NULL and the
 * caller keeps the original bytes. Counts the outcome. */
static class_outcome rewrite_class(const char *label, const uint8_t *in, size_t len,
                                   uint8_t **out, size_t *out_len)
{
    char err[512] = "";
    int32_t first_id = g.next_id;
    g.pending_ids.len = 0;
    *out = NULL;
    *out_len = 0;
    bci_result r = bci_rewrite(in, len, &g.config, out, out_len, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (r == BCI_OK && *out) {
        if (g.ids && g.pending_ids.len &&
            fwrite(g.pending_ids.p, 1, g.pending_ids.len, g.ids) != g.pending_ids.len)
            fatal("%s: write failed: %s", g.ids_path, strerror(errno));
        g.rewritten++;
        return CLASS_REWRITTEN;
    }
    /* Nothing of this class is instrumented: its ids are free again. */
    g.next_id = first_id;
    if (r == BCI_UNCHANGED) {
        *out = NULL;
        g.unchanged++;
        return CLASS_UNCHANGED;
    }
    if (r == BCI_OK)
        snprintf(err, sizeof err, "rewriter returned no bytes");
    else if (r != BCI_ERROR)
        snprintf(err, sizeof err, "rewriter returned unknown result %d", (int)r);
    else if (!err[0])
        snprintf(err, sizeof err, "rewrite failed (no reason given)");
    msg("%s: %s", label, err);
    *out = NULL;
    g.failed++;
    return CLASS_FAILED;
}

/* ------------------------------------------------------------ .class files */

static void process_class_file(const char *in_path, const char *out_path, const struct stat *st)
{
    uint8_t *data;
    size_t len;
    if (!read_capped(in_path, CLASS_CAP, &data, &len)) {
        msg("%s: larger than the %zu MiB class size limit; copied unchanged", in_path,
            CLASS_CAP >> 20);
        g.failed++;
        copy_file(in_path, out_path, st->st_mode);
        return;
    }
    uint8_t *out;
    size_t out_len;
    if (rewrite_class(in_path, data, len, &out, &out_len) == CLASS_REWRITTEN) {
        write_whole(out_path, out, out_len, st->st_mode);
        bci_free(out);
    } else {
        write_whole(out_path, data, len, st->st_mode);
    }
    free(data);
}

/* ------------------------------------------------------------ directories */

static void mkdir_p(const char *path)
{
    if (!path[0])
        fatal("OUTPUT is an empty path");
    char *p = xstrdup(path);
    for (char *s = p + 1; ; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            fatal("%s: cannot create directory: %s", p, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        fatal("%s: exists and is not a directory; give a directory as OUTPUT", path);
    free(p);
}

/* The directories being walked, outermost first: a directory reached again
 * through a symbolic link is a loop and is skipped. */
typedef struct dir_stack {
    dev_t dev[MAX_DEPTH];
    ino_t ino[MAX_DEPTH];
    int   depth;
} dir_stack;

static void walk(const char *in_dir, const char *out_dir, const struct stat *dir_st,
                 dir_stack *stack)
{
    for (int i = 0; i < stack->depth; i++) {
        if (stack->dev[i] == dir_st->st_dev && stack->ino[i] == dir_st->st_ino) {
            msg("%s: symbolic link loop; skipped", in_dir);
            return;
        }
    }
    if (stack->depth == MAX_DEPTH)
        fatal("%s: directories nested more than %d deep; not supported", in_dir, MAX_DEPTH);
    stack->dev[stack->depth] = dir_st->st_dev;
    stack->ino[stack->depth] = dir_st->st_ino;
    stack->depth++;
    mkdir_p(out_dir);
    /* A sorted snapshot: deterministic method ids, and the temporary files we
     * create while writing (when INPUT is OUTPUT) are not walked. */
    struct dirent **list;
    int n = scandir(in_dir, &list, NULL, alphasort);
    if (n < 0)
        fatal("%s: cannot list directory: %s", in_dir, strerror(errno));
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char *in_path = path_join(in_dir, name), *out_path = path_join(out_dir, name);
        struct stat st;
        if (stat(in_path, &st) != 0)        /* follows symbolic links */
            fatal("%s: cannot read: %s", in_path, strerror(errno));
        if (S_ISDIR(st.st_mode))
            walk(in_path, out_path, &st, stack);
        else if (S_ISREG(st.st_mode) && ends_with(name, strlen(name), ".class"))
            process_class_file(in_path, out_path, &st);
        else if (S_ISREG(st.st_mode))
            copy_file(in_path, out_path, st.st_mode);
        else
            msg("%s: not a regular file or directory; skipped", in_path);
        free(in_path);
        free(out_path);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    stack->depth--;
}

/* ------------------------------------------------------------ jars */

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64L  0x07064b50u     /* zip64 end-of-central-directory locator */
#define ZIP_MAX32   0xffffffffu

enum { FLAG_ENCRYPTED = 1u << 0, FLAG_DESCRIPTOR = 1u << 3, FLAG_STRONG_ENC = 1u << 6,
       FLAG_MASKED_CEN = 1u << 13 };

/* One central-directory record of the input, pointers into the mapped file. */
typedef struct zip_entry {
    uint16_t made_by, needed, flags, method, time, date, int_attr;
    uint32_t crc, csize, usize, ext_attr;
    char    *name;                          /* NUL-terminated copy */
    size_t   name_len;
    const uint8_t *extra, *comment, *local_extra, *data;
    uint16_t extra_len, comment_len, local_extra_len;
} zip_entry;

typedef struct zip_writer {
    out_file out;
    strbuf   cen;           /* central directory, written at the end */
    strbuf   scratch;
    unsigned long count;
} zip_writer;

/* Extra fields minus zip64 blocks (id 1): we only write 32-bit sizes, and a
 * stale zip64 block would contradict them. Malformed extras are dropped. */
static void filter_extra(strbuf *out, const uint8_t *x, size_t n)
{
    out->len = 0;
    for (size_t i = 0; i + 4 <= n; ) {
        uint16_t id = rd16(x + i), len = rd16(x + i + 2);
        if (len > n - i - 4) {
            out->len = 0;
            return;
        }
        if (id != 0x0001)
            sb_append(out, x + i, 4u + len);
        i += 4u + len;
    }
}

/* Appends one entry (local header + data) and records its central header. */
static void zip_add(zip_writer *w, const zip_entry *e, uint16_t method, uint32_t crc,
                    const uint8_t *data, size_t csize, size_t usize, bool rewritten)
{
    /* All terms are far below 2^64: no overflow in the sum. */
    if (csize >= ZIP_MAX32 || usize >= ZIP_MAX32 ||
        w->out.off + 30 + e->name_len + 0xffff + csize >= ZIP_MAX32)
        fatal("%s: output would exceed 4 GiB, which needs zip64 (not supported)", w->out.path);
    if (w->count == 0xffff)
        fatal("%s: more than 65534 entries need zip64 (not supported)", w->out.path);
    uint32_t local_off = (uint32_t)w->out.off;
    uint16_t flags = (uint16_t)(e->flags & ~FLAG_DESCRIPTOR);  /* sizes are in the header */
    uint16_t needed = rewritten ? 20 : e->needed;

    strbuf *h = &w->scratch;
    h->len = 0;
    put32(h, SIG_LOCAL);
    put16(h, needed);
    put16(h, flags);
    put16(h, method);
    put16(h, e->time);
    put16(h, e->date);
    put32(h, crc);
    put32(h, (uint32_t)csize);
    put32(h, (uint32_t)usize);
    put16(h, (uint16_t)e->name_len);
    size_t extra_at = h->len;
    put16(h, 0);
    sb_append(h, e->name, e->name_len);
    strbuf x = { 0 };
    filter_extra(&x, e->local_extra, e->local_extra_len);
    sb_append(h, x.p, x.len);
    h->p[extra_at] = (uint8_t)x.len;
    h->p[extra_at + 1] = (uint8_t)(x.len >> 8);
    out_write(&w->out, h->p, h->len);
    out_write(&w->out, data, csize);

    filter_extra(&x, e->extra, e->extra_len);
    strbuf *c = &w->cen;
    put32(c, SIG_CENTRAL);
    put16(c, e->made_by);
    put16(c, needed);
    put16(c, flags);
    put16(c, method);
    put16(c, e->time);
    put16(c, e->date);
    put32(c, crc);
    put32(c, (uint32_t)csize);
    put32(c, (uint32_t)usize);
    put16(c, (uint16_t)e->name_len);
    put16(c, (uint16_t)x.len);
    put16(c, e->comment_len);
    put16(c, 0);                            /* disk number */
    put16(c, e->int_attr);
    put32(c, e->ext_attr);
    put32(c, local_off);
    sb_append(c, e->name, e->name_len);
    sb_append(c, x.p, x.len);
    sb_append(c, e->comment, e->comment_len);
    free(x.p);
    w->count++;
}

/* Inflates raw deflate data into exactly `out_len` bytes. NULL or why not. */
static const char *inflate_exact(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
        fatal("zlib: inflateInit2 failed (out of memory?)");
    z.next_in = in;
    z.avail_in = (uInt)in_len;
    z.next_out = out;
    z.avail_out = (uInt)out_len;
    int rc = inflate(&z, Z_FINISH);
    uLong total = z.total_out;
    (void)inflateEnd(&z);
    if (rc == Z_STREAM_END)
        return total == out_len ? NULL : "inflates to fewer bytes than its recorded size";
    if (rc == Z_BUF_ERROR && z.avail_out == 0)
        return "inflates to more bytes than its recorded size";
    return "corrupt compressed data";
}

/* Raw deflate of `in`; NULL if that would not be smaller (store instead). */
static uint8_t *deflate_smaller(const uint8_t *in, size_t in_len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        fatal("zlib: deflateInit2 failed (out of memory?)");
    uLong bound = deflateBound(&z, (uLong)in_len);
    uint8_t *out = xmalloc(bound);
    z.next_in = in;
    z.avail_in = (uInt)in_len;
    z.next_out = out;
    z.avail_out = (uInt)bound;
    int rc = deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    (void)deflateEnd(&z);
    if (rc != Z_STREAM_END)
        fatal("zlib: deflate failed (%d)", rc);
    if (*out_len >= in_len) {
        free(out);
        return NULL;
    }
    return out;
}

/* META-INF/x.SF, .RSA, .DSA, .EC, SIG-*: the files of a jar signature. */
static bool is_signature_file(const char *name)
{
    if (strncasecmp(name, "META-INF/", 9) != 0)
        return false;
    const char *base = name + 9;
    if (!*base || strchr(base, '/'))
        return false;
    size_t n = strlen(base);
    static const char *const suffix[] = { ".SF", ".RSA", ".DSA", ".EC" };
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t k = strlen(suffix[i]);
        if (n > k && strcasecmp(base + n - k, suffix[i]) == 0)
            return true;
    }
    return strncasecmp(base, "SIG-", 4) == 0;
}

/* Rewrites one .class entry if possible; otherwise copies it raw. */
static void jar_class_entry(zip_writer *w, const char *jar, const zip_entry *e)
{
    size_t label_len = strlen(jar) + 1 + e->name_len + 1;
    char *label = xmalloc(label_len);
    snprintf(label, label_len, "%s!%s", jar, e->name);

    const char *why = NULL;
    uint8_t *plain = NULL;
    if (e->usize > CLASS_CAP)
        why = "larger than the 64 MiB class size limit";
    else if (e->method != 0 && e->method != 8)
        why = "compressed with a method other than deflate or store";
    else if (e->method == 0 && e->csize != e->usize)
        why = "stored entry whose sizes disagree";
    if (!why) {
        plain = xmalloc(e->usize);
        if (e->method == 0)
            memcpy(plain, e->data, e->usize);
        else
            why = inflate_exact(e->data, e->csize, plain, e->usize);
    }
    if (!why && crc32(0L, plain, (uInt)e->usize) != e->crc)
        why = "CRC mismatch (the jar is corrupt)";

    uint8_t *out;
    size_t out_len;
    if (why) {
        msg("%s: %s; copied unchanged", label, why);
        g.failed++;
    } else if (rewrite_class(label, plain, e->usize, &out, &out_len) == CLASS_REWRITTEN) {
        if (out_len >= ZIP_MAX32)
            fatal("%s: rewritten class too large for a zip entry", label);
        uint32_t crc = (uint32_t)crc32(0L, out, (uInt)out_len);
        size_t z_len;
        uint8_t *z = deflate_smaller(out, out_len, &z_len);
        if (z)
            zip_add(w, e, 8, crc, z, z_len, out_len, true);
        else
            zip_add(w, e, 0, crc, out, out_len, out_len, true);
        free(z);
        bci_free(out);
        free(plain);
        free(label);
        return;
    }
    /* Unchanged or failed: the original compressed bytes, untouched. */
    zip_add(w, e, e->method, e->crc, e->data, e->csize, e->usize, false);
    free(plain);
    free(label);
}

static void process_jar(const char *in_path, const char *out_path, const struct stat *st)
{
    int fd = open(in_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fatal("%s: cannot read: %s", in_path, strerror(errno));
    if (st->st_size < 22)
        fatal("%s: not a jar/zip file (too short)", in_path);
    if ((uint64_t)st->st_size > SIZE_MAX)
        fatal("%s: too large", in_path);
    size_t size = (size_t)st->st_size;
    /* Mapped, not read: non-class entries are copied from the mapping without
     * ever being held in memory of our own. */
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        fatal("%s: cannot map: %s", in_path, strerror(errno));
    if (close(fd) != 0)
        fatal("%s: read failed: %s", in_path, strerror(errno));
    const uint8_t *z = map;

    /* End of central directory: the last signature whose comment fits. */
    size_t end = SIZE_MAX;
    size_t lowest = size > 22 + 0xffff ? size - 22 - 0xffff : 0;
    for (size_t i = size - 22 + 1; i-- > lowest; ) {
        if (rd32(z + i) == SIG_END && i + 22 + rd16(z + i + 20) <= size) {
            end = i;
            break;
        }
    }
    if (end == SIZE_MAX)
        fatal("%s: not a jar/zip file, or truncated (no end of central directory record)", in_path);
    uint16_t disk = rd16(z + end + 4), cen_disk = rd16(z + end + 6);
    uint16_t disk_entries = rd16(z + end + 8), entries = rd16(z + end + 10);
    uint32_t cen_size = rd32(z + end + 12), cen_off = rd32(z + end + 16);
    uint16_t comment_len = rd16(z + end + 20);
    if ((end >= 20 && rd32(z + end - 20) == SIG_END64L) || entries == 0xffff ||
        cen_size == ZIP_MAX32 || cen_off == ZIP_MAX32)
        fatal("%s: zip64 archive (over 65535 entries or 4 GiB); not supported", in_path);
    if (disk != 0 || cen_disk != 0 || disk_entries != entries)
        fatal("%s: multi-volume zip archive; not supported", in_path);
    if (cen_size > end)
        fatal("%s: corrupt zip (central directory larger than the file)", in_path);
    /* Bytes before the archive proper (e.g. a launcher script): entry offsets
     * are relative to where the archive starts. They are copied through. */
    size_t cen_start = end - cen_size;
    if (cen_off > cen_start)
        fatal("%s: corrupt zip (central directory offset past its position)", in_path);
    size_t base = cen_start - cen_off;

    zip_writer w;
    memset(&w, 0, sizeof w);
    out_open(&w.out, out_path);
    out_write(&w.out, z, base);

    size_t dropped = 0;
    size_t p = cen_start;
    for (unsigned i = 0; i < entries; i++) {
        if (end - p < 46 || rd32(z + p) != SIG_CENTRAL)
            fatal("%s: corrupt zip (bad central directory record %u)", in_path, i);
        zip_entry e;
        memset(&e, 0, sizeof e);
        e.made_by = rd16(z + p + 4);
        e.needed = rd16(z + p + 6);
        e.flags = rd16(z + p + 8);
        e.method = rd16(z + p + 10);
        e.time = rd16(z + p + 12);
        e.date = rd16(z + p + 14);
        e.crc = rd32(z + p + 16);
        e.csize = rd32(z + p + 20);
        e.usize = rd32(z + p + 24);
        uint16_t name_len = rd16(z + p + 28);
        e.extra_len = rd16(z + p + 30);
        e.comment_len = rd16(z + p + 32);
        uint16_t start_disk = rd16(z + p + 34);
        e.int_attr = rd16(z + p + 36);
        e.ext_attr = rd32(z + p + 38);
        uint32_t local = rd32(z + p + 42);
        if (end - p - 46 < (size_t)name_len + e.extra_len + e.comment_len)
            fatal("%s: corrupt zip (central directory record %u overruns it)", in_path, i);
        e.name_len = name_len;
        e.name = xmalloc(name_len + 1u);
        memcpy(e.name, z + p + 46, name_len);
        e.name[name_len] = '\0';
        e.extra = z + p + 46 + name_len;
        e.comment = e.extra + e.extra_len;
        p += 46u + name_len + e.extra_len + e.comment_len;

        if (e.csize == ZIP_MAX32 || e.usize == ZIP_MAX32 || local == ZIP_MAX32)
            fatal("%s: %s: zip64 entry (over 4 GiB); not supported", in_path, e.name);
        if (start_disk != 0)
            fatal("%s: multi-volume zip archive; not supported", in_path);
        if (e.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENC | FLAG_MASKED_CEN))
            fatal("%s: %s: encrypted entry; not supported", in_path, e.name);
        if (strlen(e.name) != name_len)
            fatal("%s: corrupt zip (entry name %u contains a NUL byte)", in_path, i);

        /* The local header only tells where the data starts: sizes and CRC
         * come from the central directory, which also covers entries written
         * with a data descriptor (flag bit 3). */
        size_t lh = base + local;
        if (lh > cen_start || cen_start - lh < 30 || rd32(z + lh) != SIG_LOCAL)
            fatal("%s: %s: corrupt zip (bad local header)", in_path, e.name);
        e.local_extra_len = rd16(z + lh + 28);
        size_t data = lh + 30 + rd16(z + lh + 26) + e.local_extra_len;
        if (data > cen_start || cen_start - data < e.csize)
            fatal("%s: %s: corrupt zip (data runs past the central directory)", in_path,
                  e.name);
        e.local_extra = z + lh + 30 + rd16(z + lh + 26);
        e.data = z + data;

        if (is_signature_file(e.name)) {
            msg("%s: dropped signature file %s (rewritten classes would not match it)",
                in_path, e.name);
            dropped++;
        } else if (name_len > 6 && ends_with(e.name, name_len, ".class")) {
            jar_class_entry(&w, in_path, &e);
        } else {
            zip_add(&w, &e, e.method, e.crc, e.data, e.csize, e.usize, false);
        }
        free(e.name);
    }
    if (dropped)
        msg("%s: the output jar is unsigned; re-sign it with jarsigner if it must be signed",
            in_path);

    /* Central directory and its end record, with the original archive comment. */
    uint64_t cen_at = w.out.off;
    if (cen_at + w.cen.len + 22 + comment_len >= ZIP_MAX32)
        fatal("%s: output would exceed 4 GiB, which needs zip64 (not supported)", out_path);
    strbuf *t = &w.scratch;
    t->len = 0;
    put32(t, SIG_END);
    put16(t, 0);
    put16(t, 0);
    put16(t, (uint16_t)w.count);
    put16(t, (uint16_t)w.count);
    put32(t, (uint32_t)w.cen.len);
    put32(t, (uint32_t)cen_at);
    put16(t, comment_len);
    sb_append(t, z + end + 22, comment_len);
    out_write(&w.out, w.cen.p, w.cen.len);
    out_write(&w.out, t->p, t->len);
    out_commit(&w.out, 0666 & ~g.umask);
    free(w.cen.p);
    free(w.scratch.p);
    if (munmap(map, size) != 0)
        fatal("%s: munmap failed: %s", in_path, strerror(errno));
}

/* ------------------------------------------------------------ main */

#define SYNOPSIS \
    "usage: " PROG " [--entry-exit] [--newarray] [--object-init] [--tracker NAME]\n" \
    "                 [--ids FILE] [--quiet] INPUT OUTPUT\n"

static void usage(FILE *f)
{
    fprintf(f, SYNOPSIS
        "\n"
        "Inserts calls to the tracker class into every class of INPUT, which is a\n"
        ".class file, a .jar/.zip or a directory; OUTPUT is written as the same kind.\n"
        "Other files are copied; classes that cannot be rewritten are copied unchanged.\n"
        "\n"
        "  --entry-exit    NAME.methodEntry(I)V / methodExit(I)V around every method\n"
        "  --newarray      NAME.newArray(Ljava/lang/Object;)V after every array allocation\n"
        "  --object-init   NAME.objectInit(Ljava/lang/Object;)V in java/lang/Object.<init>\n"
        "                  (default if none of the three: --entry-exit --newarray)\n"
        "  --tracker NAME  tracker class, internal or dotted form (default " DEFAULT_TRACKER ")\n"
        "  --ids FILE      write '<id> <class> <method> <descriptor>' per method id\n"
        "  --quiet         no summary line\n"
        "\n"
        "Exit status: 0 ok, 1 some classes could not be rewritten, 2 usage or I/O error.\n");
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    msgv(fmt, ap);
    va_end(ap);
    fputs(SYNOPSIS "(" PROG " --help explains the options)\n", stderr);
    exit(2);
}

static bool has_suffix_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* realpath() of a path that may not exist yet: the deepest existing
 * ancestor resolved, the missing rest appended as given. */
static char *resolve_path(const char *path)
{
    strbuf abs = { 0 };
    if (path[0] == '/') {
        sb_printf(&abs, "%s", path);
    } else {
        char *cwd = realpath(".", NULL);
        if (!cwd)
            fatal("cannot resolve the current directory: %s", strerror(errno));
        sb_printf(&abs, "%s/%s", cwd, path);
        free(cwd);
    }
    char *p = abs.p;
    size_t n = abs.len;
    for (;;) {
        char saved = p[n];
        p[n] = '\0';
        char *real = realpath(n ? p : "/", NULL);
        int e = errno;
        p[n] = saved;
        if (real) {
            strbuf b = { 0 };
            sb_printf(&b, "%s%s", real, p + n);
            free(real);
            free(abs.p);
            return b.p;
        }
        if (e != ENOENT || n == 0)
            fatal("%s: cannot resolve path: %s", path, strerror(e));
        while (n > 0 && p[n - 1] != '/')    /* drop the last component */
            n--;
        while (n > 0 && p[n - 1] == '/')
            n--;
    }
}

/* OUTPUT must not lie inside INPUT (we would walk our own output). Checked
 * before anything is created. */
static void check_not_nested(const char *in_dir, const char *out_dir)
{
    char *in_real = resolve_path(in_dir), *out_real = resolve_path(out_dir);
    size_t n = strlen(in_real);
    if (strncmp(in_real, out_real, n) == 0 && out_real[n] == '/' &&
        out_real[n + 1] != '\0')
        fatal("%s: OUTPUT is inside INPUT %s; choose a directory outside it", out_dir, in_dir);
    free(in_real);
    free(out_real);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "entry-exit",  no_argument,       NULL, 'e' },
        { "newarray",    no_argument,       NULL, 'a' },
        { "object-init", no_argument,       NULL, 'o' },
        { "tracker",     required_argument, NULL, 't' },
        { "ids",         required_argument, NULL, 'i' },
        { "quiet",       no_argument,       NULL, 'q' },
        { "help",        no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    unsigned what = 0;
    char *tracker = NULL;
    opterr = 0;                                 /* we print our own message */
    for (;;) {
        int c = getopt_long(argc, argv, "", longopts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'e': what |= BCI_ENTRY_EXIT; break;
        case 'a': what |= BCI_NEWARRAY; break;
        case 'o': what |= BCI_OBJECT_INIT; break;
        case 't':
            free(tracker);
            tracker = xstrdup(optarg);
            break;
        case 'i': g.ids_path = optarg; break;
        case 'q': g.quiet = true; break;
        case 'h': usage(stdout); return 0;
        default:
            if (optopt == 't' || optopt == 'i')
                usage_error("option --%s needs an argument", optopt == 't' ? "tracker" : "ids");
            if (optind > 1 && strncmp(argv[optind - 1], "--", 2) == 0)
                usage_error("option %s is unknown or needs an argument", argv[optind - 1]);
            usage_error("option -%c is unknown", optopt ? optopt : '?');
        }
    }
    if (argc - optind != 2)
        usage_error("expected INPUT and OUTPUT, got %d argument%s", argc - optind,
                    argc - optind == 1 ? "" : "s");
    const char *in_path = argv[optind], *out_path = argv[optind + 1];

    if (!what)
        what = BCI_ENTRY_EXIT | BCI_NEWARRAY;
    if (!tracker)
        tracker = xstrdup(DEFAULT_TRACKER);
    for (char *s = tracker; *s; s++)            /* accept com.x.Tracker too */
        if (*s == '.')
            *s = '/';
    if (!tracker[0] || tracker[0] == '/' || tracker[strlen(tracker) - 1] == '/' ||
        strstr(tracker, "//") || strpbrk(tracker, ";[<>"))
        usage_error("--tracker '%s' is not a class name (e.g. java/lang/HprofTracker)", tracker);
    g.config.what = what;
    g.config.tracker = tracker;
    /* Ids only matter for entry/exit calls; without them, leave the
     * library's default and write no ids. */
    g.config.method_id = (what & BCI_ENTRY_EXIT) ? next_method_id : NULL;
    g.config.context = NULL;

    g.umask = umask(0);
    umask(g.umask);
    if (atexit(remove_temp) != 0)
        fatal("atexit failed");

    struct stat st;
    if (stat(in_path, &st) != 0)
        fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
    enum { KIND_CLASS, KIND_JAR, KIND_DIR } kind;
    if (S_ISDIR(st.st_mode)) {
        kind = KIND_DIR;
    } else if (S_ISREG(st.st_mode)) {
        uint8_t magic[4] = { 0 };
        FILE *f = fopen(in_path, "rb");
        if (!f)
            fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        size_t got = fread(magic, 1, sizeof magic, f);
        if (ferror(f))
            fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        if (fclose(f) != 0)
            fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        bool zip = got == 4 && magic[0] == 'P' && magic[1] == 'K' &&
                   ((magic[2] == 3 && magic[3] == 4) || (magic[2] == 5 && magic[3] == 6));
        bool cafe = got == 4 && rd32(magic) == 0xbebafecau;
        if (cafe || (!zip && has_suffix_ci(in_path, ".class")))
            kind = KIND_CLASS;
        else if (zip || has_suffix_ci(in_path, ".jar") || has_suffix_ci(in_path, ".zip"))
            kind = KIND_JAR;        /* a .jar that is not a zip fails with a reason */
        else
            fatal("%s: INPUT is not a .class file, a jar/zip or a directory", in_path);
    } else {
        fatal("%s: INPUT is not a .class file, a jar/zip or a directory", in_path);
    }

    struct stat ost;
    bool out_exists = stat(out_path, &ost) == 0;
    if (kind != KIND_DIR && out_exists && S_ISDIR(ost.st_mode))
        fatal("%s: OUTPUT is a directory; INPUT is a file, so give a file name", out_path);
    if (kind == KIND_DIR && out_exists && !S_ISDIR(ost.st_mode))
        fatal("%s: OUTPUT exists and is not a directory; INPUT is a directory", out_path);

    if (g.ids_path) {
        g.ids = fopen(g.ids_path, "w");
        if (!g.ids)
            fatal("%s: cannot write --ids file: %s", g.ids_path, strerror(errno));
    }

    switch (kind) {
    case KIND_CLASS:
        process_class_file(in_path, out_path, &st);
        break;
    case KIND_JAR:
        process_jar(in_path, out_path, &st);
        break;
    case KIND_DIR:
        check_not_nested(in_path, out_path);
        {
            static dir_stack stack;
            walk(in_path, out_path, &st, &stack);
        }
        break;
    }

    if (g.ids && fclose(g.ids) != 0)
        fatal("%s: write failed: %s", g.ids_path, strerror(errno));
    g.ids = NULL;
    if (!g.quiet)
        msg("%lu classes rewritten, %lu unchanged, %lu failed", g.rewritten, g.unchanged,
            g.failed);
    free(tracker);
    free(g.pending_ids.p);
    return g.failed ? 1 : 0;
}
