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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/events.h"
#include "../bci/opcodes.h"
#include "code_maps.h"
#include "layer.h"

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

/* A method's byte codes as they run, and where the tracker moved them. */
typedef struct method_code {
    jmethodID      method;
    const jvmpi_code_map *map;
    int            is_tracker;
    jint           length;            /* 0: not known */
    jint           capacity;
    unsigned char *code;              /* malloc'ed */
} method_code;

/* The methods a thread stepped through last: a call and its return switch
 * between a few (the caller, the callee, the tracker's), and each new look
 * is a copy of the code (JVMTI GetBytecodes) and a lock (code_maps.c). */
#define RECENT 4

/* One thread's stepping (its record's `stepping`, freed with it): the
 * method it steps through now (copied from its recent[] entry) and the
 * branch it holds. Nothing here is shared: no lock on the step path. */
typedef struct stepper {
    jmethodID      method;
    const jvmpi_code_map *map;
    int            is_tracker;
    jint           length;
    const unsigned char *code;
    int            last_in_tracker;   /* its last step was in the tracker's code (below) */
    int            hidden;            /* HotSpot hides its steps now: breakpoints stand in */
    pending_branch pending;
    unsigned       redefinitions;     /* step_state.redefinitions when recent[] was filled */
    unsigned       next;              /* the recent[] entry to replace next */
    method_code    recent[RECENT];
} stepper;

/* Methods that ran while HotSpot hid a thread's steps get a breakpoint
 * at each of their instructions, left in place (the set is bounded). */
#define BREAKPOINTED_MAX 16384

