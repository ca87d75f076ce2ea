/*
 * instructions: INSTRUCTION_START, from JVMTI SingleStep.
 *
 * JVMTI grants can_generate_single_step_events at start-up only, and the
 * capability slows the JVM down, so the layer asks for it only when the
 * agent enabled INSTRUCTION_START in JVM_OnLoad; enabled later, the event
 * answers JVMPI_SUCCESS and is never posted (README).
 *
 * The event carries, for a branch, where it goes: if_info.is_true (the
 * condition held: the branch is taken), tableswitch_info (key, low, hi) and
 * lookupswitch_info (chosen_pair_index, pairs_total, is_default). JVMTI cannot read the
 * operand stack, so the layer learns the outcome from the thread's next
 * instruction: a branch's event is held until then (the events of one
 * thread stay in order; a branch's comes just before its successor's).
 * The key of a tableswitch that took its default is not known (the value
 * was outside low..hi): the layer says hi + 1. Where several cases share a
 * target, the first is named.
 *
 * Offsets are the class file's, as the agent saw them in CLASS_LOAD_HOOK,
 * though the tracker may have rewritten the method (code_maps.c); the
 * rewriter's own instructions post nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/events.h"
#include "code_maps.h"
#include "layer.h"

static int possible;             /* the capability was granted in Agent_OnLoad's time */

/* The last method's byte codes as they run, per thread (stepping stays in
 * one method for long stretches), and where the tracker moved them. */
static _Thread_local jmethodID code_method;
static _Thread_local unsigned char *code;
static _Thread_local jint code_length;
static _Thread_local const jvmpi_code_map *code_map;
static _Thread_local int code_is_tracker;

/* A branch whose event waits for the next instruction. */
typedef struct pending_branch {
    int        held;
    JNIEnv    *jni;
    jmethodID  method;
    jlocation  at;                /* in the code that runs */
    jint       original;          /* the class file's offset, posted */
    unsigned char opcode;
    int        widened;           /* a conditional the rewriter turned around a goto_w */
} pending_branch;
static _Thread_local pending_branch pending;

