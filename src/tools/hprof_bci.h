/*
 * hprof_bci.h (private to src/tools/hprof_bci*.c): what the command line
 * (hprof_bci.c), the files and directories (hprof_bci_files.c) and the jars
 * (hprof_bci_jar.c) of hprof-bci share: the run's state and counters,
 * messages, growable buffers, output files and the rewriting of one class.
 */
#ifndef HPROF_BCI_TOOL_H
#define HPROF_BCI_TOOL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bci/bci.h"

#define PROG            "hprof-bci"
#define DEFAULT_TRACKER "java/lang/HprofTracker"
/* Largest class we read or inflate. Class files are far smaller in practice;
 * the cap keeps a corrupt size field from turning into a huge allocation. */
#define CLASS_CAP       ((size_t)64 << 20)
#define MAX_DEPTH       256     /* directory nesting */

typedef struct strbuf {
    char  *p;
    size_t len, cap;
} strbuf;

/* The run: options, the method id counter and the outcome counts. */
struct tool_state {
    bci_config    config;
    bool          quiet;
    const char   *ids_path;
    FILE         *ids;
    int32_t       next_id;
    strbuf        pending_ids;  /* --ids lines of the class being rewritten */
    unsigned long rewritten, unchanged, failed;
    char         *temp_path;    /* output being written, removed on early exit */
    mode_t        umask;
};
extern struct tool_state tool_state;

/* Messages on stderr, prefixed with PROG; tool_fatal exits with status 2. */
void tool_msgv(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void tool_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tool_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The atexit handler: removes a half-written output file. */
void tool_remove_temp(void);

/* Allocation that exits on failure, growable buffers, little-endian reads
 * and writes (zip fields), for the jar code and the command line. */
void *xmalloc(size_t n);
char *xstrdup(const char *s);
void sb_append(strbuf *b, const void *data, size_t n);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool ends_with(const char *s, size_t len, const char *suffix);
uint16_t rd16(const uint8_t *p);
uint32_t rd32(const uint8_t *p);
void put16(strbuf *b, uint16_t v);
void put32(strbuf *b, uint32_t v);

/* Output goes to a temporary file next to the target and is renamed into
 * place when complete, so a failed run never leaves a truncated jar/class
 * (and INPUT may equal OUTPUT). */
typedef struct out_file {
    FILE       *f;
    const char *path;       /* final name, for messages */
    uint64_t    off;        /* bytes written so far */
} out_file;

/* Written to a temporary file, renamed into place by out_commit (jars too). */
void out_open(out_file *o, const char *path);
void out_write(out_file *o, const void *p, size_t n);
void out_commit(out_file *o, mode_t mode);

/* bci_method_id_fn for bci_config (the command line sets it). */
int32_t tool_next_method_id(void *context, const bci_method_info *m);

typedef enum { CLASS_REWRITTEN, CLASS_UNCHANGED, CLASS_FAILED } class_outcome;

/* Rewrites one class of a .class file or a jar entry. */
class_outcome tool_rewrite_class(const char *label, const uint8_t *in, size_t len,
                                 uint8_t **out, size_t *out_len);

/* What INPUT can be: a .class file, a directory tree (hprof_bci_files.c),
 * a jar or zip (hprof_bci_jar.c). */
void tool_process_class_file(const char *in_path, const char *out_path, const struct stat *st);

/* The directories being walked, outermost first: a directory reached again
 * through a symbolic link is a loop and is skipped. */
typedef struct dir_stack {
    dev_t dev[MAX_DEPTH];
    ino_t ino[MAX_DEPTH];
    int   depth;
} dir_stack;

void tool_walk(const char *in_dir, const char *out_dir, const struct stat *dir_st,
               dir_stack *stack);
void tool_process_jar(const char *in_path, const char *out_path, const struct stat *st);

#endif
