/* tracker_agent: see tracker_agent.h and HprofTracker.java. */
#include "tracker_agent.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bci/bci.h"
#include "../core/keytab.h"
#include "../options/class_filter.h"
#include "class_rewrite.h"
#include "events.h"
#include "jvmti_support.h"

#define TRACKER       "java/lang/HprofTracker"
#define THREAD_STATE  "java/lang/HprofThreadState"

/* build/tracker_classes.c, made from src/agent/java by the Makefile */
extern const unsigned char hprof_tracker_class[], hprof_thread_state_class[];
extern const unsigned hprof_tracker_class_len, hprof_thread_state_class_len;

atomic_int tracker_linking;
serial_t   tracker_classes[2];

/* cpu=times' include= and exclude=, as the last start set them: read by
 * the hook on any thread that loads a class, hence the lock (class loads
 * are not frequent enough for it to matter). `generation` tells apply that
 * they changed; `hit` which patterns some class has matched (a pattern that
 * matches nothing is most often a typo: the dump says so). */
typedef struct times_filters {
    pthread_mutex_t lock;
    class_filter    include, exclude;
    uint8_t         include_hit[CLASS_FILTER_MAX], exclude_hit[CLASS_FILTER_MAX];
    int             leave_jdk;      /* jdk=none */
    unsigned        generation;
} times_filters;

/* What the hook did to each class, by name: rewrote it, or left it alone
 * (for what it inserts then: the name is followed by one byte, the
 * BCI_* bits). tracker_agent_apply retransforms only the classes it must:
 * after a stop those rewritten, after a start all but those left alone for
 * the same insertions. Retransforming a class for nothing is not free in
 * HotSpot: each retransformation merges the class's old constant pool into
 * the new one, and a class without a cached original (one no agent has
 * changed) is reconstituted from the merged pool, so it grows at every
 * stop/start. bench/soak's cycles found it: `stop` took 0.2, 0.5, 1.5, 4.5,
 * 15 s at cycles 4 to 8, then hung for minutes in find_matching_entry with
 * gigabytes of native memory (JDK 17 and 25 alike). Two loaders' classes of
 * one name share an entry: at worst one is retransformed when it need not. */
typedef struct hooked_classes {
    pthread_mutex_t lock;
    keytab          rewritten, left_alone;
    int             made;
} hooked_classes;

/* The tracker's rewriting of classes, one object: what its ClassFileLoadHook
 * inserts now (cfg, filters, say_each), what it did to each class (hooked)
 * and what tracker_agent_apply last retransformed the loaded classes for
 * (applied). Global: the hook, a JVMTI callback, gets no user data. */
