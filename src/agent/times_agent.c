/* times_agent: cpu=times; see times_agent.h and HprofTracker.java. */
#include "times_agent.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../bci/bci.h"
#include "../core/trace_builder.h"
#include "../cpu/times_table.h"
#include "jvmti_support.h"

#define TRACKER       "java/lang/HprofTracker"
#define THREAD_STATE  "java/lang/HprofThreadState"

/* build/tracker_classes.c, made from src/agent/java by the Makefile */
extern const unsigned char hprof_tracker_class[], hprof_thread_state_class[];
extern const unsigned hprof_tracker_class_len, hprof_thread_state_class_len;

static struct {
    times_config    cfg;
    atomic_int      ready;           /* the tracker exists: instrument classes */
    atomic_int      linking;         /* natives called once to bind them: do nothing */
    atomic_int      next_id;         /* method ids handed to the rewriter */
    atomic_uint     rewritten, failed;
    jclass          tracker;         /* global ref */
    jmethodID       thread_end, snapshot;
    jfieldID        engaged;
    serial_t        skip[2];         /* tracker classes, left out of traces */
    trace_builder   builder;
    pthread_mutex_t lock;            /* guards retired */
    times_table     retired;         /* totals of threads that ended */
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The calling thread's perf_event task-clock counter, whose mmap'ed page the
 * tracker reads (see HprofThreadState.now). Two words: TLS must stay small. */
static __thread int   thread_perf_fd = -1;
static __thread void *thread_perf_page;

/* ------------------------------------------------------------ rewriting */

/* Classes the tracker itself runs on: instrumenting them would recurse
 * (Object.<init> runs when the tracker allocates; Unsafe reads the page). */
static int must_skip(const char *name) {
    static const char *const skip[] = { TRACKER, THREAD_STATE, "java/lang/Object", "jdk/internal/misc/Unsafe" };
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(name, skip[i]) == 0) return 1;
    return 0;
}

/* Method ids start at 2 (0 marks an empty cache slot in the tracker). An
 * odd id tells the tracker the method is short (BCI_METHOD_SHORT): it may
 * stop timing it once it has seen it is always quick (HprofThreadState). */
static int32_t next_method_id(void *context, const bci_method_info *m) {
    (void)context;
    int32_t n = atomic_fetch_add(&T.next_id, 1) + 1;
    if (n > (INT32_MAX >> 1)) return -1;                 /* out of ids: leave the method alone */
    return (n << 1) | ((m->flags & BCI_METHOD_SHORT) && !(m->flags & BCI_METHOD_LEAF) ? 1 : 0);
}

static void JNICALL on_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass being_redefined,
                                       jobject loader, const char *name, jobject domain,
                                       jint len, const unsigned char *data,
                                       jint *new_len, unsigned char **new_data) {
    (void)jni; (void)being_redefined; (void)loader; (void)domain;
    if (!atomic_load(&T.ready) || name == NULL || must_skip(name)) return;
    bci_config c = { BCI_ENTRY_EXIT | BCI_COUNT_LEAVES, TRACKER, next_method_id, NULL };
    uint8_t *out = NULL;
    size_t out_len = 0;
    char err[512];
    bci_result r = bci_rewrite(data, (size_t)len, &c, &out, &out_len, err, sizeof err);
    if (r == BCI_ERROR) {
        atomic_fetch_add(&T.failed, 1);
        fprintf(stderr, "hprof: cpu=times: class %s is left uninstrumented: %s\n", name, err);
        return;
    }
    if (r != BCI_OK) return;
    unsigned char *mem = NULL;
    if (!jvmti_failed((*jvmti)->Allocate(jvmti, (jlong)out_len, &mem), "Allocate")) {
        memcpy(mem, out, out_len);
        *new_len = (jint)out_len;
        *new_data = mem;
        atomic_fetch_add(&T.rewritten, 1);
    }
    bci_free(out);
}

/* ------------------------------------------------------------ natives */

/* The tracker's natives are found by name: HotSpot looks a native of a
 * boot-loader class up in the agent libraries too. (RegisterNatives on a
 * java.base class makes HotSpot print a warning on stdout.) They are
 * exported, and called once at VMInit while calls are ignored, so that the
 * lookup, which runs Java code, never happens inside the tracker. */

