/*
 * hprof_jfr_reader.c: a JFR recording (src/jfr) into hprof_data, so that
 * report, convert and diff read it as they read an HPROF file.
 *
 * Events become rows of the sections of the kinds they measure, each row a
 * trace (the event's stack on its thread) with values:
 *   jdk.ExecutionSample                CPU SAMPLES: one sample
 *   jdk.ObjectAllocationSample         SITES: weight as allocated bytes, the
 *                                      object's class on top (as heap=sites)
 *   jdk.ObjectAllocationInNewTLAB /
 *   jdk.ObjectAllocationOutsideTLAB    SITES, only when the recording holds no
 *                                      ObjectAllocationSample (both sample the
 *                                      same allocations): TLAB size / size
 *   jdk.JavaMonitorEnter               MONITOR TIME: count, duration
 *   jdk.JavaMonitorWait, jdk.ThreadPark  MONITOR WAIT TIME: count, duration
 * and hprof's own events (src/profile/jfr_writer.h):
 *   hprof.MethodTime                   CPU TIME: calls, cpuTime
 *   hprof.AllocationSite               SITES, exact (live and allocated
 *                                      objects and bytes); when the recording
 *                                      holds any, the allocation samples
 *                                      (which stand for the same allocations)
 *                                      are not added
 * Everything else (jdk.NativeMethodSample included: threads in native code,
 * not on a CPU) is counted, not read. Stacks, methods, classes and threads
 * are read once per distinct pool entry (cached by their offset in the file).
 */
#include "hprof_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/keytab.h"
#include "../core/tables.h"
#include "../jfr/jfr_reader.h"

#define THREAD_SERIAL_BASE 200001u
#define TRACE_SERIAL_BASE  300001u
#define NAME_MAX_BYTES     1024

enum source { SRC_CPU, SRC_ALLOC_SAMPLE, SRC_ALLOC_TLAB, SRC_ALLOC_OUTSIDE, SRC_ENTER, SRC_WAIT, SRC_PARK,
              SRC_NATIVE, SRC_METHOD_TIME, SRC_ALLOC_SITE, SRC_COUNT };

static const struct source_desc {
    const char *event;
    const char *thread_field;     /* the thread the event is about */
    const char *class_field;      /* the class shown on top of the stack, or NULL */
    const char *bytes_field;      /* allocations: the bytes it stands for */
    int         kind;             /* hd_kind, or -1: counted only */
} SOURCES[SRC_COUNT] = {
    [SRC_CPU]           = { "jdk.ExecutionSample", "sampledThread", NULL, NULL, HD_CPU_SAMPLES },
    [SRC_ALLOC_SAMPLE]  = { "jdk.ObjectAllocationSample", "eventThread", "objectClass", "weight", HD_SITES },
    [SRC_ALLOC_TLAB]    = { "jdk.ObjectAllocationInNewTLAB", "eventThread", "objectClass", "tlabSize", HD_SITES },
    [SRC_ALLOC_OUTSIDE] = { "jdk.ObjectAllocationOutsideTLAB", "eventThread", "objectClass", "allocationSize",
                            HD_SITES },
    [SRC_ENTER]         = { "jdk.JavaMonitorEnter", "eventThread", "monitorClass", NULL, HD_MONITOR_TIME },
    [SRC_WAIT]          = { "jdk.JavaMonitorWait", "eventThread", "monitorClass", NULL, HD_MONITOR_WAIT },
    [SRC_PARK]          = { "jdk.ThreadPark", "eventThread", "parkedClass", NULL, HD_MONITOR_WAIT },
    [SRC_NATIVE]        = { "jdk.NativeMethodSample", NULL, NULL, NULL, -1 },
    [SRC_METHOD_TIME]   = { "hprof.MethodTime", "eventThread", NULL, NULL, HD_CPU_TIMES },
    [SRC_ALLOC_SITE]    = { "hprof.AllocationSite", "eventThread", "objectClass", NULL, HD_SITES },
};

typedef struct method_names {
    const char *class_name, *method, *signature;
} method_names;

typedef struct stack_template {
    uint32_t first, depth;        /* in loader.frames */
} stack_template;

