/* Unit tests: finding a debugger agent among the JVM's start-up options. */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

#include "options/jvm_args.h"

static int finds(const char *args, size_t len, int argfiles, char *found)
{
    found[0] = '\0';
    return jvm_args_find_debugger(args, len, argfiles, found, 128);
}

#define FINDS_TEXT(text, found) finds(text, strlen(text), 0, found)

TEST(jvm_args_finds_each_way_to_load_jdwp)
{
    char found[128];
    static const char cmdline[] = "java\0-Xmx1g\0-agentpath:/x/libhprof.so=monitor=y\0"
                                  "-agentlib:jdwp=transport=dt_socket,server=y\0-cp\0.\0Main";
    CHECK(finds(cmdline, sizeof cmdline, 0, found) == 1);
    CHECK_STR(found, "-agentlib:jdwp");
    CHECK(FINDS_TEXT("-Xdebug -Xrunjdwp:transport=dt_socket,server=y", found) == 1);
    CHECK_STR(found, "-Xrunjdwp");
    CHECK(FINDS_TEXT("  -agentpath:/usr/lib/jvm/x/lib/libjdwp.so=transport=dt_socket  ", found) == 1);
    CHECK_STR(found, "-agentpath:/usr/lib/jvm/x/lib/libjdwp.so");
    CHECK(FINDS_TEXT("\"-agentlib:jdwp\"", found) == 1);       /* quoted, no options */
    CHECK_STR(found, "-agentlib:jdwp");
}

TEST(jvm_args_ignores_lookalikes)
{
    char found[128];
    CHECK(FINDS_TEXT("-agentlib:jdwpx=1 -agentlib:hprof=cpu=samples -Xrunjdwpx", found) == 0);
    CHECK(FINDS_TEXT("-agentpath:/opt/libjdwp_helper.so -agentpath:/opt/jdwp/libhprof.so=x=libjdwp.so", found) == 0);
    CHECK(FINDS_TEXT("-Djdwp=-agentlib:jdwp", found) == 0);        /* inside another option's value */
    CHECK(FINDS_TEXT("", found) == 0);
    static const char cut[] = "-agentlib:jdwp";
    CHECK(finds(cut, sizeof cut - 2, 0, found) == 0);               /* len respected: "-agentlib:jdw" */
}

TEST(jvm_args_reads_argument_files_one_level)
{
    char found[128], file[] = "/tmp/hprof_unit_argsXXXXXX", inner[] = "/tmp/hprof_unit_argsXXXXXX";
    int fd = mkstemp(file), fd_inner = mkstemp(inner);
    CHECK(fd >= 0 && fd_inner >= 0);
    if (fd < 0 || fd_inner < 0)
        return;
    static const char text[] = "-Xmx1g\n\"-agentlib:jdwp=transport=dt_socket,address=127.0.0.1:0\"\n";
    CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    close(fd);
    char args[256];
    int len = snprintf(args, sizeof args, "java%c@%s%cMain", '\0', file, '\0');
    CHECK(finds(args, (size_t)len, 1, found) == 1);
    CHECK_STR(found, "-agentlib:jdwp");
    CHECK(finds(args, (size_t)len, 0, found) == 0);                 /* files only when asked */
    /* An @file inside an @file is not read (the launcher does not either). */
    char nested[64];
    int nested_len = snprintf(nested, sizeof nested, "@%s\n", file);
    CHECK(write(fd_inner, nested, (size_t)nested_len) == nested_len);
    close(fd_inner);
    len = snprintf(args, sizeof args, "java%c@%s%cMain", '\0', inner, '\0');
    CHECK(finds(args, (size_t)len, 1, found) == 0);
    CHECK(finds("@/nonexistent/hprof/args", 24, 1, found) == 0);
    unlink(file);
    unlink(inner);
}

/* ZGC is always asked for (ergonomics picks G1 or Serial): -XX:+UseZGC,
 * whole, on the command line or in an @file; not -XX:-UseZGC nor others. */
TEST(jvm_args_finds_zgc)
{
    char found[128];
    static const char cmdline[] = "java\0-XX:+UseZGC\0-XX:+ZGenerational\0-cp\0.\0Main";
    CHECK(jvm_args_find_zgc(cmdline, sizeof cmdline, 0, found, sizeof found) == 1);
    CHECK_STR(found, "-XX:+UseZGC");
    static const char off[] = "java\0-XX:-UseZGC\0-XX:+UseZGCx\0-XX:+UseG1GC\0Main";
    CHECK(jvm_args_find_zgc(off, sizeof off, 0, found, sizeof found) == 0);
    CHECK(jvm_args_find_zgc("-Xmx1g \"-XX:+UseZGC\"", 20, 0, found, sizeof found) == 1);
}
