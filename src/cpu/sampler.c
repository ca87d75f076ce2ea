/* sampler.c: see sampler.h. */
#include "sampler.h"
#include "native_libs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* HotSpot's AsyncGetCallTrace interface (exported by libjvm.so, not in any header). */
typedef struct {
    jint      lineno;              /* bci for Java frames, -3 for native frames */
    jmethodID method_id;
} asgct_frame;

typedef struct {
    JNIEnv      *env;
    jint         num_frames;       /* frames filled, or a negative failure code */
    asgct_frame *frames;
    jint         num_frames_requested;  /* ours, after HotSpot's three fields */
} asgct_trace;

typedef void (*asgct_fn)(asgct_trace *trace, jint depth, void *ucontext);

_Static_assert(sizeof(asgct_frame) == sizeof(sample_frame), "frame layouts must match");
_Static_assert(offsetof(asgct_frame, method_id) == offsetof(sample_frame, method),
               "frame layouts must match");

sampler_losses sampler_lost;

static asgct_fn      async_get_call_trace;
static JavaVM       *java_vm;           /* for threads the agent never saw start */
static sampler_engine engine;
static sample_queue *queue;
static uint32_t      frames_to_walk;
static long          interval_ns;
static uint64_t      interval_period;   /* interval_ns as PERF_EVENT_IOC_PERIOD wants it */
static atomic_int    sampling_on;
static int           sample_signal = SIGPROF;  /* SIGPROF, or a real-time signal if it is taken */
static atomic_int    generation = 1;    /* 1 + sampler_start calls: thread states older are stale
                                         * (fresh TLS holds 0, which is never current) */
static atomic_int    native_walks;      /* sampler_native: every thread, native frames too */
static sample_queue *wall_queue;        /* wall=: sampler_wall_init */
static int           wall_signal;       /* wall='s real-time signal (same handler) */
static uint32_t      wall_frames;
static atomic_int    wall_on;
static pid_t         self_pid;          /* for process_vm_readv on our own memory */
static int           kernel_frames;     /* perf engine with kernel call chains allowed */
static long          page_size;

/* Per-thread state read by the handler. initial-exec TLS: reading it from a
 * signal handler never calls into the dynamic linker (no malloc). */
typedef struct thread_state {
    JNIEnv  *env;
    uint32_t thread_serial;
    int      perf_fd;              /* this thread's perf event, when has_perf */
    int      has_perf;             /* 0 in fresh TLS, so fd 0 is never touched by mistake */
    int      first_period;         /* perf: the random first period is still in force */
    int      not_java;             /* the generation in which it was seen to run no Java (GC,
                                      JIT): its timer is disarmed */
    int      generation;           /* sampler_start's count when this state was filled */
    int      native_only;          /* the generation in which it was seen to run no Java while
                                      native walks are on: sampled by its native frames */
    pid_t    tid;                  /* its kernel thread id, when native_only */
    uint64_t sched_run_ns;         /* wall=: the thread's time on a CPU and waiting for one */
    uint64_t sched_wait_ns;        /* (schedstat) at its previous sample */
    int64_t  sched_running_credit; /* wall=: running share carried to the next sample (was_runnable) */
    int64_t  sched_last_share;     /* wall=: the running share of its last measurable interval, + 1 */
} thread_state;

static __thread thread_state tls __attribute__((tls_model("initial-exec")));

static uint32_t read_kernel_frames(int fd, sample_frame *frames, uint32_t max);
/* The virtual thread a carrier runs (sampler_set_mounted), 0: none. Apart
 * from tls: the handler reads it whatever the thread's state. */
static __thread volatile uint32_t mounted_serial __attribute__((tls_model("initial-exec")));

void sampler_set_mounted(uint32_t serial)
{
    mounted_serial = serial;
}

/* Every live timer, so that sampler_stop can delete timers of threads that
 * are still running. Touched only by ThreadStart/End and stop, never by the
 * handler, so a mutex is fine here. */
typedef struct timer_slot {
    timer_t id;                    /* timer engine */
    int     perf_fd;               /* perf engine */
    pid_t   tid;                   /* the thread it signals */
    int     in_use;
} timer_slot;

static pthread_mutex_t timers_lock = PTHREAD_MUTEX_INITIALIZER;
static timer_slot     *timers;
static int             timers_cap;
static int             timers_free_hint;

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
    async_get_call_trace(trace, trace->num_frames_requested, &uc);
    if (trace->num_frames != ASGCT_UNKNOWN_JAVA)
        return;
    uc = *(ucontext_t *)ucontext;
    regs = uc.uc_mcontext.gregs;
    regs[REG_RBP] = (greg_t)sp[0];
    regs[REG_RIP] = (greg_t)sp[1];
    regs[REG_RSP] = (greg_t)(sp + 2);
    async_get_call_trace(trace, trace->num_frames_requested, &uc);
#elif defined(__aarch64__)
    /* A frameless stub or prologue has not saved the link register yet. */
    ucontext_t uc = *(ucontext_t *)ucontext;
    uc.uc_mcontext.pc = uc.uc_mcontext.regs[30];
    async_get_call_trace(trace, trace->num_frames_requested, &uc);
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

static struct env_slot {
    _Atomic(const void *) env;
    atomic_uint           serial;
} env_slots[ENV_SLOTS];
static atomic_int env_names_complete;  /* every Java thread alive is named: unnamed = not the program's */

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
        const void *cur = atomic_load(&env_slots[i].env);
        if (cur == NULL) {
            const void *expected = NULL;
            if (!atomic_compare_exchange_strong(&env_slots[i].env, &expected, env) && expected != env)
                continue;                /* another key took it meanwhile */
            cur = env;
        }
        if (cur == env) {
            atomic_store(&env_slots[i].serial, serial);
            return;
        }
    }
}

void sampler_names_complete(int complete)
{
    atomic_store(&env_names_complete, complete);
}