static struct {
    int             possible;     /* single-stepping was granted in Agent_OnLoad's time */
    int             can_break;    /* breakpoints were granted with it */
    atomic_int      stepping;     /* SingleStep is enabled now */
    atomic_uint     redefinitions; /* classes redefined: the threads' recent code may be old */
    pthread_mutex_t lock;         /* the breakpointed methods */
    jmethodID      *breakpointed; /* open addressing, BREAKPOINTED_MAX slots */
    size_t          n_breakpointed;
    int             breakpoints_on;
} step_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int32_t s4(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static void code_of(JNIEnv *jni, method_code *m, jmethodID method) {
    m->method = method;
    m->length = 0;
    m->map = NULL;
    m->is_tracker = jvmpi_methods_is_tracker(method);
    if (m->is_tracker) return;
    unsigned char *code = NULL;
    jint length = 0;
    if ((*jvmpi_jvmti)->GetBytecodes(jvmpi_jvmti, method, &length, &code) != JVMTI_ERROR_NONE) return;
    if (length > m->capacity) {
        unsigned char *grown = realloc(m->code, (size_t)length);
        if (grown != NULL) {
            m->code = grown;
            m->capacity = length;
        }
    }
    if (length <= m->capacity) {
        memcpy(m->code, code, (size_t)length);
        m->length = length;
        m->map = jvmpi_code_map_of(jni, method, length);
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, code);
}

/* The thread's stepper, on `method`'s code; NULL if none can be made. */
static stepper *stepper_for(JNIEnv *jni, jvmpi_thread *t, jmethodID method) {
    stepper *s = t->stepping;
    if (s == NULL && (s = t->stepping = calloc(1, sizeof *s)) == NULL) return NULL;
    unsigned redefinitions = atomic_load(&step_state.redefinitions);
    if (s->redefinitions != redefinitions) {
        for (int i = 0; i < RECENT; i++) s->recent[i].method = NULL;
        s->redefinitions = redefinitions;
        s->method = NULL;
    }
    if (s->method == method && method != NULL) return s;
    method_code *m = NULL;
    for (int i = 0; i < RECENT && m == NULL; i++)
        if (s->recent[i].method == method) m = &s->recent[i];
    if (m == NULL) code_of(jni, m = &s->recent[s->next++ % RECENT], method);
    s->method = method;
    s->map = m->map;
    s->is_tracker = m->is_tracker;
    s->length = m->length;
    s->code = m->code;
    return s;
}

void jvmpi_instructions_forget_thread(void *stepping) {
    stepper *s = stepping;
    if (s == NULL) return;
    for (int i = 0; i < RECENT; i++) free(s->recent[i].code);
    free(s);
}

void jvmpi_instructions_redefined(void) { atomic_fetch_add(&step_state.redefinitions, 1); }

static int is_if(unsigned op) { return (op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7; }
enum { TABLESWITCH = 0xaa, LOOKUPSWITCH = 0xab };

/* Whether running location `a` is headed where `b` is, in the class file's
 * code (the rewriter's code before an instruction is the way into it). */
static int same_place(const stepper *s, jlocation a, jlocation b) {
    return jvmpi_code_map_landing(s->map, a) == jvmpi_code_map_landing(s->map, b);
}

/* The branch's outcome, now that the next instruction is at `next` (in the
 * code that runs; -1 if elsewhere). Its method's code is the stepper's. */
static void complete(JVMPI_Event *e, const stepper *s, const pending_branch *b, jlocation next) {
    const unsigned char *c = s->code;
    jlocation at = b->at, length = s->length;
    if (length == 0) return;
    if (is_if(b->opcode) && at + 2 < length) {
        jlocation target = at + (int16_t)((uint16_t)c[at + 1] << 8 | c[at + 2]);
        if (b->widened && at + 8 <= length) target = at + 3 + s4(c + at + 4);   /* the goto_w's */
        e->u.instruction.u.if_info.is_true = next >= 0 && same_place(s, next, target);
        return;
    }
    jlocation p = (at + 4) & ~(jlocation)3;                     /* operands start 4-aligned */
    if (b->opcode == TABLESWITCH && p + 12 <= length) {
        int32_t low = s4(c + p + 4), high = s4(c + p + 8);
        e->u.instruction.u.tableswitch_info.low = low;
        e->u.instruction.u.tableswitch_info.hi = high;
        e->u.instruction.u.tableswitch_info.key = high + 1;     /* the default: outside low..hi */
        for (int64_t k = low; k <= high && p + 12 + 4 * (k - low + 1) <= length; k++)
            if (next >= 0 && same_place(s, next, at + s4(c + p + 12 + 4 * (k - low)))) {
                e->u.instruction.u.tableswitch_info.key = (jint)k;
                break;
            }
    } else if (b->opcode == LOOKUPSWITCH && p + 8 <= length) {
        int32_t pairs = s4(c + p + 4);
        e->u.instruction.u.lookupswitch_info.pairs_total = pairs;
        e->u.instruction.u.lookupswitch_info.is_default = JNI_TRUE;
        e->u.instruction.u.lookupswitch_info.chosen_pair_index = pairs;
        for (int32_t i = 0; i < pairs && p + 8 + 8 * (i + 1) <= length; i++)
            if (next >= 0 && same_place(s, next, at + s4(c + p + 8 + 8 * i + 4))) {
                e->u.instruction.u.lookupswitch_info.chosen_pair_index = i;
                e->u.instruction.u.lookupswitch_info.is_default = JNI_FALSE;
                break;
            }
    }
}

static void post(JNIEnv *jni, const stepper *s, jint offset, const pending_branch *branch, jlocation next) {
    JVMPI_Event e = jvmpi_event(JVMPI_EVENT_INSTRUCTION_START, jni);
    e.u.instruction.method_id = s->method;
    e.u.instruction.offset = offset;
    if (branch != NULL) complete(&e, s, branch, next);
    jvmpi_notify(&e);
}

static void step(JNIEnv *jni, jvmpi_thread *t, jmethodID method, jlocation location) {
    stepper *s = t->stepping;
    if (s != NULL && s->pending.held) {
        pending_branch *b = &s->pending;
        /* The code that runs next tells the branch's way: still inside it (a
         * widened conditional's goto_w), wait for the step after. */
        if (method == b->method && location != b->at &&
            jvmpi_code_map_landing(s->map, location) == b->original && jvmpi_code_map_find(s->map, location) != NULL)
            return;
        b->held = 0;
        post(b->jni, s, b->original, b, method == b->method ? location : -1);
    }
    if ((s = stepper_for(jni, t, method)) == NULL) return;
    s->last_in_tracker = s->is_tracker;
    if (s->is_tracker || location < 0 || location >= s->length) return;
    const bci_moved_insn *insn = s->map != NULL ? jvmpi_code_map_find(s->map, location) : NULL;
    if (s->map != NULL && (insn == NULL || (jlocation)insn->new_off != location))
        return;                                   /* the rewriter's code: not the program's */
    jint original = insn != NULL ? (jint)insn->old_off : (jint)location;
    unsigned op = s->code[location];
    if (is_if(op) || op == TABLESWITCH || op == LOOKUPSWITCH)
        s->pending = (pending_branch){ 1, jni, method, location, original, (unsigned char)op,
                                       insn != NULL && is_if(op) && insn->new_len == 8 };
    else
        post(jni, s, original, NULL, 0);
}
static void JNICALL on_single_step(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                                   jlocation location) {
    (void)jvmti; (void)thread;
    if (jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) return;
    jvmpi_in_layer = 1;
    jvmpi_thread *t = jvmpi_thread_here(jni);
    if (t != NULL) {
        if (t->stepping != NULL) ((stepper *)t->stepping)->hidden = 0;    /* its steps are seen again */
        step(jni, t, method, location);
    }
    jvmpi_in_layer = 0;
}

/* ------------------------------------------------------------ hidden steps
 *
 * HotSpot posts no SingleStep while a thread resolves a constant-pool
 * entry (JvmtiHideSingleStepping around the link resolver in the
 * interpreter's resolve_invoke, resolve_get_put and class resolution),
 * and a class initialized there (its first invokestatic, getstatic or
 * putstatic) runs its <clinit>, and whatever that calls, inside it: not one
 * step (`new` initializes after resolving: stepped). A JVMPI VM posted
 * those instructions. The tracker's call at each method's entry tells:
 * stepped, the thread's last step was in the tracker's own code that
 * leads to the call; hidden, it is still the caller's instruction that
 * began the resolution. Then the entered method gets a breakpoint at each
 * of its instructions (JVMTI Breakpoint is not hidden) and, until its next
 * SingleStep, the thread's breakpoints are its steps. Breakpoints on other
 * threads, whose SingleStep came for the same instruction, post nothing. */

static int breakpointed_claim(jmethodID method) {
    if (step_state.breakpointed == NULL && (step_state.breakpointed = calloc(BREAKPOINTED_MAX, sizeof *step_state.breakpointed)) == NULL)
        return 0;
    if (step_state.n_breakpointed >= BREAKPOINTED_MAX / 2) return 0;      /* bounded: later ones stay unseen */
    size_t i = ((uintptr_t)method >> 3) * 11400714819323198485u % BREAKPOINTED_MAX;
    for (; step_state.breakpointed[i] != NULL; i = (i + 1) % BREAKPOINTED_MAX)
        if (step_state.breakpointed[i] == method) return 0;
    step_state.breakpointed[i] = method;
    step_state.n_breakpointed++;
    return 1;
}

static int set_breakpoint(jmethodID method, uint32_t at) {
    jvmtiError err = (*jvmpi_jvmti)->SetBreakpoint(jvmpi_jvmti, method, (jlocation)at);
    if (err == JVMTI_ERROR_NONE || err == JVMTI_ERROR_DUPLICATE) return 1;
    if (jvmpi_diagnostics())
        fprintf(stderr, "jvmpi: INSTRUCTION_START: JVMTI SetBreakpoint failed (%d): a method run while HotSpot "
                        "hid single steps is left partly unseen\n", (int)err);
    return 0;
}

/* A breakpoint at each of the program's instructions in the method's code
 * that runs (not the rewriter's). Under step_state.lock, so a second thread waits
 * until they are all set. */
static void set_breakpoints(const stepper *s) {
    if (!step_state.breakpoints_on) {
        if (events_want(jvmpi_jvmti, JVMTI_EVENT_BREAKPOINT) != 0) return;
        step_state.breakpoints_on = 1;
    }
    if (s->map != NULL) {
        for (uint32_t i = 0, n = jvmpi_code_map_count(s->map); i < n; i++)
            if (!set_breakpoint(s->method, jvmpi_code_map_at(s->map, i))) return;
        return;
    }
    for (uint32_t at = 0; at < (uint32_t)s->length;) {
        int64_t size = bytecode_instruction_length(s->code, (uint32_t)s->length, at);
        if (size <= 0 || !set_breakpoint(s->method, at)) return;
        at += (uint32_t)size;
    }
}

/* Not the JDK's own (its class loaded by the boot loader): the JDK runs
 * much code hidden (class loading, its classes' initializers), and each
 * breakpoint is a safepoint (breakpointing all of it made a 0.7 s run take
 * 21 s); what an agent covers is the program's. */
static int is_programs(JNIEnv *jni, jmethodID method) {
    jclass klass = NULL;
    jobject loader = NULL;
    if ((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &klass) != JVMTI_ERROR_NONE) return 0;
    jvmtiError err = (*jvmpi_jvmti)->GetClassLoader(jvmpi_jvmti, klass, &loader);
    (*jni)->DeleteLocalRef(jni, klass);
    if (loader != NULL) (*jni)->DeleteLocalRef(jni, loader);
    return err == JVMTI_ERROR_NONE && loader != NULL;
}

void jvmpi_instructions_entered(JNIEnv *jni, jvmpi_thread *t, jmethodID method) {
    if (!step_state.can_break || !atomic_load(&step_state.stepping) || !jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) return;
    stepper *s = t->stepping;
    /* stepped; or a branch held, whose code must stay (never so at an entry) */
    if (s != NULL && (s->last_in_tracker || s->pending.held)) return;
    if (s != NULL) s->hidden = 1;
    if (!is_programs(jni, method)) return;
    pthread_mutex_lock(&step_state.lock);
    if (breakpointed_claim(method) && (s = stepper_for(jni, t, method)) != NULL && !s->is_tracker && s->length > 0)
        set_breakpoints(s);
    pthread_mutex_unlock(&step_state.lock);
    if ((s = t->stepping) != NULL) s->hidden = 1;
}

int jvmpi_instructions_watch_entries(void) {
    return step_state.can_break && jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START);
}

static void JNICALL on_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method, jlocation location) {
    (void)jvmti; (void)thread;
    if (jvmpi_in_layer || !jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) return;
    jvmpi_thread *t = jvmpi_thread_current();
    if (t == NULL || t->env != jni || t->stepping == NULL || !((stepper *)t->stepping)->hidden) return;
    jvmpi_in_layer = 1;
    step(jni, t, method, location);
    jvmpi_in_layer = 0;
}

