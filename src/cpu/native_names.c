/* native_names.c: see native_names.h. */
#include "native_names.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_libs.h"
#include "sample_queue.h"

serial_t native_frame_method(profile_tables *tables, uint64_t pc, void *context)
{
    (void)context;
    /* A kernel frame keeps its address's low 62 bits (sample_queue.h's
     * tag takes the top two): bit 61 marks it, the top bits come back. */
    if (pc & (1ull << 61))
        pc |= SAMPLE_TAG_MASK;
    const char *object = NULL;
    char name[1024];
    uintptr_t function = 0;
    int kind = native_libs_symbolize((uintptr_t)pc, &object, name, sizeof name, &function);
    if (kind == 0)
        return 0;
    /* Keyed by the function's address, tagged as sample frames are: no
     * jmethodID (a user-space pointer) or pseudo method id is one. */
    uint64_t id = SAMPLE_TAG_NATIVE_PC | ((uint64_t)function & ~SAMPLE_TAG_MASK);
    serial_t known = method_find(tables, id);
    if (known)
        return known;
    /* A compiler's clone of a function (".cold", ".part.0") is that
     * function to a reader of a profile. */
    char *clone = strstr(name, " [clone ");
    if (clone)
        *clone = '\0';

    char class_sig[300];
    snprintf(class_sig, sizeof class_sig, "L[%s];", object);
    method_desc d = { 0 };
    d.class_serial = class_intern(tables, class_sig);
    d.name = name;
    d.signature = "";
    d.source_file = object;
    d.is_native = 1;
    d.kind = kind == NATIVE_KIND_JVM ? FRAME_KIND_JVM : kind == NATIVE_KIND_KERNEL ? FRAME_KIND_KERNEL
           : FRAME_KIND_NATIVE;
    return d.class_serial ? method_add(tables, id, &d) : 0;
}

/* ------------------------------------------------------------ OS threads */

/* tid -> serial of the threads named so far and not ended: few (the JVM's
 * own threads, a library's), so a sorted array. */
typedef struct os_thread {
    pid_t    tid;
    serial_t serial;
} os_thread;

/* The OS threads named so far. */
static struct {
    pthread_mutex_t lock;
    os_thread *named;
    size_t nnamed;
    size_t named_cap;
} os_threads = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t position_of(pid_t tid)
{
    size_t lo = 0, hi = os_threads.nnamed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (os_threads.named[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int read_comm(pid_t tid, char *name, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    int ok = fgets(name, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    name[strcspn(name, "\n")] = '\0';
    return 0;
}

serial_t os_thread_serial(profile_tables *tables, int32_t tid, void *context)
{
    (void)context;
    pthread_mutex_lock(&os_threads.lock);
    size_t at = position_of(tid);
    if (at < os_threads.nnamed && os_threads.named[at].tid == tid) {
        serial_t serial = os_threads.named[at].serial;
        pthread_mutex_unlock(&os_threads.lock);
        return serial;
    }
    /* A thread that ended before its samples were drained has no comm to
     * read any more: it still gets a thread of its own, by its id. */
    char name[64];
    if (read_comm(tid, name, sizeof name) != 0)
        snprintf(name, sizeof name, "thread %d (ended)", (int)tid);
    serial_t serial = thread_add(tables, name, "(native)", 0);
    if (serial != 0 && os_threads.nnamed == os_threads.named_cap) {
        size_t cap = os_threads.named_cap ? os_threads.named_cap * 2 : 64;
        os_thread *more = realloc(os_threads.named, cap * sizeof *more);
        if (more != NULL) {
            os_threads.named = more;
            os_threads.named_cap = cap;
        }
    }
    if (serial != 0 && os_threads.nnamed < os_threads.named_cap) {
        memmove(os_threads.named + at + 1, os_threads.named + at, (os_threads.nnamed - at) * sizeof *os_threads.named);
        os_threads.named[at] = (os_thread){ tid, serial };
        os_threads.nnamed++;
    }
    pthread_mutex_unlock(&os_threads.lock);
    return serial;
}

void os_threads_reconcile(profile_tables *tables, const pid_t *live, size_t n)
{
    pthread_mutex_lock(&os_threads.lock);
    size_t kept = 0, k = 0;
    for (size_t i = 0; i < os_threads.nnamed; i++) {
        while (k < n && live[k] < os_threads.named[i].tid)
            k++;
        if (k < n && live[k] == os_threads.named[i].tid)
            os_threads.named[kept++] = os_threads.named[i];
        else
            thread_mark_ended(tables, os_threads.named[i].serial);   /* its tid may serve a new thread */
    }
    os_threads.nnamed = kept;
    pthread_mutex_unlock(&os_threads.lock);
}

void os_threads_clear(void)
{
    pthread_mutex_lock(&os_threads.lock);
    free(os_threads.named);
    os_threads.named = NULL;
    os_threads.nnamed = os_threads.named_cap = 0;
    pthread_mutex_unlock(&os_threads.lock);
}
