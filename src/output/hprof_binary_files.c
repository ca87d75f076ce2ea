/*
 * hprof_binary_files: another HPROF binary file's records, for hprof_binary
 * (hprof_binary.h): copied into this file (the staged heap dump, the JVM's
 * own dump appended or made the output), with their class serials shifted
 * and their LOAD CLASS traces set in place.
 */
#include "../core/big_endian.h"
#include "hprof_binary_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- another file's records ---- */

/* "JAVA PROFILE 1.0.1" or "1.0.2", its NUL, u4 id size, u8 ms. */
#define OTHER_HEADER_SIZE (19u + 4u + 8u)

/* Another file's header: 0 and its time when it is an HPROF binary file
 * with this file's id size, else 1. */
static int other_header(const unsigned char *head, uint64_t *ms)
{
    if (memcmp(head, "JAVA PROFILE 1.0.", 17) != 0 || head[18] != 0 || be_get_u4(head + 19) != HB_ID_SIZE)
        return 1;
    *ms = 0;
    for (int i = 23; i < 31; i++)
        *ms = *ms << 8 | head[i];
    return 0;
}

/* Where a class serial sits in a record's body: first in LOAD CLASS and
 * UNLOAD CLASS, after four ids in STACK FRAME; SIZE_MAX in other records
 * (ALLOC SITES has one a site: hb_renumber_classes). */
static size_t class_serial_at(uint8_t tag, uint32_t len)
{
    size_t at = tag == HB_TAG_LOAD_CLASS || tag == HB_TAG_UNLOAD_CLASS ? 0
              : tag == HB_TAG_FRAME ? 4u * HB_ID_SIZE : SIZE_MAX;
    return at != SIZE_MAX && len >= at + 4 ? at : SIZE_MAX;
}

/* ALLOC SITES: u2 flags, u4 cutoff, u4 u4 live bytes and instances, u8 u8
 * allocated, u4 sites; then a site: u1 array kind, u4 class serial, u4
 * trace, four u4 counts. */
#define SITES_HEAD 34u
#define SITE_SIZE  25u

static uint32_t renumbered(uint32_t serial, const hb_class_renumber *r)
{
    uint32_t to = r->defined_as ? r->defined_as(r->ctx, serial) : 0;
    return to != 0 ? to : serial + r->offset;
}

int hb_renumber_classes(uint8_t tag, unsigned char *body, uint32_t len, const hb_class_renumber *r)
{
    if (tag == HB_TAG_ALLOC_SITES) {
        if (len < SITES_HEAD)
            return 1;
        /* Only the sites the record holds whole; a shorter record keeps the rest. */
        uint64_t sites = be_get_u4(body + SITES_HEAD - 4), room = (len - SITES_HEAD) / SITE_SIZE;
        for (uint64_t i = 0; i < sites && i < room; i++) {
            unsigned char *at = body + SITES_HEAD + i * SITE_SIZE + 1;
            be_put_u4(at, renumbered(be_get_u4(at), r));
        }
        return 1;
    }
    size_t at = class_serial_at(tag, len);
    if (at == SIZE_MAX)
        return 1;
    uint32_t serial = be_get_u4(body + at);
    /* A class this file already names is defined once, by its record. */
    if (tag == HB_TAG_LOAD_CLASS && r->defined_as && r->defined_as(r->ctx, serial) != 0)
        return 0;
    be_put_u4(body + at, renumbered(serial, r));
    return 1;
}

/* Another file's records read in order through a buffer: the JVM's dump
 * begins with tens of thousands of small UTF8 records (43,554 for a small
 * program), a pread each took 70 ms. After a big record (a heap dump
 * segment) it reads a little only: its segments' bodies are not read. */
enum { RECORDS_BUFFER = 1u << 18, AFTER_A_JUMP = 4096u };

typedef struct record_reader {
    int            fd;
    uint64_t       end;               /* the file's size */
    unsigned char *buf;
    uint64_t       buf_at;            /* file offset of buf[0] */
    size_t         buf_len;
} record_reader;

