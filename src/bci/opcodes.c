#include "opcodes.h"
#include "../core/big_endian.h"

int opcode_length(uint8_t op) {
    if (op <= 15) return 1;                         /* nop, constants */
    switch (op) {
    case 16: return 2;                              /* bipush */
    case 17: return 3;                              /* sipush */
    case 18: return 2;                              /* ldc */
    case 19: case 20: return 3;                     /* ldc_w, ldc2_w */
    case 132: return 3;                             /* iinc */
    case 169: return 2;                             /* ret */
    case 170: case 171: case 196: return 0;         /* switches, wide */
    case 185: case 186: return 5;                   /* invokeinterface, invokedynamic */
    case 188: return 2;                             /* newarray */
    case 197: return 4;                             /* multianewarray */
    case 200: case 201: return 5;                   /* goto_w, jsr_w */
    default: break;
    }
    if (op >= 21 && op <= 25) return 2;             /* xload index */
    if (op >= 54 && op <= 58) return 2;             /* xstore index */
    if (op >= 153 && op <= 168) return 3;           /* if*, goto, jsr */
    if (op >= 178 && op <= 184) return 3;           /* field access, invokes */
    if (op == 187 || op == 189 || op == 192 || op == 193) return 3;   /* new, anewarray, checkcast, instanceof */
    if (op == 198 || op == 199) return 3;           /* ifnull, ifnonnull */
    if (op <= 201) return 1;
    return -1;                                      /* breakpoint, impdep and unassigned */
}

static int32_t be32(const uint8_t *p) { return (int32_t)be_get_u4(p); }

/* The length of the instruction at code[pc] (switches and wide included),
 * or -1 if it does not decode within len. */
int64_t bytecode_instruction_length(const uint8_t *code, uint32_t len, uint32_t pc)
{
    uint8_t op = code[pc];
    int64_t size = opcode_length(op);
    if (size < 0)
        return -1;
    if (size == 0) {
        if (op == OP_WIDE) {
            if (pc + 1 >= len)
                return -1;
            size = code[pc + 1] == 132 ? 6 : 4;      /* wide iinc, or a wide load/store/ret */
        } else {
            uint32_t at = (pc + 4) & ~3u;              /* operands 4-aligned after the opcode */
            if ((uint64_t)at + 12 > len)
                return -1;
            if (op == OP_TABLESWITCH) {
                int64_t low = be32(code + at + 4), high = be32(code + at + 8);
                if (high < low)
                    return -1;
                size = (int64_t)(at - pc) + 12 + 4 * (high - low + 1);
            } else {
                int64_t pairs = be32(code + at + 4);
                if (pairs < 0)
                    return -1;
                size = (int64_t)(at - pc) + 8 + 8 * pairs;
            }
        }
    }
    if ((uint64_t)pc + (uint64_t)size > len)
        return -1;
    return size;
}

int bytecode_void_returns(const uint8_t *code, uint32_t len, uint32_t *out, int max)
{
    int n = 0;
    uint32_t pc = 0;
    while (pc < len) {
        int64_t size = bytecode_instruction_length(code, len, pc);
        if (size < 0)
            return -1;
        if (code[pc] == OP_RETURN && n < max)
            out[n++] = pc;
        pc += (uint32_t)size;
    }
    return n;
}

int64_t bytecode_monitorenter_at(const uint8_t *code, uint32_t len, uint32_t at)
{
    uint32_t pc = 0;
    while (pc < len && pc <= at) {
        int64_t size = bytecode_instruction_length(code, len, pc);
        if (size < 0)
            return -1;
        if (code[pc] == OP_MONITORENTER && (pc == at || pc + (uint32_t)size == at))
            return pc;
        pc += (uint32_t)size;
    }
    return -1;
}
