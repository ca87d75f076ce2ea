/* heap_dump_jvm: heap=dump,format=b by the JVM's own dumper
 * (heap_dump_by_jvm, heap_dump.h): its file made the output or appended,
 * its class serials moved and its LOAD CLASS records given our traces. */
#include "heap_dump_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/tables.h"
#include "jvm_heap_dump.h"
#include "jvmti_support.h"

/* ------------------------------------------------- the JVM's own dumper */

/* The JVM's class serials start at 1 in every dump it writes, as ours
 * start at CLASS_SERIAL_BASE: each of its dumps in one file gets a range of
 * its own, far above ours. */
#define JVM_CLASS_SERIALS      UINT32_C(0x40000000)
#define JVM_CLASS_SERIAL_RANGE UINT32_C(0x01000000)

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A descriptor of the output file, to read it from the start, when it is
 * worth making the JVM's dump (fd) the output instead of copying it: the
 * output is a regular file at out_path (not net='s spool) holding less
 * than the dump, and no heap dump: the records after the JVM's would then
 * put an earlier dump after this one, where readers take the last dump of
 * a file as the newest. -1 otherwise. */
static int own_file_to_follow(const heap_dump_target *t, int fd)
{
    hb_writer *w = t->binary;
    struct stat out, dump, path;
    int o = w->out ? fileno(w->out) : -1;
    if (o < 0 || w->error || w->in_heap || w->heap_dumps > 0 || fstat(o, &out) != 0 || fstat(fd, &dump) != 0 ||
        !S_ISREG(out.st_mode) || (uint64_t)dump.st_size <= w->bytes)
        return -1;
    int old = open(t->out_path, O_RDONLY | O_CLOEXEC);
    if (old < 0)
        return -1;
    if (fstat(old, &path) != 0 || path.st_dev != out.st_dev || path.st_ino != out.st_ino) {
        close(old);
        return -1;
    }
    return old;
}

static uint32_t defined_by_jvm(void *jvm, uint32_t class_serial)
{
    return heap_dump_jvm_serial_of(jvm, class_serial);
}

/* The JVM's dump (fd, at path stage) becomes the output file: its class
 * serials moved (in place), the writer switched to its end, the output's
 * records so far appended (read through old) with their classes renamed to
 * the JVM's where its dump names them (jvm; NULL: not known), then renamed
 * over out_path with the output's mode. 0; 1 when the dump is not an HPROF file of this
 * id size (nothing changed); 2 when it could not be read or changed
 * (errno; the output untouched); -1 when the output failed (w->error). */
static int adopt(hb_writer *w, int fd, int old, const char *stage, const char *out_path, uint32_t offset,
                 const jvm_classes *jvm)
{
    /* Our LOAD CLASS of a class the JVM's records already define would
     * define it twice, under two serials. */
    hb_class_renumber ours = { .defined_as = jvm ? defined_by_jvm : NULL, .ctx = (void *)jvm };
    uint64_t start_ms = 0, size = 0;
    int rc = hb_offset_class_serials(fd, offset, &start_ms, &size);
    if (rc != 0) {
        if (rc < 0)
            unlink(stage);
        return rc < 0 ? 2 : 1;
    }
    struct stat mode;
    if (fstat(old, &mode) != 0 || hb_switch_file(w, fd, start_ms, size) != 0 ||
        hb_append_file_renumbered(w, old, &ours) != 0) {
        if (w->error == 0)
            w->error = EINVAL;       /* the output's own header was not ours: cannot be */
        unlink(stage);
        return -1;
    }
    if (fflush(w->out) != 0 || fchmod(fd, mode.st_mode & 07777) != 0 || rename(stage, out_path) != 0) {
        w->error = errno ? errno : EIO;
        unlink(stage);
        return -1;
    }
    return 0;
}

/* A later JVM dump into a file that holds one already: the records written
 * since that dump and its records (a SITES section, the frames of new
 * traces) may name classes by serials of ours whose LOAD CLASS the first
 * adoption dropped for the JVM's. They are taken out of the output, to go
 * after the new dump through the same renumbering as at the first one: the
 * file keeps its dumps in order, each followed by the records it explains.
 * A descriptor of an unlinked file beside the output holding the output's
 * header and those records (read from the start), the output cut back to
 * where they began; -1 when there is nothing to move or it cannot be done
 * (nothing changed: the new dump is appended after them, as before). */
static int take_records_since_dump(const heap_dump_target *t)
{
    hb_writer *w = t->binary;
    if (w->error || w->dump_records_dumps != w->heap_dumps || w->dump_records_end >= w->bytes)
        return -1;
    const char *slash = strrchr(t->out_path, '/');
    char dir[4200];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - t->out_path) : 1, slash ? t->out_path : ".");
    int tail = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (tail < 0) {                  /* a file system without O_TMPFILE: a named one, unlinked at once */
        char name[4300];
        snprintf(name, sizeof name, "%s/.hprof-records.%d.XXXXXX", dir, (int)getpid());
        if ((tail = mkostemp(name, O_CLOEXEC)) < 0)
            return -1;
        unlink(name);
    }
    if (hb_take_records_since(w, w->dump_records_end, tail) != 0) {
        close(tail);
        return -1;
    }
    return tail;
}