static struct {
    tracker_config cfg;             /* what the rewriter inserts now (read by the hook) */
    times_filters  filters;
    atomic_int     say_each;        /* each class that cannot be rewritten is said (verbose=all) */
    hooked_classes hooked;
    struct { int times, allocations; unsigned filters; } applied;  /* what the loaded classes were last
                                                                   * retransformed for (filters: generation) */
    atomic_int     ready;           /* the tracker exists: instrument classes */
    atomic_int     next_id;         /* method ids handed to the rewriter */
    atomic_uint    rewritten, failed;
    jclass         tracker;         /* global ref, once defined */
    jobject        platform_loader; /* global ref: its classes are the JDK's too */
    int            hook_wanted;     /* we asked for ClassFileLoadHook */
} tracking = {
    .filters.lock = PTHREAD_MUTEX_INITIALIZER,
    .say_each = 1,
    .hooked.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------ rewriting */

/* A class's key in `hooked`: its name, then the insertions (one byte). 0 if
 * the name is too long to note: such a class is always retransformed. */
static uint32_t hooked_key(const char *name, size_t len, unsigned what, char key[1024]) {
    if (len + 1 > 1024) return 0;
    memcpy(key, name, len);
    key[len] = (char)what;
    return (uint32_t)len + 1;
}

static void hooked_note(const char *name, unsigned what, int rewritten) {
    char key[1024];
    uint32_t n = hooked_key(name, strlen(name), what, key);
    if (n == 0) return;
    pthread_mutex_lock(&tracking.hooked.lock);
    if (!tracking.hooked.made) {
        keytab_init(&tracking.hooked.rewritten, 1u << 22);
        keytab_init(&tracking.hooked.left_alone, 1u << 22);
        tracking.hooked.made = 1;
    }
    /* Rewritten: by name alone (a stop restores it whatever it got). */
    (void)keytab_intern(rewritten ? &tracking.hooked.rewritten : &tracking.hooked.left_alone, key, rewritten ? n - 1 : n, NULL);
    pthread_mutex_unlock(&tracking.hooked.lock);
}

/* Whether a class of this name must be retransformed for `what` (0: back
 * to its original bytes). */
static int hooked_must_retransform(const char *name, size_t len, unsigned what) {
    char key[1024];
    uint32_t n = hooked_key(name, len, what, key);
    if (n == 0) return 1;
    pthread_mutex_lock(&tracking.hooked.lock);
    int must = 1;
    if (tracking.hooked.made)
        must = what == 0 ? keytab_find(&tracking.hooked.rewritten, key, n - 1) != KEYTAB_FULL
                         : keytab_find(&tracking.hooked.left_alone, key, n) == KEYTAB_FULL;
    else
        must = what != 0;                           /* nothing rewritten yet */
    pthread_mutex_unlock(&tracking.hooked.lock);
    return must;
}

/* Classes the tracker itself runs on: instrumenting them would recurse
 * (the tracker allocates, and Unsafe reads cpu=times' clock page). Object
 * only gets objectInit (heap=sites): timing its methods would recurse too. */
static int is_tracker(const char *name) {
    return strcmp(name, TRACKER) == 0 || strcmp(name, THREAD_STATE) == 0 ||
           strcmp(name, "jdk/internal/misc/Unsafe") == 0;
}

/* Method ids start at 4 (0 marks an empty cache slot in the tracker). Bit
 * 0 tells the tracker the method is short (BCI_METHOD_SHORT): it may stop
 * timing it once it has seen it is always quick (HprofThreadState). Bit 1:
 * the method is the JDK's (its class is the boot or the platform loader's),
 * which the JVM's service threads do not record (HprofThreadState.service). */
static int32_t next_method_id(void *context, const bci_method_info *m) {
    int jdk = *(const int *)context;
    int32_t n = atomic_fetch_add(&tracking.next_id, 1) + 1;
    if (n > (INT32_MAX >> 2)) return -1;                 /* out of ids: leave the method alone */
    return (n << 2) | (jdk ? 2 : 0) | ((m->flags & BCI_METHOD_SHORT) && !(m->flags & BCI_METHOD_LEAF) ? 1 : 0);
}

/* The classes that mount and unmount virtual threads (JDK 21+): their
 * methods change what Thread.currentThread() returns halfway (mount()
 * enters on the carrier and returns on the virtual thread, unmount() the
 * other way round), so an entry and its exit would land on two threads'
 * shadow stacks, and the frame left open on one of them took all the time
 * after it (CPU TIME said 120,000 s for a 2 s run). They are the
 * scheduler's, not the task's: not timed. The task's own frames are. */
static int switches_threads(const char *name, size_t len) {
    return (len == 23 && memcmp(name, "java/lang/VirtualThread", 23) == 0) ||
           (len == 28 && memcmp(name, "jdk/internal/vm/Continuation", 28) == 0);
}


void tracker_agent_filter(const class_filter *include, const class_filter *exclude, int leave_jdk) {
    pthread_mutex_lock(&tracking.filters.lock);
    if (memcmp(include, &tracking.filters.include, sizeof *include) != 0 ||
        memcmp(exclude, &tracking.filters.exclude, sizeof *exclude) != 0 || leave_jdk != tracking.filters.leave_jdk) {
        tracking.filters.include = *include;
        tracking.filters.exclude = *exclude;
        tracking.filters.leave_jdk = leave_jdk;
        memset(tracking.filters.include_hit, 0, sizeof tracking.filters.include_hit);
        memset(tracking.filters.exclude_hit, 0, sizeof tracking.filters.exclude_hit);
        tracking.filters.generation++;
    }
    pthread_mutex_unlock(&tracking.filters.lock);
}

/* Is a class of this name (of the JDK's loaders if jdk) timed? */
static int times_class(const char *name, size_t len, int jdk) {
    int in, ex;
    pthread_mutex_lock(&tracking.filters.lock);
    int yes = class_filter_times(&tracking.filters.include, &tracking.filters.exclude, name, len, &in, &ex) &&
              !(jdk && tracking.filters.leave_jdk);
    if (in >= 0) tracking.filters.include_hit[in] = 1;
    if (ex >= 0) tracking.filters.exclude_hit[ex] = 1;
    pthread_mutex_unlock(&tracking.filters.lock);
    return yes;
}

int tracker_agent_unmatched(char *buf, size_t size) {
    int n = 0;
    size_t used = 0;
    if (size) buf[0] = '\0';
    pthread_mutex_lock(&tracking.filters.lock);
    for (int k = 0; k < 2; k++) {
        const class_filter *f = k ? &tracking.filters.exclude : &tracking.filters.include;
        const uint8_t *hit = k ? tracking.filters.exclude_hit : tracking.filters.include_hit;
        for (int i = 0; i < f->n; i++) {
            if (hit[i]) continue;
            char pattern[CLASS_FILTER_TEXT_MAX];
            class_filter_pattern(f, i, pattern, sizeof pattern);
            if (used < size)
                used += (size_t)snprintf(buf + used, size - used, "%s%s=%s", n ? ", " : "",
                                         k ? "exclude" : "include", pattern);
            n++;
        }
    }
    pthread_mutex_unlock(&tracking.filters.lock);
    return n;
}

/* What the hook inserts into a class of this name, of the boot or platform
 * loader if jdk (BCI_* bits; 0: nothing). */
static unsigned what_for(const char *name, size_t len, int jdk, int times, int allocations) {
    unsigned what = 0;
    if (len == 16 && memcmp(name, "java/lang/Object", 16) == 0) {
        if (allocations) what = BCI_OBJECT_INIT;
    } else {
        if (times && !switches_threads(name, len) && times_class(name, len, jdk))
            what |= BCI_ENTRY_EXIT | BCI_COUNT_LEAVES;
        if (allocations) what |= BCI_NEWARRAY;
    }
    return what;
}

/* The boot loader (NULL) or the platform loader: its classes are the JDK's. */
static int is_jdk_loader(JNIEnv *jni, jobject loader) {
    return loader == NULL || (tracking.platform_loader != NULL && jni != NULL &&
                              (*jni)->IsSameObject(jni, loader, tracking.platform_loader));
}

static void JNICALL on_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass being_redefined,
                                       jobject loader, const char *name, jobject domain,
                                       jint len, const unsigned char *data,
                                       jint *new_len, unsigned char **new_data) {
    (void)being_redefined; (void)domain;
    if (!atomic_load(&tracking.ready) || name == NULL || is_tracker(name)) return;
    int jdk = is_jdk_loader(jni, loader);
    unsigned what = what_for(name, strlen(name), jdk, atomic_load(&tracking.cfg.times), atomic_load(&tracking.cfg.allocations));
    if (what == 0) return;
    bci_config c = { what, TRACKER, next_method_id, &jdk, NULL };
    int r = class_rewrite_in_hook(jvmti, &c, name, data, len, new_len, new_data, "hprof", atomic_load(&tracking.say_each));
    if (r >= 0) hooked_note(name, what, r > 0);
    if (r > 0) atomic_fetch_add(&tracking.rewritten, 1);
    if (r < 0) atomic_fetch_add(&tracking.failed, 1);
}

