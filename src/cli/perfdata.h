/*
 * A reader for HotSpot's performance-data memory (the hsperfdata file,
 * /tmp/hsperfdata_<user>/<pid>, that jstat and jps read), limited to what
 * build/hprof needs: one string counter, sun.rt.jvmCapabilities, whose first
 * character says whether the JVM's attach mechanism is enabled.
 *
 * It works on a byte buffer (a copy of the file), checks every offset and
 * length against the buffer before using it, so it is unit-tested on
 * synthetic and damaged buffers (tests/unit/test_attach.c).
 */
#ifndef HPROF_CLI_PERFDATA_H
#define HPROF_CLI_PERFDATA_H

#include <stddef.h>

typedef enum {
    PERFDATA_FOUND     = 0,  /* the string counter was found; value holds it */
    PERFDATA_NOT_FOUND = 1,  /* a well-formed buffer without that counter */
    PERFDATA_NOT_READY = 2,  /* the JVM has not finished writing the prologue */
    PERFDATA_MALFORMED = -1  /* not hsperfdata, or damaged/truncated; why says what */
} perfdata_status;

/*
 * Looks up the string counter `name` (e.g. "sun.rt.jvmCapabilities") in the
 * hsperfdata bytes buf[0..size) and copies its value, NUL-terminated and
 * truncated to value_size - 1 bytes, into value. On PERFDATA_MALFORMED a
 * one-line reason is written to why (which may be NULL).
 */
perfdata_status perfdata_find_string(const unsigned char *buf, size_t size, const char *name,
                                     char *value, size_t value_size, char *why, size_t why_size);

#endif
