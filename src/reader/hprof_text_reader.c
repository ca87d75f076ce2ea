/*
 * hprof_text_reader: HPROF's text format (java.hprof.txt) into hprof_data.
 *
 * One pass over the lines, split in place. Records (THREAD START/END, TRACE)
 * go into the tables; each section's rows replace those of the previous
 * section of its kind, since sections are cumulative and the last one covers
 * the run. Rows name traces by serial only: whether they exist is checked
 * when profiles are built, as a trace may come after the section naming it.
 *
 * Strict where a wrong guess would give wrong numbers (a row that does not
 * parse, a section with no END: a truncated file), lenient with lines it does
 * not know outside sections (counted in d->ignored_lines), so files of later
 * agents with new record kinds still read.
 */
#include "hprof_data.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct text_reader {
    hprof_data *d;
    char      **lines;         /* NUL-terminated, in place */
    size_t      nlines, at;    /* at: the next line to read */
    char       *err;
    size_t      errlen;
    time_t      created, last_date;
} text_reader;

/* An error at line index `at` (0-based), said with the file's name. */
#define fail(r, at, ...) hd_fail((r)->d, (r)->err, (r)->errlen, 0, (at), __VA_ARGS__)

static int out_of_memory(text_reader *r)
{
    snprintf(r->err, r->errlen, "%s: out of memory", r->d->path);
    return -1;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Splits text into lines (in place); a last line without a newline counts. */
static int split_lines(text_reader *r, char *text, size_t len)
{
    size_t cap = 1024, n = 0;
    char **lines = malloc(cap * sizeof *lines);
    if (lines == NULL)
        return out_of_memory(r);
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (n == cap) {
            char **bigger = realloc(lines, 2 * cap * sizeof *lines);
            if (bigger == NULL) {
                free(lines);
                return out_of_memory(r);
            }
            lines = bigger;
            cap *= 2;
        }
        lines[n++] = p;
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    r->lines = lines;
    r->nlines = n;
    return 0;
}

/* ------------------------------------------------------------ fields */

/* Whitespace-separated fields of s (modified), at most max; the last one is
 * the rest of the line. Returns the count. */
static int split_fields(char *s, char **fields, int max)
{
    int n = 0;
    while (*s && n < max) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        fields[n++] = s;
        if (n == max)
            break;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (*s)
            *s++ = '\0';
    }
    return n;
}

