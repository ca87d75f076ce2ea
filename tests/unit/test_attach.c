/* Unit tests: build/hprof's pure parts (src/cli): the hsperfdata reader on
 * synthetic, truncated and damaged buffers, /proc status and maps parsing,
 * attach requests, and HotSpot's answers to `load` as JDK 17 and 25 send
 * them (recorded from the real JVMs). */
#include "unit.h"

#include "cli/attach.h"
#include "cli/jvm_list.h"
#include "cli/perfdata.h"

#include <stdint.h>
#include <stdlib.h>

/* ------------------------------------------------------------ hsperfdata */

/* Writes synthetic hsperfdata the way HotSpot lays it out (see perfdata.c). */
typedef struct {
    unsigned char buf[4096];
    size_t len;       /* bytes written so far (the "used" value) */
    int big_endian;
    int num_entries;
} perf_builder;

static void put_i32(perf_builder *b, size_t at, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) {
        int shift = b->big_endian ? 24 - 8 * i : 8 * i;
        b->buf[at + (size_t)i] = (unsigned char)(u >> shift);
    }
}

static void perf_begin(perf_builder *b, int big_endian)
{
    memset(b, 0, sizeof *b);
    b->big_endian = big_endian;
    b->buf[0] = 0xca, b->buf[1] = 0xfe, b->buf[2] = 0xc0, b->buf[3] = 0xc0;
    b->buf[4] = big_endian ? 0 : 1;
    b->buf[5] = 2;  /* major */
    b->buf[6] = 0;  /* minor */
    b->buf[7] = 1;  /* accessible */
    b->len = 32;
    put_i32(b, 24, 32);  /* entry_offset */
}

/* Appends an entry: name, then vector_length bytes of data (a scalar 'J'
 * when type is 'J'), padded to 8 bytes as HotSpot does. */
static void perf_add(perf_builder *b, const char *name, char type, const char *text, int vector_length)
{
    size_t start = b->len;
    size_t name_off = 20, name_len = strlen(name) + 1;
    size_t data_off = (name_off + name_len + 7) & ~(size_t)7;
    size_t data_len = type == 'J' ? 8 : (size_t)vector_length;
    size_t entry_len = (data_off + data_len + 7) & ~(size_t)7;
    put_i32(b, start, (int32_t)entry_len);
    put_i32(b, start + 4, (int32_t)name_off);
    put_i32(b, start + 8, type == 'J' ? 0 : vector_length);
    b->buf[start + 12] = (unsigned char)type;
    b->buf[start + 14] = type == 'J' ? 4 : 5;  /* units: ticks / string */
    put_i32(b, start + 16, (int32_t)data_off);
    memcpy(b->buf + start + name_off, name, name_len);
    if (text != NULL)
        memcpy(b->buf + start + data_off, text, strlen(text) < data_len ? strlen(text) : data_len);
    b->len += entry_len;
    b->num_entries++;
}

static void perf_end(perf_builder *b)
{
    put_i32(b, 8, (int32_t)b->len);  /* used */
    put_i32(b, 28, b->num_entries);
}

#define CAPS "sun.rt.jvmCapabilities"

static void build_jvm_like(perf_builder *b, int big_endian, const char *caps)
{
    perf_begin(b, big_endian);
    perf_add(b, "sun.rt.createVmBeginTime", 'J', NULL, 0);
    perf_add(b, "java.property.java.vm.name", 'B', "OpenJDK 64-Bit Server VM", 64);
    perf_add(b, CAPS, 'B', caps, 65);
    perf_add(b, "sun.rt.jvmVersion", 'J', NULL, 0);
    perf_end(b);
}

static perfdata_status find_caps(const perf_builder *b, size_t size, char *value, size_t value_size)
{
    char why[200];
    return perfdata_find_string(b->buf, size, CAPS, value, value_size, why, sizeof why);
}

