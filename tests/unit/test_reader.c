/* Unit tests: the front end's readers (src/reader) on small hand-made HPROF
 * text and binary files, whole, cut at every length and corrupted, and the
 * analyses over what they make (src/analysis). */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "analysis/class_origins.h"
#include "output/hprof_binary.h"
#include "reader/hprof_data.h"

/* Two dumps: the second (cumulative) CPU SAMPLES section is the one that
 * counts; 2 of its 12 samples are in rows left out under cutoff. */
static const char TEXT_FILE[] =
    "JAVA PROFILE 1.0.1, created Mon Nov 23 17:35:14 2026\n"
    "\n"
    "(the JVMTI successor of the JDK 5-8 HPROF agent; options: cpu=samples,interval=2,thread=y,depth=4)\n"
    "--------\n"
    "\n"
    "THREAD START (obj=50030d41, id = 200001, name=\"main\", group=\"main\")\n"
    "THREAD START (obj=50030d42, id = 200002, name=\"worker \\\"x\\\"\", group=\"main\")\n"
    "THREAD END (id = 200002)\n"
    "TRACE 300001: (thread=200001)\n"
    "\tDemo.hot(Demo.java:10)\n"
    "\tDemo.main(Demo.java:20)\n"
    "TRACE 300002: (thread=200002)\n"
    "\tjava.lang.Thread.sleep(Thread.java:Native method)\n"
    "\tDemo$Inner.<init>(<Unknown Source>:Unknown line)\n"
    "\tDemo.main(Demo.java:21)\n"
    "CPU SAMPLES BEGIN (total = 3) Mon Nov 23 17:35:15 2026\n"
    "rank   self  accum   count trace method\n"
    "   1 100.00% 100.00%       3 300001 Demo.hot\n"
    "CPU SAMPLES END\n"
    "WAITED: MONITOR Ljava/lang/Object;, time_waited=3, thread 200001\n"
    "TRACE 300003: (thread=200001)\n"
    "\tDemo.hot(Demo.java:11)\n"
    "\tDemo.hot(Demo.java:12)\n"
    "\tDemo.main(Demo.java:20)\n"
    "CPU SAMPLES BEGIN (total = 12) Mon Nov 23 17:35:18 2026\n"
    "rank   self  accum   count trace method\n"
    "   1 50.00% 50.00%       6 300001 Demo.hot\n"
    "   2 25.00% 75.00%       3 300003 Demo.hot\n"
    "   3  8.33% 83.33%       1 300002 java.lang.Thread.sleep\n"
    "CPU SAMPLES END\n"
    "SITES BEGIN (ordered by live bytes) Mon Nov 23 17:35:18 2026\n"
    "          percent          live          alloc'ed  stack class\n"
    " rank   self  accum     bytes objs     bytes  objs trace name\n"
    "    1 80.00% 80.00%       800   50      1600   100 300001 byte[]\n"
    "    2 20.00% 100.00%       200   10       200    10 300002 Demo$Inner\n"
    "SITES END\n"
    "MONITOR TIME BEGIN (total = 10 ms) Mon Nov 23 17:35:18 2026\n"
    "rank   self  accum   count trace monitor\n"
    "   1 75.00% 75.00%       4 300003 java.lang.Object (Java)\n"
    "   2 25.00% 100.00%       1 300002 Demo$Lock (Java)\n"
    "MONITOR TIME END\n"
    "DEADLOCKS BEGIN (cycles = 0) Mon Nov 23 17:35:18 2026\n"
    "DEADLOCKS END\n";

static hprof_data *parse_text(const char *text, size_t len, char *err, size_t errlen)
{
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    hprof_data *d = hprof_text_parse("t.txt", copy, len, err, errlen);
    if (d == NULL)
        free(copy);
    else if (hprof_data_build_profiles(d, err, errlen) != 0) {
        hprof_data_free(d);
        d = NULL;
    }
    return d;
}

