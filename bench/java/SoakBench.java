import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/* bench/soak's workload: for `seconds`, waves of `threads` short-lived threads
 * (each lives a few milliseconds) that allocate, contend on a few monitors and
 * ReentrantLocks, and wait (Object.wait with a timeout, Condition.await).
 * Counts are checked at the end, so a lost update (a broken monitor) fails
 * the run: prints "soak ok ..." and exits 0, or exits 1. */
public class SoakBench {
    static final Object[] MONITORS = { new Object(), new Object(), new Object(), new Object() };
    static final ReentrantLock[] LOCKS = { new ReentrantLock(), new ReentrantLock(true), new ReentrantLock() };
    static final Condition NEVER = LOCKS[0].newCondition();
    static final long[] byMonitor = new long[MONITORS.length];
    static final long[] byLock = new long[LOCKS.length];
    static final AtomicLong allocated = new AtomicLong();
    /* A bounded set of survivors, so the heap has live data across GCs. */
    static final Object[] kept = new Object[4096];

    static void work(int id, int round) throws InterruptedException {
        List<Object> junk = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            junk.add(new byte[64 + (i * 37 + id) % 512]);
            junk.add("t" + id + "-" + i);
            junk.add(new int[] { i, id, round });
        }
        allocated.addAndGet(junk.size());
        synchronized (kept) {
            kept[(id * 31 + round) & (kept.length - 1)] = junk.get(id % junk.size());
        }
        int m = id % MONITORS.length;
        for (int i = 0; i < 20; i++) {
            synchronized (MONITORS[m]) {
                byMonitor[m]++;
                if (i == 0 && id % 16 == 0)
                    MONITORS[m].wait(1);   /* releases and reacquires the monitor */
            }
        }
        int l = id % LOCKS.length;
        for (int i = 0; i < 20; i++) {
            LOCKS[l].lock();
            try {
                byLock[l]++;
                if (i == 0 && l == 0 && id % 32 == 0)
                    NEVER.await(1, TimeUnit.MILLISECONDS);
            } finally {
                LOCKS[l].unlock();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long started = 0, failed = 0;
        int round = 0;
        final long[] errors = { 0 };
        while (System.nanoTime() < end) {
            List<Thread> wave = new ArrayList<>(threads);
            for (int i = 0; i < threads; i++) {
                final int id = i, r = round;
                Thread t = new Thread(() -> {
                    try {
                        work(id, r);
                    } catch (InterruptedException e) {
                        synchronized (errors) { errors[0]++; }
                    }
                }, "soak-" + round + "-" + i);
                t.start();
                wave.add(t);
                started++;
            }
            for (Thread t : wave)
                t.join();
            round++;
        }
        long monitorSum = 0, lockSum = 0;
        for (long c : byMonitor) monitorSum += c;
        for (long c : byLock) lockSum += c;
        boolean ok = errors[0] == 0 && monitorSum == started * 20 && lockSum == started * 20
                && allocated.get() == started * 150;
        System.out.println((ok ? "soak ok" : "soak FAILED") + " waves " + round + " threads " + started
                + " monitor " + monitorSum + " lock " + lockSum + " allocated " + allocated.get());
        System.exit(ok ? 0 : 1);
    }
}
