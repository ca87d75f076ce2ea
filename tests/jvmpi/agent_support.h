/*
 * What every test agent needs and JVMPI does not give: reading its option
 * string ("out=FILE,class=NAME") and enabling a list of events. Written like
 * the agents, against jvmpi.h alone.
 */
#ifndef JVMPI_TEST_AGENT_SUPPORT_H
#define JVMPI_TEST_AGENT_SUPPORT_H

#include <jvmpi.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The value of key ("out=") in options, copied into value: 1, or 0 if absent. */
static inline int agent_option(const char *options, const char *key, char *value, size_t size) {
    const char *p = options ? strstr(options, key) : NULL;
    if (p == NULL) return 0;
    p += strlen(key);
    size_t n = strcspn(p, ",");
    if (n >= size) n = size - 1;
    memcpy(value, p, n);
    value[n] = '\0';
    return 1;
}

/* The file named by out= in options, opened for writing; NULL after
 * saying usage on stderr. */
static inline FILE *agent_open_out(const char *options, const char *usage) {
    char path[1024];
    FILE *f = NULL;
    if (!agent_option(options, "out=", path, sizeof path) || (f = fopen(path, "w")) == NULL)
        fprintf(stderr, "%s\n", usage);
    return f;
}

/* EnableEvent for each; JNI_OK, or JNI_ERR at the first refusal (as agents
 * of the time did). */
static inline jint agent_enable(JVMPI_Interface *jvmpi, const jint *events, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) return JNI_ERR;
    return JNI_OK;
}

#define AGENT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Threads' names by JNIEnv, from THREAD_START (the caller holds its lock). */
#define AGENT_THREADS 256
static struct { JNIEnv *env; char name[64]; } agent_threads[AGENT_THREADS];
static int agent_n_threads;

static inline void agent_thread_started(const JVMPI_Event *e) {
    if (agent_n_threads >= AGENT_THREADS) return;
    agent_threads[agent_n_threads].env = e->u.thread_start.thread_env_id;
    snprintf(agent_threads[agent_n_threads].name, sizeof agent_threads[agent_n_threads].name, "%s",
             e->u.thread_start.thread_name ? e->u.thread_start.thread_name : "");
    agent_n_threads++;
}

/* The name THREAD_START gave the thread, "?" if it was never announced. */
static inline const char *agent_thread_name(JNIEnv *env) {
    for (int i = 0; i < agent_n_threads; i++)
        if (agent_threads[i].env == env) return agent_threads[i].name;
    return "?";
}

#endif
