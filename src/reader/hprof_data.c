/* hprof_data.c: see hprof_data.h. */
#include "hprof_data.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ storage */

const char *hd_strndup(hprof_data *d, const char *s, size_t n)
{
    return string_store_add(d->strings, s, n);
}

/* key -> position + 1, open addressing; doubled at half load. */
struct hd_index {
    uint64_t *keys;
    uint32_t *positions;
    uint32_t  capacity, count;
};

static uint32_t slot_of(uint64_t key, uint32_t capacity)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (capacity - 1);
}


static int index_grow(hd_index **pi)
{
    hd_index *old = *pi;
    hd_index *fresh = calloc(1, sizeof *fresh);
    uint32_t cap = old ? old->capacity * 2 : 64;
    if (fresh == NULL)
        return -1;
    fresh->keys = calloc(cap, sizeof *fresh->keys);
    fresh->positions = calloc(cap, sizeof *fresh->positions);
    fresh->capacity = cap;
    if (fresh->keys == NULL || fresh->positions == NULL) {
        free(fresh->keys);
        free(fresh->positions);
        free(fresh);
        return -1;
    }
    *pi = fresh;
    for (uint32_t i = 0; old && i < old->capacity; i++)
        if (old->positions[i])
            hd_map_put(pi, old->keys[i], old->positions[i] - 1);
    if (old) {
        free(old->keys);
        free(old->positions);
        free(old);
    }
    return 0;
}

int hd_map_put(hd_index **pi, uint64_t key, uint32_t position)
{
    if ((*pi == NULL || (*pi)->count * 2 >= (*pi)->capacity) && index_grow(pi) != 0)
        return -1;
    hd_index *ix = *pi;
    uint32_t s = slot_of(key, ix->capacity);
    while (ix->positions[s] && ix->keys[s] != key)
        s = (s + 1) & (ix->capacity - 1);
    if (!ix->positions[s])
        ix->count++;
    ix->keys[s] = key;
    ix->positions[s] = position + 1;
    return 0;
}

int hd_map_get(const hd_index *ix, uint64_t key, uint32_t *position)
{
    if (ix == NULL)
        return -1;
    uint32_t s = slot_of(key, ix->capacity);
    while (ix->positions[s]) {
        if (ix->keys[s] == key) {
            *position = ix->positions[s] - 1;
            return 0;
        }
        s = (s + 1) & (ix->capacity - 1);
    }
    return -1;
}

void hd_map_free(hd_index *ix)
{
    if (ix) {
        free(ix->keys);
        free(ix->positions);
        free(ix);
    }
}

/* Appends one elem-sized item to an array of *n, doubling its room
 * (*cap items) when full. 0, or -1 when out of memory. */
int hd_push(void **array, uint32_t *n, uint32_t *cap, size_t elem, const void *item)
{
    if (*n == *cap) {
        uint64_t room = *cap ? (uint64_t)*cap * 2 : 64;
        void *grown = room <= UINT32_MAX ? realloc(*array, (size_t)room * elem) : NULL;
        if (grown == NULL)
            return -1;
        *array = grown;
        *cap = (uint32_t)room;
    }
    memcpy((char *)*array + (size_t)*n * elem, item, elem);
    (*n)++;
    return 0;
}

int hd_fail(const hprof_data *d, char *err, size_t errlen, int at_offset, size_t at,
            const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (at_offset)
        snprintf(err, errlen, "%s: offset %zu (0x%zx): %s", d->path, at, at, what);
    else
        snprintf(err, errlen, "%s: line %zu: %s", d->path, at + 1, what);
    return -1;
}

/* ------------------------------------------------------------ building */

hprof_data *hprof_data_new(const char *path, const char *format)
{
    hprof_data *d = calloc(1, sizeof *d);
    if (d == NULL || (d->strings = string_store_new()) == NULL) {
        free(d);
        return NULL;
    }
    d->path = hd_strndup(d, path, strlen(path));
    d->format = format;
    d->created = "";
    d->options = "";
    d->duration_ms = -1;
    d->depth_option = -1;
    d->interval_ms = -1;
    for (int k = 0; k < HD_KINDS; k++)
        d->sections[k].date = "";
    if (d->path == NULL) {
        hprof_data_free(d);
        return NULL;
    }
    return d;
}

void hprof_data_free(hprof_data *d)
{
    if (d == NULL)
        return;
    for (int k = 0; k < HD_KINDS; k++) {
        free(d->sections[k].rows);
        profile_free(d->profiles[k]);
    }
    free(d->threads);
    free(d->classes);
    free(d->loaders);
    free(d->traces);
    free(d->frames);
    hd_map_free(d->trace_index);
    hd_map_free(d->thread_index);
    string_store_free(d->strings);
    free(d->buffer);
    free(d);
}

