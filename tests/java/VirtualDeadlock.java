import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Deadlocks of virtual threads with a known shape, and churn without any.
 *
 * Mode "cycles" (virtual threads, named):
 *   through ReentrantLocks: "vdl-rl-a" holds RL_A (non-fair) and wants RL_B,
 *   "vdl-rl-b" holds RL_B (fair) and wants RL_C, "vdl-rl-c" holds RL_C
 *   (non-fair) and wants RL_A: a cycle of three;
 *   through monitors: "vdl-mon-a" holds a VMonA and wants a VMonB,
 *   "vdl-mon-b" holds the VMonB and wants the VMonA: a cycle of two;
 *   not deadlocked: "vdl-rl-waiter" waits for RL_A (held by vdl-rl-a, not on
 *   the cycle), "vdl-mon-waiter" waits to enter the VMonA; "vdl-cond-waiter"
 *   waits in COND.wait() (a VCond nobody owns or notifies).
 * Every cycle member takes its first lock, meets the others at a barrier,
 * then asks for its second one, so both cycles always form. Once every
 * thread's Thread.getState() is WAITING (parked) or BLOCKED (monitor), main
 * prints "READY" on stdout, sleeps [hold ms, default 1000] and exits.
 *
 * Mode "churn": [tasks, default 20000] virtual threads, each taking two of
 * four locks (two ReentrantLocks, two monitors) always in the same global
 * order (so no deadlock can form) and holding them a few microseconds (every
 * fourth task yields while holding both, so others meet its locks); many
 * block briefly. Prints "CHURN tasks=N blocked_ns=T" and exits.
 *
 * On a JDK without virtual threads, prints "VirtualDeadlock: no virtual
 * threads in this JDK" and exits with 3. Compiles with --release 17 (virtual
 * threads are made by reflection).
 * args: mode (cycles | churn) [hold ms | tasks]
 */
public class VirtualDeadlock {
    static final class VMonA {
    }

    static final class VMonB {
    }

    static final class ChurnMon {
    }

    static final class VCond {
    }

    static final ReentrantLock RL_A = new ReentrantLock(false);
    static final ReentrantLock RL_B = new ReentrantLock(true);
    static final ReentrantLock RL_C = new ReentrantLock(false);
    static final VMonA MON_A = new VMonA();
    static final VMonB MON_B = new VMonB();
    static final VCond COND = new VCond();
    static volatile long sink;

    interface Body {
        void run() throws Exception;
    }

    static Method builderName, builderUnstarted;
    static Object builder;

