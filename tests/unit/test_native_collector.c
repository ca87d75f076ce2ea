/* Unit tests: the CPU collector's side of native=y and wall=, with fake
 * resolvers: native frames named by their address, threads that are not
 * Java threads named by their kernel id, stop frames, a stack that reaches
 * its thread's start, categories, and wall='s states. */
#include "unit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stack_table.h"
#include "core/tables.h"
#include "cpu/code_map.h"
#include "cpu/cpu_collector.h"
#include "cpu/sample_queue.h"
#include "profile/collapsed.h"

/* The tables of the test running (each test makes its own). */
static profile_tables *test_tables;

/* Java methods: ids 0xa1.. named "java.lang.Thread.sleep", "App.work". */
static serial_t fake_java(profile_tables *tables, const void *method, void *context)
{
    (void)context;
    uint64_t id = (uint64_t)(uintptr_t)method;
    serial_t known = method_find(tables, id);
    if (known)
        return known;
    method_desc d = { 0 };
    d.class_serial = class_intern(tables, id == 0xa1 ? "Ljava/lang/Thread;" : "LApp;");
    d.name = id == 0xa1 ? "sleep" : "work";
    d.signature = "()V";
    return method_add(tables, id, &d);
}

/* Native functions by address: 0x1000 memcpy (libc), 0x2000 G1::work
 * (libjvm.so), 0x3000 start_thread (libc). */
static serial_t fake_native(profile_tables *tables, uint64_t pc, void *context)
{
    (void)context;
    uint64_t id = SAMPLE_TAG_NATIVE_PC | pc;
    serial_t known = method_find(tables, id);
    if (known)
        return known;
    method_desc d = { 0 };
    int jvm = pc == 0x2000;
    d.class_serial = class_intern(tables, jvm ? "L[libjvm.so];" : "L[libc.so.6];");
    d.name = pc == 0x1000 ? "memcpy" : jvm ? "G1::work" : "start_thread";
    d.source_file = jvm ? "libjvm.so" : "libc.so.6";
    d.is_native = 1;
    d.kind = jvm ? FRAME_KIND_JVM : FRAME_KIND_NATIVE;
    return method_add(tables, id, &d);
}

static serial_t gc_thread;

static serial_t fake_os_thread(profile_tables *tables, int32_t tid, void *context)
{
    (void)context;
    if (gc_thread == 0)
        gc_thread = thread_add(tables, tid == 77 ? "GC Thread#0" : "other", "(native)", 0);
    return gc_thread;
}

static cpu_collector *make(int wall_states)
{
    test_tables = profile_tables_new(NULL);
    gc_thread = 0;
    cpu_collector_config cfg = { .depth = 8, .lineno = 0, .per_thread = 1, .keep_stacks = 1,
                                 .tables = test_tables, .resolve = fake_java, .resolve_native = fake_native,
                                 .os_thread = fake_os_thread, .wall_states = wall_states };
    return cpu_collector_new(&cfg);
}

static void done(cpu_collector *c, sample_queue *q)
{
    sample_queue_free(q);
    cpu_collector_free(c);
    profile_tables_free(test_tables);
    test_tables = NULL;
}

/* A sample whose Java frames begin at java_pc (0: unknown). */
static void push_pc(sample_queue *q, serial_t thread, int32_t tid, uint32_t flags, uint64_t java_pc,
                    const void *const *methods, uint32_t n)
{
    raw_sample *s = sample_queue_claim(q);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    s->thread_serial = thread;
    s->carrier_serial = 0;
    s->os_tid = tid;
    s->flags = flags;
    s->weight = 1;
    s->java_pc = java_pc;
    s->num_frames = (int32_t)n;
    for (uint32_t i = 0; i < n; i++)
        s->frames[i] = (sample_frame){ SAMPLE_FRAME_TAG(methods[i]) ? BCI_NATIVE : 0, methods[i] };
    sample_queue_publish(q, s);
}

static void push(sample_queue *q, serial_t thread, int32_t tid, uint32_t flags, const void *const *methods,
                 uint32_t n)
{
    push_pc(q, thread, tid, flags, 0, methods, n);
}

/* The collector's whole stacks as collapsed text. */
static void collapsed(cpu_collector *c, char *buf, size_t size)
{
    profile *p = cpu_collector_profile(c, "t", "cpu", 10000000);
    FILE *f = tmpfile();
    CHECK(p != NULL && f != NULL && collapsed_write_profile(p, 0, f) == 0);
    rewind(f);
    size_t len = fread(buf, 1, size - 1, f);
    buf[len] = '\0';
    fclose(f);
    profile_free(p);
}