typedef struct loader {
    hprof_data     *d;
    char           *err;
    size_t          errlen;
    uint64_t        counts[SRC_COUNT];
    uint64_t        events;
    uint32_t        chunks;
    int64_t         first_start_nanos, last_end_nanos;
    uint32_t        max_depth;
    int             any_truncated;
    uint64_t        cpu_type_id;            /* this chunk's id of jdk.ExecutionSample, 0 if none yet */
    hd_index       *periods_ms;             /* event type id -> its "period" setting in ms */
    /* caches by offset in the file (a pool entry is read once) */
    hd_index       *method_at, *stack_at, *thread_at, *class_at;
    method_names   *methods;
    uint32_t        nmethods, methods_cap;
    hd_frame       *frames;                 /* the templates' frames */
    uint32_t        nframes, frames_cap;
    stack_template *stacks;
    uint32_t        nstacks, stacks_cap;
    const char    **classes;
    uint32_t        nclasses, classes_cap;
    hd_index       *thread_ids;             /* Java (or OS) thread id -> thread serial */
    hd_index       *traces;                 /* stack template << 32 | thread serial -> trace serial */
    keytab          rows[HD_KINDS];         /* trace serial + class name -> row */
    hd_section      tlab;                   /* SITES from TLAB events, used when there are no samples */
    keytab          tlab_rows;
    hd_section      own_sites;              /* SITES from hprof.AllocationSite, used when there are any */
    keytab          own_sites_rows;
} loader;

static int oom(loader *l)
{
    snprintf(l->err, l->errlen, "%s: out of memory", l->d->path);
    return -1;
}

/* A string value (or a Symbol, or a struct holding one) kept in d's store;
 * "" when null. A class name (JFR gives the JVM's: "java/util/HashMap",
 * "[B") in Java form, as the agent names classes: "java.util.HashMap", "byte[]". */
static int keep_string(loader *l, const jfr_value *v, int class_name, const char **out)
{
    char buf[NAME_MAX_BYTES], java[NAME_MAX_BYTES];
    int rc = jfr_string(v, buf, sizeof buf);
    if (rc < 0)
        return -1;
    if (class_name && buf[0] == '[' && signature_to_java_name(buf, java, sizeof java) == 0)
        memcpy(buf, java, strlen(java) + 1);
    else if (class_name)
        for (char *p = buf; *p; p++)
            if (*p == '/')
                *p = '.';
    *out = hd_strndup(l->d, buf, strlen(buf));
    return *out ? 0 : oom(l);
}

/* A java.lang.Class value's name, Java form; "" when null. */
static int class_name(loader *l, const jfr_value *cls, const char **out)
{
    uint32_t at;
    *out = "";
    if (cls->null)
        return 0;
    if (hd_map_get(l->class_at, cls->at, &at) == 0) {
        *out = l->classes[at];
        return 0;
    }
    jfr_value name;
    if (jfr_field(cls, "name", &name) < 0 || keep_string(l, &name, 1, out) != 0)
        return -1;
    if (hd_map_put(&l->class_at, cls->at, l->nclasses) != 0 ||
        hd_push((void **)&l->classes, &l->nclasses, &l->classes_cap, sizeof *out, out) != 0)
        return oom(l);
    return 0;
}

static int method_of(loader *l, const jfr_value *m, const method_names **out)
{
    uint32_t at;
    if (hd_map_get(l->method_at, m->at, &at) != 0) {
        method_names names = { "", "", "" };
        jfr_value type, name, desc;
        if (jfr_field(m, "type", &type) < 0 || class_name(l, &type, &names.class_name) != 0 ||
            jfr_field(m, "name", &name) < 0 || keep_string(l, &name, 0, &names.method) != 0 ||
            jfr_field(m, "descriptor", &desc) < 0 || keep_string(l, &desc, 0, &names.signature) != 0)
            return -1;
        at = l->nmethods;
        if (hd_map_put(&l->method_at, m->at, at) != 0 ||
            hd_push((void **)&l->methods, &l->nmethods, &l->methods_cap, sizeof names, &names) != 0)
            return oom(l);
    }
    *out = &l->methods[at];
    return 0;
}

static int32_t run_of(const char *frame_type)
{
    if (strcmp(frame_type, "Interpreted") == 0)
        return PROFILE_RUN_INTERPRETED;
    if (strcmp(frame_type, "JIT compiled") == 0)
        return PROFILE_RUN_COMPILED;
    if (strcmp(frame_type, "Inlined") == 0)
        return PROFILE_RUN_INLINED;
    return PROFILE_RUN_UNKNOWN;
}

