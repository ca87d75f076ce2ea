/*
 * sampler_threads.c: the sampler's timers and the threads they follow: one
 * perf event or POSIX CPU timer per thread, made at thread start or from
 * outside, the rescan of /proc/self/task, sampler_start/stop and moving to
 * another signal.
 */
#include "sampler_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* Every live timer, so that sampler_stop can delete timers of threads that
 * are still running. Touched only by ThreadStart/End and stop, never by the
 * handler, so a mutex is fine here. */
typedef struct timer_slot {
    timer_t id;                    /* timer engine */
    int     perf_fd;               /* perf engine */
    pid_t   tid;                   /* the thread it signals */
    int     in_use;
} timer_slot;

/* Each sampled thread's timer, in slots reused when threads end. */
static struct {
    pthread_mutex_t lock;
    timer_slot *slots;
    int cap;
    int free_hint;
} timers = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* A free slot in timers.slots, growing it; called with timers.lock held. */
static int take_timer_slot(void)
{
    for (int i = 0; i < timers.cap; i++) {
        int k = (timers.free_hint + i) % timers.cap;
        if (!timers.slots[k].in_use) {
            timers.free_hint = k + 1;
            return k;
        }
    }
    int ncap = timers.cap ? timers.cap * 2 : 256;
    timer_slot *n = realloc(timers.slots, (size_t)ncap * sizeof *n);
    if (n == NULL)
        return -1;
    memset(n + timers.cap, 0, (size_t)(ncap - timers.cap) * sizeof *n);
    timers.slots = n;
    int k = timers.cap;
    timers.cap = ncap;
    timers.free_hint = k + 1;
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
    return 1 + x % (uint64_t)sampler_interval_ns;
}

/* The slot of thread tid's timer, or -1; timers.lock held. */
static int slot_of_tid(pid_t tid)
{
    for (int i = 0; i < timers.cap; i++)
        if (timers.slots[i].in_use && timers.slots[i].tid == tid)
            return i;
    return -1;
}

/* perf engine: an event owned by this thread that signals it on overflow. */
static int start_perf(pid_t tid, int slot, uint64_t first_period_ns)
{
    int fd = sampler_open_task_clock(tid, first_period_ns);
    if (fd < 0)
        return -1;
    sampler_map_ring(fd);                  /* without it, this thread's samples have no kernel frames */
    struct f_owner_ex owner = { F_OWNER_TID, tid };
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, sampler_sample_signal) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        int e = errno;
        sampler_unmap_ring(fd);
        close(fd);
        errno = e;
        return -1;
    }
    timers.slots[slot].perf_fd = fd;
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
    sev.sigev_signo = sampler_sample_signal;
    sev.sigev_notify_thread_id = tid;
    if (timer_create(clock, &sev, &timers.slots[slot].id) != 0)
        return -1;
    return 0;
}

static void release_slot(int slot)
{
    if (sampler_engine_used == SAMPLER_PERF) {
        sampler_unmap_ring(timers.slots[slot].perf_fd);
        close(timers.slots[slot].perf_fd);     /* also discards its pending overflow */
    }
    else
        timer_delete(timers.slots[slot].id);   /* also drops a signal still queued from it */
    timers.slots[slot].in_use = 0;
    timers.slots[slot].tid = 0;
}

/* Arm a slot's timer or counter for its first period. */
static int arm_slot(int slot, uint64_t first)
{
    if (sampler_engine_used == SAMPLER_PERF)
        return ioctl(timers.slots[slot].perf_fd, PERF_EVENT_IOC_RESET, 0) == 0 &&
               ioctl(timers.slots[slot].perf_fd, PERF_EVENT_IOC_REFRESH, 1) == 0 ? 0 : -1;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(first / 1000000000u);
    its.it_value.tv_nsec = (long)(first % 1000000000u);
    its.it_interval.tv_sec = sampler_interval_ns / 1000000000L;
    its.it_interval.tv_nsec = sampler_interval_ns % 1000000000L;
    return timer_settime(timers.slots[slot].id, 0, &its, NULL);
}

/* A new timer for thread tid in a free slot; timers.lock held. -1 with errno. */
static int new_slot(pid_t tid, uint64_t first)
{
    int slot = take_timer_slot();
    if (slot < 0) {
        errno = ENOMEM;
        return -1;
    }
    if ((sampler_engine_used == SAMPLER_PERF ? start_perf(tid, slot, first) : start_timer(tid, slot)) != 0)
        return -1;
    timers.slots[slot].in_use = 1;
    timers.slots[slot].tid = tid;
    return slot;
}

/* The calling thread's state is current: filled since the last
 * sampler_start (a state from before a `stop` names a timer since deleted). */
