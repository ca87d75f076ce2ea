/*
 * method_facts: what GetCallTrace asks of each frame's method (its line
 * table, whether it is a constructor, its class), cached per jmethodID.
 * An agent that profiles allocations as HPROF did takes a trace per
 * object; asking JVMTI for a line table per frame of each (HotSpot decodes
 * and allocates it every time) was a tenth of such a run's CPU.
 *
 * A bounded table: SLOTS entries, one method each (a new method takes its
 * slot's place), each line table at most LINES_MAX entries (a longer one is
 * asked of JVMTI each time). Stripes of slots lock apart, so threads taking
 * traces at once seldom meet.
 *
 * A method's line table changes when its class is retransformed or
 * redefined, and its jmethodID dies with its class: the whole table is
 * forgotten (a new generation; entries of an older one read as empty) when
 * the layer retransforms, when the tracker's class-file hook sees any
 * agent's redefinition, and after a collection that unloaded a class. An
 * entry records the generation read before its JVMTI calls, so one made
 * from a table read while a redefinition was under way is already old.
 * The table is used only while that hook watches (jvmpi_method_facts_watch):
 * without it, a debugger's redefinition would go unseen.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

#define SLOTS     4096
#define STRIPES   64
#define LINES_MAX 256

typedef struct line_start { int32_t location, line; } line_start;

typedef struct method_entry {
    jmethodID   method;         /* NULL: empty */
    unsigned    generation;
    int         is_init, is_tracker;
    jobjectID   declaring;
    int         n_lines;        /* -1: not cached (too long, or JVMTI had none) */
    line_start *lines;          /* sorted by location */
} method_entry;

/* The methods' facts: one table per process, as there is one JVMPI agent. */
typedef struct method_table {
    method_entry slots[SLOTS];
    pthread_mutex_t stripes[STRIPES];
    pthread_once_t stripes_made;
    atomic_uint generation;
    atomic_int watched;
} method_table;

static method_table methods = {
    .stripes_made = PTHREAD_ONCE_INIT,
};

static void make_stripes(void) {
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&methods.stripes[i], NULL);
}

void jvmpi_method_facts_watch(void) { atomic_store(&methods.watched, 1); }
void jvmpi_method_facts_forget(void) { atomic_fetch_add(&methods.generation, 1); }

static size_t slot_of(jmethodID method) {
    uint64_t h = (uint64_t)(uintptr_t)method * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 52) & (SLOTS - 1);
}

static int by_location(const void *a, const void *b) {
    const line_start *x = a, *y = b;
    return (x->location > y->location) - (x->location < y->location);
}

/* The line of the last entry starting at or before at; -1 if none. */
static jint line_at(const line_start *lines, int n, jlocation at) {
    int lo = 0, hi = n;                     /* the first entry starting after at */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (lines[mid].location <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? lines[lo - 1].line : -1;
}

/* JVMTI's line table, sorted, in *lines (malloc'ed); its length, or -1. */
static int read_lines(jmethodID method, line_start **lines) {
    jint n = 0;
    jvmtiLineNumberEntry *table = NULL;
    *lines = NULL;
    if ((*jvmpi_jvmti)->GetLineNumberTable(jvmpi_jvmti, method, &n, &table) != JVMTI_ERROR_NONE) return -1;
    int kept = -1;
    line_start *copy = n > 0 && n <= LINES_MAX ? malloc((size_t)n * sizeof *copy) : NULL;
    if (copy != NULL) {
        kept = 0;
        for (jint i = 0; i < n; i++)
            if (table[i].start_location >= 0 && table[i].start_location <= INT32_MAX)
                copy[kept++] = (line_start){ (int32_t)table[i].start_location, table[i].line_number };
        qsort(copy, (size_t)kept, sizeof *copy, by_location);
        *lines = copy;
    }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)table);
    return kept;
}

/* The line from JVMTI directly (a table not cached). */
static jint line_uncached(jmethodID method, jlocation at) {
    jint n = 0;
    jvmtiLineNumberEntry *table = NULL;
    if ((*jvmpi_jvmti)->GetLineNumberTable(jvmpi_jvmti, method, &n, &table) != JVMTI_ERROR_NONE) return -1;
    jint line = -1;
    jlocation best = -1;
    for (jint i = 0; i < n; i++)
        if (table[i].start_location <= at && table[i].start_location >= best) {
            best = table[i].start_location;
            line = table[i].line_number;
        }
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)table);
    return line;
}

