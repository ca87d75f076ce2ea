import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Known lock contention, in two phases, each measured by the program itself.
 *
 * Phase 1 (synchronized): four threads "hot-1".."hot-4" repeatedly enter
 * `synchronized (HOT)` (HOT is an instance of the private class HotLock) and
 * spin ~1 ms of CPU inside, ~0.2 ms outside.  Meanwhile two threads
 * "noise-1"/"noise-2" contend lightly on a NoiseLock (0.2 ms inside, then a
 * 1 ms sleep).  Truth: ThreadMXBean contention monitoring is enabled and each
 * thread reads its own ThreadInfo.getBlockedTime()/getBlockedCount() at its
 * start and at its end (the JVM's time in BLOCKED state); each hot thread
 * also sums the wall time from just before `synchronized` to the first
 * statement inside (in front of the lock).
 *
 * Phase 2 (ReentrantLock, non-fair: ReentrantLock$NonfairSync): four threads
 * "rl-1".."rl-4" lock(), spin ~1 ms, unlock(), spin ~0.2 ms.  Truth: the
 * summed wall time of the lock() calls.
 *
 * stderr (times in ns unless named _ms):
 *   HOT threads=4 blocked_ms=.. blocked_count=.. front_ns=.. entries=..
 *   HOT_THREAD name=hot-1 blocked_ms=.. blocked_count=.. front_ns=..   (one per thread)
 *   NOISE threads=2 blocked_ms=.. blocked_count=.. entries=..
 *   RL threads=4 lock_ns=.. lock_calls=.. slow_calls=..   (slow: lock() > 20 us)
 *   RL_THREAD name=rl-1 lock_ns=..
 *   Contention: done
 * args: [hot phase ms, default 1500] [ReentrantLock phase ms, default 1500]
 */
public class Contention {
    private static final class HotLock {
    }

    private static final class NoiseLock {
    }

    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final HotLock HOT = new HotLock();
    static final NoiseLock NOISE = new NoiseLock();
    static final ReentrantLock RL = new ReentrantLock();
    static volatile long sink;

    static long spin(long ns, long x) {
        final long end = System.nanoTime() + ns;
        do {
            for (int i = 0; i < 200; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
        } while (System.nanoTime() < end);
        return x;
    }

    /** Blocked time and count of the current thread, from the JVM. */
    static long[] blocked() {
        ThreadInfo ti = MX.getThreadInfo(Thread.currentThread().getId());
        return new long[] {ti.getBlockedTime(), ti.getBlockedCount()};
    }

    static final class Hot extends Thread {
        final long until;
        long blockedMs, blockedCount, frontNs, entries;

        Hot(String name, long until) {
            super(name);
            this.until = until;
        }

        @Override
        public void run() {
            long[] b0 = blocked();
            long x = 1, front = 0, n = 0;
            while (System.nanoTime() < until) {
                long t0 = System.nanoTime();
                synchronized (HOT) { // ENTER-HOT
                    front += System.nanoTime() - t0;
                    x = spin(1_000_000L, x);
                }
                n++;
                x = spin(200_000L, x);
            }
            long[] b1 = blocked();
            blockedMs = b1[0] - b0[0];
            blockedCount = b1[1] - b0[1];
            frontNs = front;
            entries = n;
            sink += x;
        }
    }

    static final class Noise extends Thread {
        final long until;
        long blockedMs, blockedCount, entries;

        Noise(String name, long until) {
            super(name);
            this.until = until;
        }

        @Override
        public void run() {
            long[] b0 = blocked();
            long x = 3, n = 0;
            try {
                while (System.nanoTime() < until) {
                    synchronized (NOISE) {
                        x = spin(200_000L, x);
                    }
                    n++;
                    Thread.sleep(1);
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            long[] b1 = blocked();
            blockedMs = b1[0] - b0[0];
            blockedCount = b1[1] - b0[1];
            entries = n;
            sink += x;
        }
    }

    static final class Locker extends Thread {
        final long until;
        long lockNs, calls, slow;

        Locker(String name, long until) {
            super(name);
            this.until = until;
        }

        @Override
        public void run() {
            long x = 5, total = 0, n = 0, s = 0;
            while (System.nanoTime() < until) {
                long t0 = System.nanoTime();
                RL.lock();
                long d = System.nanoTime() - t0;
                try {
                    total += d;
                    n++;
                    if (d > 20_000L)
                        s++;
                    x = spin(1_000_000L, x);
                } finally {
                    RL.unlock();
                }
                x = spin(200_000L, x);
            }
            lockNs = total;
            calls = n;
            slow = s;
            sink += x;
        }
    }

    static void joinAll(List<? extends Thread> ts) throws InterruptedException {
        for (Thread t : ts)
            t.join();
    }

    public static void main(String[] args) throws Exception {
        long hotMs = args.length > 0 ? Long.parseLong(args[0]) : 1500;
        long rlMs = args.length > 1 ? Long.parseLong(args[1]) : 1500;
        if (!MX.isThreadContentionMonitoringSupported()) {
            System.err.println("Contention: thread contention monitoring not supported");
            System.exit(2);
        }
        MX.setThreadContentionMonitoringEnabled(true);
        spin(50_000_000L, 7); // warm up spin() before the measured phases

        // Phase 1: synchronized on HotLock, with NoiseLock noise.
        long until = System.nanoTime() + hotMs * 1_000_000L;
        List<Hot> hot = new ArrayList<>();
        List<Noise> noise = new ArrayList<>();
        for (int i = 1; i <= 4; i++)
            hot.add(new Hot("hot-" + i, until));
        for (int i = 1; i <= 2; i++)
            noise.add(new Noise("noise-" + i, until));
        for (Thread t : hot)
            t.start();
        for (Thread t : noise)
            t.start();
        joinAll(hot);
        joinAll(noise);

        // Phase 2: ReentrantLock.
        until = System.nanoTime() + rlMs * 1_000_000L;
        List<Locker> lockers = new ArrayList<>();
        for (int i = 1; i <= 4; i++)
            lockers.add(new Locker("rl-" + i, until));
        for (Thread t : lockers)
            t.start();
        joinAll(lockers);

        long bMs = 0, bCount = 0, front = 0, entries = 0;
        for (Hot h : hot) {
            bMs += h.blockedMs;
            bCount += h.blockedCount;
            front += h.frontNs;
            entries += h.entries;
        }
        System.err.println("HOT threads=" + hot.size() + " blocked_ms=" + bMs + " blocked_count=" + bCount
                           + " front_ns=" + front + " entries=" + entries);
        for (Hot h : hot)
            System.err.println("HOT_THREAD name=" + h.getName() + " blocked_ms=" + h.blockedMs + " blocked_count="
                               + h.blockedCount + " front_ns=" + h.frontNs);
        long nMs = 0, nCount = 0, nEntries = 0;
        for (Noise n : noise) {
            nMs += n.blockedMs;
            nCount += n.blockedCount;
            nEntries += n.entries;
        }
        System.err.println("NOISE threads=" + noise.size() + " blocked_ms=" + nMs + " blocked_count=" + nCount
                           + " entries=" + nEntries);
        long lockNs = 0, calls = 0, slow = 0;
        for (Locker l : lockers) {
            lockNs += l.lockNs;
            calls += l.calls;
            slow += l.slow;
        }
        System.err.println("RL threads=" + lockers.size() + " lock_ns=" + lockNs + " lock_calls=" + calls
                           + " slow_calls=" + slow);
        for (Locker l : lockers)
            System.err.println("RL_THREAD name=" + l.getName() + " lock_ns=" + l.lockNs);
        System.err.println("Contention: done");
    }
}
