/* Unit tests: loop='s series of files (src/output/series.c) and its options. */
#include "unit.h"

#include <stdint.h>

#include "options/options.h"
#include "output/series.h"

/* 2026-11-27 23:45:00 UTC */
#define T0 ((time_t)1795823100)

TEST(series_time_is_utc_compact)
{
    char t[32];
    series_format_time(T0, t, sizeof t);
    CHECK_STR(t, "20261127T234500Z");
    CHECK(strlen(t) == SERIES_TIME_LEN);
}

TEST(series_names_expand_escapes)
{
    char out[256];
    series_period p = { 7, T0 };
    CHECK(series_name_at("/d/cpu-%n-%t-%p.pb.gz", p, 4242, out, sizeof out) == 0);
    CHECK_STR(out, "/d/cpu-7-20261127T234500Z-4242.pb.gz");
    CHECK(series_name_at("a%%b%n", p, 1, out, sizeof out) == 0);
    CHECK_STR(out, "a%b7");
    CHECK(series_name_at("%n%n", (series_period){ UINT64_MAX, T0 }, 1, out, sizeof out) == 0);
    CHECK_STR(out, "1844674407370955161518446744073709551615");
    /* Too small: refused, never cut or overrun. */
    CHECK(series_name_at("cpu-%t.txt", p, 1, out, 12) == -1);
    CHECK(strlen(out) < 12);
    CHECK(series_name_at("x", p, 1, out, 0) == -1);
}

TEST(series_names_without_percent_get_a_suffix)
{
    char out[256];
    series_period p = { 3, T0 };
    CHECK(series_name_at("cpu.pb.gz", p, 1, out, sizeof out) == 0);
    CHECK_STR(out, "cpu.20261127T234500Z.3.pb.gz");
    CHECK(series_name_at("/tmp/java.hprof.txt", p, 1, out, sizeof out) == 0);
    CHECK_STR(out, "/tmp/java.20261127T234500Z.3.hprof.txt");
    CHECK(series_name_at("out.collapsed", p, 1, out, sizeof out) == 0);
    CHECK_STR(out, "out.20261127T234500Z.3.collapsed");
    CHECK(series_name_at("/a.b/profile", p, 1, out, sizeof out) == 0);   /* a directory's dot is not an extension */
    CHECK_STR(out, "/a.b/profile.20261127T234500Z.3");
    CHECK(series_name_at(".hidden", p, 1, out, sizeof out) == 0);
    CHECK_STR(out, ".hidden.20261127T234500Z.3");
}

TEST(series_check_name_refuses_unknown_escapes)
{
    char err[512];
    CHECK(series_check_name("pprof", "p-%n-%t-%p-%%.pb.gz", 4096, err, sizeof err) == 0);
    CHECK(series_check_name("pprof", "p-%q.pb.gz", 4096, err, sizeof err) == -1);
    CHECK(strstr(err, "'pprof'") != NULL && strstr(err, "%q") != NULL);
    CHECK(series_check_name("file", "end%", 4096, err, sizeof err) == -1);
    CHECK(strstr(err, "'file'") != NULL);
    char longname[4096];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    longname[4070] = '\0';
    CHECK(series_check_name("jfr", longname, 4096, err, sizeof err) == -1);
    CHECK(strstr(err, "'jfr'") != NULL);
}

TEST(series_keep_drops_the_oldest_period)
{
    output_series s;
    series_period drop;
    CHECK(series_init(&s, 99, 2, T0) == 0);
    CHECK(s.now.seq == 1 && s.now.start == T0);
    CHECK(series_next(&s, T0 + 60, &drop) == 0);           /* kept: 1 */
    CHECK(series_next(&s, T0 + 120, &drop) == 0);          /* kept: 1, 2 */
    CHECK(series_next(&s, T0 + 180, &drop) == 1);          /* 3 ended: 1 goes */
    CHECK(drop.seq == 1 && drop.start == T0);
    CHECK(series_next(&s, T0 + 240, &drop) == 1 && drop.seq == 2 && drop.start == T0 + 60);
    CHECK(s.now.seq == 5 && s.now.start == T0 + 240);
    char out[64];
    CHECK(series_name(&s, "f-%n-%p", out, sizeof out) == 0);
    CHECK_STR(out, "f-5-99");
    series_free(&s);
    /* keep 0: every file stays. */
    CHECK(series_init(&s, 1, 0, T0) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(series_next(&s, T0 + i, &drop) == 0);
    CHECK(s.now.seq == 101);
    series_free(&s);
}

TEST(series_options_parse_and_refuse)
{
    hprof_options o;
    char err[1024];
    CHECK(options_parse("cpu=samples,loop=2", &o, err, sizeof err) == 0 && o.loop_ms == 2000);
    CHECK(!o.loop_cumulative && o.loop_keep == 0);
    CHECK(options_parse("cpu=samples,loop=1500ms,loop_keep=5,loop_mode=cumulative", &o, err, sizeof err) == 0);
    CHECK(o.loop_ms == 1500 && o.loop_keep == 5 && o.loop_cumulative);
    CHECK(options_parse("cpu=samples,loop=30s", &o, err, sizeof err) == 0 && o.loop_ms == 30000);
    CHECK(options_parse("cpu=samples,loop=5m", &o, err, sizeof err) == 0 && o.loop_ms == 300000);
    CHECK(options_parse("cpu=samples,loop=24h", &o, err, sizeof err) == 0 && o.loop_ms == 86400000);
    CHECK(options_parse("cpu=samples,loop=1m,loop_mode=delta", &o, err, sizeof err) == 0 && !o.loop_cumulative);
    CHECK(options_parse("cpu=samples", &o, err, sizeof err) == 0 && o.loop_ms == 0);
    /* A series over net=: `hprof listen` writes it (listen_series.h). */
    CHECK(options_parse("cpu=samples,loop=2,net=localhost:9", &o, err, sizeof err) == 0 && o.loop_ms == 2000);
    static const char *const bad[][2] = {
        { "cpu=samples,loop=0", "'loop'" }, { "cpu=samples,loop=abc", "'loop'" },
        { "cpu=samples,loop=999ms", "'loop'" }, { "cpu=samples,loop=25h", "'loop'" },
        { "cpu=samples,loop=-1", "'loop'" }, { "cpu=samples,loop=2x", "'loop'" },
        { "cpu=samples,loop=", "'loop'" }, { "cpu=samples,loop=99999999999999999999", "'loop'" },
        { "cpu=samples,loop_keep=3", "loop_keep=" }, { "cpu=samples,loop_mode=delta", "loop_mode=" },
        { "cpu=samples,loop=2,loop_keep=x", "'loop_keep'" }, { "cpu=samples,loop=2,loop_mode=all", "'loop_mode'" },
        { "cpu=samples,loop=2,file=a%x.txt", "'file'" },
        { "cpu=samples,loop=2,loop_kept=1", "loop_kept" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = options_parse(bad[i][0], &o, err, sizeof err);
        CHECK(rc == -1);
        if (rc == 0 || strstr(err, bad[i][1]) == NULL)
            fprintf(stderr, "  %s: %s\n", bad[i][0], err);
    }
}
