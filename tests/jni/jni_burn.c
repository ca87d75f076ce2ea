/* Natives of tests/java/JniBurn.java: a known amount of CPU in named C
 * functions, two levels below the JNI entry point, for the native_jni test.
 * Built with -fomit-frame-pointer (see the Makefile): the sampler must
 * unwind it by its .eh_frame rules, as it must unwind libc and libjvm.so. */
#include <jni.h>
#include <stdint.h>
#include <time.h>

__attribute__((noinline)) uint64_t hprof_test_burn_spin(uint64_t x, long rounds);
__attribute__((noinline)) uint64_t hprof_test_burn_outer(long millis);

static long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Pure arithmetic, no calls: the time is this function's own. */
uint64_t hprof_test_burn_spin(uint64_t x, long rounds)
{
    for (long i = 0; i < rounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

uint64_t hprof_test_burn_outer(long millis)
{
    uint64_t x = 88172645463325252ull;
    long until = cpu_ns() + millis * 1000000L;
    while (cpu_ns() < until)
        x = hprof_test_burn_spin(x, 200000);
    return x;
}

JNIEXPORT jlong JNICALL Java_JniBurn_burn(JNIEnv *jni, jclass self, jlong millis)
{
    (void)jni;
    (void)self;
    /* Work after the call keeps it a call (no tail jump), so that this
     * function's own frame is on the stack under hprof_test_burn_outer. */
    uint64_t x = hprof_test_burn_outer((long)millis);
    __asm__ volatile("" : "+r"(x));
    return (jlong)(x >> 1);
}
