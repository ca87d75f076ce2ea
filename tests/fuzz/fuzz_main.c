/*
 * Standalone driver for the fuzz targets (fuzz_bci.c, fuzz_options.c, ...;
 * fuzz_target.h), no libFuzzer needed:
 *
 *   fuzz_TARGET [-n ITERATIONS] [-s SEED] [-j JOBS] [-t SECONDS] [-o DIR] SEED_PATH...
 *
 * Loads every regular file under the SEED_PATHs (files or directories), runs
 * each unmutated, then ITERATIONS mutated inputs: 1 to 4 stacked mutations
 * (1 half of the time)
 * (bit flips, bytes set to 0/0xff/0x7f/0x80, truncation, big-endian 16- and
 * 32-bit fields set to boundary values, chunk duplication and deletion, and
 * for targets with a dictionary a token inserted or written over) of a
 * seed chosen at random. Everything follows from SEED (printed; default from
 * the clock), so `-s SEED -n N` repeats a run exactly. With -j JOBS the
 * iterations are split over JOBS forked workers (worker w uses SEED + w).
 * -t stops early (still a pass) after SECONDS.
 *
 * When a mutated input crashes (sanitizer report, abort, or a 10 s hang) it
 * is written to DIR/crash-<seed>-<iteration> (DIR defaults to "."); run
 * `fuzz_TARGET FILE` on it to reproduce (seed files are run first, as they are,
 * and never copied). Exit status 0 if all inputs passed.
 */
#include "fuzz_target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEED_LEN  (1u << 20)    /* larger seed files are skipped */
#define GROWTH        4096          /* how far mutations may grow an input */
#define HANG_SECONDS  10

typedef struct seed_file {
    char    *path;
    uint8_t *data;
    size_t   len;
} seed_file;

static seed_file *seeds;
static size_t nseeds, seeds_cap;

/* The input being run, for the crash handlers: a seed file as it is
 * (cur_seed_path names it), or a mutated input to save as crash_path. */
static const uint8_t *cur_data;
static size_t         cur_len;
static const char    *cur_seed_path;
static char           crash_path[4096];

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", fuzz_target_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ------------------------------------------------------------ crash saving */

/* Async-signal-safe: open/write/close only. */
static void say_name(void)
{
    (void)!write(2, fuzz_target_name, strlen(fuzz_target_name));
}

