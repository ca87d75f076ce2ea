/*
 * loader: libjvmpi.so's Agent_OnLoad. -agentpath:<dir>/libjvmpi.so=LIB[=OPTIONS]
 * loads the JVMPI agent LIB (a path, or a name found as libLIB.so through
 * the dynamic loader, as -Xrun did) and calls its JVM_OnLoad with OPTIONS
 * and a JavaVM whose GetEnv answers the JVMPI versions with the layer's
 * JVMPI_Interface and passes every other version to the real JVM.
 * Any failure stops the JVM at start-up with a message saying which.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/events.h"
#include "../agent/jvmti_support.h"
#include "layer.h"

JavaVM   *jvmpi_vm;
jvmtiEnv *jvmpi_jvmti;
static const char *agent_library = "";    /* as -agentpath named it */

const char *jvmpi_agent_library(void) { return agent_library; }

typedef jint (JNICALL *jvm_onload_fn)(JavaVM *vm, char *options, void *reserved);

/* The JavaVM handed to the agent: the real one's functions, but GetEnv,
 * and every function given the agent's JavaVM passes the real one on. */
static struct JNIInvokeInterface_ wrapped_functions;
static JavaVM wrapped_vm = &wrapped_functions;

int jvmpi_failed(jvmtiError err, const char *what) { return jvmti_failed(err, what); }

void jvmpi_notify(JVMPI_Event *event) {
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
    wrapped_functions = **real;
    wrapped_functions.GetEnv = wrapped_get_env;
    wrapped_functions.DestroyJavaVM = wrapped_destroy;
    wrapped_functions.AttachCurrentThread = wrapped_attach;
    wrapped_functions.DetachCurrentThread = wrapped_detach;
    wrapped_functions.AttachCurrentThreadAsDaemon = wrapped_attach_daemon;
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
    agent_library = library;
    jint rc = onload(&wrapped_vm, agent_options, NULL);
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

/* What the layer uses, where this JVM offers it; tags are a must (ids). */
static int add_capabilities(void) {
    jvmtiCapabilities potential, caps;
    memset(&caps, 0, sizeof caps);
    if (jvmpi_failed((*jvmpi_jvmti)->GetPotentialCapabilities(jvmpi_jvmti, &potential),
                     "GetPotentialCapabilities")) return -1;
    caps.can_tag_objects = potential.can_tag_objects;
    caps.can_get_source_file_name = potential.can_get_source_file_name;
    caps.can_get_line_numbers = potential.can_get_line_numbers;
    /* can_suspend: asked for at the agent's first SuspendThread (interface.c:
     * may_suspend), so that a debugger listed after the layer gets it. */
    caps.can_get_current_thread_cpu_time = potential.can_get_current_thread_cpu_time;
    caps.can_get_thread_cpu_time = potential.can_get_thread_cpu_time;
    caps.can_generate_monitor_events = potential.can_generate_monitor_events;
    caps.can_generate_garbage_collection_events = potential.can_generate_garbage_collection_events;
    caps.can_generate_vm_object_alloc_events = potential.can_generate_vm_object_alloc_events;
    caps.can_generate_compiled_method_load_events = potential.can_generate_compiled_method_load_events;
    caps.can_generate_object_free_events = potential.can_generate_object_free_events;
    caps.can_get_owned_monitor_info = potential.can_get_owned_monitor_info;
    caps.can_get_current_contended_monitor = potential.can_get_current_contended_monitor;
    caps.can_get_monitor_info = potential.can_get_monitor_info;
    if (!caps.can_tag_objects) {
        fprintf(stderr, "jvmpi: this JVM cannot tag objects (JVMTI can_tag_objects): JVMPI object ids need it\n");
        return -1;
    }
    if (jvmpi_methods_capabilities(&potential, &caps) != 0) return -1;
    return jvmpi_failed((*jvmpi_jvmti)->AddCapabilities(jvmpi_jvmti, &caps), "AddCapabilities") ? -1 : 0;
}

static int setup_jvmti(JavaVM *vm) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi_jvmti, JVMTI_VERSION_11) != JNI_OK) {
        fprintf(stderr, "jvmpi: this JVM offers no JVMTI 11 environment: libjvmpi.so needs JDK 11 or later\n");
        return -1;
    }
    hprof_vm = vm;
    hprof_jvmti = jvmpi_jvmti;
    if (add_capabilities() != 0) return -1;
    if (jvmpi_translate_subscribe() != 0 || jvmpi_methods_subscribe() != 0 || jvmpi_allocs_subscribe() != 0 ||
        jvmpi_gc_subscribe() != 0 || jvmpi_monitors_subscribe() != 0 || jvmpi_instructions_subscribe() != 0)
        return -1;
    if (events_install(jvmpi_jvmti) != 0 || jvmpi_hooks_setup(vm) != 0 || jvmpi_monitors_always() != 0) return -1;
    return jvmpi_translate_always();
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
    if (setup_jvmti(vm) != 0) return JNI_ERR;
    return load_agent(library, agent_options);
}
