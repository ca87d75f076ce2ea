/**
 * Short CPU-bound program for option tests.  Stack while busy:
 * main -> level1 -> level2 -> level3 -> spin (5 frames), plus some time in
 * the native Thread.yield.  Prints exactly "Busy: done" on stdout and
 * "PID <pid>" on stderr.  args: [wall-clock ms, default 800]
 */
public class Busy {
    static volatile long sink;

    static long spin(long x) {
        for (int i = 0; i < 20_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    static long level3(long x) {
        x = spin(x);
        for (int i = 0; i < 20; i++) Thread.yield();
        return x;
    }

    static long level2(long x) { return level3(x); }

    static long level1(long end) {
        long x = 7;
        while (System.nanoTime() < end) x = level2(x);
        return x;
    }

    public static void main(String[] args) {
        System.err.println("PID " + ProcessHandle.current().pid());
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 800;
        sink = level1(System.nanoTime() + ms * 1_000_000L);
        System.out.println("Busy: done");
    }
}
