/*
 * jvm_list: the JVMs on this machine that `hprof profile` and `hprof list`
 * can name, found as jcmd finds them (the hsperfdata files HotSpot keeps in
 * /tmp/hsperfdata_<user>/<pid>), and what each runs: its main class, or the
 * jar or module it was started with, read from /proc/<pid>/cmdline.
 *
 * jvm_main_name is pure (bytes in, a name out) and unit-tested; the rest
 * reads /proc and /tmp.
 */
#ifndef HPROF_CLI_JVM_LIST_H
#define HPROF_CLI_JVM_LIST_H

#include <stddef.h>
#include <sys/types.h>

typedef struct jvm_entry {
    pid_t pid;
    char  main[256];       /* "app.Main", "app.jar", "mod/app.Main"; "" if unknown */
} jvm_entry;

/* What the java command line (NUL-separated words, as /proc/<pid>/cmdline
 * holds them, len bytes) runs: the main class (after the JVM's options and
 * their values: -cp X, --module-path X, ...), the jar of -jar (its file
 * name, without directories), or the module/class of -m. 0, or -1 if it
 * names none (out is then ""). */
int jvm_main_name(const char *cmdline, size_t len, char *out, size_t size);

/* The JVMs this user may attach to (root: every user's), ordered by pid,
 * into a malloc'ed array (*out, free it). The count, or -1 on an error
 * (errno set). Processes that vanish while being read are left out. */
int jvm_list(jvm_entry **out);

/* Whether `what` names this JVM: its pid in digits, its main class whole
 * or its simple name (Main for app.Main), or its jar's file name with or
 * without ".jar". */
int jvm_matches(const jvm_entry *jvm, const char *what);

#endif