/* One jdk.types.StackFrame into the templates' frames. */
static int add_frame(loader *l, const jfr_value *frame)
{
    jfr_value method, line, type;
    const method_names *names = NULL;
    int64_t number = 0;
    char type_name[64];
    if (jfr_field(frame, "method", &method) < 0 || jfr_field(frame, "lineNumber", &line) < 0 ||
        jfr_long(&line, &number) < 0 || jfr_path(frame, &type, "type", "description", (char *)NULL) < 0 ||
        jfr_string(&type, type_name, sizeof type_name) < 0)
        return -1;
    static const method_names unknown = { "<unknown class>", "<unknown method>", "" };
    if (method.null)
        names = &unknown;
    else if (method_of(l, &method, &names) != 0)
        return -1;
    int native = strcmp(type_name, "Native") == 0;
    hd_frame f = { names->class_name, names->method, names->signature, "",
                   number > 0 && number <= INT32_MAX ? (int32_t)number
                   : native ? PROFILE_LINE_NATIVE : PROFILE_LINE_UNKNOWN,
                   run_of(type_name) };
    return hd_push((void **)&l->frames, &l->nframes, &l->frames_cap, sizeof f, &f) == 0 ? 0 : oom(l);
}

/* A jdk.types.StackTrace value's template (0: no stack). */
static int stack_of(loader *l, const jfr_value *st, uint32_t *out)
{
    *out = 0;
    if (st->null)
        return 0;
    if (hd_map_get(l->stack_at, st->at, out) == 0)
        return 0;
    jfr_value frames, truncated, cursor, frame;
    int64_t cut = 0;
    uint64_t n = 0;
    if (jfr_field(st, "truncated", &truncated) < 0 || jfr_long(&truncated, &cut) < 0 ||
        jfr_field(st, "frames", &frames) < 0 || jfr_array(&frames, &n, &cursor) < 0)
        return -1;
    stack_template t = { l->nframes, 0 };
    for (uint64_t i = 0; i < n; i++) {
        int rc = jfr_array_next(&cursor, &frame);
        if (rc < 0)
            return -1;
        if (rc > 0)
            continue;
        if (t.depth < PROFILE_MAX_DEPTH) {
            if (add_frame(l, &frame) != 0)
                return -1;
            t.depth++;
        }
    }
    l->any_truncated |= cut != 0 || n > PROFILE_MAX_DEPTH;
    if (t.depth > l->max_depth)
        l->max_depth = t.depth;
    *out = l->nstacks;
    if (hd_map_put(&l->stack_at, st->at, l->nstacks) != 0 ||
        hd_push((void **)&l->stacks, &l->nstacks, &l->stacks_cap, sizeof t, &t) != 0)
        return oom(l);
    return 0;
}

/* A java.lang.Thread value's serial (0: no thread); threads are told apart
 * by their Java id (their OS id for the JVM's own). */
static int thread_of(loader *l, const jfr_value *th, uint32_t *out)
{
    *out = 0;
    if (th->null)
        return 0;
    if (hd_map_get(l->thread_at, th->at, out) == 0)
        return 0;
    jfr_value v;
    int64_t java_id = 0, os_id = 0;
    hd_thread t = { 0, "", "", 0, 0 };
    if (jfr_field(th, "javaThreadId", &v) < 0 || jfr_long(&v, &java_id) < 0 ||
        jfr_field(th, "osThreadId", &v) < 0 || jfr_long(&v, &os_id) < 0 ||
        jfr_field(th, "javaName", &v) < 0 || keep_string(l, &v, 0, &t.name) != 0)
        return -1;
    if (t.name[0] == '\0' && (jfr_field(th, "osName", &v) < 0 || keep_string(l, &v, 0, &t.name) != 0))
        return -1;
    if (jfr_path(th, &v, "group", "name", (char *)NULL) < 0 || keep_string(l, &v, 0, &t.group) != 0)
        return -1;
    uint64_t id = java_id > 0 ? (uint64_t)java_id : (uint64_t)os_id | 1ull << 63;
    if (hd_map_get(l->thread_ids, id, out) != 0) {
        t.serial = THREAD_SERIAL_BASE + l->d->nthreads;
        t.object_id = (uint64_t)(java_id > 0 ? java_id : os_id);
        if (hd_map_put(&l->thread_ids, id, t.serial) != 0 || hd_add_thread(l->d, &t) != 0)
            return oom(l);
        *out = t.serial;
    }
    return hd_map_put(&l->thread_at, th->at, *out) == 0 ? 0 : oom(l);
}

