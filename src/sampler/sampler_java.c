/*
 * sampler_java.c: the sampler's JNI side, run in the signal handler: the
 * Java frames by HotSpot's AsyncGetCallTrace (from the previous instruction,
 * the interrupted PC, the caller), and threads known only by their JNIEnv
 * (named by the agent, adopted at their first signal).
 */
#include "sampler_internal.h"

#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* AsyncGetCallTrace's "unknown_Java" (-5): the thread was in Java code but
 * HotSpot could not make a frame of the interrupted PC, typically because it
 * is in a stub without a frame of its own (arraycopy, a vtable stub) or in a
 * compiled method's prologue or epilogue. Retry from the caller, as if the
 * callee had returned: first with the return address on top of the stack
 * (frameless stub, or before `push rbp`), then one slot down (after `push
 * rbp`). The walker checks every frame it is given (safe_for_sender), so a
 * wrong guess fails again rather than producing a wrong stack. The sample is
 * then charged to the caller, which is where a stub's time belongs. */
#define ASGCT_UNKNOWN_JAVA (-5)

static void retry_from_caller(asgct_trace *trace, void *ucontext)
{
#if defined(__x86_64__)
    ucontext_t uc = *(ucontext_t *)ucontext;
    greg_t *regs = uc.uc_mcontext.gregs;
    const uintptr_t *sp = (const uintptr_t *)regs[REG_RSP];
    if (sp == NULL || ((uintptr_t)sp & 7) != 0)
        return;
    /* [sp] is readable: it is the interrupted thread's own live stack. */
    regs[REG_RIP] = (greg_t)sp[0];
    regs[REG_RSP] = (greg_t)(sp + 1);
    sampler_async_get_call_trace(trace, trace->num_frames_requested, &uc);
    if (trace->num_frames != ASGCT_UNKNOWN_JAVA)
        return;
    uc = *(ucontext_t *)ucontext;
    regs = uc.uc_mcontext.gregs;
    regs[REG_RBP] = (greg_t)sp[0];
    regs[REG_RIP] = (greg_t)sp[1];
    regs[REG_RSP] = (greg_t)(sp + 2);
    sampler_async_get_call_trace(trace, trace->num_frames_requested, &uc);
#elif defined(__aarch64__)
    /* A frameless stub or prologue has not saved the link register yet. */
    ucontext_t uc = *(ucontext_t *)ucontext;
    uc.uc_mcontext.pc = uc.uc_mcontext.regs[30];
    sampler_async_get_call_trace(trace, trace->num_frames_requested, &uc);
#else
    (void)trace;
    (void)ucontext;
#endif
}

/* ---- threads known by their JNIEnv ----
 * A thread that existed before sampling started gets its timer from
 * outside; at its first signal the handler knows only its JNIEnv (GetEnv).
 * The agent names such threads here beforehand (sampler_name_thread): open
 * addressing, keys claimed with a compare-and-swap and never moved, so the
 * handler reads it without a lock. A thread that ended keeps its key with
 * serial 0 (a JNIEnv's memory may serve a later thread, which names itself
 * again). Only threads older than a start are named, so it stays small. */
#define ENV_SLOTS 8192

typedef struct env_slot {
    _Atomic(const void *) env;
    atomic_uint           serial;
} env_slot;
/* Global: the signal handler, which gets no user data, reads it. */
static struct {
    env_slot   slots[ENV_SLOTS];
    atomic_int complete;        /* every Java thread alive is named: unnamed = not the program's */
} env_names;

static size_t env_hash(const void *env)
{
    uint64_t x = (uint64_t)(uintptr_t)env * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 51) & (ENV_SLOTS - 1);
}

void sampler_name_thread(const void *env, uint32_t serial)
{
    if (env == NULL)
        return;
    for (size_t i = env_hash(env), n = 0; n < ENV_SLOTS; i = (i + 1) & (ENV_SLOTS - 1), n++) {
        const void *cur = atomic_load(&env_names.slots[i].env);
        if (cur == NULL) {
            const void *expected = NULL;
            if (!atomic_compare_exchange_strong(&env_names.slots[i].env, &expected, env) && expected != env)
                continue;                /* another key took it meanwhile */
            cur = env;
        }
        if (cur == env) {
            atomic_store(&env_names.slots[i].serial, serial);
            return;
        }
    }
}