/* Async-signal-safe: atomic loads only. 0 if not named. */
static uint32_t serial_of_env(const void *env)
{
    for (size_t i = env_hash(env), n = 0; n < ENV_SLOTS; i = (i + 1) & (ENV_SLOTS - 1), n++) {
        const void *cur = atomic_load_explicit(&env_slots[i].env, memory_order_acquire);
        if (cur == NULL)
            return 0;
        if (cur == env)
            return atomic_load_explicit(&env_slots[i].serial, memory_order_relaxed);
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
static int adopt_thread(thread_state *t, const siginfo_t *info)
{
    t->env = NULL;                 /* stale state (from before a stop) is dropped */
    t->has_perf = 0;
    if (java_vm == NULL || info == NULL)
        return 0;
    if (t->not_java == atomic_load_explicit(&generation, memory_order_relaxed))
        return 0;
    JNIEnv *env = NULL;
    /* A perf event's signal carries its fd (si_code POLL_IN); a timer's is
     * SI_TIMER; wall='s are SI_QUEUE. */
    int is_perf = info->si_code > 0;
    uint32_t serial = 0;
    if ((*java_vm)->GetEnv(java_vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK || env == NULL ||
        ((serial = serial_of_env(env)) == 0 && atomic_load_explicit(&env_names_complete, memory_order_relaxed))) {
        if (atomic_load_explicit(&native_walks, memory_order_relaxed)) {
            /* GC workers, JIT compilers, the VM thread, a library's own
             * threads: sampled by their native stacks, named by the agent
             * from their kernel thread id. */
            t->tid = (pid_t)syscall(SYS_gettid);
            t->perf_fd = is_perf ? info->si_fd : -1;
            t->has_perf = is_perf;
            t->first_period = is_perf;
            t->native_only = atomic_load_explicit(&generation, memory_order_relaxed);
            return 2;
        }
        t->not_java = atomic_load_explicit(&generation, memory_order_relaxed);
        if (info->si_code == SI_TIMER) {
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime((timer_t)(intptr_t)info->si_timerid, 0, &off, NULL);
        }
        return 0;                  /* perf: not re-armed below, so it stays quiet */
    }
    t->thread_serial = serial;
    t->tid = (pid_t)syscall(SYS_gettid);   /* named by it while its serial is unknown (0) */
    t->generation = atomic_load_explicit(&generation, memory_order_relaxed);
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
    async_get_call_trace(trace, trace->num_frames_requested, &uc);
}

/* ---- native stacks ----
 * Reads of the interrupted stack go through process_vm_readv on our own
 * process: a bad address (a frame pointer that holds data, a stale rule)
 * makes the system call fail with EFAULT instead of faulting in the handler.
 * A window of the stack is read at once and reused, since a walk goes up
 * through neighbouring addresses: about one system call per few frames. */
#define STACK_WINDOW 512
#define NATIVE_MAX_FRAMES 128

typedef struct stack_window {
    uintptr_t     base;
    size_t        len;
    unsigned char bytes[STACK_WINDOW];
} stack_window;

static int read_stack_word(stack_window *w, uintptr_t addr, uintptr_t *out)
{
    if ((addr & 7) != 0 || addr < 4096)
        return 0;
    if (!(addr >= w->base && addr - w->base + 8 <= w->len)) {
        /* Two remote pieces split at the page boundary: a transfer stops
         * at the first piece that faults, so a window that runs off the end
         * of the stack still gives the part before it. */
        uintptr_t page_end = (addr | 4095) + 1;
        size_t first = page_end - addr < STACK_WINDOW ? page_end - addr : STACK_WINDOW;
        struct iovec local = { w->bytes, STACK_WINDOW };
        struct iovec remote[2] = { { (void *)addr, first }, { (void *)page_end, STACK_WINDOW - first } };
        long n = syscall(SYS_process_vm_readv, self_pid, &local, 1UL, remote, first < STACK_WINDOW ? 2UL : 1UL, 0UL);
        if (n < 8)
            return 0;
        w->base = addr;
        w->len = (size_t)n;
    }
    memcpy(out, w->bytes + (addr - w->base), sizeof *out);
    return 1;
}

/* Whether pc is the kernel's way back from a signal handler: glibc's
 * __restore_rt, `mov $15,%rax; syscall` (rt_sigreturn), which a handler
 * returns into (gdb and libunwind recognise it by these bytes too; its
 * call-frame rule is an expression the table does not keep). The bytes are
 * read only inside a known object's text. */
static int is_signal_return(uintptr_t pc)
{
#if defined(__x86_64__)
    static const unsigned char rt_sigreturn[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
    const native_lib *lib = native_libs_find(pc);
    if (lib == NULL || native_libs_find(pc + sizeof rt_sigreturn - 1) != lib)
        return 0;
    return memcmp((const void *)pc, rt_sigreturn, sizeof rt_sigreturn) == 0;
#else
    (void)pc;
    return 0;
#endif
}

/* The native frames of an interrupted thread, top first, into frames[]:
 * the interrupted PC, then each return address minus one (inside the call,
 * so that it names the caller's line, not the next one). The walk follows
 * each object's call-frame rules (.eh_frame), or its frame pointer where an
 * object has none, and ends where the code belongs to no object: in a Java
 * thread that is the code cache (compiled Java, the interpreter, HotSpot's
 * stubs), where AsyncGetCallTrace takes over. *stop: why it ended early
 * (SAMPLER_STOP_*), 0 if it ended where it should. */
static uint32_t walk_native(const void *ucontext, sample_frame *frames, uint32_t max, int32_t *stop,
                            uint64_t *java_pc)
{
    *stop = 0;
#if defined(__x86_64__)
    const greg_t *regs = ((const ucontext_t *)ucontext)->uc_mcontext.gregs;
    uintptr_t pc = (uintptr_t)regs[REG_RIP], sp = (uintptr_t)regs[REG_RSP], fp = (uintptr_t)regs[REG_RBP];
    stack_window window = { 0, 0, { 0 } };
    uint32_t n = 0;
    if (max > NATIVE_MAX_FRAMES)
        max = NATIVE_MAX_FRAMES;
    if (max == 0)
        return 0;
    int interrupted = 1;                         /* pc is where the thread was stopped, not a return */
    while (n < max) {
        if (!interrupted && is_signal_return(pc)) {
            /* A signal handler's frame (this agent's, when a CPU sample
             * lands in a wall sample's handler, or the program's own): the
             * interrupted registers are in the ucontext the kernel left on
             * the stack, where the handler's return popped into. */
            const size_t gregs = offsetof(ucontext_t, uc_mcontext.gregs);
            if (!read_stack_word(&window, sp + gregs + REG_RIP * 8, &pc) ||
                !read_stack_word(&window, sp + gregs + REG_RBP * 8, &fp) ||
                !read_stack_word(&window, sp + gregs + REG_RSP * 8, &sp)) {
                *stop = SAMPLER_STOP_READ_FAILED;
                return n;
            }
            interrupted = 1;
            continue;
        }
        uintptr_t at = interrupted ? pc : pc - 1;    /* the call instruction, below the top */
        interrupted = 0;
        const native_lib *lib = native_libs_find(at);
        if (lib == NULL) {
            *java_pc = at;
            if (n > 0)
                *stop = SAMPLER_STOP_UNKNOWN_CODE;   /* the caller decides (Java, thread root) */
            return n;
        }
        frames[n].bci = BCI_NATIVE;
        frames[n].method = SAMPLE_NATIVE_FRAME(at);
        n++;
        const frame_rule *rule = native_lib_rule(lib, at);
        uintptr_t cfa, ra, caller_fp = fp;
        if (rule != NULL && rule->cfa_reg != FRAME_CFA_UNKNOWN) {
            cfa = (rule->cfa_reg == FRAME_CFA_SP ? sp : fp) + (uintptr_t)(intptr_t)rule->cfa_offset;
            if (rule->fp_offset != FRAME_FP_SAME &&
                !read_stack_word(&window, cfa + (uintptr_t)(intptr_t)rule->fp_offset, &caller_fp)) {
                *stop = SAMPLER_STOP_READ_FAILED;
                return n;
            }
        } else if (rule == NULL && fp > sp && fp - sp < (1u << 20)) {
            cfa = fp + 16;             /* no rules for this code: trust a frame pointer */
            if (!read_stack_word(&window, fp, &caller_fp)) {
                *stop = SAMPLER_STOP_READ_FAILED;
                return n;
            }
        } else {
            *stop = SAMPLER_STOP_NO_UNWIND_INFO;
            return n;
        }
        if (cfa <= sp || cfa - sp > (1u << 24) || !read_stack_word(&window, cfa - 8, &ra)) {
            *stop = SAMPLER_STOP_READ_FAILED;
            return n;
        }
        if (ra < 4096)
            return n;                  /* the outermost frame (a thread's start) */
        pc = ra;
        sp = cfa;
        fp = caller_fp;
    }
    *stop = SAMPLER_STOP_DEPTH;
    return n;
#else
    (void)ucontext; (void)frames; (void)max; (void)java_pc;
    return 0;
#endif
}

/* The interrupted PC, where the Java frames begin when no native walk ran. */
static uint64_t interrupted_pc(const void *ucontext)
{
#if defined(__x86_64__)
    return (uint64_t)((const ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
#else
    (void)ucontext;
    return 0;
#endif
}

/* The Java part of a Java thread's stack, by AsyncGetCallTrace, into the
 * trace's frames (see walk_from_previous_instruction and retry_from_caller
 * for the order of tries). */
static void walk_java(asgct_trace *trace, void *ucontext)
{
    if (ucontext != NULL) {
        walk_from_previous_instruction(trace, ucontext);
        if (trace->num_frames == ASGCT_UNKNOWN_JAVA || trace->num_frames == ASGCT_NOT_WALKABLE_JAVA) {
            async_get_call_trace(trace, trace->num_frames_requested, ucontext);
            if (trace->num_frames > 0)
                atomic_fetch_add_explicit(&sampler_lost.at_interrupted_pc, 1, memory_order_relaxed);
        }
    } else {
        async_get_call_trace(trace, trace->num_frames_requested, ucontext);
    }
    if (trace->num_frames == ASGCT_UNKNOWN_JAVA && ucontext != NULL) {
        retry_from_caller(trace, ucontext);
        if (trace->num_frames > 0)
            atomic_fetch_add_explicit(&sampler_lost.recovered_from_caller, 1, memory_order_relaxed);
    }
}

/* Fill a claimed sample: native frames first (native walks on), then the
 * Java frames below them. A walk that ended early leaves a stop frame with
 * its reason under the last frame it made, so a report shows where stacks
 * were cut and why. */
static void fill_sample(raw_sample *s, thread_state *t, int java, void *ucontext, uint32_t max_frames,
                        int perf_fd)
{
    uint32_t n = 0, kernel = 0;
    int32_t stop = 0;
    s->java_pc = 0;
    if (perf_fd >= 0 && kernel_frames && max_frames > 8)
        kernel = read_kernel_frames(perf_fd, s->frames, max_frames / 4);
    if (atomic_load_explicit(&native_walks, memory_order_relaxed) && ucontext != NULL)
        n = walk_native(ucontext, s->frames + kernel,
                        (java ? max_frames / 2 : max_frames > 1 ? max_frames - 1 : 1) - kernel, &stop,
                        &s->java_pc);
    else if (ucontext != NULL)
        s->java_pc = interrupted_pc(ucontext);
    if (n == 0)
        stop = 0;
    n += kernel;
    if (!java) {
        if (stop != 0 && n < max_frames)
            s->frames[n++] = (sample_frame){ BCI_NATIVE, SAMPLE_STOP_FRAME(stop) };
        s->num_frames = n > 0 ? (int32_t)n : SAMPLER_NO_NATIVE_FRAME;
        return;
    }
    if (stop != 0 && stop != SAMPLER_STOP_UNKNOWN_CODE && n < max_frames)
        s->frames[n++] = (sample_frame){ BCI_NATIVE, SAMPLE_STOP_FRAME(stop) };
    asgct_trace trace = { t->env, 0, (asgct_frame *)(void *)(s->frames + n), (jint)(max_frames - n) };
    if (max_frames > n)
        walk_java(&trace, ucontext);
    if (trace.num_frames > 0)
        s->num_frames = (int32_t)n + trace.num_frames;
    else if (n > 0 && n < max_frames) {
        /* Native frames, then no Java frame to be had: the reason goes
         * under them (a thread in the VM during a GC, ...). */
        s->frames[n++] = (sample_frame){ BCI_NATIVE, SAMPLE_STOP_FRAME(trace.num_frames) };
        s->num_frames = (int32_t)n;
    } else {
        s->num_frames = n > 0 ? (int32_t)n : trace.num_frames;
    }
}

static pid_t *list_threads(size_t *n);
static int init_handler(JavaVM *vm, char *err, size_t errlen);
static int free_realtime_signal(int except);
static int install_handler(int signo);

/* ---- wall= ----
 * The ticker (sampler_wall_signal) sends the sampling signal with
 * rt_tgsigqueueinfo: si_code SI_QUEUE, and in si_value this magic in the
 * high half and the sample's weight (intervals it stands for) in the low. */
#define WALL_SIGNAL_MAGIC 0x68707277u     /* "hprw" */

/* Whether the thread was inside a system call (blocked in a futex for park
 * and wait, a read, nanosleep). The signal interrupts the call: the kernel
 * leaves the PC on the `syscall` instruction (0f 05) when it will restart
 * the call after the handler (SA_RESTART), just after it when the call
 * returns EINTR. The code bytes are read only inside a known object's
 * text, which is mapped readable. */
static int in_system_call(const void *ucontext)
{
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)interrupted_pc(ucontext);
    const native_lib *lib = native_libs_find(pc - 2);
    if (lib == NULL || native_libs_find(pc + 1) != lib)
        return 0;
    const unsigned char *code = (const unsigned char *)(pc - 2);
    return (code[0] == 0x0f && code[1] == 0x05) || (code[2] == 0x0f && code[3] == 0x05);
#else
    (void)ucontext;
    return 0;
#endif
}

/* The calling thread's time on a CPU and time runnable but waiting for
 * one, in ns, from /proc/thread-self/schedstat ("run wait slices"; open,
 * read and close are async-signal-safe). 0 where the kernel keeps no
 * scheduler statistics. */
static int read_schedstat(uint64_t *run_ns, uint64_t *wait_ns)
{
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[96];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    uint64_t v[2] = { 0, 0 };
    ssize_t i = 0;
    for (int k = 0; k < 2; k++) {
        if (i >= n || buf[i] < '0' || buf[i] > '9')
            return 0;
        while (i < n && buf[i] >= '0' && buf[i] <= '9')
            v[k] = v[k] * 10 + (uint64_t)(buf[i++] - '0');
        while (i < n && buf[i] == ' ')
            i++;
    }
    *run_ns = v[0];
    *wait_ns = v[1];
    return 1;
}

/* Whether a sample of a thread that is not in a system call counts as
 * runnable (waiting for a CPU) rather than running. The moment of the tick
 * cannot be seen from inside the handler (the thread that runs it has a CPU
 * by then), but the scheduler says how the time since the thread's
 * previous wall sample went: r ns on a CPU, w ns waiting for one. A share
 * r / (r + w) of that time was running; samples are split in that ratio by
 * carrying the remainder from one sample of the thread to the next (error
 * diffusion), so a thread on a CPU 40% of its runnable time has 40% of its
 * samples running, not none (as "mostly waiting: runnable" would give). */
static int was_runnable(thread_state *t)
{
    uint64_t run = 0, wait = 0;
    if (!read_schedstat(&run, &wait))
        return 0;
    uint64_t ran = run - t->sched_run_ns, waited = wait - t->sched_wait_ns;
    if (run < t->sched_run_ns || wait < t->sched_wait_ns)
        ran = run, waited = wait;              /* a new thread in a reused state */
    t->sched_run_ns = run;
    t->sched_wait_ns = wait;
    /* In 1/1024ths: the running share of the interval, plus what earlier
     * samples left over. */
    uint64_t total = ran + waited;
    if (total >= (1ull << 50)) {               /* days: ran * 1024 must not overflow */
        ran >>= 20;
        total >>= 20;
    }
    /* A thread kept off the CPU for several ticks gets their signals queued
     * and handles them back to back when it runs: every one after the first
     * sees an interval of nearly nothing, which says nothing. Those take the
     * share of the last interval that did (counting them running, as a
     * first version did, put spinning threads on a loaded machine at 40-46%
     * running for 22-28% of their life on a CPU). */
    int64_t share;
    if (total >= 100000) {                     /* 0.1 ms */
        share = (int64_t)(ran * 1024 / total);
        t->sched_last_share = share + 1;
    } else {
        share = t->sched_last_share > 0 ? t->sched_last_share - 1 : 1024;
    }
    t->sched_running_credit += share;
    if (t->sched_running_credit >= 512) {
        t->sched_running_credit -= 1024;
        return 0;
    }
    return 1;
}

static void on_wall_signal(thread_state *t, siginfo_t *info, void *ucontext)
{
    if (!atomic_load_explicit(&wall_on, memory_order_relaxed) || ucontext == NULL)
        return;
    int gen = atomic_load_explicit(&generation, memory_order_relaxed);
    int java = t->env != NULL && t->generation == gen;
    if (!java && !(t->native_only == gen && atomic_load_explicit(&native_walks, memory_order_relaxed))) {
        int adopted = adopt_thread(t, info);
        if (adopted == 0)
            return;
        java = adopted == 1;
    }
    raw_sample *s = sample_queue_claim(wall_queue);
    if (s == NULL) {
        atomic_fetch_add_explicit(&sampler_lost.wall_buffer_full, 1, memory_order_relaxed);
        return;
    }
    fill_sample(s, t, java, ucontext, wall_frames, -1);
    uint32_t mounted = java ? mounted_serial : 0;
    s->thread_serial = mounted ? mounted : java ? t->thread_serial : 0;
    s->carrier_serial = mounted ? t->thread_serial : 0;
    /* A Java thread met before it was named (serial 0) is named by its
     * kernel thread id too, rather than charged to no thread. */
    s->os_tid = java && s->thread_serial != 0 ? 0 : t->tid;
    s->weight = (uint32_t)(uintptr_t)info->si_value.sival_ptr;
    if (s->weight == 0)
        s->weight = 1;
    s->flags = in_system_call(ucontext) ? SAMPLE_IN_SYSCALL : was_runnable(t) ? SAMPLE_RUNNABLE : 0;
    sample_queue_publish(wall_queue, s);
}

int sampler_wall_init(JavaVM *vm, sample_queue *q, uint32_t max_frames, char *err, size_t errlen)
{
    if (init_handler(vm, err, errlen) != 0)
        return -1;
    /* A real-time signal of its own: those queue, where a second SIGPROF
     * sent while one is pending (a CPU timer's, or a wall sample of a thread
     * waiting for a CPU) would be merged into it and one sample lost. */
    if (wall_signal == 0) {
        int signo = free_realtime_signal(sample_signal);
        if (signo < 0 || install_handler(signo) != 0) {
            snprintf(err, errlen, "hprof: wall= needs a real-time signal of its own, and every one "
                     "(SIGRTMIN..SIGRTMAX) is in use or cannot be handled");
            return -1;
        }
        wall_signal = signo;
    }
    wall_queue = q;
    wall_frames = max_frames;
    return 0;
}

void sampler_wall_on(int on)
{
    atomic_store(&wall_on, on);
}

int sampler_wall_signal(pid_t tid, uint32_t weight)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = wall_signal;
    si.si_code = SI_QUEUE;
    si.si_pid = self_pid;
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)(((uint64_t)WALL_SIGNAL_MAGIC << 32) | weight);
    return (int)syscall(SYS_rt_tgsigqueueinfo, self_pid, tid, wall_signal, &si);
}

pid_t *sampler_list_threads(size_t *n)
{
    return list_threads(n);
}

static void on_sigprof(int signo, siginfo_t *info, void *ucontext)
{
    (void)signo;
    int saved_errno = errno;
    thread_state *t = &tls;
    /* A signal still in flight after sampler_stop: sampling is over, so it
     * is no sample (and no loss). Every thread that runs Java while
     * sampling is on has a state or gets one (adopt_thread). */
    if (info != NULL && info->si_code == SI_QUEUE &&
        ((uint64_t)(uintptr_t)info->si_value.sival_ptr >> 32) == WALL_SIGNAL_MAGIC) {
        on_wall_signal(t, info, ucontext);
        errno = saved_errno;
        return;
    }
    if (!atomic_load_explicit(&sampling_on, memory_order_relaxed))
        goto out;
    int gen = atomic_load_explicit(&generation, memory_order_relaxed);
    int java = t->env != NULL && t->generation == gen;
    if (!java && !(t->native_only == gen && atomic_load_explicit(&native_walks, memory_order_relaxed))) {
        int adopted = adopt_thread(t, info);
        if (adopted == 0)
            goto out;
        java = adopted == 1;
    }
    raw_sample *s = sample_queue_claim(queue);
    if (s == NULL) {
        atomic_fetch_add_explicit(&sampler_lost.buffer_full, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&sampler_lost.taken, 1, memory_order_relaxed);
        goto out;
    }
    fill_sample(s, t, java, ucontext, frames_to_walk, info != NULL && info->si_code > 0 ? info->si_fd : -1);
    uint32_t mounted = java ? mounted_serial : 0;
    s->thread_serial = mounted ? mounted : java ? t->thread_serial : 0;
    s->carrier_serial = mounted ? t->thread_serial : 0;
    /* A Java thread met before it was named (serial 0) is named by its
     * kernel thread id too, rather than charged to no thread. */
    s->os_tid = java && s->thread_serial != 0 ? 0 : t->tid;
    /* A POSIX CPU timer is checked at kernel ticks: one signal may stand for
     * several expired intervals, which the kernel counts as overruns. */
    s->weight = 1;
    if (info != NULL && info->si_code == SI_TIMER && info->si_overrun > 0)
        s->weight += (uint32_t)info->si_overrun;
    atomic_fetch_add_explicit(&sampler_lost.taken, s->weight, memory_order_relaxed);
    sample_queue_publish(queue, s);
out:
    /* perf engine: the event disarmed itself at the overflow that sent this
     * signal (IOC_REFRESH 1); arm it for the next interval. ioctl is a plain
     * system call, safe here. The fd is this thread's own, from TLS. */
    if (!t->has_perf && info != NULL && info->si_code > 0 && (t->env != NULL || t->native_only)) {
        /* A thread first met by a wall= signal: its perf event is known
         * from this, its first CPU signal. */
        t->perf_fd = info->si_fd;
        t->has_perf = 1;
        t->first_period = 1;
    }
    if (t->has_perf && info != NULL && info->si_code > 0 &&
        atomic_load_explicit(&sampling_on, memory_order_relaxed)) {
        if (t->first_period) {
            ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &interval_period);
            t->first_period = 0;
        }
        ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
    }
    errno = saved_errno;
}

/* A task-clock counter of thread `tid` that overflows every interval_ns of
 * its CPU time. Kernel time is counted too when allowed (it is CPU the thread
 * used); otherwise user time only. -1 with errno when perf events are off. */
static int open_task_clock(pid_t tid, uint64_t first_period_ns)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = first_period_ns;
    attr.disabled = 1;
    attr.wakeup_events = 1;
    /* native=y: each overflow also writes the kernel's call chain to the
     * event's ring (the user part is ours to walk), read by the handler. */
    if (atomic_load(&native_walks)) {
        attr.sample_type = PERF_SAMPLE_CALLCHAIN;
        attr.exclude_callchain_user = 1;
    }
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        attr.exclude_kernel = 1;
        attr.sample_type = 0;
        fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    return fd;
}

const char *sampler_engine_name(void)
{
    return engine == SAMPLER_PERF ? "perf_event task-clock (per thread)"
                                  : "POSIX CPU-time timer (per thread; kernel tick resolution)";
}

/* 1: signo has a handler other than ours (SIG_DFL and SIG_IGN are no one's). */
static int signal_taken(int signo)
{
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0)
        return 1;
    if (old.sa_flags & SA_SIGINFO)
        return old.sa_sigaction != NULL && old.sa_sigaction != on_sigprof;
    return old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
}

