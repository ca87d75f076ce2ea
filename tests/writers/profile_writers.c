/*
 * profile_writers: writes profiles through the writers of src/profile so that
 * the tools people use can read them (tests/test_writers.py) and so that the
 * writers can be timed (bench/writers).
 *
 *   profile_writers known DIR       a small known CPU profile (and a baseline)
 *                                   as DIR/known.pb.gz, known.collapsed, known.html
 *   profile_writers bench DIR N     N distinct stacks (depth 10-40 over a few
 *                                   thousand methods) as DIR/bench.* (pprof,
 *                                   collapsed, flame graph, JFR), with times
 *   profile_writers collapsed FILE DIR   a real profile (the agent's collapsed=
 *                                   output) as DIR/real.html and DIR/real.pb.gz
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/collapsed.h"
#include "profile/flamegraph_writer.h"
#include "profile/jfr_writer.h"
#include "profile/pprof_writer.h"

static const profile_value_type CPU_TYPES[2] = { { "samples", "count" }, { "cpu", "nanoseconds" } };
#define INTERVAL_NS 10000000

static profile *cpu_profile(const char *title)
{
    profile *p = profile_new(title, CPU_TYPES, 2);
    if (p == NULL) {
        fprintf(stderr, "profile_writers: out of memory\n");
        exit(1);
    }
    profile_set_period(p, (profile_value_type){ "cpu", "nanoseconds" }, INTERVAL_NS);
    return p;
}

static void add(profile *p, const uint32_t *stack, uint32_t depth, const char *thread, int64_t samples)
{
    int64_t values[2] = { samples, samples * INTERVAL_NS };
    if (profile_add(p, stack, depth, thread, values) != 0) {
        fprintf(stderr, "profile_writers: profile_add failed\n");
        exit(1);
    }
}

/* The known profile: 100 samples; tests/test_writers.py checks the tools'
 * view of it against these numbers. `hashmap_get` samples go to
 * HashMap.get's own line 556 (the baseline has fewer). */
static profile *known_profile(const char *title, int64_t hashmap_get)
{
    profile *p = cpu_profile(title);
    uint32_t main_ = profile_frame_id(p, "Demo", "main", "([Ljava/lang/String;)V", "Demo.java", 20);
    uint32_t run = profile_frame_id(p, "Demo", "run", "()V", "Demo.java", 30);
    uint32_t lambda = profile_frame_id(p, "Demo", "lambda$run$0", "(I)V", "Demo.java", 35);
    uint32_t get = profile_frame_id(p, "java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;",
                                    "HashMap.java", 556);
    uint32_t get557 = profile_frame_id(p, "java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;",
                                       "HashMap.java", 557);
    uint32_t hash = profile_frame_id(p, "java.lang.String", "hashCode", "()I", "String.java", 2300);
    uint32_t init = profile_frame_id(p, "java.util.HashMap", "<init>", "()V", "HashMap.java", 400);
    uint32_t copy = profile_frame_id(p, "java.lang.System", "arraycopy",
                                     "(Ljava/lang/Object;ILjava/lang/Object;II)V", "", PROFILE_LINE_NATIVE);
    uint32_t gc = profile_frame_id(p, "[unwalkable]", "GC_active", "", "", PROFILE_LINE_UNKNOWN);
    add(p, (uint32_t[]){ get, lambda, run, main_ }, 4, "main", hashmap_get);
    add(p, (uint32_t[]){ get557, lambda, run, main_ }, 4, "worker-1", 10);
    add(p, (uint32_t[]){ hash, get, lambda, run, main_ }, 5, "main", 25);
    add(p, (uint32_t[]){ init, run, main_ }, 3, "worker-1", 15);
    add(p, (uint32_t[]){ copy, run, main_ }, 3, "main", 7);
    add(p, (uint32_t[]){ gc }, 1, "", 3);
    profile_set_time(p, 1700000000000000000, 1000000000);
    return p;
}