/* The value of the sample whose leaf-first frame names are `names` (";"-joined). */
static int64_t value_of(const profile *p, const char *leaf_first, uint32_t v)
{
    for (uint32_t i = 0; i < profile_sample_count(p); i++) {
        profile_sample s;
        profile_sample_get(p, i, &s);
        char key[512] = "", name[128];
        for (uint32_t k = 0; k < s.depth; k++) {
            profile_frame_name(profile_frame_get(p, s.frames[k]), name, sizeof name);
            if (k)
                strcat(key, ";");
            strcat(key, name);
        }
        if (strcmp(key, leaf_first) == 0)
            return s.values[v];
    }
    return -1;
}

TEST(text_reader_reads_the_last_sections)
{
    char err[256] = "";
    hprof_data *d = parse_text(TEXT_FILE, sizeof TEXT_FILE - 1, err, sizeof err);
    CHECK(d != NULL);
    if (d == NULL) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(d->nthreads == 2 && d->threads[1].ended && !d->threads[0].ended);
    CHECK_STR(d->threads[1].name, "worker \\\"x\\\"");
    CHECK(d->interval_ms == 2 && d->depth_option == 4 && d->duration_ms == 4000);
    CHECK(d->sections[HD_CPU_SAMPLES].times_seen == 2 && d->ignored_lines == 1);
    const profile *cpu = d->profiles[HD_CPU_SAMPLES];
    CHECK(profile_total(cpu, 0) == 12 && profile_total(cpu, 1) == 12 * 2000000);
    CHECK(value_of(cpu, "Demo.hot;Demo.main", 0) == 6);
    CHECK(value_of(cpu, "Demo.hot;Demo.hot;Demo.main", 0) == 3);
    CHECK(value_of(cpu, "java.lang.Thread.sleep;Demo$Inner.<init>;Demo.main", 0) == 1);
    CHECK(value_of(cpu, HD_CUTOFF_CLASS "." HD_CUTOFF_METHOD, 0) == 2);
    const hd_trace *t = hd_find_trace(d, 300002);
    CHECK(t && t->depth == 3 && d->frames[t->first].line == PROFILE_LINE_NATIVE);
    CHECK(t && d->frames[t->first + 1].file[0] == 0 && d->frames[t->first + 1].line == PROFILE_LINE_UNKNOWN);
    const profile *sites = d->profiles[HD_SITES];
    CHECK(value_of(sites, "byte[];Demo.hot;Demo.main", 0) == 800);
    CHECK(value_of(sites, "byte[];Demo.hot;Demo.main", 3) == 100);
    CHECK(profile_total(sites, 2) == 1800);
    const profile *mon = d->profiles[HD_MONITOR_TIME];
    CHECK(value_of(mon, "java.lang.Object;Demo.hot;Demo.hot;Demo.main", 1) == 7500000);
    CHECK(d->deadlocks != NULL && d->deadlock_cycles == 0);
    CHECK(d->profiles[HD_CPU_TIMES] == NULL);
    hprof_data_free(d);
}

TEST(text_reader_counts_threads_of_samples)
{
    char err[256];
    hprof_data *d = parse_text(TEXT_FILE, sizeof TEXT_FILE - 1, err, sizeof err);
    const profile *cpu = d ? d->profiles[HD_CPU_SAMPLES] : NULL;
    int64_t main_samples = 0;
    for (uint32_t i = 0; cpu && i < profile_sample_count(cpu); i++) {
        profile_sample s;
        profile_sample_get(cpu, i, &s);
        if (strcmp(s.thread, "main") == 0)
            main_samples += s.values[0];
    }
    CHECK(main_samples == 9);
    hprof_data_free(d);
}

/* Every cut of the file either reads (a cut between records) or fails
 * with a message naming the file; none crashes (run under ASan). */
TEST(text_reader_survives_every_truncation)
{
    size_t len = sizeof TEXT_FILE - 1, read_ok = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char err[256] = "";
        hprof_data *d = parse_text(TEXT_FILE, cut, err, sizeof err);
        if (d) {
            read_ok++;
            hprof_data_free(d);
        } else {
            CHECK(strncmp(err, "t.txt: ", 7) == 0);
        }
    }
    CHECK(read_ok > 0 && read_ok < len / 4);
}

TEST(text_reader_survives_corruption)
{
    size_t len = sizeof TEXT_FILE - 1;
    char *copy = malloc(len + 1);
    srand(7);
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, TEXT_FILE, len + 1);
        for (int k = 0; k < 1 + round % 4; k++)
            copy[rand() % len] = "0:(\t\n x9%.-"[rand() % 12];
        char err[256] = "";
        hprof_data *d = parse_text(copy, len, err, sizeof err);
        CHECK(d != NULL || strncmp(err, "t.txt: ", 7) == 0);
        hprof_data_free(d);
    }
    free(copy);
}

TEST(text_reader_errors_say_what_is_wrong)
{
    char err[256];
    CHECK(parse_text("hello\n", 6, err, sizeof err) == NULL);
    CHECK(strstr(err, "t.txt: line 1: not an HPROF text file") != NULL);
    static const char missing_trace[] =
        "JAVA PROFILE 1.0.1, created Mon Nov 23 17:35:14 2026\n--------\n"
        "CPU SAMPLES BEGIN (total = 1) Mon Nov 23 17:35:15 2026\n"
        "rank   self  accum   count trace method\n"
        "   1 100.00% 100.00%       1 300009 Demo.hot\n"
        "CPU SAMPLES END\n";
    CHECK(parse_text(missing_trace, sizeof missing_trace - 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "names trace 300009, which the file does not hold") != NULL);
    static const char no_end[] =
        "JAVA PROFILE 1.0.1, created Mon Nov 23 17:35:14 2026\n--------\n"
        "CPU SAMPLES BEGIN (total = 1) Mon Nov 23 17:35:15 2026\n"
        "rank   self  accum   count trace method\n";
    CHECK(parse_text(no_end, sizeof no_end - 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "line 3: CPU SAMPLES section with no \"CPU SAMPLES END\"") != NULL);
}

/* ------------------------------------------------------------ binary */

#define NAME(i) (0x1000u + (i))

/* A binary file as the agent writes one: names, classes, frames, traces,
 * threads, two CPU SAMPLES (the last counts), ALLOC SITES, a heap dump. */
static unsigned char *binary_file(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    hb_writer w;
    hb_open(&w, f, 1700000000000ull, 256);
    const char *names[] = { "Demo", "hot", "()V", "Demo.java", "main", "main", "[B", "Unknown", "grp" };
    for (uint32_t i = 0; i < 9; i++)
        hb_utf8(&w, NAME(i), names[i]);
    hb_load_class(&w, 100001, 0x500, 300001, NAME(0));
    hb_load_class(&w, 100002, 0x501, 300000, NAME(6));
    hb_stack_frame(&w, 0x10, NAME(1), NAME(2), NAME(3), 100001, 10);
    hb_stack_frame(&w, 0x11, NAME(4), NAME(2), NAME(7), 100001, -3);
    uint64_t t1[2] = { 0x10, 0x11 }, t2[1] = { 0x11 };
    hb_stack_trace(&w, 300001, 200001, t1, 2);
    hb_stack_trace(&w, 300002, 200001, t2, 1);
    hb_start_thread(&w, 200001, 0x900, 300000, NAME(5), NAME(8), NAME(8));
    hb_sample first[1] = { { 1, 300001 } };
    hb_cpu_samples(&w, 1, first, 1);
    hb_sample last[2] = { { 7, 300001 }, { 2, 300002 } };
    hb_cpu_samples(&w, 10, last, 2);
    hb_site sites[1] = { { HB_BYTE, 100002, 300001, 160, 10, 320, 20 } };
    hb_alloc_sites(&w, 0, 0.0001f, 160, 10, 320, 20, sites, 1);
    hb_heap_summary(&w, 160, 10, 320, 20);
    hb_end_thread(&w, 200001);
    hb_heap_begin(&w);
    /* Demo's loader is 0x7000, an instance of Demo met before Demo's CLASS DUMP. */
    hb_instance_begin(&w, 0x7000, 300000, 0x500, 4);
    hb_put_value(&w, HB_INT, 5);
    hb_class c = { 0x500, 300001, 0, 0x7000, 0, 0, 4, NULL, 0, NULL, 0 };
    hb_class_dump(&w, &c);
    int8_t bytes[3] = { 1, 2, 3 };
    hb_prim_array(&w, 0x7100, 300000, HB_BYTE, 3, bytes);
    hb_root_sticky_class(&w, 0x500);
    hb_heap_end(&w);
    hb_close(&w);
    fclose(f);
    return (unsigned char *)buf;
}