void sampler_names_complete(int complete)
{
    atomic_store(&env_names.complete, complete);
}

/* Async-signal-safe: atomic loads only. 0 if not named. */
static uint32_t serial_of_env(const void *env)
{
    for (size_t i = env_hash(env), n = 0; n < ENV_SLOTS; i = (i + 1) & (ENV_SLOTS - 1), n++) {
        const void *cur = atomic_load_explicit(&env_names.slots[i].env, memory_order_acquire);
        if (cur == NULL)
            return 0;
        if (cur == env)
            return atomic_load_explicit(&env_names.slots[i].serial, memory_order_relaxed);
    }
    return 0;
}

/* A timer made for a thread from outside (sampler_thread_start_other): the
 * thread's state is filled at its first signal, its serial found by its
 * JNIEnv. Returns 1 for a Java thread, 2 for one sampled by its native
 * frames only (sampler_native on), 0 if it is not sampled. GetEnv only reads the JVM's thread-local pointer to its current
 * thread, as async profilers do here. A thread that runs no Java (GC) or is
 * not the program's (a JIT compiler thread, hidden from JVMTI, so never
 * named) gets its timer disarmed instead, so it costs one signal in all; if
 * it is a thread whose ThreadStart was still on its way, that event re-arms
 * it (sampler_thread_start). */
