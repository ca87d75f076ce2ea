/* text_writer.c: see text_writer.h. */
#include "text_writer.h"

#include <stdlib.h>
#include <string.h>

void text_writer_init(text_writer *w, FILE *out, profile_tables *tables)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->tables = tables;
}

void text_writer_free(text_writer *w)
{
    memset(w, 0, sizeof *w);
}

void text_format_date(time_t when, char *buf, size_t size)
{
    struct tm tm;
    localtime_r(&when, &tm);
    /* ctime's layout: day of month space-padded ("Nov  1"). */
    strftime(buf, size, "%a %b %e %H:%M:%S %Y", &tm);
}

/* What each kind of section is, for the header of a file that holds it. */
static const struct {
    unsigned    holds;
    const char *text;
} section_help[] = {
    { TEXT_HOLDS_CPU_SUMMARY,
      "CPU SUMMARY     where the CPU went, first: the samples by category\n"
      "                (Java code, GC, JIT compiler, VM, native, kernel)\n"
      "                and by thread, every thread of the process.\n" },
    { TEXT_HOLDS_CPU_SAMPLES,
      "CPU SAMPLES     a profile of program execution obtained by sampling\n"
      "                the threads that were running on a CPU: each thread\n"
      "                has a CPU-time timer that interrupts it after every\n"
      "                interval of CPU it uses (threads blocked in I/O,\n"
      "                sleeping or waiting are not sampled), and its stack\n"
      "                is walked where it was interrupted, not at a\n"
      "                safepoint. Each row counts the samples of one TRACE;\n"
      "                the rows are ordered by count. Samples whose stack\n"
      "                could not be walked are counted under traces of the\n"
      "                pseudo class [unwalkable], one method per reason\n"
      "                (GC_active, not_walkable_Java, buffer_full, ...).\n" },
    { TEXT_HOLDS_WALL,
      "WALL SUMMARY    wall-clock time by state (running, runnable,\n"
      "                sleeping, waiting, parked, blocked, syscall) and by\n"
      "                thread.\n"
      "WALL SAMPLES    every thread sampled every wall= ms of wall time,\n"
      "                whatever it does; each TRACE's last frame,\n"
      "                [state].<name>, says what the thread was doing.\n" },
    { TEXT_HOLDS_CPU_TIME,
      "CPU TIME (ms)   exact calls and CPU time per method (cpu=times): the\n"
      "                classes are instrumented at every method's entry and\n"
      "                exit. Each row is a TRACE (the method and its\n"
      "                callers) with its calls and the CPU its calls took.\n" },
    { TEXT_HOLDS_SITES,
      "SITES           allocation sites (heap=sites): per TRACE and class,\n"
      "                the bytes and objects allocated and those still live,\n"
      "                ordered by live bytes.\n" },
    { TEXT_HOLDS_HEAP_DUMP,
      "HEAP DUMP       every object of the heap at a dump (heap=dump): the\n"
      "                roots (ROOT), classes (CLS), objects (OBJ) and arrays\n"
      "                (ARR), each object with the TRACE that allocated it\n"
      "                where known.\n" },
    { TEXT_HOLDS_MONITOR,
      "MONITOR TIME    time threads waited to enter a contended monitor or\n"
      "                java.util.concurrent lock, per TRACE and lock class.\n"
      "MONITOR WAIT TIME  time threads spent in Object.wait, per TRACE and\n"
      "                class of the object waited on.\n" },
    { TEXT_HOLDS_MONITOR_DUMP,
      "MONITOR DUMP    every thread's state and every monitor's owner and\n"
      "                waiters at a dump.\n"
      "DEADLOCKS       cycles of threads each waiting for a lock another\n"
      "                holds, with their stacks.\n" },
};

