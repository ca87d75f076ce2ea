#include "opcodes.h"

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
