/*
 * hprof-bci: run the class-file rewriter (src/bci) ahead of time over a
 * .class file, a jar/zip or a directory tree, writing the same kind of thing.
 *
 *   hprof-bci [--entry-exit] [--newarray] [--object-init] [--tracker NAME]
 *             [--ids FILE] [--quiet] INPUT OUTPUT
 *
 * Classes that the rewriter rejects are reported and copied unchanged; every
 * other file (or jar entry) is copied byte for byte, except jar signature
 * files, which are dropped because rewritten classes no longer match them.
 * Exit status: 0 all classes rewritten or left unchanged, 1 some class failed,
 * 2 usage error or a fatal I/O / archive error (the partial output file is
 * removed).
 *
 * Method ids come from one counter for the whole run, in the order classes
 * are processed (jar entries in archive order, directories sorted by name).
 * A class that ends up unchanged or failed gives its ids back, so the ids in
 * the output (and in --ids FILE) are dense: 0, 1, 2, ...
 *
 * This file: the command line (options, paths, main). The work is in
 * hprof_bci_files.c (class files, directories, one class's rewriting) and
 * hprof_bci_jar.c (jars); hprof_bci.h is what they share.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bci/bci.h"
#include "hprof_bci.h"

/* ------------------------------------------------------------ main */

#define SYNOPSIS \
    "usage: " PROG " [--entry-exit] [--newarray] [--object-init] [--tracker NAME]\n" \
    "                 [--ids FILE] [--quiet] INPUT OUTPUT\n"

static void usage(FILE *f)
{
    fprintf(f, SYNOPSIS
        "\n"
        "Inserts calls to the tracker class into every class of INPUT, which is a\n"
        ".class file, a .jar/.zip or a directory; OUTPUT is written as the same kind.\n"
        "Other files are copied; classes that cannot be rewritten are copied unchanged.\n"
        "\n"
        "  --entry-exit    NAME.methodEntry(I)V / methodExit(I)V around every method\n"
        "  --newarray      NAME.newArray(Ljava/lang/Object;)V after every array allocation\n"
        "  --object-init   NAME.objectInit(Ljava/lang/Object;)V in java/lang/Object.<init>\n"
        "                  (default if none of the three: --entry-exit --newarray)\n"
        "  --tracker NAME  tracker class, internal or dotted form (default " DEFAULT_TRACKER ")\n"
        "  --ids FILE      write '<id> <class> <method> <descriptor>' per method id\n"
        "  --quiet         no summary line\n"
        "\n"
        "Exit status: 0 ok, 1 some classes could not be rewritten, 2 usage or I/O error.\n");
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_msgv(fmt, ap);
    va_end(ap);
    fputs(SYNOPSIS "(" PROG " --help explains the options)\n", stderr);
    exit(2);
}

static bool has_suffix_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* realpath() of a path that may not exist yet: the deepest existing
 * ancestor resolved, the missing rest appended as given. */
static char *resolve_path(const char *path)
{
    strbuf abs = { 0 };
    if (path[0] == '/') {
        sb_printf(&abs, "%s", path);
    } else {
        char *cwd = realpath(".", NULL);
        if (!cwd)
            tool_fatal("cannot resolve the current directory: %s", strerror(errno));
        sb_printf(&abs, "%s/%s", cwd, path);
        free(cwd);
    }
    char *p = abs.p;
    size_t n = abs.len;
    for (;;) {
        char saved = p[n];
        p[n] = '\0';
        char *real = realpath(n ? p : "/", NULL);
        int e = errno;
        p[n] = saved;
        if (real) {
            strbuf b = { 0 };
            sb_printf(&b, "%s%s", real, p + n);
            free(real);
            free(abs.p);
            return b.p;
        }
        if (e != ENOENT || n == 0)
            tool_fatal("%s: cannot resolve path: %s", path, strerror(e));
        while (n > 0 && p[n - 1] != '/')    /* drop the last component */
            n--;
        while (n > 0 && p[n - 1] == '/')
            n--;
    }
}

/* OUTPUT must not lie inside INPUT (we would walk our own output). Checked
 * before anything is created. */
