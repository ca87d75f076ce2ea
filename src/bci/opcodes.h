/* JVM opcodes the rewriter treats specially, and instruction lengths. */
#ifndef HPROF_BCI_OPCODES_H
#define HPROF_BCI_OPCODES_H

#include <stdint.h>

enum {
    OP_ACONST_NULL = 1, OP_ICONST_0 = 3, OP_BIPUSH = 16, OP_SIPUSH = 17, OP_LDC = 18,
    OP_LDC_W = 19, OP_LDC2_W = 20, OP_ALOAD = 25, OP_ALOAD_0 = 42, OP_ASTORE = 58,
    OP_DUP = 89, OP_IFEQ = 153, OP_IF_ACMPNE = 166, OP_GOTO = 167, OP_JSR = 168,
    OP_RET = 169, OP_TABLESWITCH = 170, OP_LOOKUPSWITCH = 171, OP_IRETURN = 172,
    OP_RETURN = 177, OP_INVOKESPECIAL = 183, OP_INVOKESTATIC = 184, OP_NEW = 187,
    OP_NEWARRAY = 188, OP_ANEWARRAY = 189, OP_ATHROW = 191, OP_MONITORENTER = 194, OP_WIDE = 196,
    OP_MULTIANEWARRAY = 197, OP_IFNULL = 198, OP_IFNONNULL = 199, OP_GOTO_W = 200,
    OP_JSR_W = 201,
};

/* Length of the fixed-size instruction `op`, 0 for the variable-length
 * ones (tableswitch, lookupswitch, wide), -1 for an invalid opcode. */
int opcode_length(uint8_t op);

/* The length of the instruction at code[pc] (switches and wide included),
 * or -1 if it does not decode within len. */
int64_t bytecode_instruction_length(const uint8_t *code, uint32_t len, uint32_t pc);

/* The offsets of the `return` instructions (void methods) in code[0..len),
 * walked instruction by instruction (switches and wide included), up to max
 * of them into out. Their number, or -1 if the code does not decode. */
int bytecode_void_returns(const uint8_t *code, uint32_t len, uint32_t *out, int max);

/* The monitorenter a thread blocked entering a monitor is at, when the
 * JVM gives its frame's location as `at`: the monitorenter at `at` itself,
 * or the one just before `at` (HotSpot's interpreter gives the next
 * instruction). Its offset, or -1 when neither is one or the code does not
 * decode. */
int64_t bytecode_monitorenter_at(const uint8_t *code, uint32_t len, uint32_t at);

static inline int op_is_cond_branch(uint8_t op) {
    return (op >= OP_IFEQ && op <= OP_IF_ACMPNE) || op == OP_IFNULL || op == OP_IFNONNULL;
}
/* The conditional branch with the opposite condition (ifeq <-> ifne, ...). */
static inline uint8_t op_invert(uint8_t op) {
    if (op == OP_IFNULL) return OP_IFNONNULL;
    if (op == OP_IFNONNULL) return OP_IFNULL;
    return (uint8_t)(((op - OP_IFEQ) ^ 1) + OP_IFEQ);
}

#endif
