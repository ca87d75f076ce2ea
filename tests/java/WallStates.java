import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads whose wall-clock time is known, for wall=:
 *   w-compute-sleep  computes ~100 ms (CPU), then sleeps 100 ms, over and over
 *   w-wait           Object.wait() all run long
 *   w-park           LockSupport.park() all run long
 *   w-socket         blocked in a socket read all run long (loopback, no data)
 *   w-blocked        waiting to enter a monitor main holds all run long
 * and, with a second argument N, N more threads "w-idle-<i>" asleep all run
 * long (the cost bench: many idle threads); with a third argument S, S
 * threads "w-spin-<i>" that compute all run long: more than the machine's
 * CPUs, they take turns, each runnable (waiting for a CPU) part of the time.
 *
 * args: milliseconds to run (default 3000), idle thread count (default 0),
 * spinning thread count (default 0).
 * stderr: "TRUTH name=<thread> life_ns=<from its start to its end> cpu_ns=<its CPU>"
 * per thread, and "TRUTH compute_ns=<time computing> sleep_ns=<time asleep>"
 * for w-compute-sleep.
 */
public class WallStates {
    static final Object MONITOR = new Object();
    static final Object WAIT_ON = new Object();
    static volatile boolean done;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 3000;
        int idle = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        int spinners = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        CountDownLatch started = new CountDownLatch(5);
        long[] computeSleep = new long[2];
        Thread[] threads = {
            timed("w-compute-sleep", started, () -> {
                while (!done) {
                    long t0 = System.nanoTime();
                    long x = t0;
                    while (System.nanoTime() - t0 < 100_000_000L)
                        for (int i = 0; i < 10_000; i++)
                            x = x * 6364136223846793005L + 1442695040888963407L;
                    sink += x;
                    long t1 = System.nanoTime();
                    try { Thread.sleep(100); } catch (InterruptedException e) { return; }
                    computeSleep[0] += t1 - t0;
                    computeSleep[1] += System.nanoTime() - t1;
                }
            }),
            timed("w-wait", started, () -> {
                synchronized (WAIT_ON) {
                    while (!done)
                        try { WAIT_ON.wait(); } catch (InterruptedException e) { return; }
                }
            }),
            timed("w-park", started, () -> {
                while (!done)
                    LockSupport.park();
            }),
            timed("w-socket", started, () -> {
                try (Socket s = new Socket(server.getInetAddress(), server.getLocalPort());
                     InputStream in = s.getInputStream()) {
                    in.read();              // no data ever comes: returns at close
                } catch (Exception e) {
                    // the server side closed
                }
            }),
        };
        Socket accepted;
        Thread blocked;
        synchronized (MONITOR) {
            blocked = timed("w-blocked", started, () -> {
                synchronized (MONITOR) {
                    sink++;
                }
            });
            Thread[] spin = new Thread[spinners];
            for (int i = 0; i < spinners; i++) {
                spin[i] = timed("w-spin-" + i, null, () -> {
                    long x = System.nanoTime();
                    while (!done)
                        for (int k = 0; k < 100_000; k++)
                            x = x * 6364136223846793005L + 1442695040888963407L;
                    sink += x;
                });
                spin[i].setDaemon(true);
            }
            threads = concat(threads, spin);
            for (Thread t : threads)
                t.start();
            accepted = server.accept();
            blocked.start();
            Thread[] idlers = new Thread[idle];
            for (int i = 0; i < idle; i++) {
                idlers[i] = new Thread(() -> {
                    try { Thread.sleep(millis + 60_000); } catch (InterruptedException e) { }
                }, "w-idle-" + i);
                idlers[i].setDaemon(true);
                idlers[i].start();
            }
            started.await();
            Thread.sleep(millis);
            done = true;
            synchronized (WAIT_ON) { WAIT_ON.notifyAll(); }
            for (Thread t : threads)
                LockSupport.unpark(t);
            accepted.close();
            for (Thread t : idlers)
                t.interrupt();
        }
        blocked.join();
        for (Thread t : threads)
            t.join();
        server.close();
        System.err.println("TRUTH compute_ns=" + computeSleep[0] + " sleep_ns=" + computeSleep[1]);
    }

    static Thread[] concat(Thread[] a, Thread[] b) {
        Thread[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    /** A thread that reports its lifetime and CPU on stderr as it ends. */
    static Thread timed(String name, CountDownLatch started, Runnable body) {
        return new Thread(() -> {
            long t0 = System.nanoTime();
            if (started != null)
                started.countDown();
            body.run();
            long cpu = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
            System.err.println("TRUTH name=" + name + " life_ns=" + (System.nanoTime() - t0) + " cpu_ns=" + cpu);
        }, name);
    }
}
