/*
 * jvm_args: what the JVM was started with, as far as the agent must know it
 * at start-up, before the options' other users have run. Today: whether a
 * debugger agent (JDWP) will load in this JVM. HotSpot lets only one JVMTI
 * environment hold some capabilities (breakpoints, field watches: only at
 * start-up; can_suspend), and the debugger refuses to start without them
 * ("JDWP unable to get necessary JVMTI capabilities"). The agents' OnLoad
 * run in command-line order, so an agent listed before the debugger must
 * leave those to it; JVMTI says nothing about agents still to load, hence
 * this look at the options themselves.
 * Pure C: no JVMTI here, so it is unit-tested on strings and files alone.
 */
#ifndef HPROF_JVM_ARGS_H
#define HPROF_JVM_ARGS_H

#include <stddef.h>

/* Whether args (len bytes of options separated by NULs or blanks, as in
 * /proc/self/cmdline or JAVA_TOOL_OPTIONS) load a debugger agent:
 * -agentlib:jdwp[=...], -Xrunjdwp[:...], or -agentpath:<dir>/libjdwp.so[=...].
 * With read_argfiles, a "@file" argument (the java launcher's argument
 * files) is read and looked at too, one level deep. On a match, 1 and the
 * option's name (without its own options) in found; else 0. */
int jvm_args_find_debugger(const char *args, size_t len, int read_argfiles, char *found, size_t size);

/* The same over what this process was started with: /proc/self/cmdline
 * (and its @files), then JDK_JAVA_OPTIONS, JAVA_TOOL_OPTIONS and
 * _JAVA_OPTIONS. On a match, 1 and where it is in found, say
 * "-agentlib:jdwp on the command line" or "-Xrunjdwp in _JAVA_OPTIONS".
 * Not seen: options a custom launcher passes to JNI_CreateJavaVM without
 * putting them on its command line, and -XX:VMOptionsFile=. */
int jvm_loads_debugger(char *found, size_t size);
/* Whether the JVM runs ZGC (-XX:+UseZGC, looked for in the same places):
 * ZGC's collector thread has stopped when VMDeath comes, and a JVMTI
 * ForceGarbageCollection then never returns (JDK 17 and 25). */
int jvm_args_find_zgc(const char *args, size_t len, int read_argfiles, char *found, size_t size);
int jvm_uses_zgc(char *found, size_t size);   /* found may be NULL (size 0) */

#endif