static void save_input(void)
{
    if (cur_seed_path) {
        static const char note[] = ": crashing input is the seed file ";
        say_name();
        (void)!write(2, note, sizeof note - 1);
        (void)!write(2, cur_seed_path, strlen(cur_seed_path));
        (void)!write(2, "\n", 1);
        cur_seed_path = NULL;
        return;
    }
    if (!cur_data || !crash_path[0])
        return;
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    size_t done = 0;
    while (done < cur_len) {
        ssize_t n = write(fd, cur_data + done, cur_len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    (void)close(fd);
    static const char note[] = ": crashing input saved to ";
    say_name();
    (void)!write(2, note, sizeof note - 1);
    (void)!write(2, crash_path, strlen(crash_path));
    (void)!write(2, "\n", 1);
    cur_data = NULL;
}

static void on_signal(int sig)
{
    if (sig == SIGALRM) {
        static const char hang[] = ": input ran longer than 10 s (a hang?)\n";
        say_name();
        (void)!write(2, hang, sizeof hang - 1);
    }
    save_input();
    signal(SIGABRT, SIG_DFL);
    abort();
}

/* Called by ASan/UBSan before they exit on a report. Weak: absent when the
 * driver is built without sanitizers. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* UBSan's reports end in _exit, past the death callback: have it abort
 * instead, so on_signal saves the input (and print where it happened). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "print_stacktrace=1:abort_on_error=1";
}

/* ------------------------------------------------------------ seeds */

static void add_seed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: cannot read: %s", path, strerror(errno));
    uint8_t *buf = malloc(MAX_SEED_LEN + 1);
    if (!buf)
        die("out of memory");
    size_t n = fread(buf, 1, MAX_SEED_LEN + 1, f);
    if (ferror(f))
        die("%s: read failed", path);
    if (fclose(f) != 0)
        die("%s: read failed", path);
    if (n > MAX_SEED_LEN) {
        fprintf(stderr, "%s: %s: larger than %u bytes; skipped\n", fuzz_target_name, path, MAX_SEED_LEN);
        free(buf);
        return;
    }
    if (nseeds == seeds_cap) {
        seeds_cap = seeds_cap ? seeds_cap * 2 : 64;
        seeds = realloc(seeds, seeds_cap * sizeof *seeds);
        if (!seeds)
            die("out of memory");
    }
    seeds[nseeds].path = strdup(path);
    if (!seeds[nseeds].path)
        die("out of memory");
    seeds[nseeds].data = buf;
    seeds[nseeds].len = n;
    nseeds++;
}

/* Regular files under `path`, in sorted order (the run must not depend on
 * readdir order). */
static void add_seeds(const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die("%s: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        add_seed(path);
        return;
    }
    if (!S_ISDIR(st.st_mode) || depth > 32)
        return;
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort);
    if (n < 0)
        die("%s: cannot list: %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {     /* also skips stamps like .ok */
            size_t len = strlen(path) + strlen(list[i]->d_name) + 2;
            char *child = malloc(len);
            if (!child)
                die("out of memory");
            snprintf(child, len, "%s/%s", path, list[i]->d_name);
            add_seeds(child, depth + 1);
            free(child);
        }
        free(list[i]);
    }
    free(list);
}

/* ------------------------------------------------------------ mutations */

/* splitmix64: tiny, good enough, and the same everywhere. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* A dictionary token inserted at, or written over, a random place. */
static void splice_token(uint8_t *buf, size_t *len, size_t cap)
{
    size_t ntokens = 0;
    while (fuzz_target_dictionary[ntokens])
        ntokens++;
    const char *t = fuzz_target_dictionary[below(ntokens)];
    size_t k = strlen(t), n = *len, at = below(n + 1);
    if (rnd() & 1) {                                    /* insert */
        if (n + k > cap)
            return;
        memmove(buf + at + k, buf + at, n - at);
        *len = n + k;
    } else if (at + k > n) {                            /* overwrite, growing at the end */
        if (at + k > cap)
            return;
        *len = at + k;
    }
    memcpy(buf + at, t, k);
}