void text_write_header(text_writer *w, time_t now, const char *options_text, const char *notes,
                       unsigned holds)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    fprintf(w->out,
        "JAVA PROFILE 1.0.1, created %s\n"
        "\n"
        "Header for -agentlib:hprof (or -agentpath:libhprof.so) ASCII output\n"
        "(the JVMTI successor of the JDK 5-8 HPROF agent; options: %s)\n"
        "\n"
        "This file contains the following types of records:\n"
        "\n"
        "THREAD START\n"
        "THREAD END      mark the lifetime of Java threads\n"
        "\n"
        "TRACE           represents a Java stack trace.  Each trace consists\n"
        "                of a series of stack frames, the innermost first.\n"
        "                Other records refer to TRACEs to identify the code\n"
        "                that was running, allocating or waiting.\n"
        "\n",
        date, options_text && options_text[0] ? options_text : "(none)");
    for (size_t i = 0; i < sizeof section_help / sizeof section_help[0]; i++)
        if (holds & section_help[i].holds)
            fprintf(w->out, "%s\n", section_help[i].text);
    fprintf(w->out,
        "Sections are cumulative: they are written at each dump (kill -QUIT\n"
        "<pid>, `hprof dump`) and at exit; the last one covers the whole run.\n"
        "Each dump starts with an AGENT MEMORY line: the bytes the agent's own\n"
        "tables hold then (it runs inside this JVM; HPROF 1.x did not say).\n"
        "\n");
    if (notes && notes[0])
        fprintf(w->out, "%s\n\n", notes);
    fprintf(w->out, "--------\n\n");
}

static void write_frame_line(const text_writer *w, serial_t frame)
{
    serial_t method = 0;
    int32_t line = LINE_UNKNOWN;
    method_info mi;
    if (frame_get(w->tables, frame, &method, &line) != 0 || method_get(w->tables, method, &mi) != 0) {
        fprintf(w->out, "\t<unknown>.<unknown>(<Unknown Source>:Unknown line)\n");
        return;
    }
    text_write_frame(w->out, mi.class_name, mi.name, mi.source_file, line, line == LINE_NATIVE,
                     mi.kind != FRAME_KIND_JAVA);
}

static void write_trace(const text_writer *w, serial_t trace)
{
    serial_t thread = 0;
    const serial_t *frames = NULL;
    uint32_t n = 0;
    if (trace_get(w->tables, trace, &thread, &frames, &n) != 0)
        return;
    text_write_trace_head(w->out, trace, thread);
    if (n == 0)
        text_write_empty_frame(w->out);
    for (uint32_t i = 0; i < n; i++)
        write_frame_line(w, frames[i]);
}

/* Every trace a section names must be in the file: the empty trace has a
 * fixed serial outside the table, so it is written on first use. */
static void note_trace_used(text_writer *w, serial_t trace)
{
    if ((trace == EMPTY_TRACE_SERIAL || trace == 0) && !w->empty_trace_written) {
        write_trace(w, EMPTY_TRACE_SERIAL);
        w->empty_trace_written = 1;
    }
}

void text_write_agent_memory(text_writer *w, time_t now, size_t interning, size_t payload, size_t sites,
                             uint32_t threads_seen, uint64_t threads_forgotten)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    fprintf(w->out, "AGENT MEMORY (bytes = %zu) %s: interning %zu, payload %zu, allocation sites %zu; "
            "threads %u seen, %llu ended ones forgotten\n", interning + payload + sites, date, interning, payload,
            sites, threads_seen, (unsigned long long)threads_forgotten);
}

void text_note_trace(text_writer *w, serial_t trace)
{
    note_trace_used(w, trace);
}

static void write_thread_start(void *ctx, serial_t serial, const thread_info *ti)
{
    text_write_thread_start(((text_writer *)ctx)->out, ti->object_id, serial, ti->name, ti->group);
}

static void write_thread_end(void *ctx, serial_t serial)
{
    text_write_thread_end(((text_writer *)ctx)->out, serial);
}

static void write_thread_records(text_writer *w)
{
    /* Out of memory: the records wait for the next dump. */
    (void)thread_records_write(w->tables, &w->threads_written, write_thread_start, write_thread_end, w);
}

void text_write_new_records(text_writer *w)
{
    if (!w->omit_thread_records)
        write_thread_records(w);
    uint32_t ntraces = trace_count(w->tables);
    for (uint32_t i = w->traces_written; i < ntraces && !w->omit_trace_records; i++)
        write_trace(w, TRACE_SERIAL_BASE + i);
    w->traces_written = ntraces;
}

