/* Unit tests: the sample queue, the CPU collector, the writers, output files. */
#include "unit.h"
#include <errno.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tables.h"
#include "cpu/cpu_collector.h"
#include "cpu/times_table.h"
#include "cpu/sample_queue.h"
#include "core/stack_table.h"
#include "profile/collapsed.h"
#include "output/output_file.h"
#include "output/text_writer.h"

/* The tables of the test running (each test makes its own). */
static profile_tables *test_tables;

TEST(queue_fills_then_refuses_without_blocking)
{
    sample_queue q;
    CHECK(sample_queue_init(&q, 5, 4) == 0);        /* rounded up to 8 */
    CHECK(q.mask == 7);
    raw_sample *claimed[8];
    for (int i = 0; i < 8; i++) {
        claimed[i] = sample_queue_claim(&q);
        CHECK(claimed[i] != NULL);
        claimed[i]->num_frames = i;
        sample_queue_publish(&q, claimed[i]);
    }
    CHECK(sample_queue_claim(&q) == NULL);           /* full */
    for (int i = 0; i < 8; i++) {
        raw_sample *s = sample_queue_peek(&q);
        CHECK(s != NULL && s->num_frames == i);      /* FIFO */
        if (s)
            sample_queue_release(&q, s);
    }
    CHECK(sample_queue_peek(&q) == NULL);
    CHECK(sample_queue_claim(&q) != NULL);           /* usable again after a lap */
    sample_queue_free(&q);
}

TEST(queue_claimed_but_unpublished_blocks_consumer)
{
    sample_queue q;
    CHECK(sample_queue_init(&q, 4, 1) == 0);
    raw_sample *a = sample_queue_claim(&q);
    raw_sample *b = sample_queue_claim(&q);
    sample_queue_publish(&q, b);
    CHECK(sample_queue_peek(&q) == NULL);            /* a not ready: nothing is handed out */
    sample_queue_publish(&q, a);
    CHECK(sample_queue_peek(&q) == a);
    sample_queue_free(&q);
}

#define PRODUCERS 4
#define PER_PRODUCER 200000

static sample_queue mq;
static atomic_ullong produced, refused;
static atomic_int producers_done;

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        raw_sample *s = sample_queue_claim(&mq);
        if (s == NULL) {
            atomic_fetch_add(&refused, 1);
            continue;
        }
        s->thread_serial = id;
        s->num_frames = i;
        s->frames[0].bci = (int32_t)(id * 1000003u + (uint32_t)i);
        sample_queue_publish(&mq, s);
        atomic_fetch_add(&produced, 1);
    }
    atomic_fetch_add(&producers_done, 1);
    return NULL;
}