    /** A virtual thread (not started) named `name`, or null without virtual threads. */
    static Thread virtual(String name, Body body) throws Exception {
        if (builder == null) {
            try {
                builder = Thread.class.getMethod("ofVirtual").invoke(null);
            } catch (NoSuchMethodException e) {
                return null;
            }
            Class<?> b = Class.forName("java.lang.Thread$Builder");
            builderName = b.getMethod("name", String.class);
            builderUnstarted = b.getMethod("unstarted", Runnable.class);
        }
        Runnable r = () -> {
            try {
                body.run();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        };
        Object named = builderName.invoke(builder, name);
        return (Thread) builderUnstarted.invoke(named, r);
    }

    static void noVirtualThreads() {
        System.err.println("VirtualDeadlock: no virtual threads in this JDK");
        System.exit(3);
    }

    static void cycles(long holdMs) throws Exception {
        CyclicBarrier firstHeld = new CyclicBarrier(5);
        List<Thread> threads = new ArrayList<>();
        ReentrantLock[] rl = {RL_A, RL_B, RL_C};
        String[] rlNames = {"vdl-rl-a", "vdl-rl-b", "vdl-rl-c"};
        for (int i = 0; i < 3; i++) {
            final ReentrantLock first = rl[i], second = rl[(i + 1) % 3];
            threads.add(virtual(rlNames[i], () -> {
                first.lock();
                firstHeld.await();
                second.lock();
            }));
        }
        threads.add(virtual("vdl-mon-a", () -> {
            synchronized (MON_A) {
                firstHeld.await();
                synchronized (MON_B) {
                    sink++;
                }
            }
        }));
        threads.add(virtual("vdl-mon-b", () -> {
            synchronized (MON_B) {
                firstHeld.await();
                synchronized (MON_A) {
                    sink++;
                }
            }
        }));
        if (threads.get(0) == null) {
            noVirtualThreads();
            return;
        }
        for (Thread t : threads)
            t.start();
        // The waiters start once the cycles have formed.
        waitBlocked(threads);
        Thread rlWaiter = virtual("vdl-rl-waiter", () -> RL_A.lock());
        Thread monWaiter = virtual("vdl-mon-waiter", () -> {
            synchronized (MON_A) {
                sink++;
            }
        });
        Thread condWaiter = virtual("vdl-cond-waiter", () -> {
            synchronized (COND) {
                while (true)
                    COND.wait();
            }
        });
        threads.add(rlWaiter);
        threads.add(monWaiter);
        threads.add(condWaiter);
        rlWaiter.start();
        monWaiter.start();
        condWaiter.start();
        waitBlocked(threads);
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(holdMs);
        System.exit(0);
    }

    static void waitBlocked(List<Thread> threads) throws InterruptedException {
        long t0 = System.nanoTime();
        while (!allBlocked(threads)) {
            if (System.nanoTime() - t0 > 30_000_000_000L) {
                StringBuilder sb = new StringBuilder();
                for (Thread t : threads)
                    sb.append(' ').append(t.getName()).append('=').append(t.getState());
                System.err.println("VirtualDeadlock: threads not in place after 30 s:" + sb);
                System.exit(2);
            }
            Thread.sleep(5);
        }
    }

    /** Every cycle member and waiter blocked: WAITING (parked on a lock, or in Object.wait) or BLOCKED. */
    static boolean allBlocked(List<Thread> threads) {
        for (Thread t : threads) {
            Thread.State s = t.getState();
            if (s != Thread.State.WAITING && s != Thread.State.BLOCKED)
                return false;
            // A member at the barrier is WAITING too: wait for its second lock.
            if (t.getName().startsWith("vdl-rl-") && !t.getName().equals("vdl-rl-waiter")) {
                ReentrantLock want = t.getName().endsWith("a") ? RL_B : t.getName().endsWith("b") ? RL_C : RL_A;
                if (!want.hasQueuedThread(t))
                    return false;
            }
        }
        return true;
    }

    static void churn(int tasks) throws Exception {
        final ReentrantLock[] rls = {new ReentrantLock(), new ReentrantLock()};
        final ChurnMon[] mons = {new ChurnMon(), new ChurnMon()};
        final AtomicLong blockedNs = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            final int k = i;
            Thread t = virtual("churn-" + i, () -> {
                // Global order: rls[0] < rls[1] < mons[0] < mons[1]; each task takes two.
                int a = k % 4, b = (k / 4) % 3;
                b = b >= a ? b + 1 : b;
                int lo = Math.min(a, b), hi = Math.max(a, b);
                long t0 = System.nanoTime();
                take(lo, rls, mons, () -> take(hi, rls, mons, () -> {
                    blockedNs.addAndGet(System.nanoTime() - t0);
                    // Let another task run while both locks are held, so that tasks
                    // contend however the two carriers are scheduled: without it, on a
                    // loaded machine each task could finish before the next one starts
                    // (a CI run once saw 6 contended episodes in 50,000 tasks).
                    if (k % 4 == 0)
                        Thread.yield();
                    long x = k;
                    for (int j = 0; j < 2000; j++)
                        x = x * 6364136223846793005L + 1442695040888963407L;
                    sink += x;
                }));
            });
            if (t == null) {
                noVirtualThreads();
                return;
            }
            threads.add(t);
            t.start();
        }
        for (Thread t : threads)
            t.join();
        System.err.println("CHURN tasks=" + tasks + " blocked_ns=" + blockedNs.get());
    }

    static void take(int lock, ReentrantLock[] rls, ChurnMon[] mons, Body inside) throws Exception {
        if (lock < 2) {
            rls[lock].lock();
            try {
                inside.run();
            } finally {
                rls[lock].unlock();
            }
        } else {
            synchronized (mons[lock - 2]) {
                inside.run();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "cycles";
        if (mode.equals("cycles"))
            cycles(args.length > 1 ? Long.parseLong(args[1]) : 1000);
        else if (mode.equals("churn"))
            churn(args.length > 1 ? Integer.parseInt(args[1]) : 20000);
        else
            throw new IllegalArgumentException("mode: cycles or churn, not " + mode);
    }
}
