/*
 * events: JVMTI event fan-out. A JVMTI environment has one callbacks struct,
 * so one function per event; this module owns it, and every part of the
 * agent that wants an event subscribes to it here. The installed callback
 * calls each subscriber in the order they subscribed. ClassFileLoadHook is
 * chained: each subscriber sees the bytes the previous one produced.
 *
 * Notification is counted per event: events_want(ev) / events_unwant(ev)
 * from each user, and JVMTI delivers the event while anyone wants it. So a
 * collector that stops turns off only what nobody else needs.
 *
 * Subscribing happens before events_install (start-up or attach); wanting
 * and unwanting any time after. Subscribers must check whether their own
 * collector is running: an event wanted by another still reaches them.
 */
#ifndef HPROF_EVENTS_H
#define HPROF_EVENTS_H

#include <jni.h>
#include <jvmti.h>

/* JDK 21's VirtualThreadEnd (posted on the ending virtual thread, to an
 * agent with can_support_virtual_threads), which the JDK 17 headers the
 * agent is built with do not name. Subscribe and want it only where
 * jvmti_want_virtual_threads said it is offered. */
#define EVENT_VIRTUAL_THREAD_END ((jvmtiEvent)88)

/* A subscriber, cast to this generic type; it is called with the signature
 * of its event's member of jvmtiEventCallbacks. */
typedef void (*event_fn)(void);
#define EVENT_FN(f) ((event_fn)(f))

/* (EVENT_VIRTUAL_THREAD_END: the signature (jvmtiEnv *, JNIEnv *, jthread).) */
/* Add fn to event ev's subscribers (once per fn). -1 if ev is not handled here
 * or its list is full. */
int  events_subscribe(jvmtiEvent ev, event_fn fn);
/* Several subscriptions at once (a collector's table of them): 0, or -1 at
 * the first that events_subscribe refuses. */
typedef struct event_subscription {
    jvmtiEvent ev;
    event_fn   fn;
} event_subscription;
int  events_subscribe_all(const event_subscription *subs, size_t n);
/* Install the callbacks struct in the agent's environment (again after new
 * subscriptions). 0, or -1 after a message. */
int  events_install(jvmtiEnv *jvmti);
/* Count one more / one fewer user of ev; JVMTI notification follows the count
 * crossing zero. 0, or -1 after a message. */
int  events_want(jvmtiEnv *jvmti, jvmtiEvent ev);
void events_unwant(jvmtiEnv *jvmti, jvmtiEvent ev);

#endif
