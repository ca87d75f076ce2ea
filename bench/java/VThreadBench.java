import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * 100,000 short tasks (issue 18's overhead case), on one virtual thread
 * each ("virtual") or on a pool of 8 platform threads ("platform"): the same
 * work either way. A task hashes a little (about 20 us of CPU), then takes
 * one of 16 ReentrantLocks and one of 16 monitors briefly (some contention,
 * for monitor=y), allocating a small array.
 *
 * stdout: "checksum <n>" (the same for both modes and every run), then
 * "producer_cpu_ns <n>": the CPU time the main thread spent submitting.
 * args: mode (virtual | platform) [tasks, default 100000] [producer_ns, default 0]
 *
 * producer_ns: CPU the submitting thread burns before each submission, a
 * control without any agent for what a slower producer costs by itself (an
 * agent that records every allocation slows the submitting thread most, as it
 * makes a virtual thread's objects there): idle carriers park and are woken
 * once per task, which costs the JDK's scheduler more than the platform pool.
 */
public class VThreadBench {
    static final ReentrantLock[] LOCKS = new ReentrantLock[16];
    static final Object[] MONITORS = new Object[16];
    static final AtomicLong SUM = new AtomicLong();
    static long producerSink;

    /* Busy for ns nanoseconds of the calling thread's time (about: wall clock). */
    static void produce(long ns) {
        long end = System.nanoTime() + ns, n = 0;
        while (System.nanoTime() < end) n++;
        producerSink += n;
    }

    static void task(int i) {
        long x = i;
        for (int k = 0; k < 20_000; k++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        long[] scratch = new long[8];
        scratch[i & 7] = x;
        ReentrantLock l = LOCKS[i & 15];
        l.lock();
        try {
            x ^= scratch[i & 7] >>> 7;
        } finally {
            l.unlock();
        }
        synchronized (MONITORS[(i >>> 4) & 15]) {
            x += i;
        }
        SUM.addAndGet(x & 0xffff);
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "virtual";
        int tasks = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        long producerNs = args.length > 2 ? Long.parseLong(args[2]) : 0;
        for (int i = 0; i < 16; i++) {
            LOCKS[i] = new ReentrantLock();
            MONITORS[i] = new Object();
        }
        ExecutorService ex = mode.equals("virtual")
            ? (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null)
            : Executors.newFixedThreadPool(8);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long producerStart = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < tasks; i++) {
            final int n = i;
            if (producerNs > 0) produce(producerNs);
            ex.execute(() -> task(n));
        }
        long producerCpu = mx.getCurrentThreadCpuTime() - producerStart;
        ex.shutdown();
        ex.awaitTermination(1, java.util.concurrent.TimeUnit.HOURS);
        System.out.println("checksum " + SUM.get());
        System.out.println("producer_cpu_ns " + producerCpu);
    }
}
