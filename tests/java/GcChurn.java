import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A program whose CPU goes mostly to the garbage collector: the main thread
 * keeps a large live set of small objects and replaces random ones all the
 * time, so G1 copies survivors over and over on its worker threads.
 *
 * args: seconds to run (default 4).
 * stderr, at the end (the truth the native_* tests compare with):
 *   "THREADCPU tid=<tid> ns=<cpu ns> name=<OS name>" for every thread of the
 *   process, from /proc/self/task/<tid>/schedstat (CPU time in ns) and comm;
 *   "TRUTH churn_ns=<main thread's CPU>".
 */
public class GcChurn {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 4;
        Object[] live = new Object[400_000];
        long seed = 42;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long t0 = cpuNs();
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                seed = seed * 6364136223846793005L + 1442695040888963407L;
                int at = (int) ((seed >>> 33) % live.length);
                live[at] = new long[1 + (int) ((seed >>> 20) & 31)];
            }
            sink += live.length;
        }
        long churn = cpuNs() - t0;
        printThreads();
        System.err.println("TRUTH churn_ns=" + churn);
    }

    static long cpuNs() {
        return java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    static void printThreads() throws IOException {
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    String name = Files.readString(task.resolve("comm")).trim();
                    String sched = Files.readString(task.resolve("schedstat")).trim();
                    long ns = Long.parseLong(sched.split(" ")[0]);
                    System.err.println("THREADCPU tid=" + task.getFileName() + " ns=" + ns + " name=" + name);
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        }
    }
}