/* Counts, bytes and ms: up to 2^53, so sums and products of them stay in range. */
#define MAX_NUMBER (1ll << 53)

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v < 0 || v > MAX_NUMBER)
        return -1;
    *out = v;
    return 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
    int64_t v;
    if (parse_i64(s, &v) != 0 || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* "12.34%" -> 12.34 */
static int parse_percent(char *s, double *out)
{
    size_t n = strlen(s);
    if (n < 2 || s[n - 1] != '%')
        return -1;
    s[n - 1] = '\0';
    char *end;
    *out = strtod(s, &end);
    return *end == '\0' && *out >= 0.0 && *out <= 100.0 ? 0 : -1;
}

/* A ctime date ("Mon Nov 23 17:35:14 2026"); 0 when it is not one. */
static time_t parse_date(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%a %b %d %H:%M:%S %Y", &tm);
    if (end == NULL)
        return 0;
    tm.tm_isdst = -1;
    return mktime(&tm);
}

static void note_date(text_reader *r, const char *date)
{
    time_t t = parse_date(date);
    if (t > r->last_date)
        r->last_date = t;
}

/* ------------------------------------------------------------ header */

/* "key=" in the comma-separated options: its number, or -1. */
static int option_number(const char *options, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = options; p && *p; ) {
        if (strncmp(p, key, klen) == 0)
            return atoi(p + klen);
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return -1;
}

static void take_options(text_reader *r, char *line)
{
    char *at = strstr(line, "options: ");
    if (at == NULL)
        return;
    at += strlen("options: ");
    char *close = strrchr(at, ')');
    if (close)
        *close = '\0';
    if (strcmp(at, "(none)") == 0)
        return;
    hprof_data *d = r->d;
    d->options = at;
    d->depth_option = option_number(at, "depth=");
    if (strstr(at, "cpu=samples") != NULL) {
        int interval = option_number(at, "interval=");
        d->interval_ms = interval > 0 ? interval : 10;     /* the agent's default */
    }
}

static int read_header(text_reader *r)
{
    static const char magic[] = "JAVA PROFILE 1.0.1, created ";
    if (r->nlines == 0 || !starts(r->lines[0], magic))
        return fail(r, 0, "not an HPROF text file (it should start with \"%s<date>\")", magic);
    r->d->created = r->lines[0] + strlen(magic);
    r->created = parse_date(r->d->created);
    for (r->at = 1; r->at < r->nlines; r->at++) {
        char *line = r->lines[r->at];
        if (strcmp(line, "--------") == 0) {
            r->at++;
            return 0;
        }
        if (strstr(line, "options: ") && !r->d->options[0])
            take_options(r, line);
    }
    return fail(r, r->nlines - 1, "the header has no \"--------\" line ending it (truncated file?)");
}

/* ------------------------------------------------------------ records */

/* THREAD START (obj=8000000000030d41, id = 200001, name="main", group="main") */
static int read_thread_start(text_reader *r, char *line)
{
    hd_thread t = { 0, "", "", 0, 0 };
    char *name = strstr(line, ", name=\"");
    char *group = strstr(line, "\", group=\"");
    size_t n = strlen(line);
    if (sscanf(line, "THREAD START (obj=%" SCNx64 ", id = %u,", &t.object_id, &t.serial) != 2 ||
        name == NULL || group == NULL || group < name || n < 2 || strcmp(line + n - 2, "\")") != 0)
        return fail(r, r->at, "malformed THREAD START record");
    line[n - 2] = '\0';
    *group = '\0';
    t.name = name + strlen(", name=\"");
    t.group = group + strlen("\", group=\"");
    if (hd_find_thread(r->d, t.serial))
        return fail(r, r->at, "thread %u started twice", t.serial);
    return hd_add_thread(r->d, &t) == 0 ? 0 : out_of_memory(r);
}

static int read_thread_end(text_reader *r, const char *line)
{
    uint32_t serial;
    char tail;
    if (sscanf(line, "THREAD END (id = %u%c", &serial, &tail) != 2 || tail != ')')
        return fail(r, r->at, "malformed THREAD END record");
    hd_thread *t = hd_find_thread(r->d, serial);
    if (t == NULL)
        return fail(r, r->at, "THREAD END of thread %u, which has no THREAD START", serial);
    t->ended = 1;
    return 0;
}

/* "\tjava.util.HashMap.get(HashMap.java:557)": the method is after the last
 * '.' before '(' (class names have dots, method names do not); the line
 * after the last ':' (file names may hold one). */
static int parse_frame(char *s, hd_frame *f)
{
    size_t n = strlen(s);
    char *open = strchr(s, '(');
    char *colon = strrchr(s, ':');
    if (open == NULL || n < 4 || s[n - 1] != ')' || colon == NULL || colon < open)
        return -1;
    s[n - 1] = '\0';
    *open = '\0';
    *colon = '\0';
    char *dot = strrchr(s, '.');
    if (dot == NULL || dot == s || dot[1] == '\0')
        return -1;
    *dot = '\0';
    f->class_name = s;
    f->method = dot + 1;
    f->signature = "";
    f->run = PROFILE_RUN_UNKNOWN;
    f->file = strcmp(open + 1, "<Unknown Source>") == 0 ? "" : open + 1;
    const char *line = colon + 1;
    int64_t number;
    if (parse_i64(line, &number) == 0 && number > 0 && number <= INT32_MAX)
        f->line = (int32_t)number;
    else if (strcmp(line, "Native method") == 0)
        f->line = PROFILE_LINE_NATIVE;
    else if (strcmp(line, "Unknown line") == 0 || strcmp(line, "Compiled method") == 0 ||
             starts(line, "lineno="))
        f->line = PROFILE_LINE_UNKNOWN;
    else
        return -1;
    return 0;
}

/* TRACE 300001: (thread=200001), then its frame lines */
static int read_trace(text_reader *r, const char *line)
{
    uint32_t serial, thread = 0;
    int used = 0;
    if (sscanf(line, "TRACE %u:%n", &serial, &used) != 1 || used == 0)
        return fail(r, r->at, "malformed TRACE record");
    const char *rest = line + used;
    char tail;
    if (rest[0] && (sscanf(rest, " (thread=%u%c", &thread, &tail) != 2 || tail != ')'))
        return fail(r, r->at, "malformed TRACE record");
    if (hd_begin_trace(r->d, serial, thread) != 0)
        return out_of_memory(r);
    size_t first = r->at;
    while (r->at + 1 < r->nlines && r->lines[r->at + 1][0] == '\t') {
        char *frame_line = r->lines[++r->at] + 1;
        if (strcmp(frame_line, "<empty>") == 0)
            continue;
        hd_frame f;
        if (parse_frame(frame_line, &f) != 0)
            return fail(r, r->at, "malformed frame of TRACE %u (want class.method(File.java:line))",
                        serial);
        if (hd_add_frame(r->d, &f) != 0)
            return out_of_memory(r);
    }
    if (r->at == first)
        return fail(r, r->at, "TRACE %u has no frame lines (truncated file?)", serial);
    return 0;
}

/* ------------------------------------------------------------ sections */

/* Index of the section's END line; an error if there is none. */
static int find_end(text_reader *r, const char *end, const char *what, size_t *end_at)
{
    for (size_t i = r->at + 1; i < r->nlines; i++) {
        if (strcmp(r->lines[i], end) == 0) {
            *end_at = i;
            return 0;
        }
        if (strstr(r->lines[i], " BEGIN") && !starts(r->lines[i], "\t"))
            break;
    }
    return fail(r, r->at, "%s section with no \"%s\" line (truncated file?)", what, end);
}

/* Rows "rank self% accum% count trace rest": CPU SAMPLES, CPU TIME,
 * MONITOR TIME. total_ms > 0: the row's time is self% of it, in ns. */
static int read_ranked_rows(text_reader *r, hd_section *s, size_t end_at, int monitor,
                            double total_ms, const char *what)
{
    for (r->at++; r->at < end_at; r->at++) {
        char *f[6];
        double self, accum;
        hd_row row = { 0, NULL, { 0, 0, 0, 0 } };
        if (split_fields(r->lines[r->at], f, 6) != 6 || parse_percent(f[1], &self) != 0 ||
            parse_percent(f[2], &accum) != 0 || parse_i64(f[3], &row.values[0]) != 0 ||
            parse_u32(f[4], &row.trace) != 0)
            return fail(r, r->at, "malformed %s row", what);
        if (monitor) {
            char *java = strstr(f[5], " (Java)");
            if (java)
                *java = '\0';
            row.class_name = f[5];
        }
        /* (In double, and held in range: converting a double past
         * INT64_MAX to an integer is undefined, and the file may say anything.) */
        double ns = self / 100.0 * (double)total_ms * 1e6 + 0.5;
        row.values[1] = ns < (double)MAX_NUMBER ? (int64_t)ns : MAX_NUMBER;
        if (hd_add_row(s, &row) != 0)
            return out_of_memory(r);
    }
    return 0;
}

static int expect_columns(text_reader *r, const char *columns, const char *what)
{
    r->at++;
    if (r->at >= r->nlines || strcmp(r->lines[r->at], columns) != 0)
        return fail(r, r->at < r->nlines ? r->at : r->nlines - 1,
                    "%s section without its column line \"%s\"", what, columns);
    return 0;
}

/* "CPU SAMPLES BEGIN (total = 1635) <date>" and its kin */
static int read_ranked_section(text_reader *r, hd_kind kind, const char *line, const char *what,
                               const char *end, const char *columns)
{
    hd_section *s = &r->d->sections[kind];
    const char *open = strstr(line, "(total = ");
    char *close = open ? strchr(open, ')') : NULL;
    int64_t total;
    if (open == NULL || close == NULL)
        return fail(r, r->at, "malformed %s BEGIN line", what);
    *close = '\0';
    char *ms = strstr(open, " ms");
    if (ms)
        *ms = '\0';
    if (parse_i64(open + strlen("(total = "), &total) != 0)
        return fail(r, r->at, "malformed total in the %s BEGIN line", what);
    size_t end_at;
    if (find_end(r, end, what, &end_at) != 0)
        return -1;
    hd_section_restart(s);
    s->total = total;
    s->date = close[1] == ' ' ? close + 2 : "";
    note_date(r, s->date);
    if (expect_columns(r, columns, what) != 0)
        return -1;
    int monitor = kind == HD_MONITOR_TIME || kind == HD_MONITOR_WAIT;
    double total_ms = kind == HD_CPU_SAMPLES ? 0.0 : (double)total;
    if (read_ranked_rows(r, s, end_at, monitor, total_ms, what) != 0)
        return -1;
    r->at = end_at;
    return 0;
}

/* SITES: two column lines, rows "rank self accum live_bytes live_objs
 * alloc_bytes alloc_objs trace class". */
static int read_sites(text_reader *r, const char *line)
{
    hd_section *s = &r->d->sections[HD_SITES];
    size_t end_at;
    if (find_end(r, "SITES END", "SITES", &end_at) != 0)
        return -1;
    hd_section_restart(s);
    const char *close = strrchr(line, ')');
    s->date = close && close[1] == ' ' ? close + 2 : "";
    note_date(r, s->date);
    if (end_at < r->at + 3 || !starts(r->lines[r->at + 2], " rank   self  accum"))
        return fail(r, r->at, "SITES section without its two column lines");
    r->at += 2;
    for (r->at++; r->at < end_at; r->at++) {
        char *f[9];
        double self, accum;
        hd_row row = { 0, NULL, { 0, 0, 0, 0 } };
        if (split_fields(r->lines[r->at], f, 9) != 9 || parse_percent(f[1], &self) != 0 ||
            parse_percent(f[2], &accum) != 0 || parse_i64(f[3], &row.values[0]) != 0 ||
            parse_i64(f[4], &row.values[1]) != 0 || parse_i64(f[5], &row.values[2]) != 0 ||
            parse_i64(f[6], &row.values[3]) != 0 || parse_u32(f[7], &row.trace) != 0)
            return fail(r, r->at, "malformed SITES row");
        row.class_name = f[8];
        s->total = profile_add_saturated(s->total, row.values[0]);
        s->total_live_objs = profile_add_saturated(s->total_live_objs, row.values[1]);
        s->total_alloc_bytes = profile_add_saturated(s->total_alloc_bytes, row.values[2]);
        s->total_alloc_objs = profile_add_saturated(s->total_alloc_objs, row.values[3]);
        if (hd_add_row(s, &row) != 0)
            return out_of_memory(r);
    }
    r->at = end_at;
    return 0;
}

/* MONITOR DUMP, DEADLOCKS and the summaries are kept as text for the report. */
static int keep_block(text_reader *r, const char *end, const char *what, const char **text)
{
    size_t end_at;
    if (find_end(r, end, what, &end_at) != 0)
        return -1;
    size_t bytes = 0;
    for (size_t i = r->at + 1; i < end_at; i++)
        bytes += strlen(r->lines[i]) + 1;
    char *copy = malloc(bytes + 1), *p = copy;
    if (copy == NULL)
        return out_of_memory(r);
    for (size_t i = r->at + 1; i < end_at; i++) {
        size_t n = strlen(r->lines[i]);
        memcpy(p, r->lines[i], n);
        p[n] = '\n';
        p += n + 1;
    }
    *p = '\0';
    *text = hd_strndup(r->d, copy, bytes);
    free(copy);
    r->at = end_at;
    return *text ? 0 : out_of_memory(r);
}

static int read_deadlocks(text_reader *r, const char *line)
{
    uint32_t cycles = 0;
    if (sscanf(line, "DEADLOCKS BEGIN (cycles = %u)", &cycles) != 1)
        return fail(r, r->at, "malformed DEADLOCKS BEGIN line");
    const char *close = strchr(line, ')');
    note_date(r, close && close[1] == ' ' ? close + 2 : "");
    r->d->deadlock_cycles = cycles;
    return keep_block(r, "DEADLOCKS END", "DEADLOCKS", &r->d->deadlocks);
}

/* A CLS record: "CLS <id> (name=<name>, trace=<serial>)", its loader in a
 * field line after it ("\tloader\t\t<id>"). The name may hold ", ". */
static int read_class_record(text_reader *r, size_t at, hd_class *c)
{
    const char *line = r->lines[at];
    const char *name = strstr(line, " (name="), *trace = strrchr(line, ',');
    if (name == NULL || trace == NULL || trace < name || sscanf(trace, ", trace=%" SCNu32 ")", &c->trace) != 1)
        return fail(r, at, "malformed CLS record");
    name += strlen(" (name=");
    c->name = hd_strndup(r->d, name, (size_t)(trace - name));
    c->loader = 0;
    c->loader_known = 1;
    for (size_t i = at + 1; i < r->nlines && r->lines[i][0] == '\t'; i++)
        if (sscanf(r->lines[i], "\tloader\t%" SCNx64, &c->loader) == 1)
            break;
    return c->name ? 0 : out_of_memory(r);
}

/* The loaders' classes: "OBJ <id> (sz=.., trace=.., class=<name>@<class id>)"
 * of every object some CLS record names as its loader. */
static int read_loader_objects(text_reader *r, size_t from, size_t to)
{
    hd_index *loaders = NULL;
    int rc = 0;
    for (uint32_t i = 0; i < r->d->nclasses && rc == 0; i++)
        if (r->d->classes[i].loader)
            rc = hd_map_put(&loaders, r->d->classes[i].loader, 0);
    for (size_t i = from; i < to && loaders && rc == 0; i++) {
        uint64_t id;
        uint32_t at;
        const char *line = r->lines[i], *cls = strstr(line, ", class="), *end = strrchr(line, '@');
        if (!starts(line, "OBJ ") || sscanf(line, "OBJ %" SCNx64, &id) != 1 || cls == NULL || end == NULL ||
            end < cls || hd_map_get(loaders, id, &at) != 0)
            continue;
        cls += strlen(", class=");
        const char *name = hd_strndup(r->d, cls, (size_t)(end - cls));
        rc = name ? hd_add_loader(r->d, id, name) : -1;
    }
    hd_map_free(loaders);
    return rc == 0 ? 0 : out_of_memory(r);
}

/* A HEAP DUMP section: counted, and its classes with their loaders kept
 * (the last section's replace an earlier one's). */
static int read_heap_dump(text_reader *r)
{
    size_t end_at;
    for (end_at = r->at + 1; end_at < r->nlines; end_at++)
        if (strcmp(r->lines[end_at], "HEAP DUMP END") == 0)
            break;
    if (end_at >= r->nlines)
        return fail(r, r->at, "HEAP DUMP section with no \"HEAP DUMP END\" line (truncated file?)");
    r->d->text_heap_dumps++;
    hd_classes_restart(r->d);
    for (size_t i = r->at + 1; i < end_at; i++) {
        hd_class c;
        if (!starts(r->lines[i], "CLS "))
            continue;
        if (read_class_record(r, i, &c) != 0)
            return -1;
        if (hd_add_class(r->d, &c) != 0)
            return out_of_memory(r);
    }
    if (read_loader_objects(r, r->at + 1, end_at) != 0)
        return -1;
    r->at = end_at;
    return 0;
}

static const char RANKED_COLUMNS[] = "rank   self  accum   count trace method";
static const char MONITOR_COLUMNS[] = "rank   self  accum   count trace monitor";

static int read_record(text_reader *r)
{
    char *line = r->lines[r->at];
    if (line[0] == '\0')
        return 0;
    if (starts(line, "THREAD START ("))
        return read_thread_start(r, line);
    if (starts(line, "THREAD END ("))
        return read_thread_end(r, line);
    if (starts(line, "TRACE "))
        return read_trace(r, line);
    if (starts(line, "CPU SAMPLES BEGIN "))
        return read_ranked_section(r, HD_CPU_SAMPLES, line, "CPU SAMPLES", "CPU SAMPLES END",
                                   RANKED_COLUMNS);
    if (starts(line, "CPU TIME (ms) BEGIN "))
        return read_ranked_section(r, HD_CPU_TIMES, line, "CPU TIME", "CPU TIME (ms) END",
                                   RANKED_COLUMNS);
    if (starts(line, "MONITOR TIME BEGIN "))
        return read_ranked_section(r, HD_MONITOR_TIME, line, "MONITOR TIME", "MONITOR TIME END",
                                   MONITOR_COLUMNS);
    if (starts(line, "MONITOR WAIT TIME BEGIN "))
        return read_ranked_section(r, HD_MONITOR_WAIT, line, "MONITOR WAIT TIME",
                                   "MONITOR WAIT TIME END", MONITOR_COLUMNS);
    if (starts(line, "SITES BEGIN "))
        return read_sites(r, line);
    if (starts(line, "CPU SUMMARY BEGIN "))
        return keep_block(r, "CPU SUMMARY END", "CPU SUMMARY", &r->d->cpu_summary);
    if (starts(line, "WALL SUMMARY BEGIN "))
        return keep_block(r, "WALL SUMMARY END", "WALL SUMMARY", &r->d->wall_summary);
    if (strcmp(line, "MONITOR DUMP BEGIN") == 0)
        return keep_block(r, "MONITOR DUMP END", "MONITOR DUMP", &r->d->monitor_dump);
    if (starts(line, "DEADLOCKS BEGIN "))
        return read_deadlocks(r, line);
    if (starts(line, "HEAP DUMP BEGIN "))
        return read_heap_dump(r);
    if (starts(line, "AGENT MEMORY (bytes = ")) {
        unsigned long long bytes = 0, seen = 0, forgotten = 0;
        const char *rest = strstr(line, "; threads ");
        if (sscanf(line, "AGENT MEMORY (bytes = %llu)", &bytes) != 1 || rest == NULL ||
            sscanf(rest, "; threads %llu seen, %llu ended ones forgotten", &seen, &forgotten) != 2)
            return fail(r, r->at, "malformed AGENT MEMORY line");
        r->d->agent_memory_lines++;
        r->d->agent_memory_bytes = bytes;
        if (bytes > r->d->agent_memory_max)
            r->d->agent_memory_max = bytes;
        r->d->agent_threads_seen = seen;
        r->d->agent_threads_forgotten = forgotten;
        return 0;
    }
    if (line[0] == '\t')
        return fail(r, r->at, "a frame line outside a TRACE record");
    r->d->ignored_lines++;         /* WAIT:/WAITED: events, later record kinds */
    return 0;
}

/* text[len] must be '\0' (the last line ends there). */
hprof_data *hprof_text_parse(const char *path, char *text, size_t len, char *err, size_t errlen)
{
    text_reader r = { 0 };
    r.err = err;
    r.errlen = errlen;
    r.d = hprof_data_new(path, "HPROF text");
    if (r.d == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    const char *bad = len == 0 ? "it is empty (truncated: did the JVM die before writing it?)"
                    : memchr(text, '\0', len) ? "it holds NUL bytes"
                    : len > 0 && text[len - 1] != '\n' ? "it does not end with a newline (truncated?)"
                    : NULL;
    if (bad) {
        snprintf(err, errlen, "%s: not a whole HPROF text file: %s", path, bad);
        hprof_data_free(r.d);
        return NULL;
    }
    int rc = split_lines(&r, text, len);
    if (rc == 0)
        rc = read_header(&r);
    for (; rc == 0 && r.at < r.nlines; r.at++)
        rc = read_record(&r);
    free(r.lines);
    if (rc != 0) {
        hprof_data_free(r.d);
        return NULL;
    }
    if (r.created > 0 && r.last_date >= r.created)
        r.d->duration_ms = (int64_t)(r.last_date - r.created) * 1000;
    r.d->buffer = text;
    return r.d;
}
