/*
 * hprof_bci_files.c: hprof-bci's work on files: messages and buffers, output
 * through a temporary file renamed into place, the rewriting of one class
 * (method ids and --ids lines), .class files and directory trees.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bci/bci.h"
#include "hprof_bci.h"

/* ------------------------------------------------------------ utilities */

struct tool_state tool_state;

void tool_msgv(const char *fmt, va_list ap)
{
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void tool_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_msgv(fmt, ap);
    va_end(ap);
}

/* Fatal error: the atexit handler removes a half-written output file. */
void tool_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_msgv(fmt, ap);
    va_end(ap);
    exit(2);
}

void tool_remove_temp(void)
{
    if (tool_state.temp_path) {
        (void)unlink(tool_state.temp_path);
        free(tool_state.temp_path);
        tool_state.temp_path = NULL;
    }
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tool_fatal("out of memory (allocating %zu bytes)", n);
    return p;
}

static void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        tool_fatal("out of memory (allocating %zu bytes)", n);
    return p;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static void sb_reserve(strbuf *b, size_t more)
{
    if (more > SIZE_MAX / 2 - b->len)
        tool_fatal("out of memory (buffer too large)");
    if (b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void sb_append(strbuf *b, const void *data, size_t n)
{
    sb_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        tool_fatal("formatting failed");
    sb_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    int m = vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (m != n)
        tool_fatal("formatting failed");
    b->len += (size_t)n;
}

bool ends_with(const char *s, size_t len, const char *suffix)
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

uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
void put16(strbuf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    sb_append(b, x, 2);
}
void put32(strbuf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    sb_append(b, x, 4);
}

/* ------------------------------------------------------------ output files */
void out_open(out_file *o, const char *path)
{
    if (tool_state.temp_path)
        tool_fatal("internal error: nested output files");
    size_t n = strlen(path);
    char *tmp = xmalloc(n + sizeof ".hprof-bci-XXXXXX");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".hprof-bci-XXXXXX", sizeof ".hprof-bci-XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0)
        tool_fatal("%s: cannot create output file: %s (check that its directory exists and is writable)",
              path, strerror(errno));
    tool_state.temp_path = tmp;
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        (void)close(fd);
        tool_fatal("%s: cannot write: %s", path, strerror(e));
    }
    o->path = path;
    o->off = 0;
}

void out_write(out_file *o, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n)
        tool_fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    o->off += n;
}

/* Finishes the output: permission bits `mode`, then rename over the target. */
void out_commit(out_file *o, mode_t mode)
{
    if (fflush(o->f) != 0 || ferror(o->f))
        tool_fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    if (fchmod(fileno(o->f), mode & 07777) != 0)
        tool_fatal("%s: cannot set permissions: %s", o->path, strerror(errno));
    FILE *f = o->f;
    o->f = NULL;
    if (fclose(f) != 0)
        tool_fatal("%s: write failed: %s (disk full?)", o->path, strerror(errno));
    if (rename(tool_state.temp_path, o->path) != 0)
        tool_fatal("%s: cannot replace it: %s", o->path, strerror(errno));
    free(tool_state.temp_path);
    tool_state.temp_path = NULL;
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
        tool_fatal("%s: cannot read: %s", in_path, strerror(errno));
    out_file o;
    out_open(&o, out_path);
    static uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            tool_fatal("%s: read failed: %s", in_path, strerror(errno));
        if (n == 0)
            break;
        out_write(&o, buf, (size_t)n);
    }
    if (close(fd) != 0)
        tool_fatal("%s: read failed: %s", in_path, strerror(errno));
    out_commit(&o, mode);
}

/* Reads a whole file of at most `cap` bytes. Returns false (nothing
 * allocated) if it is larger; fatal if it cannot be read. */
static bool read_capped(const char *path, size_t cap, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        tool_fatal("%s: cannot read: %s", path, strerror(errno));
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
            tool_fatal("%s: read failed: %s", path, strerror(errno));
        if (n == 0)
            break;
        size += (size_t)n;
    }
    if (close(fd) != 0)
        tool_fatal("%s: read failed: %s", path, strerror(errno));
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
int32_t tool_next_method_id(void *context, const bci_method_info *m)
{
    (void)context;
    if (tool_state.next_id == INT32_MAX)
        return -1;                      /* out of ids: leave the method alone */
    int32_t id = tool_state.next_id++;
    if (tool_state.ids)
        sb_printf(&tool_state.pending_ids, "%" PRId32 " %s %s %s\n", id,
                  m->class_name ? m->class_name : "?", m->name ? m->name : "?",
                  m->descriptor ? m->descriptor : "?");
    return id;
}

