/* profile_outputs.c: see profile_outputs.h. */
#include "profile_outputs.h"
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "../profile/formats.h"

#define NAME_MAX_LEN (OPTIONS_PATH_MAX + 64)

/* Where ".kind" goes in path: before a compound or last extension of the
 * file's own name (not of a directory), else at the end. */
static size_t kind_position(const char *path)
{
    static const char *const compound[] = { ".pb.gz", ".txt.gz" };
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    for (size_t i = 0; i < sizeof compound / sizeof compound[0]; i++) {
        size_t n = strlen(compound[i]);
        if (len > n && (size_t)(path + len - name) > n && strcmp(path + len - n, compound[i]) == 0)
            return len - n;
    }
    const char *dot = strrchr(name, '.');
    return dot && dot != name ? (size_t)(dot - path) : len;
}

void profile_output_name(const char *path, const char *kind, int several, char *out, size_t size)
{
    if (!several) {
        snprintf(out, size, "%s", path);
        return;
    }
    size_t at = kind_position(path);
    snprintf(out, size, "%.*s.%s%s", (int)at, path, kind, path + at);
}

/* The profile's kind as a FORMAT_SHOWS_* bit ("cpu" is cpu=samples' or
 * cpu=times', whichever the options run). */
static unsigned kind_shows(const char *kind, const hprof_options *opt)
{
    if (strcmp(kind, "cpu") == 0)
        return opt->cpu == CPU_TIMES ? FORMAT_SHOWS_CPU_TIMES : FORMAT_SHOWS_CPU_SAMPLES;
    if (strcmp(kind, "alloc") == 0)
        return FORMAT_SHOWS_ALLOC_SITES;
    if (strcmp(kind, "lock") == 0 || strcmp(kind, "wait") == 0)
        return FORMAT_SHOWS_MONITORS;
    if (strcmp(kind, "wall") == 0)
        return FORMAT_SHOWS_WALL;
    return 0;
}

/* How many of the kinds the format shows. */
static uint32_t kinds_shown(const output_format *f, const hprof_options *opt, const char *const *kinds, uint32_t n)
{
    uint32_t shown = 0;
    for (uint32_t k = 0; k < n; k++)
        shown += (kind_shows(kinds[k], opt) & f->shows) != 0;
    return shown;
}

int profile_outputs_check(const hprof_options *opt, const char *const *kinds, uint32_t n,
                          char *err, size_t errlen)
{
    char name[NAME_MAX_LEN];
    for (uint32_t i = 0; i < format_count(); i++) {
        const output_format *f = format_at(i);
        const char *path = opt->outputs[i];
        if (path[0] == '\0')
            continue;
        if (f->one_file) {
            if (output_file_check_writable(path, f->name, err, errlen) != 0)
                return -1;
            continue;
        }
        uint32_t shown = kinds_shown(f, opt, kinds, n);
        for (uint32_t k = 0; k < n; k++) {
            if (!(kind_shows(kinds[k], opt) & f->shows))
                continue;
            profile_output_name(path, kinds[k], shown > 1, name, sizeof name);
            if (output_file_check_writable(name, f->name, err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

/* What one output file holds. */
typedef struct output_job {
    const output_format  *format;
    const format_section *sections;
    uint32_t              n;
} output_job;

/* Write `path` through a temporary file renamed over it. 0, or -1 after
 * telling why. */
static int write_file(const output_job *job, const char *path, outputs_tell tell, void *ctx)
{
    char tmp[NAME_MAX_LEN + 32], why[512] = "", line[NAME_MAX_LEN + 640];
    /* A name of its own, created exclusively (mkostemp: O_EXCL, 0600), then
     * given the mode of an output file; the rename replaces a link at path,
     * never what it points to. */
    snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd >= 0 && fchmod(fd, output_file_mode(0, output_file_umask())) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        fd = -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && f == NULL) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
    }
    int bad = f == NULL;
    if (!bad) {
        bad = job->format->write(f, "hprof", job->sections, job->n, why, sizeof why) != 0;
        bad |= fclose(f) != 0;
        bad = bad || rename(tmp, path) != 0;
    }
    if (bad) {
        if (why[0] == '\0')
            snprintf(why, sizeof why, "%s", errno ? strerror(errno) : "out of memory");
        snprintf(line, sizeof line, "hprof: cannot write %s (option %s=): %s; choose a writable "
                 "path with room to spare", path, job->format->name, why);
        if (f)
            unlink(tmp);
        tell(ctx, 1, line);
        return -1;
    }
    snprintf(line, sizeof line, "hprof: %s= written to %s", job->format->name, path);
    tell(ctx, 0, line);
    return 0;
}

int profile_outputs_write(const hprof_options *opt, const kind_profile *profiles, uint32_t n,
                          outputs_tell tell, void *ctx)
{
    int failed = 0;
    char name[NAME_MAX_LEN];
    format_section sections[PROFILE_OUTPUTS_MAX];
    const char *kinds[PROFILE_OUTPUTS_MAX];
    if (n > PROFILE_OUTPUTS_MAX)
        n = PROFILE_OUTPUTS_MAX;
    for (uint32_t k = 0; k < n; k++)
        kinds[k] = profiles[k].kind;
    for (uint32_t i = 0; i < format_count(); i++) {
        const output_format *f = format_at(i);
        const char *path = opt->outputs[i];
        if (path[0] == '\0')
            continue;
        /* The profiles it shows, in the collectors' order. */
        uint32_t shown = 0;
        for (uint32_t k = 0; k < n; k++)
            if (kind_shows(kinds[k], opt) & f->shows)
                sections[shown++] = (format_section){ profiles[k].profile, profile_title(profiles[k].profile), NULL };
        if (shown == 0)
            continue;
        if (f->one_file) {
            output_job job = { f, sections, shown };
            errno = 0;
            failed += write_file(&job, path, tell, ctx) != 0;
            continue;
        }
        for (uint32_t k = 0, s = 0; k < n; k++) {
            if (!(kind_shows(kinds[k], opt) & f->shows))
                continue;
            profile_output_name(path, kinds[k], shown > 1, name, sizeof name);
            output_job job = { f, &sections[s++], 1 };
            errno = 0;
            failed += write_file(&job, name, tell, ctx) != 0;
        }
    }
    return failed;
}
