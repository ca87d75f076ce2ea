/* jvm_args: see jvm_args.h. */
#include "jvm_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An argument file or /proc/self/cmdline larger than this is read only this far. */
#define JVM_ARGS_READ_MAX (1u << 20)

static int is_separator(char c)
{
    return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Quotes around an argument (JAVA_TOOL_OPTIONS and argument files allow them). */
static int is_quote(char c)
{
    return c == '"' || c == '\'';
}

static int starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static void copy_out(char *found, size_t size, const char *s, size_t len)
{
    if (size == 0)
        return;
    if (len >= size)
        len = size - 1;
    memcpy(found, s, len);
    found[len] = '\0';
}

/* len bytes of one argument, quotes stripped: the debugger option's name
 * length (up to its own options) if it loads one, else 0. */
static size_t debugger_option(const char *arg, size_t len)
{
    static const char agentlib[] = "-agentlib:jdwp", xrun[] = "-Xrunjdwp", agentpath[] = "-agentpath:";
    if (starts_with(arg, len, agentlib) && (len == sizeof agentlib - 1 || arg[sizeof agentlib - 1] == '='))
        return sizeof agentlib - 1;
    if (starts_with(arg, len, xrun) && (len == sizeof xrun - 1 || arg[sizeof xrun - 1] == ':'))
        return sizeof xrun - 1;
    if (!starts_with(arg, len, agentpath))
        return 0;
    const char *eq = memchr(arg, '=', len);
    size_t path_len = eq ? (size_t)(eq - arg) : len;
    const char *base = arg + sizeof agentpath - 1;
    for (const char *p = base; p < arg + path_len; p++)
        if (*p == '/')
            base = p + 1;
    return starts_with(base, (size_t)(arg + path_len - base), "libjdwp.") ? path_len : 0;
}

/* A whole file, NUL-terminated (cut at JVM_ARGS_READ_MAX); NULL if unreadable. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = malloc(JVM_ARGS_READ_MAX + 1);
    if (text != NULL) {
        *len = fread(text, 1, JVM_ARGS_READ_MAX, f);
        text[*len] = '\0';
    }
    fclose(f);
    return text;
}

/* An option that matches: its name's length (up to its own options), else 0. */
typedef size_t (*option_match)(const char *arg, size_t len);

static int find_option(const char *args, size_t len, int read_argfiles, option_match match, char *found,
                       size_t size);

static int find_in_argfile(const char *name, size_t name_len, option_match match, char *found, size_t size)
{
    char path[4096];
    if (name_len == 0 || name_len >= sizeof path || name[0] == '@')   /* "@@...": not a file */
        return 0;
    memcpy(path, name, name_len);
    path[name_len] = '\0';
    size_t len = 0;
    char *text = read_file(path, &len);
    if (text == NULL)
        return 0;
    int hit = find_option(text, len, 0, match, found, size);
    free(text);
    return hit;
}

static int find_option(const char *args, size_t len, int read_argfiles, option_match match, char *found,
                       size_t size)
{
    size_t at = 0;
    while (at < len) {
        while (at < len && (is_separator(args[at]) || is_quote(args[at])))
            at++;
        size_t start = at;
        while (at < len && !is_separator(args[at]) && !is_quote(args[at]))
            at++;
        const char *arg = args + start;
        size_t arg_len = at - start;
        size_t name_len = match(arg, arg_len);
        if (name_len) {
            copy_out(found, size, arg, name_len);
            return 1;
        }
        if (read_argfiles && arg_len > 1 && arg[0] == '@' &&
            find_in_argfile(arg + 1, arg_len - 1, match, found, size))
            return 1;
    }
    return 0;
}

int jvm_args_find_debugger(const char *args, size_t len, int read_argfiles, char *found, size_t size)
{
    return find_option(args, len, read_argfiles, debugger_option, found, size);
}

/* -XX:+UseZGC (ergonomics never picks ZGC: it is always asked for). */
static size_t zgc_option(const char *arg, size_t len)
{
    static const char zgc[] = "-XX:+UseZGC";
    return len == sizeof zgc - 1 && starts_with(arg, len, zgc) ? len : 0;
}

int jvm_args_find_zgc(const char *args, size_t len, int read_argfiles, char *found, size_t size)
{
    return find_option(args, len, read_argfiles, zgc_option, found, size);
}

/* The process's command line (and its @files), then the launcher's and
 * the JVM's environment variables. */
static int jvm_started_with(option_match match, char *found, size_t size)
{
    char option[256];
    size_t len = 0;
    char *cmdline = read_file("/proc/self/cmdline", &len);
    int hit = cmdline != NULL && find_option(cmdline, len, 1, match, option, sizeof option);
    free(cmdline);
    if (hit) {
        snprintf(found, size, "%s on the command line", option);
        return 1;
    }
    static const char *const variables[] = { "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS" };
    for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++) {
        const char *value = getenv(variables[i]);
        if (value && find_option(value, strlen(value), 1, match, option, sizeof option)) {
            snprintf(found, size, "%s in %s", option, variables[i]);
            return 1;
        }
    }
    return 0;
}

int jvm_loads_debugger(char *found, size_t size)
{
    return jvm_started_with(debugger_option, found, size);
}

int jvm_uses_zgc(char *found, size_t size)
{
    return jvm_started_with(zgc_option, found, size);
}
