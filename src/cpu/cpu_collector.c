/* cpu_collector.c: see cpu_collector.h. */
#include "cpu_collector.h"
#include "code_map.h"
#include "../snapshot/stack_profile.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One collector's counts; every field under `lock`. */
/* One thread's samples since the last reset (thread 0: a free slot). */
typedef struct thread_count_slot {
    serial_t thread;
    uint64_t count;
} thread_count_slot;

struct cpu_collector {
    pthread_mutex_t      lock;
    cpu_collector_config cfg;

    /* counts[serial - EMPTY_TRACE_SERIAL]: the empty trace, then every trace. */
    uint64_t *counts;
    uint32_t  counts_cap;
    uint64_t  total;

    /* The summary (cpu_collector_summary): samples by category, and by
     * thread (thread_counts: open addressing by serial, emptied at each
     * reset; serial 0 in no_thread). Not an array indexed by serial:
     * serials only grow, and a program that starts threads all day would
     * keep 8 bytes for every thread it ever ran (64 MB after the 3.4
     * million threads of an hour of bench/loop). */
    uint64_t  category_counts[CPU_SUMMARY_ROWS];
    thread_count_slot *thread_counts;
    uint32_t  thread_counts_cap, thread_counts_used;
    uint64_t  no_thread;

    /* Whole stacks (stack_table.h) -> count: stack_counts[id - 1]; samples
     * whose stack the table could not keep are in unkept_stacks. */
    uint64_t *stack_counts;
    uint32_t  stack_counts_cap;
    uint64_t  unkept_stacks;

    /* cpu_collector_set_stack_ends */
    const void *stack_entry, *stack_boundary, *stack_carrier_only;
};

/* HotSpot's AsyncGetCallTrace failure codes 0, -1, ... -10 (forte.cpp). */
static const char *const asgct_failures[] = {
    "no_Java_frame", "no_class_load", "GC_active", "unknown_not_Java",
    "not_walkable_not_Java", "unknown_Java", "not_walkable_Java", "unknown_state",
    "thread_exit", "deopt", "safepoint",
};
#define ASGCT_CODES ((int32_t)(sizeof asgct_failures / sizeof asgct_failures[0]))

/* The sampler's own codes: SAMPLER_STOP_* (1, 2, ...) and SAMPLER_NO_NATIVE_FRAME. */
static const char *const stop_reasons[] = {
    "native_read_failed", "native_no_unwind_info", "native_depth_limit", "native_unknown_code",
};
#define STOP_CODES ((int32_t)(sizeof stop_reasons / sizeof stop_reasons[0]))

const char *cpu_failure_reason(int32_t code)
{
    if (code <= 0 && code > -ASGCT_CODES)
        return asgct_failures[-code];
    if (code >= 1 && code <= STOP_CODES)
        return stop_reasons[code - 1];
    if (code == SAMPLER_NO_NATIVE_FRAME)
        return "native_unknown_code";
    return "unknown_failure";
}

/* HotSpot's names for its threads, as the kernel keeps them (15 characters:
 * "C2 CompilerThread0" is "C2 CompilerThre"). */
static const char *const gc_thread_prefixes[] = {
    "GC Thread", "G1 ", "ZWorker", "ZDriver", "ZDirector", "ZStat", "ZUnmap", "ZUncommit", "XWorker",
    "XDriver", "Shenandoah", "Parallel GC", "Conc#", "SATB", "PLAB",
};
static const char *const jit_thread_prefixes[] = {
    "C1 Compiler", "C2 Compiler", "JVMCI", "Sweeper", "CompilerThre",
};
static const char *const vm_thread_prefixes[] = {
    "VM Thread", "VM Periodic", "Service Thread", "Monitor Deflat", "Notification", "Signal Dispatch",
    "JFR ", "Attach Listen", "Common-Cleaner", "Reference Handl", "Finalizer",
};

