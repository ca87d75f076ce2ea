/*
 * Fuzz target for the front end's readers of HPROF files (src/reader) and
 * the commands over what they read (hprof report, hprof convert --to text,
 * collapsed, flamegraph, pprof, and jfr of CPU samples): built three times, as fuzz_text_reader (the
 * text reader, seeded with text files the agent wrote), with
 * FUZZ_READER_BINARY as fuzz_binary_reader (the binary reader, seeded with
 * binary files) and with FUZZ_READER_JFR as fuzz_jfr_reader (JFR recordings,
 * src/jfr, seeded with the JVM's own and a hand-made one). A file may be truncated or hostile: it is read, or refused
 * with a message naming it, never read or written out of bounds; what is
 * read holds together (every trace's frames exist) and every writer runs.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analyze.h"
#include "reader/hprof_data.h"

#if defined(FUZZ_READER_JFR)
const char fuzz_target_name[] = "fuzz_jfr_reader";
/* The magic, string encodings, event types, sizes, and names the reader looks for. */
const char *const fuzz_target_dictionary[] = {
    "FLR\0", "\0\x02\0\x01", "\x01", "\x02", "\x03", "\x04", "\x05", "\x80\x80\x80\x00", "\xff\xff\xff\x7f",
    "jdk.ExecutionSample", "jdk.ObjectAllocationSample", "jdk.JavaMonitorEnter", "jdk.ThreadPark",
    "stackTrace", "frames", "constantPool", "true", "dimension", "class", "field", "java.lang.String",
    NULL
};
#elif defined(FUZZ_READER_BINARY)
const char fuzz_target_name[] = "fuzz_binary_reader";
/* Tags and sizes: the header's id size, record tags, heap dump sub-tags. */
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.2", "JAVA PROFILE 1.0.1", "\0\0\0\4", "\0\0\0\x08", "\x01", "\x02", "\x04",
    "\x05", "\x06", "\x0a", "\x0b", "\x0c", "\x0d", "\x0e", "\x1c", "\x2c", "\x20", "\x21", "\x22",
    "\x23", "\xff", "\x7f\xff\xff\xff", "\xff\xff\xff\xff", NULL
};
#else
const char fuzz_target_name[] = "fuzz_text_reader";
const char *const fuzz_target_dictionary[] = {
    "JAVA PROFILE 1.0.1, created ", "TRACE ", ":\n", "\t", "THREAD START (obj=", ", id = ",
    ", name=\"", "\", group=\"", "\")\n", "THREAD END (id = ", "CPU SAMPLES BEGIN (total = ",
    "CPU SAMPLES END\n", "CPU TIME (ms) BEGIN (total = ", "CPU TIME (ms) END\n",
    "SITES BEGIN (ordered by live bytes) ", "SITES END\n", "MONITOR TIME BEGIN (total = ",
    "MONITOR TIME END\n", "MONITOR WAIT TIME BEGIN (total = ", "MONITOR WAIT TIME END\n",
    "MONITOR DUMP BEGIN\n", "MONITOR DUMP END\n", "DEADLOCKS BEGIN", "DEADLOCKS END\n",
    "HEAP DUMP BEGIN", "HEAP DUMP END\n", "rank   self  accum   count trace method\n",
    "(Unknown Source)", "(Native Method)", "(Foo.java:", "%", " ms", ") ", "4294967295",
    "-1", "99.99%", "\n", NULL
};
#endif

static unsigned long read_ok, refused, written;
static FILE *devnull;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "files: %lu read (%lu with a profile), %lu refused", read_ok, written, refused);
}

static const char PATH[] = "fuzz-input";

static void check_read(const hprof_data *d)
{
    for (uint32_t i = 0; i < d->ntraces; i++) {
        const hd_trace *t = &d->traces[i];
        FUZZ_CHECK(t->first <= d->nframes && t->depth <= d->nframes - t->first);
    }
    for (uint32_t i = 0; i < d->nframes; i++) {
        const hd_frame *f = &d->frames[i];
        FUZZ_CHECK(f->class_name && f->method && f->signature && f->file);
    }
    for (int k = 0; k < HD_KINDS; k++)
        FUZZ_CHECK(d->sections[k].nrows <= d->sections[k].rows_cap || d->sections[k].nrows == 0);
}

/* Every output the commands can make of d. */
static void write_everything(const hprof_data *d)
{
    FUZZ_CHECK(report_write_text(d, 5, devnull) == 0);
    (void)convert_write(d, "text", NULL, devnull);
    const char *kind = NULL;
    for (int k = 0; k < HD_KINDS && kind == NULL; k++)
        if (d->profiles[k])
            kind = hd_kind_name((hd_kind)k);
    if (kind == NULL)
        return;                     /* (the converters below refuse, on stderr) */
    written++;
    FUZZ_CHECK(convert_write(d, "flamegraph", kind, devnull) == 0);
    FUZZ_CHECK(convert_write(d, "collapsed", kind, devnull) == 0);
    FUZZ_CHECK(convert_write(d, "pprof", kind, devnull) == 0);
    if (d->profiles[HD_CPU_SAMPLES] && profile_total(d->profiles[HD_CPU_SAMPLES], 0) < 100000)
        FUZZ_CHECK(convert_write(d, "jfr", "cpu", devnull) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
        abort();
    char err[512];
    memset(err, 'x', sizeof err);
#if defined(FUZZ_READER_BINARY) || defined(FUZZ_READER_JFR)
    unsigned char *bytes = malloc(size ? size : 1);    /* exactly sized, for ASan */
    if (bytes == NULL)
        abort();
    memcpy(bytes, data, size);
#ifdef FUZZ_READER_JFR
    hprof_data *d = hprof_jfr_parse(PATH, bytes, size, err, sizeof err);
#else
    hprof_data *d = hprof_binary_parse(PATH, bytes, size, err, sizeof err);
#endif
    free(bytes);
#else
    char *text = malloc(size + 1);                     /* the reader wants text[len] == 0 */
    if (text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    hprof_data *d = hprof_text_parse(PATH, text, size, err, sizeof err);
    if (d == NULL)
        free(text);                                    /* (owned by d on success) */
#endif
    if (d != NULL && hprof_data_build_profiles(d, err, sizeof err) != 0) {
        hprof_data_free(d);
        d = NULL;
    }
    if (d == NULL) {
        refused++;
        /* Said, naming the file, as hprof_data.h promises. */
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL && strstr(err, PATH) != NULL);
        return 0;
    }
    read_ok++;
    check_read(d);
    write_everything(d);
    hprof_data_free(d);
    return 0;
}