/* ------------------------------------------------------------ set-up */

int tracker_agent_capabilities(const jvmtiCapabilities *potential, jvmtiCapabilities *caps) {
    if (!potential->can_retransform_classes || !potential->can_generate_all_class_hook_events) {
        fprintf(stderr, "hprof: cpu=times and heap=sites need a JVM that can retransform classes\n");
        return -1;
    }
    caps->can_retransform_classes = 1;
    caps->can_generate_all_class_hook_events = 1;
    return 0;
}

int tracker_agent_subscribe(void) {
    return events_subscribe(JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, EVENT_FN(on_class_file_load));
}

void tracker_agent_say_each(int on) {
    atomic_store(&tracking.say_each, on);
}

void tracker_agent_want(int times, int allocations) {
    if (times >= 0) atomic_store(&tracking.cfg.times, times);
    if (allocations >= 0) atomic_store(&tracking.cfg.allocations, allocations);
}

int tracker_jni_failed(JNIEnv *jni, const void *result, const char *what) {
    if (result != NULL && !(*jni)->ExceptionCheck(jni)) return 0;
    fprintf(stderr, "hprof: %s failed; no report will come of the tracker\n", what);
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionDescribe(jni); (*jni)->ExceptionClear(jni); }
    return 1;
}

/* HprofTracker.lock()'s yield after spinning (see there). */
JNIEXPORT void JNICALL Java_java_lang_HprofTracker_yieldCpu(JNIEnv *jni, jclass cls) {
    (void)jni; (void)cls;
    sched_yield();
}

