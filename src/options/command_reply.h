/*
 * command_reply: where an agent's answer to a run-time command goes (the
 * `hprof` command's reply= file, see options.h), shared by libhprof.so and
 * libjvmpi.so.
 */
#ifndef HPROF_COMMAND_REPLY_H
#define HPROF_COMMAND_REPLY_H

/* The answer of a command, to reply= (a file the `hprof` command made and
 * waits to read; it must exist, be a regular file and belong to this
 * process's user: the agent never creates a file there) or, without one,
 * to the JVM's standard error. Nothing for an empty text. */
void command_reply_send(const char *path, const char *text);

#endif
