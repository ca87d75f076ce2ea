/* sampler.c: see sampler.h.
 *
 * This file: the settings, the signal handler (CPU and wall= samples), the
 * choice of signal and engine, sampler_init. The Java frames are walked in
 * sampler_java.c, the native and kernel frames in sampler_stack.c; the
 * timers and the threads they follow are sampler_threads.c's. */
#include "sampler_internal.h"
#include "../cpu/native_libs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

sampler_losses sampler_lost;

asgct_fn             sampler_async_get_call_trace;
JavaVM              *sampler_java_vm;              /* for threads the agent never saw start */
sampler_engine       sampler_engine_used;
/* cpu=samples' engine, and below wall='s: global, because the signal handler gets no user data. */
static struct {
    sample_queue *queue;
    uint32_t frames_to_walk;
    uint64_t interval_period; /* interval_ns as PERF_EVENT_IOC_PERIOD wants it */
} cpu_sampling;
long                 sampler_interval_ns;
atomic_int           sampler_sampling_on;
int                  sampler_sample_signal = SIGPROF; /* SIGPROF, or a real-time signal if it is taken */
atomic_int           sampler_generation = 1;       /* 1 + sampler_start calls: thread states older are stale
                                                   * (fresh TLS holds 0, which is never current) */
atomic_int           sampler_native_walks;         /* sampler_native: every thread, native frames too */
static struct {
    sample_queue *queue; /* wall=: sampler_wall_init */
    int signal; /* wall='s real-time signal (same handler) */
    uint32_t frames;
    atomic_int on;
} wall_sampling;
pid_t                sampler_self_pid;             /* for process_vm_readv on our own memory */
int                  sampler_kernel_frames;        /* perf engine with kernel call chains allowed */
long                 sampler_page_size;

/* Per-thread state read by the handler (sampler_internal.h). */
__thread thread_state sampler_tls __attribute__((tls_model("initial-exec")));

/* The virtual thread a carrier runs (sampler_set_mounted), 0: none. Apart
 * from tls: the handler reads it whatever the thread's state. */
static __thread volatile uint32_t mounted_serial __attribute__((tls_model("initial-exec")));

void sampler_set_mounted(uint32_t serial)
{
    mounted_serial = serial;
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
    if (perf_fd >= 0 && sampler_kernel_frames && max_frames > 8)
        kernel = sampler_read_kernel_frames(perf_fd, s->frames, max_frames / 4);
    if (atomic_load_explicit(&sampler_native_walks, memory_order_relaxed) && ucontext != NULL)
        n = sampler_walk_native(ucontext, s->frames + kernel,
                        (java ? max_frames / 2 : max_frames > 1 ? max_frames - 1 : 1) - kernel, &stop,
                        &s->java_pc);
    else if (ucontext != NULL)
        s->java_pc = sampler_interrupted_pc(ucontext);
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
        sampler_walk_java(&trace, ucontext);
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

static int init_handler(JavaVM *vm, char *err, size_t errlen);

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
    uintptr_t pc = (uintptr_t)sampler_interrupted_pc(ucontext);
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
    if (!atomic_load_explicit(&wall_sampling.on, memory_order_relaxed) || ucontext == NULL)
        return;
    int gen = atomic_load_explicit(&sampler_generation, memory_order_relaxed);
    int java = t->env != NULL && t->generation == gen;
    if (!java && !(t->native_only == gen && atomic_load_explicit(&sampler_native_walks, memory_order_relaxed))) {
        int adopted = sampler_adopt_thread(t, info);
        if (adopted == 0)
            return;
        java = adopted == 1;
    }
    raw_sample *s = sample_queue_claim(wall_sampling.queue);
    if (s == NULL) {
        atomic_fetch_add_explicit(&sampler_lost.wall_buffer_full, 1, memory_order_relaxed);
        return;
    }
    fill_sample(s, t, java, ucontext, wall_sampling.frames, -1);
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
    sample_queue_publish(wall_sampling.queue, s);
}