void text_trace_top_method(profile_tables *tables, serial_t trace, char *buf, size_t size)
{
    serial_t thread = 0, method = 0;
    const serial_t *frames = NULL;
    uint32_t n = 0;
    int32_t line;
    method_info mi;
    if (trace_get(tables, trace, &thread, &frames, &n) != 0 || n == 0 ||
        frame_get(tables, frames[0], &method, &line) != 0 || method_get(tables, method, &mi) != 0) {
        snprintf(buf, size, "<empty>");
        return;
    }
    char native_name[1024];
    if (mi.kind != FRAME_KIND_JAVA)
        mi.name = text_native_name(mi.name, native_name, sizeof native_name);
    snprintf(buf, size, "%s.%s", mi.class_name, mi.name);
}

static void write_summary(text_writer *w, const char *title, const char *first_column,
                          const char *(*row_name)(int), const cpu_summary *summary, int interval_ms, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    double total = summary->total ? (double)summary->total : 1.0;
    fprintf(w->out, "%s BEGIN (total = %llu) %s\n", title, (unsigned long long)summary->total, date);
    fprintf(w->out, "%-16s    share  samples   seconds\n", first_column);
    for (int c = 0; c < CPU_SUMMARY_ROWS; c++)
        if (summary->by_category[c])
            fprintf(w->out, "%-16s %7.2f%% %8llu %9.2f\n", row_name(c),
                    100.0 * (double)summary->by_category[c] / total,
                    (unsigned long long)summary->by_category[c],
                    (double)summary->by_category[c] * interval_ms / 1000.0);
    fprintf(w->out, "thread              share  samples id\n");
    for (uint32_t i = 0; i < summary->nthreads; i++) {
        thread_info ti;
        const char *name = summary->threads[i].thread == 0 ? "<no thread>"
                         : thread_get(w->tables, summary->threads[i].thread, &ti) == 0 ? ti.name : "<forgotten>";
        fprintf(w->out, "%-16s %7.2f%% %8llu %u\n", name, 100.0 * (double)summary->threads[i].count / total,
                (unsigned long long)summary->threads[i].count, summary->threads[i].thread);
    }
    fprintf(w->out, "%s END\n", title);
}

void text_write_cpu_summary(text_writer *w, const cpu_summary *summary, int interval_ms, time_t now)
{
    write_summary(w, "CPU SUMMARY", "category", cpu_category_name, summary, interval_ms, now);
}

void text_write_wall_summary(text_writer *w, const cpu_summary *summary, int interval_ms, time_t now)
{
    write_summary(w, "WALL SUMMARY", "state", cpu_state_name, summary, interval_ms, now);
}

static void write_ranked_samples(text_writer *w, const char *title, const cpu_row *rows, uint32_t n,
                                 uint64_t total, double cutoff, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);

    for (uint32_t i = 0; i < n; i++)
        note_trace_used(w, rows[i].trace);

    char total_text[32];
    snprintf(total_text, sizeof total_text, "%llu", (unsigned long long)total);
    text_ranked s;
    text_ranked_begin(&s, w->out, title, total_text, date, "method", "");
    for (uint32_t i = 0; i < n && total > 0; i++) {
        double self = (double)rows[i].count / (double)total;
        if (self < cutoff)
            break;                 /* rows are ordered: the rest are smaller */
        char method[1024];
        text_trace_top_method(w->tables, rows[i].trace, method, sizeof method);
        text_ranked_row(&s, rows[i].trace, (int64_t)rows[i].count, self, method);
    }
    text_ranked_end(&s);
}

void text_write_cpu_samples(text_writer *w, const cpu_row *rows, uint32_t n, uint64_t total,
                            double cutoff, time_t now)
{
    write_ranked_samples(w, "CPU SAMPLES", rows, n, total, cutoff, now);
}

void text_write_wall_samples(text_writer *w, const cpu_row *rows, uint32_t n, uint64_t total,
                             double cutoff, time_t now)
{
    write_ranked_samples(w, "WALL SAMPLES", rows, n, total, cutoff, now);
}