int hd_add_thread(hprof_data *d, const hd_thread *t)
{
    if (hd_map_put(&d->thread_index, t->serial, d->nthreads) != 0)
        return -1;
    return hd_push((void **)&d->threads, &d->nthreads, &d->threads_cap, sizeof *t, t);
}

hd_thread *hd_find_thread(const hprof_data *d, uint32_t serial)
{
    uint32_t at;
    return hd_map_get(d->thread_index, serial, &at) == 0 ? &d->threads[at] : NULL;
}

int hd_begin_trace(hprof_data *d, uint32_t serial, uint32_t thread)
{
    hd_trace t = { serial, thread, d->nframes, 0 };
    if (hd_map_put(&d->trace_index, serial, d->ntraces) != 0)
        return -1;
    return hd_push((void **)&d->traces, &d->ntraces, &d->traces_cap, sizeof t, &t);
}

int hd_add_frame(hprof_data *d, const hd_frame *f)
{
    if (d->ntraces == 0 || hd_push((void **)&d->frames, &d->nframes, &d->frames_cap, sizeof *f, f) != 0)
        return -1;
    d->traces[d->ntraces - 1].depth++;
    return 0;
}

const hd_trace *hd_find_trace(const hprof_data *d, uint32_t serial)
{
    uint32_t at;
    return hd_map_get(d->trace_index, serial, &at) == 0 ? &d->traces[at] : NULL;
}

void hd_section_restart(hd_section *s)
{
    s->present = 1;
    s->times_seen++;
    s->nrows = 0;
    s->total = s->total_alloc_bytes = s->total_live_objs = s->total_alloc_objs = 0;
    s->date = "";
}

int hd_add_row(hd_section *s, const hd_row *row)
{
    return hd_push((void **)&s->rows, &s->nrows, &s->rows_cap, sizeof *row, row);
}

int hd_add_class(hprof_data *d, const hd_class *c)
{
    return hd_push((void **)&d->classes, &d->nclasses, &d->classes_cap, sizeof *c, c);
}

int hd_add_loader(hprof_data *d, uint64_t id, const char *class_name)
{
    hd_loader l = { id, class_name };
    return hd_push((void **)&d->loaders, &d->nloaders, &d->loaders_cap, sizeof l, &l);
}

void hd_classes_restart(hprof_data *d)
{
    d->nclasses = 0;
    d->nloaders = 0;
}

uint32_t hd_max_depth(const hprof_data *d, uint32_t *at_max)
{
    uint32_t max = 0, n = 0;
    for (uint32_t i = 0; i < d->ntraces; i++) {
        if (d->traces[i].depth > max) {
            max = d->traces[i].depth;
            n = 0;
        }
        if (d->traces[i].depth == max)
            n++;
    }
    if (at_max)
        *at_max = n;
    return max;
}

int hd_stacks_cut(const hprof_data *d, uint32_t *max, uint32_t *at_max)
{
    *max = hd_max_depth(d, at_max);
    return *max > 0 && ((d->depth_option > 0 && (int)*max >= d->depth_option) ||
                        (d->depth_option < 0 && *at_max * 4 >= d->ntraces));
}

/* ------------------------------------------------------------ profiles */

static const struct kind_desc {
    const char        *name, *title;
    uint32_t           nvalues;
    profile_value_type types[PROFILE_MAX_VALUES];
    uint32_t           default_value;
} KINDS[HD_KINDS] = {
    [HD_CPU_SAMPLES]  = { "cpu", "CPU samples", 2,
                          { { "samples", "count" }, { "cpu", "nanoseconds" } }, 0 },
    [HD_CPU_TIMES]    = { "times", "CPU time (cpu=times)", 2,
                          { { "calls", "count" }, { "cpu", "nanoseconds" } }, 1 },
    [HD_SITES]        = { "alloc", "Allocation sites", 4,
                          { { "inuse_space", "bytes" }, { "inuse_objects", "count" },
                            { "alloc_space", "bytes" }, { "alloc_objects", "count" } }, 0 },
    [HD_MONITOR_TIME] = { "monitor", "Monitor contention", 2,
                          { { "contentions", "count" }, { "delay", "nanoseconds" } }, 1 },
    [HD_MONITOR_WAIT] = { "wait", "Monitor waits", 2,
                          { { "waits", "count" }, { "delay", "nanoseconds" } }, 1 },
};

const char *hd_kind_name(hd_kind k)
{
    return k < HD_KINDS ? KINDS[k].name : "?";
}

