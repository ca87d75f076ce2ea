/* thread_cpu: see thread_cpu.h. */
#include "thread_cpu.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Per thread: its counter, and the last exact reading (Three words of TLS
 * and an anchor: TLS must stay small). */
static _Thread_local struct {
    int   fd;
    void *page;
    struct { uint32_t lock; int valid; int64_t cpu, wall; } anchor;
} counter = { .fd = -1 };

void *thread_cpu_page(void)
{
    if (counter.fd >= 0)
        return counter.page;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
    if (page == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    counter.fd = fd;
    counter.page = page;
    counter.anchor.valid = 0;
    return page;
}

void thread_cpu_close(void)
{
    if (counter.fd < 0)
        return;
    munmap(counter.page, (size_t)sysconf(_SC_PAGESIZE));
    close(counter.fd);
    counter.fd = -1;
    counter.page = NULL;
    counter.anchor.valid = 0;
}

int64_t thread_cpu_exact(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t thread_cpu_now(void)
{
    const volatile struct perf_event_mmap_page *p = thread_cpu_page();
    int64_t wall = wall_now();
    if (p != NULL && counter.anchor.valid && p->lock == counter.anchor.lock)
        return counter.anchor.cpu + (wall - counter.anchor.wall);
    /* The word first: a switch after it changes the word again. Odd: the
     * kernel is mid-update, so the anchor is not trusted. */
    uint32_t lock = p != NULL ? p->lock : 1;
    counter.anchor.cpu = thread_cpu_exact();
    counter.anchor.wall = wall_now();
    counter.anchor.lock = lock;
    counter.anchor.valid = p != NULL && (lock & 1) == 0;
    return counter.anchor.cpu;
}