JNIEXPORT jboolean JNICALL Java_java_lang_HprofTracker_register(JNIEnv *jni, jclass cls, jlongArray info) {
    (void)cls;
    if (!atomic_load(&T.ready) || atomic_load(&T.linking)) return JNI_FALSE;
    if (thread_perf_fd < 0) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd >= 0) {
            void *page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
            if (page == MAP_FAILED) { close(fd); fd = -1; }
            else { thread_perf_fd = fd; thread_perf_page = page; }
        }
    }
    jlong v[2] = { (jlong)(uintptr_t)thread_perf_page, (jlong)syscall(SYS_gettid) };
    (*jni)->SetLongArrayRegion(jni, info, 0, 2, v);
    return JNI_TRUE;
}

JNIEXPORT jlong JNICALL Java_java_lang_HprofTracker_cpuTime(JNIEnv *jni, jclass cls) {
    (void)jni; (void)cls;
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Linux's clock id for another thread's CPU clock (CPUCLOCK_SCHED, per thread). */
JNIEXPORT jlong JNICALL Java_java_lang_HprofTracker_cpuTimeOf(JNIEnv *jni, jclass cls, jint tid) {
    (void)jni; (void)cls;
    struct timespec ts;
    clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6u);
    if (tid <= 0 || clock_gettime(id, &ts) != 0) return 0;
    return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

JNIEXPORT jint JNICALL Java_java_lang_HprofTracker_trace(JNIEnv *jni, jclass cls) {
    (void)jni; (void)cls;
    if (atomic_load(&T.linking)) return 0;
    serial_t thread_serial = 0;
    if (T.cfg.per_thread) {
        jthread self = NULL;
        if (!jvmti_failed((*hprof_jvmti)->GetCurrentThread(hprof_jvmti, &self), "GetCurrentThread")) {
            thread_serial = thread_serial_of(self);
            (*jni)->DeleteLocalRef(jni, self);
        }
    }
    return (jint)stack_trace_of(&T.builder, NULL, T.skip, 2, thread_serial);
}

static void close_thread_counter(void) {
    if (thread_perf_fd >= 0) {
        munmap(thread_perf_page, (size_t)sysconf(_SC_PAGESIZE));
        close(thread_perf_fd);
        thread_perf_fd = -1;
        thread_perf_page = NULL;
    }
}

JNIEXPORT void JNICALL Java_java_lang_HprofTracker_retire(JNIEnv *jni, jclass cls, jintArray serials,
                                                          jlongArray calls, jlongArray cpu, jint n, jint tid) {
    (void)cls; (void)tid;
    if (atomic_load(&T.linking)) return;
    jint *s = (*jni)->GetIntArrayElements(jni, serials, NULL);
    jlong *c = (*jni)->GetLongArrayElements(jni, calls, NULL);
    jlong *t = (*jni)->GetLongArrayElements(jni, cpu, NULL);
    if (s && c && t) {
        jint len = (*jni)->GetArrayLength(jni, serials);
        if ((*jni)->GetArrayLength(jni, calls) < len) len = (*jni)->GetArrayLength(jni, calls);
        if ((*jni)->GetArrayLength(jni, cpu) < len) len = (*jni)->GetArrayLength(jni, cpu);
        if (n > len) n = len;
        pthread_mutex_lock(&T.lock);
        for (jint i = 0; i < n; i++)
            if (times_table_add(&T.retired, (serial_t)s[i], (uint64_t)c[i], t[i] > 0 ? (uint64_t)t[i] : 0) != 0) {
                fprintf(stderr, "hprof: cpu=times: out of memory; a thread's totals are lost\n");
                break;
            }
        pthread_mutex_unlock(&T.lock);
    }
    if (s) (*jni)->ReleaseIntArrayElements(jni, serials, s, JNI_ABORT);
    if (c) (*jni)->ReleaseLongArrayElements(jni, calls, c, JNI_ABORT);
    if (t) (*jni)->ReleaseLongArrayElements(jni, cpu, t, JNI_ABORT);
    close_thread_counter();
}

/* ------------------------------------------------------------ set-up */

int times_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps) {
    if (!potential->can_retransform_classes || !potential->can_generate_all_class_hook_events) {
        fprintf(stderr, "hprof: cpu=times needs a JVM that can retransform classes\n");
        return -1;
    }
    caps->can_retransform_classes = 1;
    caps->can_generate_all_class_hook_events = 1;
    return 0;
}

