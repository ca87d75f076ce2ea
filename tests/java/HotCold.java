/**
 * The hot/cold program of Mytkowicz et al., "Evaluating the accuracy of Java
 * profilers" (PLDI 2010), in our own words: a tiny method `hot` does a little
 * arithmetic on a static array and is called from `cold`'s loop, so C2 inlines
 * it.  Nearly all the CPU is hot's (two divisions, two loads, a store); cold's
 * own part is the loop counter and its test.  A profiler that names inlined
 * methods should put nearly all samples on hot; one that charges a sample to the
 * instruction after the one that was running gives a part of hot's time to
 * cold's loop code that follows it.
 * args: [wall-clock ms, default 4000] [stop=FILE]: ends early once FILE
 * exists (StopFile).
 * Prints on stderr: "HotCold: cold called N times, hot called M times, sum S".
 */
public class HotCold {
    static final int[] array = new int[1021];
    static volatile int sink;

    static void hot(int i) {
        int a = (i + 1000) % array.length;
        int b = (a + i / 33) % array.length;
        array[a] = array[b] + 1;
    }

    static void cold(int n) {
        for (int i = 0; i < n; i++) {
            hot(i);
        }
    }

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 4000;
        long end = System.nanoTime() + ms * 1_000_000L;
        StopFile.watch(args);
        long colds = 0;
        int n = 1_000_000;
        while (System.nanoTime() < end && !StopFile.stopped()) {
            cold(n);
            colds++;
        }
        long sum = 0;
        for (int v : array)
            sum += v;
        sink = (int) sum;
        System.err.println("HotCold: cold called " + colds + " times, hot called " + colds * n
                           + " times, sum " + sum);
    }
}