static FILE *open_out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

static void close_out(FILE *f, int rc, const char *what)
{
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "profile_writers: writing %s failed\n", what);
        exit(1);
    }
}

static void write_pprof(const profile *p, const char *dir, const char *name)
{
    char err[256] = "";
    FILE *f = open_out(dir, name);
    int rc = pprof_write(p, f, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "profile_writers: %s\n", err);
    close_out(f, rc, name);
}

static int known(const char *dir)
{
    profile *p = known_profile("CPU samples", 40), *before = known_profile("CPU samples (before)", 10);
    write_pprof(p, dir, "known.pb.gz");
    FILE *f = open_out(dir, "known.collapsed");
    close_out(f, collapsed_write_profile(p, 0, f), "known.collapsed");
    flamegraph_section sections[4] = {
        { "CPU samples", p, 0, NULL, NULL, NULL },
        { "CPU time", p, 1, NULL, NULL, NULL },
        { "CPU samples against the baseline", p, 0, before, NULL, NULL },
        { "Threads", NULL, 0, NULL, "<table><tr><th>thread</th><th class=\"num\">samples</th></tr>"
                                    "<tr><td>main</td><td class=\"num\">72</td></tr>"
                                    "<tr><td>worker-1</td><td class=\"num\">25</td></tr></table>", NULL },
    };
    f = open_out(dir, "known.html");
    close_out(f, flamegraph_write_page(f, "hprof: known profile", sections, 4), "known.html");
    profile_free(p);
    profile_free(before);
    return 0;
}

/* ------------------------------------------------------------ a real profile */

/* One "a.B.m;c.D.n 12" line into p: frames root first, class and method
 * split at the last '.'. 0, or -1 if it is not such a line. */
static int add_collapsed_line(profile *p, char *line)
{
    char *space = strrchr(line, ' ');
    if (space == NULL)
        return -1;
    *space = 0;
    int64_t samples = strtoll(space + 1, NULL, 10);
    uint32_t stack[PROFILE_MAX_DEPTH], depth = 0;
    char *frames[PROFILE_MAX_DEPTH];
    for (char *save = NULL, *f = strtok_r(line, ";", &save); f && depth < PROFILE_MAX_DEPTH;
         f = strtok_r(NULL, ";", &save))
        frames[depth++] = f;
    for (uint32_t i = 0; i < depth; i++) {          /* leaf first */
        char *name = frames[depth - 1 - i], *dot = strrchr(name, '.');
        if (dot)
            *dot = 0;
        stack[i] = profile_frame_id(p, dot ? name : "", dot ? dot + 1 : name, "", "", PROFILE_LINE_UNKNOWN);
    }
    add(p, stack, depth, "", samples);
    return 0;
}

static int real(const char *collapsed, const char *dir)
{
    FILE *in = fopen(collapsed, "r");
    if (in == NULL) {
        perror(collapsed);
        return 1;
    }
    profile *p = cpu_profile("CPU samples");
    char line[65536];
    while (fgets(line, sizeof line, in))
        if (line[0] != '\n' && add_collapsed_line(p, strtok(line, "\n")) != 0)
            fprintf(stderr, "profile_writers: not a collapsed-stack line: %.80s\n", line);
    fclose(in);
    write_pprof(p, dir, "real.pb.gz");
    flamegraph_section section = { "CPU samples", p, 0, NULL, NULL, NULL };
    FILE *f = open_out(dir, "real.html");
    close_out(f, flamegraph_write_page(f, "hprof: demo/Demo.java, cpu=samples", &section, 1), "real.html");
    profile_free(p);
    return 0;
}

