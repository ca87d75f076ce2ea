/*
 * profile_outputs: the files pprof=, flamegraph=, collapsed= and jfr= name,
 * written at each dump from the profiles the collectors' snapshots give.
 *
 * pprof= and collapsed= write one file per profile: with one profile,
 * exactly the path given; with several (cpu=samples and heap=sites, ...),
 * the path with the profile's kind before its extension
 * (prof.pb.gz -> prof.cpu.pb.gz, prof.alloc.pb.gz). flamegraph= writes one
 * page with a graph per profile. jfr= writes every profile as one JFR
 * recording (src/profile/jfr_writer.h). Each file is written beside its final
 * name and renamed over it, so a reader never sees half a file.
 *
 * Pure C (no JVMTI): the orchestrator hands in the profiles.
 */
#ifndef HPROF_PROFILE_OUTPUTS_H
#define HPROF_PROFILE_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "../options/options.h"
#include "../profile/profile.h"

typedef struct kind_profile {
    const char    *kind;        /* "cpu", "alloc", "lock": in file names */
    const profile *profile;
} kind_profile;

/* The file for a profile of `kind`: `path` when it is the only profile
 * (several == 0), else `path` with ".kind" before its extension: the last
 * one, or ".pb.gz" / ".txt.gz" whole; after the name when it has none. */
void profile_output_name(const char *path, const char *kind, int several, char *out, size_t size);

/* At start-up: can every file these options name be written, for
 * profiles of these kinds? 0, or -1 with a message naming the option. */
int profile_outputs_check(const hprof_options *opt, const char *const *kinds, uint32_t n,
                          char *err, size_t errlen);

/* Write every output the options ask for. `tell` gets one line per
 * problem (error = 1, naming the option and the file) and, with error = 0,
 * one per file written. Returns the number of files that could not be
 * written. */
typedef void (*outputs_tell)(void *ctx, int error, const char *line);
int profile_outputs_write(const hprof_options *opt, const kind_profile *profiles, uint32_t n,
                          outputs_tell tell, void *ctx);

#endif