static int has_prefix(const char *name, const char *const *prefixes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

int cpu_category_of_thread_name(const char *name)
{
#define PREFIXES(a) a, sizeof a / sizeof a[0]
    if (has_prefix(name, PREFIXES(gc_thread_prefixes)))
        return CPU_CATEGORY_GC;
    if (has_prefix(name, PREFIXES(jit_thread_prefixes)))
        return CPU_CATEGORY_JIT;
    if (has_prefix(name, PREFIXES(vm_thread_prefixes)))
        return CPU_CATEGORY_VM;
#undef PREFIXES
    return CPU_CATEGORY_NATIVE;
}

cpu_collector *cpu_collector_new(const cpu_collector_config *config)
{
    cpu_collector *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->cfg = *config;
    return c;
}

void cpu_collector_free(cpu_collector *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    free(c->counts);
    c->counts = NULL;
    c->counts_cap = 0;
    c->total = 0;
    c->unkept_stacks = 0;
    free(c->stack_counts);
    c->stack_counts = NULL;
    c->stack_counts_cap = 0;
    free(c->thread_counts);
    c->thread_counts = NULL;
    c->thread_counts_cap = c->thread_counts_used = 0;
    memset(c->category_counts, 0, sizeof c->category_counts);
    c->no_thread = 0;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int grow_u64(uint64_t **a, uint32_t *cap, uint32_t index)
{
    if (index < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : 1024;
    while (ncap <= index)
        ncap *= 2;
    uint64_t *n = realloc(*a, (size_t)ncap * sizeof *n);
    if (n == NULL)
        return -1;
    memset(n + *cap, 0, (size_t)(ncap - *cap) * sizeof *n);
    *a = n;
    *cap = ncap;
    return 0;
}

/* Count `count` samples on a trace; called with the lock held. */
static void count_trace(cpu_collector *c, serial_t trace, uint64_t count)
{
    c->total += count;
    if (trace == 0 || grow_u64(&c->counts, &c->counts_cap, trace - EMPTY_TRACE_SERIAL) != 0)
        return;     /* trace table or memory full: still in the total */
    c->counts[trace - EMPTY_TRACE_SERIAL] += count;
}

static void count_stack(cpu_collector *c, stack_id stack, uint64_t count)
{
    if (stack == 0 || grow_u64(&c->stack_counts, &c->stack_counts_cap, stack - 1) != 0)
        c->unkept_stacks += count;      /* still in the snapshot, as [unwalkable].stack_table_full */
    else
        c->stack_counts[stack - 1] += count;
}

static serial_t state_method(profile_tables *tables, int state);

/* A sample without a stack, under [unwalkable].<reason>; with wall_states,
 * its state (>= 0) below it as for any stack. */
static void count_pseudo(cpu_collector *c, serial_t thread, const char *reason, uint64_t count, int state)
{
    profile_tables *tables = c->cfg.tables;
    serial_t m = pseudo_method(tables, reason);
    serial_t f = m ? frame_intern(tables, m, LINE_UNKNOWN) : 0;
    serial_t thread_serial = c->cfg.per_thread ? thread : 0;
    serial_t trace = f ? trace_intern(tables, thread_serial, &f, 1) : 0;
    count_trace(c, trace, count);
    if (c->cfg.keep_stacks) {
        stack_frame whole[2] = { { m, LINE_UNKNOWN, JAVA_RUN_UNKNOWN }, { 0, LINE_UNKNOWN, JAVA_RUN_UNKNOWN } };
        uint32_t n = 1;
        if (c->cfg.wall_states && state >= 0 && (whole[1].method = state_method(tables, state)) != 0)
            n = 2;
        count_stack(c, m ? stack_intern(tables, thread_serial, whole, n, trace) : 0, count);
    }
}

static void count_summary(cpu_collector *c, serial_t thread, int category, uint64_t weight);

void cpu_collector_add_lost(cpu_collector *c, const char *reason, uint64_t count)
{
    if (count == 0)
        return;
    pthread_mutex_lock(&c->lock);
    count_summary(c, 0, CPU_CATEGORY_UNKNOWN, count);
    count_pseudo(c, 0, reason, count, -1);
    pthread_mutex_unlock(&c->lock);
}


void cpu_collector_set_stack_ends(cpu_collector *c, const void *entry, const void *boundary, const void *carrier_only)
{
    pthread_mutex_lock(&c->lock);
    c->stack_entry = entry;
    c->stack_boundary = boundary;
    c->stack_carrier_only = carrier_only;
    pthread_mutex_unlock(&c->lock);
}

/* The pseudo method [state].<name>: ids just above trace_builder's
 * [unwalkable] reasons (no jmethodID is that small). */
#define STATE_METHOD_ID 1000

static serial_t state_method(profile_tables *tables, int state)
{
    uint64_t id = STATE_METHOD_ID + (uint64_t)state;
    serial_t m = method_find(tables, id);
    if (m)
        return m;
    method_desc d = { 0 };
    d.class_serial = class_intern(tables, "L[state];");
    d.name = cpu_state_name(state);
    return d.class_serial ? method_add(tables, id, &d) : 0;
}

static serial_t resolve_frame(profile_tables *tables, const void *method, void *context);

static int is_method(const method_info *mi, const char *cls, const char *prefix)
{
    return strcmp(mi->class_name, cls) == 0 && strncmp(mi->name, prefix, strlen(prefix)) == 0;
}

/* A wall= sample's state: by its top Java frame where the JDK says what the
 * thread waits for, by the JVM's frames for a monitor enter, else by
 * whether it was in a system call. */
static int state_of(const cpu_collector *c, const sample_frame *frames, uint32_t n, uint32_t flags)
{
    int blocked = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t tag = SAMPLE_FRAME_TAG(frames[i].method);
        method_info mi;
        serial_t m = tag == SAMPLE_TAG_STOP ? 0 : resolve_frame(c->cfg.tables, frames[i].method, (void *)c);
        if (m == 0 || method_get(c->cfg.tables, m, &mi) != 0)
            continue;
        if (tag == SAMPLE_TAG_NATIVE_PC) {
            blocked |= strstr(mi.name, "ObjectMonitor::enter") != NULL || strstr(mi.name, "ObjectMonitor::EnterI") != NULL ||
                       strstr(mi.name, "ObjectSynchronizer::enter") != NULL;
            continue;
        }
        if (is_method(&mi, "java.lang.Thread", "sleep"))
            return CPU_STATE_SLEEPING;
        if (is_method(&mi, "java.lang.Object", "wait"))
            return CPU_STATE_WAITING;
        if (is_method(&mi, "jdk.internal.misc.Unsafe", "park") || is_method(&mi, "sun.misc.Unsafe", "park"))
            return CPU_STATE_PARKED;
        break;                     /* the top Java frame says nothing more */
    }
    if (blocked)
        return CPU_STATE_BLOCKED;
    return (flags & SAMPLE_IN_SYSCALL) ? CPU_STATE_SYSCALL
         : (flags & SAMPLE_RUNNABLE) ? CPU_STATE_RUNNABLE : CPU_STATE_RUNNING;
}

/* The resolver trace_build calls for every frame of a sample: Java frames
 * go to the agent's resolver, native frames to its native one, stop frames
 * become [unwalkable].<reason>. */
static serial_t resolve_frame(profile_tables *tables, const void *method, void *context)
{
    const cpu_collector *c = context;
    switch (SAMPLE_FRAME_TAG(method)) {
    case SAMPLE_TAG_NATIVE_PC:
        return c->cfg.resolve_native ? c->cfg.resolve_native(tables, SAMPLE_FRAME_VALUE(method), c->cfg.resolve_context) : 0;
    case SAMPLE_TAG_STOP: {
        uint64_t code = SAMPLE_FRAME_VALUE(method);
        if (code >= SAMPLE_STATE_BASE && code < SAMPLE_STATE_BASE + CPU_STATES)
            return state_method(tables, (int)(code - SAMPLE_STATE_BASE));
        return pseudo_method(tables, cpu_failure_reason((int32_t)(uint32_t)code));
    }
    default:
        return c->cfg.resolve(tables, method, c->cfg.resolve_context);
    }
}

/* Functions a thread's native stack legitimately ends in: a walk that stops
 * in unknown code above one of them has reached the thread's root. */
static int is_thread_root(profile_tables *tables, serial_t method)
{
    static const char *const roots[] = { "start_thread", "clone", "clone3", "__clone", "__clone3",
                                         "_start", "__libc_start_main", "__libc_start_call_main" };
    method_info mi;
    if (method == 0 || method_get(tables, method, &mi) != 0 || mi.kind == FRAME_KIND_JAVA)
        return 0;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strcmp(mi.name, roots[i]) == 0)
            return 1;
    return 0;
}

/* The category of a sample: by the thread for threads that are not Java
 * threads, by the top frame's kind for Java threads. */
static int category_of(const cpu_collector *c, serial_t thread, int java_thread, const sample_frame *top, uint32_t n)
{
    if (!java_thread) {
        thread_info ti;
        return thread && thread_get(c->cfg.tables, thread, &ti) == 0 ? cpu_category_of_thread_name(ti.name) : CPU_CATEGORY_NATIVE;
    }
    if (n == 0)
        return CPU_CATEGORY_UNKNOWN;
    if (SAMPLE_FRAME_TAG(top->method) != SAMPLE_TAG_NATIVE_PC)
        return SAMPLE_FRAME_TAG(top->method) == SAMPLE_TAG_STOP ? CPU_CATEGORY_UNKNOWN : CPU_CATEGORY_JAVA;
    method_info mi;
    serial_t m = resolve_frame(c->cfg.tables, top->method, (void *)c);
    if (m == 0 || method_get(c->cfg.tables, m, &mi) != 0)
        return CPU_CATEGORY_NATIVE;
    return mi.kind == FRAME_KIND_JVM ? CPU_CATEGORY_VM : mi.kind == FRAME_KIND_KERNEL ? CPU_CATEGORY_KERNEL
         : CPU_CATEGORY_NATIVE;
}

static uint32_t thread_slot_of(serial_t thread, uint32_t cap)
{
    return (uint32_t)(thread * 2654435761u) & (cap - 1);
}

/* Adds weight to the thread's count; -1 when out of memory (not counted by thread). */
static int add_thread_count(cpu_collector *c, serial_t thread, uint64_t weight)
{
    if (2 * (c->thread_counts_used + 1) > c->thread_counts_cap) {
        uint32_t ncap = c->thread_counts_cap ? c->thread_counts_cap * 2 : 64;
        thread_count_slot *n = calloc(ncap, sizeof *n);
        if (n == NULL)
            return -1;
        for (uint32_t i = 0; i < c->thread_counts_cap; i++) {
            if (c->thread_counts[i].thread == 0)
                continue;
            uint32_t j = thread_slot_of(c->thread_counts[i].thread, ncap);
            while (n[j].thread != 0)
                j = (j + 1) & (ncap - 1);
            n[j] = c->thread_counts[i];
        }
        free(c->thread_counts);
        c->thread_counts = n;
        c->thread_counts_cap = ncap;
    }
    uint32_t j = thread_slot_of(thread, c->thread_counts_cap);
    while (c->thread_counts[j].thread != 0 && c->thread_counts[j].thread != thread)
        j = (j + 1) & (c->thread_counts_cap - 1);
    if (c->thread_counts[j].thread == 0) {
        c->thread_counts[j].thread = thread;
        c->thread_counts_used++;
    }
    c->thread_counts[j].count += weight;
    return 0;
}

static void count_summary(cpu_collector *c, serial_t thread, int category, uint64_t weight)
{
    c->category_counts[category] += weight;
    if (thread == 0 || thread < THREAD_SERIAL_BASE || add_thread_count(c, thread, weight) != 0)
        c->no_thread += weight;
}

/* How the top Java frames of a sample ran, into runs[] (JAVA_RUN_*, zeroed
 * by the caller): the frame that runs in the interpreter, or the compiled
 * method the code belongs to and, above it, the frames inlined into it.
 * The Java frames begin at the first frame that is not native and not a
 * stop; a Java native method there (bci BCI_NATIVE) runs in a wrapper, not
 * in code of its own kind. */
static void mark_java_runs(const cpu_collector *c, const raw_sample *s, uint32_t n, uint8_t *runs)
{
    if (c->cfg.java_code == NULL || s->java_pc == 0)
        return;
    uint32_t top = 0;
    while (top < n && SAMPLE_FRAME_TAG(s->frames[top].method) != 0)
        top++;
    if (top == n || s->frames[top].bci == BCI_NATIVE)
        return;
    uint64_t method = 0;
    int code = c->cfg.java_code(s->java_pc, &method, c->cfg.resolve_context);
    if (code == CODE_INTERPRETER) {
        runs[top] = JAVA_RUN_INTERPRETED;
        return;
    }
    if (code != CODE_COMPILED)
        return;
    for (uint32_t i = top; i < n && SAMPLE_FRAME_TAG(s->frames[i].method) == 0 &&
                           s->frames[i].bci != BCI_NATIVE; i++)
        if ((uint64_t)(uintptr_t)s->frames[i].method == method) {
            for (uint32_t k = top; k < i; k++)
                runs[k] = JAVA_RUN_INLINED;
            runs[i] = JAVA_RUN_COMPILED;
            return;
        }
}

static void record(cpu_collector *c, const raw_sample *s, uint32_t max_frames)
{
    uint64_t weight = s->weight ? s->weight : 1;
    serial_t thread = s->thread_serial;
    int java_thread = thread != 0 || s->os_tid == 0;
    if (thread == 0 && s->os_tid != 0 && c->cfg.os_thread)
        thread = c->cfg.os_thread(c->cfg.tables, s->os_tid, c->cfg.resolve_context);
    if (s->num_frames <= 0) {
        int row = c->cfg.wall_states ? ((s->flags & SAMPLE_IN_SYSCALL) ? CPU_STATE_SYSCALL
                                        : (s->flags & SAMPLE_RUNNABLE) ? CPU_STATE_RUNNABLE : CPU_STATE_RUNNING)
                : java_thread ? CPU_CATEGORY_UNKNOWN : category_of(c, thread, 0, NULL, 0);
        count_summary(c, thread, row, weight);
        count_pseudo(c, thread, cpu_failure_reason(s->num_frames), weight, c->cfg.wall_states ? row : -1);
        return;
    }
    uint32_t n = (uint32_t)s->num_frames;
    if (n > max_frames)
        n = max_frames;
    if (n > CPU_MAX_FRAMES)
        n = CPU_MAX_FRAMES;
    for (uint32_t i = 0; (c->stack_entry || c->stack_boundary) && i < n; i++) {
        if (s->frames[i].method == c->stack_entry) {
            n = i + 1;                  /* the frames below are the carrier's */
        } else if (s->frames[i].method == c->stack_boundary && i > 0) {
            n = i;                      /* this one too */
        } else if (s->frames[i].method == c->stack_carrier_only && c->stack_carrier_only && s->carrier_serial) {
            thread = s->carrier_serial; /* no frame of the virtual thread on top */
            break;
        }
    }
    /* A native stack that ends just above the thread's start function is
     * whole, however the walk ended there (glibc's clone3 says "no caller"
     * in its call-frame rules): the stop frame goes. */
    uint32_t stops = 0;             /* the walk's stop frames at the bottom: the native
                                     * walk's, then for a Java thread the Java walk's */
    while (stops < 2 && stops < n && SAMPLE_FRAME_TAG(s->frames[n - 1 - stops].method) == SAMPLE_TAG_STOP)
        stops++;
    if (stops > 0 && stops < n) {
        /* The root, or one of the two frames above it (the launcher's
         * _start, which has no symbol, under __libc_start_main): a Java
         * thread that runs no Java (Signal Dispatcher) is whole too. */
        for (uint32_t k = stops + 1; k <= stops + 3 && k <= n; k++)
            if (is_thread_root(c->cfg.tables, resolve_frame(c->cfg.tables, s->frames[n - k].method, c))) {
                n -= stops;
                break;
            }
    }
    int state = c->cfg.wall_states ? state_of(c, s->frames, n, s->flags) : 0;
    count_summary(c, thread, c->cfg.wall_states ? state : category_of(c, thread, java_thread, &s->frames[0], n),
                  weight);
    trace_builder b = { .depth = c->cfg.depth, .lineno = c->cfg.lineno, .full_stacks = c->cfg.keep_stacks,
                        .tables = c->cfg.tables, .resolve = resolve_frame, .context = c };
    stack_id stack = 0;
    const sample_frame *frames = s->frames;
    sample_frame with_state[CPU_MAX_FRAMES + 1];
    if (c->cfg.wall_states) {
        memcpy(with_state, s->frames, n * sizeof *with_state);
        with_state[n++] = (sample_frame){ BCI_NATIVE, SAMPLE_STATE_FRAME(state) };
        frames = with_state;
    }
    uint8_t runs[CPU_MAX_FRAMES + 1] = { 0 };
    if (c->cfg.keep_stacks)
        mark_java_runs(c, s, n, runs);
    serial_t trace = trace_build_with_runs(&b, c->cfg.per_thread ? thread : 0, frames, runs, n,
                                           c->cfg.keep_stacks ? &stack : NULL);
    count_trace(c, trace, weight);     /* trace 0 (a table full): in the total only */
    if (c->cfg.keep_stacks)
        count_stack(c, stack, weight);
}

void cpu_collector_set_keep_stacks(cpu_collector *c, int keep)
{
    pthread_mutex_lock(&c->lock);
    c->cfg.keep_stacks = keep;
    pthread_mutex_unlock(&c->lock);
}

uint32_t cpu_collector_drain(cpu_collector *c, sample_queue *q)
{
    uint32_t drained = 0;
    pthread_mutex_lock(&c->lock);
    raw_sample *s;
    while ((s = sample_queue_peek(q)) != NULL) {
        record(c, s, q->max_frames);
        sample_queue_release(q, s);
        drained++;
    }
    pthread_mutex_unlock(&c->lock);
    return drained;
}

static int compare_rows(const void *a, const void *b)
{
    const cpu_row *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->trace > y->trace) - (x->trace < y->trace);
}

