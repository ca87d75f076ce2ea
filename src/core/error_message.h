/* error_message: the one way the pure parsers (options, class filters, the
 * ELF and frame-table readers) write their messages: into the caller's
 * buffer, if it gave one. */
#ifndef HPROF_ERROR_MESSAGE_H
#define HPROF_ERROR_MESSAGE_H

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