/* The natives are found by name: HotSpot looks a native of a boot-loader
 * class up in the agent libraries too (RegisterNatives on a java.base class
 * makes HotSpot print a warning on stdout). They are exported by the
 * collectors, and called once here while tracker_linking is set, so that the
 * lookup, which runs Java code, never happens inside the tracker. */
static int bind_natives(JNIEnv *jni, jclass tracker, int say_why) {
    static const struct { const char *name, *sig; } natives[] = {
        { "register", "(Ljava/lang/Thread;[J)Z" }, { "cpuTime", "()J" }, { "cpuTimeOf", "(I)J" },
        { "trace", "(Ljava/lang/Thread;)I" }, { "retire", "([I[J[J[JII)V" }, { "allocated", "(Ljava/lang/Object;Ljava/lang/Class;II)V" },
        { "keysFullTrace", "()I" }, { "virtualCpuTime", "(Ljava/lang/Thread;)J" }, { "yieldCpu", "()V" },
    };
    atomic_store(&tracker_linking, 1);
    int ok = 1;
    for (size_t i = 0; i < sizeof natives / sizeof natives[0] && ok; i++) {
        jmethodID m = (*jni)->GetStaticMethodID(jni, tracker, natives[i].name, natives[i].sig);
        if (tracker_jni_failed(jni, m, "finding a native of " TRACKER)) { ok = 0; break; }
        switch (i) {
        case 0: (*jni)->CallStaticBooleanMethod(jni, tracker, m, NULL, NULL); break;
        case 1: (*jni)->CallStaticLongMethod(jni, tracker, m); break;
        case 2: (*jni)->CallStaticLongMethod(jni, tracker, m, (jint)0); break;
        case 3: (*jni)->CallStaticIntMethod(jni, tracker, m, NULL); break;
        case 4: (*jni)->CallStaticVoidMethod(jni, tracker, m, NULL, NULL, NULL, NULL, (jint)0, (jint)0); break;
        case 5: (*jni)->CallStaticVoidMethod(jni, tracker, m, NULL, NULL, (jint)0, (jint)-1); break;
        case 7: (*jni)->CallStaticLongMethod(jni, tracker, m, NULL); break;
        case 8: (*jni)->CallStaticVoidMethod(jni, tracker, m); break;
        default: (*jni)->CallStaticIntMethod(jni, tracker, m); break;
        }
        if (!say_why && (*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); ok = 0; break; }
        ok = !tracker_jni_failed(jni, tracker, "binding the natives of " TRACKER
                                 " (is libhprof.so loaded as an agent?)");
    }
    atomic_store(&tracker_linking, 0);
    return ok ? 0 : -1;
}

/* The first attach starts the tracker on the agent thread while HotSpot may
 * not have listed this library among its agents yet (it does so right after
 * Agent_OnAttach returns): until then the natives cannot be found by name. */
static int bind_natives_live(JNIEnv *jni, jclass tracker) {
    for (int tries = 0; tries < 250; tries++) {
        if (bind_natives(jni, tracker, tries == 249) == 0) return 0;
        struct timespec pause = { 0, 20 * 1000000L };
        nanosleep(&pause, NULL);
    }
    return -1;
}

jclass tracker_agent_define(JNIEnv *jni, int live) {
    if (tracking.tracker) return tracking.tracker;
    jclass state = (*jni)->DefineClass(jni, THREAD_STATE, NULL, (const jbyte *)hprof_thread_state_class,
                                       (jsize)hprof_thread_state_class_len);
    if (tracker_jni_failed(jni, state, "defining " THREAD_STATE)) return NULL;
    jclass tracker = (*jni)->DefineClass(jni, TRACKER, NULL, (const jbyte *)hprof_tracker_class,
                                         (jsize)hprof_tracker_class_len);
    if (tracker_jni_failed(jni, tracker, "defining " TRACKER)) return NULL;
    if ((live ? bind_natives_live(jni, tracker) : bind_natives(jni, tracker, 1)) != 0) return NULL;
    /* GetStatic*ID initializes the class: its <clinit> runs now, not mid-call. */
    jfieldID engaged = (*jni)->GetStaticFieldID(jni, tracker, "engaged", "I");
    if (tracker_jni_failed(jni, engaged, "finding HprofTracker.engaged")) return NULL;
    tracker_classes[0] = class_serial_of_klass(tracker);
    tracker_classes[1] = class_serial_of_klass(state);
    jclass global = (*jni)->NewGlobalRef(jni, tracker);
    if (tracker_jni_failed(jni, global, "NewGlobalRef")) return NULL;
    /* The platform loader (java.sql, java.xml.crypto, ...): set before
     * `ready`, so every rewritten class sees it. Without it only the boot
     * loader's classes count as the JDK's. */
    jclass cl = (*jni)->FindClass(jni, "java/lang/ClassLoader");
    jmethodID get = cl ? (*jni)->GetStaticMethodID(jni, cl, "getPlatformClassLoader", "()Ljava/lang/ClassLoader;")
                       : NULL;
    jobject platform = get ? (*jni)->CallStaticObjectMethod(jni, cl, get) : NULL;
    if ((*jni)->ExceptionCheck(jni)) { (*jni)->ExceptionClear(jni); platform = NULL; }
    if (platform) tracking.platform_loader = (*jni)->NewGlobalRef(jni, platform);
    if (platform) (*jni)->DeleteLocalRef(jni, platform);
    if (cl) (*jni)->DeleteLocalRef(jni, cl);
    tracking.tracker = global;
    atomic_store(&tracking.ready, 1);
    return global;
}