int cpu_collector_rows(cpu_collector *c, cpu_row **rows, uint32_t *n, uint64_t *total_out)
{
    pthread_mutex_lock(&c->lock);
    uint32_t used = 0;
    for (uint32_t i = 0; i < c->counts_cap; i++)
        used += c->counts[i] != 0;
    cpu_row *r = malloc((used ? used : 1) * sizeof *r);
    if (r == NULL) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < c->counts_cap; i++) {
        if (c->counts[i]) {
            r[k].trace = EMPTY_TRACE_SERIAL + i;
            r[k].count = c->counts[i];
            k++;
        }
    }
    *total_out = c->total;
    pthread_mutex_unlock(&c->lock);
    qsort(r, k, sizeof *r, compare_rows);
    *rows = r;
    *n = k;
    return 0;
}

static int compare_by_method(const void *a, const void *b)
{
    const cpu_method_count *x = a, *y = b;
    return (x->method > y->method) - (x->method < y->method);
}

static int compare_by_count(const void *a, const void *b)
{
    const cpu_method_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return compare_by_method(a, b);
}

uint32_t cpu_top_methods(profile_tables *tables, const cpu_row *rows, uint32_t n, cpu_method_count *out, uint32_t max)
{
    cpu_method_count *all = malloc((n ? n : 1) * sizeof *all);
    if (all == NULL)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        serial_t thread, method = 0;
        const serial_t *frames;
        uint32_t nframes = 0;
        int32_t line;
        if (trace_get(tables, rows[i].trace, &thread, &frames, &nframes) != 0 || nframes == 0 ||
            frame_get(tables, frames[0], &method, &line) != 0)
            method = 0;                /* depth=0: no frames to name */
        all[i] = (cpu_method_count){ method, rows[i].count };
    }
    qsort(all, n, sizeof *all, compare_by_method);
    uint32_t merged = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (merged > 0 && all[merged - 1].method == all[i].method)
            all[merged - 1].count += all[i].count;
        else
            all[merged++] = all[i];
    }
    qsort(all, merged, sizeof *all, compare_by_count);
    uint32_t k = merged < max ? merged : max;
    memcpy(out, all, k * sizeof *out);
    free(all);
    return k;
}

