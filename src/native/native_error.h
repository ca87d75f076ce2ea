/* native_error: the one way the readers of src/native write their messages:
 * into the caller's buffer, if it gave one. */
#ifndef HPROF_NATIVE_ERROR_H
#define HPROF_NATIVE_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void native_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void native_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif
