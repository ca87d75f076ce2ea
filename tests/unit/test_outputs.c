/* Unit tests: whole stacks (stack_table, trace_build's full_stacks), their
 * profiles (stack_profile), site and monitor rows by stack, and the files
 * pprof=, collapsed= and flamegraph= write (profile_outputs). */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/stack_profile.h"
#include "core/stack_table.h"
#include "core/tables.h"
#include "core/trace_builder.h"
#include "heap/site_table.h"
#include "monitor/monitor_table.h"
#include "output/profile_outputs.h"

/* The tables of the test running (each test makes its own). */
static profile_tables *test_tables;

TEST(stack_table_interns_with_thread_and_trace)
{
    profile_tables *t = profile_tables_new(NULL), *other = profile_tables_new(NULL);
    CHECK(t != NULL && other != NULL);
    stack_frame a[3] = { { 1, 10, 0 }, { 2, 20, 0 }, { 3, LINE_NATIVE, 0 } };
    stack_id s = stack_intern(t, 0, a, 3, 300001);
    CHECK(s == 1);
    CHECK(stack_intern(t, 0, a, 3, 300009) == s);               /* known: keeps its first trace */
    CHECK(stack_intern(t, THREAD_SERIAL_BASE, a, 3, 300002) != s);   /* other thread: other stack */
    CHECK(stack_intern(t, 0, a, 2, 300001) != s);               /* a prefix is another stack */
    stack_frame b[3] = { { 1, 11, 0 }, { 2, 20, 0 }, { 3, LINE_NATIVE, 0 } };
    CHECK(stack_intern(t, 0, b, 3, 300001) != s);               /* other line */
    stack_frame c[3] = { { 1, 10, JAVA_RUN_INLINED }, { 2, 20, JAVA_RUN_COMPILED }, { 3, LINE_NATIVE, 0 } };
    stack_id sc = stack_intern(t, 0, c, 3, 300001);
    CHECK(sc != s && sc != 0);                               /* the same frames, run otherwise */
    serial_t thread, trace;
    const stack_frame *frames;
    uint32_t n;
    CHECK(stack_get(t, s, &thread, &frames, &n, &trace) == 0);
    CHECK(thread == 0 && n == 3 && trace == 300001);
    CHECK(frames[0].method == 1 && frames[0].line == 10 && frames[2].line == LINE_NATIVE);
    CHECK(stack_get(t, 0, NULL, NULL, NULL, NULL) != 0);
    CHECK(stack_get(t, 99, NULL, NULL, NULL, NULL) != 0);
    CHECK(stack_count(t) == 5);
    CHECK(stack_count(other) == 0 && stack_get(other, s, NULL, NULL, NULL, NULL) != 0);   /* each tables its own */
    stack_frame deep[STACK_MAX_FRAMES + 10];
    for (uint32_t i = 0; i < STACK_MAX_FRAMES + 10; i++)
        deep[i] = (stack_frame){ i + 1, 1, 0 };
    stack_id d = stack_intern(t, 0, deep, STACK_MAX_FRAMES + 10, 0);   /* cut at 256 */
    CHECK(d != 0 && stack_get(t, d, NULL, NULL, &n, NULL) == 0 && n == STACK_MAX_FRAMES);
    profile_tables_free(t);
    profile_tables_free(other);
}

static serial_t fake_resolve(profile_tables *tables, const void *method, void *ctx)
{
    (void)ctx;
    uintptr_t id = (uintptr_t)method;
    serial_t known = method_find(tables, id);
    if (known)
        return known;
    char name[32];
    snprintf(name, sizeof name, "f%lu", (unsigned long)id);
    line_entry lines[] = { { 0, 100 }, { 10, 110 } };
    method_desc d = { .class_serial = class_intern(tables, "Lpkg/Deep;"), .name = name, .signature = "()V",
                      .source_file = "Deep.java", .lines = lines, .line_count = 2 };
    return method_add(tables, id, &d);
}

/* A recursion 40 frames deep: the trace is cut at depth=4, the whole stack
 * is not; the trace derived from the walk is the stack's own. */
