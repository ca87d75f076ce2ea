/**
 * HotCold (the hot/cold program of Mytkowicz et al., PLDI 2010) with cold's
 * loop run as one call that lasts as long as the program: C2 compiles the
 * loop, with hot inlined into it, on stack replacement (OSR) while it runs,
 * and the thread stays in that code.  An agent attached later finds that
 * code running (attach_hot_cold_loop): code compiled before the attach
 * describes safepoints only, which would charge hot's samples to cold.
 * hot and cold are HotCold's; the loop runs on a daemon thread, in calls of
 * 2e9 iterations (several seconds each), until main has slept its time,
 * or, given a stop file, until that file exists (the test creates it once
 * the loop has had the CPU it needs, however loaded the machine).
 * args: [wall-clock ms, default 4000] [stop file]
 * Prints on stderr: "HotColdLoop: done after M ms, sum S".
 */
import java.nio.file.Files;
import java.nio.file.Path;

public class HotColdLoop {
    static final class Loop extends Thread {
        Loop() {
            super("hot-cold-loop");
            setDaemon(true);
        }

        @Override
        public void run() {
            for (;;)
                HotCold.cold(2_000_000_000);   // i + 1000 stays below Integer.MAX_VALUE
        }
    }

    public static void main(String[] args) throws InterruptedException {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 4000;
        Path stop = args.length > 1 ? Path.of(args[1]) : null;
        new Loop().start();
        long start = System.nanoTime(), end = start + ms * 1_000_000L;
        for (long now = start; now < end && (stop == null || !Files.exists(stop)); now = System.nanoTime())
            Thread.sleep(Math.min(20, (end - now + 999_999) / 1_000_000));
        long sum = 0;
        for (int v : HotCold.array)
            sum += v;
        HotCold.sink = (int) sum;
        System.err.println("HotColdLoop: done after " + (System.nanoTime() - start) / 1_000_000 + " ms, sum " + sum);
    }
}