/* The trace of a stack template on a thread, made on first use. */
static int trace_of(loader *l, uint32_t stack, uint32_t thread, uint32_t *serial)
{
    uint64_t key = (uint64_t)stack << 32 | thread;
    if (hd_map_get(l->traces, key, serial) == 0)
        return 0;
    *serial = TRACE_SERIAL_BASE + l->d->ntraces;
    if (hd_map_put(&l->traces, key, *serial) != 0 || hd_begin_trace(l->d, *serial, thread) != 0)
        return oom(l);
    const stack_template *t = &l->stacks[stack];
    for (uint32_t i = 0; i < t->depth; i++)
        if (hd_add_frame(l->d, &l->frames[t->first + i]) != 0)
            return oom(l);
    return 0;
}

/* Adds values to the row of (trace, class) in section s. */
static int add_to_row(loader *l, hd_section *s, keytab *rows, uint32_t trace, const char *cls,
                      const int64_t *values)
{
    char key[sizeof trace + NAME_MAX_BYTES];
    size_t n = strlen(cls ? cls : "");
    memcpy(key, &trace, sizeof trace);
    memcpy(key + sizeof trace, cls ? cls : "", n);
    int created = 0;
    uint32_t at = keytab_intern(rows, key, (uint32_t)(sizeof trace + n), &created);
    if (at == KEYTAB_FULL)
        return oom(l);
    if (created) {
        hd_row row = { trace, cls, { 0, 0, 0, 0 } };
        if (hd_add_row(s, &row) != 0)
            return oom(l);
    }
    if (at >= s->nrows)
        return oom(l);
    for (int i = 0; i < PROFILE_MAX_VALUES; i++)
        s->rows[at].values[i] = profile_add_saturated(s->rows[at].values[i], values[i]);
    s->present = 1;
    return 0;
}

/* "10 ms", "1 s", "500 us": a period in ms (at least 1), or -1. */
static int64_t period_ms(const char *text)
{
    char unit[8];
    double n;
    if (sscanf(text, "%lf %7s", &n, unit) != 2 || n <= 0)
        return -1;
    double ms = strcmp(unit, "ns") == 0 ? n / 1e6 : strcmp(unit, "us") == 0 ? n / 1e3
              : strcmp(unit, "ms") == 0 ? n : strcmp(unit, "s") == 0 ? n * 1e3
              : strcmp(unit, "m") == 0 ? n * 60e3 : -1;
    return ms < 0 ? -1 : ms < 1 ? 1 : ms > 1e9 ? (int64_t)1e9 : (int64_t)(ms + 0.5);
}

/* jdk.ActiveSetting "period" of an event type: kept for the CPU samples' interval. */
static int active_setting(loader *l, const jfr_event *e)
{
    jfr_value v;
    int64_t id = 0;
    char name[32], value[64];
    if (jfr_field(&e->fields, "id", &v) < 0 || jfr_long(&v, &id) < 0 || jfr_field(&e->fields, "name", &v) < 0 ||
        jfr_string(&v, name, sizeof name) < 0 || jfr_field(&e->fields, "value", &v) < 0 ||
        jfr_string(&v, value, sizeof value) < 0)
        return -1;
    int64_t ms = strcmp(name, "period") == 0 ? period_ms(value) : -1;
    if (ms > 0 && hd_map_put(&l->periods_ms, (uint64_t)id, (uint32_t)ms) != 0)
        return oom(l);
    return 0;
}

/* The long field `name` of e, at least 0, into *out. */
static int long_field(const jfr_event *e, const char *name, int64_t *out)
{
    jfr_value v;
    if (jfr_field(&e->fields, name, &v) < 0 || jfr_long(&v, out) < 0)
        return -1;
    if (*out < 0)
        *out = 0;
    return 0;
}

/* hprof.MethodTime (calls, CPU ns) and hprof.AllocationSite (in SITES'
 * order: live bytes and objects, allocated bytes and objects). */
static int own_event(loader *l, const jfr_event *e, int src, uint32_t trace, const char *cls)
{
    static const char *const method_time[] = { "calls", "cpuTime" };
    static const char *const site[] = { "liveBytes", "liveObjects", "allocatedBytes", "allocatedObjects" };
    const char *const *fields = src == SRC_METHOD_TIME ? method_time : site;
    int n = src == SRC_METHOD_TIME ? 2 : 4;
    int64_t values[PROFILE_MAX_VALUES] = { 0, 0, 0, 0 };
    for (int i = 0; i < n; i++)
        if (long_field(e, fields[i], &values[i]) < 0)
            return -1;
    if (src == SRC_METHOD_TIME)
        return add_to_row(l, &l->d->sections[HD_CPU_TIMES], &l->rows[HD_CPU_TIMES], trace, NULL, values);
    return add_to_row(l, &l->own_sites, &l->own_sites_rows, trace, cls, values);
}

static int on_event(void *ctx, const jfr_event *e)
{
    loader *l = ctx;
    l->events++;
    if (strcmp(e->type_name, "jdk.ActiveSetting") == 0)
        return active_setting(l, e);
    int src = 0;
    while (src < SRC_COUNT && strcmp(e->type_name, SOURCES[src].event) != 0)
        src++;
    if (src == SRC_COUNT)
        return 0;
    l->counts[src]++;
    const struct source_desc *sd = &SOURCES[src];
    if (sd->kind < 0)
        return 0;
    if (src == SRC_CPU)
        l->cpu_type_id = e->type_id;
    jfr_value v;
    uint32_t stack, thread, trace;
    const char *cls = NULL;
    int64_t values[PROFILE_MAX_VALUES] = { 0, 0, 0, 0 }, n = 0;
    if (jfr_field(&e->fields, "stackTrace", &v) < 0 || stack_of(l, &v, &stack) != 0 ||
        jfr_field(&e->fields, sd->thread_field, &v) < 0 || thread_of(l, &v, &thread) != 0 ||
        trace_of(l, stack, thread, &trace) != 0)
        return -1;
    if (sd->class_field) {
        if (jfr_field(&e->fields, sd->class_field, &v) < 0 || class_name(l, &v, &cls) != 0)
            return -1;
        if (cls[0] == '\0')
            cls = src == SRC_PARK ? "(no blocker)" : "(unknown class)";
    }
    if (src == SRC_METHOD_TIME || src == SRC_ALLOC_SITE)
        return own_event(l, e, src, trace, cls);
    switch (sd->kind) {
    case HD_CPU_SAMPLES:
        values[0] = 1;
        break;
    case HD_SITES:          /* live bytes and objects unknown; allocated bytes as sampled */
        if (jfr_field(&e->fields, sd->bytes_field, &v) < 0 || jfr_long(&v, &n) < 0)
            return -1;
        values[2] = n > 0 ? n : 0;
        break;
    default:                /* count, duration */
        if (jfr_field(&e->fields, "duration", &v) < 0 || jfr_long(&v, &n) < 0)
            return -1;
        values[0] = 1;
        values[1] = jfr_ticks_to_nanos(e->chunk, n);
        break;
    }
    if (sd->kind == HD_SITES && src != SRC_ALLOC_SAMPLE)
        return add_to_row(l, &l->tlab, &l->tlab_rows, trace, cls, values);
    return add_to_row(l, &l->d->sections[sd->kind], &l->rows[sd->kind], trace, cls, values);
}

static int on_chunk(void *ctx, const jfr_chunk_info *c)
{
    loader *l = ctx;
    /* (a damaged header may say anything: no negative times, no overflow) */
    int64_t start = c->start_nanos > 0 ? c->start_nanos : 0;
    int64_t end = profile_add_saturated(start, c->duration_nanos > 0 ? c->duration_nanos : 0);
    if (l->chunks++ == 0 || start < l->first_start_nanos)
        l->first_start_nanos = start;
    if (end > l->last_end_nanos)
        l->last_end_nanos = end;
    return 0;
}

