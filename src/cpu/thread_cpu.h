/*
 * thread_cpu: the calling OS thread's CPU time, read cheaply.
 *
 * A perf_event task-clock counter of the thread's own, whose mmap'ed page
 * the kernel rewrites (its `lock` word) each time the thread is scheduled
 * in: while that word is unchanged the thread has stayed on the CPU since
 * the last exact reading, so its CPU time is that reading plus the wall
 * time since (a vDSO clock read, no system call). cpu=times' Java tracker
 * reads the page itself (HprofThreadState.now); the virtual-thread clocks
 * (src/agent/vthread_clock.c) read it here, on the carrier.
 */
#ifndef HPROF_THREAD_CPU_H
#define HPROF_THREAD_CPU_H

#include <stdint.h>

/* The calling thread's counter page, opened at the first call; NULL where
 * perf_event_open is refused (then every reading is a system call). */
void   *thread_cpu_page(void);
/* Close the calling thread's counter (it ends). */
void    thread_cpu_close(void);
/* The calling thread's CPU time, ns: through the page when it has one. */
int64_t thread_cpu_now(void);
/* The same, always by the system call (CLOCK_THREAD_CPUTIME_ID). */
int64_t thread_cpu_exact(void);

#endif
