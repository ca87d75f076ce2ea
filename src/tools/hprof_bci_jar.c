/*
 * hprof_bci_jar.c: hprof-bci on a jar or zip: reads the central directory,
 * rewrites the class entries (inflated, then deflated when smaller), copies
 * every other entry as is, drops signature files, writes a new archive.
 */
#define ZLIB_CONST              /* zlib's next_in is then const */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#include "bci/bci.h"
#include "hprof_bci.h"

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
        tool_fatal("%s: output would exceed 4 GiB, which needs zip64 (not supported)", w->out.path);
    if (w->count == 0xffff)
        tool_fatal("%s: more than 65534 entries need zip64 (not supported)", w->out.path);
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
        tool_fatal("zlib: inflateInit2 failed (out of memory?)");
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
        tool_fatal("zlib: deflateInit2 failed (out of memory?)");
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
        tool_fatal("zlib: deflate failed (%d)", rc);
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
        tool_msg("%s: %s; copied unchanged", label, why);
        tool_state.failed++;
    } else if (tool_rewrite_class(label, plain, e->usize, &out, &out_len) == CLASS_REWRITTEN) {
        if (out_len >= ZIP_MAX32)
            tool_fatal("%s: rewritten class too large for a zip entry", label);
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

void tool_process_jar(const char *in_path, const char *out_path, const struct stat *st)
{
    int fd = open(in_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        tool_fatal("%s: cannot read: %s", in_path, strerror(errno));
    if (st->st_size < 22)
        tool_fatal("%s: not a jar/zip file (too short)", in_path);
    if ((uint64_t)st->st_size > SIZE_MAX)
        tool_fatal("%s: too large", in_path);
    size_t size = (size_t)st->st_size;
    /* Mapped, not read: non-class entries are copied from the mapping without
     * ever being held in memory of our own. */
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        tool_fatal("%s: cannot map: %s", in_path, strerror(errno));
    if (close(fd) != 0)
        tool_fatal("%s: read failed: %s", in_path, strerror(errno));
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
        tool_fatal("%s: not a jar/zip file, or truncated (no end of central directory record)", in_path);
    uint16_t disk = rd16(z + end + 4), cen_disk = rd16(z + end + 6);
    uint16_t disk_entries = rd16(z + end + 8), entries = rd16(z + end + 10);
    uint32_t cen_size = rd32(z + end + 12), cen_off = rd32(z + end + 16);
    uint16_t comment_len = rd16(z + end + 20);
    if ((end >= 20 && rd32(z + end - 20) == SIG_END64L) || entries == 0xffff ||
        cen_size == ZIP_MAX32 || cen_off == ZIP_MAX32)
        tool_fatal("%s: zip64 archive (over 65535 entries or 4 GiB); not supported", in_path);
    if (disk != 0 || cen_disk != 0 || disk_entries != entries)
        tool_fatal("%s: multi-volume zip archive; not supported", in_path);
    if (cen_size > end)
        tool_fatal("%s: corrupt zip (central directory larger than the file)", in_path);
    /* Bytes before the archive proper (e.g. a launcher script): entry offsets
     * are relative to where the archive starts. They are copied through. */
    size_t cen_start = end - cen_size;
    if (cen_off > cen_start)
        tool_fatal("%s: corrupt zip (central directory offset past its position)", in_path);
    size_t base = cen_start - cen_off;

    zip_writer w;
    memset(&w, 0, sizeof w);
    out_open(&w.out, out_path);
    out_write(&w.out, z, base);

    size_t dropped = 0;
    size_t p = cen_start;
    for (unsigned i = 0; i < entries; i++) {
        if (end - p < 46 || rd32(z + p) != SIG_CENTRAL)
            tool_fatal("%s: corrupt zip (bad central directory record %u)", in_path, i);
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
            tool_fatal("%s: corrupt zip (central directory record %u overruns it)", in_path, i);
        e.name_len = name_len;
        e.name = xmalloc(name_len + 1u);
        memcpy(e.name, z + p + 46, name_len);
        e.name[name_len] = '\0';
        e.extra = z + p + 46 + name_len;
        e.comment = e.extra + e.extra_len;
        p += 46u + name_len + e.extra_len + e.comment_len;

        if (e.csize == ZIP_MAX32 || e.usize == ZIP_MAX32 || local == ZIP_MAX32)
            tool_fatal("%s: %s: zip64 entry (over 4 GiB); not supported", in_path, e.name);
        if (start_disk != 0)
            tool_fatal("%s: multi-volume zip archive; not supported", in_path);
        if (e.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENC | FLAG_MASKED_CEN))
            tool_fatal("%s: %s: encrypted entry; not supported", in_path, e.name);
        if (strlen(e.name) != name_len)
            tool_fatal("%s: corrupt zip (entry name %u contains a NUL byte)", in_path, i);

        /* The local header only tells where the data starts: sizes and CRC
         * come from the central directory, which also covers entries written
         * with a data descriptor (flag bit 3). */
        size_t lh = base + local;
        if (lh > cen_start || cen_start - lh < 30 || rd32(z + lh) != SIG_LOCAL)
            tool_fatal("%s: %s: corrupt zip (bad local header)", in_path, e.name);
        e.local_extra_len = rd16(z + lh + 28);
        size_t data = lh + 30 + rd16(z + lh + 26) + e.local_extra_len;
        if (data > cen_start || cen_start - data < e.csize)
            tool_fatal("%s: %s: corrupt zip (data runs past the central directory)", in_path,
                  e.name);
        e.local_extra = z + lh + 30 + rd16(z + lh + 26);
        e.data = z + data;

        if (is_signature_file(e.name)) {
            tool_msg("%s: dropped signature file %s (rewritten classes would not match it)",
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
        tool_msg("%s: the output jar is unsigned; re-sign it with jarsigner if it must be signed",
            in_path);

    /* Central directory and its end record, with the original archive comment. */
    uint64_t cen_at = w.out.off;
    if (cen_at + w.cen.len + 22 + comment_len >= ZIP_MAX32)
        tool_fatal("%s: output would exceed 4 GiB, which needs zip64 (not supported)", out_path);
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
    out_commit(&w.out, 0666 & ~tool_state.umask);
    free(w.cen.p);
    free(w.scratch.p);
    if (munmap(map, size) != 0)
        tool_fatal("%s: munmap failed: %s", in_path, strerror(errno));
}

