/*
 * A stand-in for the hprof agent's attach side, for tests/test_attach_cli.py:
 * it tests build/hprof's protocol work (trigger, connect, load, reply file)
 * without depending on the real agent, which is written elsewhere.
 *
 * Agent_OnAttach takes the options the tool sends,
 * "<command>,reply=<path>[,<user options>]", appends one line
 *   echo: <the whole options string>
 * to the reply file and returns 0 (JNI_OK). If the options contain "fail" it
 * appends "echo: error: asked to fail (<options>)" and returns 7, a code
 * HotSpot passes through as the agent's return code. If they contain
 * "sleep" it first sleeps 2 s, so a test can interrupt build/hprof while it
 * waits for the answer; with "die" it names the reply file on the JVM's
 * standard error and ends the JVM at once, as a crashing agent would.
 */
#include <jni.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Copies the value of "reply=" out of options (up to the next comma):
 * 0 if found, -1 if not or too long. */
static int reply_path(const char *options, char *path, size_t path_size)
{
    const char *p = options;
    while (p != NULL && *p != '\0') {
        if (strncmp(p, "reply=", 6) == 0) {
            const char *value = p + 6;
            size_t len = strcspn(value, ",");
            if (len == 0 || len >= path_size)
                return -1;
            memcpy(path, value, len);
            path[len] = '\0';
            return 0;
        }
        p = strchr(p, ',');
        if (p != NULL)
            p++;
    }
    return -1;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    (void)vm;
    (void)reserved;
    const char *opts = options != NULL ? options : "";
    char path[4096];
    if (reply_path(opts, path, sizeof path) != 0)
        return 3; /* nowhere to answer: the tool reports the bare code */
    if (strstr(opts, "sleep") != NULL) {
        struct timespec two_seconds = { 2, 0 };
        nanosleep(&two_seconds, NULL);
    }
    if (strstr(opts, "die") != NULL) {
        fprintf(stderr, "echo: dying, reply file %s\n", path);
        fflush(stderr);
        _exit(3);
    }
    int failing = strstr(opts, "fail") != NULL;
    /* Append, never create: the tool made the file, 0600, for this JVM's user. */
    FILE *reply = fopen(path, "r+");
    if (reply == NULL)
        return 4;
    fseek(reply, 0, SEEK_END);
    if (failing)
        fprintf(reply, "echo: error: asked to fail (%s)\n", opts);
    else
        fprintf(reply, "echo: %s\n", opts);
    fclose(reply);
    return failing ? 7 : JNI_OK;
}