/* Retransform the classes that change, so that each gets what the hook
 * inserts now: instrumented after a start, its original bytes after a stop
 * (a class the hook leaves alone is given back the bytes it was loaded
 * with); classes the hook is known to leave as they are are not touched
 * (`hooked`). The hook is wanted while anything is or was instrumented. */
int tracker_agent_apply(jvmtiEnv *jvmti, JNIEnv *jni) {
    int times = atomic_load(&tracking.cfg.times), allocations = atomic_load(&tracking.cfg.allocations);
    pthread_mutex_lock(&tracking.filters.lock);
    unsigned generation = tracking.filters.generation;
    int leave_jdk = tracking.filters.leave_jdk;
    pthread_mutex_unlock(&tracking.filters.lock);
    if (times == tracking.applied.times && allocations == tracking.applied.allocations &&
        (!times || generation == tracking.applied.filters)) return 0;
    if (!tracking.hook_wanted) {
        if (events_want(jvmti, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK) != 0) return -1;
        tracking.hook_wanted = 1;
    }
    atomic_store(&tracking.rewritten, 0);
    atomic_store(&tracking.failed, 0);
    int restoring = !times && !allocations;
    jint k = 0;
    jclass *classes = NULL;
    if (class_modifiable(jvmti, jni, NULL, &classes, &k) == 0) {
        /* Only those that change (see `hooked`); the others stay first. */
        jint n = 0;
        for (jint i = 0; i < k; i++) {
            char *sig = NULL;
            int must = 1;
            if ((*jvmti)->GetClassSignature(jvmti, classes[i], &sig, NULL) == JVMTI_ERROR_NONE && sig &&
                sig[0] == 'L') {
                size_t len = strlen(sig) - 2;
                /* The loader matters only with jdk=none (one more JVMTI call a class). */
                int jdk = 0;
                jobject loader = NULL;
                if (times && leave_jdk && (*jvmti)->GetClassLoader(jvmti, classes[i], &loader) == JVMTI_ERROR_NONE) {
                    jdk = is_jdk_loader(jni, loader);
                    if (loader) (*jni)->DeleteLocalRef(jni, loader);
                }
                must = hooked_must_retransform(sig + 1, len, what_for(sig + 1, len, jdk, times, allocations));
            }
            jvmti_free(sig);
            jclass c = classes[i];
            classes[i] = classes[n];
            classes[n] = c;
            n += must;
        }
        atomic_fetch_add(&tracking.failed, class_retransform(jvmti, classes, n, "hprof", atomic_load(&tracking.say_each)));
        if (restoring) atomic_store(&tracking.rewritten, (unsigned)n - atomic_load(&tracking.failed));
        for (jint i = 0; i < k; i++) (*jni)->DeleteLocalRef(jni, classes[i]);
        jvmti_free(classes);
    }
    tracking.applied.times = times;
    tracking.applied.allocations = allocations;
    tracking.applied.filters = generation;
    if (atomic_load(&tracking.failed))
        fprintf(stderr, "hprof: %u classes %s, %u left as they were (%s)\n", atomic_load(&tracking.rewritten),
                restoring ? "restored" : "instrumented", atomic_load(&tracking.failed),
                atomic_load(&tracking.say_each) ? "see above" : "verbose=all names each");
    return 0;
}

unsigned tracker_agent_rewritten(void) { return atomic_load(&tracking.rewritten); }
