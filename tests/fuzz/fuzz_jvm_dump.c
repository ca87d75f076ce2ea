/*
 * Fuzz target for the patching of the JVM's own heap dump before it becomes
 * heap=dump's output (src/output/hprof_binary.c): hb_set_load_traces (the
 * LOAD CLASS records' traces, by the names of their UTF8 records) and
 * hb_offset_class_serials; and hb_append_file_renumbered, which copies our
 * own records after it (class serials renamed, LOAD CLASS records
 * dropped). The file is the JVM's, but a dump cut short (a
 * full disk, a killed dumper) or of another layout must be refused or
 * patched within its records: never read or written out of bounds, never
 * grown, and only the four bytes of a trace or class serial changed.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/hprof_binary.h"

const char fuzz_target_name[] = "fuzz_jvm_dump";
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.2", "\0\0\0\x08", "\x01\0\0\0\0", "\x02\0\0\0\0\0\0\0\x18", "\x04", "\x05", "\x1c", "\x2c",
    "\x03", "\x06", "pkg/Foo", "Foo$$Lambda+0x7f00", "[I", NULL
};

static unsigned long refused, truncated, patched, names_asked;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "files: %lu patched, %lu cut short, %lu refused; %lu names asked", patched, truncated,
             refused, names_asked);
}

static uint32_t trace_of(void *ctx, const char *name, size_t len, uint32_t class_serial, uint64_t class_id,
                         int shared)
{
    (void)ctx;
    if (shared && (class_id & 1))
        return 0;
    FUZZ_CHECK(strlen(name) <= len);                 /* terminated; a name may hold a NUL */
    names_asked++;
    return len % 3 == 0 ? 0 : class_serial ^ 0x5a5a5a5au;
}

static uint32_t odd_defined(void *ctx, uint32_t class_serial)
{
    (void)ctx;
    return class_serial & 1 ? class_serial ^ 0x5a5a5a5au : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_jvm_dump", 0);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
        abort();
    uint32_t set = 0, ambiguous = 0;
    int rc = hb_set_load_traces(fd, trace_of, NULL, &set, &ambiguous);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == -1);
    uint64_t ms = 0, end = 0;
    int rc2 = hb_offset_class_serials(fd, 0x40000000u, &ms, &end);
    FUZZ_CHECK(rc2 == rc);                           /* the same file, the same verdict */
    struct stat st;
    FUZZ_CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == size);
    FUZZ_CHECK(rc2 != 0 || end == size);
    unsigned char *after = malloc(size ? size : 1);
    if (after == NULL || pread(fd, after, size, 0) != (ssize_t)size)
        abort();
    size_t changed = 0;
    for (size_t i = 0; i < size; i++)
        changed += after[i] != data[i];
    /* A trace and a serial per LOAD CLASS record (24 + 9 bytes each), a
     * serial per STACK FRAME (40 + 9) and UNLOAD CLASS (4 + 9). */
    FUZZ_CHECK(changed <= size / 13 * 4 + 8);
    free(after);
    /* The same file appended as our records are after the JVM's dump:
     * LOAD CLASS records of odd serials dropped, never grown. */
    char *out = NULL;
    size_t out_n = 0;
    FILE *f = open_memstream(&out, &out_n);
    hb_writer w;
    if (f == NULL || hb_open(&w, f, 0, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        abort();
    hb_class_renumber r = { .offset = 0x40000000u, .defined_as = odd_defined, .ctx = NULL };
    int rc3 = hb_append_file_renumbered(&w, fd, &r);
    FUZZ_CHECK(rc3 == 0 || rc3 == 1 || rc3 == -1);
    FUZZ_CHECK(rc3 != 1 || rc == 1);                 /* refused as the others refused it */
    FUZZ_CHECK(w.bytes <= 31 + size);                /* our header for theirs, records kept or dropped */
    hb_close(&w);
    fclose(f);
    free(out);
    close(fd);
    if (rc == 1)
        refused++;
    else if (rc < 0)
        truncated++;
    else
        patched++;
    return 0;
}
