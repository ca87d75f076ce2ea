import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * cpu=times truth: exact call counts and CPU time the program measures itself.
 * Prints on stderr:
 *   TRUTH hot=1000000 rec=5100 thrower=1000 caught=500
 *   TRUTH busy_cpu_ns=N sleeper_cpu_ns=N workers_busy_cpu_ns=N
 * `exit` as first argument: main ends with System.exit called inside
 * exitInside(), while a daemon thread is stuck in forever().
 */
public class TimesTruth {
    static volatile int sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static int hot(int x) { return x * 31 + 7; }

    static int rec(int n) { return n == 0 ? 0 : 1 + rec(n - 1); }

    /* Short methods (no loop) with calls: tiny() learns to be only counted
     * (its callee is a leaf); fib() calls itself, so it must stay timed. */
    static int leafHelper(int x) { return x ^ 0x5a; }
    static int tiny(int x) { return leafHelper(x) + 1; }
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    /* A leaf with a (forward) switch: only counted, like hot(). */
    static int kind(int x) {
        switch (x & 3) {
            case 0: return 1;
            case 1: return 5;
            case 2: return 9;
            default: return x;
        }
    }

    static void thrower(int i) { if ((i & 1) == 0) throw new IllegalStateException("even"); }

    static void busy(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        int s = 0;
        while (System.nanoTime() < end)
            for (int i = 0; i < 1000; i++) s += i * s + 1;
        sink += s;
    }

    static void sleeper(long ms) throws InterruptedException { Thread.sleep(ms); }

    static void workerBusy(long ms) { busy(ms); }

    static void forever() {
        while (true) {
            try { Thread.sleep(1000); } catch (InterruptedException e) { return; }
        }
    }

    static void exitInside() {
        busy(50);
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        boolean exitMode = args.length > 0 && args[0].equals("exit");
        for (int i = 0; i < 1_000_000; i++) sink += hot(i);
        for (int i = 0; i < 100; i++) sink += rec(50);
        int caught = 0;
        for (int i = 0; i < 1000; i++) {
            try { thrower(i); } catch (IllegalStateException e) { caught++; }
        }
        for (int i = 0; i < 100_000; i++) sink += tiny(i);
        sink += fib(27);                                   // 635,621 calls
        for (int i = 0; i < 100_000; i++) sink += kind(i);
        System.err.println("TRUTH hot=1000000 rec=5100 thrower=1000 caught=" + caught
                           + " tiny=100000 fib=635621 kind=100000");

        long c0 = MX.getCurrentThreadCpuTime();
        busy(300);
        long c1 = MX.getCurrentThreadCpuTime();
        sleeper(300);
        long c2 = MX.getCurrentThreadCpuTime();

        // Four busy threads on (at most) two cores: their CPU time is about
        // half their wall time, and must be measured as CPU time.
        long[] cpu = new long[4];
        Thread[] ts = new Thread[4];
        for (int k = 0; k < 4; k++) {
            final int kk = k;
            ts[k] = new Thread(() -> {
                long a = MX.getCurrentThreadCpuTime();
                workerBusy(400);
                cpu[kk] = MX.getCurrentThreadCpuTime() - a;
            }, "busy-" + k);
            ts[k].start();
        }
        long workers = 0;
        for (int k = 0; k < 4; k++) { ts[k].join(); workers += cpu[k]; }
        System.err.println("TRUTH busy_cpu_ns=" + (c1 - c0) + " sleeper_cpu_ns=" + (c2 - c1)
                           + " workers_busy_cpu_ns=" + workers);
        if (exitMode) {
            Thread d = new Thread(TimesTruth::forever, "forever");
            d.setDaemon(true);
            d.start();
            Thread.sleep(100);
            exitInside();
        }
    }
}