TEST(native_collector_mixed_stack_and_categories)
{
    cpu_collector *c = make(0);
    sample_queue q;
    CHECK(c != NULL && sample_queue_init(&q, 16, 8) == 0);
    serial_t main_thread = thread_add(test_tables, "main", "main", 0);
    /* A Java thread in libjvm.so under App.work: category VM. */
    const void *vm[] = { SAMPLE_NATIVE_FRAME(0x2000), (const void *)(uintptr_t)0xa2 };
    push(&q, main_thread, 0, 0, vm, 2);
    /* The same thread in Java code: category Java. */
    const void *java[] = { (const void *)(uintptr_t)0xa2 };
    push(&q, main_thread, 0, 0, java, 1);
    /* A GC worker (no Java thread: kernel id 77) whose walk reached
     * start_thread and then code of no object: the stop frame goes. */
    const void *gc[] = { SAMPLE_NATIVE_FRAME(0x1000), SAMPLE_NATIVE_FRAME(0x2000), SAMPLE_NATIVE_FRAME(0x3000),
                         SAMPLE_STOP_FRAME(SAMPLER_STOP_UNKNOWN_CODE) };
    push(&q, 0, 77, 0, gc, 4);
    /* The same worker, its walk cut short by a failed read: the reason stays. */
    const void *cut[] = { SAMPLE_NATIVE_FRAME(0x2000), SAMPLE_STOP_FRAME(SAMPLER_STOP_READ_FAILED) };
    push(&q, 0, 77, 0, cut, 2);
    /* A Java thread that runs no Java (Signal Dispatcher): its native walk
     * ends at its root, its Java walk finds nothing; both stops go. */
    const void *no_java[] = { SAMPLE_NATIVE_FRAME(0x1000), SAMPLE_NATIVE_FRAME(0x3000),
                              SAMPLE_STOP_FRAME(SAMPLER_STOP_NO_UNWIND_INFO), SAMPLE_STOP_FRAME(-3) };
    push(&q, main_thread, 0, 0, no_java, 4);
    CHECK(cpu_collector_drain(c, &q) == 5);

    char text[2048];
    collapsed(c, text, sizeof text);
    CHECK(strstr(text, "start_thread;memcpy 1\n") != NULL);
    CHECK(strstr(text, "native_no_unwind_info") == NULL && strstr(text, "unknown_not_Java") == NULL);
    CHECK(strstr(text, "App.work;G1::work 1\n") != NULL);
    CHECK(strstr(text, "start_thread;G1::work;memcpy 1\n") != NULL);
    CHECK(strstr(text, "[unwalkable].native_read_failed;G1::work 1\n") != NULL);
    CHECK(strstr(text, "native_unknown_code") == NULL);

    cpu_summary sum;
    CHECK(cpu_collector_summary(c, &sum) == 0);
    CHECK(sum.total == 5);
    CHECK(sum.by_category[CPU_CATEGORY_VM] == 1 && sum.by_category[CPU_CATEGORY_NATIVE] == 1);
    CHECK(sum.by_category[CPU_CATEGORY_JAVA] == 1);
    CHECK(sum.by_category[CPU_CATEGORY_GC] == 2);
    CHECK(sum.nthreads == 2);
    for (uint32_t i = 0; i < sum.nthreads; i++)
        CHECK((sum.threads[i].thread == gc_thread && sum.threads[i].count == 2) ||
              (sum.threads[i].thread == main_thread && sum.threads[i].count == 3));
    cpu_summary_free(&sum);
    done(c, &q);
}

TEST(native_collector_thread_names_give_categories)
{
    CHECK(cpu_category_of_thread_name("GC Thread#3") == CPU_CATEGORY_GC);
    CHECK(cpu_category_of_thread_name("G1 Refine#0") == CPU_CATEGORY_GC);
    CHECK(cpu_category_of_thread_name("C2 CompilerThre") == CPU_CATEGORY_JIT);
    CHECK(cpu_category_of_thread_name("C1 CompilerThre") == CPU_CATEGORY_JIT);
    CHECK(cpu_category_of_thread_name("VM Thread") == CPU_CATEGORY_VM);
    CHECK(cpu_category_of_thread_name("ld-worker") == CPU_CATEGORY_NATIVE);
    CHECK_STR(cpu_failure_reason(SAMPLER_STOP_DEPTH), "native_depth_limit");
    CHECK_STR(cpu_failure_reason(SAMPLER_NO_NATIVE_FRAME), "native_unknown_code");
    CHECK_STR(cpu_failure_reason(-2), "GC_active");
}

