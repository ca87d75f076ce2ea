import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Two known deadlocks, and blocked threads that are not deadlocked.
 *
 * Deadlock 1, through monitors: "dl-mon-a" holds a MonA and wants a MonB,
 * "dl-mon-b" holds the MonB and wants the MonA.
 * Deadlock 2, through ReentrantLocks: "dl-lock-a" holds lock A (fair:
 * ReentrantLock$FairSync) and wants lock B (non-fair: ReentrantLock$NonfairSync),
 * "dl-lock-b" holds lock B and wants lock A.
 * The four take their first lock, meet at a barrier, then ask for the second
 * one, so both deadlocks always form.
 *
 * Not deadlocked:
 *   "sleeper"            holds a SleepLock monitor and sleeps       (SL)
 *   "blocked-on-sleeper" waits to enter that SleepLock              (MW, owner sleeper)
 *   "blocked-on-dl"      waits to enter the MonA held by dl-mon-a   (MW, not on the cycle)
 *   "parked-on-dl"       waits for lock B, held by dl-lock-b        (P, not on the cycle)
 *   "cond-waiter"        Condition.await() on another lock          (P, blocker not a lock)
 *   "obj-waiter"         WaitLock.wait()                            (CW)
 * All are daemon threads.
 *
 * Once the JVM's own view (ThreadMXBean: state, lock class, lock owner) shows
 * every thread where it should be, main prints on stdout
 *   "READY"
 *   "EXPECT <thread> <state> <lock class or -> <owner or ->"  (one per thread)
 *   "JVM_DEADLOCKED <names, sorted, comma-separated>"  (ThreadMXBean.findDeadlockedThreads)
 * then sleeps [hold ms, default 1000] and calls System.exit(0).
 * args: [hold ms, default 1000] [ms of CPU work before forming the deadlocks, default 0]
 */
public class Deadlocks {
    static final class MonA {
    }

    static final class MonB {
    }

    static final class SleepLock {
    }

    static final class WaitLock {
    }

    static final MonA MON_A = new MonA();
    static final MonB MON_B = new MonB();
    static final SleepLock SLEEP_LOCK = new SleepLock();
    static final WaitLock WAIT_LOCK = new WaitLock();
    static final ReentrantLock LOCK_A = new ReentrantLock(true);
    static final ReentrantLock LOCK_B = new ReentrantLock(false);
    static final ReentrantLock COND_LOCK = new ReentrantLock();
    static final Condition COND = COND_LOCK.newCondition();
    static final CyclicBarrier FIRST_LOCKS_HELD = new CyclicBarrier(4);
    static final CountDownLatch SLEEPER_HOLDS = new CountDownLatch(1);
    static volatile long sink;

    interface Body {
        void run() throws Exception;
    }