/* A fresh entry for method, from JVMTI (lines: read_lines's, or none). */
static void read_entry(jmethodID method, method_entry *e, int with_lines) {
    memset(e, 0, sizeof *e);
    e->method = method;
    e->n_lines = with_lines ? read_lines(method, &e->lines) : -1;
    char *name = NULL;
    if ((*jvmpi_jvmti)->GetMethodName(jvmpi_jvmti, method, &name, NULL, NULL) == JVMTI_ERROR_NONE) {
        e->is_init = strcmp(name, "<init>") == 0;
        (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)name);
    }
    jclass declaring = NULL;
    if ((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &declaring) == JVMTI_ERROR_NONE) {
        e->declaring = jvmpi_id_of(declaring);
        JNIEnv *jni = NULL;
        if ((*jvmpi_vm)->GetEnv(jvmpi_vm, (void **)&jni, JNI_VERSION_1_2) == JNI_OK) (*jni)->DeleteLocalRef(jni, declaring);
    }
    e->is_tracker = jvmpi_methods_is_tracker(method);
}

static void fill(const method_entry *e, jlocation at, jvmpi_frame_facts *out) {
    out->line = at < 0 ? -1 : e->n_lines >= 0 ? line_at(e->lines, e->n_lines, at) : line_uncached(e->method, at);
    out->is_init = e->is_init;
    out->is_tracker = e->is_tracker;
    out->declaring = e->declaring;
}

/* In front of the table, each thread's answers for the frames (method and
 * location) it met last, read without a lock: a thread allocating in a
 * loop meets the same frames again and again. */
typedef struct frame_memo {
    jmethodID method;
    jlocation at;
    unsigned  generation;
    jvmpi_frame_facts facts;
} frame_memo;
#define MEMOS 256

static frame_memo *thread_memos(void) {
    jvmpi_thread *t = jvmpi_thread_current();
    if (t == NULL) return NULL;
    if (t->frame_memos == NULL) t->frame_memos = calloc(MEMOS, sizeof(frame_memo));
    return t->frame_memos;
}

static void facts_shared(jmethodID method, jlocation at, jvmpi_frame_facts *out);

void jvmpi_frame_facts_of(jmethodID method, jlocation at, int need_kind, jvmpi_frame_facts *out) {
    if (!atomic_load(&methods.watched)) {
        method_entry e = { .method = method, .n_lines = -1 };
        if (need_kind) read_entry(method, &e, 0);
        fill(&e, at, out);
        return;
    }
    unsigned now = atomic_load(&methods.generation);
    frame_memo *memos = thread_memos();
    frame_memo *m = memos ? &memos[(slot_of(method) + (size_t)at * 31) & (MEMOS - 1)] : NULL;
    if (m != NULL && m->method == method && m->at == at && m->generation == now) {
        *out = m->facts;
        return;
    }
    facts_shared(method, at, out);
    if (m != NULL) *m = (frame_memo){ method, at, now, *out };
}

static void facts_shared(jmethodID method, jlocation at, jvmpi_frame_facts *out) {
    pthread_once(&methods.stripes_made, make_stripes);
    size_t slot = slot_of(method);
    pthread_mutex_t *lock = &methods.stripes[slot % STRIPES];
    method_entry *e = &methods.slots[slot];
    unsigned now = atomic_load(&methods.generation);
    pthread_mutex_lock(lock);
    if (e->method == method && e->generation == now) {
        fill(e, at, out);
        pthread_mutex_unlock(lock);
        return;
    }
    pthread_mutex_unlock(lock);
    /* JVMTI outside the lock (it may run a safepoint's worth of work) */
    method_entry fresh;
    read_entry(method, &fresh, 1);
    fresh.generation = now;
    fill(&fresh, at, out);
    pthread_mutex_lock(lock);
    line_start *old = e->lines;
    *e = fresh;
    pthread_mutex_unlock(lock);
    free(old);
}
