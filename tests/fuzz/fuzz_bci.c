/*
 * Fuzz target for the class-file rewriter: any bytes must be either rewritten,
 * left unchanged or rejected with a message, never read or written out of
 * bounds (the sanitizers catch that), and the API contract of bci.h must hold.
 * Built with libFuzzer (make fuzz-libfuzzer) or the standalone driver
 * fuzz_main.c (make fuzz).
 */
#include "fuzz_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bci/bci.h"

const char fuzz_target_name[] = "fuzz_bci";
const char *const fuzz_target_dictionary[] = { NULL };

/* Outcomes of every bci_rewrite call so far. */
static struct { unsigned long ok, unchanged, error; } fuzz_bci_counts;

void fuzz_target_stats(char *buf, size_t size)
{
    snprintf(buf, size, "rewrites: %lu ok, %lu unchanged, %lu rejected", fuzz_bci_counts.ok,
             fuzz_bci_counts.unchanged, fuzz_bci_counts.error);
}

#define TRACKER "java/lang/HprofTracker"

/* A contract violation is a bug: abort so the driver saves the input. */
#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "fuzz_bci: contract violated (flags %u): %s\n",      \
                    (unsigned)(what), #cond);                                    \
            abort();                                                             \
        }                                                                        \
    } while (0)

/* Method ids that take every encoding the rewriter may use for the int
 * constant (iconst, bipush, sipush, ldc) and skip some methods (< 0). */
static int32_t method_id(void *context, const bci_method_info *m)
{
    unsigned salt = *(const unsigned *)context;
    CHECK(m && m->class_name && m->name && m->descriptor, salt);
    /* Touch the strings: ASan reports them if they are not NUL-terminated. */
    volatile size_t n = strlen(m->class_name) + strlen(m->name) + strlen(m->descriptor);
    (void)n;
    switch ((m->index + salt) % 5) {
    case 0:  return (int32_t)(m->index & 3);
    case 1:  return 100 + (int32_t)m->index;
    case 2:  return 30000 + (int32_t)m->index;
    case 3:  return 0x7fff0000 + (int32_t)(m->index & 0xffff);
    default: return -1;
    }
}

/* The layout told: instructions in order, each inside the new code, none
 * overlapping (the layer maps single-step locations through it). */
static void layout(void *context, const bci_method_info *m, const bci_moved_insn *insns, uint32_t n,
                   uint32_t code_len)
{
    unsigned salt = *(const unsigned *)context;
    CHECK(m && m->class_name && m->name && m->descriptor && (insns || n == 0), salt);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(insns[i].new_len > 0 && insns[i].new_off + insns[i].new_len <= code_len, salt);
        CHECK(i == 0 || (insns[i].old_off > insns[i - 1].old_off &&
                         insns[i].new_off >= insns[i - 1].new_off + insns[i - 1].new_len), salt);
    }
}

/* Heap-allocated, exactly sized: ASan catches a write past err_len. */
static char *new_err(size_t len)
{
    char *e = malloc(len);
    if (!e)
        abort();
    memset(e, 'x', len);
    return e;
}

static void rewrite_once(const uint8_t *data, size_t size, unsigned what,
                         const char *class_name, int again)
{
    unsigned salt = what;
    bci_config config = {
        .what = what,
        .tracker = TRACKER,
        /* Odd combinations use the library's default ids. */
        .method_id = (what & 1) ? method_id : NULL,
        .context = &salt,
        .layout = (what & 2) ? layout : NULL,
    };
    size_t err_len = (what == 5) ? 12 : 256;      /* one combination: a tiny buffer */
    char *err = new_err(err_len);
    uint8_t *out = (uint8_t *)&salt;              /* must be overwritten */
    size_t out_len = 12345;
    bci_result r = bci_rewrite(data, size, &config, &out, &out_len, err, err_len);
    switch (r) {
    case BCI_OK: {
        fuzz_bci_counts.ok++;
        CHECK(out != NULL && out != (uint8_t *)&salt && out_len > 0, what);
        /* A rewritten class must still be a class, with the same name. */
        CHECK(class_name != NULL, what);
        /* (Full-size buffer: a malformed name may hold a 0 byte, so its
         * strlen says nothing about the length bci_class_name needs.) */
        static char name[65536 + 1];
        CHECK(bci_class_name(out, out_len, name, sizeof name) == 0, what);
        CHECK(strcmp(name, class_name) == 0, what);
        /* Feed the output back in once: exercises the parser on our own
         * output (its result may legitimately be an error, e.g. a limit). */
        if (again)
            rewrite_once(out, out_len, what, class_name, 0);
        bci_free(out);
        break;
    }
    case BCI_UNCHANGED:
        fuzz_bci_counts.unchanged++;
        CHECK(out == NULL, what);
        break;
    case BCI_ERROR:
        fuzz_bci_counts.error++;
        CHECK(memchr(err, '\0', err_len) != NULL, what);   /* terminated */
        CHECK(err[0] != '\0', what);                       /* says why */
        break;
    default:
        CHECK(!"bci_rewrite returned an unknown result", what);
    }
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Names are at most 65535 bytes of modified UTF-8. */
    static char in_name[65536 + 1];
    int have_name = bci_class_name(data, size, in_name, sizeof in_name) == 0;
    if (have_name)
        CHECK(memchr(in_name, '\0', sizeof in_name) != NULL, 0);

    /* A too-small name buffer must fail or truncate, never overflow. */
    char *small = new_err(4);
    if (bci_class_name(data, size, small, 4) == 0)
        CHECK(memchr(small, '\0', 4) != NULL, 0);
    free(small);

    for (unsigned what = 0; what <= (BCI_ENTRY_EXIT | BCI_NEWARRAY | BCI_OBJECT_INIT); what++)
        rewrite_once(data, size, what, have_name ? in_name : NULL,
                     what == (BCI_ENTRY_EXIT | BCI_NEWARRAY | BCI_OBJECT_INIT));
    return 0;
}
