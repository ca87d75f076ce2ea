/* report_sections.c: see report_sections.h. */
#include "report_sections.h"

#include <stdio.h>
#include <stdlib.h>

static uint32_t clamp32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

text_writer *report_text(const report_target *r)
{
    return r->format == 'b' ? NULL : r->text;
}

static void binary_cpu_samples(const report_target *r, const cpu_row *rows, uint32_t n, uint64_t total)
{
    hb_sample *s = malloc((n ? n : 1) * sizeof *s);
    if (s == NULL) {
        fprintf(stderr, "hprof: out of memory while writing CPU SAMPLES\n");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        s[i] = (hb_sample){ clamp32(rows[i].count), rows[i].trace };
    if (r->binary_new_records)
        r->binary_new_records(r->binary);
    hb_cpu_samples(r->binary, clamp32(total), s, n);
    free(s);
}

void report_cpu_samples(const report_target *r, const cpu_row *rows, uint32_t n, uint64_t total,
                        const cpu_summary *summary, int interval_ms, time_t now)
{
    if (r->format == 'b') {
        binary_cpu_samples(r, rows, n, total);
        return;
    }
    text_writer *w = report_text(r);
    if (w == NULL)
        return;
    text_write_new_records(w);
    if (summary)
        text_write_cpu_summary(w, summary, interval_ms, now);
    text_write_cpu_samples(w, rows, n, total, r->cutoff, now);
}

static void binary_sites(const report_target *r, const site_row *rows, uint32_t n, const site_row *totals)
{
    hb_site *sites = malloc((n ? n : 1) * sizeof *sites);
    uint32_t k = 0;
    for (uint32_t i = 0; sites && i < n; i++) {
        double live = totals->live_bytes ? (double)rows[i].live_bytes / (double)totals->live_bytes : 0;
        double alloc = totals->alloc_bytes ? (double)rows[i].alloc_bytes / (double)totals->alloc_bytes : 0;
        if (live < r->cutoff && alloc < r->cutoff)
            continue;
        /* is_array: 0 for an instance, else the HPROF type of the elements. */
        const char *sig = class_signature(r->tables, rows[i].class_serial);
        uint8_t is_array = sig && sig[0] == '[' ? hb_type_of_descriptor(sig[1]) : 0;
        sites[k++] = (hb_site){ is_array, rows[i].class_serial, rows[i].trace, clamp32(rows[i].live_bytes),
                                clamp32(rows[i].live_objs), clamp32(rows[i].alloc_bytes),
                                clamp32(rows[i].alloc_objs) };
    }
    if (sites)
        hb_alloc_sites(r->binary, 0, (float)r->cutoff, clamp32(totals->live_bytes), clamp32(totals->live_objs),
                       totals->alloc_bytes, totals->alloc_objs, sites, k);
    else
        fprintf(stderr, "hprof: out of memory while writing ALLOC SITES\n");
    free(sites);
}

void report_sites(const report_target *r, const site_row *rows, uint32_t n, const site_row *totals,
                  uint64_t sample_interval, time_t now)
{
    if (r->format == 'b') {
        r->binary_new_records(r->binary);
        binary_sites(r, rows, n, totals);
        return;
    }
    text_writer *w = report_text(r);
    if (w == NULL)
        return;
    text_write_new_records(w);
    text_write_sites(w, rows, n, totals, r->cutoff, sample_interval, now);
}
