/* sigprof_owner.c: another user of SIGPROF for tests/test_coexist.py,
 * preloaded (LD_PRELOAD) into a JVM. Before the JVM starts it installs a
 * SIGPROF handler that counts, and an ITIMER_PROF of 5 ms of process CPU
 * that sends SIGPROF; at exit it prints on stderr how many SIGPROFs its
 * handler got and whether SIGPROF's handler is still its own:
 *   SIGPROF_OWNER: ticks=N handler=intact|replaced
 * With SIGPROF_OWNER_DELAY_MS=N in the environment it does the same from a
 * thread of its own N ms later, when the JVM and the agent have started (a
 * library that takes SIGPROF after the profiler did), and says
 * "SIGPROF_OWNER: installed" on stderr then. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static atomic_ulong ticks;

static void on_prof(int signo)
{
    (void)signo;
    atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
}

static void install(void)
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

static void *install_later(void *arg)
{
    long ms = (long)(size_t)arg;
    struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&pause, NULL);
    install();
    fprintf(stderr, "SIGPROF_OWNER: installed\n");
    return NULL;
}

__attribute__((constructor)) static void take_sigprof(void)
{
    const char *delay = getenv("SIGPROF_OWNER_DELAY_MS");
    if (delay == NULL) {
        install();
        return;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, install_later, (void *)(size_t)atol(delay)) == 0)
        pthread_detach(t);
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