static hprof_data *parse_binary(const unsigned char *bytes, size_t len, char *err, size_t errlen)
{
    hprof_data *d = hprof_binary_parse("b.hprof", bytes, len, err, errlen);
    if (d && hprof_data_build_profiles(d, err, errlen) != 0) {
        hprof_data_free(d);
        d = NULL;
    }
    return d;
}

TEST(binary_reader_reads_records)
{
    size_t len;
    unsigned char *bytes = binary_file(&len);
    char err[256] = "";
    hprof_data *d = parse_binary(bytes, len, err, sizeof err);
    CHECK(d != NULL);
    if (d == NULL) {
        fprintf(stderr, "%s\n", err);
        free(bytes);
        return;
    }
    CHECK(d->start_ms == 1700000000000ll);
    CHECK(d->nthreads == 1 && d->threads[0].ended);
    CHECK_STR(d->threads[0].name, "main");
    const profile *cpu = d->profiles[HD_CPU_SAMPLES];
    CHECK(profile_total(cpu, 0) == 10 && d->sections[HD_CPU_SAMPLES].times_seen == 2);
    CHECK(value_of(cpu, "Demo.hot;Demo.main", 0) == 7);
    CHECK(value_of(cpu, "Demo.main", 0) == 2);
    CHECK(value_of(cpu, HD_CUTOFF_CLASS "." HD_CUTOFF_METHOD, 0) == 1);
    const hd_trace *t = hd_find_trace(d, 300001);
    CHECK(t && d->frames[t->first].line == 10 && d->frames[t->first + 1].line == PROFILE_LINE_NATIVE);
    CHECK(t && d->frames[t->first + 1].file[0] == 0);
    CHECK(value_of(d->profiles[HD_SITES], "byte[];Demo.hot;Demo.main", 3) == 20);
    CHECK(d->has_heap_summary && d->heap_alloc_objs == 20);
    CHECK(d->heap_dumps == 1 && d->heap_classes == 1 && d->heap_instances == 1 &&
          d->heap_prim_arrays == 1 && d->heap_roots == 1 && d->heap_dump_note == NULL);
    /* Classes: Demo with its loading trace and loader; byte[] has no CLASS DUMP. */
    CHECK(d->nclasses == 2 && d->nloaders == 1);
    if (d->nclasses == 2 && d->nloaders == 1) {
        CHECK_STR(d->classes[0].name, "Demo");
        CHECK(d->classes[0].trace == 300001 && d->classes[0].loader == 0x7000 && d->classes[0].loader_known);
        CHECK_STR(d->classes[1].name, "byte[]");
        CHECK(!d->classes[1].loader_known);
        CHECK(d->loaders[0].id == 0x7000);
        CHECK_STR(d->loaders[0].class_name, "Demo");
    }
    hprof_data_free(d);
    free(bytes);
}