/* ------------------------------------------------------------ bench */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t random_below(uint32_t n)
{
    rng_state ^= rng_state << 13;     /* xorshift64: fixed seed, same profile every run */
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

#define NMETHODS 4000
#define FANOUT   6

/* A program's call graph: each method calls a few others, and calls
 * the first of them far more often (hot paths), as real programs do. */
static uint32_t callee_of[NMETHODS][FANOUT];

static uint32_t pick_callee(uint32_t method)
{
    uint32_t r = random_below(100);
    uint32_t i = r < 55 ? 0 : r < 75 ? 1 : r < 87 ? 2 : r < 94 ? 3 : r < 98 ? 4 : 5;
    return callee_of[method][i];
}

static profile *bench_profile(uint32_t nstacks)
{
    profile *p = cpu_profile("CPU samples");
    uint32_t ids[NMETHODS];
    char cls[64], method[64], file[64];
    for (uint32_t m = 0; m < NMETHODS; m++) {
        snprintf(cls, sizeof cls, "com.example.service%u.Component%u", m % 40, m / 40);
        snprintf(method, sizeof method, m % 17 ? "handle%u" : "lambda$handle$%u", m);
        snprintf(file, sizeof file, "Component%u.java", m / 40);
        ids[m] = profile_frame_id(p, cls, method, "()V", file, (int32_t)(10 + m % 300));
        for (uint32_t c = 0; c < FANOUT; c++)
            callee_of[m][c] = random_below(NMETHODS);
    }
    const char *threads[4] = { "main", "worker-1", "worker-2", "worker-3" };
    uint32_t stack[PROFILE_MAX_DEPTH];
    while (profile_sample_count(p) < nstacks) {
        uint32_t depth = 10 + random_below(31), m = random_below(8);   /* a few entry points */
        for (uint32_t d = depth; d-- > 0; m = pick_callee(m))
            stack[d] = ids[m];                                        /* leaf first */
        add(p, stack, depth, threads[random_below(4)], 1 + random_below(20));
    }
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long size_of(FILE *f)
{
    return ftell(f);
}

static int bench(const char *dir, uint32_t nstacks)
{
    double t0 = now();
    profile *p = bench_profile(nstacks);
    double t1 = now();
    printf("profile: %u distinct stacks, %u frames, %lld samples, built in %.2f s\n",
           profile_sample_count(p), profile_frame_count(p), (long long)profile_total(p, 0), t1 - t0);
    char err[256] = "";
    FILE *f = open_out(dir, "bench.pb.gz");
    t0 = now();
    int rc = pprof_write(p, f, err, sizeof err);
    t1 = now();
    printf("pprof_write:           %.3f s, %ld bytes\n", t1 - t0, size_of(f));
    close_out(f, rc, "bench.pb.gz");
    f = open_out(dir, "bench.collapsed");
    t0 = now();
    rc = collapsed_write_profile(p, 0, f);
    t1 = now();
    printf("collapsed_write:       %.3f s, %ld bytes\n", t1 - t0, size_of(f));
    close_out(f, rc, "bench.collapsed");
    flamegraph_section section = { "CPU samples", p, 0, NULL, NULL, NULL };
    f = open_out(dir, "bench.html");
    t0 = now();
    rc = flamegraph_write_page(f, "hprof: 100,000 stacks", &section, 1);
    t1 = now();
    printf("flamegraph_write_page: %.3f s, %ld bytes\n", t1 - t0, size_of(f));
    close_out(f, rc, "bench.html");
    f = open_out(dir, "bench.jfr");
    const profile *one = p;
    t0 = now();
    rc = jfr_write(&one, 1, f, err, sizeof err);
    t1 = now();
    printf("jfr_write:             %.3f s, %ld bytes\n", t1 - t0, size_of(f));
    close_out(f, rc, "bench.jfr");
    profile_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "known") == 0)
        return known(argv[2]);
    if (argc == 4 && strcmp(argv[1], "bench") == 0)
        return bench(argv[2], (uint32_t)strtoul(argv[3], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "collapsed") == 0)
        return real(argv[2], argv[3]);
    fprintf(stderr, "usage: profile_writers known DIR | bench DIR NSTACKS | collapsed FILE DIR\n");
    return 2;
}
