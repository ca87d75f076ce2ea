/* What every fuzz target (tests/fuzz/fuzz_*.c) gives the standalone driver
 * (fuzz_main.c); the libFuzzer builds use only LLVMFuzzerTestOneInput. */
#ifndef HPROF_FUZZ_TARGET_H
#define HPROF_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The target's name, for messages ("fuzz_bci"). */
extern const char fuzz_target_name[];

/* Tokens the driver splices into inputs (option names, record tags, ...),
 * NULL-terminated; an empty list leaves only the byte-level mutations. */
extern const char *const fuzz_target_dictionary[];

/* One line on the outcomes so far (accepted, rejected, ...), so a run shows
 * that inputs get past the first checks: all-rejected would mean the
 * mutations are too crude to test anything. */
void fuzz_target_stats(char *buf, size_t size);

/* A contract violation is a bug: abort so the driver saves the input. */
#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s: contract violated at %s:%d: %s\n", fuzz_target_name, \
                    __FILE__, __LINE__, #cond);                                      \
            abort();                                                                 \
        }                                                                            \
    } while (0)

#endif