size_t cpu_collector_bytes(cpu_collector *c)
{
    pthread_mutex_lock(&c->lock);
    size_t bytes = sizeof *c + ((size_t)c->counts_cap + c->stack_counts_cap) * sizeof(uint64_t) +
                   (size_t)c->thread_counts_cap * sizeof(thread_count_slot);
    pthread_mutex_unlock(&c->lock);
    return bytes;
}

void cpu_collector_reset(cpu_collector *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->counts)
        memset(c->counts, 0, (size_t)c->counts_cap * sizeof *c->counts);
    if (c->stack_counts)
        memset(c->stack_counts, 0, (size_t)c->stack_counts_cap * sizeof *c->stack_counts);
    free(c->thread_counts);             /* the next period's threads only */
    c->thread_counts = NULL;
    c->thread_counts_cap = c->thread_counts_used = 0;
    memset(c->category_counts, 0, sizeof c->category_counts);
    c->no_thread = 0;
    c->total = 0;
    c->unkept_stacks = 0;
    pthread_mutex_unlock(&c->lock);
}

/* A copy of the whole-stack counts, taken under the lock, so that naming
 * frames (which takes the tables' locks) does not hold up the drain. */
static uint64_t *copy_stack_counts(cpu_collector *c, uint32_t *n, uint64_t *unkept)
{
    pthread_mutex_lock(&c->lock);
    uint64_t *copy = malloc((c->stack_counts_cap ? c->stack_counts_cap : 1) * sizeof *copy);
    if (copy) {
        if (c->stack_counts_cap)
            memcpy(copy, c->stack_counts, (size_t)c->stack_counts_cap * sizeof *copy);
        *n = c->stack_counts_cap;
        *unkept = c->unkept_stacks;
    }
    pthread_mutex_unlock(&c->lock);
    return copy;
}