/* A class's name as both sides can compare it: the JVM's internal form
 * (a JVMTI signature "Lpkg/Name;" loses its L and ;), and a hidden class's
 * address after '+', which the JVM's dump writes ("Foo$$Lambda$14+0x7f...",
 * JDK 25 "Foo$$Lambda+0x7f...") where JVMTI gives '.' (and Class.getName
 * '/'). In out (size bytes): 0, or -1 when it does not fit. */
static int comparable_name(const char *name, size_t n, int from_jvmti, char *out, size_t size)
{
    if (from_jvmti && n >= 2 && name[0] == 'L' && name[n - 1] == ';') {
        name++;
        n -= 2;
    }
    if (n >= size)
        return -1;
    memcpy(out, name, n);
    out[n] = '\0';
    char *hex = NULL;
    for (char *p = strstr(out, "0x"); p; p = strstr(p + 2, "0x"))
        hex = p;
    if (hex && hex > out && (hex[-1] == '.' || hex[-1] == '/' || hex[-1] == '+') && hex[2] != '\0' &&
        strspn(hex + 2, "0123456789abcdefABCDEF") == strlen(hex + 2))
        hex[-1] = '+';
    return 0;
}

typedef struct named_class {
    char    *name;
    serial_t serial;
} named_class;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_class *)a)->name, ((const named_class *)b)->name);
}

/* What the JVM's LOAD CLASS records are given (hb_set_load_traces): our
 * classes by name, their traces and where the JVM's serials go. */
typedef struct trace_lookup {
    named_class *by_name;
    uint32_t     n;
    uint32_t     traces_written;  /* traces below TRACE_SERIAL_BASE + this get a record */
    uint32_t     serial_offset;   /* added to the JVM's class serials in the output */
    jvm_classes  jvm;
    uint32_t     ours_ambiguous;  /* names two classes of ours share */
    uint64_t   (*class_object)(void *ctx, uint32_t class_serial);   /* heap_dump_target's */
    void        *dump_ctx;
} trace_lookup;

static uint32_t load_trace_by_name(void *ctx, const char *name, size_t len, uint32_t class_serial,
                                   uint64_t class_id, int shared)
{
    trace_lookup *l = ctx;
    char want[4096];
    if (comparable_name(name, len, 0, want, sizeof want) != 0)
        return 0;
    named_class key = { want, 0 };
    named_class *c = bsearch(&key, l->by_name, l->n, sizeof *c, by_name);
    if (c == NULL)
        return 0;
    if ((c > l->by_name && strcmp(c[-1].name, want) == 0) ||
        (c + 1 < l->by_name + l->n && strcmp(c[1].name, want) == 0)) {
        l->ours_ambiguous++;
        return 0;                    /* which of ours is this one: not known */
    }
    /* The JVM's records of this name are of several classes: this one is
     * ours only when its id is our class's address. */
    if (shared && (l->class_object == NULL || l->class_object(l->dump_ctx, c->serial) != class_id))
        return 0;
    l->jvm.serial[c->serial - CLASS_SERIAL_BASE] = class_serial + l->serial_offset;
    serial_t trace = heap_dump_load_trace_written(c->serial, l->traces_written);
    return trace != EMPTY_TRACE_SERIAL ? trace : 0;
}

static void trace_lookup_free(trace_lookup *l)
{
    for (uint32_t i = 0; l->by_name && i < l->n; i++)
        free(l->by_name[i].name);
    free(l->by_name);
    free(l->jvm.serial);
}

/* Our classes sorted by comparable name: 0, or -1 out of memory. */
static int trace_lookup_make(trace_lookup *l, uint32_t serial_offset)
{
    uint32_t nclasses = class_count(agent_tables());
    *l = (trace_lookup){ .traces_written = trace_count(agent_tables()), .serial_offset = serial_offset };
    l->by_name = calloc(nclasses ? nclasses : 1, sizeof *l->by_name);
    l->jvm.serial = calloc(nclasses ? nclasses : 1, sizeof *l->jvm.serial);
    if (l->by_name == NULL || l->jvm.serial == NULL)
        return -1;
    l->jvm.n = nclasses;
    for (uint32_t i = 0; i < nclasses; i++) {
        const char *sig = class_signature(agent_tables(), CLASS_SERIAL_BASE + i);
        char name[4096];
        if (sig == NULL || comparable_name(sig, strlen(sig), 1, name, sizeof name) != 0)
            continue;
        if ((l->by_name[l->n].name = strdup(name)) == NULL)
            return -1;
        l->by_name[l->n++].serial = CLASS_SERIAL_BASE + i;
    }
    qsort(l->by_name, l->n, sizeof *l->by_name, by_name);
    return 0;
}

/* The JVM's LOAD CLASS records (fd) get the traces that loaded their
 * classes (class_loads.c), in place, where the name tells which class of
 * ours it is; l keeps where the JVM's serials went. 0, or -1 (said; the
 * dump keeps the JVM's traces, ours are not written). */