/* One mutation of buf[0..*len) in place; the buffer holds `cap` bytes. */
static void mutate(uint8_t *buf, size_t *len, size_t cap)
{
    /* (Without a dictionary no random number is drawn here, so runs of the
     * targets without one repeat as before.) */
    if (fuzz_target_dictionary[0] && below(4) == 0) {
        splice_token(buf, len, cap);
        return;
    }
    size_t n = *len;
    if (n == 0) {
        buf[0] = (uint8_t)rnd();
        *len = 1;
        return;
    }
    switch (below(16)) {
    case 0: case 1: case 2:                             /* bit flip */
        buf[below(n)] ^= (uint8_t)(1u << below(8));
        break;
    case 3: case 4: {                                   /* interesting byte */
        static const uint8_t v[] = { 0x00, 0xff, 0x7f, 0x80 };
        buf[below(n)] = v[below(sizeof v)];
        break;
    }
    case 5:                                             /* random byte */
        buf[below(n)] = (uint8_t)rnd();
        break;
    case 6:                                             /* truncation */
        *len = below(n);
        break;
    case 7: case 8: case 9: case 10: {                  /* u2 field (class files are big-endian) */
        if (n < 2)
            break;
        size_t at = below(n - 1);
        unsigned old = (unsigned)buf[at] << 8 | buf[at + 1];
        static const unsigned v[] = { 0x0000, 0x0001, 0x7fff, 0x8000, 0xfffe, 0xffff };
        unsigned x;
        switch (below(4)) {
        case 0:  x = v[below(sizeof v / sizeof v[0])]; break;
        case 1:  x = old + 1; break;
        case 2:  x = old - 1; break;
        default: x = (unsigned)below(64); break;        /* small index or count */
        }
        buf[at] = (uint8_t)(x >> 8);
        buf[at + 1] = (uint8_t)x;
        break;
    }
    case 11: {                                          /* u4 field: lengths */
        if (n < 4)
            break;
        size_t at = below(n - 3);
        uint32_t old = (uint32_t)buf[at] << 24 | (uint32_t)buf[at + 1] << 16 |
                       (uint32_t)buf[at + 2] << 8 | buf[at + 3];
        static const uint32_t v[] = { 0, 1, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0xffffu,
                                      0x10000u };
        uint32_t x;
        switch (below(3)) {
        case 0:  x = v[below(sizeof v / sizeof v[0])]; break;
        case 1:  x = old + 1 + (uint32_t)below(8); break;
        default: x = old - 1 - (uint32_t)below(8); break;
        }
        buf[at] = (uint8_t)(x >> 24);
        buf[at + 1] = (uint8_t)(x >> 16);
        buf[at + 2] = (uint8_t)(x >> 8);
        buf[at + 3] = (uint8_t)x;
        break;
    }
    case 12: case 13: {                                 /* chunk duplication */
        size_t k = 1 + below(n < 256 ? n : 256);
        if (n + k > cap)
            break;
        size_t from = below(n - k + 1), to = below(n + 1);
        uint8_t chunk[256];
        memcpy(chunk, buf + from, k);
        memmove(buf + to + k, buf + to, n - to);
        memcpy(buf + to, chunk, k);
        *len = n + k;
        break;
    }
    case 14: {                                          /* chunk deletion */
        size_t k = 1 + below(n < 64 ? n : 64);
        size_t at = below(n - k + 1);
        memmove(buf + at, buf + at + k, n - at - k);
        *len = n - k;
        break;
    }
    default: {                                          /* copy a chunk over another */
        size_t k = 1 + below(n < 32 ? n : 32);
        size_t from = below(n - k + 1), to = below(n - k + 1);
        memmove(buf + to, buf + from, k);
        break;
    }
    }
}

/* ------------------------------------------------------------ running */

/* Runs one input from an exactly sized heap copy, so that ASan sees any
 * read past its end (a stack or oversized buffer would hide it). */
static void run_one(const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        die("out of memory");
    if (len)
        memcpy(copy, data, len);
    cur_data = copy;
    cur_len = len;
    alarm(HANG_SECONDS);
    LLVMFuzzerTestOneInput(copy, len);
    alarm(0);
    cur_data = NULL;
    free(copy);
}

static double now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        die("clock_gettime: %s", strerror(errno));
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void worker(int w, uint64_t seed, unsigned long iterations, double deadline,
                   const char *crash_dir)
{
    rng_state = seed;
    size_t max_len = 0;
    for (size_t i = 0; i < nseeds; i++)
        if (seeds[i].len > max_len)
            max_len = seeds[i].len;
    size_t cap = max_len + GROWTH;
    uint8_t *buf = malloc(cap);
    if (!buf)
        die("out of memory");

    if (w == 0) {
        for (size_t i = 0; i < nseeds; i++) {
            cur_seed_path = seeds[i].path;
            run_one(seeds[i].data, seeds[i].len);
        }
        cur_seed_path = NULL;
    }
    unsigned long done = 0;
    for (; done < iterations; done++) {
        if ((done & 255) == 0 && deadline > 0 && now() > deadline)
            break;
        const seed_file *s = &seeds[below(nseeds)];
        size_t len = s->len;
        memcpy(buf, s->data, len);
        /* 1 mutation half of the time, 2 a quarter, ... up to 4: the parser
         * rejects most multiply-damaged inputs before the interesting parts. */
        size_t m = 1;
        while (m < 4 && (rnd() & 1))
            m++;
        while (m-- > 0)
            mutate(buf, &len, cap);
        snprintf(crash_path, sizeof crash_path, "%s/crash-%" PRIu64 "-%lu", crash_dir, seed,
                 done);
        run_one(buf, len);
    }
    free(buf);
    char stats[256];
    fuzz_target_stats(stats, sizeof stats);
    printf("%s: worker %d (seed %" PRIu64 "): %lu mutated inputs%s; %s\n", fuzz_target_name, w,
           seed, done, done < iterations ? " (time limit)" : "", stats);
    fflush(stdout);
}

