/* Unit tests: the table of output formats (src/profile/formats.c) as the
 * options, the agent's outputs and convert read it, and the HPROF text
 * layout both the agent and convert write (src/output/text_sections.c). */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options/options.h"
#include "output/text_sections.h"
#include "profile/formats.h"

TEST(formats_table_is_whole)
{
    CHECK(format_count() >= 4 && format_count() <= FORMATS_MAX);
    CHECK(format_at(format_count()) == NULL);
    for (uint32_t i = 0; i < format_count(); i++) {
        const output_format *f = format_at(i);
        CHECK(f->name && f->name[0] && f->write != NULL);
        CHECK(format_index(f->name) == (int)i && format_find(f->name) == f);
        CHECK(f->extensions[0] == '.');
        /* Its usual extension names it back. */
        char path[64];
        snprintf(path, sizeof path, "out%.*s", (int)strcspn(f->extensions, " "), f->extensions);
        CHECK(format_of_extension(path) == f);
        /* The help has its two lines, and the options' help shows them. */
        const char *nl = strchr(f->help, '\n');
        CHECK(nl != NULL && strchr(nl + 1, '\n') == NULL);
        char option[64];
        snprintf(option, sizeof option, "\n%s=<file>", f->name);
        CHECK(strstr(options_usage(), option) != NULL);
        CHECK(strstr(options_usage(), nl + 1) != NULL);
        CHECK(f->shows != 0 && (f->shows == FORMAT_SHOWS_ALL || f->shows_text != NULL));
    }
    CHECK(format_find("text") == NULL && format_index("nope") == -1);
    CHECK(format_of_extension("a.txt") == NULL && format_of_extension("pb.gz") == NULL);
    CHECK(strcmp(format_of_extension("x/y.pb.gz")->name, "pprof") == 0);
    CHECK(strcmp(format_of_extension("y.folded")->name, "collapsed") == 0);
    CHECK(strstr(options_usage(), "@FORMATS@") == NULL);
    CHECK(strstr(options_usage(), "\nsampler=auto|perf|timer") != NULL);
}

TEST(formats_shows_options_text)
{
    char buf[128];
    CHECK_STR(format_shows_options(FORMAT_SHOWS_ALL, buf, sizeof buf),
              "cpu=samples, cpu=times, heap=sites, monitor=y or wall=");
    CHECK_STR(format_shows_options(FORMAT_SHOWS_CPU_SAMPLES, buf, sizeof buf), "cpu=samples");
    CHECK_STR(format_shows_options(FORMAT_SHOWS_ALLOC_SITES | FORMAT_SHOWS_WALL, buf, sizeof buf),
              "heap=sites or wall=");
}

TEST(formats_options_one_per_format)
{
    hprof_options o;
    char err[512];
    for (uint32_t i = 0; i < format_count(); i++) {
        const output_format *f = format_at(i);
        char text[128];
        snprintf(text, sizeof text, "cpu=samples,%s=/tmp/x%u", f->name, i);
        CHECK(options_parse(text, &o, err, sizeof err) == 0);
        for (uint32_t j = 0; j < format_count(); j++)
            CHECK((o.outputs[j][0] != '\0') == (j == i));
        CHECK(options_want_stacks(&o));
        /* With no profile it shows, refused naming the option and what to add. */
        snprintf(text, sizeof text, "heap=dump,%s=/tmp/x", f->name);
        CHECK(options_parse(text, &o, err, sizeof err) == -1);
        char named[64];
        snprintf(named, sizeof named, "option '%s='", f->name);
        CHECK(strstr(err, named) != NULL && strstr(err, "add") != NULL);
        snprintf(text, sizeof text, "cpu=old,%s=/tmp/x", f->name);
        CHECK(options_parse(text, &o, err, sizeof err) == -1 && strstr(err, "cpu=old") != NULL);
    }
    /* jfr= records every collector's profile: heap=sites alone is enough. */
    CHECK(options_parse("heap=sites,jfr=/tmp/x.jfr", &o, err, sizeof err) == 0);
    CHECK(options_parse("cpu=samples,heap=sites,jfr=/tmp/x.jfr", &o, err, sizeof err) == 0);
}

/* The HPROF text layout: columns and widths as the JDK agent wrote them. */
TEST(text_sections_layout)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK(out != NULL);
    if (out == NULL)
        return;
    text_write_thread_start(out, 0x7f00, 200001, "main", "main");
    text_write_thread_end(out, 200001);
    text_write_trace_head(out, 300001, 200001);
    text_write_frame(out, "Demo", "run", "Demo.java", 12, 0, 0);
    text_write_frame(out, "[libc.so.6]", "operator new(unsigned long)", NULL, -3, 1, 1);
    text_write_trace_head(out, 300002, 0);
    text_write_empty_frame(out);
    text_ranked s;
    text_ranked_begin(&s, out, "CPU SAMPLES", "4", "Fri Nov 27 23:37:36 2026", "method", "");
    text_ranked_row(&s, 300001, 3, 0.75, "Demo.run");
    text_ranked_row(&s, 300002, 1, 0.25, "<empty>");
    text_ranked_end(&s);
    text_ranked_begin(&s, out, "MONITOR TIME", "12 ms", "D", "monitor", " (Java)");
    text_ranked_row(&s, 300001, 2, 1.0, "java.lang.Object");
    text_ranked_end(&s);
    text_sites_begin(&s, out, "ordered by live bytes", "D");
    text_sites_row(&s, 300001, 4096, 2, 8192, 4, 1.0, NULL);
    text_sites_end(&s);
    fclose(out);
    CHECK_STR(buf,
        "THREAD START (obj=7f00, id = 200001, name=\"main\", group=\"main\")\n"
        "THREAD END (id = 200001)\n"
        "TRACE 300001: (thread=200001)\n"
        "\tDemo.run(Demo.java:12)\n"
        "\t[libc.so.6].operator_new[unsigned_long](<Unknown Source>:Native method)\n"
        "TRACE 300002:\n"
        "\t<empty>\n"
        "CPU SAMPLES BEGIN (total = 4) Fri Nov 27 23:37:36 2026\n"
        "rank   self  accum   count trace method\n"
        "   1 75.00% 75.00%       3 300001 Demo.run\n"
        "   2 25.00% 100.00%       1 300002 <empty>\n"
        "CPU SAMPLES END\n"
        "MONITOR TIME BEGIN (total = 12 ms) D\n"
        "rank   self  accum   count trace monitor\n"
        "   1 100.00% 100.00%       2 300001 java.lang.Object (Java)\n"
        "MONITOR TIME END\n"
        "SITES BEGIN (ordered by live bytes) D\n"
        "          percent          live          alloc'ed  stack class\n"
        " rank   self  accum     bytes objs     bytes  objs trace name\n"
        "    1 100.00% 100.00%      4096    2      8192     4 300001 <unknown class>\n"
        "SITES END\n");
    free(buf);
}
