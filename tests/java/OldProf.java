import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * cpu=old truth: a call graph with known counts and known CPU lower bounds.
 *   main calls a() once and c() once; a calls b 300 times, c calls b 120
 *   times; each b call spins until its thread has used 1 ms of CPU.
 *   main calls rec(20) 10 times: 10 calls of rec from main, 190 from rec.
 * Prints on stderr:
 *   TRUTH b_from_a=300 b_from_c=120 b_min_ns=1000000 rec_from_main=10 rec_from_rec=190
 *   TRUTH a_cpu_ns=N c_cpu_ns=N
 */
public class OldProf {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final long B_MIN_NS = 1_000_000L;
    static volatile long sink;

    static void b(int k) {
        long end = MX.getCurrentThreadCpuTime() + B_MIN_NS;
        long s = k;
        while (MX.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 200; i++) s = s * 31 + i;
        sink += s;
    }

    static void a(int n) { for (int k = 0; k < n; k++) b(k); }

    static void c(int n) { for (int k = 0; k < n; k++) b(k); }

    static int rec(int n) { return n == 0 ? 0 : 1 + rec(n - 1); }

    public static void main(String[] args) {
        long t0 = MX.getCurrentThreadCpuTime();
        a(300);
        long t1 = MX.getCurrentThreadCpuTime();
        c(120);
        long t2 = MX.getCurrentThreadCpuTime();
        for (int i = 0; i < 10; i++) sink += rec(19);
        System.err.println("TRUTH b_from_a=300 b_from_c=120 b_min_ns=" + B_MIN_NS
                           + " rec_from_main=10 rec_from_rec=190");
        System.err.println("TRUTH a_cpu_ns=" + (t1 - t0) + " c_cpu_ns=" + (t2 - t1));
    }
}