TEST(perfdata_finds_capabilities_in_both_byte_orders)
{
    static perf_builder b;
    char value[80];
    for (int big = 0; big <= 1; big++) {
        build_jvm_like(&b, big, "1100000000000000000000000000000000000000000000000000000000000000");
        CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_FOUND);
        CHECK_STR(value, "1100000000000000000000000000000000000000000000000000000000000000");
        build_jvm_like(&b, big, "0100");
        CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_FOUND);
        CHECK_STR(value, "0100");
        /* The file is larger than its used part: the rest is ignored. */
        CHECK(find_caps(&b, sizeof b.buf, value, sizeof value) == PERFDATA_FOUND);
    }
    /* A small output buffer gets a truncated, terminated copy. */
    build_jvm_like(&b, 0, "1100");
    CHECK(find_caps(&b, b.len, value, 2) == PERFDATA_FOUND);
    CHECK_STR(value, "1");
    /* A name that is a prefix of another is not that other. */
    char why[100];
    CHECK(perfdata_find_string(b.buf, b.len, "sun.rt.jvm", value, sizeof value, why, sizeof why)
          == PERFDATA_NOT_FOUND);
}

TEST(perfdata_not_found_and_not_ready)
{
    static perf_builder b;
    char value[80] = "x";
    perf_begin(&b, 0);
    perf_add(&b, "sun.rt.createVmBeginTime", 'J', NULL, 0);
    perf_end(&b);
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_FOUND);
    CHECK_STR(value, "");
    perf_begin(&b, 0);  /* no entries at all */
    perf_end(&b);
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_FOUND);
    build_jvm_like(&b, 0, "1");
    b.buf[7] = 0;  /* not accessible yet: the JVM is still setting it up */
    CHECK(find_caps(&b, b.len, value, sizeof value) == PERFDATA_NOT_READY);
}

/* Damages a copy of a good buffer in one way and expects MALFORMED with a reason. */
static void expect_malformed(const perf_builder *good, size_t at, int32_t v, int is_byte, const char *what)
{
    static perf_builder b;
    b = *good;
    if (is_byte)
        b.buf[at] = (unsigned char)v;
    else
        put_i32(&b, at, v);
    char value[80], why[200] = "";
    perfdata_status st = perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why);
    if (st != PERFDATA_MALFORMED || why[0] == '\0') {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: status %d, why '%s'", what, (int)st, why);
        unit_fail(__FILE__, __LINE__, msg);
    }
}

