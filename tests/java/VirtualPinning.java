import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Virtual threads blocked while pinned to their carrier, for a known time,
 * and the same lock taken unpinned.
 *
 * A virtual thread cannot unmount while a class initializer runs on it (the
 * VM called <clinit>: a native frame on its continuation): parking there
 * parks its carrier (pinned), on every JDK with virtual threads. Each round
 * i (of [rounds, default 4]) main takes LOCK, starts a virtual thread whose
 * first use of class Pin<i> runs Pin<i>'s static initializer, which calls
 * LOCK.lock() (PinnedWait.block), holds LOCK [hold ms, default 150] once
 * that thread is parked, then releases it. Then the same with a virtual
 * thread calling LOCK.lock() outside any initializer (Unpinned.block): it
 * unmounts, it is not pinned.
 *
 * Truth: the wall time of each LOCK.lock() call, summed per kind.
 * stderr: "VP rounds=N pinned_ns=T unpinned_ns=U" then "VirtualPinning: done".
 * On a JDK without virtual threads: "VirtualPinning: no virtual threads in
 * this JDK", exit code 3.
 * args: [rounds, 1..4, default 4] [hold ms, default 150]
 */
public class VirtualPinning {
    static final ReentrantLock LOCK = new ReentrantLock();
    static final AtomicLong PINNED_NS = new AtomicLong(), UNPINNED_NS = new AtomicLong();

    /** LOCK.lock()'s wall time into `sum`; callers name the case in traces. */
    static void timedLock(AtomicLong sum) {
        long t0 = System.nanoTime();
        LOCK.lock();
        sum.addAndGet(System.nanoTime() - t0);
        LOCK.unlock();
    }

    static final class PinnedWait {
        static void block() {
            timedLock(PINNED_NS);
        }
    }

    static final class Unpinned {
        static void block() {
            timedLock(UNPINNED_NS);
        }
    }

    static final class Pin1 {
        static { PinnedWait.block(); }
        static void touch() {}
    }

    static final class Pin2 {
        static { PinnedWait.block(); }
        static void touch() {}
    }

    static final class Pin3 {
        static { PinnedWait.block(); }
        static void touch() {}
    }

    static final class Pin4 {
        static { PinnedWait.block(); }
        static void touch() {}
    }

    static Thread startVirtual(Runnable r) throws Exception {
        try {
            return (Thread) Thread.class.getMethod("startVirtualThread", Runnable.class).invoke(null, r);
        } catch (NoSuchMethodException e) {
            System.err.println("VirtualPinning: no virtual threads in this JDK");
            System.exit(3);
            return null;
        }
    }

    /** Hold LOCK until `t` is waiting for it, then `holdMs` more, then let it go. */
    static void holdAgainst(Runnable body, long holdMs) throws Exception {
        LOCK.lock();
        Thread t;
        try {
            t = startVirtual(body);
            while (!LOCK.hasQueuedThread(t))
                Thread.sleep(1);
            Thread.sleep(holdMs);
        } finally {
            LOCK.unlock();
        }
        t.join();
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        long holdMs = args.length > 1 ? Long.parseLong(args[1]) : 150;
        Runnable[] pins = {Pin1::touch, Pin2::touch, Pin3::touch, Pin4::touch};
        for (int i = 0; i < rounds; i++) {
            holdAgainst(pins[i], holdMs);
            holdAgainst(Unpinned::block, holdMs);
        }
        System.err.println("VP rounds=" + rounds + " pinned_ns=" + PINNED_NS.get() + " unpinned_ns=" + UNPINNED_NS.get());
        System.err.println("VirtualPinning: done");
    }
}
