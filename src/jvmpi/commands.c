/*
 * commands: libjvmpi.so's Agent_OnAttach, for the run-time commands of the
 * `hprof` front end (`hprof dump|reset|status <pid>`, or `jcmd <pid>
 * JVMTI.agent_load <path>/libjvmpi.so "dump"`), in the profiler's command
 * protocol (options.h: a command word, reply=PATH; command_reply.h):
 *
 *   dump    DATA_DUMP_REQUEST, as SIGQUIT posts it: the agent writes its data
 *   reset   DATA_RESET_REQUEST: the agent forgets what it gathered
 *   status  which JVMPI agent runs, and whether it takes those two events
 *
 * Each is posted on the thread that runs the load (HotSpot's "Attach
 * Listener"), announced as any thread is, and the answer says whether the
 * agent had the event enabled. The layer itself is loaded at start-up only
 * (-agentpath): JVMPI agents start in JVM_OnLoad, and the events they need
 * from the start (CLASS_LOAD of every class, METHOD_ENTRY2's receivers) cannot
 * be had later; start and stop, which the profiler's own agent takes, have
 * no meaning here and are refused with the reason.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../options/command_reply.h"
#include "../options/options.h"
#include "layer.h"

#define REPLY_MAX 8192

static void post_request(JNIEnv *jni, jint event, const char *name, char *reply, size_t size) {
    if (!jvmpi_enabled(event)) {
        snprintf(reply, size, "jvmpi: the JVMPI agent %s has not enabled %s: nothing was posted\n",
                 jvmpi_agent_library(), name);
        return;
    }
    jvmpi_thread_here(jni);
    jvmpi_post_bare(jni, event);
    snprintf(reply, size, "jvmpi: %s posted to the JVMPI agent %s (JVM %d)\n", name, jvmpi_agent_library(),
             (int)getpid());
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    char reply[REPLY_MAX], err[1024];
    command_request req;
    memset(&req, 0, sizeof req);
    reply[0] = '\0';
    int rc = -1;
    JNIEnv *jni = NULL;
    if (command_parse(options, &req, err, sizeof err) != 0) {
        snprintf(reply, sizeof reply, "%s\n", err);
    } else if (jvmpi_jvmti == NULL || !atomic_load(&jvmpi_live)) {
        snprintf(reply, sizeof reply, "jvmpi: libjvmpi.so runs a JVMPI agent from the JVM's start only "
                 "(-agentpath:/path/to/libjvmpi.so=<agent library>); it cannot be attached to a running JVM\n");
    } else if (req.options[0] != '\0') {
        snprintf(reply, sizeof reply, "jvmpi: '%s' takes no options here (%.200s): the JVMPI agent writes its own "
                 "output\n", command_name(req.command), req.options);
    } else if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_2) != JNI_OK) {
        snprintf(reply, sizeof reply, "jvmpi: no JNI environment on the attach thread\n");
    } else {
        switch (req.command) {
        case COMMAND_DUMP:
            post_request(jni, JVMPI_EVENT_DATA_DUMP_REQUEST, "DATA_DUMP_REQUEST", reply, sizeof reply);
            rc = 0;
            break;
        case COMMAND_RESET:
            post_request(jni, JVMPI_EVENT_DATA_RESET_REQUEST, "DATA_RESET_REQUEST", reply, sizeof reply);
            rc = 0;
            break;
        case COMMAND_STATUS:
            snprintf(reply, sizeof reply, "jvmpi: JVMPI agent %s running in JVM %d; dump posts DATA_DUMP_REQUEST "
                     "(%s), reset DATA_RESET_REQUEST (%s)\n", jvmpi_agent_library(), (int)getpid(),
                     jvmpi_enabled(JVMPI_EVENT_DATA_DUMP_REQUEST) ? "enabled" : "not enabled by the agent",
                     jvmpi_enabled(JVMPI_EVENT_DATA_RESET_REQUEST) ? "enabled" : "not enabled by the agent");
            rc = 0;
            break;
        default:
            snprintf(reply, sizeof reply, "jvmpi: '%s' is the profiler's (libhprof.so); the JVMPI layer takes "
                     "dump, reset and status (its agent runs from the JVM's start to its end)\n",
                     command_name(req.command));
            break;
        }
    }
    command_reply_send(req.reply, reply);
    return rc == 0 ? JNI_OK : JNI_ERR;
}
