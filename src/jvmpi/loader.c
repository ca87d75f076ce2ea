/*
 * loader: libjvmpi.so's Agent_OnLoad. -agentpath:<dir>/libjvmpi.so=LIB[=OPTIONS]
 * loads the JVMPI agent LIB (a path, or a name found as libLIB.so through
 * the dynamic loader, as -Xrun did) and calls its JVM_OnLoad with OPTIONS
 * and a JavaVM whose GetEnv answers the JVMPI versions with the layer's
 * JVMPI_Interface and passes every other version to the real JVM.
 * Any failure stops the JVM at start-up with a message saying which.
 * The layer's JVMTI environment, its capabilities and events, the VM's
 * start and end, threads and commands are the profiler's orchestrator's
 * (src/agent/agent.c), with the layer as its one collector (collector.c).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/jvmti_support.h"
#include "layer.h"

JavaVM   *jvmpi_vm;
jvmtiEnv *jvmpi_jvmti;
/* The JVMPI agent as loaded (one per JVM): its library, the JavaVM it was
 * given, whether its events are closed. */
typedef struct loaded_agent {
    const char *library;    /* as -agentpath named it */
    /* The JavaVM handed to the agent: the real one's functions, but GetEnv,
     * and every function given the agent's JavaVM passes the real one on. */
    struct JNIInvokeInterface_ wrapped_functions;
    JavaVM wrapped_vm;
    atomic_int closed;            /* JVM_SHUT_DOWN was posted (below) */
} loaded_agent;

static loaded_agent agent = {
    .library = "",
    .wrapped_vm = &agent.wrapped_functions,
};

const char *jvmpi_agent_library(void) { return agent.library; }

typedef jint (JNICALL *jvm_onload_fn)(JavaVM *vm, char *options, void *reserved);

/* A thread that ended (its trace, its state) and a call after the VM's
 * death are failures JVMPI lets a function have quietly: they are not said
 * on the agent's standard error. */
int jvmpi_failed(jvmtiError err, const char *what) {
    if (err == JVMTI_ERROR_THREAD_NOT_ALIVE || err == JVMTI_ERROR_WRONG_PHASE) return 1;
    return jvmti_failed(err, what);
}

/* JVMPI_DIAGNOSTICS set (not empty, not 0): the layer says on stderr what
 * it left out of an event or why a request failed. Otherwise it says nothing there: the agent's
 * output is the agent's. */
int jvmpi_diagnostics(void) {
    const char *v = getenv("JVMPI_DIAGNOSTICS");
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* agent.closed is set as JVM_SHUT_DOWN is posted (jvmpi_words()->posting_shut_down
 * on the thread that posts it): it is the last event. Agents clean up in
 * it (close their files, free their tables), so an event after it, or
 * beside it from another thread (a thread of the JVM or of the layer that
 * ends at the same time), could meet freed memory. The thread that posts it
 * goes on getting events: those the agent requests from its handler
 * (RequestEvent answers synchronously). */

void jvmpi_close_events(void) {
    jvmpi_words()->posting_shut_down = 1;
    atomic_store(&agent.closed, 1);
}

int jvmpi_may_post(void) { return !atomic_load_explicit(&agent.closed, memory_order_relaxed) ||
                                 jvmpi_words()->posting_shut_down; }

void jvmpi_notify(JVMPI_Event *event) {
    if (!jvmpi_may_post()) return;
    void (*notify)(JVMPI_Event *) = jvmpi_interface.NotifyEvent;
    if (notify != NULL) notify(event);
}

void jvmpi_post_bare(JNIEnv *jni, jint type) {
    JVMPI_Event e = jvmpi_event(type, jni);
    jvmpi_notify(&e);
}

static int is_jvmpi_version(jint version) {
    return version == JVMPI_VERSION_1 || version == JVMPI_VERSION_1_1 || version == JVMPI_VERSION_1_2;
}

static jint JNICALL wrapped_get_env(JavaVM *vm, void **penv, jint version) {
    (void)vm;
    if (!is_jvmpi_version(version)) return (*jvmpi_vm)->GetEnv(jvmpi_vm, penv, version);
    /* The version field says what the agent may use: the version it asked for
     * (an agent of 1.0 checks nothing else; it has every function anyway). */
    jvmpi_interface.version = version;
    *penv = &jvmpi_interface;
    return JNI_OK;
}

static jint JNICALL wrapped_destroy(JavaVM *vm) { (void)vm; return (*jvmpi_vm)->DestroyJavaVM(jvmpi_vm); }
static jint JNICALL wrapped_attach(JavaVM *vm, void **penv, void *args) {
    (void)vm;
    return (*jvmpi_vm)->AttachCurrentThread(jvmpi_vm, penv, args);
}
static jint JNICALL wrapped_detach(JavaVM *vm) { (void)vm; return (*jvmpi_vm)->DetachCurrentThread(jvmpi_vm); }
static jint JNICALL wrapped_attach_daemon(JavaVM *vm, void **penv, void *args) {
    (void)vm;
    return (*jvmpi_vm)->AttachCurrentThreadAsDaemon(jvmpi_vm, penv, args);
}

static void wrap_vm(JavaVM *real) {
    jvmpi_vm = real;
    agent.wrapped_functions = **real;
    agent.wrapped_functions.GetEnv = wrapped_get_env;
    agent.wrapped_functions.DestroyJavaVM = wrapped_destroy;
    agent.wrapped_functions.AttachCurrentThread = wrapped_attach;
    agent.wrapped_functions.DetachCurrentThread = wrapped_detach;
    agent.wrapped_functions.AttachCurrentThreadAsDaemon = wrapped_attach_daemon;
}

/* A name without '/' is looked for as lib<name>.so first (-Xrun's way),
 * then as given. */
static void *open_library(const char *name, char *err, size_t size) {
    void *lib = NULL;
    if (strchr(name, '/') == NULL) {
        char file[4096];
        snprintf(file, sizeof file, "lib%s.so", name);
        lib = dlopen(file, RTLD_NOW | RTLD_GLOBAL);
    }
    if (lib == NULL) lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) snprintf(err, size, "%s", dlerror());
    return lib;
}