TEST(queue_many_producers_lose_nothing)
{
    CHECK(sample_queue_init(&mq, 256, 1) == 0);
    atomic_store(&produced, 0);
    atomic_store(&refused, 0);
    atomic_store(&producers_done, 0);
    pthread_t t[PRODUCERS];
    for (uintptr_t i = 0; i < PRODUCERS; i++)
        pthread_create(&t[i], NULL, producer, (void *)(i + 1));
    unsigned long long consumed = 0, corrupt = 0;
    int last[PRODUCERS + 1];
    for (int i = 0; i <= PRODUCERS; i++)
        last[i] = -1;
    for (;;) {
        raw_sample *s = sample_queue_peek(&mq);
        if (s == NULL) {
            if (atomic_load(&producers_done) == PRODUCERS && sample_queue_peek(&mq) == NULL)
                break;
            continue;
        }
        uint32_t id = s->thread_serial;
        if (id < 1 || id > PRODUCERS ||
            s->frames[0].bci != (int32_t)(id * 1000003u + (uint32_t)s->num_frames) ||
            s->num_frames <= last[id])
            corrupt++;                       /* torn write, or one producer's order broken */
        else
            last[id] = s->num_frames;
        sample_queue_release(&mq, s);
        consumed++;
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    CHECK(corrupt == 0);
    CHECK(consumed == atomic_load(&produced));
    CHECK(atomic_load(&produced) + atomic_load(&refused) == (unsigned long long)PRODUCERS * PER_PRODUCER);
    sample_queue_free(&mq);
}

/* ---- collector, with a fake resolver: method pointer value = its identity ---- */

static serial_t fake_resolve(profile_tables *tables, const void *method, void *ctx)
{
    (void)ctx;
    uintptr_t id = (uintptr_t)method;
    if (id == 0xdead)
        return 0;                                      /* e.g. class unloaded */
    serial_t known = method_find(tables, id);
    if (known)
        return known;
    char name[32];
    snprintf(name, sizeof name, "m%lx", (unsigned long)id);
    line_entry lines[] = { { 0, 100 }, { 10, 110 } };
    method_desc d = { .class_serial = class_intern(tables, "Lpkg/Work;"), .name = name,
                      .source_file = "Work.java", .lines = lines, .line_count = 2,
                      .is_native = id == 0xa0 };
    return method_add(tables, id, &d);
}

static void push_on(sample_queue *q, uint32_t thread, uint32_t carrier, int32_t n, const uintptr_t *methods,
                    const int32_t *bcis)
{
    raw_sample *s = sample_queue_claim(q);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    s->thread_serial = thread;
    s->carrier_serial = carrier;
    s->num_frames = n;
    s->weight = 1;
    for (int32_t i = 0; i < n; i++) {
        s->frames[i].method = (const void *)methods[i];
        s->frames[i].bci = bcis[i];
    }
    sample_queue_publish(q, s);
}

static void push(sample_queue *q, uint32_t thread, int32_t n, const uintptr_t *methods, const int32_t *bcis)
{
    push_on(q, thread, 0, n, methods, bcis);
}

/* The collector under test (one per test, made by setup_collector). */
static cpu_collector *collector;

static void setup_collector(sample_queue *q, int depth, int lineno, int per_thread)
{
    test_tables = profile_tables_new(NULL);
    cpu_collector_config c = { .depth = depth, .lineno = lineno, .per_thread = per_thread,
                               .keep_stacks = 1, .tables = test_tables, .resolve = fake_resolve };
    collector = cpu_collector_new(&c);
    CHECK(collector != NULL);
    sample_queue_init(q, 512, 8);
}

static void teardown_collector(sample_queue *q)
{
    sample_queue_free(q);
    cpu_collector_free(collector);
    collector = NULL;
    profile_tables_free(test_tables);
    test_tables = NULL;
}

/* The collector's whole stacks as collapsed text (a profile, then its
 * collapsed form), sample counts. */
static void collapsed_text(char *buf, size_t size)
{
    profile *p = cpu_collector_profile(collector, "CPU samples", "cpu", 10000000);
    CHECK(p != NULL);
    FILE *f = tmpfile();
    CHECK(p && collapsed_write_profile(p, 0, f) == 0);
    rewind(f);
    size_t len = fread(buf, 1, size - 1, f);
    buf[len] = '\0';
    fclose(f);
    profile_free(p);
}

TEST(collector_counts_traces_with_depth_and_lines)
{
    sample_queue q;
    setup_collector(&q, 2, 1, 0);
    uintptr_t stack_a[] = { 0xb1, 0xb2, 0xb3 };       /* callee first */
    int32_t bci_a[] = { 12, 3, 0 };
    uintptr_t stack_b[] = { 0xb1, 0xb2, 0xb4 };       /* same top two frames, other root */
    int32_t bci_b[] = { 12, 3, 5 };
    uintptr_t stack_c[] = { 0xb1, 0xb2 };
    int32_t bci_c[] = { 2, 3 };                        /* other line in the top frame */
    for (int i = 0; i < 5; i++) push(&q, THREAD_SERIAL_BASE, 3, stack_a, bci_a);
    for (int i = 0; i < 3; i++) push(&q, THREAD_SERIAL_BASE + 1, 3, stack_b, bci_b);
    for (int i = 0; i < 2; i++) push(&q, THREAD_SERIAL_BASE, 2, stack_c, bci_c);
    CHECK(cpu_collector_drain(collector, &q) == 10);

    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 10 && n == 2);                      /* depth=2: a and b are one trace */
    CHECK(rows[0].count == 8 && rows[1].count == 2);
    serial_t th; const serial_t *frames; uint32_t nf;
    CHECK(trace_get(test_tables, rows[0].trace, &th, &frames, &nf) == 0 && nf == 2 && th == 0);
    serial_t m; int32_t line;
    CHECK(frame_get(test_tables, frames[0], &m, &line) == 0 && line == 110);   /* bci 12 -> line 110 */
    CHECK(trace_get(test_tables, rows[1].trace, &th, &frames, &nf) == 0);
    CHECK(frame_get(test_tables, frames[0], &m, &line) == 0 && line == 100);   /* bci 2 -> line 100 */
    free(rows);

    /* Whole stacks are kept (not cut at depth=2), root first in collapsed form. */
    char buf[4096] = { 0 };
    collapsed_text(buf, sizeof buf);
    CHECK(strstr(buf, "pkg.Work.mb3;pkg.Work.mb2;pkg.Work.mb1 5\n") != NULL);
    CHECK(strstr(buf, "pkg.Work.mb4;pkg.Work.mb2;pkg.Work.mb1 3\n") != NULL);
    CHECK(strstr(buf, "pkg.Work.mb2;pkg.Work.mb1 2\n") != NULL);
    teardown_collector(&q);
}

/* With a stack root set, stacks end at it: the frames below (a carrier's,
 * under a virtual thread's entry) are neither in traces nor whole stacks. */
TEST(collector_cuts_stacks_at_the_root)
{
    sample_queue q;
    setup_collector(&q, 8, 0, 0);
    cpu_collector_set_stack_ends(collector, (const void *)(uintptr_t)0xb2, (const void *)(uintptr_t)0xb5, NULL);
    uintptr_t mounted[] = { 0xb1, 0xb2, 0xb3, 0xb4 };   /* b2: the entry; b3, b4: the carrier's */
    int32_t bcis[] = { 1, 1, 1, 1 };
    uintptr_t thawed[] = { 0xb1, 0xb5, 0xb3, 0xb4 };    /* b5: the boundary, not kept */
    uintptr_t carrier[] = { 0xb3, 0xb4 };               /* neither: kept whole */
    for (int i = 0; i < 3; i++) push(&q, THREAD_SERIAL_BASE, 4, mounted, bcis);
    push(&q, THREAD_SERIAL_BASE, 2, carrier, bcis);
    push(&q, THREAD_SERIAL_BASE, 4, thawed, bcis);
    push(&q, THREAD_SERIAL_BASE, 4, thawed, bcis);
    CHECK(cpu_collector_drain(collector, &q) == 6);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0 && total == 6 && n == 3);
    serial_t th; const serial_t *frames; uint32_t nf;
    CHECK(rows[0].count == 3 && trace_get(test_tables, rows[0].trace, &th, &frames, &nf) == 0 && nf == 2);
    CHECK(rows[1].count == 2 && trace_get(test_tables, rows[1].trace, &th, &frames, &nf) == 0 && nf == 1);
    CHECK(rows[2].count == 1 && trace_get(test_tables, rows[2].trace, &th, &frames, &nf) == 0 && nf == 2);
    free(rows);
    char buf[4096] = { 0 };
    collapsed_text(buf, sizeof buf);
    CHECK(strstr(buf, "pkg.Work.mb2;pkg.Work.mb1 3\n") != NULL);
    CHECK(strstr(buf, "pkg.Work.mb4;pkg.Work.mb3 1\n") != NULL);
    CHECK(strstr(buf, "\npkg.Work.mb1 2\n") != NULL || strncmp(buf, "pkg.Work.mb1 2\n", 15) == 0);
    cpu_collector_set_stack_ends(collector, NULL, NULL, NULL);
    teardown_collector(&q);
}

