/*
 * Temporary files removed on every way out (see tempfiles.h).
 *
 * The table is static because the signal handler must reach it. Recording a
 * file and creating it happen with the handled signals blocked, so the
 * handler never sees a half-written path nor misses a file that exists; the
 * handler itself only calls unlink() and raise(), which are async-signal-safe.
 */
#include "cli/tempfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The reply file and the trigger file, with room to spare. */
#define MAX_TEMPFILES 4

static struct {
    volatile sig_atomic_t in_use;
    char path[PATH_MAX];
} tempfiles[MAX_TEMPFILES];

static const int handled_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void remove_recorded_files(void)
{
    for (int i = 0; i < MAX_TEMPFILES; i++) {
        if (tempfiles[i].in_use) {
            unlink(tempfiles[i].path);
            tempfiles[i].in_use = 0;
        }
    }
}

static void on_fatal_signal(int sig)
{
    int saved_errno = errno;
    remove_recorded_files();
    /* SA_RESETHAND restored the default action; the signal is blocked while
     * we run, so it ends the process as soon as the handler returns. */
    raise(sig);
    errno = saved_errno;
}

void tempfiles_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++)
        sigaddset(&sa.sa_mask, handled_signals[i]);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++)
        sigaction(handled_signals[i], &sa, NULL);
}

int tempfiles_dir_path(const char *dir, const char *name, char *out, size_t out_size)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int n = snprintf(out, out_size, "/proc/self/fd/%d/%s", fd, name);
    if (n < 0 || (size_t)n >= out_size) {
        close(fd);
        errno = ENAMETOOLONG;
        return -1;
    }
    return fd;
}

static void block_handled_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++)
        sigaddset(&set, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

static void restore_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

static int free_slot(void)
{
    for (int i = 0; i < MAX_TEMPFILES; i++)
        if (!tempfiles[i].in_use)
            return i;
    return -1;
}

/* With signals blocked: records path (shorter than PATH_MAX, checked by the
 * callers) in slot, marking the slot in use last. */
static void record(int slot, const char *path)
{
    memcpy(tempfiles[slot].path, path, strlen(path) + 1);
    tempfiles[slot].in_use = 1;
}

/* How a file is made: mkostemp (fills in the template) or an exclusive open. */
typedef struct maker {
    int    exclusive;                 /* 0: mkostemp on the path; 1: open O_EXCL */
    mode_t mode;
} maker;

/* Make the file at path and record it, with the handled signals blocked, so
 * that a signal cannot come between making it and knowing to remove it. */
static int make_tracked(char *path, const maker *how)
{
    if (strlen(path) >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    sigset_t old;
    block_handled_signals(&old);
    int slot = free_slot();
    int fd = -1;
    if (slot < 0) {
        errno = EMFILE;
    } else {
        fd = how->exclusive ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, how->mode)
                            : mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            record(slot, path);
    }
    int saved_errno = errno;
    restore_signals(&old);
    errno = saved_errno;
    return fd;
}

int tempfiles_mkstemp(char *path_template)
{
    maker how = { 0, 0 };
    return make_tracked(path_template, &how);
}

int tempfiles_create(const char *path, mode_t mode)
{
    char copy[PATH_MAX];
    if (strlen(path) >= sizeof copy) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(copy, path);
    maker how = { 1, mode };
    return make_tracked(copy, &how);
}

void tempfiles_remove(const char *path)
{
    sigset_t old;
    block_handled_signals(&old);
    for (int i = 0; i < MAX_TEMPFILES; i++) {
        if (tempfiles[i].in_use && strcmp(tempfiles[i].path, path) == 0) {
            unlink(tempfiles[i].path);
            tempfiles[i].in_use = 0;
        }
    }
    restore_signals(&old);
}

void tempfiles_remove_all(void)
{
    sigset_t old;
    block_handled_signals(&old);
    remove_recorded_files();
    restore_signals(&old);
}