TEST(perfdata_malformed_buffers)
{
    static perf_builder good;
    build_jvm_like(&good, 0, "1100");
    /* Offsets of the entries: 32, then each entry's own length on. */
    size_t first = 32;
    size_t second = first + (size_t)(good.buf[first] | good.buf[first + 1] << 8);
    size_t caps = second + (size_t)(good.buf[second] | good.buf[second + 1] << 8);
    char value[8], why[100];

    CHECK(perfdata_find_string(NULL, 0, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    CHECK(perfdata_find_string(good.buf, 31, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    expect_malformed(&good, 0, 0xcb, 1, "bad magic");
    expect_malformed(&good, 4, 2, 1, "bad byte order");
    expect_malformed(&good, 5, 1, 1, "version 1");
    expect_malformed(&good, 8, (int32_t)good.len + 1, 0, "used past the buffer");
    expect_malformed(&good, 8, 31, 0, "used inside the prologue");
    expect_malformed(&good, 8, -1, 0, "negative used");
    expect_malformed(&good, 24, 16, 0, "entries inside the prologue");
    expect_malformed(&good, 24, (int32_t)good.len + 8, 0, "entries past used");
    expect_malformed(&good, 28, -3, 0, "negative entry count");
    expect_malformed(&good, first, 19, 0, "entry shorter than its header");
    expect_malformed(&good, first, 0, 0, "zero-length entry (would loop)");
    expect_malformed(&good, first, -8, 0, "negative entry length");
    expect_malformed(&good, first, 1 << 30, 0, "entry past used");
    expect_malformed(&good, first + 4, 4, 0, "name inside the header");
    expect_malformed(&good, first + 4, 4000, 0, "name past the entry");
    expect_malformed(&good, caps + 12, 'J', 1, "capabilities not a string");
    expect_malformed(&good, caps + 8, 0, 0, "capabilities a scalar");
    expect_malformed(&good, caps + 8, 5000, 0, "string longer than its entry");
    expect_malformed(&good, caps + 16, 2, 0, "string data inside the header");
    expect_malformed(&good, caps + 16, 1 << 20, 0, "string data past the entry");
    /* More entries counted than written: found if it comes first, else the
     * walk reaches the end of the used area and says so. */
    static perf_builder b;
    b = good;
    put_i32(&b, 28, 5);
    CHECK(perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_FOUND);
    CHECK(perfdata_find_string(b.buf, b.len, "absent", value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    put_i32(&b, 28, 4);
    CHECK(perfdata_find_string(b.buf, b.len, "absent", value, sizeof value, why, sizeof why) == PERFDATA_NOT_FOUND);
    /* A name running to the end of its entry without a NUL. */
    b = good;
    size_t caps_len = (size_t)(b.buf[caps] | b.buf[caps + 1] << 8);
    memset(b.buf + caps + 20, 'x', caps_len - 20);
    CHECK(perfdata_find_string(b.buf, b.len, CAPS, value, sizeof value, why, sizeof why) == PERFDATA_MALFORMED);
    (void)second;
}

TEST(perfdata_every_truncation_and_corruption_is_safe)
{
    static perf_builder good, b;
    build_jvm_like(&good, 1, "1100");
    char value[80], why[200];
    /* Cut short anywhere before the end of the used area: never found, never
     * a read past the cut (ASan would see it in build/asan/unit_tests). */
    for (size_t cut = 0; cut < good.len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, good.buf, cut);
        perfdata_status st = perfdata_find_string(copy, cut, CAPS, value, sizeof value, why, sizeof why);
        if (st != PERFDATA_MALFORMED) {
            char msg[100];
            snprintf(msg, sizeof msg, "cut at %zu: status %d", cut, (int)st);
            unit_fail(__FILE__, __LINE__, msg);
        }
        free(copy);
    }
    /* Any byte set to 0x00, 0x7f, 0x80 or 0xff: any status, no bad read. */
    static const unsigned char bytes[] = { 0x00, 0x7f, 0x80, 0xff };
    for (size_t at = 0; at < good.len; at++) {
        for (size_t k = 0; k < sizeof bytes; k++) {
            b = good;
            b.buf[at] = bytes[k];
            unsigned char *copy = malloc(b.len);
            memcpy(copy, b.buf, b.len);
            perfdata_status st = perfdata_find_string(copy, b.len, CAPS, value, sizeof value, why, sizeof why);
            CHECK(st == PERFDATA_FOUND || st == PERFDATA_NOT_FOUND || st == PERFDATA_NOT_READY
                  || st == PERFDATA_MALFORMED);
            if (st == PERFDATA_FOUND)
                CHECK(strlen(value) < sizeof value);
            free(copy);
        }
    }
}

/* ------------------------------------------------------------ /proc */

TEST(attach_parses_proc_status)
{
    attach_target t;
    memset(&t, 0, sizeof t);
    const char *in_container =
        "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t41234\nNgid:\t0\nPid:\t41234\n"
        "PPid:\t41200\nTracerPid:\t0\nUid:\t1000\t1001\t1001\t1001\nGid:\t50\t51\t51\t51\n"
        "FDSize:\t256\nGroups:\t51\nNStgid:\t41234\t7\nNSpid:\t41234\t7\nNSpgid:\t41200\t1\n";
    CHECK(attach_parse_proc_status(in_container, &t) == 0);
    CHECK(t.tgid == 41234 && t.nspid == 7);
    CHECK(t.uid == 1001 && t.gid == 51);  /* effective ids, the second column */
    CHECK_STR(t.name, "java");

    const char *old_kernel = "Name:\tjava\nTgid:\t99\nPid:\t99\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
    CHECK(attach_parse_proc_status(old_kernel, &t) == 0);
    CHECK(t.tgid == 99 && t.nspid == 99 && t.uid == 0);

    /* A thread's status names its process in Tgid. */
    CHECK(attach_parse_proc_status("Name:\tC2 Compiler\nTgid:\t500\nPid:\t512\nUid:\t1 1 1 1\nGid:\t1 1 1 1\n"
                                   "NSpid:\t512\n", &t) == 0);
    CHECK(t.tgid == 500);
    CHECK_STR(t.name, "C2 Compiler");

    CHECK(attach_parse_proc_status("Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", &t) == -1);
    CHECK(attach_parse_proc_status("Name:\tx\nTgid:\t5\nGid:\t0\t0\t0\t0\n", &t) == -1);
    CHECK(attach_parse_proc_status("Name:\tx\nTgid:\t5\nUid:\t7\nGid:\t0\t0\t0\t0\n", &t) == -1);
    CHECK(attach_parse_proc_status("Tgid:\tabc\nUid:\t0 0 0 0\nGid:\t0 0 0 0\n", &t) == -1);
    CHECK(attach_parse_proc_status("", &t) == -1);
    /* "Uid" must be the whole key, not a prefix of another. */
    CHECK(attach_parse_proc_status("Tgid:\t5\nUidx:\t3 3 3 3\nUid:\t4 4 4 4\nGid:\t0 0 0 0\n", &t) == 0);
    CHECK(t.uid == 4);
}

TEST(attach_scans_maps)
{
    attach_target t;
    memset(&t, 0, sizeof t);
    t.nspid = 7;
    const char *jvm =
        "55d4c1a00000-55d4c1a01000 r--p 00000000 08:01 1234   /usr/lib/jvm/java-17/bin/java\n"
        "7f0000000000-7f0000008000 rw-s 00000000 08:01 99     /tmp/hsperfdata_bob/17\n"
        "7f0000010000-7f0000018000 rw-s 00000000 08:01 98     /tmp/hsperfdata_bob/7\n"
        "7f1000000000-7f1000200000 r-xp 00000000 08:01 555    /usr/lib/jvm/java-17/lib/server/libjvm.so\n"
        "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n"
        "7ffd00100000-7ffd00101000 r-xp 00000000 00:00 0      [vdso]";  /* no final newline */
    attach_scan_maps(jvm, &t);
    CHECK(t.has_libjvm);
    CHECK_STR(t.perfdata_path, "/tmp/hsperfdata_bob/7");  /* not .../17 */
    CHECK(!t.perfdata_deleted);
    CHECK(!t.has_libhprof);
    CHECK_STR(t.jvmpi_path, "");

    /* The JVMPI layer, where commands go when the profiler is not loaded. */
    attach_scan_maps("7f10-7f20 r-xp 00000000 08:01 555 /opt/jdk/lib/server/libjvm.so\n"
                     "7f30-7f38 r-xp 00000000 08:01 556 /opt/hprof/build/libjvmpi.so\n"
                     "7f40-7f48 r-xp 00000000 08:01 557 /opt/agents/libmyprofiler.so\n", &t);
    CHECK_STR(t.jvmpi_path, "/opt/hprof/build/libjvmpi.so");
    CHECK(!t.has_libhprof);
    attach_scan_maps("7f30-7f38 r-xp 00000000 08:01 556 /opt/hprof/build/libjvmpi.so (deleted)\n"
                     "7f50-7f58 r-xp 00000000 08:01 558 /opt/hprof/build/libhprof.so\n", &t);
    CHECK_STR(t.jvmpi_path, "");                       /* a removed file cannot be loaded again */
    CHECK(t.has_libhprof);

    attach_scan_maps("7f00-7f08 rw-s 00000000 08:01 98 /tmp/hsperfdata_a b/7 (deleted)\n"
                     "7f10-7f20 r-xp 00000000 08:01 555 /opt/jdk/lib/server/libjvm.so (deleted)\n", &t);
    CHECK(t.has_libjvm);
    CHECK_STR(t.perfdata_path, "/tmp/hsperfdata_a b/7");
    CHECK(t.perfdata_deleted);

    attach_scan_maps("5600-5601 r--p 00000000 08:01 1 /usr/bin/sleep\n"
                     "7f00-7f08 r-xp 00000000 08:01 2 /usr/lib/libjvm.so.bak\n"
                     "7f10-7f18 r-xp 00000000 08:01 3 /usr/lib/notlibjvm.so\n"
                     "7f20-7f28 rw-s 00000000 08:01 4 /tmp/hsperfdata_/7\n"
                     "7f30-7f38 rw-s 00000000 08:01 4 /tmp/perfdata_bob/7\n"
                     "7f40-7f48 rw-p 00000000 00:00 0\n", &t);
    CHECK(!t.has_libjvm);
    CHECK_STR(t.perfdata_path, "");
    attach_scan_maps("", &t);
    CHECK(!t.has_libjvm && t.perfdata_path[0] == '\0');
}

/* ------------------------------------------------------------ protocol */

TEST(attach_builds_requests)
{
    char buf[4 * 1100], err[200];
    const char *args[3] = { "/opt/lib/libhprof.so", "true", "status,reply=/tmp/r" };
    long n = attach_build_request("load", args, buf, sizeof buf, err, sizeof err);
    static const char want[] = "1\0load\0/opt/lib/libhprof.so\0true\0status,reply=/tmp/r";
    CHECK(n == (long)sizeof want);
    CHECK(n > 0 && memcmp(buf, want, sizeof want) == 0);

    /* Missing arguments go as empty strings: always exactly three. */
    const char *none[3] = { NULL, NULL, NULL };
    n = attach_build_request("properties", none, buf, sizeof buf, err, sizeof err);
    CHECK(n == 2 + 11 + 3 && memcmp(buf, "1\0properties\0\0\0", 16) == 0);
    CHECK(attach_build_request("properties", NULL, buf, sizeof buf, err, sizeof err) == 16);

    /* 1024 bytes pass, 1025 would be dropped by HotSpot: refused here. */
    static char arg[1100];
    memset(arg, 'x', 1024);
    arg[1024] = '\0';
    const char *longest[3] = { arg, "true", "" };
    CHECK(attach_build_request("load", longest, buf, sizeof buf, err, sizeof err) > 0);
    arg[1024] = 'x';
    arg[1025] = '\0';
    const char *too_long[3] = { "a", "true", arg };
    err[0] = '\0';
    CHECK(attach_build_request("load", too_long, buf, sizeof buf, err, sizeof err) == -1);
    CHECK(strstr(err, "1025") != NULL && strstr(err, "1024") != NULL);
    CHECK(attach_build_request("an_operation_name_too_long", none, buf, sizeof buf, err, sizeof err) == -1);
    CHECK(attach_build_request("load", args, buf, 20, err, sizeof err) == -1);
}

static void parse(const char *answer, load_answer *a)
{
    attach_parse_load_answer(answer, strlen(answer), a);
}

TEST(attach_parses_load_answers)
{
    load_answer a;
    /* JDK 17 and 25 alike, once Agent_OnAttach ran. */
    parse("0\nreturn code: 0\n", &a);
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.status == 0 && a.agent_code == 0);
    parse("0\nreturn code: 7\n", &a);
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.agent_code == 7);
    parse("0\nreturn code: -1\n", &a);
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.agent_code == -1);
    parse("0\nreturn code: 3", &a);  /* no final newline */
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.agent_code == 3);
    parse("0\n0\n", &a);  /* JDK 8's bare number */
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.agent_code == 0);

    /* JDK 17: a library that cannot be loaded, status -1 and dlopen's reason. */
    parse("-1\n/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file: No such file or directory\n", &a);
    CHECK(a.outcome == LOAD_NOT_RUN && a.status == -1);
    CHECK_STR(a.message, "/x/lib.so was not loaded. /x/lib.so: cannot open shared object file: No such file or directory");
    parse("-1\nAgent_OnAttach is not available in /lib/libz.so.1\n", &a);
    CHECK(a.outcome == LOAD_NOT_RUN);
    CHECK_STR(a.message, "Agent_OnAttach is not available in /lib/libz.so.1");
    /* JDK 21 and later: the same with status 0. */
    parse("0\n/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file: No such file or directory\n", &a);
    CHECK(a.outcome == LOAD_NOT_RUN && a.status == 0);
    CHECK_STR(a.message, "/x/lib.so was not loaded. /x/lib.so: cannot open shared object file: No such file or directory");
    parse("0\nDynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.\n", &a);
    CHECK(a.outcome == LOAD_NOT_RUN);
    CHECK(strncmp(a.message, "Dynamic agent loading is not enabled.", 37) == 0);
    parse("-1\nOperation bogus not recognized!", &a);
    CHECK(a.outcome == LOAD_NOT_RUN && a.status == -1);
    CHECK_STR(a.message, "Operation bogus not recognized!");
    parse("0\nreturn code: 12abc\n", &a);
    CHECK(a.outcome == LOAD_NOT_RUN);
    CHECK_STR(a.message, "return code: 12abc");

    /* Nothing, or not an attach answer. */
    parse("", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER && a.message[0] != '\0');
    parse("0\n", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER);
    parse("0", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER);
    parse("HTTP/1.1 400 Bad Request\r\n", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER && strstr(a.message, "HTTP/1.1 400 Bad Request") != NULL);
    parse("99999999999\nreturn code: 0\n", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER);
    parse("-\n", &a);
    CHECK(a.outcome == LOAD_NO_ANSWER);

    /* Control characters do not reach the terminal. */
    parse("-1\nbad\033[2Jthing\ttabbed\n", &a);
    CHECK_STR(a.message, "bad?[2Jthing tabbed");
    /* An embedded NUL ends nothing: the length given is what counts. */
    attach_parse_load_answer("0\nreturn code: 0\n\0junk", 22, &a);
    CHECK(a.outcome == LOAD_AGENT_RETURNED && a.agent_code == 0);
}

