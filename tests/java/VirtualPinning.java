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
 * Then monitors: each round main holds MON while a virtual thread enters
 * it (synchronized) from a class initializer (MonPin<i>, through
 * MonitorPinnedWait.block), from under a native frame (NativeFrameWait.block,
 * called by reflection: with -Djdk.reflect.useNativeAccessorOnly=true,
 * Method.invoke goes through the native NativeMethodAccessorImpl.invoke0),
 * and from plain code (MonitorUnpinned.block). From JDK 24 on (JEP 491) a
 * virtual thread blocked entering a monitor unmounts, except under a native
 * frame or a class initializer; before, it is always pinned. Last, waits:
 * a virtual thread calls WAITED.wait(hold) (nobody notifies) in a class
 * initializer (WaitPin<i>, through PinnedWaiting.block), then outside one
 * (PlainWaiting.block); the same rule holds for Object.wait.
 *
 * Truth: the wall time of each LOCK.lock() call and of each monitor entry,
 * summed per kind.
 * stderr: "VP rounds=N pinned_ns=T unpinned_ns=U", then "VPM rounds=N
 * clinit_ns=C native_ns=V plain_ns=P native_frame=0|1 monitors_unmount=0|1",
 * then "VPW rounds=N clinit_ns=C plain_ns=P", then, given a library of
 * natives (3rd argument: the path of build/tests/libvirtual_pinning.so),
 * the monitor entered by JNI's MonitorEnter in a native method
 * (JniEnter.block, pinned: a native frame): "VPJ rounds=N jni_ns=J"
 * (native_frame: whether NativeFrameWait.block saw a native frame below it;
 * monitors_unmount: JDK 24 or later), then "VirtualPinning: done".
 * On a JDK without virtual threads: "VirtualPinning: no virtual threads in
 * this JDK", exit code 3.
 * args: [rounds, 1..4, default 4] [hold ms, default 150] [natives library]
 */
public class VirtualPinning {
    static final ReentrantLock LOCK = new ReentrantLock();
    static final AtomicLong PINNED_NS = new AtomicLong(), UNPINNED_NS = new AtomicLong();
    static final Object MON = new Object();
    static final AtomicLong MON_CLINIT_NS = new AtomicLong(), MON_NATIVE_NS = new AtomicLong(),
                            MON_PLAIN_NS = new AtomicLong();
    static volatile boolean nativeFrameSeen;
    static final AtomicLong JNI_NS = new AtomicLong();
    static final AtomicLong WAIT_CLINIT_NS = new AtomicLong(), WAIT_PLAIN_NS = new AtomicLong();
    static long holdMs = 150;

    /** LOCK.lock()'s wall time into `sum`; callers name the case in traces. */
    static void timedLock(AtomicLong sum) {
        long t0 = System.nanoTime();
        LOCK.lock();
        sum.addAndGet(System.nanoTime() - t0);
        LOCK.unlock();
    }

    /** The wall time of entering MON into `sum`. */
    static void timedEnter(AtomicLong sum) {
        long t0 = System.nanoTime();
        synchronized (MON) {
            sum.addAndGet(System.nanoTime() - t0);
        }
    }

    static final class MonitorPinnedWait {
        static void block() {
            timedEnter(MON_CLINIT_NS);
        }
    }

    static final class MonitorUnpinned {
        static void block() {
            timedEnter(MON_PLAIN_NS);
        }
    }

    public static final class NativeFrameWait {
        public static void block() {
            for (StackTraceElement e : Thread.currentThread().getStackTrace())
                if (e.isNativeMethod())
                    nativeFrameSeen = true;
            timedEnter(MON_NATIVE_NS);
        }