static int give_load_traces(int fd, trace_lookup *l, uint32_t serial_offset, const heap_dump_target *t)
{
    if (trace_lookup_make(l, serial_offset) != 0) {
        fprintf(stderr, "hprof: heap dump: out of memory; the JVM's dump keeps its empty class loading traces\n");
        return -1;
    }
    l->class_object = t->class_object;
    l->dump_ctx = t->dump_ctx;
    uint32_t set = 0, ambiguous = 0;
    if (hb_set_load_traces(fd, load_trace_by_name, l, &set, &ambiguous) < 0) {
        fprintf(stderr, "hprof: heap dump: cannot give the JVM's dump its class loading traces: %s\n",
                strerror(errno));
        return -1;
    }
    return 0;
}

int heap_dump_by_jvm(JNIEnv *jni, const heap_dump_target *t)
{
    static uint32_t dumps;           /* one dump at a time (agent.lock) */
    /* Beside the output (a heap can be larger than /tmp), a name of ours
     * that does not exist: the JVM will not write over a file, and wants
     * the .hprof suffix. */
    const char *slash = strrchr(t->out_path, '/');
    int dir_len = slash ? (int)(slash - t->out_path) : 1;
    char stage[4300];
    snprintf(stage, sizeof stage, "%.*s/.hprof-heap.%d.XXXXXX.hprof", dir_len, slash ? t->out_path : ".",
             (int)getpid());
    int fd = mkstemps(stage, 6);
    if (fd < 0) {
        fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s; the agent "
                "walks the heap itself\n", stage, strerror(errno));
        return 1;
    }
    close(fd);
    unlink(stage);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char why[1024];
    if (t->before_dump)
        t->before_dump(t->dump_ctx, stage);
    if (jvm_heap_dump(jni, stage, 1, why, sizeof why) != 0) {
        unlink(stage);
        fprintf(stderr, "hprof: heap dump: the JVM's own dumper did not write one (%s); the agent walks the "
                "heap itself (slower)\n", why);
        return 1;
    }
    double jvm_secs = seconds_since(&t0);
    fd = open(stage, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hprof: heap dump: cannot read back the JVM's dump %s: %s; the agent walks the heap "
                "itself\n", stage, strerror(errno));
        unlink(stage);
        return 1;
    }
    if (t->after_dump && t->after_dump(t->dump_ctx, jni, fd) != 0) {
        close(fd);
        unlink(stage);
        return 1;
    }
    uint64_t before = t->binary->bytes;
    uint32_t offset = JVM_CLASS_SERIALS + (dumps++ % 48) * JVM_CLASS_SERIAL_RANGE;
    trace_lookup lookup;
    int traced = give_load_traces(fd, &lookup, offset, t) == 0;
    int old = own_file_to_follow(t, fd);
    int rc = old >= 0 ? adopt(t->binary, fd, old, stage, t->out_path, offset, traced ? &lookup.jvm : NULL) : 1;
    int adopt_errno = errno;
    const char *how = "its file became the output, followed by the records before it";
    if (rc == 1) {                   /* not adopted, nothing changed: appended instead */
        unlink(stage);               /* the data stays readable through fd */
        how = "then appended to the output";
        int since = take_records_since_dump(t);
        rc = hb_append_file(t->binary, fd, offset);
        if (since >= 0) {
            hb_class_renumber ours = { .defined_as = traced ? defined_by_jvm : NULL, .ctx = &lookup.jvm };
            hb_class_renumber unchanged = { 0 };
            /* Not an HPROF file (rc 1): the records go back as they were, for the walk. */
            if (rc >= 0 && hb_append_file_renumbered(t->binary, since, rc == 0 ? &ours : &unchanged) < 0)
                rc = -1;
            close(since);
        }
    }
    if (old >= 0)
        close(old);
    close(fd);
    /* The traces the JVM's LOAD CLASS records now name, and their frames
     * naming classes by the JVM's serials. */
    if (rc == 0) {
        t->binary->heap_dumps++;
        heap_dump_write_new_records(t->binary, traced ? &lookup.jvm : NULL, NULL);
        t->binary->dump_records_end = t->binary->bytes;
        t->binary->dump_records_dumps = t->binary->heap_dumps;
    }
    trace_lookup_free(&lookup);
    if (rc == 1) {
        fprintf(stderr, "hprof: heap dump: the JVM's dump is not an HPROF file with %u-byte ids; the agent "
                "walks the heap itself\n", HB_ID_SIZE);
        return 1;
    }
    if (rc == 2) {
        fprintf(stderr, "hprof: heap dump: the JVM's dump %s could not be read or changed: %s; the agent walks "
                "the heap itself\n", stage, strerror(adopt_errno));
        return 1;
    }
    double secs = seconds_since(&t0);
    if (rc != 0 || secs >= 2)
        fprintf(stderr, "hprof: heap dump %s: written by the JVM's own dumper, %llu bytes in %.1f s (the JVM's "
                "dump %.1f s; %s, %s)\n", rc != 0 ? "FAILED" : "done",
                (unsigned long long)(t->binary->bytes - before), secs, jvm_secs, how, t->out_path);
    return rc != 0 ? -1 : 0;
}
