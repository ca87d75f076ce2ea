/**
 * CPU work on the main thread for a fixed wall-clock time (default 6000 ms),
 * for SIGQUIT (kill -3) dump tests and sampling-rate tests.  Prints
 * "LongRun: done cpu_ns=<CPU time of the main thread>" on stderr.
 */
public class LongRun {
    static volatile long sink;

    static long spin(long x) {
        for (int i = 0; i < 100_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 6000;
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 1;
        while (System.nanoTime() < end) x = spin(x);
        sink = x;
        long cpu = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        System.err.println("LongRun: done cpu_ns=" + cpu);
    }
}