/* SIGPROF unless another handler owns it (the application or another
 * profiler: taking it over would silently break them). Then the highest
 * real-time signal nobody handles: glibc keeps those below SIGRTMIN, and
 * libraries that take one usually count up from SIGRTMIN. -1: none free. */
static int free_realtime_signal(int except)
{
    for (int s = SIGRTMAX; s >= SIGRTMIN; s--)
        if (s != except && !signal_taken(s))
            return s;
    return -1;
}

static int choose_signal(void)
{
    return signal_taken(SIGPROF) ? free_realtime_signal(-1) : SIGPROF;
}

/* Our handler on signo; 0, or -1 with errno. */
static int install_handler(int signo)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
}

/* Whether fd (an event from open_task_clock) carries kernel call chains:
 * open_task_clock drops them where the kernel refuses kernel sampling, so
 * ask the event itself through a ring mapped for the check. */
static int kernel_chains_allowed(int fd)
{
    void *ring = mmap(NULL, (size_t)page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return 0;
    munmap(ring, (size_t)page_size * 2);
    int paranoid = 2;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    if (f != NULL) {
        if (fscanf(f, "%d", &paranoid) != 1)
            paranoid = 2;
        fclose(f);
    }
    return paranoid <= 1 || geteuid() == 0;
}

/* From this interval on, sampler=auto uses POSIX timers (see sampler_init). */
#define AUTO_TIMER_MIN_MS 10

/* What cpu=samples and wall= share: AsyncGetCallTrace, the signal and its
 * handler. Once; 0, or -1 with a message in err. */
static int init_handler(JavaVM *vm, char *err, size_t errlen)
{
    static int done;
    if (done)
        return 0;
    java_vm = vm;
    self_pid = getpid();
    async_get_call_trace = (asgct_fn)dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
    if (async_get_call_trace == NULL) {
        snprintf(err, errlen, "hprof: cpu=samples and wall= need HotSpot's AsyncGetCallTrace, which this "
                 "JVM does not export (%s); use a HotSpot-based JDK 17 or later", dlerror());
        return -1;
    }
    sample_signal = choose_signal();
    if (sample_signal < 0) {
        snprintf(err, errlen, "hprof: cpu=samples and wall= need a signal: SIGPROF already has another handler "
                 "and every real-time signal (SIGRTMIN..SIGRTMAX) is in use; use cpu=times instead");
        return -1;
    }
    if (sample_signal != SIGPROF)
        fprintf(stderr, "hprof: SIGPROF already has a handler (another profiler, or the application's); "
                "it is left alone and cpu=samples uses signal %d (SIGRTMIN+%d) instead\n",
                sample_signal, sample_signal - SIGRTMIN);
    if (install_handler(sample_signal) != 0) {
        snprintf(err, errlen, "hprof: cannot install the handler of signal %d for cpu=samples: %s",
                 sample_signal, strerror(errno));
        return -1;
    }
    done = 1;
    return 0;
}

int sampler_init(JavaVM *vm, sample_queue *q, int interval_ms, uint32_t max_frames, sampler_engine wanted,
                 char *err, size_t errlen)
{
    if (init_handler(vm, err, errlen) != 0)
        return -1;
    queue = q;
    frames_to_walk = max_frames;
    interval_ns = (long)interval_ms * 1000000L;
    interval_period = (uint64_t)interval_ns;

    /* Engine: perf events give exact intervals, but a per-thread perf event
     * is switched in and out with its thread, which cost +25% CPU on a
     * database doing 85k context switches a second (bench/, db workload).
     * POSIX CPU timers cost nothing per switch but are checked only at the
     * kernel's tick (often 4 ms). So auto takes timers where they can honour
     * the interval (10 ms and more: HPROF's default) and perf below. */
    engine = SAMPLER_TIMER;
    page_size = sysconf(_SC_PAGESIZE);
    if (wanted == SAMPLER_PERF || (wanted == SAMPLER_AUTO && interval_ms < AUTO_TIMER_MIN_MS)) {
        int fd = open_task_clock((pid_t)syscall(SYS_gettid), (uint64_t)interval_ns);
        if (fd >= 0) {
            /* Kernel frames: the event could be opened with the kernel's
             * call chains (perf_event_paranoid <= 1, or root). */
            kernel_frames = atomic_load(&native_walks) && page_size > 0 && kernel_chains_allowed(fd);
            if (atomic_load(&native_walks) && !kernel_frames)
                fprintf(stderr, "hprof: cpu=samples: samples have no kernel frames: this process may not "
                        "sample the kernel (see /proc/sys/kernel/perf_event_paranoid: 1 or less, or root)\n");
            close(fd);
            engine = SAMPLER_PERF;
        } else if (wanted == SAMPLER_PERF) {
            snprintf(err, errlen, "hprof: sampler=perf: perf_event_open is not allowed here "
                     "(%s; see /proc/sys/kernel/perf_event_paranoid); use sampler=timer or "
                     "sampler=auto", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* A free slot in timers[], growing it; called with timers_lock held. */
static int take_timer_slot(void)
{
    for (int i = 0; i < timers_cap; i++) {
        int k = (timers_free_hint + i) % timers_cap;
        if (!timers[k].in_use) {
            timers_free_hint = k + 1;
            return k;
        }
    }
    int ncap = timers_cap ? timers_cap * 2 : 256;
    timer_slot *n = realloc(timers, (size_t)ncap * sizeof *n);
    if (n == NULL)
        return -1;
    memset(n + timers_cap, 0, (size_t)(ncap - timers_cap) * sizeof *n);
    timers = n;
    int k = timers_cap;
    timers_cap = ncap;
    timers_free_hint = k + 1;
    return k;
}

/* The first sample of a thread comes after a random part of an interval,
 * uniform in (0, interval]: with a fixed first period every thread would
 * have to use a whole interval of CPU before its first sample, and a program
 * of many short threads would get almost none (5% of the expected samples
 * for 5000 threads of ~1 ms each at interval=1). Uniform start makes the
 * expected count exactly CPU time / interval for every thread. */
static uint64_t random_first_period(pid_t tid)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t x = ((uint64_t)tid << 32) ^ (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20);
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return 1 + x % (uint64_t)interval_ns;
}

/* The slot of thread tid's timer, or -1; timers_lock held. */
static int slot_of_tid(pid_t tid)
{
    for (int i = 0; i < timers_cap; i++)
        if (timers[i].in_use && timers[i].tid == tid)
            return i;
    return -1;
}

/* ---- kernel frames (perf engine, native=y) ----
 * Each thread's perf event writes, at every overflow, a sample record
 * holding the kernel's call chain into a ring of one data page mapped
 * from its fd. The handler finds the ring by the signal's si_fd (a table
 * filled before the event is armed), copies the kernel frames of the newest
 * record and marks the ring read. Kernel addresses keep their low 62 bits
 * under the native frame tag: bit 61 set tells them from user addresses
 * (below 2^47). */
#define RING_FDS 16384
static _Atomic(struct perf_event_mmap_page *) ring_of_fd[RING_FDS];

static void *map_ring(int fd)
{
    if (!kernel_frames || fd < 0 || fd >= RING_FDS)
        return NULL;
    void *ring = mmap(NULL, (size_t)page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return NULL;
    atomic_store(&ring_of_fd[fd], (struct perf_event_mmap_page *)ring);
    return ring;
}

static void unmap_ring(int fd)
{
    if (fd < 0 || fd >= RING_FDS)
        return;
    struct perf_event_mmap_page *ring = atomic_exchange(&ring_of_fd[fd], NULL);
    if (ring != NULL)
        munmap(ring, (size_t)page_size * 2);
}

static void copy_from_ring(void *out, const unsigned char *data, uint64_t size, uint64_t at, size_t n)
{
    unsigned char *o = out;
    for (size_t i = 0; i < n; i++)
        o[i] = data[(at + i) & (size - 1)];
}

/* Async-signal-safe (loads, stores and copies of mapped memory): the
 * kernel frames of the newest sample in fd's ring, leaf first. */
static uint32_t read_kernel_frames(int fd, sample_frame *frames, uint32_t max)
{
    if (fd < 0 || fd >= RING_FDS)
        return 0;
    struct perf_event_mmap_page *meta = atomic_load_explicit(&ring_of_fd[fd], memory_order_acquire);
    if (meta == NULL)
        return 0;
    const unsigned char *data = (const unsigned char *)meta + page_size;
    uint64_t size = (uint64_t)page_size;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail, newest = UINT64_MAX;
    while (tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header h;
        copy_from_ring(&h, data, size, tail, sizeof h);
        if (h.size < sizeof h || tail + h.size > head)
            break;
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 8)
            newest = tail;
        tail += h.size;
    }
    uint32_t n = 0;
    if (newest != UINT64_MAX) {
        struct perf_event_header h;
        uint64_t nr = 0;
        copy_from_ring(&h, data, size, newest, sizeof h);
        copy_from_ring(&nr, data, size, newest + sizeof h, 8);
        if (nr > (h.size - sizeof h - 8) / 8)
            nr = (h.size - sizeof h - 8) / 8;
        int in_kernel = 0;
        for (uint64_t i = 0; i < nr && n < max; i++) {
            uint64_t ip;
            copy_from_ring(&ip, data, size, newest + sizeof h + 8 + 8 * i, 8);
            if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
                in_kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
                continue;
            }
            if (in_kernel && (ip >> 61) == 7)
                frames[n++] = (sample_frame){ BCI_NATIVE, SAMPLE_NATIVE_FRAME(ip & ~SAMPLE_TAG_MASK) };
        }
    }
    __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
    return n;
}

/* perf engine: an event owned by this thread that signals it on overflow. */
static int start_perf(pid_t tid, int slot, uint64_t first_period_ns)
{
    int fd = open_task_clock(tid, first_period_ns);
    if (fd < 0)
        return -1;
    map_ring(fd);                  /* without it, this thread's samples have no kernel frames */
    struct f_owner_ex owner = { F_OWNER_TID, tid };
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, sample_signal) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        int e = errno;
        unmap_ring(fd);
        close(fd);
        errno = e;
        return -1;
    }
    timers[slot].perf_fd = fd;
    return 0;
}

/* timer engine: a POSIX timer on this thread's CPU clock. */
static int start_timer(pid_t tid, int slot)
{
    /* Linux's clock id for a thread's CPU time (CPUCLOCK_SCHED, per thread):
     * what pthread_getcpuclockid gives, for any thread of this process. */
    clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6u);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sample_signal;
    sev.sigev_notify_thread_id = tid;
    if (timer_create(clock, &sev, &timers[slot].id) != 0)
        return -1;
    return 0;
}

