/* jvm_list.c: see jvm_list.h. */
#include "cli/jvm_list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The java launcher's options that take the next word as their value. */
static int takes_value(const char *word)
{
    static const char *const with_value[] = { "-cp", "-classpath", "--class-path", "-p", "--module-path",
                                              "--upgrade-module-path", "--add-modules", "--limit-modules",
                                              "--add-reads", "--add-exports", "--add-opens",
                                              "--patch-module", "--enable-native-access", "--source" };
    for (size_t i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
        if (strcmp(word, with_value[i]) == 0)
            return 1;
    return 0;
}

int jvm_main_name(const char *cmdline, size_t len, char *out, size_t size)
{
    if (size == 0)
        return -1;
    out[0] = '\0';
    size_t at = 0;
    int first = 1, want = 0;          /* want: 1 the main class, 2 a jar, 3 a module */
    while (at < len) {
        const char *word = cmdline + at;
        size_t n = strnlen(word, len - at);
        at += n + 1;
        if (first) {                  /* the launcher itself */
            first = 0;
            continue;
        }
        if (n == 0)
            continue;
        char w[4096];
        if (n >= sizeof w)
            continue;
        memcpy(w, word, n);
        w[n] = '\0';
        if (want == 0 && w[0] == '-') {
            if (strcmp(w, "-jar") == 0)
                want = 2;
            else if (strcmp(w, "-m") == 0 || strcmp(w, "--module") == 0)
                want = 3;
            else if (strncmp(w, "--module=", 9) == 0) {
                snprintf(out, size, "%s", w + 9);
                return 0;
            } else if (takes_value(w) && at < len)
                at += strnlen(cmdline + at, len - at) + 1;   /* its value */
            continue;
        }
        if (want == 2) {
            const char *slash = strrchr(w, '/');
            snprintf(out, size, "%s", slash ? slash + 1 : w);
        } else {
            snprintf(out, size, "%s", w);
        }
        return 0;
    }
    return -1;
}

/* The pids of /tmp/hsperfdata_<user>/ (every user's directory), deduplicated
 * and sorted; only processes that exist. */
static int compare_pids(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int jvm_list(jvm_entry **out)
{
    *out = NULL;
    DIR *tmp = opendir("/tmp");
    if (tmp == NULL)
        return -1;
    pid_t *pids = NULL;
    size_t n = 0, cap = 0;
    struct dirent *d;
    while ((d = readdir(tmp)) != NULL) {
        if (strncmp(d->d_name, "hsperfdata_", 11) != 0)
            continue;
        char dir_path[300];
        snprintf(dir_path, sizeof dir_path, "/tmp/%s", d->d_name);
        DIR *users = opendir(dir_path);
        if (users == NULL)
            continue;                 /* another user's: not ours to attach to */
        struct dirent *f;
        while ((f = readdir(users)) != NULL) {
            char *end;
            long pid = strtol(f->d_name, &end, 10);
            if (*end != '\0' || pid <= 0 || end == f->d_name)
                continue;
            if (n == cap) {
                size_t grown_cap = cap ? cap * 2 : 16;
                pid_t *grown = realloc(pids, grown_cap * sizeof *grown);
                if (grown == NULL)
                    break;
                pids = grown;
                cap = grown_cap;
            }
            pids[n++] = (pid_t)pid;
        }
        closedir(users);
    }
    closedir(tmp);
    if (n > 1)
        qsort(pids, n, sizeof *pids, compare_pids);
    jvm_entry *list = calloc(n ? n : 1, sizeof *list);
    if (list == NULL) {
        free(pids);
        return -1;
    }
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && pids[i] == pids[i - 1])
            continue;
        char path[64], cmdline[8192];
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pids[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;                 /* a stale file: the JVM is gone */
        ssize_t got = read(fd, cmdline, sizeof cmdline);
        close(fd);
        if (got <= 0)
            continue;
        list[count].pid = pids[i];
        jvm_main_name(cmdline, (size_t)got, list[count].main, sizeof list[count].main);
        count++;
    }
    free(pids);
    *out = list;
    return count;
}

int jvm_matches(const jvm_entry *jvm, const char *what)
{
    char digits[16];
    snprintf(digits, sizeof digits, "%d", (int)jvm->pid);
    if (strcmp(what, digits) == 0)
        return 1;
    if (jvm->main[0] == '\0')
        return 0;
    if (strcmp(what, jvm->main) == 0)
        return 1;
    const char *simple = strrchr(jvm->main, '.');
    size_t len = strlen(jvm->main);
    if (len > 4 && strcmp(jvm->main + len - 4, ".jar") == 0)
        return strncmp(what, jvm->main, len - 4) == 0 && what[len - 4] == '\0';
    const char *slash = strrchr(jvm->main, '/');
    if (slash && strcmp(what, slash + 1) == 0)
        return 1;
    return simple != NULL && strcmp(what, simple + 1) == 0;
}
