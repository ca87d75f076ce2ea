/* sigprof_owner.c: another user of SIGPROF for tests/coexist_tests.py,
 * preloaded (LD_PRELOAD) into a JVM. Before the JVM starts it installs a
 * SIGPROF handler that counts, and an ITIMER_PROF of 5 ms of process CPU
 * that sends SIGPROF; at exit it prints on stderr how many SIGPROFs its
 * handler got and whether SIGPROF's handler is still its own:
 *   SIGPROF_OWNER: ticks=N handler=intact|replaced */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static atomic_ulong ticks;

static void on_prof(int signo)
{
    (void)signo;
    atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
}

__attribute__((constructor)) static void take_sigprof(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every = { { 0, 5000 }, { 0, 5000 } };
    setitimer(ITIMER_PROF, &every, NULL);
}

__attribute__((destructor)) static void report(void)
{
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    struct sigaction now;
    sigaction(SIGPROF, NULL, &now);
    fprintf(stderr, "SIGPROF_OWNER: ticks=%lu handler=%s\n", (unsigned long)atomic_load(&ticks),
            now.sa_handler == on_prof ? "intact" : "replaced");
}