static void release_slot(int slot)
{
    if (engine == SAMPLER_PERF) {
        unmap_ring(timers[slot].perf_fd);
        close(timers[slot].perf_fd);     /* also discards its pending overflow */
    }
    else
        timer_delete(timers[slot].id);   /* also drops a signal still queued from it */
    timers[slot].in_use = 0;
    timers[slot].tid = 0;
}

/* Arm a slot's timer or counter for its first period. */
static int arm_slot(int slot, uint64_t first)
{
    if (engine == SAMPLER_PERF)
        return ioctl(timers[slot].perf_fd, PERF_EVENT_IOC_RESET, 0) == 0 &&
               ioctl(timers[slot].perf_fd, PERF_EVENT_IOC_REFRESH, 1) == 0 ? 0 : -1;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(first / 1000000000u);
    its.it_value.tv_nsec = (long)(first % 1000000000u);
    its.it_interval.tv_sec = interval_ns / 1000000000L;
    its.it_interval.tv_nsec = interval_ns % 1000000000L;
    return timer_settime(timers[slot].id, 0, &its, NULL);
}

/* A new timer for thread tid in a free slot; timers_lock held. -1 with errno. */
static int new_slot(pid_t tid, uint64_t first)
{
    int slot = take_timer_slot();
    if (slot < 0) {
        errno = ENOMEM;
        return -1;
    }
    if ((engine == SAMPLER_PERF ? start_perf(tid, slot, first) : start_timer(tid, slot)) != 0)
        return -1;
    timers[slot].in_use = 1;
    timers[slot].tid = tid;
    return slot;
}