/* Rewrites one class; `label` names it in messages. On CLASS_REWRITTEN *out
 * holds the new bytes (free with bci_free); otherwise *out is NULL and the
 * caller keeps the original bytes. Counts the outcome. */
class_outcome tool_rewrite_class(const char *label, const uint8_t *in, size_t len,
                                   uint8_t **out, size_t *out_len)
{
    char err[512] = "";
    int32_t first_id = tool_state.next_id;
    tool_state.pending_ids.len = 0;
    *out = NULL;
    *out_len = 0;
    bci_result r = bci_rewrite(in, len, &tool_state.config, out, out_len, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (r == BCI_OK && *out) {
        if (tool_state.ids && tool_state.pending_ids.len &&
            fwrite(tool_state.pending_ids.p, 1, tool_state.pending_ids.len, tool_state.ids) != tool_state.pending_ids.len)
            tool_fatal("%s: write failed: %s", tool_state.ids_path, strerror(errno));
        tool_state.rewritten++;
        return CLASS_REWRITTEN;
    }
    /* Nothing of this class is instrumented: its ids are free again. */
    tool_state.next_id = first_id;
    if (r == BCI_UNCHANGED) {
        *out = NULL;
        tool_state.unchanged++;
        return CLASS_UNCHANGED;
    }
    if (r == BCI_OK)
        snprintf(err, sizeof err, "rewriter returned no bytes");
    else if (r != BCI_ERROR)
        snprintf(err, sizeof err, "rewriter returned unknown result %d", (int)r);
    else if (!err[0])
        snprintf(err, sizeof err, "rewrite failed (no reason given)");
    tool_msg("%s: %s", label, err);
    *out = NULL;
    tool_state.failed++;
    return CLASS_FAILED;
}

/* ------------------------------------------------------------ .class files */

void tool_process_class_file(const char *in_path, const char *out_path, const struct stat *st)
{
    uint8_t *data;
    size_t len;
    if (!read_capped(in_path, CLASS_CAP, &data, &len)) {
        tool_msg("%s: larger than the %zu MiB class size limit; copied unchanged", in_path,
            CLASS_CAP >> 20);
        tool_state.failed++;
        copy_file(in_path, out_path, st->st_mode);
        return;
    }
    uint8_t *out;
    size_t out_len;
    if (tool_rewrite_class(in_path, data, len, &out, &out_len) == CLASS_REWRITTEN) {
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
        tool_fatal("OUTPUT is an empty path");
    char *p = xstrdup(path);
    for (char *s = p + 1; ; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            tool_fatal("%s: cannot create directory: %s", p, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        tool_fatal("%s: exists and is not a directory; give a directory as OUTPUT", path);
    free(p);
}

void tool_walk(const char *in_dir, const char *out_dir, const struct stat *dir_st,
                 dir_stack *stack)
{
    for (int i = 0; i < stack->depth; i++) {
        if (stack->dev[i] == dir_st->st_dev && stack->ino[i] == dir_st->st_ino) {
            tool_msg("%s: symbolic link loop; skipped", in_dir);
            return;
        }
    }
    if (stack->depth == MAX_DEPTH)
        tool_fatal("%s: directories nested more than %d deep; not supported", in_dir, MAX_DEPTH);
    stack->dev[stack->depth] = dir_st->st_dev;
    stack->ino[stack->depth] = dir_st->st_ino;
    stack->depth++;
    mkdir_p(out_dir);
    /* A sorted snapshot: deterministic method ids, and the temporary files we
     * create while writing (when INPUT is OUTPUT) are not walked. */
    struct dirent **list;
    int n = scandir(in_dir, &list, NULL, alphasort);
    if (n < 0)
        tool_fatal("%s: cannot list directory: %s", in_dir, strerror(errno));
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char *in_path = path_join(in_dir, name), *out_path = path_join(out_dir, name);
        struct stat st;
        if (stat(in_path, &st) != 0)        /* follows symbolic links */
            tool_fatal("%s: cannot read: %s", in_path, strerror(errno));
        if (S_ISDIR(st.st_mode))
            tool_walk(in_path, out_path, &st, stack);
        else if (S_ISREG(st.st_mode) && ends_with(name, strlen(name), ".class"))
            tool_process_class_file(in_path, out_path, &st);
        else if (S_ISREG(st.st_mode))
            copy_file(in_path, out_path, st.st_mode);
        else
            tool_msg("%s: not a regular file or directory; skipped", in_path);
        free(in_path);
        free(out_path);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    stack->depth--;
}

