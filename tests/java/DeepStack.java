/**
 * Known deep stacks: the main thread recurses `depth` frames into descend()
 * and spins in spin() at the bottom for `ms` of its CPU time, so nearly
 * every CPU sample has the stack main, descend x depth, spin. A profile cut
 * at depth= (HPROF's TRACE) shows only the top of it; whole-stack outputs
 * (pprof=, flamegraph=, collapsed=) must show all of it.
 *
 * stderr: "TRUTH depth=<depth> spin_ns=<thread CPU spent in spin>"
 * args: [depth, default 40] [ms of CPU, default 1500]
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class DeepStack {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long spin(long budgetNs) {
        long t0 = MX.getCurrentThreadCpuTime(), x = 1;
        do {
            for (int i = 0; i < 50_000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
            sink = x;
        } while (MX.getCurrentThreadCpuTime() - t0 < budgetNs);
        return MX.getCurrentThreadCpuTime() - t0;
    }

    static long descend(int left, long budgetNs) {
        if (left <= 1)
            return spin(budgetNs);
        return descend(left - 1, budgetNs);
    }

    public static void main(String[] args) {
        int depth = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        long ms = args.length > 1 ? Long.parseLong(args[1]) : 1500;
        long spent = descend(depth, ms * 1_000_000L);
        System.err.println("TRUTH depth=" + depth + " spin_ns=" + spent);
    }
}
