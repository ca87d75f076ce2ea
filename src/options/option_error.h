/* option_error: the one way the option parsers (options.c, class_filter.c)
 * write their messages: into the caller's buffer, if it gave one. */
#ifndef HPROF_OPTION_ERROR_H
#define HPROF_OPTION_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif
