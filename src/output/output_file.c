/* output_file.c: see output_file.h. */
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void output_file_unique_name(const char *name, char format, long pid, char *buf, size_t size)
{
    if (format == 'b') {
        snprintf(buf, size, "%s.%ld", name, pid);
        return;
    }
    /* As HPROF: a ".txt" ending moves after the pid, and text files end in .txt. */
    size_t len = strlen(name);
    if (len >= 4 && strcasecmp(name + len - 4, ".txt") == 0)
        len -= 4;
    snprintf(buf, size, "%.*s.%ld.txt", (int)len, name, pid);
}

mode_t output_file_mode(int private_data, mode_t mask)
{
    if (private_data)
        return S_IRUSR | S_IWUSR;
    return (mode_t)(0666 & ~mask & ~S_IWOTH);
}

mode_t output_file_umask(void)
{
    /* umask() both reads and sets: racy in a JVM full of threads. */
    mode_t mask = 022;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mask;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return mask;
    buf[n] = '\0';
    const char *line = strstr(buf, "\nUmask:");
    if (line) {
        char *end;
        unsigned long v = strtoul(line + 7, &end, 8);
        if (end != line + 7 && v <= 0777)
            mask = (mode_t)v;
    }
    return mask;
}

/* -1 with errno e, fd closed. */
static int fail(int fd, int e)
{
    if (fd >= 0)
        close(fd);
    errno = e;
    return -1;
}

int output_file_create(const char *path, output_create_how how, int private_data,
                       const char *option, const char *hint, char *err, size_t errlen)
{
    mode_t want = output_file_mode(private_data, output_file_umask());
    /* An agent option ("file") or a command's flag ("-o", build/hprof). */
    int flag = option[0] == '-';
    char what[64], give[80];
    snprintf(what, sizeof what, flag ? "%s" : "option %s=", option);
    snprintf(give, sizeof give, flag ? "%s <path>" : "%s=<path>", option);
    /* O_NONBLOCK: a FIFO at the path must not hang the JVM waiting for a reader. */
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    if (how == OUTPUT_CREATE_EXCL)
        flags |= O_EXCL;
    int fd = open(path, flags, private_data ? want : 0666);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            snprintf(err, errlen, "hprof: '%s' (%s) is a symbolic link; hprof does not follow "
                     "a link at its output path: remove the link or name the real file", path, what);
        else if (e == EISDIR || e == ENXIO)
            snprintf(err, errlen, "hprof: '%s' (%s) is not a regular file (%s); hprof writes "
                     "only regular files: name a file, not a %s", path, what,
                     e == EISDIR ? "a directory" : "a pipe or socket",
                     e == EISDIR ? "directory" : "pipe");
        else
            snprintf(err, errlen, "hprof: cannot create the output file '%s' (%s): %s; "
                     "give a writable path with %s%s", path, what, strerror(e), give, hint);
        return fail(-1, e);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "hprof: cannot examine the output file '%s' (%s): %s",
                 path, what, strerror(e));
        return fail(fd, e);
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "hprof: '%s' (%s) is not a regular file (%s); hprof writes only "
                 "regular files: name a file, not a %s", path, what,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                 ? "a device" : "a pipe or socket",
                 S_ISDIR(st.st_mode) ? "directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                 ? "device" : "pipe");
        return fail(fd, EINVAL);
    }
    /* A new file, or an old one overwritten: no permission beyond `want`
     * (an old file more private than that stays so). */
    mode_t mode = st.st_mode & 07777, narrowed = st.st_mode & want;
    if (mode != narrowed && fchmod(fd, narrowed) != 0) {
        int e = errno;
        snprintf(err, errlen, "hprof: cannot set the mode of '%s' (%s) to %04o: %s; remove the "
                 "file or name one of your own", path, what, (unsigned)narrowed, strerror(e));
        return fail(fd, e);
    }
    if (how == OUTPUT_CREATE_TRUNC && st.st_size != 0 && ftruncate(fd, 0) != 0) {
        int e = errno;
        snprintf(err, errlen, "hprof: cannot empty the output file '%s' (%s): %s; "
                 "give a writable path with %s%s", path, what, strerror(e), give, hint);
        return fail(fd, e);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        snprintf(err, errlen, "hprof: cannot open the output file '%s' (%s): %s",
                 path, what, strerror(e));
        return fail(fd, e);
    }
    return fd;
}

int output_file_open(const char *name, int force, char format, int private_data, FILE **out,
                     char *path, size_t path_size, char *err, size_t errlen)
{
    snprintf(path, path_size, "%s", name);
    output_create_how how = OUTPUT_CREATE_TRUNC;
    if (!force) {
        struct stat st;
        if (lstat(name, &st) == 0)        /* a link too: it is kept as it is */
            output_file_unique_name(name, format, (long)getpid(), path, path_size);
        how = OUTPUT_CREATE_EXCL;         /* never overwrite with force=n */
    }
    int fd = output_file_create(path, how, private_data, "file", force ? "" : " or use force=y to overwrite",
                                err, errlen);
    if (fd < 0)
        return -1;
    *out = fdopen(fd, "w");
    if (*out == NULL) {
        snprintf(err, errlen, "hprof: cannot open the output file '%s' (option file=): %s",
                 path, strerror(errno));
        close(fd);
        return -1;
    }
    return 0;
}

int output_file_check_writable(const char *path, const char *option, char *err, size_t errlen)
{
    int fd = output_file_create(path, OUTPUT_CREATE_KEEP, 0, option, "", err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}
