/* stack_walk_fast.c: see stack_walk_fast.h. */
#include "stack_walk_fast.h"

#include <stddef.h>

#include "../sampler/async_trace.h"
#include "events.h"
#include "jvmti_support.h"

/* frame_ref has AsyncGetCallTrace's frame layout: its frames are filled in place. */
_Static_assert(sizeof(frame_ref) == sizeof(asgct_frame), "frame layouts must match");
_Static_assert(offsetof(frame_ref, method) == offsetof(asgct_frame, method_id), "frame layouts must match");

/* Subscribed only because AsyncGetCallTrace works while ClassLoad events are on. */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
    (void)jvmti; (void)jni; (void)thread; (void)klass;
}

int stack_walk_fast_init(void)
{
    /* ClassLoad is wanted once for all callers (events_want counts each call). */
    static int wanted;
    if (async_trace_function(NULL) == NULL)
        return -1;
    if (wanted)
        return 0;
    if (events_subscribe(JVMTI_EVENT_CLASS_LOAD, EVENT_FN(on_class_load)) != 0 ||
        events_install(hprof_jvmti) != 0 || events_want(hprof_jvmti, JVMTI_EVENT_CLASS_LOAD) != 0)
        return -1;
    wanted = 1;
    return 0;
}

/* Called from a JNI native, where the JVM knows the thread's last Java
 * frame: HotSpot then starts from that frame and never reads the (absent)
 * signal context. It walks with a light frame stream instead of the vframe
 * objects JVMTI's GetStackTrace builds. Before stack_walk_fast_init (or if
 * it failed) no JVMTI environment may have ClassLoad on: HotSpot then
 * answers a negative count (ticks_no_class_load) at once, and the caller
 * walks with JVMTI. It gives no jmethodID that was never made: such a
 * frame below keep makes the walk useless. */
int stack_walk_here_from(JNIEnv *jni, frame_ref *frames, jint want, jint keep, jint *count)
{
    asgct_fn async_get_call_trace = async_trace_function(NULL);
    if (jni == NULL || async_get_call_trace == NULL || want <= 0)
        return 0;
    asgct_trace t = { jni, 0, (asgct_frame *)(void *)frames, want };
    async_get_call_trace(&t, want, NULL);
    if (t.num_frames <= 0)
        return 0;
    for (jint i = keep; i < t.num_frames; i++)
        if (frames[i].method == NULL)
            return 0;
    *count = t.num_frames;
    return 1;
}

int stack_walk_here(JNIEnv *jni, frame_ref *frames, jint want, jint *count)
{
    return stack_walk_here_from(jni, frames, want, 0, count);
}