/* A sample charged to a virtual thread (thread=y) whose walk meets a frame
 * only carriers run (VirtualThread.runContinuation) before the thread's
 * entry is its carrier's: taken in the scheduler's code around a mount. */
TEST(collector_gives_carrier_samples_to_the_carrier)
{
    sample_queue q;
    setup_collector(&q, 8, 0, 1);
    cpu_collector_set_stack_ends(collector, (const void *)(uintptr_t)0xb2, (const void *)(uintptr_t)0xb5,
                                 (const void *)(uintptr_t)0xb3);
    uint32_t vthread = THREAD_SERIAL_BASE + 5, carrier = THREAD_SERIAL_BASE + 1;
    uintptr_t mounted[] = { 0xb1, 0xb2, 0xb3, 0xb4 };   /* the thread's frames, its entry, the carrier's */
    uintptr_t between[] = { 0xb1, 0xb3, 0xb4 };         /* b1 called by runContinuation: no entry above */
    int32_t bcis[] = { 1, 1, 1, 1 };
    push_on(&q, vthread, carrier, 4, mounted, bcis);
    push_on(&q, vthread, carrier, 3, between, bcis);
    push_on(&q, vthread, carrier, 3, between, bcis);
    push(&q, carrier, 3, between, bcis);                 /* a carrier's own: unchanged */
    push_on(&q, vthread, 0, 3, between, bcis);           /* no carrier known: left to the thread */
    CHECK(cpu_collector_drain(collector, &q) == 5);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0 && total == 5 && n == 3);
    serial_t th; const serial_t *frames; uint32_t nf;
    CHECK(rows[0].count == 3 && trace_get(test_tables, rows[0].trace, &th, &frames, &nf) == 0 && th == carrier && nf == 3);
    uint32_t lengths = 0;               /* the thread's two: cut at its entry (2 frames), and whole (3) */
    for (uint32_t i = 1; i < n; i++) {
        CHECK(rows[i].count == 1 && trace_get(test_tables, rows[i].trace, &th, &frames, &nf) == 0 && th == vthread);
        lengths += nf;
    }
    CHECK(lengths == 5);
    free(rows);
    cpu_collector_set_stack_ends(collector, NULL, NULL, NULL);
    teardown_collector(&q);
}

TEST(collector_thread_lineno_and_failures)
{
    sample_queue q;
    setup_collector(&q, 4, 0, 1);
    uintptr_t stack[] = { 0xa0, 0xb2 };                /* a native method on top */
    int32_t bci[] = { -3, 11 };
    push(&q, THREAD_SERIAL_BASE, 2, stack, bci);
    push(&q, THREAD_SERIAL_BASE + 1, 2, stack, bci);
    push(&q, THREAD_SERIAL_BASE, -2, NULL, NULL);      /* GC_active */
    push(&q, THREAD_SERIAL_BASE, -2, NULL, NULL);
    push(&q, THREAD_SERIAL_BASE, -10, NULL, NULL);     /* safepoint */
    uintptr_t gone[] = { 0xdead };
    int32_t gone_bci[] = { 1 };
    push(&q, THREAD_SERIAL_BASE, 1, gone, gone_bci);   /* unresolvable method */
    cpu_collector_drain(collector, &q);
    cpu_collector_add_lost(collector, "buffer_full", 7);
    cpu_collector_add_lost(collector, "buffer_full", 0);          /* nothing to add: no row change */

    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 6 + 7);
    /* thread=y: the same stack on two threads is two traces. */
    int per_thread_traces = 0, seen_gc = 0, seen_safepoint = 0, seen_lost = 0, seen_unresolved = 0;
    for (uint32_t i = 0; i < n; i++) {
        char top[256];
        text_trace_top_method(test_tables, rows[i].trace, top, sizeof top);
        if (strcmp(top, "pkg.Work.ma0") == 0) {
            per_thread_traces++;
            serial_t th; const serial_t *frames; uint32_t nf; serial_t m; int32_t line;
            trace_get(test_tables, rows[i].trace, &th, &frames, &nf);
            CHECK(th == THREAD_SERIAL_BASE || th == THREAD_SERIAL_BASE + 1);
            frame_get(test_tables, frames[0], &m, &line);
            CHECK(line == LINE_NATIVE);                 /* native stays native with lineno=n */
            frame_get(test_tables, frames[1], &m, &line);
            CHECK(line == LINE_UNKNOWN);                /* lineno=n */
        }
        if (strcmp(top, "[unwalkable].GC_active") == 0) seen_gc += (int)rows[i].count;
        if (strcmp(top, "[unwalkable].safepoint") == 0) seen_safepoint += (int)rows[i].count;
        if (strcmp(top, "[unwalkable].buffer_full") == 0) seen_lost += (int)rows[i].count;
        if (strcmp(top, "[unwalkable].unresolved_method") == 0) seen_unresolved += (int)rows[i].count;
    }
    CHECK(per_thread_traces == 2);
    CHECK(seen_gc == 2 && seen_safepoint == 1 && seen_lost == 7 && seen_unresolved == 1);
    CHECK(rows[0].count == 7);                          /* ordered by count */
    free(rows);
    CHECK_STR(cpu_failure_reason(-6), "not_walkable_Java");
    CHECK_STR(cpu_failure_reason(0), "no_Java_frame");
    CHECK_STR(cpu_failure_reason(-42), "unknown_failure");
    teardown_collector(&q);
}

