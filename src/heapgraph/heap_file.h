/*
 * heap_file: a heap dump's bytes in memory, mapped from the file (read-only,
 * in place). A gzip-compressed dump (`jcmd GC.heap_dump -gz=1`) is inflated
 * first into an unlinked temporary file ($TMPDIR, else /tmp) that is mapped
 * in its place, so the inflated bytes live in the page cache, not the heap.
 */
#ifndef HPROF_HEAP_FILE_H
#define HPROF_HEAP_FILE_H

#include <stddef.h>

typedef struct heap_file {
    const unsigned char *bytes;
    size_t               len;
    int                  inflated;      /* it was gzip */
} heap_file;

/* 0, or -1 with the reason (naming path) in err. */
int heap_file_open(const char *path, heap_file *f, char *err, size_t errlen);
void heap_file_close(heap_file *f);
/* Maps the regular file open at fd (read-only) as f: 0, or -1 with the
 * reason in err (naming path). fd may be closed after. */
int heap_file_map(int fd, const char *path, heap_file *f, char *err, size_t errlen);
/* An unlinked temporary file ($TMPDIR, else /tmp) for what is made of path
 * (what: "to inflate it into"): its descriptor, or -1 with the reason. */
int heap_file_temp(const char *path, const char *what, char *err, size_t errlen);
/* Lets go of the pages read so far (they stay in the page cache and come
 * back when touched): a pass over a dump then holds a window of it in
 * memory, not all of it. */
void heap_file_drop_pages(const heap_file *f);

#endif