int sampler_wall_init(JavaVM *vm, sample_queue *q, uint32_t max_frames, char *err, size_t errlen)
{
    if (init_handler(vm, err, errlen) != 0)
        return -1;
    /* A real-time signal of its own: those queue, where a second SIGPROF
     * sent while one is pending (a CPU timer's, or a wall sample of a thread
     * waiting for a CPU) would be merged into it and one sample lost. */
    if (wall_sampling.signal == 0) {
        int signo = sampler_free_realtime_signal(sampler_sample_signal);
        if (signo < 0 || sampler_install_handler(signo) != 0) {
            snprintf(err, errlen, "hprof: wall= needs a real-time signal of its own, and every one "
                     "(SIGRTMIN..SIGRTMAX) is in use or cannot be handled");
            return -1;
        }
        wall_sampling.signal = signo;
    }
    wall_sampling.queue = q;
    wall_sampling.frames = max_frames;
    return 0;
}

void sampler_wall_on(int on)
{
    if (on)
        sampler_note_adoptable();
    atomic_store(&wall_sampling.on, on);
}

int sampler_wall_signal(pid_t tid, uint32_t weight)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = wall_sampling.signal;
    si.si_code = SI_QUEUE;
    si.si_pid = sampler_self_pid;
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)(((uint64_t)WALL_SIGNAL_MAGIC << 32) | weight);
    return (int)syscall(SYS_rt_tgsigqueueinfo, sampler_self_pid, tid, wall_sampling.signal, &si);
}

void sampler_on_sigprof(int signo, siginfo_t *info, void *ucontext)
{
    (void)signo;
    int saved_errno = errno;
    thread_state *t = &sampler_tls;
    /* A signal still in flight after sampler_stop: sampling is over, so it
     * is no sample (and no loss). Every thread that runs Java while
     * sampling is on has a state or gets one (sampler_adopt_thread). */
    if (info != NULL && info->si_code == SI_QUEUE &&
        ((uint64_t)(uintptr_t)info->si_value.sival_ptr >> 32) == WALL_SIGNAL_MAGIC) {
        on_wall_signal(t, info, ucontext);
        errno = saved_errno;
        return;
    }
    if (!atomic_load_explicit(&sampler_sampling_on, memory_order_relaxed))
        goto out;
    int gen = atomic_load_explicit(&sampler_generation, memory_order_relaxed);
    int java = t->env != NULL && t->generation == gen;
    if (!java && !(t->native_only == gen && atomic_load_explicit(&sampler_native_walks, memory_order_relaxed))) {
        int adopted = sampler_adopt_thread(t, info);
        if (adopted == 0)
            goto out;
        java = adopted == 1;
    }
    raw_sample *s = sample_queue_claim(cpu_sampling.queue);
    if (s == NULL) {
        atomic_fetch_add_explicit(&sampler_lost.buffer_full, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&sampler_lost.taken, 1, memory_order_relaxed);
        goto out;
    }
    fill_sample(s, t, java, ucontext, cpu_sampling.frames_to_walk, info != NULL && info->si_code > 0 ? info->si_fd : -1);
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
    sample_queue_publish(cpu_sampling.queue, s);
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
        atomic_load_explicit(&sampler_sampling_on, memory_order_relaxed)) {
        if (t->first_period) {
            ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &cpu_sampling.interval_period);
            t->first_period = 0;
        }
        ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
    }
    errno = saved_errno;
}

/* A task-clock counter of thread `tid` that overflows every interval_ns of
 * its CPU time. Kernel time is counted too when allowed (it is CPU the thread
 * used); otherwise user time only. -1 with errno when perf events are off. */
int sampler_open_task_clock(pid_t tid, uint64_t first_period_ns)
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
    if (atomic_load(&sampler_native_walks)) {
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
    return sampler_engine_used == SAMPLER_PERF ? "perf_event task-clock (per thread)"
                                  : "POSIX CPU-time timer (per thread; kernel tick resolution)";
}

/* 1: signo has a handler other than ours (SIG_DFL and SIG_IGN are no one's). */
static int signal_taken(int signo)
{
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0)
        return 1;
    if (old.sa_flags & SA_SIGINFO)
        return old.sa_sigaction != NULL && old.sa_sigaction != sampler_on_sigprof;
    return old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
}

/* SIGPROF unless another handler owns it (the application or another
 * profiler: taking it over would silently break them). Then the highest
 * real-time signal nobody handles: glibc keeps those below SIGRTMIN, and
 * libraries that take one usually count up from SIGRTMIN. -1: none free. */