/* The snapshot: whole stacks with lines (whatever lineno= says), thread
 * names with thread=y, failures and losses as frames, totals equal to the
 * CPU SAMPLES total. */
TEST(collector_profile_agrees_with_rows)
{
    sample_queue q;
    setup_collector(&q, 2, 0, 1);
    serial_t main_thread = thread_add(test_tables, "main", "main", 0), worker = thread_add(test_tables, "worker", "main", 0);
    uintptr_t stack[] = { 0xd1, 0xd2, 0xd3 };
    int32_t bci[] = { 12, 3, 0 };
    for (int i = 0; i < 3; i++) push(&q, main_thread, 3, stack, bci);
    for (int i = 0; i < 2; i++) push(&q, worker, 3, stack, bci);
    push(&q, main_thread, -2, NULL, NULL);              /* GC_active */
    cpu_collector_drain(collector, &q);
    cpu_collector_add_lost(collector, "buffer_full", 4);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0 && total == 10);
    free(rows);

    profile *p = cpu_collector_profile(collector, "CPU samples", "cpu", 1000000);
    CHECK(p != NULL);
    if (p == NULL) {
        teardown_collector(&q);
        return;
    }
    CHECK(profile_total(p, 0) == 10 && profile_total(p, 1) == 10 * 1000000LL);
    CHECK(profile_period(p) == 1000000);
    CHECK_STR(profile_value(p, 1).type, "cpu");
    CHECK(profile_sample_count(p) == 4);
    int seen_main = 0, seen_worker = 0, seen_gc = 0, seen_lost = 0;
    for (uint32_t i = 0; i < profile_sample_count(p); i++) {
        profile_sample smp;
        CHECK(profile_sample_get(p, i, &smp) == 0);
        const profile_frame *top = profile_frame_get(p, smp.frames[0]);
        if (smp.depth == 3) {
            CHECK_STR(top->class_name, "pkg.Work");
            CHECK_STR(top->method, "md1");
            CHECK_STR(top->file, "Work.java");
            CHECK(top->line == 110);                     /* bci 12, though lineno=n */
            CHECK_STR(profile_frame_get(p, smp.frames[2])->method, "md3");   /* deeper than depth=2 */
            seen_main += strcmp(smp.thread, "main") == 0 ? (int)smp.values[0] : 0;
            seen_worker += strcmp(smp.thread, "worker") == 0 ? (int)smp.values[0] : 0;
        } else if (strcmp(top->method, "GC_active") == 0) {
            CHECK_STR(top->class_name, "[unwalkable]");
            CHECK_STR(smp.thread, "main");
            seen_gc += (int)smp.values[0];
        } else if (strcmp(top->method, "buffer_full") == 0) {
            seen_lost += (int)smp.values[0];
        }
    }
    CHECK(seen_main == 3 && seen_worker == 2 && seen_gc == 1 && seen_lost == 4);
    profile_free(p);
    teardown_collector(&q);
}

TEST(collector_weights_timer_overruns)
{
    sample_queue q;
    setup_collector(&q, 4, 1, 0);
    uintptr_t stack[] = { 0xb1 };
    int32_t bci[] = { 0 };
    push(&q, THREAD_SERIAL_BASE, 1, stack, bci);
    raw_sample *s = sample_queue_claim(&q);           /* one signal standing for 4 intervals */
    s->thread_serial = THREAD_SERIAL_BASE;
    s->num_frames = 1;
    s->weight = 4;
    s->frames[0].method = (const void *)0xb1;
    s->frames[0].bci = 0;
    sample_queue_publish(&q, s);
    s = sample_queue_claim(&q);                        /* a failure with weight 3 */
    s->thread_serial = THREAD_SERIAL_BASE;
    s->num_frames = -2;
    s->weight = 3;
    sample_queue_publish(&q, s);
    cpu_collector_drain(collector, &q);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 8 && n == 2 && rows[0].count == 5 && rows[1].count == 3);
    free(rows);
    teardown_collector(&q);
}

TEST(collector_depth_zero_uses_the_empty_trace)
{
    sample_queue q;
    setup_collector(&q, 0, 1, 0);
    uintptr_t stack[] = { 0xb1 };
    int32_t bci[] = { 0 };
    push(&q, THREAD_SERIAL_BASE, 1, stack, bci);
    push(&q, THREAD_SERIAL_BASE, 1, stack, bci);
    cpu_collector_drain(collector, &q);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(n == 1 && rows[0].trace == EMPTY_TRACE_SERIAL && rows[0].count == 2);
    free(rows);
    teardown_collector(&q);
}

