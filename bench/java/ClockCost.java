/**
 * The cost of one System.nanoTime() call on this machine and JDK: the clock
 * cpu=times reads twice per timed call (HprofThreadState.now()). Prints
 * nanotime_ns=, the median of 7 timed batches of 10 million calls after a
 * warm-up batch (so the loop runs compiled).
 */
public class ClockCost {
    public static void main(String[] args) {
        final int n = 10_000_000;
        double[] ns = new double[7];
        long sink = 0;
        for (int b = -1; b < ns.length; b++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) sink += System.nanoTime();
            long t1 = System.nanoTime();
            if (b >= 0) ns[b] = (double) (t1 - t0) / n;
        }
        java.util.Arrays.sort(ns);
        System.out.printf("nanotime_ns=%.2f%n", ns[ns.length / 2]);
        if (sink == 42) System.out.println();   /* keep the calls */
    }
}
