/* formats.c: see formats.h. The table is the one place a format is named. */
#include "formats.h"

#include <string.h>

#include "collapsed.h"
#include "flamegraph_writer.h"
#include "jfr_writer.h"
#include "pprof_writer.h"

static int write_collapsed(FILE *out, const char *page_title, const format_section *s, uint32_t n,
                           char *why, size_t whylen)
{
    (void)page_title, (void)n, (void)why, (void)whylen;
    return collapsed_write_profile(s[0].profile, profile_default_value(s[0].profile), out);
}

static int write_pprof(FILE *out, const char *page_title, const format_section *s, uint32_t n,
                       char *why, size_t whylen)
{
    (void)page_title, (void)n;
    return pprof_write(s[0].profile, out, why, whylen);
}

/* A page of one graph per profile. */
static int write_flamegraph(FILE *out, const char *page_title, const format_section *s, uint32_t n,
                            char *why, size_t whylen)
{
    flamegraph_section sections[16];
    if (n > sizeof sections / sizeof sections[0]) {
        snprintf(why, whylen, "%u profiles for one page, more than the %zu it draws", n,
                 sizeof sections / sizeof sections[0]);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        sections[i] = (flamegraph_section){ s[i].title, s[i].profile, profile_default_value(s[i].profile),
                                            NULL, NULL, s[i].note };
    return flamegraph_write_page(out, page_title, sections, n);
}

/* Every profile it is handed that a recording takes, as one recording
 * (jfr_writer.h: each kind's JDK event type, or hprof's own). */
static int write_jfr(FILE *out, const char *page_title, const format_section *s, uint32_t n,
                     char *why, size_t whylen)
{
    (void)page_title;
    const profile *profiles[16];
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n && kept < 16; i++)
        if (jfr_writes(s[i].profile))
            profiles[kept++] = s[i].profile;
    if (kept == 0) {
        snprintf(why, whylen, "no profile a JFR recording takes (CPU samples or times, sites, monitors, wall)");
        return -1;
    }
    return jfr_write(profiles, kept, out, why, whylen);
}

static const output_format formats[] = {
    { "collapsed", ".collapsed .folded",
      "also write collapsed stacks\n(frame;frame;frame count), for flame graph tools",
      FORMAT_SHOWS_ALL, NULL, 0, write_collapsed },
    { "pprof", ".pb.gz .pb",
      "also write a gzipped pprof\nprofile (go tool pprof, Pyroscope, Parca)",
      FORMAT_SHOWS_ALL, NULL, 0, write_pprof },
    { "flamegraph", ".html .htm",
      "also write a flame graph page\n(HTML, works offline)",
      FORMAT_SHOWS_ALL, NULL, 1, write_flamegraph },
    { "jfr", ".jfr",
      "also write a JFR recording\nof every collector (jfr print, JMC)",
      FORMAT_SHOWS_ALL, NULL, 1, write_jfr },
};

_Static_assert(sizeof formats / sizeof formats[0] <= FORMATS_MAX, "FORMATS_MAX: room for every format");

uint32_t format_count(void)
{
    return (uint32_t)(sizeof formats / sizeof formats[0]);
}

const output_format *format_at(uint32_t i)
{
    return i < format_count() ? &formats[i] : NULL;
}

int format_index(const char *name)
{
    for (uint32_t i = 0; i < format_count(); i++)
        if (strcmp(formats[i].name, name) == 0)
            return (int)i;
    return -1;
}

const output_format *format_find(const char *name)
{
    int i = format_index(name);
    return i < 0 ? NULL : &formats[i];
}

const output_format *format_of_extension(const char *path)
{
    size_t len = strlen(path);
    for (uint32_t i = 0; i < format_count(); i++)
        for (const char *e = formats[i].extensions; *e; ) {
            size_t n = strcspn(e, " ");
            if (len > n && memcmp(path + len - n, e, n) == 0)
                return &formats[i];
            e += n;
            e += *e == ' ';
        }
    return NULL;
}

const char *format_shows_options(unsigned shows, char *buf, size_t size)
{
    static const char *const options[] = { "cpu=samples", "cpu=times", "heap=sites", "monitor=y", "wall=" };
    size_t used = 0;
    unsigned left = shows & FORMAT_SHOWS_ALL;
    buf[0] = '\0';
    for (unsigned b = 0; b < sizeof options / sizeof options[0] && used < size; b++) {
        if (!(left & (1u << b)))
            continue;
        left &= ~(1u << b);
        const char *sep = used == 0 ? "" : left ? ", " : " or ";
        used += (size_t)snprintf(buf + used, size - used, "%s%s", sep, options[b]);
    }
    return buf;
}