int sampler_free_realtime_signal(int except)
{
    for (int s = SIGRTMAX; s >= SIGRTMIN; s--)
        if (s != except && !signal_taken(s))
            return s;
    return -1;
}

static int choose_signal(void)
{
    return signal_taken(SIGPROF) ? sampler_free_realtime_signal(-1) : SIGPROF;
}

/* Our handler on signo; 0, or -1 with errno. */
int sampler_install_handler(int signo)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sampler_on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
}

/* Whether fd (an event from sampler_open_task_clock) carries kernel call chains:
 * sampler_open_task_clock drops them where the kernel refuses kernel sampling, so
 * ask the event itself through a ring mapped for the check. */
static int kernel_chains_allowed(int fd)
{
    void *ring = mmap(NULL, (size_t)sampler_page_size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return 0;
    munmap(ring, (size_t)sampler_page_size * 2);
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
    sampler_java_vm = vm;
    sampler_self_pid = getpid();
    const char *why = "";
    sampler_async_get_call_trace = async_trace_function(&why);
    if (sampler_async_get_call_trace == NULL) {
        snprintf(err, errlen, "hprof: cpu=samples and wall= need HotSpot's AsyncGetCallTrace, which this "
                 "JVM does not export (%s); use a HotSpot-based JDK 17 or later", why);
        return -1;
    }
    sampler_sample_signal = choose_signal();
    if (sampler_sample_signal < 0) {
        snprintf(err, errlen, "hprof: cpu=samples and wall= need a signal: SIGPROF already has another handler "
                 "and every real-time signal (SIGRTMIN..SIGRTMAX) is in use; use cpu=times instead");
        return -1;
    }
    if (sampler_sample_signal != SIGPROF)
        fprintf(stderr, "hprof: SIGPROF already has a handler (another profiler, or the application's); "
                "it is left alone and cpu=samples uses signal %d (SIGRTMIN+%d) instead\n",
                sampler_sample_signal, sampler_sample_signal - SIGRTMIN);
    if (sampler_install_handler(sampler_sample_signal) != 0) {
        snprintf(err, errlen, "hprof: cannot install the handler of signal %d for cpu=samples: %s",
                 sampler_sample_signal, strerror(errno));
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
    cpu_sampling.queue = q;
    cpu_sampling.frames_to_walk = max_frames;
    sampler_interval_ns = (long)interval_ms * 1000000L;
    cpu_sampling.interval_period = (uint64_t)sampler_interval_ns;

    /* Engine: perf events give exact intervals, but a per-thread perf event
     * is switched in and out with its thread, which cost +25% CPU on a
     * database doing 85k context switches a second (bench/, db workload).
     * POSIX CPU timers cost nothing per switch but are checked only at the
     * kernel's tick (often 4 ms). So auto takes timers where they can honour
     * the interval (10 ms and more: HPROF's default) and perf below. */
    sampler_engine_used = SAMPLER_TIMER;
    sampler_page_size = sysconf(_SC_PAGESIZE);
    if (wanted == SAMPLER_PERF || (wanted == SAMPLER_AUTO && interval_ms < AUTO_TIMER_MIN_MS)) {
        int fd = sampler_open_task_clock((pid_t)syscall(SYS_gettid), (uint64_t)sampler_interval_ns);
        if (fd >= 0) {
            /* Kernel frames: the event could be opened with the kernel's
             * call chains (perf_event_paranoid <= 1, or root). */
            sampler_kernel_frames = atomic_load(&sampler_native_walks) && sampler_page_size > 0 && kernel_chains_allowed(fd);
            if (atomic_load(&sampler_native_walks) && !sampler_kernel_frames)
                fprintf(stderr, "hprof: cpu=samples: samples have no kernel frames: this process may not "
                        "sample the kernel (see /proc/sys/kernel/perf_event_paranoid: 1 or less, or root)\n");
            close(fd);
            sampler_engine_used = SAMPLER_PERF;
        } else if (wanted == SAMPLER_PERF) {
            snprintf(err, errlen, "hprof: sampler=perf: perf_event_open is not allowed here "
                     "(%s; see /proc/sys/kernel/perf_event_paranoid); use sampler=timer or "
                     "sampler=auto", strerror(errno));
            return -1;
        }
    }
    return 0;
}

