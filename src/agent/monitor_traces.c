/*
 * monitor_traces.c: the traces of monitor=y's blocked threads (see
 * monitor_parts.h): where a thread is now, with the frames of LockSupport,
 * Unsafe and the JDK's classes between left out for parks, or placed at
 * the monitorenter for a thread blocked entering a monitor.
 */
#include "monitor_parts.h"

#include "jvmti_support.h"

/* A walk that failed (GetStackTrace refuses a thread the VM is tearing down,
 * with WRONG_PHASE on JDK 25) still gets a real TRACE: the empty one, as
 * HPROF's "<empty>". A row must never name trace 0, which no file defines. */
serial_t monitor_trace_or_empty(serial_t trace, serial_t thread_serial, stack_id *stack)
{
    return trace ? trace : trace_build(&mon_common.traces, thread_serial, NULL, 0, stack);
}

/* The trace where `thread` is now, and its whole stack into *stack when
 * kept (stack may be NULL). Event callbacks run on the thread concerned
 * (current = 1: JVMTI walks the caller's own stack, no handshake); parks
 * leave LockSupport's and Unsafe's frames out. */
serial_t monitor_trace_of_thread(jthread thread, int current, int park, serial_t thread_serial, stack_id *stack)
{
    serial_t trace = stack_trace_of(&mon_common.traces, current ? NULL : thread, park ? mon_parks.skip : NULL,
                                    park ? mon_parks.n_skip : 0, thread_serial, stack);
    return monitor_trace_or_empty(trace, thread_serial, stack);
}

serial_t monitor_trace_here(jthread thread, int current, int park, stack_id *stack)
{
    serial_t thread_serial = !mon_common.cfg.per_thread ? 0 : current ? thread_serial_of_self(thread)
                                                                      : thread_serial_of(thread);
    return monitor_trace_of_thread(thread, current, park, thread_serial, stack);
}

/* The same for a thread blocked entering a monitor: placed at the
 * monitorenter, or at the call of a synchronized method
 * (stack_trace_entering). */
serial_t monitor_trace_entering(jthread thread, int current, serial_t thread_serial, stack_id *stack)
{
    return monitor_trace_or_empty(stack_trace_entering(&mon_common.traces, current ? NULL : thread, thread_serial,
                                                       stack),
                                  thread_serial, stack);
}
