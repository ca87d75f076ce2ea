/* Natives of tests/java/VirtualPinning.java: a monitor entered by JNI's
 * MonitorEnter from a native method, which a virtual thread cannot unmount
 * across (vthread_pinning). */
#include <jni.h>

JNIEXPORT void JNICALL Java_VirtualPinning_enterFromNative(JNIEnv *jni, jclass self, jobject monitor)
{
    (void)self;
    if ((*jni)->MonitorEnter(jni, monitor) == JNI_OK)
        (*jni)->MonitorExit(jni, monitor);
}
