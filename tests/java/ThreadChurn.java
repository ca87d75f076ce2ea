import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Starts and joins threads by the thousand: `total` short threads named
 * churn-<n>, in batches of `batch`, each doing a little CPU work.
 * stderr: "CHURN started=<n> joined=<n> thread_cpu_ns=<sum of the churn threads' CPU time>
 * work_cpu_ns=<the part of it spent in work()>"
 * and "RESOURCES fds_before=<n> fds_after=<n> timers_before=<n> timers_after=<n>
 * threads_before=<n> threads_after=<n>": open file descriptors, POSIX timers and
 * threads of the process (/proc/self/fd, /proc/self/timers, /proc/self/task),
 * which a profiler that leaked its per-thread timers or perf events would grow.
 * args: [total, default 5000] [batch, default 50] [iterations per thread, default 300000]
 */
public class ThreadChurn {
    static volatile long sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final AtomicLong CPU = new AtomicLong(), WORK_CPU = new AtomicLong();

    static long work(long x, int iters) {
        for (int i = 0; i < iters; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 31;
        }
        return x;
    }

    static int countFds() {
        String[] fds = new java.io.File("/proc/self/fd").list();
        return fds == null ? -1 : fds.length;
    }

    static int countTimers() {
        try {
            int n = 0;
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/proc/self/timers")))
                if (line.startsWith("ID:"))
                    n++;
            return n;
        } catch (java.io.IOException e) {
            return -1;
        }
    }

    static int countThreads() {
        String[] tasks = new java.io.File("/proc/self/task").list();
        return tasks == null ? -1 : tasks.length;
    }

    public static void main(String[] args) throws Exception {
        int fdsBefore = countFds(), timersBefore = countTimers(), threadsBefore = countThreads();
        int total = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
        int batch = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        int iters = args.length > 2 ? Integer.parseInt(args[2]) : 300_000;
        int started = 0, joined = 0;
        while (started < total) {
            List<Thread> ts = new ArrayList<>(batch);
            for (int j = 0; j < batch && started < total; j++, started++) {
                final long seed = started;
                Thread t = new Thread(() -> {
                    long before = MX.getCurrentThreadCpuTime();
                    sink += work(seed, iters);
                    long after = MX.getCurrentThreadCpuTime();
                    WORK_CPU.addAndGet(after - before);
                    CPU.addAndGet(after);
                }, "churn-" + started);
                t.start();
                ts.add(t);
            }
            for (Thread t : ts) {
                t.join();
                joined++;
            }
        }
        // Timers of threads that are not Java threads are made and dropped by
        // the agent's rescan of /proc/self/task (every 100 ms with native=y):
        // one that raced a churn thread's end is gone by its next pass.
        Thread.sleep(300);
        System.err.println("RESOURCES fds_before=" + fdsBefore + " fds_after=" + countFds()
                           + " timers_before=" + timersBefore + " timers_after=" + countTimers()
                           + " threads_before=" + threadsBefore + " threads_after=" + countThreads());
        System.err.println("CHURN started=" + started + " joined=" + joined + " thread_cpu_ns=" + CPU.get()
                           + " work_cpu_ns=" + WORK_CPU.get());
    }
}