int sampler_adopt_thread(thread_state *t, const siginfo_t *info)
{
    t->env = NULL;                 /* stale state (from before a stop) is dropped */
    t->has_perf = 0;
    if (sampler_java_vm == NULL || info == NULL)
        return 0;
    if (t->not_java == atomic_load_explicit(&sampler_generation, memory_order_relaxed))
        return 0;
    JNIEnv *env = NULL;
    /* A perf event's signal carries its fd (si_code POLL_IN); a timer's is
     * SI_TIMER; wall='s are SI_QUEUE. */
    int is_perf = info->si_code > 0;
    uint32_t serial = 0;
    if (!sampler_may_adopt(t) ||
        (*sampler_java_vm)->GetEnv(sampler_java_vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK || env == NULL ||
        ((serial = serial_of_env(env)) == 0 && atomic_load_explicit(&env_names.complete, memory_order_relaxed))) {
        if (atomic_load_explicit(&sampler_native_walks, memory_order_relaxed)) {
            /* GC workers, JIT compilers, the VM thread, a library's own
             * threads: sampled by their native stacks, named by the agent
             * from their kernel thread id. */
            t->tid = (pid_t)syscall(SYS_gettid);
            t->perf_fd = is_perf ? info->si_fd : -1;
            t->has_perf = is_perf;
            t->first_period = is_perf;
            t->native_only = atomic_load_explicit(&sampler_generation, memory_order_relaxed);
            return 2;
        }
        t->not_java = atomic_load_explicit(&sampler_generation, memory_order_relaxed);
        if (info->si_code == SI_TIMER) {
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime((timer_t)(intptr_t)info->si_timerid, 0, &off, NULL);
        }
        return 0;                  /* perf: not re-armed below, so it stays quiet */
    }
    t->thread_serial = serial;
    t->tid = (pid_t)syscall(SYS_gettid);   /* named by it while its serial is unknown (0) */
    t->generation = atomic_load_explicit(&sampler_generation, memory_order_relaxed);
    t->perf_fd = is_perf ? info->si_fd : -1;
    t->has_perf = is_perf;
    t->first_period = is_perf;
    atomic_signal_fence(memory_order_seq_cst);
    t->env = env;
    return 1;
}

/* Which instruction a sample is charged to.
 *
 * The PC in the signal's context is the instruction the thread was about to
 * execute; the interval's CPU time was spent up to the instruction that ended
 * there (a timer interrupt is taken between instructions, once the one in
 * flight has retired, so a slow instruction's time shows up at the PC after
 * it: on tests/java/HotCold.java over a third of the samples are at the
 * instruction after hot's array load).
 *
 * HotSpot describes compiled code by PcDescs that record the END of the code
 * they describe: C2 notes each instruction's scope with the offset just past
 * it (NonSafepointEmitter::observe_instruction) and writes one PcDesc at the
 * end of each run of instructions with the same inlining chain (these
 * non-safepoint PcDescs exist because the agent enables CompiledMethodLoad,
 * see samples_agent.c); a call's PcDesc is at its return address. So the instruction
 * that ended at PC is described by the first PcDesc at or after PC, the one
 * that starts at PC by the first PcDesc strictly after PC. For a top frame it
 * interrupted in compiled code, AsyncGetCallTrace takes the second (forte.cpp,
 * is_decipherable_compiled_frame: pc_desc_near(pc + 1), the first PcDesc at an
 * offset >= pc + 1). Where PC is the border of two inlined methods, that
 * charges the sample to the method of the next instruction: on HotCold 6-9% of
 * all samples were at cold's `i++` just after hot's array store, and went to
 * cold.
 *
 * Rule: walk with a copy of the context whose PC points into the previous
 * instruction (PC - 1 on x86-64, where instructions have any length: the
 * previous one's last byte; PC - 4 on aarch64), so that HotSpot's lookup is
 * pc_desc_near(PC), the PcDesc of the instruction that ended at PC. If that
 * walk fails in Java code (unknown_Java or not_walkable_Java), walk with the
 * real PC, as before (and from the caller if that fails, retry_from_caller).
 * Other failures (thread not in Java, GC active, ...) do not depend on the PC.
 *
 * Elsewhere PC - 1 changes nothing, or fails and the real PC is used:
 * - PC - 1 is in the same code blob as PC (a blob's header comes before its
 *   code). At a blob's first instruction it is outside the blob's code; in a
 *   compiled method's prologue, up to and including the first instruction
 *   after the frame is complete, it is before the frame-complete offset;
 *   HotSpot's frame::safe_for_sender refuses both: unknown_Java, real PC.
 * - Interpreted and stub frames are found from sp and fp (and the
 *   interpreter's bcp slot): where the PC is inside the blob does not matter.
 * - A thread in native code or in the VM is walked from its last Java frame;
 *   the context's PC is not used. Frames below the top are looked up by their
 *   exact return address (pc_desc_at) whatever the top frame's PC.
 * - PC just after a call that returned: PC - 1 is in the call, whose PcDesc is
 *   at PC: the sample goes to the call site.
 * Limits: at a jump target, the instruction before it in memory is not the one
 * that ran (the jump was). A sample exactly at the first instruction of a
 * compiled method's deoptimization handler (HotSpot recognises it only at that
 * address) is charged to the compiled method at bci 0, without inlined frames.
 * Cost: one walk per sample, as before; a second only where the first failed. */
#define ASGCT_NOT_WALKABLE_JAVA (-6)

static void walk_from_previous_instruction(asgct_trace *trace, void *ucontext)
{
    ucontext_t uc = *(ucontext_t *)ucontext;
#if defined(__x86_64__)
    uc.uc_mcontext.gregs[REG_RIP] -= 1;
#elif defined(__aarch64__)
    uc.uc_mcontext.pc -= 4;
#endif  /* elsewhere the PC is left as it is: the walk is AsyncGetCallTrace's own */
    sampler_async_get_call_trace(trace, trace->num_frames_requested, &uc);
}
/* The Java part of a Java thread's stack, by AsyncGetCallTrace, into the
 * trace's frames (see walk_from_previous_instruction and retry_from_caller
 * for the order of tries). */
void sampler_walk_java(asgct_trace *trace, void *ucontext)
{
    if (ucontext != NULL) {
        walk_from_previous_instruction(trace, ucontext);
        if (trace->num_frames == ASGCT_UNKNOWN_JAVA || trace->num_frames == ASGCT_NOT_WALKABLE_JAVA) {
            sampler_async_get_call_trace(trace, trace->num_frames_requested, ucontext);
            if (trace->num_frames > 0)
                atomic_fetch_add_explicit(&sampler_lost.at_interrupted_pc, 1, memory_order_relaxed);
        }
    } else {
        sampler_async_get_call_trace(trace, trace->num_frames_requested, ucontext);
    }
    if (trace->num_frames == ASGCT_UNKNOWN_JAVA && ucontext != NULL) {
        retry_from_caller(trace, ucontext);
        if (trace->num_frames > 0)
            atomic_fetch_add_explicit(&sampler_lost.recovered_from_caller, 1, memory_order_relaxed);
    }
}
