/*
 * sampler_stack.c: the async-signal-safe reads of the sampler's handler: the
 * native frames of the interrupted thread (call-frame rules or frame
 * pointers, through a window of its stack read with process_vm_readv), and
 * the kernel frames the perf engine's events leave in their rings.
 */
#include "sampler_internal.h"
#include "../cpu/native_libs.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

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
        long n = syscall(SYS_process_vm_readv, sampler_self_pid, &local, 1UL, remote, first < STACK_WINDOW ? 2UL : 1UL, 0UL);
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
uint32_t sampler_walk_native(const void *ucontext, sample_frame *frames, uint32_t max, int32_t *stop,
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
uint64_t sampler_interrupted_pc(const void *ucontext)
{
#if defined(__x86_64__)
    return (uint64_t)((const ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
#else
    (void)ucontext;
    return 0;
#endif
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

void *sampler_map_ring(int fd)
{
    if (!sampler_kernel_frames || fd < 0 || fd >= RING_FDS)
        return NULL;
    void *ring = mmap(NULL, (size_t)sampler_page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return NULL;
    atomic_store(&ring_of_fd[fd], (struct perf_event_mmap_page *)ring);
    return ring;
}

void sampler_unmap_ring(int fd)
{
    if (fd < 0 || fd >= RING_FDS)
        return;
    struct perf_event_mmap_page *ring = atomic_exchange(&ring_of_fd[fd], NULL);
    if (ring != NULL)
        munmap(ring, (size_t)sampler_page_size * 2);
}

static void copy_from_ring(void *out, const unsigned char *data, uint64_t size, uint64_t at, size_t n)
{
    unsigned char *o = out;
    for (size_t i = 0; i < n; i++)
        o[i] = data[(at + i) & (size - 1)];
}

/* Async-signal-safe (loads, stores and copies of mapped memory): the
 * kernel frames of the newest sample in fd's ring, leaf first. */
uint32_t sampler_read_kernel_frames(int fd, sample_frame *frames, uint32_t max)
{
    if (fd < 0 || fd >= RING_FDS)
        return 0;
    struct perf_event_mmap_page *meta = atomic_load_explicit(&ring_of_fd[fd], memory_order_acquire);
    if (meta == NULL)
        return 0;
    const unsigned char *data = (const unsigned char *)meta + sampler_page_size;
    uint64_t size = (uint64_t)sampler_page_size;
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
