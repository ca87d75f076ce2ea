import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A switch that moves work between two methods, for `hprof diff`: the main
 * thread spends `percentAlpha` of its CPU time in alpha() and the rest in
 * beta() (identical arithmetic), in slices of 20 ms of thread CPU time. Two
 * runs with different percentages differ only in that split.
 * args: [total CPU ms, default 2000] [percent in alpha, default 80]
 * stderr: "TRUTH alpha_ns=.. beta_ns=.."
 */
public class WorkShift {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long spin(long budgetNs, long x) {
        final long t0 = MX.getCurrentThreadCpuTime();
        do {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
        } while (MX.getCurrentThreadCpuTime() - t0 < budgetNs);
        return x;
    }

    static long alpha(long budgetNs, long x) { return spin(budgetNs, x); }

    static long beta(long budgetNs, long x) { return spin(budgetNs, x); }

    public static void main(String[] args) {
        long totalNs = (args.length > 0 ? Long.parseLong(args[0]) : 2000) * 1_000_000L;
        int percent = args.length > 1 ? Integer.parseInt(args[1]) : 80;
        long slice = 20_000_000L, alphaNs = 0, betaNs = 0, x = 1;
        while (alphaNs + betaNs < totalNs) {
            long t0 = MX.getCurrentThreadCpuTime();
            x = alpha(slice * percent / 100, x);
            long t1 = MX.getCurrentThreadCpuTime();
            x = beta(slice * (100 - percent) / 100, x);
            long t2 = MX.getCurrentThreadCpuTime();
            alphaNs += t1 - t0;
            betaNs += t2 - t1;
        }
        sink = x;
        System.err.println("TRUTH alpha_ns=" + alphaNs + " beta_ns=" + betaNs);
    }
}
