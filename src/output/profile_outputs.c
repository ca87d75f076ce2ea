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

#include "../profile/collapsed.h"
#include "../profile/flamegraph_writer.h"
#include "../profile/jfr_writer.h"
#include "../profile/pprof_writer.h"

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

/* The options that write a file per profile, and their paths. */
typedef struct per_profile_option {
    const char *name;
    const char *path;
} per_profile_option;

static uint32_t per_profile_options(const hprof_options *opt, per_profile_option out[2])
{
    uint32_t n = 0;
    if (opt->pprof[0])
        out[n++] = (per_profile_option){ "pprof", opt->pprof };
    if (opt->collapsed[0])
        out[n++] = (per_profile_option){ "collapsed", opt->collapsed };
    return n;
}

int profile_outputs_check(const hprof_options *opt, const char *const *kinds, uint32_t n,
                          char *err, size_t errlen)
{
    per_profile_option o[2];
    uint32_t no = per_profile_options(opt, o);
    char name[NAME_MAX_LEN];
    for (uint32_t i = 0; i < no; i++)
        for (uint32_t k = 0; k < n; k++) {
            profile_output_name(o[i].path, kinds[k], n > 1, name, sizeof name);
            if (output_file_check_writable(name, o[i].name, err, errlen) != 0)
                return -1;
        }
    if (opt->flamegraph[0] && output_file_check_writable(opt->flamegraph, "flamegraph", err, errlen) != 0)
        return -1;
    if (opt->jfr[0] && output_file_check_writable(opt->jfr, "jfr", err, errlen) != 0)
        return -1;
    return 0;
}

/* What one output file holds. */
typedef struct output_job {
    const char         *option;
    const kind_profile *profiles;       /* flamegraph, jfr: all of them; else one */
    uint32_t            n;
} output_job;

static int write_job(const output_job *job, FILE *f, char *why, size_t whylen)
{
    if (strcmp(job->option, "pprof") == 0)
        return pprof_write(job->profiles[0].profile, f, why, whylen);
    if (strcmp(job->option, "jfr") == 0) {
        const profile *all[16];
        uint32_t n = job->n < 16 ? job->n : 16;
        for (uint32_t i = 0; i < n; i++)
            all[i] = job->profiles[i].profile;
        return jfr_write(all, n, f, why, whylen);
    }
    if (strcmp(job->option, "collapsed") == 0) {
        const profile *p = job->profiles[0].profile;
        return collapsed_write_profile(p, profile_default_value(p), f);
    }
    flamegraph_section sections[8];
    uint32_t n = job->n < 8 ? job->n : 8;
    for (uint32_t i = 0; i < n; i++) {
        const profile *p = job->profiles[i].profile;
        sections[i] = (flamegraph_section){ profile_title(p), p, profile_default_value(p), NULL, NULL, NULL };
    }
    return flamegraph_write_page(f, "hprof", sections, n);
}

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
        bad = write_job(job, f, why, sizeof why) != 0;
        bad |= fclose(f) != 0;
        bad = bad || rename(tmp, path) != 0;
    }
    if (bad) {
        if (why[0] == '\0')
            snprintf(why, sizeof why, "%s", errno ? strerror(errno) : "out of memory");
        snprintf(line, sizeof line, "hprof: cannot write %s (option %s=): %s; choose a writable "
                 "path with room to spare", path, job->option, why);
        if (f)
            unlink(tmp);
        tell(ctx, 1, line);
        return -1;
    }
    snprintf(line, sizeof line, "hprof: %s= written to %s", job->option, path);
    tell(ctx, 0, line);
    return 0;
}

int profile_outputs_write(const hprof_options *opt, const kind_profile *profiles, uint32_t n,
                          outputs_tell tell, void *ctx)
{
    int failed = 0;
    per_profile_option o[2];
    uint32_t no = per_profile_options(opt, o);
    char name[NAME_MAX_LEN];
    for (uint32_t i = 0; i < no; i++)
        for (uint32_t k = 0; k < n; k++) {
            profile_output_name(o[i].path, profiles[k].kind, n > 1, name, sizeof name);
            output_job job = { o[i].name, &profiles[k], 1 };
            errno = 0;
            failed += write_file(&job, name, tell, ctx) != 0;
        }
    if (opt->flamegraph[0] && n > 0) {
        output_job job = { "flamegraph", profiles, n };
        errno = 0;
        failed += write_file(&job, opt->flamegraph, tell, ctx) != 0;
    }
    /* jfr=: every profile in one recording, at exactly its path. */
    if (opt->jfr[0] && n > 0) {
        output_job job = { "jfr", profiles, n };
        errno = 0;
        failed += write_file(&job, opt->jfr, tell, ctx) != 0;
    }
    return failed;
}