void text_write_cpu_times(text_writer *w, const times_row *rows, uint32_t n, uint64_t total_ns,
                          double cutoff, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    for (uint32_t i = 0; i < n; i++)
        note_trace_used(w, rows[i].trace);
    char total_text[32];
    snprintf(total_text, sizeof total_text, "%llu", (unsigned long long)((total_ns + 500000) / 1000000));
    text_ranked s;
    text_ranked_begin(&s, w->out, "CPU TIME (ms)", total_text, date, "method", "");
    /* A row stays if it has cutoff of the time or of the calls: leaf
     * methods are counted but not timed, and their counts are the point. */
    uint64_t total_calls = 0;
    for (uint32_t i = 0; i < n; i++)
        total_calls += rows[i].calls;
    for (uint32_t i = 0; i < n; i++) {
        double self = total_ns ? (double)rows[i].cpu_ns / (double)total_ns : 0.0;
        double calls = total_calls ? (double)rows[i].calls / (double)total_calls : 0.0;
        if (self < cutoff && calls < cutoff)
            continue;
        char method[1024];
        text_trace_top_method(w->tables, rows[i].trace, method, sizeof method);
        text_ranked_row(&s, rows[i].trace, (int64_t)rows[i].calls, self, method);
    }
    text_ranked_end(&s);
}

/* ------------------------------------------------------------ heap=sites */

void text_write_sites(text_writer *w, const site_row *rows, uint32_t n, const site_row *totals,
                      double cutoff, uint64_t sample_interval, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    for (uint32_t i = 0; i < n; i++)
        note_trace_used(w, rows[i].trace);
    char order[128];
    if (sample_interval)
        snprintf(order, sizeof order, "ordered by live bytes, estimated from allocation samples every "
                 "%llu bytes", (unsigned long long)sample_interval);
    else
        snprintf(order, sizeof order, "ordered by live bytes");
    text_ranked s;
    text_sites_begin(&s, w->out, order, date);
    for (uint32_t i = 0; i < n; i++) {
        double self = totals->live_bytes ? (double)rows[i].live_bytes / (double)totals->live_bytes : 0.0;
        double alloc = totals->alloc_bytes ? (double)rows[i].alloc_bytes / (double)totals->alloc_bytes : 0.0;
        if (self < cutoff && alloc < cutoff)
            continue;
        text_sites_row(&s, rows[i].trace, (int64_t)rows[i].live_bytes, (int64_t)rows[i].live_objs,
                       (int64_t)rows[i].alloc_bytes, (int64_t)rows[i].alloc_objs, self,
                       class_java_name(w->tables, rows[i].class_serial));
    }
    text_sites_end(&s);
}

/* ------------------------------------------------------------ monitor=y */

static const char *class_name_or_unknown(const text_writer *w, serial_t class_serial)
{
    const char *name = class_java_name(w->tables, class_serial);
    return name ? name : "<unknown class>";
}

void text_write_monitor_time(text_writer *w, const char *title, int section,
                             const monitor_row *rows, uint32_t n, double cutoff, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (block_kind_section(rows[i].kind) == section) {
            total += rows[i].nanos;
            note_trace_used(w, rows[i].trace);
        }
    }
    /* HPROF's layout and widths; times are measured in ns and shown in ms. */
    char total_text[32];
    snprintf(total_text, sizeof total_text, "%llu ms", (unsigned long long)(total / 1000000u));
    text_ranked s;
    text_ranked_begin(&s, w->out, title, total_text, date, "monitor", " (Java)");
    for (uint32_t i = 0; i < n && total > 0; i++) {
        if (block_kind_section(rows[i].kind) != section)
            continue;
        double self = (double)rows[i].nanos / (double)total;
        if (self < cutoff)
            break;                 /* rows are ordered by time */
        text_ranked_row(&s, rows[i].trace, (int64_t)rows[i].count, self,
                        class_name_or_unknown(w, rows[i].lock_class));
    }
    text_ranked_end(&s);
}