static int tls_current(void)
{
    return sampler_tls.env != NULL && sampler_tls.generation == atomic_load_explicit(&sampler_generation, memory_order_relaxed);
}

int sampler_thread_start(JNIEnv *env, uint32_t thread_serial)
{
    if (!atomic_load(&sampler_sampling_on))
        return 0;
    if (tls_current())
        return 1;                      /* already sampled (VMInit and ThreadStart both saw it) */
    sampler_tls.env = NULL;
    atomic_signal_fence(memory_order_seq_cst);

    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&timers.lock);
    /* A timer made for this thread from outside (it existed when sampling
     * started) is adopted: one timer per thread. */
    uint64_t first = random_first_period(tid);
    int slot = slot_of_tid(tid);
    int adopted = slot >= 0;
    if (!adopted && (slot = new_slot(tid, first)) < 0) {
        int e = errno;
        pthread_mutex_unlock(&timers.lock);
        errno = e;
        return -1;
    }
    /* Fill the thread state before the first signal can arrive. */
    sampler_tls.jvm_ready = 1;
    sampler_tls.thread_serial = thread_serial;
    sampler_tls.perf_fd = timers.slots[slot].perf_fd;
    sampler_tls.has_perf = sampler_engine_used == SAMPLER_PERF;
    sampler_tls.first_period = adopted ? 1 : first != (uint64_t)sampler_interval_ns;
    sampler_tls.generation = atomic_load(&sampler_generation);
    atomic_signal_fence(memory_order_seq_cst);
    sampler_tls.env = env;

    /* Adopted: (re)armed too, in case the handler disarmed it before this
     * thread was known (see sampler_adopt_thread). */
    if (arm_slot(slot, first) != 0) {
        int e = errno;
        sampler_tls.env = NULL;
        atomic_signal_fence(memory_order_seq_cst);
        sampler_tls.has_perf = 0;
        release_slot(slot);
        pthread_mutex_unlock(&timers.lock);
        errno = e;
        return -1;
    }
    pthread_mutex_unlock(&timers.lock);
    return 1;
}

