/*
 * output_file: choosing and opening the profile file (file=, force=).
 * Opened at start-up so that an unwritable path stops the JVM at once,
 * with a message naming the option, instead of losing the profile at exit.
 */
#ifndef HPROF_OUTPUT_FILE_H
#define HPROF_OUTPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

/* force=y: create or truncate `name`. force=n: if `name` exists, keep it and
 * use HPROF's unique name instead: <name without .txt>.<pid>.txt for text,
 * <name>.<pid> for binary. The name used is copied to path. 0 on success,
 * -1 with a message in err. */
int output_file_open(const char *name, int force, char format, FILE **out,
                     char *path, size_t path_size, char *err, size_t errlen);

/* The name force=n falls back to (pure; for tests). */
void output_file_unique_name(const char *name, char format, long pid, char *buf, size_t size);

/* Can `path` be created or written? (Creates it if absent.) */
int output_file_check_writable(const char *path, const char *option, char *err, size_t errlen);

#endif
