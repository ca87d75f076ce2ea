/**
 * CPU burnt in native code: main -> JniBurn.burn (a native method) ->
 * Java_JniBurn_burn -> hprof_test_burn_outer -> hprof_test_burn_spin, in
 * build/tests/libjni_burn.so (tests/jni/jni_burn.c, compiled without frame
 * pointers, so the walk must follow the library's call-frame rules).
 *
 * args: milliseconds of CPU to burn in native code (default 2000).
 * stderr: "TRUTH native_ns=<CPU the main thread used in burn>".
 */
public class JniBurn {
    static native long burn(long millis);

    public static void main(String[] args) {
        System.loadLibrary("jni_burn");
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long t0 = mx.getCurrentThreadCpuTime();
        long sum = 0;
        for (long done = 0; done < millis; done += 100)
            sum += burn(100);
        long ns = mx.getCurrentThreadCpuTime() - t0;
        System.err.println("TRUTH native_ns=" + ns + " sum=" + sum);
    }
}