int sampler_thread_start_other(pid_t tid)
{
    if (!atomic_load(&sampler_sampling_on))
        return 0;
    pthread_mutex_lock(&timers.lock);
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
    pthread_mutex_unlock(&timers.lock);
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

pid_t *sampler_list_threads(size_t *n)
{
    return list_threads(n);
}

/* Timers for the threads of tids (sorted) that have none; those of threads
 * no longer in it released. How many timers were made. */
static int arm_listed(const pid_t *tids, size_t n)
{
    int started = 0;
    if (atomic_load(&sampler_sampling_on)) {
        pthread_mutex_lock(&timers.lock);
        /* Timers of threads that are gone: a thread that ended without a
         * ThreadEnd (not a Java thread) keeps its slot otherwise. */
        for (int i = 0; i < timers.cap; i++)
            if (timers.slots[i].in_use && !bsearch(&timers.slots[i].tid, tids, n, sizeof *tids, compare_tids))
                release_slot(i);
        /* Threads without a timer: sorted timers' tids, then one lookup each. */
        size_t have = 0;
        pid_t *timed = malloc(((size_t)timers.cap + 1) * sizeof *timed);
        for (int i = 0; timed != NULL && i < timers.cap; i++)
            if (timers.slots[i].in_use)
                timed[have++] = timers.slots[i].tid;
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
        pthread_mutex_unlock(&timers.lock);
    }
    return started;
}

int sampler_rescan_threads(pid_t **live, size_t *nlive)
{
    size_t n = 0;
    pid_t *tids = list_threads(&n);
    if (live != NULL)
        *live = NULL;
    if (tids == NULL)
        return -1;
    int started = arm_listed(tids, n);
    if (live != NULL) {
        *live = tids;
        *nlive = n;
    } else {
        free(tids);
    }
    return started;
}

/* The threads alive when sampling started, sorted: the only ones whose
 * first signal may adopt them with GetEnv (sampler_may_adopt). GetEnv
 * reads libjvm's thread-local current thread, and glibc allocates a
 * thread's block of a dlopen'ed library's thread-locals with malloc at the
 * first touch: in the signal handler on a thread that never ran libjvm's
 * code (a thread just made, before HotSpot set its current thread; a
 * native library's own) that malloc can wait for ever on malloc's lock
 * held by the code the signal interrupted. A thread made later is told
 * by its ThreadStart (sampler_jvm_thread_here) instead; until then it is
 * sampled as a thread without Java. */
void sampler_jvm_thread_here(void)
{
    sampler_tls.jvm_ready = 1;
}

#define MAX_ADOPTABLE 16384
/* Global: the signal handler, which gets no user data, reads it. */
static struct {
    pid_t tids[MAX_ADOPTABLE];
    atomic_size_t n;
    atomic_int generation;
    atomic_int overflowed; /* more threads than fit: every thread may be adopted */
} adoptable;

int sampler_may_adopt(const thread_state *t)
{
    if (t->jvm_ready)
        return 1;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (atomic_load_explicit(&adoptable.generation, memory_order_acquire) !=
        atomic_load_explicit(&sampler_generation, memory_order_relaxed))
        return 0;
    if (atomic_load_explicit(&adoptable.overflowed, memory_order_relaxed))
        return 1;
    size_t lo = 0, hi = atomic_load_explicit(&adoptable.n, memory_order_acquire);
    while (lo < hi) {                  /* bsearch is not on the async-signal-safe list */
        size_t mid = lo + (hi - lo) / 2;
        if (adoptable.tids[mid] == tid)
            return 1;
        if (adoptable.tids[mid] < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* tids (sorted; NULL if they could not be listed: every thread may be
 * adopted then) are the threads sampler_may_adopt allows. */
static void note_adoptable(const pid_t *tids, size_t n)
{
    atomic_store_explicit(&adoptable.n, 0, memory_order_release);
    size_t kept = tids == NULL ? 0 : n < MAX_ADOPTABLE ? n : MAX_ADOPTABLE;
    if (kept > 0)
        memcpy(adoptable.tids, tids, kept * sizeof *adoptable.tids);
    atomic_store(&adoptable.overflowed, tids == NULL || n > MAX_ADOPTABLE);
    atomic_store_explicit(&adoptable.n, kept, memory_order_release);
    atomic_store_explicit(&adoptable.generation, atomic_load(&sampler_generation), memory_order_release);
}

int sampler_start_every_thread(void)
{
    /* One listing: adoptable before any of its timers is armed, so no first
     * signal finds its thread not yet allowed. */
    size_t n = 0;
    pid_t *tids = list_threads(&n);
    note_adoptable(tids, n);
    int started = tids != NULL ? arm_listed(tids, n) : -1;
    free(tids);
    return started;
}

void sampler_note_adoptable(void)
{
    size_t n = 0;
    pid_t *tids = list_threads(&n);
    note_adoptable(tids, n);
    free(tids);
}

void sampler_native(int on)
{
    atomic_store(&sampler_native_walks, on);
}

void sampler_thread_end(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&timers.lock);
    /* Stop the handler from using this thread's state before it goes. */
    sampler_tls.env = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    sampler_tls.has_perf = 0;
    /* Its timer, made by itself or from outside; sampler_stop may have
     * released it already. */
    int slot = slot_of_tid(tid);
    if (slot >= 0)
        release_slot(slot);
    pthread_mutex_unlock(&timers.lock);
}

void sampler_start(void)
{
    atomic_fetch_add(&sampler_generation, 1);
    atomic_store(&sampler_sampling_on, 1);
}

/* Whether another handler has replaced ours on the signal we sample with
 * (a library that installs a SIGPROF handler after the agent started). It
 * would then get our timers' signals, and we no sample. *who: its address. */
int sampler_handler_replaced(void **who)
{
    struct sigaction now;
    if (sigaction(sampler_sample_signal, NULL, &now) != 0)
        return 0;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == sampler_on_sigprof)
        return 0;
    *who = (now.sa_flags & SA_SIGINFO) ? (void *)now.sa_sigaction : (void *)now.sa_handler;
    return 1;
}

/* Every timer deleted (sampler_stop, sampler_move_signal); timers.lock held. */
static void release_every_slot_locked(void)
{
    for (int i = 0; i < timers.cap; i++)
        if (timers.slots[i].in_use)
            release_slot(i);
}

int sampler_move_signal(int *from, int *to)
{
    *from = sampler_sample_signal;
    atomic_store(&sampler_sampling_on, 0);
    /* Not ours again, even if its new owner set SIG_DFL or SIG_IGN. */
    int s = sampler_free_realtime_signal(sampler_sample_signal);
    if (s >= 0 && sampler_install_handler(s) != 0)
        s = -1;
    *to = s;
    /* Every timer goes, those a thread made while this was starting too:
     * each still names the old signal. */
    pthread_mutex_lock(&timers.lock);
    release_every_slot_locked();
    if (s >= 0)
        sampler_sample_signal = s;
    pthread_mutex_unlock(&timers.lock);
    return s < 0 ? -1 : 0;
}

void sampler_stop(void)
{
    atomic_store(&sampler_sampling_on, 0);
    pthread_mutex_lock(&timers.lock);
    release_every_slot_locked();
    pthread_mutex_unlock(&timers.lock);
    /* Not SIG_DFL: a SIGPROF still in flight would then kill the process.
     * The handler stays installed and ignores signals once sampling_on is 0
     * (the library is never unloaded while the VM runs). */
}
