/* output_file.c: see output_file.h. */
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
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

int output_file_open(const char *name, int force, char format, FILE **out,
                     char *path, size_t path_size, char *err, size_t errlen)
{
    snprintf(path, path_size, "%s", name);
    int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    if (!force) {
        if (access(name, F_OK) == 0)
            output_file_unique_name(name, format, (long)getpid(), path, path_size);
        flags |= O_EXCL;          /* never overwrite with force=n */
        flags &= ~O_TRUNC;
    }
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "hprof: cannot create the output file '%s' (option file=): %s; "
                 "give a writable path with file=<path>%s", path, strerror(errno),
                 force ? "" : " or use force=y to overwrite");
        return -1;
    }
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
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "hprof: cannot create '%s' (option %s=): %s; give a writable path",
                 path, option, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}