/* ---- text writer ---- */

static char *read_all(FILE *f)
{
    fflush(f);
    long len = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len)
        buf[0] = '\0';
    return buf;
}

static int count_occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

TEST(text_writer_layout_and_incremental_records)
{
    sample_queue q;
    setup_collector(&q, 4, 1, 0);
    serial_t main_thread = thread_add(test_tables, "main", "main", 0x50030d41);
    uintptr_t stack[] = { 0xb1, 0xb2 };
    int32_t bci[] = { 12, 0 };
    for (int i = 0; i < 144; i++) push(&q, main_thread, 2, stack, bci);
    uintptr_t other[] = { 0xa0 };
    int32_t obci[] = { -3 };
    for (int i = 0; i < 70; i++) push(&q, main_thread, 1, other, obci);
    push(&q, main_thread, -6, NULL, NULL);
    cpu_collector_drain(collector, &q);

    FILE *f = tmpfile();
    text_writer w;
    text_writer_init(&w, f, test_tables);
    text_write_header(&w, 0, "cpu=samples", "CPU samples: a note.", TEXT_HOLDS_CPU_SAMPLES);
    text_write_new_records(&w);
    cpu_row *rows; uint32_t n; uint64_t total;
    cpu_collector_rows(collector, &rows, &n, &total);
    text_write_cpu_samples(&w, rows, n, total, 0.0001, 0);
    free(rows);

    /* Second dump: a new thread that ended, no new traces, cumulative counts. */
    serial_t worker = thread_add(test_tables, "worker-1", "main", 0x50030d42);
    thread_mark_ended(test_tables, worker);
    for (int i = 0; i < 6; i++) push(&q, main_thread, 2, stack, bci);
    cpu_collector_drain(collector, &q);
    text_write_new_records(&w);
    cpu_collector_rows(collector, &rows, &n, &total);
    text_write_cpu_samples(&w, rows, n, total, 0.01, 0);   /* cutoff 1% drops the 1-sample row */
    free(rows);

    char *out = read_all(f);
    fclose(f);
    text_writer_free(&w);
    CHECK(out != NULL);
    if (out == NULL)
        return;
    CHECK(strncmp(out, "JAVA PROFILE 1.0.1, created ", 28) == 0);
    CHECK(strstr(out, "\nCPU samples: a note.\n\n--------\n") != NULL);
    /* The header explains the sections the file holds, and only those. */
    CHECK(strstr(out, "\nCPU SAMPLES     a profile of program execution") != NULL);
    CHECK(strstr(out, "\nSITES  ") == NULL && strstr(out, "\nMONITOR TIME  ") == NULL &&
          strstr(out, "\nCPU TIME (ms)  ") == NULL && strstr(out, "\nHEAP DUMP  ") == NULL);
    CHECK(strstr(out, "THREAD START (obj=50030d41, id = 200001, name=\"main\", group=\"main\")\n"));
    CHECK(count_occurrences(out, "THREAD START (obj=") == 2);
    CHECK(count_occurrences(out, "THREAD END (id = 200002)\n") == 1);
    CHECK(strstr(out, "TRACE 300001:\n\tpkg.Work.mb1(Work.java:110)\n\tpkg.Work.mb2(Work.java:100)\n"));
    CHECK(strstr(out, "TRACE 300002:\n\tpkg.Work.ma0(Work.java:Native method)\n"));
    CHECK(strstr(out, "\t[unwalkable].not_walkable_Java(<Unknown Source>:Unknown line)\n"));
    CHECK(count_occurrences(out, "TRACE 3000") == 3);      /* each trace once */
    CHECK(strstr(out, "CPU SAMPLES BEGIN (total = 215) "));
    CHECK(strstr(out, "rank   self  accum   count trace method\n"
                      "   1 66.98% 66.98%     144 300001 pkg.Work.mb1\n"
                      "   2 32.56% 99.53%      70 300002 pkg.Work.ma0\n"
                      "   3  0.47% 100.00%       1 300003 [unwalkable].not_walkable_Java\n"
                      "CPU SAMPLES END\n"));
    CHECK(strstr(out, "CPU SAMPLES BEGIN (total = 221) "));
    CHECK(strstr(out, "   1 67.87% 67.87%     150 300001 pkg.Work.mb1\n"
                      "   2 31.67% 99.55%      70 300002 pkg.Work.ma0\n"
                      "CPU SAMPLES END\n"));
    free(out);
    teardown_collector(&q);
}

/* ---- output files ---- */

