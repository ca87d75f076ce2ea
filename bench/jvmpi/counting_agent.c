/*
 * counting_agent: the JVMPI agent bench/run measures the layer with, written
 * to the specification: "methods" counts METHOD_ENTRY and METHOD_EXIT per
 * thread in JVMPI thread-local storage (the specification's own example),
 * "allocs" counts OBJECT_ALLOC events and their bytes. Writes the totals to
 * out=FILE at JVM_SHUT_DOWN: "entries N exits N" or "objects N bytes N".
 * "dump" takes CLASS_LOAD (and ignores it: the layer announces classes
 * before a dump only to an agent that takes them, as HPROF does) and at
 * JVM_SHUT_DOWN asks for a level-2 HEAP_DUMP, which it leaves unread: what
 * the layer's dump costs, apart from any agent's reading of it. Writes
 * "dump BYTES cpu S": the dump's size, and the process's CPU seconds from
 * the request to its return.
 */
#include <jvmpi.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static JVMPI_Interface *jvmpi;
static char out_path[1024];
static atomic_llong entries, exits, objects, bytes;
static long long dump_bytes = -1;

typedef struct counts { long long entries, exits; } counts;

static void hand_over(JNIEnv *env) {
    counts *c = jvmpi->GetThreadLocalStorage(env);
    if (c == NULL) return;
    atomic_fetch_add(&entries, c->entries);
    atomic_fetch_add(&exits, c->exits);
    jvmpi->SetThreadLocalStorage(env, NULL);
    free(c);
}

static int want_dump;

static double process_cpu(void) {
    struct timespec t;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + t.tv_nsec / 1e9 : 0;
}

static void notify(JVMPI_Event *e) {
    counts *c;
    switch (e->event_type) {
    case JVMPI_EVENT_THREAD_START:
        jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, calloc(1, sizeof(counts)));
        break;
    case JVMPI_EVENT_METHOD_ENTRY:
        if ((c = jvmpi->GetThreadLocalStorage(e->env_id)) != NULL) c->entries++;
        break;
    case JVMPI_EVENT_METHOD_EXIT:
        if ((c = jvmpi->GetThreadLocalStorage(e->env_id)) != NULL) c->exits++;
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        atomic_fetch_add_explicit(&objects, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&bytes, e->u.obj_alloc.size, memory_order_relaxed);
        break;
    case JVMPI_EVENT_THREAD_END: hand_over(e->env_id); break;
    case JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT:
        dump_bytes = e->u.heap_dump.end - e->u.heap_dump.begin;
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: {
        hand_over(e->env_id);
        FILE *f = fopen(out_path, "w");
        if (f == NULL) break;
        if (want_dump) {
            JVMPI_HeapDumpArg level2 = { JVMPI_DUMP_LEVEL_2 };
            double before = process_cpu();
            jint rc = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &level2);
            fprintf(f, rc == JVMPI_SUCCESS ? "dump %lld cpu %.3f\n" : "dump failed\n", dump_bytes,
                    process_cpu() - before);
        } else {
            fprintf(f, "entries %lld exits %lld objects %lld bytes %lld\n", (long long)entries,
                    (long long)exits, (long long)objects, (long long)bytes);
        }
        fclose(f);
        break;
    }
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    const char *out = options ? strstr(options, "out=") : NULL;
    if (out == NULL) {
        fprintf(stderr, "counting_agent: options methods|allocs|dump,out=FILE\n");
        return JNI_ERR;
    }
    snprintf(out_path, sizeof out_path, "%s", out + 4);
    jvmpi->NotifyEvent = notify;
    static const jint methods[] = { JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_METHOD_ENTRY,
                                    JVMPI_EVENT_METHOD_EXIT, JVMPI_EVENT_JVM_SHUT_DOWN };
    static const jint allocs[] = { JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_JVM_SHUT_DOWN };
    static const jint dump[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_JVM_SHUT_DOWN };
    int want_methods = strstr(options, "methods") != NULL;
    want_dump = strstr(options, "dump") != NULL;
    const jint *events = want_methods ? methods : want_dump ? dump : allocs;
    size_t n = want_methods ? sizeof methods / sizeof methods[0]
               : want_dump  ? sizeof dump / sizeof dump[0]
                            : sizeof allocs / sizeof allocs[0];
    for (size_t i = 0; i < n; i++)
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) return JNI_ERR;
    return JNI_OK;
}