TEST(binary_reader_survives_every_truncation_and_corruption)
{
    size_t len;
    unsigned char *bytes = binary_file(&len);
    unsigned char *copy = malloc(len);
    size_t read_ok = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char err[256] = "";
        memcpy(copy, bytes, cut);      /* a buffer of exactly `cut` bytes: ASan sees any overrun */
        unsigned char *exact = malloc(cut ? cut : 1);
        memcpy(exact, copy, cut);
        hprof_data *d = parse_binary(exact, cut, err, sizeof err);
        if (d)
            read_ok++;
        else
            CHECK(strncmp(err, "b.hprof: ", 9) == 0);
        hprof_data_free(d);
        free(exact);
    }
    CHECK(read_ok < len / 4);
    srand(11);
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, bytes, len);
        for (int k = 0; k < 1 + round % 3; k++)
            copy[rand() % len] = (unsigned char)rand();
        char err[256] = "";
        hprof_data *d = parse_binary(copy, len, err, sizeof err);
        CHECK(d != NULL || strncmp(err, "b.hprof: ", 9) == 0);
        hprof_data_free(d);
    }
    free(copy);
    free(bytes);
}

TEST(binary_reader_errors_say_what_is_wrong)
{
    char err[256];
    const unsigned char junk[] = "JAVA PROFILE 1.0.2\0\0\0\0\x08\0\0\0\0\0\0\0\0\x77\0\0\0\0\0\0\0\0";
    CHECK(parse_binary(junk, sizeof junk - 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "b.hprof: offset 31 (0x1f): unknown record tag 0x77") != NULL);
    const unsigned char longer[] = "JAVA PROFILE 1.0.2\0\0\0\0\x08\0\0\0\0\0\0\0\0\x0d\0\0\0\0\0\0\0\x40";
    CHECK(parse_binary(longer, sizeof longer - 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "says 64 bytes, only 0 remain") != NULL);
}

/* ------------------------------------------------------------ analysis */

static profile *stacks_profile(const char *const *stacks, const int64_t *values, uint32_t n)
{
    profile_value_type type = { "samples", "count" };
    profile *p = profile_new("t", &type, 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ids[8], depth = 0;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", stacks[i]);
        for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
            ids[depth] = profile_frame_id(p, "C", tok, "", "", (int32_t)depth + 1);
            depth++;
        }
        profile_add(p, ids, depth, NULL, &values[i]);
    }
    return p;
}

TEST(method_stats_count_recursion_once)
{
    const char *stacks[] = { "leaf;rec;rec;main", "rec;main", "main" };
    int64_t values[] = { 5, 3, 2 };
    profile *p = stacks_profile(stacks, values, 3);
    string_store *names = string_store_new();
    method_stat *m;
    uint32_t n;
    CHECK(method_stats(p, 0, names, &m, &n) == 0 && n == 3);
    method_stats_sort_by_total(m, n);
    CHECK_STR(m[0].name, "C.main");
    CHECK(m[0].total == 10 && m[0].self == 2);
    CHECK_STR(m[1].name, "C.rec");
    CHECK(m[1].total == 8 && m[1].self == 3);
    CHECK(m[2].total == 5 && m[2].self == 5);
    free(m);
    string_store_free(names);
    profile_free(p);
}