/* n (<= RECORDS_BUFFER) bytes at file offset at, or NULL with errno EIO
 * when the file has fewer. */
static const unsigned char *bytes_at(record_reader *r, uint64_t at, size_t n)
{
    if (at >= r->buf_at && at + n <= r->buf_at + r->buf_len)
        return r->buf + (at - r->buf_at);
    if (at > r->end || n > r->end - at) {
        errno = EIO;
        return NULL;
    }
    size_t want = at == r->buf_at + r->buf_len ? RECORDS_BUFFER : AFTER_A_JUMP;
    if (want < n)
        want = n;
    if (want > r->end - at)
        want = (size_t)(r->end - at);
    ssize_t got = pread(r->fd, r->buf, want, (off_t)at);
    if (got < (ssize_t)n) {
        r->buf_len = 0;
        errno = EIO;
        return NULL;
    }
    r->buf_at = at;
    r->buf_len = (size_t)got;
    return r->buf;
}

typedef int (*record_fn)(void *ctx, record_reader *r, uint8_t tag, uint64_t body, uint32_t len);

/* Calls each(ctx, r, tag, offset of the body, its length) for every record
 * of fd (size end) from offset at (after the header), until each returns
 * non-zero (which is returned). 0 at the end; -1 with errno (EIO: a record
 * runs past the end; ENOMEM). */
