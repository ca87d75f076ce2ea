import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;

/**
 * Known CPU profile: one worker thread ("cpu-worker") alternates between partA
 * and partB, which do identical arithmetic but run for different amounts of
 * thread CPU time (partA ~70%, partB ~30%).  Each phase lasts a random
 * 35-105 ms (partA) / 15-45 ms (partB) of thread CPU time: long phases make a
 * periodic sampler's error per phase at most about one sample (much lower
 * variance than independent 7 ms / 3 ms slices), and the random lengths keep
 * the phases from locking to the sampling period.  The CPU clock is read
 * inside partA/partB, so all time between entering and leaving them is
 * attributed to them both in the truth and in the profile.
 *
 * Meanwhile four threads sit idle: blocked in a native socket read
 * (idleNativeRead), in Thread.sleep (idleSleep), in Object.wait (idleWait)
 * and parked (idlePark).  A correct CPU profiler gives them zero samples.
 *
 * stderr: "TRUTH partA_ns=.. partB_ns=.. worker_cpu_ns=.." and
 *         "IDLE name=state/cpu_ns ..." (CPU time the idle threads used).
 * args: [total worker CPU ms, default 5000]
 */
public class CpuSplit {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final Object LOCK = new Object();
    static volatile boolean done;
    static volatile long sink;
    static long aNs, bNs; // written by the worker only

    static long partA(long budgetNs, long x) {
        final long t0 = MX.getCurrentThreadCpuTime();
        long t;
        do {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            t = MX.getCurrentThreadCpuTime();
        } while (t - t0 < budgetNs);
        aNs += t - t0;
        return x;
    }

    static long partB(long budgetNs, long x) {
        final long t0 = MX.getCurrentThreadCpuTime();
        long t;
        do {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            t = MX.getCurrentThreadCpuTime();
        } while (t - t0 < budgetNs);
        bNs += t - t0;
        return x;
    }

    static void workerLoop(long totalNs) {
        final long start = MX.getCurrentThreadCpuTime();
        Random rnd = new Random(20261121L);
        long x = System.nanoTime();
        while (aNs + bNs < totalNs) {
            x = partA(35_000_000L + (long) (rnd.nextDouble() * 70_000_000L), x);
            x = partB(15_000_000L + (long) (rnd.nextDouble() * 30_000_000L), x);
        }
        long cpu = MX.getCurrentThreadCpuTime() - start;
        sink = x;
        System.err.println("TRUTH partA_ns=" + aNs + " partB_ns=" + bNs + " worker_cpu_ns=" + cpu);
    }

    static void idleNativeRead(InputStream in) throws IOException {
        int r = in.read(); // the peer never sends: blocks in the kernel
        if (!done) System.err.println("idleNativeRead returned " + r);
    }

    static void idleSleep() throws InterruptedException {
        while (!done) Thread.sleep(1_000_000L);
    }

    static void idleWait() throws InterruptedException {
        synchronized (LOCK) {
            while (!done) LOCK.wait();
        }
    }

    static void idlePark() {
        while (!done) LockSupport.park();
    }

    interface Body { void run() throws Exception; }

    static Thread daemon(String name, Body body) {
        Thread t = new Thread(name) {
            @Override public void run() {
                try { body.run(); } catch (Exception e) { if (!done) e.printStackTrace(); }
            }
        };
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        long totalMs = args.length > 0 ? Long.parseLong(args[0]) : 5000;
        InetAddress lo = InetAddress.getLoopbackAddress();
        ServerSocket ss = new ServerSocket(0, 50, lo);
        Socket client = new Socket(lo, ss.getLocalPort());
        Socket server = ss.accept();
        // Warm up the read path (class loading, first-call costs) on this
        // thread, so the idle reader thread itself uses next to no CPU.
        OutputStream out = client.getOutputStream();
        out.write(42);
        out.flush();
        InputStream in = server.getInputStream();
        if (in.read() != 42) throw new IllegalStateException("warm-up read failed");

        Thread[] idle = {
            daemon("idle-read", () -> idleNativeRead(in)),
            daemon("idle-sleep", CpuSplit::idleSleep),
            daemon("idle-wait", CpuSplit::idleWait),
            daemon("idle-park", CpuSplit::idlePark),
        };
        Thread.sleep(300); // let them block

        Thread worker = new Thread("cpu-worker") {
            @Override public void run() { workerLoop(totalMs * 1_000_000L); }
        };
        worker.start();
        worker.join();

        StringBuilder sb = new StringBuilder("IDLE");
        for (Thread t : idle) {
            sb.append(' ').append(t.getName()).append('=').append(t.getState())
              .append('/').append(MX.getThreadCpuTime(t.getId()));
        }
        System.err.println(sb);
        done = true;
        client.close(); // keep the sockets reachable until here
        ss.close();
    }
}
