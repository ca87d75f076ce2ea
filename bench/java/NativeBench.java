import java.util.Arrays;

/**
 * bench/native's two programs, each a fixed amount of work (so that what an
 * agent costs shows up as extra CPU time), each ending with the per-thread
 * truth of tests/java/GcChurn.java (compiled with it, same package):
 *
 *   churn ROUNDS   GcChurn's loop (a live set of 400,000 small arrays, random
 *                  ones replaced all the time, so G1 copies survivors over and
 *                  over on its worker threads) for ROUNDS x 10,000 replacements
 *                  instead of a number of seconds
 *   javac ARGS...  the JDK's javac (javax.tools, in this JVM) with ARGS, e.g.
 *                  -d OUT @FILES; exits with javac's status
 *
 * stdout: "churn checksum=<n>" (the same in every run) or "javac rc=<n>".
 * stderr, at the end, from GcChurn.printThreads: "THREADCPU tid=<tid>
 * ns=<cpu ns> name=<OS name>" for every thread still alive, from
 * /proc/self/task/<tid>/schedstat; then "TRUTH main_ns=<this thread's CPU>".
 */
public class NativeBench {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long t0 = GcChurn.cpuNs();
        int rc = 0;
        if (args.length >= 2 && args[0].equals("churn")) {
            System.out.println("churn checksum=" + churn(Long.parseLong(args[1])));
        } else if (args.length >= 2 && args[0].equals("javac")) {
            rc = javax.tools.ToolProvider.getSystemJavaCompiler()
                    .run(null, null, null, Arrays.copyOfRange(args, 1, args.length));
            System.out.println("javac rc=" + rc);
        } else {
            System.err.println("usage: NativeBench churn ROUNDS | javac ARGS...");
            System.exit(2);
        }
        long mainNs = GcChurn.cpuNs() - t0;
        GcChurn.printThreads();
        System.err.println("TRUTH main_ns=" + mainNs);
        System.exit(rc);
    }

    /** GcChurn.main's loop, ROUNDS times. */
    static long churn(long rounds) {
        Object[] live = new Object[400_000];
        long seed = 42;
        for (long r = 0; r < rounds; r++) {
            for (int i = 0; i < 10_000; i++) {
                seed = seed * 6364136223846793005L + 1442695040888963407L;
                int at = (int) ((seed >>> 33) % live.length);
                live[at] = new long[1 + (int) ((seed >>> 20) & 31)];
            }
            sink += live.length;
        }
        long sum = 0;
        for (Object o : live)
            sum += o == null ? 0 : ((long[]) o).length;
        return sum ^ seed;
    }
}
