/*
 * sampler: samples only threads that are on a CPU, at any instruction.
 *
 * Each Java thread gets its own CPU-time clock event, which delivers SIGPROF
 * to that very thread after every `interval` of CPU it consumes: a perf_event
 * task-clock counter where the kernel allows it (exact intervals), else a
 * POSIX timer on the thread's CPU clock (checked at each kernel tick, so
 * intervals below the tick, often 4 ms, stretch to it). A thread blocked in a read, a sleep or a wait consumes no CPU,
 * so it is never sampled (old HPROF sampled every RUNNABLE thread, and most
 * RUNNABLE threads are blocked in native code). The handler walks the
 * interrupted Java stack with HotSpot's AsyncGetCallTrace, which works from
 * the interrupted program counter rather than waiting for a safepoint, and
 * stores the raw frames in the sample queue. Everything the handler touches
 * is preallocated: no malloc, no locks, errno preserved.
 *
 * sampler_thread_start/end must be called on the thread concerned
 * (JVMTI ThreadStart/ThreadEnd and VMInit run there).
 */
#ifndef HPROF_SAMPLER_H
#define HPROF_SAMPLER_H

#include <jni.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "../cpu/sample_queue.h"

/* Samples the handler could not put in the queue, by reason. */
typedef struct sampler_losses {
    atomic_ullong taken;           /* samples the handler took, by weight, lost ones included:
                                    * the report's total must come to this (soak bench) */
    atomic_ullong buffer_full;     /* every queue slot was in use */
    atomic_ullong recovered_from_caller;  /* not lost: walked from the caller (see sampler.c) */
    atomic_ullong at_interrupted_pc;      /* not lost: walked at the interrupted PC, not the
                                           * instruction before it (see sampler.c) */
    atomic_ullong wall_buffer_full;       /* wall= samples dropped: every slot of its queue in use */
} sampler_losses;

typedef enum { SAMPLER_AUTO = 0, SAMPLER_PERF, SAMPLER_TIMER } sampler_engine;

/* Look up AsyncGetCallTrace, choose the engine (SAMPLER_AUTO: POSIX timers at
 * intervals of 10 ms and more; below, perf events if the kernel allows them,
 * else timers) and install the SIGPROF handler; if SIGPROF already has
 * another handler, it is left alone and, saying so in one line on stderr, a
 * free real-time signal is used instead.
 * Returns 0, or -1 with a message in err. */
int  sampler_init(JavaVM *vm, sample_queue *queue, int interval_ms, uint32_t max_frames,
                  sampler_engine wanted, char *err, size_t errlen);
/* Turn sampling on (again, after sampler_stop): thread states and timers
 * from before are stale, and each thread's timer is made anew by
 * sampler_thread_start or sampler_start_every_thread. */
void sampler_start(void);
/* What drives the samples, for the report header. */
const char *sampler_engine_name(void);
/* Start sampling the calling thread: 1 when it is sampled (now or already),
 * 0 when sampling is off, -1 with errno set on failure. */
int  sampler_thread_start(JNIEnv *env, uint32_t thread_serial);
/* On a thread the JVM runs a JVMTI callback on (ThreadStart): its first
 * signal may ask the JVM which thread it is (see sampler_may_adopt). */
void sampler_jvm_thread_here(void);
/* Sample thread `tid` of this process from now on, from any thread: its
 * state is filled by the handler at its first signal (JNIEnv from the VM,
 * serial from sampler_name_thread). A thread that runs no Java gets one
 * signal and its timer disarmed. Idempotent per thread. */
int  sampler_thread_start_other(pid_t tid);
/* sampler_thread_start_other for every thread of the process (those that
 * existed before the agent, at attach or VMInit). Returns how many, or -1
 * with errno if the threads could not be listed. */
int  sampler_start_every_thread(void);
/* Name the thread whose JNIEnv is env (serial 0: it ended), for the
 * handler's first signal on a thread whose timer was made from outside.
 * Any thread; lock-free. */
void sampler_name_thread(const void *env, uint32_t serial);
/* Every Java thread alive has been named: a thread the handler finds
 * unnamed is not the program's (JIT compiler threads are JavaThreads that
 * JVMTI hides) and is not sampled. 0 (the default): unnamed threads are
 * sampled with serial 0. */
void sampler_names_complete(int complete);
/* The calling thread (a carrier) now runs virtual thread `serial` (0: its
 * own code again): its samples are charged to that serial meanwhile.
 * Called from JVMTI's mount and unmount events, on the carrier. */
void sampler_set_mounted(uint32_t serial);
/* Native walks (sampler_native(1), before sampler_start): every thread of
 * the process is sampled by the CPU it uses, Java or not (GC workers, JIT
 * compilers, the VM thread, a native library's threads), and each sample
 * carries its native frames (SAMPLE_TAG_NATIVE_PC frames, native_libs.h) on
 * top of its Java frames. A thread that is not a Java thread gets
 * thread_serial 0 and its kernel thread id in os_tid. */
void sampler_native(int on);
/* Why a native walk ended early: SAMPLER_STOP_* in sample_queue.h. */
/* sampler_start_every_thread that also drops the timers of threads that are
 * gone: called every few ticks with native walks on, since threads that are
 * not Java threads start and end without any event. *live (if not NULL):
 * the threads alive now, sorted (malloc'd; the caller frees it). Returns
 * how many timers it made, or -1 with errno. */
int  sampler_rescan_threads(pid_t **live, size_t *nlive);
/* ---- wall= ----
 * Wall-clock samples share the handler: a ticker thread (the wall
 * collector's) sends the sampling signal to chosen threads with
 * sampler_wall_signal, whatever they are doing; the handler walks them as
 * for CPU samples (native frames too with sampler_native) into wall='s own
 * queue, with the weight the ticker gave and SAMPLE_IN_SYSCALL when the
 * thread was blocked in a system call. */
int  sampler_wall_init(JavaVM *vm, sample_queue *q, uint32_t max_frames, char *err, size_t errlen);
void sampler_wall_on(int on);
/* 0, or -1 with errno (ESRCH: the thread is gone). weight: the intervals
 * of wall time this sample stands for (>= 1). */
int  sampler_wall_signal(pid_t tid, uint32_t weight);
/* The process's threads now, sorted (malloc'd); NULL with errno. */
pid_t *sampler_list_threads(size_t *n);
/* Stop sampling the calling thread (idempotent). */
void sampler_thread_end(void);
/* Stop every timer; the handler ignores late signals. */
void sampler_stop(void);

/* 1 if another handler replaced ours on the sampling signal (*who: it). */
int  sampler_handler_replaced(void **who);
/* Leave that signal to its new owner: sampling stops, every timer is
 * deleted, and the handler goes on the highest free real-time signal, which
 * timers made from then on use (*from, *to: the signals; *to -1: none free,
 * and -1 returned). The caller starts sampling again as at a start (threads
 * named, sampler_start, sampler_start_every_thread). Agent thread only. */
int  sampler_move_signal(int *from, int *to);

extern sampler_losses sampler_lost;

#endif