TEST(trace_build_keeps_whole_stacks_beside_the_trace)
{
    test_tables = profile_tables_new(NULL);
    frame_ref frames[40];
    for (int i = 0; i < 40; i++)
        frames[i] = (frame_ref){ i == 0 ? 12 : 3, (const void *)(uintptr_t)(1 + i % 3) };
    trace_builder b = { .depth = 4, .lineno = 0, .full_stacks = 1, .tables = test_tables, .resolve = fake_resolve };
    stack_id stack = 0;
    serial_t trace = trace_build(&b, 0, frames, 40, &stack);
    CHECK(trace != 0 && stack != 0);
    serial_t th, stack_trace;
    const serial_t *tframes;
    const stack_frame *sframes;
    uint32_t tn, sn;
    CHECK(trace_get(test_tables, trace, &th, &tframes, &tn) == 0 && tn == 4);
    CHECK(stack_get(test_tables, stack, NULL, &sframes, &sn, &stack_trace) == 0 && sn == 40 && stack_trace == trace);
    serial_t m;
    int32_t line;
    CHECK(frame_get(test_tables, tframes[0], &m, &line) == 0 && line == LINE_UNKNOWN);   /* lineno=n in the trace */
    CHECK(sframes[0].method == m && sframes[0].line == 110);              /* a line in the stack */
    CHECK(sframes[39].line == 100);
    /* The same walk again: the same trace and stack; without stack_out none. */
    stack_id again = 0;
    CHECK(trace_build(&b, 0, frames, 40, &again) == trace && again == stack);
    CHECK(trace_build(&b, 0, frames, 40, NULL) == trace);
    profile_tables_free(test_tables);
    test_tables = NULL;
}

TEST(stack_profile_names_frames_threads_and_leaves)
{
    test_tables = profile_tables_new(NULL);
    serial_t thread = thread_add(test_tables, "worker-1", "main", 0);
    serial_t m1 = fake_resolve(test_tables, (const void *)(uintptr_t)7, NULL), m2 = fake_resolve(test_tables, (const void *)(uintptr_t)8, NULL);
    stack_frame frames[2] = { { m1, 110, 0 }, { m2, LINE_NATIVE, 0 } };
    stack_id s = stack_intern(test_tables, thread, frames, 2, 0);
    static const profile_value_type types[] = { { "alloc_objects", "count" }, { "alloc_space", "bytes" } };
    profile *p = profile_new("Allocation sites", types, 2);
    int64_t v[2] = { 3, 48 };
    CHECK(stack_profile_add(test_tables, p, s, "byte[]", NULL, v) == 0);
    CHECK(stack_profile_add(test_tables, p, s, "byte[]", NULL, v) == 0);         /* merged */
    CHECK(stack_profile_add(test_tables, p, 0, NULL, NULL, v) == 0);             /* a stack not kept: a row anyway */
    CHECK(profile_sample_count(p) == 2 && profile_total(p, 0) == 9 && profile_total(p, 1) == 144);
    profile_sample smp;
    CHECK(profile_sample_get(p, 0, &smp) == 0 && smp.depth == 3);
    CHECK_STR(smp.thread, "worker-1");
    CHECK(smp.values[0] == 6);
    const profile_frame *leaf = profile_frame_get(p, smp.frames[0]), *top = profile_frame_get(p, smp.frames[1]),
                        *root = profile_frame_get(p, smp.frames[2]);
    char name[128];
    profile_frame_name(leaf, name, sizeof name);
    CHECK_STR(name, "byte[]");
    CHECK_STR(top->class_name, "pkg.Deep");
    CHECK_STR(top->method, "f7");
    CHECK_STR(top->signature, "()V");
    CHECK_STR(top->file, "Deep.java");
    CHECK(top->line == 110 && root->line == PROFILE_LINE_NATIVE);
    CHECK(profile_sample_get(p, 1, &smp) == 0 && smp.depth == 1);
    CHECK_STR(profile_frame_get(p, smp.frames[0])->method, "stack_table_full");
    profile_free(p);
    profile_tables_free(test_tables);
    test_tables = NULL;
}