/* ------------------------------------------------------------ switching */

static void stepping(int on) {
    if (!on) {
        atomic_store(&step_state.stepping, 0);
        events_unwant(jvmpi_jvmti, JVMTI_EVENT_SINGLE_STEP);
    } else if (events_want(jvmpi_jvmti, JVMTI_EVENT_SINGLE_STEP) == 0) {
        atomic_store(&step_state.stepping, 1);
    }
}

/* Enabled in JVM_OnLoad, its switch came before the capability: the
 * stepping starts with the live phase (HotSpot single-steps only threads
 * told so once they run Java code). */
static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
    (void)jvmti; (void)jni; (void)thread;
    if (step_state.possible && jvmpi_enabled(JVMPI_EVENT_INSTRUCTION_START)) stepping(1);
}

int jvmpi_instructions_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_SINGLE_STEP, EVENT_FN(on_single_step)) != 0 ||
           events_subscribe(JVMTI_EVENT_BREAKPOINT, EVENT_FN(on_breakpoint)) != 0 ||
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
    step_state.possible = 1;
    jvmpi_code_maps_keep();
    memset(&caps, 0, sizeof caps);
    caps.can_generate_breakpoint_events = 1;
    if ((*jvmpi_jvmti)->AddCapabilities(jvmpi_jvmti, &caps) == JVMTI_ERROR_NONE) step_state.can_break = 1;
    else fprintf(stderr, "jvmpi: this JVM cannot set breakpoints (JVMTI can_generate_breakpoint_events): "
                         "INSTRUCTION_START misses the class initializers run while a call or field is "
                         "resolved\n");
}

jint jvmpi_instructions_switch(jint event_type, int on) {
    if (event_type != JVMPI_EVENT_INSTRUCTION_START || !step_state.possible || !atomic_load(&jvmpi_live)) return JVMPI_SUCCESS;
    stepping(on);
    return !on || atomic_load(&step_state.stepping) ? JVMPI_SUCCESS : JVMPI_FAIL;
}