static int each_record(int fd, uint64_t at, uint64_t end, record_fn each, void *ctx)
{
    record_reader r = { fd, end, malloc(RECORDS_BUFFER), 0, 0 };
    if (r.buf == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    while (rc == 0 && at < end) {
        const unsigned char *rh = bytes_at(&r, at, RECORD_HEADER_SIZE);
        uint32_t len = rh ? be_get_u4(rh + 5) : 0;
        if (rh == NULL || len > end - at - RECORD_HEADER_SIZE) {
            errno = EIO;                          /* the last record runs past the end */
            rc = -1;
            break;
        }
        rc = each(ctx, &r, rh[0], at + RECORD_HEADER_SIZE, len);
        at += RECORD_HEADER_SIZE + len;
    }
    int saved = errno;
    free(r.buf);
    errno = saved;
    return rc;
}

typedef struct serial_shift {
    int      fd;
    uint32_t offset;
} serial_shift;

static int shift_class_serial(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    const serial_shift *s = arg;
    size_t pos = class_serial_at(tag, len);
    if (pos == SIZE_MAX)
        return 0;
    const unsigned char *old = bytes_at(r, body + pos, 4);
    if (old == NULL)
        return -1;
    unsigned char b[4];
    off_t where = (off_t)(body + pos);
    be_put_u4(b, be_get_u4(old) + s->offset);
    return pwrite(s->fd, b, 4, where) == 4 ? 0 : -1;
}

int hb_offset_class_serials(int fd, uint32_t offset, uint64_t *start_ms, uint64_t *size)
{
    unsigned char head[OTHER_HEADER_SIZE];
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head || other_header(head, start_ms) != 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    serial_shift s = { fd, offset };
    if (each_record(fd, OTHER_HEADER_SIZE, (uint64_t)st.st_size, shift_class_serial, &s) != 0)
        return -1;
    *size = (uint64_t)st.st_size;
    return 0;
}

int hb_switch_file(hb_writer *w, int fd, uint64_t start_ms, uint64_t size)
{
    if (!hb_usable(w))
        return -1;
    if (w->in_heap)
        return hb_fail(w, EINVAL);
    int out = fileno(w->out);
    errno = 0;
    if (out < 0)
        return hb_fail(w, EBADF);
    if (fflush(w->out) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    if (dup2(fd, out) < 0 || fseeko(w->out, (off_t)size, SEEK_SET) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    w->start_ms = start_ms;
    w->bytes = size;
    return 0;
}

/* A record body to change in memory: one naming class serials. */
static int names_classes(uint8_t tag, uint32_t len)
{
    return class_serial_at(tag, len) != SIZE_MAX || tag == HB_TAG_ALLOC_SITES;
}

/* n bytes at offset at of the reader's file into to, through its buffer. */
static int read_body(record_reader *r, uint64_t at, unsigned char *to, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < RECORDS_BUFFER ? (size_t)(n - done) : RECORDS_BUFFER;
        const unsigned char *p = bytes_at(r, at + done, k);
        if (p == NULL)
            return -1;
        memcpy(to + done, p, k);
        done += k;
    }
    return 0;
}

/* n bytes at offset at of fd to the file in the kernel, as a heap dump's
 * segments (most of a gigabyte) are best copied: 0; 1 when the two files do
 * not allow it (a memory stream, another file system on old kernels), with
 * nothing copied; -1 with w->error set. */
static int copy_in_kernel(hb_writer *w, int fd, uint64_t at, uint64_t n)
{
    int out = fileno(w->out);
    if (out < 0)
        return 1;
    errno = 0;
    if (fflush(w->out) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    off_t from = (off_t)at;
    for (uint64_t left = n; left > 0;) {
        ssize_t got = copy_file_range(fd, &from, out, NULL, left > (1u << 30) ? (1u << 30) : (size_t)left, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && left == n && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                                     errno == EOPNOTSUPP || errno == EBADF))
            return 1;
        if (got < 0)
            return hb_fail(w, errno);
        if (got == 0)
            return hb_fail(w, EIO);                  /* the file ended early */
        left -= (uint64_t)got;
        w->bytes += (uint64_t)got;
    }
    /* The stream's idea of its position is the descriptor's again. */
    off_t pos = lseek(out, 0, SEEK_CUR);
    if (pos < 0 || fseeko(w->out, pos, SEEK_SET) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    return 0;
}

/* n bytes at offset at of the reader's file to the file: in the kernel when
 * large and both files allow it, else through the reader's buffer (most
 * bodies are small records, read with their neighbours). */
static int copy_body(hb_writer *w, record_reader *r, uint64_t at, uint64_t n)
{
    int rc = n >= (1u << 20) ? copy_in_kernel(w, r->fd, at, n) : 1;
    for (uint64_t done = 0; rc == 1 && done < n;) {
        size_t k = n - done < RECORDS_BUFFER ? (size_t)(n - done) : RECORDS_BUFFER;
        const unsigned char *p = bytes_at(r, at + done, k);
        if (p == NULL)
            return hb_fail(w, EIO);
        if (hb_write_out(w, p, k) != 0)
            return -1;
        done += k;
    }
    return rc == 1 ? 0 : rc;
}

int hb_copy_body(hb_writer *w, int fd, uint64_t at, uint64_t n)
{
    record_reader r = { fd, at + n, malloc(RECORDS_BUFFER), 0, 0 };
    if (r.buf == NULL)
        return hb_fail(w, ENOMEM);
    int rc = copy_body(w, &r, at, n);
    free(r.buf);
    return rc;
}

/* A file's records on their way to the writer. */
typedef struct appending {
    hb_writer                *w;
    const hb_class_renumber  *renumber;
    uint32_t                  shift;      /* added to each record's time */
    unsigned char            *body;       /* a body to renumber: ALLOC SITES can be */
    size_t                    cap;        /* as large as the sites the agent keeps */
} appending;

static int append_record(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    appending *a = arg;
    const unsigned char *head = bytes_at(r, body - RECORD_HEADER_SIZE, RECORD_HEADER_SIZE);  /* still buffered */
    if (head == NULL)
        return hb_fail(a->w, EIO);
    unsigned char rh[RECORD_HEADER_SIZE];
    memcpy(rh, head, sizeof rh);
    be_put_u4(rh + 1, be_get_u4(rh + 1) + a->shift);
    if (!names_classes(tag, len))
        return hb_write_out(a->w, rh, sizeof rh) != 0 ? -1 : copy_body(a->w, r, body, len);
    if (len > a->cap) {
        unsigned char *more = realloc(a->body, len);
        if (more == NULL)
            return hb_fail(a->w, ENOMEM);
        a->body = more;
        a->cap = len;
    }
    if (read_body(r, body, a->body, len) != 0)
        return hb_fail(a->w, EIO);
    if (!hb_renumber_classes(tag, a->body, len, a->renumber))
        return 0;
    return hb_write_out(a->w, rh, sizeof rh) != 0 || hb_write_out(a->w, a->body, len) != 0 ? -1 : 0;
}

int hb_append_file_renumbered(hb_writer *w, int fd, const hb_class_renumber *r)
{
    if (!hb_usable(w))
        return -1;
    if (w->in_heap)
        return hb_fail(w, EINVAL);
    /* Read from the descriptor's offset (callers open the file for it),
     * with pread through one buffer: two reads a record made a syscall
     * per few bytes of the agent's small records. */
    off_t base = lseek(fd, 0, SEEK_CUR);
    struct stat st;
    if (base < 0 || fstat(fd, &st) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    unsigned char head[OTHER_HEADER_SIZE];
    uint64_t their_ms = 0;
    if (pread(fd, head, sizeof head, base) != (ssize_t)sizeof head || other_header(head, &their_ms) != 0)
        return 1;
    /* Their times are microseconds since their start; ours since ours. The
     * field wraps (u4), so the sum is taken modulo 2^32 as well. */
    appending a = { w, r, (uint32_t)((their_ms - w->start_ms) * 1000u), NULL, 0 };
    int rc = each_record(fd, (uint64_t)base + OTHER_HEADER_SIZE, (uint64_t)st.st_size, append_record, &a);
    int saved = errno;
    free(a.body);
    if (rc == 0)
        return 0;
    return w->error != 0 ? -1 : hb_fail(w, saved != 0 ? saved : EIO);
}

/* n bytes of fd at offset at, written to the descriptor to. 0, or -1. */
static int copy_between(int fd, uint64_t at, uint64_t n, int to)
{
    unsigned char buf[65536];
    while (n > 0) {
        ssize_t got = pread(fd, buf, n < sizeof buf ? (size_t)n : sizeof buf, (off_t)at);
        if (got <= 0)
            return -1;
        for (ssize_t put = 0, done; put < got; put += done)
            if ((done = write(to, buf + put, (size_t)(got - put))) <= 0)
                return -1;
        at += (uint64_t)got;
        n -= (uint64_t)got;
    }
    return 0;
}

int hb_take_records_since(hb_writer *w, uint64_t mark, int to)
{
    if (!hb_usable(w))
        return -1;
    int out = w->out ? fileno(w->out) : -1;
    struct stat st;
    if (out < 0 || w->in_heap || mark < OTHER_HEADER_SIZE || mark >= w->bytes || fflush(w->out) != 0 ||
        fstat(out, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != w->bytes)
        return 1;
    if (copy_between(out, 0, OTHER_HEADER_SIZE, to) != 0 || copy_between(out, mark, w->bytes - mark, to) != 0 ||
        lseek(to, 0, SEEK_SET) != 0 || ftruncate(out, (off_t)mark) != 0)
        return 1;
    if (fseeko(w->out, (off_t)mark, SEEK_SET) != 0)
        return hb_fail(w, errno != 0 ? errno : EIO);
    w->bytes = mark;
    return 0;
}

int hb_append_file(hb_writer *w, int fd, uint32_t class_serial_offset)
{
    hb_class_renumber r = { .offset = class_serial_offset };
    return hb_append_file_renumbered(w, fd, &r);
}

/* A LOAD CLASS record of the other file: its name's id, its class serial,
 * and where its stack trace serial sits. */
typedef struct loaded_class {
    uint64_t name_id;
    uint64_t class_id;
    uint64_t trace_at;
    uint32_t serial;
} loaded_class;

static int by_name_id(const void *a, const void *b)
{
    uint64_t x = ((const loaded_class *)a)->name_id, y = ((const loaded_class *)b)->name_id;
    return x < y ? -1 : x > y;
}

typedef struct trace_patch {
    int             fd;
    loaded_class   *classes;
    size_t          n, cap;
    hb_class_trace_fn trace_of;
    void           *ctx;
    uint32_t        set, ambiguous;
} trace_patch;

#define LOAD_CLASS_BODY (4u + HB_ID_SIZE + 4u + HB_ID_SIZE)

static int collect_load_class(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    trace_patch *p = arg;
    if (tag != HB_TAG_LOAD_CLASS || len < LOAD_CLASS_BODY)
        return 0;
    const unsigned char *b = bytes_at(r, body, LOAD_CLASS_BODY);
    if (b == NULL)
        return -1;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        loaded_class *more = realloc(p->classes, cap * sizeof *more);
        if (more == NULL) {
            errno = ENOMEM;
            return -1;
        }
        p->classes = more;
        p->cap = cap;
    }
    p->classes[p->n++] = (loaded_class){ be_get_u8(b + 4 + HB_ID_SIZE + 4), be_get_u8(b + 4), body + 4 + HB_ID_SIZE, be_get_u4(b) };
    return 0;
}

/* Longest class name read; a longer one keeps the other file's trace. */
#define NAME_MAX_BYTES 4096u

static int patch_by_name(void *arg, record_reader *r, uint8_t tag, uint64_t body, uint32_t len)
{
    trace_patch *p = arg;
    if (tag != HB_TAG_UTF8 || len < HB_ID_SIZE || len - HB_ID_SIZE > NAME_MAX_BYTES)
        return 0;
    const unsigned char *id = bytes_at(r, body, len);
    if (id == NULL)
        return -1;
    loaded_class key = { .name_id = be_get_u8(id) };
    loaded_class *c = bsearch(&key, p->classes, p->n, sizeof *c, by_name_id);
    if (c == NULL)
        return 0;
    /* bsearch finds any of the equal ones. HotSpot before JDK 21 writes an
     * array class's LOAD CLASS twice (one class id): one class, its records
     * all patched. Two class ids of one name (two loaders; a retransformed
     * boot class's second record) cannot be told apart by name: asked each. */
    while (c > p->classes && c[-1].name_id == key.name_id)
        c--;
    loaded_class *end = c;
    int one_class = 1;
    for (; end < p->classes + p->n && end->name_id == key.name_id; end++)
        one_class &= end->class_id == c->class_id;
    char name[NAME_MAX_BYTES + 1];
    size_t n = len - HB_ID_SIZE;
    memcpy(name, id + HB_ID_SIZE, n);
    name[n] = '\0';
    uint32_t trace = one_class ? p->trace_of(p->ctx, name, n, c->serial, c->class_id, 0) : 0;
    for (; c < end; c++) {
        if (!one_class && (trace = p->trace_of(p->ctx, name, n, c->serial, c->class_id, 1)) == 0) {
            p->ambiguous++;
            continue;
        }
        if (trace == 0)
            return 0;
        unsigned char b[4];
        be_put_u4(b, trace);
        if (pwrite(p->fd, b, 4, (off_t)c->trace_at) != 4)
            return -1;
        p->set++;
    }
    return 0;
}

int hb_set_load_traces(int fd, hb_class_trace_fn trace_of, void *ctx, uint32_t *set, uint32_t *ambiguous)
{
    unsigned char head[OTHER_HEADER_SIZE];
    uint64_t ms;
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head || other_header(head, &ms) != 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    trace_patch p = { .fd = fd, .trace_of = trace_of, .ctx = ctx };
    int rc = each_record(fd, OTHER_HEADER_SIZE, (uint64_t)st.st_size, collect_load_class, &p);
    if (rc == 0 && p.n > 0) {
        qsort(p.classes, p.n, sizeof *p.classes, by_name_id);
        rc = each_record(fd, OTHER_HEADER_SIZE, (uint64_t)st.st_size, patch_by_name, &p);
    }
    int saved = errno;
    free(p.classes);
    errno = saved;
    *set = p.set;
    *ambiguous = p.ambiguous;
    return rc < 0 ? -1 : 0;
}