TEST(diff_matches_hidden_classes_of_two_runs)
{
    /* The same lambda and LambdaForm in two runs, at other addresses: one
     * row each; a name that only looks alike stays as it is. */
    profile_value_type type = { "samples", "count" };
    profile *pb = profile_new("t", &type, 1), *pa = profile_new("t", &type, 1);
    int64_t one = 1;
    uint32_t ids[3];
    ids[0] = profile_frame_id(pb, "Foo$$Lambda.0x0000000095042210", "run", "", "", 0);
    ids[1] = profile_frame_id(pb, "java.lang.invoke.LambdaForm$MH.0x00007f00c0001000", "invoke", "", "", 0);
    ids[2] = profile_frame_id(pb, "Foo", "main", "", "", 1);
    profile_add(pb, ids, 3, NULL, &one);
    ids[0] = profile_frame_id(pa, "Foo$$Lambda.0x00000000aa0c1800", "run", "", "", 0);
    ids[1] = profile_frame_id(pa, "java.lang.invoke.LambdaForm$MH.0x00007f00c0002400", "invoke", "", "", 0);
    ids[2] = profile_frame_id(pa, "Foo", "main", "", "", 1);
    profile_add(pa, ids, 3, NULL, &one);
    string_store *names = string_store_new();
    diff_row *rows;
    uint32_t n;
    CHECK(diff_stacks(pb, pa, 0, names, &rows, &n) == 0 && n == 1);
    CHECK_STR(rows[0].name, "Foo.main;java.lang.invoke.LambdaForm$MH.invoke;Foo$$Lambda.run");
    CHECK(rows[0].before == 1 && rows[0].after == 1);
    free(rows);
    CHECK(diff_methods(pb, pa, 0, names, &rows, &n) == 0 && n == 3);
    free(rows);
    char buf[64];
    profile_frame f = { .class_name = "a.B$0x12", .method = "c0x" };
    CHECK(analysis_frame_name(&f, buf, sizeof buf) == 12);
    CHECK_STR(buf, "a.B$0x12.c0x");
    f.class_name = "p.Q.0xZZ";      /* no hex digit after 0x: not an address */
    f.method = "m";
    CHECK(analysis_frame_name(&f, buf, sizeof buf) == 10);
    CHECK_STR(buf, "p.Q.0xZZ.m");
    f.class_name = "p.Q$$Lambda.0x1f";
    CHECK(analysis_frame_name(&f, buf, 8) == 7);   /* cut first, then read */
    CHECK_STR(buf, "p.Q$$La");
    string_store_free(names);
    profile_free(pb);
    profile_free(pa);
}

TEST(diff_matches_stacks_by_frames_and_orders_by_share_change)
{
    const char *before[] = { "a;main", "b;main" };
    int64_t vb[] = { 80, 20 };
    const char *after[] = { "b;main", "a;main", "c;main" };
    int64_t va[] = { 60, 20, 20 };
    profile *pb = stacks_profile(before, vb, 2), *pa = stacks_profile(after, va, 3);
    string_store *names = string_store_new();
    diff_row *rows;
    uint32_t n;
    CHECK(diff_stacks(pb, pa, 0, names, &rows, &n) == 0 && n == 3);
    diff_sort_by_share_change(rows, n, 100, 100, 0);
    CHECK_STR(rows[0].name, "C.main;C.a");
    CHECK(rows[0].before == 80 && rows[0].after == 20);
    CHECK_STR(rows[1].name, "C.main;C.b");
    CHECK(diff_share_change(&rows[1], 100, 100, 0) > 0.39);
    free(rows);
    CHECK(diff_methods(pb, pa, 0, names, &rows, &n) == 0 && n == 4);
    free(rows);
    string_store_free(names);
    profile_free(pb);
    profile_free(pa);
}

/* A text heap dump's class records: a class, a lambda and the loader's
 * class, the loader's OBJ before its class's CLS. */
static const char TEXT_CLASSES[] =
    "JAVA PROFILE 1.0.1, created Mon Nov 23 17:35:14 2026\n"
    "--------\n"
    "TRACE 300001:\n"
    "\tLazy.first(Lazy.java:7)\n"
    "\tLazy.main(Lazy.java:20)\n"
    "HEAP DUMP BEGIN (1 objects, 24 bytes) Mon Nov 23 17:35:18 2026\n"
    "CLS 186a1 (name=Lazy$A, trace=300001)\n"
    "\tsuper\t\t186a0\n"
    "\tloader\t\t7000\n"
    "CLS 186a2 (name=Lazy$$Lambda$1.0x00007f0012345678, trace=300001)\n"
    "\tsuper\t\t186a0\n"
    "\tloader\t\t7000\n"
    "OBJ 7000 (sz=24, trace=300000, class=app.Loader@186a3)\n"
    "CLS 186a3 (name=app.Loader, trace=300000)\n"
    "CLS 186a0 (name=java.lang.Object, trace=300000)\n"
    "HEAP DUMP END\n";

