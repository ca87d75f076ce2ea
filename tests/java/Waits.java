import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Known waiting (not contention) of several kinds, measured by the program:
 * each thread blocks ROUNDS times for about PAUSE ms and sums the wall time
 * spent inside the blocking call.
 *
 *   "w-object"   WaitObj.wait(), notified by main           -> Object.wait on Waits$WaitObj
 *   "w-cond"     Condition.await(), signalled by main       -> park on AQS$ConditionObject
 *   "w-nanos"    Condition.awaitNanos(PAUSE), times out     -> park on AQS$ConditionObject
 *   "w-future"   FutureTask.get(), completed by main        -> park on FutureTask
 *   "w-latch"    CountDownLatch.await(), counted down by main -> park on CountDownLatch$Sync
 *                (an ownable synchronizer: reported as contention, not as a wait)
 *   "w-sleep"    Thread.sleep(PAUSE): neither
 *
 * Main releases each round after PAUSE ms, once every waiter is blocked (it
 * polls with Thread.sleep, so it neither waits nor parks itself).
 *
 * stderr: "WAIT kind=<kind> thread=<name> ns=<sum> calls=<n>" per kind, then "Waits: done".
 * args: [PAUSE ms, default 300] [ROUNDS, default 3]
 */
public class Waits {
    static final class WaitObj {
    }

    static final WaitObj WAIT_OBJ = new WaitObj();
    static final ReentrantLock LOCK = new ReentrantLock();
    static final Condition COND = LOCK.newCondition();
    static final ReentrantLock NANOS_LOCK = new ReentrantLock();
    static final Condition NANOS_COND = NANOS_LOCK.newCondition();
    /** Rounds released by main so far (the waiters of round r wait until released > r). */
    static volatile int released;

    static final class Waiter extends Thread {
        final String kind;
        final int rounds;
        final long pauseMs;
        volatile int arrived, finished;
        volatile FutureTask<Integer> future;
        volatile CountDownLatch latch;
        long ns, calls;

        Waiter(String kind, int rounds, long pauseMs) {
            super("w-" + kind);
            this.kind = kind;
            this.rounds = rounds;
            this.pauseMs = pauseMs;
            setDaemon(true);
        }

        @Override
        public void run() {
            try {
                for (int r = 0; r < rounds; r++) {
                    once(r);
                    finished = r + 1;
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        void once(int round) throws Exception {
            long t0;
            switch (kind) {
                case "object":
                    synchronized (WAIT_OBJ) {
                        arrived = round + 1;
                        while (released <= round) {
                            t0 = System.nanoTime();
                            WAIT_OBJ.wait();
                            ns += System.nanoTime() - t0;
                            calls++;
                        }
                    }
                    break;
                case "cond":
                    LOCK.lock();
                    try {
                        arrived = round + 1;
                        while (released <= round) {
                            t0 = System.nanoTime();
                            COND.await();
                            ns += System.nanoTime() - t0;
                            calls++;
                        }
                    } finally {
                        LOCK.unlock();
                    }
                    break;
                case "nanos":
                    NANOS_LOCK.lock();
                    try {
                        arrived = round + 1;
                        long left = TimeUnit.MILLISECONDS.toNanos(pauseMs);
                        while (left > 0) {
                            t0 = System.nanoTime();
                            left = NANOS_COND.awaitNanos(left);
                            ns += System.nanoTime() - t0;
                            calls++;
                        }
                    } finally {
                        NANOS_LOCK.unlock();
                    }
                    break;
                case "future": {
                    FutureTask<Integer> f = new FutureTask<>(() -> 42);
                    future = f;
                    arrived = round + 1;
                    t0 = System.nanoTime();
                    f.get();
                    ns += System.nanoTime() - t0;
                    calls++;
                    break;
                }
                case "latch": {
                    CountDownLatch l = new CountDownLatch(1);
                    latch = l;
                    arrived = round + 1;
                    t0 = System.nanoTime();
                    l.await();
                    ns += System.nanoTime() - t0;
                    calls++;
                    break;
                }
                case "sleep":
                    arrived = round + 1;
                    t0 = System.nanoTime();
                    Thread.sleep(pauseMs);
                    ns += System.nanoTime() - t0;
                    calls++;
                    break;
                default:
                    throw new IllegalArgumentException(kind);
            }
        }
    }

    /** Polls (sleeping, so main itself neither waits nor parks) until cond holds; 20 s at most. */
    static void until(java.util.function.BooleanSupplier cond, String what) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                System.err.println("Waits: timeout waiting for " + what);
                System.exit(3);
            }
            Thread.sleep(1);
        }
    }

    public static void main(String[] args) throws Exception {
        long pauseMs = args.length > 0 ? Long.parseLong(args[0]) : 300;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        List<Waiter> ws = new ArrayList<>();
        for (String k : new String[] {"object", "cond", "nanos", "future", "latch", "sleep"})
            ws.add(new Waiter(k, rounds, pauseMs));
        for (Waiter w : ws)
            w.start();
        for (int r = 0; r < rounds; r++) {
            final int round = r;
            // Every waiter is in its blocking call (or about to enter it).
            for (Waiter w : ws)
                until(() -> w.arrived > round && w.getState() != Thread.State.RUNNABLE, w.getName() + " to block");
            Thread.sleep(pauseMs);
            synchronized (WAIT_OBJ) {
                released = r + 1;
                WAIT_OBJ.notifyAll();
            }
            LOCK.lock();
            try {
                COND.signalAll();
            } finally {
                LOCK.unlock();
            }
            for (Waiter w : ws) {
                if (w.kind.equals("future"))
                    w.future.run();
                if (w.kind.equals("latch"))
                    w.latch.countDown();
            }
            for (Waiter w : ws)
                until(() -> w.finished > round, w.getName() + " to finish its round");
        }
        for (Waiter w : ws)
            System.err.println("WAIT kind=" + w.kind + " thread=" + w.getName() + " ns=" + w.ns + " calls=" + w.calls);
        System.err.println("Waits: done");
    }
}
