/* Natives of tests/java/JniAlloc.java: objects made by JNI, for the
 * heap_sites_jni test. */
#include <jni.h>

JNIEXPORT jobject JNICALL Java_JniAlloc_newObject(JNIEnv *jni, jclass self, jclass cls)
{
    (void)self;
    jmethodID init = (*jni)->GetMethodID(jni, cls, "<init>", "()V");
    return init ? (*jni)->NewObject(jni, cls, init) : NULL;
}

JNIEXPORT jobject JNICALL Java_JniAlloc_allocObject(JNIEnv *jni, jclass self, jclass cls)
{
    (void)self;
    return (*jni)->AllocObject(jni, cls);
}

JNIEXPORT jobjectArray JNICALL Java_JniAlloc_newArray(JNIEnv *jni, jclass self, jclass cls, jint length)
{
    (void)self;
    return (*jni)->NewObjectArray(jni, length, cls, NULL);
}
