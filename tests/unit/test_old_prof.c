/* cpu=old's writer (src/output/old_prof_writer.c) on tables built here. */
#include <stdlib.h>

#include "../../src/core/tables.h"
#include "../../src/output/old_prof_writer.h"
#include "../../src/output/text_writer.h"
#include "unit.h"

/* The tables of the test running (each test makes its own). */
static profile_tables *test_tables;

static serial_t frame_of(const char *class_sig, const char *name, const char *desc, uint64_t id)
{
    method_desc d = { .class_serial = class_intern(test_tables, class_sig), .name = name, .signature = desc,
                      .source_file = "Calls.java" };
    return frame_intern(test_tables, method_add(test_tables, id, &d), 10);
}

/* The lines written for rows[0..n), in a malloc'ed string. */
static char *written(const times_row *rows, uint32_t n)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CHECK(f != NULL);
    if (f == NULL)
        return NULL;
    CHECK(old_prof_write(test_tables, f, rows, n) == 0);
    fclose(f);
    return text;
}

TEST(old_prof_lines_callee_caller_ordered_by_calls)
{
    test_tables = profile_tables_new(NULL);
    serial_t leaf = frame_of("Lpkg/Calls;", "leaf", "(I)I", 1);
    serial_t a = frame_of("Lpkg/Calls;", "a", "(I)V", 2);
    serial_t c = frame_of("Lpkg/Calls;", "c", "()V", 3);
    serial_t main = frame_of("Lpkg/Calls;", "main", "([Ljava/lang/String;)V", 4);
    serial_t run = frame_of("Ljava/lang/Thread;", "run", "()V", 5);
    serial_t leaf_in_a[] = { leaf, a }, leaf_in_c[] = { leaf, c }, a_in_main[] = { a, main };
    serial_t thread_top[] = { run };
    times_row rows[] = {
        /* trace, calls, self ns, total ns: given in no particular order */
        { trace_intern(test_tables, 0, a_in_main, 2), 1, 2000000, 900400000 },
        { trace_intern(test_tables, 0, leaf_in_c, 2), 300, 300000000, 300000000 },
        { trace_intern(test_tables, 0, leaf_in_a, 2), 1000, 600000000, 600499999 },    /* rounds down */
        { trace_intern(test_tables, 0, thread_top, 1), 1, 100, 1500000 },              /* 1.5 ms: rounds up */
        { trace_intern(test_tables, 0, NULL, 0), 0, 0, 7000000 },                      /* no calls: left out */
    };
    char *out = written(rows, sizeof rows / sizeof rows[0]);
    CHECK(out != NULL);
    if (out)
        CHECK_STR(out, "count callee caller time\n"
                       "1000 pkg.Calls.leaf(I)I pkg.Calls.a(I)V 600\n"
                       "300 pkg.Calls.leaf(I)I pkg.Calls.c()V 300\n"
                       "1 pkg.Calls.a(I)V pkg.Calls.main([Ljava/lang/String;)V 900\n"
                       "1 java.lang.Thread.run()V <unknown caller> 2\n");
    free(out);

    /* An empty trace with calls, and nothing at all. */
    times_row empty[] = { { trace_intern(test_tables, 0, NULL, 0), 4, 0, 0 } };
    out = written(empty, 1);
    if (out)
        CHECK_STR(out, "count callee caller time\n4 <unknown callee> <unknown caller> 0\n");
    free(out);
    out = written(NULL, 0);
    if (out)
        CHECK_STR(out, "count callee caller time\n");
    free(out);
    profile_tables_free(test_tables);
    test_tables = NULL;
}

/* cpu=old's file: no THREAD records; TRACE records only if asked for. */
TEST(old_prof_file_omits_thread_and_trace_records)
{
    test_tables = profile_tables_new(NULL);
    serial_t thread = thread_add(test_tables, "main", "main", 0x10);
    thread_mark_ended(test_tables, thread);
    serial_t frames[] = { frame_of("Lpkg/Calls;", "a", "(I)V", 2) };
    serial_t trace = trace_intern(test_tables, 0, frames, 1);
    for (int traces_too = 0; traces_too < 2; traces_too++) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        CHECK(f != NULL);
        if (f == NULL)
            break;
        text_writer w;
        text_writer_init(&w, f, test_tables);
        w.omit_thread_records = 1;
        w.omit_trace_records = !traces_too;
        text_write_new_records(&w);
        text_writer_free(&w);
        fclose(f);
        CHECK(strstr(text, "THREAD") == NULL);
        CHECK((strstr(text, "TRACE 300001:\n\tpkg.Calls.a(Calls.java:10)\n") != NULL) == traces_too);
        CHECK(trace == 300001);
        free(text);
    }
    profile_tables_free(test_tables);
    test_tables = NULL;
}
