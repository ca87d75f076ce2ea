/*
 * bci: the class-file rewriter (byte-code insertion). Pure C, no JVMTI:
 * bytes in, bytes out, so it can be tested and fuzzed on its own.
 *
 * It inserts static calls to a tracker class:
 *   BCI_ENTRY_EXIT   tracker.methodEntry(I)V at method entry, tracker.methodExit(I)V
 *                    before every return and on exceptional exit (a handler
 *                    around the body that calls methodExit and re-throws).
 *                    The int is the method id the caller's callback chose.
 *   BCI_COUNT_LEAVES with BCI_ENTRY_EXIT: a leaf method (no call, no loop, no
 *                    jsr, no monitorenter, at most BCI_LEAF_MAX_CODE bytes) gets
 *                    only tracker.methodCount(I)V at entry: counted exactly,
 *                    its (short, bounded) time left to its caller.
 *   BCI_NEWARRAY     tracker.newArray(Ljava/lang/Object;)V after every
 *                    newarray, anewarray and multianewarray (with the new array).
 *   BCI_OBJECT_INIT  tracker.objectInit(Ljava/lang/Object;)V at the start of
 *                    java.lang.Object.<init> (with `this`).
 * Everything else is preserved: constant pool (entries are appended), branch
 * offsets (widened to goto_w/jsr_w, conditionals inverted around a goto_w when
 * they no longer fit), switch padding, exception tables, LineNumberTable,
 * LocalVariable(Type)Table, StackMapTable (frames moved, new frames computed
 * by the verifier's own linear type pass), max_stack, max_locals.
 * Malformed input is rejected with a message, never read out of bounds.
 */
#ifndef HPROF_BCI_H
#define HPROF_BCI_H

#include <stddef.h>
#include <stdint.h>

enum {
    BCI_ENTRY_EXIT  = 1u << 0,
    BCI_NEWARRAY    = 1u << 1,
    BCI_OBJECT_INIT = 1u << 2,
    BCI_COUNT_LEAVES = 1u << 3,
};

#define BCI_LEAF_MAX_CODE 128

/* Fixed names and descriptors of the tracker's methods. */
#define BCI_ENTRY_NAME        "methodEntry"
#define BCI_ENTRY_DESC        "(I)V"
#define BCI_EXIT_NAME         "methodExit"
#define BCI_EXIT_DESC         "(I)V"
#define BCI_COUNT_NAME        "methodCount"
#define BCI_COUNT_DESC        "(I)V"
#define BCI_NEWARRAY_NAME     "newArray"
#define BCI_NEWARRAY_DESC     "(Ljava/lang/Object;)V"
#define BCI_OBJECT_INIT_NAME  "objectInit"
#define BCI_OBJECT_INIT_DESC  "(Ljava/lang/Object;)V"

typedef struct bci_method_info {
    const char *class_name;     /* internal form, e.g. java/lang/String */
    const char *name;           /* e.g. <init> */
    const char *descriptor;     /* e.g. (I)V */
    uint16_t    access_flags;
    uint32_t    index;          /* position in the class's methods[] */
    unsigned    flags;          /* BCI_METHOD_* */
} bci_method_info;

enum {
    BCI_METHOD_LEAF  = 1u << 0, /* gets methodCount only (BCI_COUNT_LEAVES) */
    BCI_METHOD_SHORT = 1u << 1, /* a leaf but for calls and length: no loop (forward
                                   switches only), jsr or monitorenter */
};

/* Called once per method that has code, before it is rewritten. Returns the
 * id passed to methodEntry/methodExit (>= 0), or < 0 to leave the method's
 * entry and exit alone (allocation sites are still instrumented). */
typedef int32_t (*bci_method_id_fn)(void *context, const bci_method_info *method);

/* Where an original instruction is in the rewritten code. */
typedef struct bci_moved_insn {
    uint32_t old_off;           /* in the original code */
    uint32_t new_off;           /* in the rewritten code */
    uint32_t new_len;           /* its length there: a conditional branch that no longer
                                   reached grew to 8 bytes (the inverted condition, then a
                                   goto_w to the target at new_off + 3) */
} bci_moved_insn;

/* Called once per method whose code changed, when it is laid out: its n
 * original instructions in order and the new code's length. Every byte not
 * inside one of them is the rewriter's own (the calls, the exceptional-exit
 * handler). For whoever reports offsets in the code that runs (the JVMPI
 * layer's INSTRUCTION_START) as offsets of the code the class file had.
 * Told as each method is laid out: if bci_rewrite then fails (BCI_ERROR),
 * the class runs as it was and what was told does not apply. */
typedef void (*bci_layout_fn)(void *context, const bci_method_info *method, const bci_moved_insn *insns,
                              uint32_t n, uint32_t new_code_len);

typedef struct bci_config {
    unsigned         what;      /* BCI_* flags */
    const char      *tracker;   /* internal name of the tracker class */
    bci_method_id_fn method_id; /* may be NULL: every method gets id = index */
    void            *context;
    bci_layout_fn    layout;    /* may be NULL */
} bci_config;

typedef enum bci_result {
    BCI_OK        = 0,   /* *out holds the new class (free with bci_free) */
    BCI_UNCHANGED = 1,   /* nothing to insert; *out is NULL */
    BCI_ERROR     = -1,  /* malformed or unsupported input; err says why */
} bci_result;

bci_result bci_rewrite(const uint8_t *in, size_t in_len, const bci_config *config,
                       uint8_t **out, size_t *out_len, char *err, size_t err_len);
void bci_free(uint8_t *bytes);

/* The class's internal name (this_class), for filtering before a rewrite.
 * Returns 0 on success, -1 if the bytes are not a well-formed class header. */
int bci_class_name(const uint8_t *in, size_t in_len, char *buf, size_t buf_len);

#endif