profile *cpu_collector_profile(cpu_collector *c, const char *title, const char *time_type, int64_t interval_ns)
{
    const profile_value_type types[] = { { "samples", "count" }, { time_type, "nanoseconds" } };
    uint32_t n = 0;
    uint64_t unkept = 0;
    uint64_t *counts_copy = copy_stack_counts(c, &n, &unkept);
    profile *p = counts_copy ? profile_new(title, types, 2) : NULL;
    if (p == NULL) {
        free(counts_copy);
        return NULL;
    }
    profile_set_period(p, types[1], interval_ns);
    int failed = 0;
    for (uint32_t i = 0; i <= n && !failed; i++) {
        uint64_t count = i < n ? counts_copy[i] : unkept;     /* i == n: stack 0 */
        int64_t values[2] = { (int64_t)count, (int64_t)count * interval_ns };
        if (count)
            failed = stack_profile_add(c->cfg.tables, p, i < n ? i + 1 : 0, NULL, NULL, values) != 0;
    }
    free(counts_copy);
    if (failed) {
        profile_free(p);
        return NULL;
    }
    return p;
}

static int compare_thread_counts(const void *a, const void *b)
{
    const cpu_thread_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->thread > y->thread) - (x->thread < y->thread);
}

int cpu_collector_summary(cpu_collector *c, cpu_summary *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    uint32_t used = c->thread_counts_used + (c->no_thread != 0);
    out->threads = malloc((used ? used : 1) * sizeof *out->threads);
    if (out->threads == NULL) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    for (uint32_t i = 0; i < c->thread_counts_cap; i++)
        if (c->thread_counts[i].thread != 0 && c->thread_counts[i].count != 0)
            out->threads[out->nthreads++] = (cpu_thread_count){ c->thread_counts[i].thread,
                                                                c->thread_counts[i].count };
    if (c->no_thread)
        out->threads[out->nthreads++] = (cpu_thread_count){ 0, c->no_thread };
    memcpy(out->by_category, c->category_counts, sizeof c->category_counts);
    for (int k = 0; k < CPU_SUMMARY_ROWS; k++)
        out->total += c->category_counts[k];
    pthread_mutex_unlock(&c->lock);
    qsort(out->threads, out->nthreads, sizeof *out->threads, compare_thread_counts);
    return 0;
}

void cpu_summary_free(cpu_summary *summary)
{
    free(summary->threads);
    summary->threads = NULL;
    summary->nthreads = 0;
}