static unsigned long parse_num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        die("%s: not a number: %s", what, s);
    return (unsigned long)v;
}

int main(int argc, char **argv)
{
    unsigned long iterations = 0, jobs = 1, seconds = 0;
    uint64_t seed = 0;
    int have_seed = 0;
    const char *crash_dir = ".";
    int c;
    while ((c = getopt(argc, argv, "n:s:j:t:o:h")) != -1) {
        switch (c) {
        case 'n': iterations = parse_num(optarg, "-n"); break;
        case 's': seed = parse_num(optarg, "-s"); have_seed = 1; break;
        case 'j': jobs = parse_num(optarg, "-j"); break;
        case 't': seconds = parse_num(optarg, "-t"); break;
        case 'o': crash_dir = optarg; break;
        default:
            fprintf(stderr, "usage: fuzz_TARGET [-n ITERATIONS] [-s SEED] [-j JOBS] [-t SECONDS] "
                            "[-o CRASH_DIR] SEED_FILE_OR_DIR...\n");
            return 2;
        }
    }
    if (optind == argc)
        die("no seed files or directories given (see the usage in tests/fuzz/fuzz_main.c)");
    if (jobs < 1 || jobs > 64)
        die("-j must be 1..64");
    for (int i = optind; i < argc; i++)
        add_seeds(argv[i], 0);
    if (nseeds == 0)
        die("no seed files found");
    if (!have_seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("%s: %zu seeds, %lu iterations, %lu job%s, seed %" PRIu64
           " (repeat with -s %" PRIu64 ")\n",
           fuzz_target_name, nseeds, iterations, jobs, jobs == 1 ? "" : "s", seed, seed);
    fflush(stdout);

    /* Aborts (our contract checks) and hangs are ours to catch. Under the
     * sanitizers, crashes are theirs: they report, then call save_input. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    if (sigaction(SIGABRT, &sa, NULL) != 0 || sigaction(SIGALRM, &sa, NULL) != 0)
        die("sigaction: %s", strerror(errno));
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(save_input);
    } else if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0 ||
               sigaction(SIGFPE, &sa, NULL) != 0) {
        die("sigaction: %s", strerror(errno));
    }

    double start = now(), deadline = seconds ? start + (double)seconds : 0;
    if (jobs == 1) {
        worker(0, seed, iterations, deadline, crash_dir);
    } else {
        pid_t pids[64];
        for (unsigned long w = 0; w < jobs; w++) {
            unsigned long share = iterations / jobs + (w < iterations % jobs);
            pids[w] = fork();
            if (pids[w] < 0)
                die("fork: %s", strerror(errno));
            if (pids[w] == 0) {
                worker((int)w, seed + w, share, deadline, crash_dir);
                exit(0);
            }
        }
        int failed = 0;
        for (unsigned long w = 0; w < jobs; w++) {
            int status;
            while (waitpid(pids[w], &status, 0) < 0)
                if (errno != EINTR)
                    die("waitpid: %s", strerror(errno));
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "%s: worker %lu (seed %" PRIu64 ") failed\n", fuzz_target_name, w,
                        seed + w);
                failed = 1;
            }
        }
        if (failed)
            return 1;
    }
    printf("%s: passed in %.1f s\n", fuzz_target_name, now() - start);
    return 0;
}
