/*
 * output_file: choosing and opening the profile file (file=, force=), and
 * the safe creation of every file the agent writes.
 * Opened at start-up so that an unwritable path stops the JVM at once,
 * with a message naming the option, instead of losing the profile at exit.
 *
 * The rules: a symbolic link at the output path is never followed (O_NOFOLLOW:
 * refused, even dangling), only a regular file is written (a directory, a
 * pipe or a device is refused), files holding heap dumps are 0600 (as
 * `jcmd GC.heap_dump`), other files 0666 less the umask and never
 * world-writable; an existing file overwritten is narrowed to the same mode.
 */
#ifndef HPROF_OUTPUT_FILE_H
#define HPROF_OUTPUT_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* force=y: create or truncate `name`. force=n: if `name` exists, keep it and
 * use HPROF's unique name instead: <name without .txt>.<pid>.txt for text,
 * <name>.<pid> for binary. private_data: the file will hold a heap dump
 * (mode 0600). The name used is copied to path. 0 on success, -1 with a
 * message in err. */
int output_file_open(const char *name, int force, char format, int private_data, FILE **out,
                     char *path, size_t path_size, char *err, size_t errlen);

/* The name force=n falls back to (pure; for tests). */
void output_file_unique_name(const char *name, char format, long pid, char *buf, size_t size);

/* Can `path` be created or written? (Creates it if absent, never truncates.) */
int output_file_check_writable(const char *path, const char *option, char *err, size_t errlen);

/* How output_file_create treats the file. */
typedef enum {
    OUTPUT_CREATE_KEEP,         /* create if absent, keep the content */
    OUTPUT_CREATE_TRUNC,        /* create if absent, else empty it */
    OUTPUT_CREATE_EXCL          /* create; fail if anything is there */
} output_create_how;

/* Open `path` for writing under the rules above; option names the option at
 * fault in messages ("file", "pprof", ...), hint is added to the advice of a
 * plain failure (may be ""). The descriptor (O_CLOEXEC, blocking), or -1
 * with a message in err and errno set. */
int output_file_create(const char *path, output_create_how how, int private_data,
                       const char *option, const char *hint, char *err, size_t errlen);

/* The permission bits of an output file (pure): 0600 for private data, else
 * 0666 & ~mask without o+w. */
mode_t output_file_mode(int private_data, mode_t mask);

/* The process's umask, read without changing it (from /proc/self/status;
 * 022 if that cannot be read). */
mode_t output_file_umask(void);

#endif