/* The calling thread's state is current: filled since the last
 * sampler_start (a state from before a `stop` names a timer since deleted). */
static int tls_current(void)
{
    return tls.env != NULL && tls.generation == atomic_load_explicit(&generation, memory_order_relaxed);
}

int sampler_thread_start(JNIEnv *env, uint32_t thread_serial)
{
    if (!atomic_load(&sampling_on))
        return 0;
    if (tls_current())
        return 1;                      /* already sampled (VMInit and ThreadStart both saw it) */
    tls.env = NULL;
    atomic_signal_fence(memory_order_seq_cst);

    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&timers_lock);
    /* A timer made for this thread from outside (it existed when sampling
     * started) is adopted: one timer per thread. */
    uint64_t first = random_first_period(tid);
    int slot = slot_of_tid(tid);
    int adopted = slot >= 0;
    if (!adopted && (slot = new_slot(tid, first)) < 0) {
        int e = errno;
        pthread_mutex_unlock(&timers_lock);
        errno = e;
        return -1;
    }
    /* Fill the thread state before the first signal can arrive. */
    tls.thread_serial = thread_serial;
    tls.perf_fd = timers[slot].perf_fd;
    tls.has_perf = engine == SAMPLER_PERF;
    tls.first_period = adopted ? 1 : first != (uint64_t)interval_ns;
    tls.generation = atomic_load(&generation);
    atomic_signal_fence(memory_order_seq_cst);
    tls.env = env;

    /* Adopted: (re)armed too, in case the handler disarmed it before this
     * thread was known (see adopt_thread). */
    if (arm_slot(slot, first) != 0) {
        int e = errno;
        tls.env = NULL;
        atomic_signal_fence(memory_order_seq_cst);
        tls.has_perf = 0;
        release_slot(slot);
        pthread_mutex_unlock(&timers_lock);
        errno = e;
        return -1;
    }
    pthread_mutex_unlock(&timers_lock);
    return 1;
}

