/* class_rewrite: see class_rewrite.h. */
#include "class_rewrite.h"

#include <stdio.h>
#include <string.h>

#include "jvmti_support.h"

int class_rewrite_in_hook(jvmtiEnv *jvmti, const bci_config *c, const char *name, const unsigned char *data,
                          jint len, jint *new_len, unsigned char **new_data, const char *who, int say_each) {
    uint8_t *out = NULL;
    size_t out_len = 0;
    char err[512];
    bci_result r = bci_rewrite(data, (size_t)len, c, &out, &out_len, err, sizeof err);
    if (r == BCI_ERROR) {
        if (say_each)
            fprintf(stderr, "%s: class %s is left uninstrumented: %s\n", who, name, err);
        return -1;
    }
    if (r != BCI_OK) return 0;
    unsigned char *mem = NULL;
    int done = -1;
    if (!jvmti_failed((*jvmti)->Allocate(jvmti, (jlong)out_len, &mem), "Allocate")) {
        memcpy(mem, out, out_len);
        *new_len = (jint)out_len;
        *new_data = mem;
        done = 1;
    }
    bci_free(out);
    return done;
}

static void say_not_retransformed(jvmtiEnv *jvmti, jclass klass, jvmtiError err, const char *who) {
    char *sig = NULL, *msg = NULL;
    (*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL);
    (*jvmti)->GetErrorName(jvmti, err, &msg);
    fprintf(stderr, "%s: cannot retransform %s: %s; it runs uninstrumented\n", who, sig ? sig : "?",
            msg ? msg : "?");
    jvmti_free(sig);
    jvmti_free(msg);
}

unsigned class_retransform(jvmtiEnv *jvmti, jclass *classes, jint n, const char *who, int say_each) {
    const jint batch = 256;
    unsigned failed = 0;
    for (jint i = 0; i < n; i += batch) {
        jint k = n - i < batch ? n - i : batch;
        if ((*jvmti)->RetransformClasses(jvmti, k, classes + i) == JVMTI_ERROR_NONE) continue;
        for (jint j = 0; j < k; j++) {
            jvmtiError err = (*jvmti)->RetransformClasses(jvmti, 1, classes + i + j);
            if (err != JVMTI_ERROR_NONE) {
                if (say_each)
                    say_not_retransformed(jvmti, classes[i + j], err, who);
                failed++;
            }
        }
    }
    return failed;
}

int class_modifiable(jvmtiEnv *jvmti, JNIEnv *jni, jclass except, jclass **classes, jint *n) {
    *classes = NULL;
    *n = 0;
    jint all = 0;
    jclass *loaded = NULL;
    if (jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &all, &loaded), "GetLoadedClasses")) return -1;
    (*jni)->EnsureLocalCapacity(jni, all + 32);    /* GetLoadedClasses made that many local references */
    jint k = 0;
    for (jint i = 0; i < all; i++) {
        jboolean modifiable = JNI_FALSE;
        if ((*jvmti)->IsModifiableClass(jvmti, loaded[i], &modifiable) == JVMTI_ERROR_NONE && modifiable &&
            (except == NULL || !(*jni)->IsSameObject(jni, loaded[i], except)))
            loaded[k++] = loaded[i];
        else
            (*jni)->DeleteLocalRef(jni, loaded[i]);
    }
    *classes = loaded;
    *n = k;
    return 0;
}
