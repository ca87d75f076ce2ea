/* The bci fuzz target (fuzz_bci.c), shared by the libFuzzer build and the
 * standalone driver (fuzz_main.c). */
#ifndef HPROF_FUZZ_BCI_H
#define HPROF_FUZZ_BCI_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Outcomes of every bci_rewrite call so far, so a run can show that inputs
 * get past the parser (all-errors would mean the mutations are too crude). */
typedef struct fuzz_bci_stats {
    unsigned long ok, unchanged, error;
} fuzz_bci_stats;

extern fuzz_bci_stats fuzz_bci_counts;

#endif