/* Rows by stack sum to SITES' rows exactly, sampled or not. */
TEST(site_stack_rows_agree_with_site_rows)
{
    for (int sampled = 0; sampled <= 1; sampled++) {
        uint64_t interval = sampled ? 4096 : 0;
        CHECK(site_table_init(1000) == 0);
        /* One site (trace 300001, class 100001) reached by two whole stacks,
         * two array lengths each. */
        subsite_t s[4] = { site_intern(300001, 1, 100001, 24), site_intern(300001, 1, 100001, 1000),
                           site_intern(300001, 2, 100001, 24), site_intern(300001, 2, 100001, 5000) };
        for (int i = 0; i < 4; i++)
            CHECK(s[i] != 0);
        CHECK(site_intern(300001, 2, 100001, 24) == s[2]);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k <= i * 3; k++)
                site_count_alloc(s[i]);
        site_row *rows, totals, *by_stack;
        uint32_t n, nstack;
        CHECK(site_rows(interval, &rows, &n, &totals) == 0 && n == 1 && rows[0].stack == 0);
        CHECK(site_stack_rows(interval, &by_stack, &nstack) == 0 && nstack == 4);
        uint64_t objs = 0, bytes = 0, objs_stack1 = 0;
        for (uint32_t i = 0; i < nstack; i++) {
            objs += by_stack[i].alloc_objs;
            bytes += by_stack[i].alloc_bytes;
            objs_stack1 += by_stack[i].stack == 1 ? by_stack[i].alloc_objs : 0;
            CHECK(by_stack[i].trace == 300001 && by_stack[i].class_serial == 100001);
        }
        CHECK(objs == rows[0].alloc_objs && bytes == rows[0].alloc_bytes);
        if (!sampled)
            CHECK(objs == 1 + 4 + 7 + 10 && objs_stack1 == 5);
        free(rows);
        free(by_stack);
        site_table_free();
    }
}

TEST(monitor_rows_merge_whole_stacks_of_one_trace)
{
    monitor_table *table = monitor_table_new();
    CHECK(table != NULL);
    CHECK(monitor_table_add(table, 300001, 1, 100001, BLOCK_ENTER, 1000) == 0);
    CHECK(monitor_table_add(table, 300001, 2, 100001, BLOCK_ENTER, 3000) == 0);
    CHECK(monitor_table_add(table, 300001, 2, 100001, BLOCK_WAIT, 50) == 0);
    monitor_row *rows;
    uint32_t n;
    uint64_t total;
    CHECK(monitor_table_rows(table, &rows, &n, &total) == 0 && n == 2 && total == 4050);
    CHECK(rows[0].kind == BLOCK_ENTER && rows[0].count == 2 && rows[0].nanos == 4000 && rows[0].stack == 0);
    free(rows);
    CHECK(monitor_table_stack_rows(table, &rows, &n, &total) == 0 && n == 3 && total == 4050);
    uint64_t enter_count = 0;
    for (uint32_t i = 0; i < n; i++)
        enter_count += rows[i].kind == BLOCK_ENTER ? rows[i].count : 0;
    CHECK(enter_count == 2);
    monitor_rows_merge(rows, &n);                            /* what monitor_table_rows gives */
    CHECK(n == 2 && rows[0].count == 2 && rows[0].nanos == 4000 && rows[1].kind == BLOCK_WAIT);
    free(rows);
    monitor_table_free(table);
}

TEST(profile_output_names_insert_the_kind)
{
    char out[256];
    profile_output_name("prof.pb.gz", "cpu", 0, out, sizeof out);
    CHECK_STR(out, "prof.pb.gz");                              /* one profile: the path given */
    profile_output_name("prof.pb.gz", "cpu", 1, out, sizeof out);
    CHECK_STR(out, "prof.cpu.pb.gz");
    profile_output_name("/tmp/a.b/stacks.txt", "alloc", 1, out, sizeof out);
    CHECK_STR(out, "/tmp/a.b/stacks.alloc.txt");
    profile_output_name("/tmp/a.b/stacks", "lock", 1, out, sizeof out);
    CHECK_STR(out, "/tmp/a.b/stacks.lock");                    /* a dot in a directory is not an extension */
    profile_output_name(".hidden", "cpu", 1, out, sizeof out);
    CHECK_STR(out, ".hidden.cpu");
    profile_output_name("out/x.collapsed.txt.gz", "cpu", 1, out, sizeof out);
    CHECK_STR(out, "out/x.collapsed.cpu.txt.gz");
}

static int told_errors, told_files;
static void count_told(void *ctx, int error, const char *line)
{
    (void)ctx;
    (void)line;
    if (error)
        told_errors++;
    else
        told_files++;
}

static int file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int)st.st_size : -1;
}

/* Two profiles: a pprof and a collapsed file each, named by kind, and one
 * flame-graph page; a path that cannot be written is said, naming the option. */
TEST(profile_outputs_write_a_file_per_profile)
{
    char dir[] = "/tmp/hprof-outputs-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const profile_value_type cpu_types[] = { { "samples", "count" } };
    static const profile_value_type lock_types[] = { { "contentions", "count" }, { "delay", "nanoseconds" } };
    profile *cpu = profile_new("CPU samples", cpu_types, 1), *lock = profile_new("Lock contention", lock_types, 2);
    uint32_t f = profile_frame_id(cpu, "pkg.Main", "main", "", "Main.java", 7);
    int64_t one = 5, two[2] = { 2, 900 };
    CHECK(profile_add(cpu, &f, 1, NULL, &one) == 0);
    uint32_t g = profile_frame_id(lock, "", "java.lang.Object", "", "", PROFILE_LINE_UNKNOWN);
    CHECK(profile_add(lock, &g, 1, NULL, two) == 0);
    kind_profile profiles[2] = { { "cpu", cpu }, { "lock", lock } };
    hprof_options opt;
    char err[512];
    CHECK(options_parse("cpu=samples", &opt, err, sizeof err) == 0);
    snprintf(opt.outputs[format_index("pprof")], OPTIONS_PATH_MAX, "%s/p.pb.gz", dir);
    snprintf(opt.outputs[format_index("collapsed")], OPTIONS_PATH_MAX, "%s/c.txt", dir);
    snprintf(opt.outputs[format_index("flamegraph")], OPTIONS_PATH_MAX, "%s/f.html", dir);
    const char *kinds[2] = { "cpu", "lock" };
    CHECK(profile_outputs_check(&opt, kinds, 2, err, sizeof err) == 0);
    told_errors = told_files = 0;
    CHECK(profile_outputs_write(&opt, profiles, 2, count_told, NULL) == 0);
    CHECK(told_errors == 0 && told_files == 5);
    const char *names[] = { "p.cpu.pb.gz", "p.lock.pb.gz", "c.cpu.txt", "c.lock.txt", "f.html" };
    char path[512];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK(file_size(path) > 0);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/p.pb.gz", dir);
    CHECK(file_size(path) == -1);                               /* several profiles: no plain name */

    snprintf(opt.outputs[format_index("pprof")], OPTIONS_PATH_MAX, "%s/missing/p.pb.gz", dir);
    opt.outputs[format_index("collapsed")][0] = opt.outputs[format_index("flamegraph")][0] = '\0';
    CHECK(profile_outputs_check(&opt, kinds, 1, err, sizeof err) == -1 && strstr(err, "pprof=") != NULL);
    told_errors = told_files = 0;
    CHECK(profile_outputs_write(&opt, profiles, 1, count_told, NULL) == 1 && told_errors == 1);
    profile_free(cpu);
    profile_free(lock);
    rmdir(dir);
}

/* A one-file format (jfr=) gets every profile in one file at exactly its
 * path, beside a file-per-profile format's file per profile. */
TEST(formats_outputs_by_what_each_shows)
{
    char dir[] = "/tmp/hprof_formats_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    profile_value_type cpu_types[1] = { { "samples", "count" } };
    profile_value_type alloc_types[1] = { { "alloc_space", "bytes" } };
    profile *cpu = profile_new("CPU samples", cpu_types, 1), *alloc = profile_new("Allocations", alloc_types, 1);
    uint32_t f = profile_frame_id(cpu, "pkg.Main", "main", "", "Main.java", 7);
    uint32_t g = profile_frame_id(alloc, "pkg.Main", "make", "", "Main.java", 9);
    int64_t v = 3;
    CHECK(profile_add(cpu, &f, 1, NULL, &v) == 0 && profile_add(alloc, &g, 1, NULL, &v) == 0);
    kind_profile profiles[2] = { { "alloc", alloc }, { "cpu", cpu } };
    hprof_options opt;
    char err[512], path[512];
    CHECK(options_parse("cpu=samples,heap=sites", &opt, err, sizeof err) == 0);
    snprintf(opt.outputs[format_index("jfr")], OPTIONS_PATH_MAX, "%s/r.jfr", dir);
    snprintf(opt.outputs[format_index("collapsed")], OPTIONS_PATH_MAX, "%s/c.txt", dir);
    const char *kinds[2] = { "alloc", "cpu" };
    CHECK(profile_outputs_check(&opt, kinds, 2, err, sizeof err) == 0);
    told_errors = told_files = 0;
    CHECK(profile_outputs_write(&opt, profiles, 2, count_told, NULL) == 0);
    CHECK(told_errors == 0 && told_files == 3);
    snprintf(path, sizeof path, "%s/r.jfr", dir);
    FILE *in = fopen(path, "rb");
    char magic[4] = "";
    CHECK(in != NULL && fread(magic, 1, 4, in) == 4 && memcmp(magic, "FLR", 4) == 0);
    if (in)
        fclose(in);
    unlink(path);
    const char *names[] = { "c.alloc.txt", "c.cpu.txt" };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK(file_size(path) > 0);
        unlink(path);
    }
    profile_free(cpu);
    profile_free(alloc);
    rmdir(dir);
}