void times_agent_callbacks(jvmtiEventCallbacks *cb) { cb->ClassFileLoadHook = on_class_file_load; }

int times_agent_enable(jvmtiEnv *jvmti, const times_config *config) {
    T.cfg = *config;
    T.builder.depth = config->depth;
    T.builder.lineno = config->lineno;
    T.builder.resolve = resolve_method;
    times_table_init(&T.retired);
    return jvmti_failed((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
                                                           JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL),
                        "SetEventNotificationMode(ClassFileLoadHook)") ? -1 : 0;
}

static int jni_failed(JNIEnv *jni, const void *result, const char *what) {
    if (result != NULL && !(*jni)->ExceptionCheck(jni)) return 0;
    fprintf(stderr, "hprof: cpu=times: %s failed; no CPU TIME will be written\n", what);
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionDescribe(jni); (*jni)->ExceptionClear(jni); }
    return 1;
}

/* Retransform classes loaded before the tracker existed: in batches, and a
 * batch that fails one class at a time, so one bad class costs only itself. */
static void retransform(jvmtiEnv *jvmti, jclass *classes, jint n) {
    const jint batch = 256;
    for (jint i = 0; i < n; i += batch) {
        jint k = n - i < batch ? n - i : batch;
        if ((*jvmti)->RetransformClasses(jvmti, k, classes + i) == JVMTI_ERROR_NONE) continue;
        for (jint j = 0; j < k; j++) {
            jvmtiError err = (*jvmti)->RetransformClasses(jvmti, 1, classes + i + j);
            if (err != JVMTI_ERROR_NONE) {
                char *sig = NULL, *msg = NULL;
                (*jvmti)->GetClassSignature(jvmti, classes[i + j], &sig, NULL);
                (*jvmti)->GetErrorName(jvmti, err, &msg);
                fprintf(stderr, "hprof: cpu=times: cannot retransform %s: %s; it runs uninstrumented\n",
                        sig ? sig : "?", msg ? msg : "?");
                atomic_fetch_add(&T.failed, 1);
                jvmti_free(sig);
                jvmti_free(msg);
            }
        }
    }
}