/* The tables as text, in one string (malloc'ed). */
static char *origin_tables_text(const hprof_data *d)
{
    table *t[3];
    int n = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(class_origin_tables(d, 10, t, 3, &n) == 0);
    for (int i = 0; i < n; i++) {
        table_print_text(t[i], f);
        table_free(t[i]);
    }
    fclose(f);
    return text;
}

/* 1 if a line of text has `start` in it and ends with `end`. */
static int has_row(const char *text, const char *start, const char *end)
{
    for (const char *line = text; line && *line; ) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line), n = strlen(end);
        const char *at = strstr(line, start);
        if (at && at < line + len && len >= n && strncmp(line + len - n, end, n) == 0)
            return 1;
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

TEST(class_origins_by_loader_site_and_maker)
{
    char err[256] = "";
    hprof_data *d = parse_text(TEXT_CLASSES, sizeof TEXT_CLASSES - 1, err, sizeof err);
    CHECK(d != NULL);
    if (d == NULL) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(d->nclasses == 4 && d->nloaders == 1);
    if (d->nclasses == 4 && d->nloaders == 1) {
        CHECK_STR(d->classes[0].name, "Lazy$A");
        CHECK(d->classes[0].trace == 300001 && d->classes[0].loader == 0x7000);
        CHECK(d->classes[3].loader == 0 && d->classes[3].loader_known);
        CHECK_STR(d->loaders[0].class_name, "app.Loader");
    }
    char *text = origin_tables_text(d);
    /* Two classes of the custom loader at one site, the lambda named by Lazy. */
    CHECK(has_row(text, "2  custom: app.Loader  Lazy.first(Lazy.java:7) ", "  1 lambda of Lazy, Lazy$A"));
    CHECK(strstr(text, "2  bootstrap           (no trace") != NULL);
    CHECK(strstr(text, "custom: app.Loader        2                     2       1\n") != NULL);
    CHECK(strstr(text, "1  Lazy     lambdas  custom: app.Loader\n") != NULL);
    free(text);
    hprof_data_free(d);
}

TEST(class_origins_name_hidden_classes_by_their_maker)
{
    char buf[256];
    int lambda = -1;
    CHECK(class_origin_maker("Foo$$Lambda$14.0x00007f0012345678", buf, sizeof buf, &lambda) == 1);
    CHECK_STR(buf, "Foo");
    CHECK(lambda == 1);
    CHECK(class_origin_maker("p.Foo$$Lambda.0x0000000800c01000", buf, sizeof buf, &lambda) == 1);
    CHECK_STR(buf, "p.Foo");
    CHECK(class_origin_maker("java.lang.invoke.LambdaForm$MH.0x0000000800c01000", buf, sizeof buf, &lambda) == 1);
    CHECK_STR(buf, "java.lang.invoke.LambdaForm$MH");
    CHECK(lambda == 0);
    CHECK(class_origin_maker("p.Foo$$Lambda+0x0000000800c01000", buf, sizeof buf, &lambda) == 1); /* HotSpot's dumps */
    CHECK_STR(buf, "p.Foo");
    CHECK(lambda == 1);
    CHECK(class_origin_maker("p.Foo$Bar", buf, sizeof buf, &lambda) == 0);
    CHECK(class_origin_maker("p.Foo$$Lambda.0x1", buf, 4, &lambda) == 0);    /* no room: not named */
}