    static Thread daemon(String name, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, name);
        t.setDaemon(true);
        return t;
    }

    static void meet() throws Exception {
        FIRST_LOCKS_HELD.await();
    }

    public static void main(String[] args) throws Exception {
        long holdMs = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        long workMs = args.length > 1 ? Long.parseLong(args[1]) : 0;
        long x = 1;
        long end = System.nanoTime() + workMs * 1_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;

        List<Thread> all = new ArrayList<>();
        Thread monA = daemon("dl-mon-a", () -> {
            synchronized (MON_A) {
                meet();
                synchronized (MON_B) {
                    sink++;
                }
            }
        });
        Thread monB = daemon("dl-mon-b", () -> {
            synchronized (MON_B) {
                meet();
                synchronized (MON_A) {
                    sink++;
                }
            }
        });
        Thread lockA = daemon("dl-lock-a", () -> {
            LOCK_A.lock();
            meet();
            LOCK_B.lock();
        });
        Thread lockB = daemon("dl-lock-b", () -> {
            LOCK_B.lock();
            meet();
            LOCK_A.lock();
        });
        Thread sleeper = daemon("sleeper", () -> {
            synchronized (SLEEP_LOCK) {
                SLEEPER_HOLDS.countDown();
                Thread.sleep(Long.MAX_VALUE);
            }
        });
        Thread blockedOnSleeper = daemon("blocked-on-sleeper", () -> {
            SLEEPER_HOLDS.await();
            synchronized (SLEEP_LOCK) {
                sink++;
            }
        });
        Thread blockedOnDl = daemon("blocked-on-dl", () -> {
            synchronized (MON_A) {
                sink++;
            }
        });
        Thread parkedOnDl = daemon("parked-on-dl", () -> {
            LOCK_B.lock();
        });
        Thread condWaiter = daemon("cond-waiter", () -> {
            COND_LOCK.lock();
            try {
                while (true)
                    COND.await();
            } finally {
                COND_LOCK.unlock();
            }
        });
        Thread objWaiter = daemon("obj-waiter", () -> {
            synchronized (WAIT_LOCK) {
                while (true)
                    WAIT_LOCK.wait();
            }
        });

        // The two deadlocks first, then the threads that queue behind them.
        for (Thread t : new Thread[] {monA, monB, lockA, lockB, sleeper, blockedOnSleeper, condWaiter, objWaiter})
            t.start();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Map<Thread, String[]> expect = new TreeMap<>((a, b) -> a.getName().compareTo(b.getName()));
        expect.put(monA, new String[] {"BLOCKED", MonB.class.getName(), "dl-mon-b"});
        expect.put(monB, new String[] {"BLOCKED", MonA.class.getName(), "dl-mon-a"});
        String fair = "java.util.concurrent.locks.ReentrantLock$FairSync";
        String nonfair = "java.util.concurrent.locks.ReentrantLock$NonfairSync";
        expect.put(lockA, new String[] {"WAITING", nonfair, "dl-lock-b"});
        expect.put(lockB, new String[] {"WAITING", fair, "dl-lock-a"});
        waitFor(mx, expect);
        blockedOnDl.start();
        parkedOnDl.start();
        expect.put(sleeper, new String[] {"TIMED_WAITING", "-", "-"});
        expect.put(blockedOnSleeper, new String[] {"BLOCKED", SleepLock.class.getName(), "sleeper"});
        expect.put(blockedOnDl, new String[] {"BLOCKED", MonA.class.getName(), "dl-mon-a"});
        expect.put(parkedOnDl, new String[] {"WAITING", nonfair, "dl-lock-b"});
        expect.put(condWaiter, new String[] {"WAITING", COND.getClass().getName(), "-"});
        expect.put(objWaiter, new String[] {"WAITING", WaitLock.class.getName(), "-"});
        waitFor(mx, expect);

        StringBuilder sb = new StringBuilder("READY\n");
        for (Map.Entry<Thread, String[]> e : expect.entrySet())
            sb.append("EXPECT ").append(e.getKey().getName()).append(' ').append(String.join(" ", e.getValue()))
              .append('\n');
        long[] ids = mx.findDeadlockedThreads();
        TreeSet<String> names = new TreeSet<>();
        for (long id : ids == null ? new long[0] : ids)
            names.add(mx.getThreadInfo(id).getThreadName());
        sb.append("JVM_DEADLOCKED ").append(String.join(",", names)).append('\n');
        System.out.print(sb);
        System.out.flush();
        Thread.sleep(holdMs);
        System.exit(0);
    }

    /** Waits (at most 20 s) until each thread is in the given state, on the given lock, owned by the given thread. */
    static void waitFor(ThreadMXBean mx, Map<Thread, String[]> expect) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (true) {
            String bad = null;
            for (Map.Entry<Thread, String[]> e : expect.entrySet()) {
                ThreadInfo ti = mx.getThreadInfo(e.getKey().getId());
                String[] want = e.getValue();
                String lock = ti == null || ti.getLockInfo() == null ? "-" : ti.getLockInfo().getClassName();
                String owner = ti == null || ti.getLockOwnerName() == null ? "-" : ti.getLockOwnerName();
                String state = ti == null ? "GONE" : ti.getThreadState().name();
                if (!state.equals(want[0]) || !lock.equals(want[1]) || !owner.equals(want[2])) {
                    bad = e.getKey().getName() + " is " + state + " on " + lock + " owned by " + owner
                          + ", want " + String.join(" ", want);
                    break;
                }
            }
            if (bad == null)
                return;
            if (System.nanoTime() > deadline) {
                System.err.println("Deadlocks: threads not in place: " + bad);
                System.exit(3);
            }
            Thread.sleep(5);
        }
    }
}