TEST(output_file_names_and_force)
{
    char buf[256];
    output_file_unique_name("java.hprof.txt", 'a', 42, buf, sizeof buf);
    CHECK_STR(buf, "java.hprof.42.txt");
    output_file_unique_name("prof.out", 'a', 42, buf, sizeof buf);
    CHECK_STR(buf, "prof.out.42.txt");
    output_file_unique_name("java.hprof", 'b', 42, buf, sizeof buf);
    CHECK_STR(buf, "java.hprof.42");

    char dir[] = "/tmp/hprof-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char name[300], path[400], err[512];
    snprintf(name, sizeof name, "%s/p.txt", dir);
    FILE *f = NULL;
    CHECK(output_file_open(name, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    CHECK_STR(path, name);
    fputs("old profile\n", f);
    fclose(f);
    /* force=n keeps the existing file and adds the pid. */
    CHECK(output_file_open(name, 0, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    char expect[400];
    snprintf(expect, sizeof expect, "%s/p.%ld.txt", dir, (long)getpid());
    CHECK_STR(path, expect);
    fclose(f);
    f = fopen(name, "r");
    char line[64] = { 0 };
    CHECK(f && fgets(line, sizeof line, f) && strcmp(line, "old profile\n") == 0);
    if (f) fclose(f);
    unlink(expect);
    /* force=y truncates. */
    CHECK(output_file_open(name, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    fclose(f);
    struct stat st;
    CHECK(stat(name, &st) == 0 && st.st_size == 0);
    unlink(name);
    rmdir(dir);

    CHECK(output_file_open("/nonexistent-dir/x/p.txt", 1, 'a', 0, &f, path, sizeof path, err,
                           sizeof err) == -1);
    CHECK(strstr(err, "file=") != NULL && strstr(err, "/nonexistent-dir/x/p.txt") != NULL);
    CHECK(output_file_check_writable("/nonexistent-dir/c.txt", "collapsed", err, sizeof err) == -1);
    CHECK(strstr(err, "collapsed=") != NULL);
}

/* The open rules of every output file: links and non-regular files refused
 * with the option and path named, heap dumps 0600, others umask without o+w. */
TEST(output_file_safety)
{
    CHECK(output_file_mode(1, 022) == 0600);
    CHECK(output_file_mode(1, 0) == 0600);
    CHECK(output_file_mode(0, 022) == 0644);
    CHECK(output_file_mode(0, 077) == 0600);
    CHECK(output_file_mode(0, 0) == 0664);
    CHECK(output_file_mode(0, 002) == 0664);

    char dir[] = "/tmp/hprof-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char target[300], link_path[300], dangling[300], missing[300], plain[300], path[400], err[1024];
    snprintf(target, sizeof target, "%s/target.txt", dir);
    snprintf(link_path, sizeof link_path, "%s/link.txt", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.txt", dir);
    snprintf(missing, sizeof missing, "%s/missing.txt", dir);
    snprintf(plain, sizeof plain, "%s/plain.txt", dir);
    FILE *f = fopen(target, "w");
    CHECK(f != NULL);
    if (f) { fputs("keep me\n", f); fclose(f); }
    CHECK(symlink(target, link_path) == 0);
    CHECK(symlink(missing, dangling) == 0);

    /* A link to a file: refused, whatever force=; the target untouched. */
    f = NULL;
    CHECK(output_file_open(link_path, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == -1);
    CHECK(f == NULL);
    CHECK(strstr(err, "file=") && strstr(err, link_path) && strstr(err, "symbolic link")
          && strstr(err, "remove the link or name the real file"));
    struct stat st;
    CHECK(stat(target, &st) == 0 && st.st_size == 8);
    CHECK(output_file_check_writable(link_path, "pprof", err, sizeof err) == -1);
    CHECK(strstr(err, "pprof=") && strstr(err, link_path) && strstr(err, "symbolic link"));
    CHECK(stat(target, &st) == 0 && st.st_size == 8);
    /* A dangling link: refused, nothing created at its target. */
    CHECK(output_file_open(dangling, 1, 'b', 1, &f, path, sizeof path, err, sizeof err) == -1);
    CHECK(strstr(err, dangling) && strstr(err, "symbolic link"));
    CHECK(lstat(missing, &st) == -1 && errno == ENOENT);
    CHECK(output_file_create(dangling, OUTPUT_CREATE_KEEP, 0, "collapsed", "", err, sizeof err) == -1);
    CHECK(errno == ELOOP && strstr(err, "collapsed="));
    CHECK(lstat(missing, &st) == -1 && errno == ENOENT);
    /* force=n on an existing link: the link is kept, the unique name used. */
    CHECK(output_file_open(link_path, 0, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    char expect[400];
    snprintf(expect, sizeof expect, "%s/link.%ld.txt", dir, (long)getpid());
    CHECK_STR(path, expect);
    if (f) fclose(f);
    unlink(expect);
    CHECK(stat(target, &st) == 0 && st.st_size == 8);
    /* A directory: refused, by file= and by the check of the other options. */
    CHECK(output_file_open(dir, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == -1);
    CHECK(strstr(err, "file=") && strstr(err, dir) && strstr(err, "not a regular file") && strstr(err, "directory"));
    CHECK(output_file_check_writable(dir, "flamegraph", err, sizeof err) == -1);
    CHECK(strstr(err, "flamegraph=") && strstr(err, "directory"));
    /* A device: refused, never written. */
    CHECK(output_file_check_writable("/dev/null", "collapsed", err, sizeof err) == -1);
    CHECK(strstr(err, "/dev/null") && strstr(err, "device"));

    /* Modes: a heap dump 0600 whatever the umask; others 0666 & ~umask, never o+w. */
    mode_t old = umask(0);
    f = NULL;
    CHECK(output_file_open(plain, 1, 'b', 1, &f, path, sizeof path, err, sizeof err) == 0);
    if (f) fclose(f);
    CHECK(stat(plain, &st) == 0 && (st.st_mode & 07777) == 0600);
    unlink(plain);
    CHECK(output_file_open(plain, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    if (f) fclose(f);
    CHECK(stat(plain, &st) == 0 && (st.st_mode & 07777) == 0664);
    /* Overwritten (force=y): narrowed the same way. */
    CHECK(chmod(plain, 0666) == 0);
    CHECK(output_file_open(plain, 1, 'a', 0, &f, path, sizeof path, err, sizeof err) == 0);
    if (f) fclose(f);
    CHECK(stat(plain, &st) == 0 && (st.st_mode & 07777) == 0664);
    CHECK(output_file_open(plain, 1, 'b', 1, &f, path, sizeof path, err, sizeof err) == 0);
    if (f) fclose(f);
    CHECK(stat(plain, &st) == 0 && (st.st_mode & 07777) == 0600);
    unlink(plain);
    umask(022);
    CHECK(output_file_umask() == 022);
    CHECK(output_file_check_writable(plain, "pprof", err, sizeof err) == 0);
    CHECK(stat(plain, &st) == 0 && (st.st_mode & 07777) == 0644);
    /* Exclusive: an existing file is an error, its content kept. */
    CHECK(output_file_create(target, OUTPUT_CREATE_EXCL, 0, "file", "", err, sizeof err) == -1);
    CHECK(errno == EEXIST && stat(target, &st) == 0 && st.st_size == 8);
    umask(old);

    unlink(plain);
    unlink(link_path);
    unlink(dangling);
    unlink(target);
    CHECK(rmdir(dir) == 0);
}

/* reset zeroes counts and stacks and keeps serials. */
TEST(collector_reset_keeps_serials)
{
    sample_queue q;
    setup_collector(&q, 2, 1, 1);
    uintptr_t stack[] = { 0xc1, 0xc2 };
    int32_t bci[] = { 1, 2 };
    for (int i = 0; i < 4; i++) push(&q, THREAD_SERIAL_BASE, 2, stack, bci);
    CHECK(cpu_collector_drain(collector, &q) == 4);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 4 && n == 1);
    serial_t before = rows[0].trace;
    free(rows);

    cpu_collector_reset(collector);
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 0 && n == 0);
    free(rows);
    push(&q, THREAD_SERIAL_BASE, 2, stack, bci);
    CHECK(cpu_collector_drain(collector, &q) == 1);
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0);
    CHECK(total == 1 && n == 1 && rows[0].trace == before && rows[0].count == 1);  /* same serial */
    free(rows);
    char buf[1024] = { 0 };
    collapsed_text(buf, sizeof buf);
    CHECK(strstr(buf, "pkg.Work.mc2;pkg.Work.mc1 1\n") != NULL);   /* stacks zeroed too */
    teardown_collector(&q);
}

/* The summary counts samples per thread by serial, however far apart the
 * serials are (a program that started millions of threads), and a reset
 * leaves only the threads sampled since. */
TEST(collector_summary_by_thread_sparse_serials_and_reset)
{
    sample_queue q;
    setup_collector(&q, 2, 1, 0);
    uintptr_t stack[] = { 0xd1, 0xd2 };
    int32_t bci[] = { 1, 2 };
    const uint32_t far = THREAD_SERIAL_BASE + 3000000;
    for (int i = 0; i < 3; i++) push(&q, far, 2, stack, bci);
    for (uint32_t t = 0; t < 200; t++) push(&q, THREAD_SERIAL_BASE + 7 * t, 2, stack, bci);
    push(&q, THREAD_SERIAL_BASE, 2, stack, bci);       /* the first thread again: 2 samples */
    CHECK(cpu_collector_drain(collector, &q) == 204);
    /* 201 threads' counts, not one per serial up to 3,000,000 (24 MB). */
    CHECK(cpu_collector_bytes(collector) < (1u << 20));
    cpu_summary sum;
    CHECK(cpu_collector_summary(collector, &sum) == 0);
    CHECK(sum.total == 204 && sum.nthreads == 201);
    CHECK(sum.threads[0].thread == far && sum.threads[0].count == 3);
    CHECK(sum.threads[1].thread == THREAD_SERIAL_BASE && sum.threads[1].count == 2);
    uint64_t all = 0;
    for (uint32_t i = 0; i < sum.nthreads; i++) all += sum.threads[i].count;
    CHECK(all == 204);
    cpu_summary_free(&sum);

    cpu_collector_reset(collector);
    push(&q, far + 1, 2, stack, bci);
    CHECK(cpu_collector_drain(collector, &q) == 1);
    CHECK(cpu_collector_summary(collector, &sum) == 0);
    CHECK(sum.total == 1 && sum.nthreads == 1 && sum.threads[0].thread == far + 1 && sum.threads[0].count == 1);
    cpu_summary_free(&sum);
    teardown_collector(&q);
}

TEST(times_table_subtract_gives_what_happened_since)
{
    times_table now, base;
    times_table_init(&now);
    times_table_init(&base);
    CHECK(times_table_add(&base, 300001, 10, 1000, 1500) == 0);
    CHECK(times_table_add(&base, 300002, 5, 500, 500) == 0);
    CHECK(times_table_add(&now, 300001, 25, 4000, 7000) == 0);
    CHECK(times_table_add(&now, 300002, 5, 500, 500) == 0);      /* nothing since: dropped */
    CHECK(times_table_add(&now, 300003, 2, 50, 80) == 0);        /* new since */
    CHECK(times_table_subtract(&now, &base) == 0);
    times_row *rows; uint32_t n; uint64_t total;
    CHECK(times_table_rows(&now, &rows, &n, &total) == 0);
    CHECK(n == 2 && total == 3050);
    CHECK(rows[0].trace == 300001 && rows[0].calls == 15 && rows[0].cpu_ns == 3000 && rows[0].total_ns == 5500);
    CHECK(rows[1].trace == 300003 && rows[1].calls == 2 && rows[1].total_ns == 80);
    free(rows);
    times_table_free(&now);
    times_table_free(&base);
}

TEST(collector_top_methods_by_self_samples)
{
    sample_queue q;
    setup_collector(&q, 2, 1, 0);
    uintptr_t stack_a[] = { 0xc1, 0xc2 }, stack_b[] = { 0xc1, 0xc3 }, stack_c[] = { 0xc2, 0xc1 };
    int32_t bci[] = { 0, 0 };
    for (int i = 0; i < 4; i++) push(&q, THREAD_SERIAL_BASE, 2, stack_a, bci);
    for (int i = 0; i < 3; i++) push(&q, THREAD_SERIAL_BASE, 2, stack_b, bci);
    for (int i = 0; i < 5; i++) push(&q, THREAD_SERIAL_BASE, 2, stack_c, bci);
    CHECK(cpu_collector_drain(collector, &q) == 12);
    cpu_row *rows; uint32_t n; uint64_t total;
    CHECK(cpu_collector_rows(collector, &rows, &n, &total) == 0 && n == 3);
    cpu_method_count top[4];
    /* c1 is on top in two traces (4 + 3), c2 in one (5). */
    CHECK(cpu_top_methods(test_tables, rows, n, top, 4) == 2);
    CHECK(top[0].method == method_find(test_tables, 0xc1) && top[0].count == 7);
    CHECK(top[1].method == method_find(test_tables, 0xc2) && top[1].count == 5);
    CHECK(cpu_top_methods(test_tables, rows, n, top, 1) == 1 && top[0].count == 7);
    free(rows);
    teardown_collector(&q);
}

/* Two collectors on two sets of tables: the same samples give each its own
 * traces, numbered in its own tables, named alike; draining one leaves the
 * other's tables as they were. */
TEST(collector_twice_on_two_tables)
{
    profile_tables *a = profile_tables_new(NULL), *b = profile_tables_new(NULL);
    CHECK(a != NULL && b != NULL);
    class_intern(b, "Lpkg/Other;");                  /* b's serials differ from a's from here on */
    cpu_collector_config ca = { .depth = 2, .lineno = 1, .tables = a, .resolve = fake_resolve };
    cpu_collector_config cb = { .depth = 2, .lineno = 1, .tables = b, .resolve = fake_resolve };
    cpu_collector *on_a = cpu_collector_new(&ca), *on_b = cpu_collector_new(&cb);
    CHECK(on_a != NULL && on_b != NULL);
    sample_queue q;
    sample_queue_init(&q, 64, 8);
    uintptr_t stack[] = { 0xc1, 0xc2 };
    int32_t bcis[] = { 12, 3 };
    for (int i = 0; i < 4; i++) push(&q, 0, 2, stack, bcis);
    CHECK(cpu_collector_drain(on_a, &q) == 4);
    uint32_t traces_in_a = trace_count(a), methods_in_a = method_count(a);
    CHECK(trace_count(b) == 0 && method_count(b) == 0);
    for (int i = 0; i < 3; i++) push(&q, 0, 2, stack, bcis);
    CHECK(cpu_collector_drain(on_b, &q) == 3);
    CHECK(trace_count(a) == traces_in_a && method_count(a) == methods_in_a);   /* a untouched */
    cpu_row *ra, *rb; uint32_t na, nb; uint64_t ta, tb;
    CHECK(cpu_collector_rows(on_a, &ra, &na, &ta) == 0 && cpu_collector_rows(on_b, &rb, &nb, &tb) == 0);
    CHECK(na == 1 && nb == 1 && ta == 4 && tb == 3);
    serial_t th; const serial_t *fa, *fb; uint32_t nfa, nfb;
    CHECK(trace_get(a, ra[0].trace, &th, &fa, &nfa) == 0 && trace_get(b, rb[0].trace, &th, &fb, &nfb) == 0);
    serial_t ma, mb; int32_t la, lb;
    CHECK(nfa == 2 && nfb == 2 && frame_get(a, fa[0], &ma, &la) == 0 && frame_get(b, fb[0], &mb, &lb) == 0);
    method_info ia, ib;
    CHECK(method_get(a, ma, &ia) == 0 && method_get(b, mb, &ib) == 0);
    CHECK(la == 110 && lb == 110 && strcmp(ia.name, ib.name) == 0 && strcmp(ia.class_name, "pkg.Work") == 0);
    CHECK(ia.class_serial == CLASS_SERIAL_BASE && ib.class_serial == CLASS_SERIAL_BASE + 1);
    char top_a[256], top_b[256];
    text_trace_top_method(a, ra[0].trace, top_a, sizeof top_a);
    text_trace_top_method(b, rb[0].trace, top_b, sizeof top_b);
    CHECK(strcmp(top_a, "pkg.Work.mc1") == 0 && strcmp(top_a, top_b) == 0);
    free(ra);
    free(rb);
    sample_queue_free(&q);
    cpu_collector_free(on_a);
    cpu_collector_free(on_b);
    profile_tables_free(a);
    profile_tables_free(b);
}