int sampler_thread_start_other(pid_t tid)
{
    if (!atomic_load(&sampling_on))
        return 0;
    pthread_mutex_lock(&timers_lock);
    int rc = 0;
    if (slot_of_tid(tid) < 0) {
        uint64_t first = random_first_period(tid);
        int slot = new_slot(tid, first);
        if (slot < 0 || arm_slot(slot, first) != 0) {
            int e = errno;
            if (slot >= 0)
                release_slot(slot);
            errno = e;
            rc = -1;
        }
    }
    pthread_mutex_unlock(&timers_lock);
    return rc;
}

static int compare_tids(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* The process's threads now, sorted; NULL (errno) if they cannot be listed. */
static pid_t *list_threads(size_t *n)
{
    DIR *dir = opendir("/proc/self/task");
    if (dir == NULL)
        return NULL;
    size_t cap = 64, k = 0;
    pid_t *tids = malloc(cap * sizeof *tids);
    struct dirent *d;
    while (tids != NULL && (d = readdir(dir)) != NULL) {
        char *end = NULL;
        long tid = strtol(d->d_name, &end, 10);
        if (tid <= 0 || *end != '\0')
            continue;
        if (k == cap) {
            pid_t *more = realloc(tids, 2 * cap * sizeof *tids);
            if (more == NULL) {
                free(tids);
                tids = NULL;
                errno = ENOMEM;
                break;
            }
            tids = more;
            cap *= 2;
        }
        tids[k++] = (pid_t)tid;
    }
    closedir(dir);
    if (tids != NULL)
        qsort(tids, k, sizeof *tids, compare_tids);
    *n = k;
    return tids;
}

int sampler_rescan_threads(pid_t **live, size_t *nlive)
{
    size_t n = 0;
    pid_t *tids = list_threads(&n);
    if (live != NULL)
        *live = NULL;
    if (tids == NULL)
        return -1;
    int started = 0;
    if (atomic_load(&sampling_on)) {
        pthread_mutex_lock(&timers_lock);
        /* Timers of threads that are gone: a thread that ended without a
         * ThreadEnd (not a Java thread) keeps its slot otherwise. */
        for (int i = 0; i < timers_cap; i++)
            if (timers[i].in_use && !bsearch(&timers[i].tid, tids, n, sizeof *tids, compare_tids))
                release_slot(i);
        /* Threads without a timer: sorted timers' tids, then one lookup each. */
        size_t have = 0;
        pid_t *timed = malloc(((size_t)timers_cap + 1) * sizeof *timed);
        for (int i = 0; timed != NULL && i < timers_cap; i++)
            if (timers[i].in_use)
                timed[have++] = timers[i].tid;
        if (timed != NULL)
            qsort(timed, have, sizeof *timed, compare_tids);
        for (size_t i = 0; timed != NULL && i < n; i++) {
            if (bsearch(&tids[i], timed, have, sizeof *timed, compare_tids))
                continue;
            uint64_t first = random_first_period(tids[i]);
            int slot = new_slot(tids[i], first);
            if (slot >= 0 && arm_slot(slot, first) != 0)
                release_slot(slot);      /* it ended meanwhile: nothing lost */
            else if (slot >= 0)
                started++;
        }
        free(timed);
        pthread_mutex_unlock(&timers_lock);
    }
    if (live != NULL) {
        *live = tids;
        *nlive = n;
    } else {
        free(tids);
    }
    return started;
}

int sampler_start_every_thread(void)
{
    return sampler_rescan_threads(NULL, NULL);
}

void sampler_native(int on)
{
    atomic_store(&native_walks, on);
}

void sampler_thread_end(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&timers_lock);
    /* Stop the handler from using this thread's state before it goes. */
    tls.env = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    tls.has_perf = 0;
    /* Its timer, made by itself or from outside; sampler_stop may have
     * released it already. */
    int slot = slot_of_tid(tid);
    if (slot >= 0)
        release_slot(slot);
    pthread_mutex_unlock(&timers_lock);
}