/* Totals, dates, the interval, and what was read, once every chunk is. */
static int finish(loader *l)
{
    hprof_data *d = l->d;
    hd_section *sites = l->own_sites.nrows > 0 ? &l->own_sites
                      : d->sections[HD_SITES].nrows == 0 && l->tlab.nrows > 0 ? &l->tlab : NULL;
    if (sites) {
        hd_section swap = d->sections[HD_SITES];
        d->sections[HD_SITES] = *sites;
        *sites = swap;
    }
    for (int k = 0; k < HD_KINDS; k++) {
        hd_section *s = &d->sections[k];
        if (!s->present)
            continue;
        s->times_seen = 1;
        int64_t sum[4] = { 0, 0, 0, 0 };
        for (uint32_t i = 0; i < s->nrows; i++)
            for (int v = 0; v < 4; v++)
                sum[v] = profile_add_saturated(sum[v], s->rows[i].values[v]);
        /* SITES: live bytes (0 from samples, which know no live objects) */
        s->total = k == HD_CPU_SAMPLES ? sum[0] : k == HD_SITES ? sum[0] : sum[1] / 1000000;
        if (k == HD_SITES) {
            s->total_live_objs = sum[1];
            s->total_alloc_bytes = sum[2];
            s->total_alloc_objs = sum[3];
        }
    }
    uint32_t ms;
    if (l->cpu_type_id && hd_map_get(l->periods_ms, l->cpu_type_id, &ms) == 0)
        d->interval_ms = (int)ms;
    d->start_ms = l->first_start_nanos / 1000000;
    d->duration_ms = (l->last_end_nanos - l->first_start_nanos) / 1000000;
    /* JFR cuts stacks at its stackdepth= (64 by default) and says so per stack. */
    d->depth_option = l->any_truncated ? (int)l->max_depth : (int)l->max_depth + 1;
    char created[64] = "";
    time_t secs = (time_t)(l->first_start_nanos / 1000000000);
    struct tm tm;
    if (gmtime_r(&secs, &tm))
        strftime(created, sizeof created, "%Y-%m-%d %H:%M:%S UTC", &tm);
    char read[900];
    size_t n = (size_t)snprintf(read, sizeof read, "%llu in %u chunk%s; read:", (unsigned long long)l->events,
                                l->chunks, l->chunks == 1 ? "" : "s");
    for (int s = 0; s < SRC_COUNT && n < sizeof read; s++)
        if (l->counts[s])
            n += (size_t)snprintf(read + n, sizeof read - n, " %s %llu%s", SOURCES[s].event,
                                  (unsigned long long)l->counts[s],
                                  s == SRC_NATIVE ? " (counted only: threads in native code, not on a CPU)"
                                  : s != SRC_ALLOC_SITE && SOURCES[s].kind == HD_SITES && l->counts[SRC_ALLOC_SITE]
                                  ? " (not added: hprof.AllocationSite holds the same allocations)"
                                  : (s == SRC_ALLOC_TLAB || s == SRC_ALLOC_OUTSIDE) && l->counts[SRC_ALLOC_SAMPLE]
                                  ? " (not added: ObjectAllocationSample covers the same allocations)" : "");
    if (l->counts[SRC_CPU] + l->counts[SRC_ALLOC_SAMPLE] + l->counts[SRC_ALLOC_TLAB] +
        l->counts[SRC_ALLOC_OUTSIDE] + l->counts[SRC_ENTER] + l->counts[SRC_WAIT] + l->counts[SRC_PARK] +
        l->counts[SRC_METHOD_TIME] + l->counts[SRC_ALLOC_SITE] == 0 &&
        n < sizeof read)
        snprintf(read + n, sizeof read - n, " none of the events hprof reads");
    d->created = hd_strndup(d, created, strlen(created));
    d->events_read = hd_strndup(d, read, strlen(read));
    return d->created && d->events_read ? 0 : oom(l);
}

hprof_data *hprof_jfr_parse(const char *path, const unsigned char *bytes, size_t len, char *err, size_t errlen)
{
    loader l;
    memset(&l, 0, sizeof l);
    l.err = err;
    l.errlen = errlen;
    if ((l.d = hprof_data_new(path, "JFR recording")) == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    for (int k = 0; k < HD_KINDS; k++)
        keytab_init(&l.rows[k], UINT32_MAX - 1);
    keytab_init(&l.tlab_rows, UINT32_MAX - 1);
    keytab_init(&l.own_sites_rows, UINT32_MAX - 1);
    l.tlab.date = l.own_sites.date = "";     /* as every section's (hprof_data_new): they may become SITES */
    stack_template empty = { 0, 0 };
    jfr_callbacks cb = { on_chunk, on_event };
    int rc = hd_push((void **)&l.stacks, &l.nstacks, &l.stacks_cap, sizeof empty, &empty) != 0 ? oom(&l)
           : jfr_read(l.d->path, bytes, len, &cb, &l, err, errlen);
    if (rc == 0)
        rc = finish(&l);
    for (int k = 0; k < HD_KINDS; k++)
        keytab_free(&l.rows[k]);
    keytab_free(&l.tlab_rows);
    free(l.tlab.rows);
    keytab_free(&l.own_sites_rows);
    free(l.own_sites.rows);
    free(l.methods);
    free(l.frames);
    free(l.stacks);
    free(l.classes);
    hd_map_free(l.method_at);
    hd_map_free(l.stack_at);
    hd_map_free(l.thread_at);
    hd_map_free(l.class_at);
    hd_map_free(l.thread_ids);
    hd_map_free(l.traces);
    hd_map_free(l.periods_ms);
    if (rc != 0) {
        hprof_data_free(l.d);
        return NULL;
    }
    return l.d;
}