TEST(native_collector_wall_states)
{
    cpu_collector *c = make(1);
    sample_queue q;
    CHECK(c != NULL && sample_queue_init(&q, 16, 8) == 0);
    serial_t t = thread_add(test_tables, "sleeper", "main", 0);
    /* In Thread.sleep, below libc: sleeping, whatever the system call. */
    const void *sleeping[] = { SAMPLE_NATIVE_FRAME(0x1000), (const void *)(uintptr_t)0xa1,
                               (const void *)(uintptr_t)0xa2 };
    push(&q, t, 0, SAMPLE_IN_SYSCALL, sleeping, 3);
    /* Blocked in a system call under App.work: syscall. */
    const void *syscall[] = { SAMPLE_NATIVE_FRAME(0x1000), (const void *)(uintptr_t)0xa2 };
    push(&q, t, 0, SAMPLE_IN_SYSCALL, syscall, 2);
    /* Running App.work. */
    const void *running[] = { (const void *)(uintptr_t)0xa2 };
    push(&q, t, 0, 0, running, 1);
    CHECK(cpu_collector_drain(c, &q) == 3);

    char text[2048];
    collapsed(c, text, sizeof text);
    CHECK(strstr(text, "[state].sleeping;App.work;java.lang.Thread.sleep;memcpy 1\n") != NULL);
    CHECK(strstr(text, "[state].syscall;App.work;memcpy 1\n") != NULL);
    CHECK(strstr(text, "[state].running;App.work 1\n") != NULL);
    cpu_summary sum;
    CHECK(cpu_collector_summary(c, &sum) == 0);
    CHECK(sum.by_category[CPU_STATE_SLEEPING] == 1 && sum.by_category[CPU_STATE_SYSCALL] == 1 &&
          sum.by_category[CPU_STATE_RUNNING] == 1 && sum.total == 3);
    CHECK_STR(cpu_state_name(CPU_STATE_PARKED), "parked");
    cpu_summary_free(&sum);
    done(c, &q);
}

/* java_code for the tests: 0x7000.. is compiled code of App.work (0xa2),
 * 0x8000.. the interpreter, anything else unknown. */
static int fake_java_code(uint64_t pc, uint64_t *method, void *context)
{
    (void)context;
    if (pc >= 0x7000 && pc < 0x7100) {
        *method = 0xa2;
        return CODE_COMPILED;
    }
    return pc >= 0x8000 && pc < 0x8100 ? CODE_INTERPRETER : CODE_NONE;
}

TEST(native_collector_marks_how_top_java_frames_ran)
{
    test_tables = profile_tables_new(NULL);
    gc_thread = 0;
    cpu_collector_config cfg = { .depth = 8, .lineno = 0, .per_thread = 0, .keep_stacks = 1,
                                 .tables = test_tables, .resolve = fake_java, .resolve_native = fake_native,
                                 .java_code = fake_java_code };
    cpu_collector *c = cpu_collector_new(&cfg);
    sample_queue q;
    CHECK(c != NULL && sample_queue_init(&q, 16, 8) == 0);
    serial_t main_thread = thread_add(test_tables, "main", "main", 0);
    /* Thread.sleep (0xa1) inlined into App.work (0xa2), compiled; a caller
     * below (App.work again, 0xa2 would match first: use 0xa1) unknown. */
    const void *inl[] = { (const void *)(uintptr_t)0xa1, (const void *)(uintptr_t)0xa2, (const void *)(uintptr_t)0xa1 };
    push_pc(&q, main_thread, 0, 0, 0x7010, inl, 3);
    /* Under memcpy: the return address into App.work's compiled code. */
    const void *below_native[] = { SAMPLE_NATIVE_FRAME(0x1000), (const void *)(uintptr_t)0xa2 };
    push_pc(&q, main_thread, 0, 0, 0x7020, below_native, 2);
    /* In the interpreter: the top Java frame only. */
    const void *interp[] = { (const void *)(uintptr_t)0xa2, (const void *)(uintptr_t)0xa1 };
    push_pc(&q, main_thread, 0, 0, 0x8004, interp, 2);
    /* Code the map does not know (a stub), and a compiled method that is
     * not on the stack: nothing marked. */
    push_pc(&q, main_thread, 0, 0, 0x9000, interp, 2);
    const void *other[] = { (const void *)(uintptr_t)0xa1 };
    push_pc(&q, main_thread, 0, 0, 0x7000, other, 1);
    CHECK(cpu_collector_drain(c, &q) == 5);

    char text[2048];
    collapsed(c, text, sizeof text);
    CHECK(strstr(text, "java.lang.Thread.sleep;App.work_[j];java.lang.Thread.sleep_[i] 1\n") != NULL);
    CHECK(strstr(text, "App.work_[j];memcpy 1\n") != NULL);
    CHECK(strstr(text, "java.lang.Thread.sleep;App.work_[0] 1\n") != NULL);
    CHECK(strstr(text, "java.lang.Thread.sleep;App.work 1\n") != NULL);
    CHECK(strstr(text, "\njava.lang.Thread.sleep 1\n") != NULL || strncmp(text, "java.lang.Thread.sleep 1\n", 25) == 0);
    done(c, &q);
}