/* A thread as MONITOR DUMP names it: HPROF's serial (what parsers match
 * with THREAD START and the dump's THREAD lines), then its name in quotes,
 * as DEADLOCKS writes it. */
static void write_thread_named(const text_writer *w, const char *prefix, serial_t thread)
{
    thread_info ti;
    fprintf(w->out, "%s %u \"%s\"", prefix, thread, thread_get(w->tables, thread, &ti) == 0 ? ti.name : "?");
}

static void write_thread_list(const text_writer *w, const char *label, const serial_t *threads, uint32_t n)
{
    fprintf(w->out, "\t%s:", label);
    for (uint32_t i = 0; i < n; i++)
        write_thread_named(w, i ? ", thread" : " thread", threads[i]);
    fprintf(w->out, "\n");
}

void text_write_monitor_dump(text_writer *w, const dump_thread *threads, uint32_t n_threads,
                             const dump_monitor *monitors, uint32_t n_monitors,
                             const dump_virtual_threads *vt)
{
    for (uint32_t i = 0; i < n_threads; i++)
        note_trace_used(w, threads[i].trace);
    fprintf(w->out, "MONITOR DUMP BEGIN\n");
    if (vt)
        fprintf(w->out, "    VIRTUAL THREADS: %u blocked, %u of them listed (blocked longest), %u more as lock owners\n",
                vt->blocked, vt->listed, vt->owners);
    for (uint32_t i = 0; i < n_threads; i++) {
        write_thread_named(w, "    THREAD", threads[i].thread);
        fprintf(w->out, ", trace %u, status: %s\n",
                threads[i].trace ? threads[i].trace : EMPTY_TRACE_SERIAL, threads[i].status);
    }
    for (uint32_t i = 0; i < n_monitors; i++) {
        const dump_monitor *m = &monitors[i];
        /* In Java form, as HPROF wrote an owned monitor's class (and as
         * every other section of this file names classes). */
        char name[512];
        signature_to_java_name(m->class_signature, name, sizeof name);
        fprintf(w->out, "    MONITOR %s\n", name);
        if (m->owner) {
            write_thread_named(w, "\towner: thread", m->owner);
            if (m->entry_count < 0)
                fprintf(w->out, ", entry count: unknown (a virtual thread)\n");
            else
                fprintf(w->out, ", entry count: %d\n", m->entry_count);
        } else {
            fprintf(w->out, "\tunowned\n");
        }
        write_thread_list(w, "waiting to enter", m->waiting_to_enter, m->n_enter);
        write_thread_list(w, "waiting to be notified", m->waiting_to_be_notified, m->n_notify);
    }
    fprintf(w->out, "MONITOR DUMP END\n");
}

void text_write_deadlocks(text_writer *w, const deadlock_member *members, const uint32_t *sizes,
                          uint32_t n_cycles, time_t now)
{
    char date[64];
    text_format_date(now, date, sizeof date);
    uint32_t members_total = 0;
    for (uint32_t c = 0; c < n_cycles; c++)
        members_total += sizes[c];
    for (uint32_t i = 0; i < members_total; i++)
        note_trace_used(w, members[i].trace);
    fprintf(w->out, "DEADLOCKS BEGIN (cycles = %u) %s\n", n_cycles, date);
    uint32_t at = 0;
    for (uint32_t c = 0; c < n_cycles; c++) {
        fprintf(w->out, "DEADLOCK %u (%u threads):\n", c + 1, sizes[c]);
        for (uint32_t i = 0; i < sizes[c]; i++, at++) {
            const deadlock_member *m = &members[at];
            thread_info ti;
            const char *name = thread_get(w->tables, m->thread, &ti) == 0 ? ti.name : "?";
            fprintf(w->out, "\tTHREAD %u \"%s\", trace %u, %s %s, held by THREAD %u\n", m->thread,
                    name, m->trace ? m->trace : EMPTY_TRACE_SERIAL,
                    m->parked ? "parked on" : "waiting to lock",
                    class_name_or_unknown(w, m->lock_class), m->held_by);
        }
    }
    fprintf(w->out, "DEADLOCKS END\n");
}