static int32_t s4(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static void code_for(JNIEnv *jni, jmethodID method) {
    if (method == code_method) return;
    if (code != NULL) (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, code);
    code = NULL;
    code_length = 0;
    code_method = method;
    code_map = NULL;
    code_is_tracker = jvmpi_methods_is_tracker(method);
    if (code_is_tracker) return;
    if ((*jvmpi_jvmti)->GetBytecodes(jvmpi_jvmti, method, &code_length, &code) != JVMTI_ERROR_NONE) {
        code = NULL;
        code_length = 0;
        return;
    }
    code_map = jvmpi_code_map_of(jni, method, code_length);
}

static int is_if(unsigned op) { return (op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7; }
enum { TABLESWITCH = 0xaa, LOOKUPSWITCH = 0xab };

/* Whether running location `a` is headed where `b` is, in the class file's
 * code (the rewriter's code before an instruction is the way into it). */
static int same_place(jlocation a, jlocation b) {
    return jvmpi_code_map_landing(code_map, a) == jvmpi_code_map_landing(code_map, b);
}

/* The branch's outcome, now that the next instruction is at `next` (in the
 * code that runs; -1 if elsewhere). Its method's code is the current one. */
static void complete(JVMPI_Event *e, const pending_branch *b, jlocation next) {
    const unsigned char *c = code;
    jlocation at = b->at;
    if (c == NULL) return;
    if (is_if(b->opcode) && at + 2 < code_length) {
        jlocation target = at + (int16_t)((uint16_t)c[at + 1] << 8 | c[at + 2]);
        if (b->widened && at + 8 <= code_length) target = at + 3 + s4(c + at + 4);   /* the goto_w's */
        e->u.instruction.u.if_info.is_true = next >= 0 && same_place(next, target);
        return;
    }
    jlocation p = (at + 4) & ~(jlocation)3;                     /* operands start 4-aligned */
    if (b->opcode == TABLESWITCH && p + 12 <= code_length) {
        int32_t low = s4(c + p + 4), high = s4(c + p + 8);
        e->u.instruction.u.tableswitch_info.low = low;
        e->u.instruction.u.tableswitch_info.hi = high;
        e->u.instruction.u.tableswitch_info.key = high + 1;     /* the default: outside low..hi */
        for (int64_t k = low; k <= high && p + 12 + 4 * (k - low + 1) <= code_length; k++)
            if (next >= 0 && same_place(next, at + s4(c + p + 12 + 4 * (k - low)))) {
                e->u.instruction.u.tableswitch_info.key = (jint)k;
                break;
            }
    } else if (b->opcode == LOOKUPSWITCH && p + 8 <= code_length) {
        int32_t pairs = s4(c + p + 4);
        e->u.instruction.u.lookupswitch_info.pairs_total = pairs;
        e->u.instruction.u.lookupswitch_info.is_default = JNI_TRUE;
        e->u.instruction.u.lookupswitch_info.chosen_pair_index = pairs;
        for (int32_t i = 0; i < pairs && p + 8 + 8 * (i + 1) <= code_length; i++)
            if (next >= 0 && same_place(next, at + s4(c + p + 8 + 8 * i + 4))) {
                e->u.instruction.u.lookupswitch_info.chosen_pair_index = i;
                e->u.instruction.u.lookupswitch_info.is_default = JNI_FALSE;
                break;
            }
    }
}

static void post(JNIEnv *jni, jmethodID method, jint offset, const pending_branch *branch, jlocation next) {
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_INSTRUCTION_START, jni);
    e.u.instruction.method_id = method;
    e.u.instruction.offset = offset;
    if (branch != NULL) complete(&e, branch, next);
    jvmpi_notify(&e);
}

static void step(JNIEnv *jni, jmethodID method, jlocation location) {
    if (pending.held) {
        /* The code that runs next tells the branch's way: still inside it (a
         * widened conditional's goto_w), wait for the step after. */
        if (method == pending.method && location != pending.at &&
            jvmpi_code_map_landing(code_map, location) == pending.original &&
            jvmpi_code_map_find(code_map, location) != NULL)
            return;
        pending.held = 0;
        post(pending.jni, pending.method, pending.original, &pending, method == pending.method ? location : -1);
    }
    code_for(jni, method);
    if (code_is_tracker || code == NULL || location < 0 || location >= code_length) return;
    const bci_moved_insn *insn = code_map != NULL ? jvmpi_code_map_find(code_map, location) : NULL;
    if (code_map != NULL && (insn == NULL || (jlocation)insn->new_off != location))
        return;                                   /* the rewriter's code: not the program's */
    jint original = insn != NULL ? (jint)insn->old_off : (jint)location;
    unsigned op = code[location];
    if (is_if(op) || op == TABLESWITCH || op == LOOKUPSWITCH)
        pending = (pending_branch){ 1, jni, method, location, original, (unsigned char)op,
                                    insn != NULL && is_if(op) && insn->new_len == 8 };
    else
        post(jni, method, original, NULL, 0);
}

static void JNICALL on_single_step(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                   jlocation location) {
    (void)jvmti; (void)thread;
    if (jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) return;
    jvmpi_in_layer = 1;
    if (jvmpi_thread_here(jni) != NULL) step(jni, method, location);
    jvmpi_in_layer = 0;
}

/* Enabled in JVM_OnLoad, its switch came before the capability: the
 * stepping starts with the live phase (HotSpot single-steps only threads
 * told so once they run Java code). */
static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
    (void)jvmti; (void)jni; (void)thread;
    if (possible && jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) events_want(jvmpi_jvmti, JVMTI_EVENT_SINGLE_STEP);
}

int jvmpi_instructions_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_SINGLE_STEP, EVENT_FN(on_single_step)) != 0 ||
           events_subscribe(JVMTI_EVENT_VM_INIT, EVENT_FN(on_vm_init)) != 0 ? -1 : 0;
}

void jvmpi_instructions_after_onload(void) {
    if (!jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) return;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_generate_single_step_events = 1;
    caps.can_get_bytecodes = 1;
    if ((*jvmpi_jvmti)->AddCapabilities(jvmpi_jvmti, &caps) != JVMTI_ERROR_NONE) {
        fprintf(stderr, "jvmpi: this JVM cannot single-step (JVMTI can_generate_single_step_events): "
                        "INSTRUCTION_START is not posted\n");
        return;
    }
    possible = 1;
    jvmpi_code_maps_keep();
}

jint jvmpi_instructions_switch(jint event_type, int on) {
    if (event_type != JVMPI_EVENT_INSTRUCTION_START || !possible || !atomic_load(&jvmpi_live)) return JVMPI_SUCCESS;
    if (!on) events_unwant(jvmpi_jvmti, JVMTI_EVENT_SINGLE_STEP);
    else if (events_want(jvmpi_jvmti, JVMTI_EVENT_SINGLE_STEP) != 0) return JVMPI_FAIL;
    return JVMPI_SUCCESS;
}
