/*
 * Fuzz target for the agent's option parser (src/options): any option string
 * is accepted with every field in its documented range, or refused with a
 * message; never a read or write out of bounds (the sanitizers), and the same
 * answer twice.
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options/options.h"

const char fuzz_target_name[] = "fuzz_options";
const char *const fuzz_target_dictionary[] = {
    ",", "=", "help", "heap=", "cpu=", "monitor=", "format=", "file=", "net=", "depth=",
    "interval=", "cutoff=", "lineno=", "thread=", "doe=", "msa=", "force=", "verbose=",
    "collapsed=", "pprof=", "flamegraph=", "sampler=", "heap_sample=", "deadlock=",
    "samples", "times", "old", "dump", "sites", "all", "y", "n", "a", "b", "auto", "perf",
    "timer", "1m", "512k", "0.5", "1e-9", "nan", "inf", "-1", "4294967296", "256", "257",
    "localhost:9999", "[::1]:1", ":0", "loop=", "loop_keep=", "loop_mode=", "cumulative", "delta", "%t",
    "%n", "%p", "%%", "ms", "h", NULL
};

static unsigned long accepted, refused;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "options: %lu accepted, %lu refused", accepted, refused);
}

static int terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

static void check_accepted(const hprof_options *o)
{
    FUZZ_CHECK(o->depth >= 0 && o->depth <= OPTIONS_MAX_DEPTH);
    FUZZ_CHECK(o->interval_ms >= 1 && o->interval_ms <= 3600000);
    FUZZ_CHECK(o->loop_ms == 0 || (o->loop_ms >= 1000 && o->loop_ms <= 86400000));
    FUZZ_CHECK(o->loop_ms || (!o->loop_keep && !o->loop_mode_given));
    FUZZ_CHECK(o->cutoff >= 0.0 && o->cutoff <= 1.0);
    FUZZ_CHECK(o->format == 'a' || o->format == 'b');
    FUZZ_CHECK(o->sampler == 'a' || o->sampler == 'p' || o->sampler == 't');
    FUZZ_CHECK(o->deadlock_ms >= 0 && (o->deadlock_ms == 0 || o->monitor));
    FUZZ_CHECK(o->heap_sample <= (1ull << 31));
    FUZZ_CHECK(!(o->format == 'b' && (o->monitor || o->cpu == CPU_TIMES || o->cpu == CPU_OLD)));
    FUZZ_CHECK(terminated(o->file, sizeof o->file) && o->file[0] != '\0');
    FUZZ_CHECK(terminated(o->net, sizeof o->net));
    for (uint32_t i = 0; i < format_count(); i++)
        FUZZ_CHECK(terminated(o->outputs[i], sizeof o->outputs[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The JVM hands the agent a C string: everything up to the first 0. */
    char *text = malloc(size + 1);
    if (text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';

    static hprof_options first, again;
    char err[512];
    int rc = options_parse(text, &first, err, sizeof err);
    if (rc == 0) {
        accepted++;
        check_accepted(&first);
        FUZZ_CHECK(options_check_implemented(&first, err, sizeof err) == 0);
    } else {
        refused++;
        FUZZ_CHECK(rc == -1 && terminated(err, sizeof err) && err[0] != '\0');
    }
    /* Same input, same result (defaults() clears the whole struct first, so
     * the bytes compare). A tiny message buffer is cut, never overrun. */
    char *tiny = malloc(7);
    if (tiny == NULL)
        abort();
    FUZZ_CHECK(options_parse(text, &again, tiny, 7) == rc);
    FUZZ_CHECK(rc != 0 || memcmp(&first, &again, sizeof first) == 0);
    FUZZ_CHECK(rc == 0 || terminated(tiny, 7));
    FUZZ_CHECK(options_parse(text, &again, NULL, 0) == rc);
    free(tiny);
    free(text);
    return 0;
}
