/*
 * formats: the one table of output formats over the profile model
 * (src/profile/profile.h). The agent's options (name=FILE and help), the
 * agent's outputs at each dump (src/output/profile_outputs.c) and
 * `hprof convert --to NAME` (src/cli/analyze_convert.c) all read it, so a
 * new format is one entry in formats.c plus its writer (docs/formats.md,
 * "Adding a format").
 *
 * HPROF text and binary are not in it: they are the agent's file= (format=)
 * and are written from the collectors' rows (src/output/text_sections.h),
 * not from a profile.
 */
#ifndef HPROF_FORMATS_H
#define HPROF_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* The data a format can show, one bit per collector's profile. */
enum {
    FORMAT_SHOWS_CPU_SAMPLES = 1 << 0,   /* cpu=samples (profile kind "cpu") */
    FORMAT_SHOWS_CPU_TIMES   = 1 << 1,   /* cpu=times ("cpu") */
    FORMAT_SHOWS_ALLOC_SITES = 1 << 2,   /* heap=sites ("alloc") */
    FORMAT_SHOWS_MONITORS    = 1 << 3,   /* monitor=y ("lock" and "wait") */
    FORMAT_SHOWS_WALL        = 1 << 4,   /* wall= ("wall") */
    FORMAT_SHOWS_ALL         = (1 << 5) - 1,
};

/* One profile handed to a writer, with how a page heads it. */
typedef struct format_section {
    const profile *profile;
    const char    *title;       /* its heading (flame graph page) */
    const char    *note;        /* NULL, or what it lacks (cut stacks, ...), shown with it */
} format_section;

/* Write sections[0..n) to out (n is 1 unless the format is one_file).
 * page_title: the whole file's title where it has one. 0, or -1 with a
 * reason in why when there is more to say than a failed write. */
typedef int (*format_writer)(FILE *out, const char *page_title, const format_section *sections, uint32_t n,
                             char *why, size_t whylen);

typedef struct output_format {
    const char   *name;         /* the agent's option name=FILE, and convert --to NAME */
    const char   *extensions;   /* file name endings, ' ' between, the usual one first: ".pb.gz .pb" */
    const char   *help;         /* two lines for the agent's help: what it writes, for whom */
    unsigned      shows;        /* FORMAT_SHOWS_*: the profiles it can hold */
    const char   *shows_text;   /* shows not all: what it writes, e.g. "CPU samples only (...)" */
    int           one_file;     /* 1: every profile it shows in one file at the path given;
                                 * 0: a file per profile, with several the kind before the
                                 * extension (prof.pb.gz -> prof.cpu.pb.gz, prof.alloc.pb.gz) */
    format_writer write;
} output_format;

/* Room the options keep for paths, one per format: at least format_count(). */
#define FORMATS_MAX 8

uint32_t             format_count(void);
const output_format *format_at(uint32_t i);              /* NULL past the end */
const output_format *format_find(const char *name);      /* NULL if none is called so */
int                  format_index(const char *name);     /* -1 if none */
/* The format one of whose extensions ends path; NULL if none. */
const output_format *format_of_extension(const char *path);

/* "cpu=samples, cpu=times, heap=sites, monitor=y or wall=": the options
 * whose profiles `shows` holds, for messages. Returns buf. */
const char *format_shows_options(unsigned shows, char *buf, size_t size);

#endif
