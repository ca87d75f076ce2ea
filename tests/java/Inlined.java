/**
 * A small hot method (hot, well under 100 bytecodes) called from a caller's
 * loop, so that C2 inlines it into caller.  Nearly all CPU time is spent in
 * hot's arithmetic; a profiler without safepoint bias that reports inlined
 * frames must put nearly all samples on hot (top frame, or the frame just
 * above caller).  The inner loop (about 200 iterations) has a trip count depending on x so that C2 can
 * neither fully unroll it nor vectorise the caller's loop.
 * args: [ms, default 4000] [cpu] [stop=FILE]: ms of wall-clock time, or
 * with "cpu" of the main thread's CPU time (as many CPU samples on a loaded
 * machine as on an idle one); ends early once FILE exists (StopFile).
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Inlined {
    static volatile long sink;

    static int hot(int x) {
        int r = x | 1;
        int n = 200 + (x & 7);
        for (int k = 0; k < n; k++) {
            r = r * 0x01000193 ^ ((r >>> 13) + k);
        }
        return r;
    }

    static long caller(int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += hot(i);
        }
        return sum;
    }

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 4000;
        ThreadMXBean cpu = java.util.Arrays.asList(args).contains("cpu") ? ManagementFactory.getThreadMXBean() : null;
        long end = (cpu != null ? cpu.getCurrentThreadCpuTime() : System.nanoTime()) + ms * 1_000_000L;
        StopFile.watch(args);
        long total = 0;
        int calls = 0;
        while ((cpu != null ? cpu.getCurrentThreadCpuTime() : System.nanoTime()) < end && !StopFile.stopped()) {
            total += caller(200_000);
            calls++;
        }
        sink = total;
        System.err.println("Inlined: caller called " + calls + " times, result " + total);
    }
}
