/*
 * Files build/hprof creates for a moment (the reply file, the .attach_pid
 * trigger) must not outlive it, also when it is interrupted: each is recorded
 * here as it is created, and removed by tempfiles_remove(), by
 * tempfiles_remove_all() on the way out, or by the handler of SIGINT, SIGTERM
 * and SIGHUP, which removes every recorded file and then lets the signal end
 * the process as it would have.
 */
#ifndef HPROF_CLI_TEMPFILES_H
#define HPROF_CLI_TEMPFILES_H

#include <stddef.h>
#include <sys/types.h>

/* Installs the signal handlers. Call once, before creating any file. */
void tempfiles_init(void);

/* Opens the directory dir (O_PATH) and writes into out the path
 * /proc/self/fd/<fd>/<name>, under which a file in it stays reachable for as
 * long as the descriptor is open, even when dir itself can no longer be
 * resolved: the JVM's /proc/<pid>/cwd and /proc/<pid>/root vanish when it
 * exits, and its files must still be removed. Returns the descriptor, to
 * close once the file is removed, or -1 with errno set. */
int tempfiles_dir_path(const char *dir, const char *name, char *out, size_t out_size);

/* mkstemp(path_template) (mode 0600), the path recorded: an open descriptor,
 * or -1 with errno set. */
int tempfiles_mkstemp(char *path_template);

/* Creates path, which must not exist (O_EXCL, no symlink followed), with
 * mode, and records it: an open descriptor, or -1 with errno set (EEXIST if
 * it existed: then it is not recorded, as it is not ours to remove). */
int tempfiles_create(const char *path, mode_t mode);

/* Removes a recorded file and forgets it; paths not recorded are left alone. */
void tempfiles_remove(const char *path);

/* Removes every recorded file. */
void tempfiles_remove_all(void);

#endif
