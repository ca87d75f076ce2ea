import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Known contention of virtual (or platform) threads on a ReentrantLock and on
 * a monitor, measured by the program itself (issue 18's experiment).
 *
 * N tasks (default 400) each lock the ReentrantLock RL, spin `hold` ms
 * (default 2) of CPU (Contention.spin), unlock, then enter `synchronized (MON)` (MON is an
 * instance of the private class MonLock) and spin `hold` ms inside. The
 * tasks run on one virtual thread each ("virtual": Executors
 * .newVirtualThreadPerTaskExecutor, looked up by reflection so that this
 * compiles with --release 17), or on a pool of 8 platform threads
 * ("platform").
 *
 * Truth: each task sums the wall time of its RL.lock() call and the wall time
 * from just before `synchronized (MON)` to the first statement inside (the
 * time it was blocked, including, for a virtual thread, the wait for a
 * carrier to run on again).
 *
 * stderr (times in ns):
 *   VC mode=virtual tasks=400 rl_ns=.. rl_slow=.. mon_ns=.. mon_slow=..   (slow: > 20 us)
 *   VirtualContention: done
 * On a JDK without virtual threads, mode virtual prints
 *   VirtualContention: no virtual threads in this JDK
 * and exits with 3.
 * args: mode (virtual | platform) [tasks, default 400] [hold ms, default 2]
 *       [go file: print "VC waiting" and start the tasks once it exists,
 *        so that a profiler attached meanwhile sees them all; 60 s at most]
 */
public class VirtualContention {
    private static final class MonLock {
    }

    static final ReentrantLock RL = new ReentrantLock();
    static final MonLock MON = new MonLock();
    static final AtomicLong RL_NS = new AtomicLong(), RL_SLOW = new AtomicLong();
    static final AtomicLong MON_NS = new AtomicLong(), MON_SLOW = new AtomicLong();
    static volatile long sink;

    static void task(long holdNs, long seed) {
        long x = seed;
        long t0 = System.nanoTime();
        RL.lock();
        long d = System.nanoTime() - t0;
        try {
            RL_NS.addAndGet(d);
            if (d > 20_000L)
                RL_SLOW.incrementAndGet();
            x = Contention.spin(holdNs, x);
        } finally {
            RL.unlock();
        }
        t0 = System.nanoTime();
        synchronized (MON) {
            d = System.nanoTime() - t0;
            MON_NS.addAndGet(d);
            if (d > 20_000L)
                MON_SLOW.incrementAndGet();
            x = Contention.spin(holdNs, x);
        }
        sink += x;
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "virtual";
        int tasks = args.length > 1 ? Integer.parseInt(args[1]) : 400;
        long holdNs = (args.length > 2 ? Long.parseLong(args[2]) : 2) * 1_000_000L;
        ExecutorService ex;
        if (mode.equals("virtual")) {
            try {
                ex = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
            } catch (NoSuchMethodException e) {
                System.err.println("VirtualContention: no virtual threads in this JDK");
                System.exit(3);
                return;
            }
        } else if (mode.equals("platform")) {
            ex = Executors.newFixedThreadPool(8);
        } else {
            throw new IllegalArgumentException("mode: virtual or platform, not " + mode);
        }
        Contention.spin(50_000_000L, 7); // warm up spin() before the measured tasks
        if (args.length > 3) {
            java.io.File go = new java.io.File(args[3]);
            System.err.println("VC waiting for " + go);
            for (long waited = 0; !go.exists(); waited += 10) {
                if (waited > 60_000)
                    throw new IllegalStateException("VirtualContention: " + go + " did not appear in 60 s");
                Thread.sleep(10);
            }
        }
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            final long seed = i + 1;
            fs.add(ex.submit(() -> task(holdNs, seed)));
        }
        for (Future<?> f : fs)
            f.get();
        ex.shutdown();
        System.err.println("VC mode=" + mode + " tasks=" + tasks + " rl_ns=" + RL_NS.get() + " rl_slow=" + RL_SLOW.get()
                           + " mon_ns=" + MON_NS.get() + " mon_slow=" + MON_SLOW.get());
        System.err.println("VirtualContention: done");
    }
}
