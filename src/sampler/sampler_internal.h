/*
 * sampler_internal.h (private to src/sampler/sampler*.c): what the handler and
 * its setup (sampler.c), the Java side (sampler_java.c), the native and
 * kernel walks (sampler_stack.c) and the timers and threads
 * (sampler_threads.c) share: HotSpot's AsyncGetCallTrace interface, the
 * per-thread state the handler reads, the settings made at sampler_init.
 */
#ifndef HPROF_SAMPLER_INTERNAL_H
#define HPROF_SAMPLER_INTERNAL_H

#include "sampler.h"
#include "async_trace.h"

#include <signal.h>
#include <stddef.h>

_Static_assert(sizeof(asgct_frame) == sizeof(sample_frame), "frame layouts must match");
_Static_assert(offsetof(asgct_frame, method_id) == offsetof(sample_frame, method),
               "frame layouts must match");

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
    int      jvm_ready;            /* libjvm's thread-locals exist on this thread (it ran a JVMTI
                                      callback): GetEnv is safe in the handler (sampler_may_adopt) */
    uint64_t sched_run_ns;         /* wall=: the thread's time on a CPU and waiting for one */
    uint64_t sched_wait_ns;        /* (schedstat) at its previous sample */
    int64_t  sched_running_credit; /* wall=: running share carried to the next sample (was_runnable) */
    int64_t  sched_last_share;     /* wall=: the running share of its last measurable interval, + 1 */
} thread_state;

/* Set once by sampler_init and sampler_wall_init (sampler.c), read by the
 * handler's walks and by the timers. */
extern asgct_fn       sampler_async_get_call_trace;
extern JavaVM        *sampler_java_vm;           /* for threads the agent never saw start */
extern sampler_engine sampler_engine_used;
extern long           sampler_interval_ns;
extern atomic_int     sampler_sampling_on;
extern int            sampler_sample_signal;     /* SIGPROF, or a real-time signal if it is taken */
extern atomic_int     sampler_generation;        /* 1 + sampler_start calls (sampler.c) */
extern atomic_int     sampler_native_walks;      /* sampler_native: every thread, native frames too */
extern pid_t          sampler_self_pid;          /* for process_vm_readv on our own memory */
extern int            sampler_kernel_frames;     /* perf engine with kernel call chains allowed */
extern long           sampler_page_size;
/* The calling thread's state (sampler.c): the handler reads it, the timers
 * fill it at thread start and clear it at thread end. */
extern __thread thread_state sampler_tls __attribute__((tls_model("initial-exec")));

/* The Java side (sampler_java.c), for the handler: a thread's state filled
 * at its first signal, and the walk of its Java frames. */
int  sampler_adopt_thread(thread_state *t, const siginfo_t *info);
/* Async-signal-safe: the calling thread ran a JVMTI callback or was alive
 * when sampling started, so GetEnv may be called on it from the signal
 * handler (sampler_threads.c says why not on others). */
int  sampler_may_adopt(const thread_state *t);
/* The threads alive now are the ones sampler_may_adopt allows. */
void sampler_note_adoptable(void);
void sampler_walk_java(asgct_trace *trace, void *ucontext);

/* Async-signal-safe walks (sampler_stack.c), for the handler, and the perf
 * rings the timers map for them. */
uint32_t sampler_walk_native(const void *ucontext, sample_frame *frames, uint32_t max, int32_t *stop,
                             uint64_t *java_pc);
uint64_t sampler_interrupted_pc(const void *ucontext);
uint32_t sampler_read_kernel_frames(int fd, sample_frame *frames, uint32_t max);
void    *sampler_map_ring(int fd);
void     sampler_unmap_ring(int fd);

/* The handler and its signal (sampler.c), for the timers and threads. */
void sampler_on_sigprof(int signo, siginfo_t *info, void *ucontext);
int  sampler_open_task_clock(pid_t tid, uint64_t first_period_ns);
int  sampler_free_realtime_signal(int except);
int  sampler_install_handler(int signo);

#endif