        static void byReflection() {
            try {
                NativeFrameWait.class.getMethod("block").invoke(null);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /** The wall time of a wait of holdMs on an object nobody notifies. */
    static void timedWait(AtomicLong sum) {
        Object waited = new Object();
        long t0 = System.nanoTime();
        synchronized (waited) {
            try {
                waited.wait(holdMs);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
        sum.addAndGet(System.nanoTime() - t0);
    }

    static final class PinnedWaiting {
        static void block() {
            timedWait(WAIT_CLINIT_NS);
        }
    }

    static final class PlainWaiting {
        static void block() {
            timedWait(WAIT_PLAIN_NS);
        }
    }

    /** MonitorEnter(monitor) then MonitorExit, in C. */
    static native void enterFromNative(Object monitor);

    static final class JniEnter {
        static void block() {
            long t0 = System.nanoTime();
            enterFromNative(MON);
            JNI_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    static final class WaitPin1 {
        static { PinnedWaiting.block(); }
        static void touch() {}
    }

    static final class WaitPin2 {
        static { PinnedWaiting.block(); }
        static void touch() {}
    }

    static final class WaitPin3 {
        static { PinnedWaiting.block(); }
        static void touch() {}
    }

    static final class WaitPin4 {
        static { PinnedWaiting.block(); }
        static void touch() {}
    }

    static final class MonPin1 {
        static { MonitorPinnedWait.block(); }
        static void touch() {}
    }

    static final class MonPin2 {
        static { MonitorPinnedWait.block(); }
        static void touch() {}
    }

    static final class MonPin3 {
        static { MonitorPinnedWait.block(); }
        static void touch() {}
    }

    static final class MonPin4 {
        static { MonitorPinnedWait.block(); }
        static void touch() {}
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

    /** Hold MON until `t` is blocked entering it, then `holdMs` more, then let it go. */
    static void holdMonitorAgainst(Runnable body, long holdMs) throws Exception {
        Thread t;
        synchronized (MON) {
            t = startVirtual(body);
            while (t.getState() != Thread.State.BLOCKED)
                Thread.sleep(1);
            Thread.sleep(holdMs);
        }
        t.join();
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        holdMs = args.length > 1 ? Long.parseLong(args[1]) : 150;
        Runnable[] pins = {Pin1::touch, Pin2::touch, Pin3::touch, Pin4::touch};
        for (int i = 0; i < rounds; i++) {
            holdAgainst(pins[i], holdMs);
            holdAgainst(Unpinned::block, holdMs);
        }
        System.err.println("VP rounds=" + rounds + " pinned_ns=" + PINNED_NS.get() + " unpinned_ns=" + UNPINNED_NS.get());
        Runnable[] monPins = {MonPin1::touch, MonPin2::touch, MonPin3::touch, MonPin4::touch};
        for (int i = 0; i < rounds; i++) {
            holdMonitorAgainst(monPins[i], holdMs);
            holdMonitorAgainst(NativeFrameWait::byReflection, holdMs);
            holdMonitorAgainst(MonitorUnpinned::block, holdMs);
        }
        System.err.println("VPM rounds=" + rounds + " clinit_ns=" + MON_CLINIT_NS.get() + " native_ns="
                           + MON_NATIVE_NS.get() + " plain_ns=" + MON_PLAIN_NS.get() + " native_frame="
                           + (nativeFrameSeen ? 1 : 0) + " monitors_unmount="
                           + (Runtime.version().feature() >= 24 ? 1 : 0));
        Runnable[] waitPins = {WaitPin1::touch, WaitPin2::touch, WaitPin3::touch, WaitPin4::touch};
        for (int i = 0; i < rounds; i++) {
            startVirtual(waitPins[i]).join();
            startVirtual(PlainWaiting::block).join();
        }
        System.err.println("VPW rounds=" + rounds + " clinit_ns=" + WAIT_CLINIT_NS.get() + " plain_ns="
                           + WAIT_PLAIN_NS.get());
        if (args.length > 2) {
            System.load(args[2]);
            for (int i = 0; i < rounds; i++)
                holdMonitorAgainst(JniEnter::block, holdMs);
            System.err.println("VPJ rounds=" + rounds + " jni_ns=" + JNI_NS.get());
        }
        System.err.println("VirtualPinning: done");
    }
}