const char *hd_kind_title(hd_kind k)
{
    return k < HD_KINDS ? KINDS[k].title : "?";
}

static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* A row's stack: its trace's frames, and the row's class as a pseudo frame
 * on top (the leaf) when it has one. */
static int add_row_sample(hprof_data *d, profile *p, const hd_row *row, const int64_t *values,
                          uint32_t *ids)
{
    const hd_trace *t = hd_find_trace(d, row->trace);
    if (t == NULL)
        return -2;
    uint32_t n = 0;
    if (row->class_name)
        ids[n++] = profile_frame_id(p, "", row->class_name, "", "", PROFILE_LINE_UNKNOWN);
    for (uint32_t i = 0; i < t->depth && n < PROFILE_MAX_DEPTH; i++) {
        const hd_frame *f = &d->frames[t->first + i];
        /* A native function ("[libjvm.so].G1ParScanThreadState::trim_queue",
         * native=y) is named by itself, as the agent's own pprof= and
         * collapsed= name it, its object as its file. */
        if (f->class_name[0] == '[' && f->line == PROFILE_LINE_NATIVE && f->file && strcmp(f->class_name, "[unwalkable]") != 0 &&
            strlen(f->class_name) == strlen(f->file) + 2 && strncmp(f->class_name + 1, f->file, strlen(f->file)) == 0) {
            char kernel[600];
            snprintf(kernel, sizeof kernel, "%s_[k]", f->method);     /* as the agent names kernel frames */
            ids[n++] = profile_frame_id(p, "", strcmp(f->file, "kernel") == 0 ? kernel : f->method, "", f->file,
                                        f->line);
        } else {
            ids[n++] = profile_frame_id_run(p, f->class_name, f->method, f->signature, f->file, f->line, f->run);
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == 0)
            return -1;
    const hd_thread *th = t->thread ? hd_find_thread(d, t->thread) : NULL;
    return profile_add(p, ids, n, th ? th->name : NULL, values);
}

/* a * b, or INT64_MAX when that does not fit (a damaged file's numbers). */
static int64_t saturating_product(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return 0;
    return b != 0 && a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* The values a profile of kind k keeps of a row, in KINDS' order. */
static void profile_values(hd_kind k, const hprof_data *d, const hd_row *row, int64_t *out)
{
    memset(out, 0, PROFILE_MAX_VALUES * sizeof *out);
    switch (k) {
    case HD_CPU_SAMPLES:
        out[0] = row->values[0];
        out[1] = saturating_product(row->values[0], saturating_product(d->interval_ms, 1000000));
        break;
    case HD_SITES:
        out[0] = row->values[0];
        out[1] = row->values[1];
        out[2] = row->values[2];
        out[3] = row->values[3];
        break;
    default:
        out[0] = row->values[0];
        out[1] = row->values[1];
        break;
    }
}

/* CPU SAMPLES rows under cutoff= are not in the file, but the total counts
 * them: they become one pseudo frame, so a profile's total is the file's. */
static int add_cutoff_remainder(hprof_data *d, hd_kind k, profile *p, uint32_t *ids)
{
    const hd_section *s = &d->sections[k];
    if (k != HD_CPU_SAMPLES)
        return 0;
    int64_t listed = 0;
    for (uint32_t i = 0; i < s->nrows; i++)
        listed = profile_add_saturated(listed, s->rows[i].values[0]);
    if (s->total <= listed)
        return 0;
    hd_row rest = { 0, NULL, { s->total - listed, 0, 0, 0 } };
    int64_t values[PROFILE_MAX_VALUES];
    profile_values(k, d, &rest, values);
    ids[0] = profile_frame_id(p, HD_CUTOFF_CLASS, HD_CUTOFF_METHOD, "", "", PROFILE_LINE_UNKNOWN);
    return ids[0] ? profile_add(p, ids, 1, NULL, values) : -1;
}

static profile *new_profile(const hprof_data *d, hd_kind k)
{
    const struct kind_desc *kd = &KINDS[k];
    uint32_t nvalues = kd->nvalues;
    if (k == HD_CPU_SAMPLES && d->interval_ms <= 0)
        nvalues = 1;                     /* no interval known: samples only */
    profile *p = profile_new(kd->title, kd->types, nvalues);
    if (p == NULL)
        return NULL;
    profile_set_default_value(p, kd->default_value < nvalues ? kd->default_value : 0);
    if (k == HD_CPU_SAMPLES && d->interval_ms > 0)
        profile_set_period(p, kd->types[1], saturating_product(d->interval_ms, 1000000));
    profile_set_time(p, saturating_product(d->start_ms, 1000000),
                     saturating_product(d->duration_ms, 1000000));
    return p;
}

static int build_one(hprof_data *d, hd_kind k, uint32_t *ids, char *err, size_t errlen)
{
    const hd_section *s = &d->sections[k];
    profile *p = new_profile(d, k);
    if (p == NULL) {
        say(err, errlen, "%s: out of memory", d->path);
        return -1;
    }
    d->profiles[k] = p;
    for (uint32_t i = 0; i < s->nrows; i++) {
        int64_t values[PROFILE_MAX_VALUES];
        profile_values(k, d, &s->rows[i], values);
        int rc = add_row_sample(d, p, &s->rows[i], values, ids);
        if (rc == -2) {
            say(err, errlen, "%s: the last %s section names trace %u, which the file does not hold",
                d->path, KINDS[k].title, s->rows[i].trace);
            return -1;
        }
        if (rc != 0) {
            say(err, errlen, "%s: out of memory", d->path);
            return -1;
        }
    }
    if (add_cutoff_remainder(d, k, p, ids) != 0) {
        say(err, errlen, "%s: out of memory", d->path);
        return -1;
    }
    /* Allocation samples (JFR) know what was allocated, not what stays
     * live: show allocated bytes first, not a profile of zeros. */
    if (k == HD_SITES && profile_total(p, 0) == 0 && profile_total(p, 2) > 0)
        profile_set_default_value(p, 2);
    return 0;
}

int hprof_data_build_profiles(hprof_data *d, char *err, size_t errlen)
{
    uint32_t *ids = malloc((PROFILE_MAX_DEPTH + 1) * sizeof *ids);
    if (ids == NULL) {
        say(err, errlen, "%s: out of memory", d->path);
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < HD_KINDS && rc == 0; k++)
        if (d->sections[k].present && d->profiles[k] == NULL)
            rc = build_one(d, (hd_kind)k, ids, err, errlen);
    free(ids);
    return rc;
}

/* ------------------------------------------------------------ reading */

#define MAX_FILE_BYTES ((size_t)4 << 30)

static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        say(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE_BYTES) {
        say(err, errlen, "%s: not a regular file of at most 4 GiB", path);
        fclose(f);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        say(err, errlen, "%s: out of memory (%zu bytes)", path, size);
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != size) {
        say(err, errlen, "%s: read error", path);
        free(buf);
        return NULL;
    }
    buf[size] = '\0';
    *len = size;
    return buf;
}

/* What a file that is no HPROF file is, by its first bytes, and what
 * reads it: NULL if it looks like none of these (the text reader then says
 * what is wrong with it as a text file). */
const char *hprof_data_foreign_format(const unsigned char *bytes, size_t len)
{
    if (len >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
        return "a gzip-compressed file: a pprof profile (.pb.gz) is read by `go tool pprof`; a compressed "
               "heap dump (jcmd GC.heap_dump -gz=1): gunzip it first";
    if (len >= 5 && (memcmp(bytes, "<!DOC", 5) == 0 || memcmp(bytes, "<html", 5) == 0))
        return "an HTML page (a flame graph or a report): open it in a browser";
    if (len >= 4 && memcmp(bytes, "\x7f" "ELF", 4) == 0)
        return "an ELF program or library, not a profile";
    return NULL;
}

hprof_data *hprof_data_read(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *bytes = slurp(path, &len, err, errlen);
    if (bytes == NULL)
        return NULL;
    const char *foreign = hprof_data_foreign_format((const unsigned char *)bytes, len);
    if (foreign != NULL) {
        snprintf(err, errlen, "%s is not an HPROF text or binary file: it is %s", path, foreign);
        free(bytes);
        return NULL;
    }
    static const char binary_magic[] = "JAVA PROFILE 1.0.";
    hprof_data *d;
    if (len >= 4 && memcmp(bytes, "FLR", 4) == 0) {
        d = hprof_jfr_parse(path, (const unsigned char *)bytes, len, err, errlen);
        free(bytes);
    } else if (len > sizeof binary_magic && memcmp(bytes, binary_magic, sizeof binary_magic - 1) == 0 &&
        memchr(bytes, '\0', len < 32 ? len : 32) != NULL) {
        d = hprof_binary_parse(path, (const unsigned char *)bytes, len, err, errlen);
        free(bytes);
    } else {
        d = hprof_text_parse(path, bytes, len, err, errlen);
        if (d == NULL)
            free(bytes);
    }
    if (d != NULL && hprof_data_build_profiles(d, err, errlen) != 0) {
        hprof_data_free(d);
        return NULL;
    }
    return d;
}