/* A java command line as /proc/<pid>/cmdline holds it: words NUL-separated. */
static int main_of(const char *words, size_t len, char *out, size_t size)
{
    return jvm_main_name(words, len, out, size);
}
#define MAIN_OF(lit, out) main_of(lit, sizeof(lit) - 1, out, sizeof out)

TEST(jvm_list_reads_the_main_class_from_the_command_line)
{
    char out[64];
    CHECK(MAIN_OF("java\0-Xmx1g\0-cp\0a.jar:b\0app.Main\0arg1\0", out) == 0 && strcmp(out, "app.Main") == 0);
    CHECK(MAIN_OF("/usr/bin/java\0-XX:+UseG1GC\0-jar\0/opt/x/server.jar\0--port\0", out) == 0 &&
          strcmp(out, "server.jar") == 0);
    CHECK(MAIN_OF("java\0--module-path\0mods\0-m\0app/app.Main\0", out) == 0 && strcmp(out, "app/app.Main") == 0);
    CHECK(MAIN_OF("java\0--module=app/app.Main\0", out) == 0 && strcmp(out, "app/app.Main") == 0);
    CHECK(MAIN_OF("java\0-classpath\0x\0-Dk=v\0-agentpath:/l.so=cpu=samples\0Main\0", out) == 0 &&
          strcmp(out, "Main") == 0);
    CHECK(MAIN_OF("java\0-version\0", out) == -1 && out[0] == '\0');
    CHECK(MAIN_OF("java\0-cp\0", out) == -1);                       /* a value cut off */
    CHECK(jvm_main_name("", 0, out, sizeof out) == -1);
    jvm_entry e = { 42, "app.Main" };
    CHECK(jvm_matches(&e, "42") && jvm_matches(&e, "app.Main") && jvm_matches(&e, "Main"));
    CHECK(!jvm_matches(&e, "main") && !jvm_matches(&e, "app") && !jvm_matches(&e, "4"));
    jvm_entry jar = { 7, "server.jar" };
    CHECK(jvm_matches(&jar, "server.jar") && jvm_matches(&jar, "server") && !jvm_matches(&jar, "jar"));
    jvm_entry mod = { 8, "app/app.Main" };
    CHECK(jvm_matches(&mod, "app.Main") && jvm_matches(&mod, "Main"));
}

TEST(attach_makes_output_paths_absolute)
{
    char out[256];
    CHECK(attach_absolute_paths("cpu=samples,file=x.txt,flamegraph=/abs/f.html,pprof=sub/p.pb.gz", "/home/u",
                                out, sizeof out) == 0);
    CHECK_STR(out, "cpu=samples,file=/home/u/x.txt,flamegraph=/abs/f.html,pprof=/home/u/sub/p.pb.gz");
    CHECK(attach_absolute_paths("collapsed=c,net=host:9999,interval=1", "/w", out, sizeof out) == 0);
    CHECK_STR(out, "collapsed=/w/c,net=host:9999,interval=1");
    CHECK(attach_absolute_paths("", "/w", out, sizeof out) == 0 && out[0] == '\0');
    CHECK(attach_absolute_paths("file=", "/w", out, sizeof out) == 0);          /* empty: the agent refuses it */
    CHECK_STR(out, "file=");
    CHECK(attach_absolute_paths("file=abc", "/a/long/directory", out, 10) == -1);
}