void sampler_start(void)
{
    atomic_fetch_add(&generation, 1);
    atomic_store(&sampling_on, 1);
}

/* Whether another handler has replaced ours on the signal we sample with
 * (a library that installs a SIGPROF handler after the agent started). It
 * would then get our timers' signals, and we no sample. *who: its address. */
int sampler_handler_replaced(void **who)
{
    struct sigaction now;
    if (sigaction(sample_signal, NULL, &now) != 0)
        return 0;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigprof)
        return 0;
    *who = (now.sa_flags & SA_SIGINFO) ? (void *)now.sa_sigaction : (void *)now.sa_handler;
    return 1;
}

/* Every timer deleted (sampler_stop, sampler_move_signal); timers_lock held. */
static void release_every_slot_locked(void)
{
    for (int i = 0; i < timers_cap; i++)
        if (timers[i].in_use)
            release_slot(i);
}

int sampler_move_signal(int *from, int *to)
{
    *from = sample_signal;
    atomic_store(&sampling_on, 0);
    /* Not ours again, even if its new owner set SIG_DFL or SIG_IGN. */
    int s = free_realtime_signal(sample_signal);
    if (s >= 0 && install_handler(s) != 0)
        s = -1;
    *to = s;
    /* Every timer goes, those a thread made while this was starting too:
     * each still names the old signal. */
    pthread_mutex_lock(&timers_lock);
    release_every_slot_locked();
    if (s >= 0)
        sample_signal = s;
    pthread_mutex_unlock(&timers_lock);
    return s < 0 ? -1 : 0;
}

void sampler_stop(void)
{
    atomic_store(&sampling_on, 0);
    pthread_mutex_lock(&timers_lock);
    release_every_slot_locked();
    pthread_mutex_unlock(&timers_lock);
    /* Not SIG_DFL: a SIGPROF still in flight would then kill the process.
     * The handler stays installed and ignores signals once sampling_on is 0
     * (the library is never unloaded while the VM runs). */
}