static void usage_error(const char *why) {
    fprintf(stderr, "jvmpi: %s; use -agentpath:/path/to/libjvmpi.so=<JVMPI agent library>[=<its options>]"
                    " (the library as a path, or a name NAME found as libNAME.so on LD_LIBRARY_PATH)\n", why);
}

/* Load the agent and call its JVM_OnLoad; JNI_OK or JNI_ERR after a message. */
static jint load_agent(char *library, char *agent_options) {
    char err[1024];
    void *lib = open_library(library, err, sizeof err);
    if (lib == NULL) {
        fprintf(stderr, "jvmpi: cannot load the JVMPI agent library '%s': %s; give its path, or put its "
                        "directory on LD_LIBRARY_PATH\n", library, err);
        return JNI_ERR;
    }
    jvm_onload_fn onload = (jvm_onload_fn)dlsym(lib, "JVM_OnLoad");
    if (onload == NULL) {
        fprintf(stderr, "jvmpi: '%s' has no JVM_OnLoad: it is not a JVMPI agent library (one exports "
                        "jint JVM_OnLoad(JavaVM *, char *, void *))\n", library);
        return JNI_ERR;
    }
    agent.library = library;
    jint rc = onload(&agent.wrapped_vm, agent_options, NULL);
    if (rc != JNI_OK) {
        fprintf(stderr, "jvmpi: JVM_OnLoad of the JVMPI agent '%s' returned %d, not JNI_OK: the agent "
                        "refused to start (its own message, if any, is above); the JVM stops\n", library, (int)rc);
        return JNI_ERR;
    }
    jvmpi_methods_after_onload();
    jvmpi_instructions_after_onload();
    if (jvmpi_interface.NotifyEvent == NULL)
        fprintf(stderr, "jvmpi: the JVMPI agent '%s' set no NotifyEvent in JVM_OnLoad: it gets no events\n",
                library);
    return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if (options == NULL || options[0] == '\0' || options[0] == '=') {
        usage_error("no JVMPI agent library given");
        return JNI_ERR;
    }
    char *library = strdup(options);             /* kept: the agent may keep its options */
    if (library == NULL) return JNI_ERR;
    char *agent_options = strchr(library, '=');
    if (agent_options != NULL) *agent_options++ = '\0';
    else agent_options = library + strlen(library);   /* "" : the agent gets no options */
    wrap_vm(vm);
    /* The layer's JVMTI environment, capabilities and events, through the
     * orchestrator (collector.c); the JVMPI agent enables events from its
     * JVM_OnLoad on, so they are all in place before it runs. */
    if (orchestrator_load(&jvmpi_product, vm, "") != JNI_OK) return JNI_ERR;
    return load_agent(library, agent_options);
}

/* `hprof dump|reset|status <pid>` (or jcmd JVMTI.agent_load): the
 * orchestrator's command protocol, answered by collector.c. */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    return orchestrator_attach(&jvmpi_product, vm, options);
}
