/*
 * frame_table: the x86-64 call-frame rules of one ELF64 object, compiled
 * from its .eh_frame (found through .eh_frame_hdr or the section table) into
 * one sorted array that a signal handler can search without allocating.
 *
 * Why: HotSpot's libjvm.so as Debian builds it, libc and most libraries keep
 * no frame pointer, so walking %rbp from a GC worker's sample finds garbage
 * after the first frame. The unwind rules the compiler emits for C++
 * exceptions say, for every instruction, where the return address and the
 * caller's %rbp are: that is what the sampler follows (as gdb and
 * async-profiler do). The DWARF expressions of a rule are not evaluated at
 * sampling time: the table keeps only the forms the handler can apply with
 * two loads (CFA = %rsp or %rbp plus a constant; caller's %rbp saved at
 * CFA + constant, or left as is), and marks anything else as unknown.
 *
 * Pure C on bytes; every length, pointer encoding and offset is checked
 * (tests/fuzz/fuzz_elf.c). Addresses are the object's virtual addresses.
 */
#ifndef HPROF_FRAME_TABLE_H
#define HPROF_FRAME_TABLE_H

#include <stddef.h>
#include <stdint.h>

enum {
    FRAME_CFA_UNKNOWN = 0,         /* no usable rule here: the walk stops (or guesses by %rbp) */
    FRAME_CFA_SP      = 1,         /* CFA = %rsp + cfa_offset */
    FRAME_CFA_FP      = 2,         /* CFA = %rbp + cfa_offset */
};

/* The caller's %rbp was not saved by this frame: it is the current %rbp. */
#define FRAME_FP_SAME INT32_MIN

/* The rule for the addresses from `start` up to the next rule's start. The
 * return address is always at CFA - 8 (x86-64's CIEs all say so; a CIE that
 * says otherwise gives FRAME_CFA_UNKNOWN rules, and so does a row where the
 * return address is undefined: _start, clone, the outermost frame). The
 * caller's %rsp is the CFA. A FRAME_CFA_UNKNOWN rule has cfa_offset 0 and
 * fp_offset FRAME_FP_SAME, so that equal neighbours compare equal. */
typedef struct frame_rule {
    uint64_t start;
    int32_t  cfa_offset;
    int32_t  fp_offset;            /* caller's %rbp at CFA + fp_offset, or FRAME_FP_SAME */
    uint8_t  cfa_reg;              /* FRAME_CFA_* */
} frame_rule;

typedef struct frame_table {
    frame_rule *rules;             /* sorted by start, no two equal neighbours; a gap between
                                    * FDEs is an explicit FRAME_CFA_UNKNOWN rule, and the last
                                    * rule is an unknown one that ends the last FDE (at high,
                                    * or earlier when that FDE ends unknown); rules[0].start
                                    * is low. Where FDEs overlap, the one starting first wins */
    size_t      count;
    uint64_t    low, high;         /* the addresses FDEs cover: [low, high) */
    size_t      fdes;              /* FDEs read (for diagnostics) */
    size_t      skipped;           /* rows left unknown: an expression, another register, ... */
} frame_table;

/* Compile every FDE of the object's .eh_frame. 0, or -1 with a message in
 * err; an object without .eh_frame is no error (count 0). Only x86-64
 * objects (EM_X86_64) are read; others give -1. *out is safe to free.
 * Damage: broken ELF headers, or .eh_frame entries whose lengths do not
 * chain up to the section's end, give -1; an unreadable CIE or FDE inside a
 * well-chained section is left out (its addresses read as a gap), and an FDE
 * whose instructions cannot be run is one unknown rule. Found through
 * PT_GNU_EH_FRAME (no section table), the section ends at its zero
 * terminator or at the first entry that does not fit. Not async-signal-safe
 * (it allocates): build off the signal path. */
int  frame_table_build(const uint8_t *bytes, size_t size, frame_table *out, char *err, size_t errlen);

/* The rule in force at vaddr, or NULL outside [low, high). Async-signal-safe:
 * a binary search over memory that is never written after the build. */
const frame_rule *frame_table_find(const frame_table *table, uint64_t vaddr);

void frame_table_free(frame_table *table);

#endif