void times_agent_vm_init(jvmtiEnv *jvmti, JNIEnv *jni) {
    jclass state = (*jni)->DefineClass(jni, THREAD_STATE, NULL, (const jbyte *)hprof_thread_state_class,
                                       (jsize)hprof_thread_state_class_len);
    if (jni_failed(jni, state, "defining " THREAD_STATE)) return;
    jclass tracker = (*jni)->DefineClass(jni, TRACKER, NULL, (const jbyte *)hprof_tracker_class,
                                         (jsize)hprof_tracker_class_len);
    if (jni_failed(jni, tracker, "defining " TRACKER)) return;
    static const struct { const char *name, *sig; } natives[] = {
        { "register", "([J)Z" }, { "cpuTime", "()J" }, { "cpuTimeOf", "(I)J" },
        { "trace", "()I" }, { "retire", "([I[J[JII)V" },
    };
    atomic_store(&T.linking, 1);
    for (size_t i = 0; i < sizeof natives / sizeof natives[0]; i++) {
        jmethodID m = (*jni)->GetStaticMethodID(jni, tracker, natives[i].name, natives[i].sig);
        if (jni_failed(jni, m, "finding a native of " TRACKER)) { atomic_store(&T.linking, 0); return; }
        switch (i) {
        case 0: (*jni)->CallStaticBooleanMethod(jni, tracker, m, NULL); break;
        case 1: (*jni)->CallStaticLongMethod(jni, tracker, m); break;
        case 2: (*jni)->CallStaticLongMethod(jni, tracker, m, (jint)0); break;
        case 3: (*jni)->CallStaticIntMethod(jni, tracker, m); break;
        default: (*jni)->CallStaticVoidMethod(jni, tracker, m, NULL, NULL, NULL, (jint)0, (jint)0); break;
        }
        if (jni_failed(jni, tracker, "binding the natives of " TRACKER " (is libhprof.so loaded as an agent?)")) {
            atomic_store(&T.linking, 0);
            return;
        }
    }
    atomic_store(&T.linking, 0);
    /* GetStatic*ID initializes the class: its <clinit> runs now, not mid-call. */
    jfieldID depth = (*jni)->GetStaticFieldID(jni, tracker, "depth", "I");
    if (jni_failed(jni, depth, "finding HprofTracker.depth")) return;
    T.engaged = (*jni)->GetStaticFieldID(jni, tracker, "engaged", "I");
    if (jni_failed(jni, T.engaged, "finding HprofTracker.engaged")) return;
    T.thread_end = (*jni)->GetStaticMethodID(jni, tracker, "threadEnd", "()V");
    if (jni_failed(jni, T.thread_end, "finding HprofTracker.threadEnd")) return;
    T.snapshot = (*jni)->GetStaticMethodID(jni, tracker, "snapshot", "()[J");
    if (jni_failed(jni, T.snapshot, "finding HprofTracker.snapshot")) return;
    (*jni)->SetStaticIntField(jni, tracker, depth, T.cfg.depth > 0 ? T.cfg.depth : 1);
    T.skip[0] = class_serial_of_klass(tracker);
    T.skip[1] = class_serial_of_klass(state);
    T.tracker = (*jni)->NewGlobalRef(jni, tracker);
    if (jni_failed(jni, T.tracker, "NewGlobalRef")) return;
    atomic_store(&T.ready, 1);

    jint n = 0;
    jclass *classes = NULL;
    if (!jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &n, &classes), "GetLoadedClasses")) {
        jint k = 0;
        for (jint i = 0; i < n; i++) {
            jboolean modifiable = JNI_FALSE;
            if ((*jvmti)->IsModifiableClass(jvmti, classes[i], &modifiable) == JVMTI_ERROR_NONE && modifiable)
                classes[k++] = classes[i];
            else
                (*jni)->DeleteLocalRef(jni, classes[i]);
        }
        retransform(jvmti, classes, k);
        for (jint i = 0; i < k; i++) (*jni)->DeleteLocalRef(jni, classes[i]);
        jvmti_free(classes);
    }
    (*jni)->SetStaticIntField(jni, tracker, T.engaged, 1);
    if (atomic_load(&T.failed))
        fprintf(stderr, "hprof: cpu=times: %u classes instrumented at start-up, %u left as they were "
                "(see above)\n", atomic_load(&T.rewritten), atomic_load(&T.failed));
}

void times_agent_thread_end(JNIEnv *jni) {
    if (T.tracker == NULL) { close_thread_counter(); return; }
    (*jni)->CallStaticVoidMethod(jni, T.tracker, T.thread_end);
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    close_thread_counter();
}

void times_agent_dump(text_writer *w, JNIEnv *jni, int final) {
    if (T.tracker == NULL) return;
    times_table all;
    times_table_init(&all);
    pthread_mutex_lock(&T.lock);
    int bad = times_table_merge(&all, &T.retired);
    pthread_mutex_unlock(&T.lock);
    jlongArray live = (*jni)->CallStaticObjectMethod(jni, T.tracker, T.snapshot);
    if ((*jni)->ExceptionCheck(jni)) {
        fprintf(stderr, "hprof: cpu=times: reading the live threads' counters failed:\n");
        (*jni)->ExceptionDescribe(jni);
        (*jni)->ExceptionClear(jni);
        live = NULL;
    }
    if (live) {
        jsize len = (*jni)->GetArrayLength(jni, live);
        jlong *v = (*jni)->GetLongArrayElements(jni, live, NULL);
        for (jsize i = 0; v && i + 2 < len && !bad; i += 3)
            bad = times_table_add(&all, (serial_t)v[i], (uint64_t)v[i + 1], v[i + 2] > 0 ? (uint64_t)v[i + 2] : 0) != 0;
        if (v) (*jni)->ReleaseLongArrayElements(jni, live, v, JNI_ABORT);
        (*jni)->DeleteLocalRef(jni, live);
    }
    times_row *rows = NULL;
    uint32_t n = 0;
    uint64_t total = 0;
    if (bad || times_table_rows(&all, &rows, &n, &total) != 0)
        fprintf(stderr, "hprof: out of memory while writing CPU TIME\n");
    else
        text_write_cpu_times(w, rows, n, total, T.cfg.cutoff, time(NULL));
    free(rows);
    times_table_free(&all);
    if (final) (*jni)->SetStaticIntField(jni, T.tracker, T.engaged, 0);
}