static void check_not_nested(const char *in_dir, const char *out_dir)
{
    char *in_real = resolve_path(in_dir), *out_real = resolve_path(out_dir);
    size_t n = strlen(in_real);
    if (strncmp(in_real, out_real, n) == 0 && out_real[n] == '/' &&
        out_real[n + 1] != '\0')
        tool_fatal("%s: OUTPUT is inside INPUT %s; choose a directory outside it", out_dir, in_dir);
    free(in_real);
    free(out_real);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "entry-exit",  no_argument,       NULL, 'e' },
        { "newarray",    no_argument,       NULL, 'a' },
        { "object-init", no_argument,       NULL, 'o' },
        { "tracker",     required_argument, NULL, 't' },
        { "ids",         required_argument, NULL, 'i' },
        { "quiet",       no_argument,       NULL, 'q' },
        { "help",        no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    unsigned what = 0;
    char *tracker = NULL;
    opterr = 0;                                 /* we print our own message */
    for (;;) {
        int c = getopt_long(argc, argv, "", longopts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'e': what |= BCI_ENTRY_EXIT; break;
        case 'a': what |= BCI_NEWARRAY; break;
        case 'o': what |= BCI_OBJECT_INIT; break;
        case 't':
            free(tracker);
            tracker = xstrdup(optarg);
            break;
        case 'i': tool_state.ids_path = optarg; break;
        case 'q': tool_state.quiet = true; break;
        case 'h': usage(stdout); return 0;
        default:
            if (optopt == 't' || optopt == 'i')
                usage_error("option --%s needs an argument", optopt == 't' ? "tracker" : "ids");
            if (optind > 1 && strncmp(argv[optind - 1], "--", 2) == 0)
                usage_error("option %s is unknown or needs an argument", argv[optind - 1]);
            usage_error("option -%c is unknown", optopt ? optopt : '?');
        }
    }
    if (argc - optind != 2)
        usage_error("expected INPUT and OUTPUT, got %d argument%s", argc - optind,
                    argc - optind == 1 ? "" : "s");
    const char *in_path = argv[optind], *out_path = argv[optind + 1];

    if (!what)
        what = BCI_ENTRY_EXIT | BCI_NEWARRAY;
    if (!tracker)
        tracker = xstrdup(DEFAULT_TRACKER);
    for (char *s = tracker; *s; s++)            /* accept com.x.Tracker too */
        if (*s == '.')
            *s = '/';
    if (!tracker[0] || tracker[0] == '/' || tracker[strlen(tracker) - 1] == '/' ||
        strstr(tracker, "//") || strpbrk(tracker, ";[<>"))
        usage_error("--tracker '%s' is not a class name (e.g. java/lang/HprofTracker)", tracker);
    tool_state.config.what = what;
    tool_state.config.tracker = tracker;
    /* Ids only matter for entry/exit calls; without them, leave the
     * library's default and write no ids. */
    tool_state.config.method_id = (what & BCI_ENTRY_EXIT) ? tool_next_method_id : NULL;
    tool_state.config.context = NULL;

    tool_state.umask = umask(0);
    umask(tool_state.umask);
    if (atexit(tool_remove_temp) != 0)
        tool_fatal("atexit failed");

    struct stat st;
    if (stat(in_path, &st) != 0)
        tool_fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
    enum { KIND_CLASS, KIND_JAR, KIND_DIR } kind;
    if (S_ISDIR(st.st_mode)) {
        kind = KIND_DIR;
    } else if (S_ISREG(st.st_mode)) {
        uint8_t magic[4] = { 0 };
        FILE *f = fopen(in_path, "rb");
        if (!f)
            tool_fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        size_t got = fread(magic, 1, sizeof magic, f);
        if (ferror(f))
            tool_fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        if (fclose(f) != 0)
            tool_fatal("%s: cannot read INPUT: %s", in_path, strerror(errno));
        bool zip = got == 4 && magic[0] == 'P' && magic[1] == 'K' &&
                   ((magic[2] == 3 && magic[3] == 4) || (magic[2] == 5 && magic[3] == 6));
        bool cafe = got == 4 && rd32(magic) == 0xbebafecau;
        if (cafe || (!zip && has_suffix_ci(in_path, ".class")))
            kind = KIND_CLASS;
        else if (zip || has_suffix_ci(in_path, ".jar") || has_suffix_ci(in_path, ".zip"))
            kind = KIND_JAR;        /* a .jar that is not a zip fails with a reason */
        else
            tool_fatal("%s: INPUT is not a .class file, a jar/zip or a directory", in_path);
    } else {
        tool_fatal("%s: INPUT is not a .class file, a jar/zip or a directory", in_path);
    }

    struct stat ost;
    bool out_exists = stat(out_path, &ost) == 0;
    if (kind != KIND_DIR && out_exists && S_ISDIR(ost.st_mode))
        tool_fatal("%s: OUTPUT is a directory; INPUT is a file, so give a file name", out_path);
    if (kind == KIND_DIR && out_exists && !S_ISDIR(ost.st_mode))
        tool_fatal("%s: OUTPUT exists and is not a directory; INPUT is a directory", out_path);

    if (tool_state.ids_path) {
        tool_state.ids = fopen(tool_state.ids_path, "w");
        if (!tool_state.ids)
            tool_fatal("%s: cannot write --ids file: %s", tool_state.ids_path, strerror(errno));
    }

    switch (kind) {
    case KIND_CLASS:
        tool_process_class_file(in_path, out_path, &st);
        break;
    case KIND_JAR:
        tool_process_jar(in_path, out_path, &st);
        break;
    case KIND_DIR:
        check_not_nested(in_path, out_path);
        {
            static dir_stack stack;
            tool_walk(in_path, out_path, &st, &stack);
        }
        break;
    }

    if (tool_state.ids && fclose(tool_state.ids) != 0)
        tool_fatal("%s: write failed: %s", tool_state.ids_path, strerror(errno));
    tool_state.ids = NULL;
    if (!tool_state.quiet)
        tool_msg("%lu classes rewritten, %lu unchanged, %lu failed", tool_state.rewritten, tool_state.unchanged,
            tool_state.failed);
    free(tracker);
    free(tool_state.pending_ids.p);
    return tool_state.failed ? 1 : 0;
}
