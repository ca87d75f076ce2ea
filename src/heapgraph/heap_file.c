#include "heap_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int heap_file_map(int fd, const char *path, heap_file *f, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen, "%s: the file is empty", path);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(errno));
        return -1;
    }
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    f->bytes = m;
    f->len = (size_t)st.st_size;
    return 0;
}

int heap_file_temp(const char *path, const char *what, char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/hprof-heap.XXXXXX", dir && *dir ? dir : "/tmp");
    int out = mkstemp(tmp);
    if (out < 0) {
        snprintf(err, errlen, "%s: a temporary file %s (%s): %s", path, what, tmp, strerror(errno));
        return -1;
    }
    unlink(tmp);
    return out;
}

/* Inflates the gzip file at fd into an unlinked temporary file: its fd, or -1. */
static int inflate_to_temp(int fd, const char *path, char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    int out = heap_file_temp(path, "to inflate it into", err, errlen);
    if (out < 0)
        return -1;
    int in = dup(fd);
    gzFile z = in >= 0 ? gzdopen(in, "rb") : NULL;
    if (z == NULL) {
        if (in >= 0)
            close(in);
        close(out);
        snprintf(err, errlen, "%s: cannot read it as gzip", path);
        return -1;
    }
    gzbuffer(z, 1u << 20);
    size_t cap = 1u << 20;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "%s: out of memory", path);
    for (;;) {
        if (rc)
            break;
        int n = gzread(z, buf, (unsigned)cap);
        if (n < 0) {
            int zerr;
            snprintf(err, errlen, "%s: corrupt gzip data: %s", path, gzerror(z, &zerr));
            rc = -1;
            break;
        }
        if (n == 0) {
            int zerr = Z_OK;
            gzerror(z, &zerr);
            /* zlib returns what it could of a stream cut short, then says Z_BUF_ERROR */
            if (zerr != Z_OK || !gzeof(z)) {
                snprintf(err, errlen, "%s: the gzip data is cut short (a truncated file)", path);
                rc = -1;
            }
            break;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0) {
                snprintf(err, errlen, "%s: inflating it into %s: %s (set TMPDIR to a directory with room)",
                         path, dir && *dir ? dir : "/tmp", strerror(errno));
                rc = -1;
                break;
            }
            done += w;
        }
    }
    free(buf);
    gzclose(z);
    if (rc) {
        close(out);
        return -1;
    }
    return out;
}

int heap_file_open(const char *path, heap_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char magic[2] = { 0, 0 };
    ssize_t n = pread(fd, magic, 2, 0);
    if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        int t = inflate_to_temp(fd, path, err, errlen);
        close(fd);
        if (t < 0)
            return -1;
        fd = t;
        f->inflated = 1;
    }
    int rc = heap_file_map(fd, path, f, err, errlen);
    close(fd);
    return rc;
}

void heap_file_close(heap_file *f)
{
    if (f->bytes)
        munmap((void *)f->bytes, f->len);
    f->bytes = NULL;
}

void heap_file_drop_pages(const heap_file *f)
{
    if (f->bytes)
        madvise((void *)f->bytes, f->len, MADV_DONTNEED);
}
