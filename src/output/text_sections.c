/* text_sections.c: see text_sections.h. */
#include "text_sections.h"

const char *text_native_name(const char *name, char *buf, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 1 < size; i++)
        buf[i] = name[i] == ' ' ? '_' : name[i] == '(' ? '[' : name[i] == ')' ? ']' : name[i];
    buf[i] = '\0';
    return buf;
}

void text_write_thread_start(FILE *out, uint64_t object_id, uint32_t serial, const char *name,
                             const char *group)
{
    fprintf(out, "THREAD START (obj=%llx, id = %u, name=\"%s\", group=\"%s\")\n",
            (unsigned long long)object_id, serial, name, group);
}

void text_write_thread_end(FILE *out, uint32_t serial)
{
    fprintf(out, "THREAD END (id = %u)\n", serial);
}

void text_write_trace_head(FILE *out, uint32_t serial, uint32_t thread)
{
    if (thread)
        fprintf(out, "TRACE %u: (thread=%u)\n", serial, thread);
    else
        fprintf(out, "TRACE %u:\n", serial);
}

void text_write_empty_frame(FILE *out)
{
    fprintf(out, "\t<empty>\n");
}

void text_write_frame(FILE *out, const char *class_name, const char *method, const char *source,
                      int32_t line, int native_line, int native_function)
{
    const char *file = source && source[0] ? source : "<Unknown Source>";
    char native[1024];
    if (native_function)
        method = text_native_name(method, native, sizeof native);
    if (line > 0)
        fprintf(out, "\t%s.%s(%s:%d)\n", class_name, method, file, (int)line);
    else
        fprintf(out, "\t%s.%s(%s:%s)\n", class_name, method, file,
                native_line ? "Native method" : "Unknown line");
}

void text_ranked_begin(text_ranked *s, FILE *out, const char *title, const char *total, const char *date,
                       const char *last_column, const char *name_suffix)
{
    *s = (text_ranked){ out, title, name_suffix, 0, 0.0 };
    fprintf(out, "%s BEGIN (total = %s) %s\n", title, total, date);
    fprintf(out, "rank   self  accum   count trace %s\n", last_column);
}

void text_ranked_row(text_ranked *s, uint32_t trace, int64_t count, double self, const char *name)
{
    s->accum += self;
    fprintf(s->out, "%4u %5.2f%% %5.2f%% %7lld %u %s%s\n", ++s->rank, self * 100.0, s->accum * 100.0,
            (long long)count, trace, name, s->name_suffix);
}

void text_ranked_end(text_ranked *s)
{
    fprintf(s->out, "%s END\n", s->title);
}

void text_sites_begin(text_ranked *s, FILE *out, const char *order, const char *date)
{
    *s = (text_ranked){ out, "SITES", "", 0, 0.0 };
    fprintf(out, "SITES BEGIN (%s) %s\n", order, date);
    /* HPROF's two header lines and column widths (hprof_site.c), which old
     * scripts split on; wider numbers just widen their column. */
    fprintf(out, "          percent          live          alloc'ed  stack class\n");
    fprintf(out, " rank   self  accum     bytes objs     bytes  objs trace name\n");
}

void text_sites_row(text_ranked *s, uint32_t trace, int64_t live_bytes, int64_t live_objs,
                    int64_t alloc_bytes, int64_t alloc_objs, double self, const char *class_name)
{
    s->accum += self;
    fprintf(s->out, "%5u %5.2f%% %5.2f%% %9lld %4lld %9lld %5lld %5u %s\n", ++s->rank, self * 100.0,
            s->accum * 100.0, (long long)live_bytes, (long long)live_objs, (long long)alloc_bytes,
            (long long)alloc_objs, trace, class_name ? class_name : "<unknown class>");
}

void text_sites_end(text_ranked *s)
{
    fprintf(s->out, "SITES END\n");
}
