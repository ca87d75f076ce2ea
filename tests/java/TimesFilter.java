import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * cpu=times with include= and exclude= (times_filter): an application
 * class (TimesFilter$App) that calls a library class (TimesFilter$Lib).
 * App.run calls Lib.spin three times (CPU-bound, about 150 ms each) and
 * Lib.tiny 100,000 times, then App.own once (about 150 ms of its own).
 * Excluding Lib, its methods must vanish from CPU TIME and their time count
 * as App.run's own; including only App, the same, and main is not timed.
 *
 * Truth (stderr): "TF lib_cpu_ns=L own_cpu_ns=O tiny=100000" (the thread's
 * CPU time inside the three spins, and inside own), then "TimesFilter: done".
 */
public class TimesFilter {
    static volatile long sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static final class Lib {
        /* The loop is here, not in a shared helper: all of its time is Lib's. */
        static void spin(long ms) {
            long end = System.nanoTime() + ms * 1_000_000L, s = 0;
            while (System.nanoTime() < end)
                for (int i = 0; i < 1000; i++)
                    s += i * s + 1;
            sink += s;
        }

        static int tiny(int x) {
            return x * 31 + 7;
        }
    }

    static final class App {
        static long libNs, ownNs;

        static void run() {
            for (int i = 0; i < 3; i++) {
                long t0 = MX.getCurrentThreadCpuTime();
                Lib.spin(150);
                libNs += MX.getCurrentThreadCpuTime() - t0;
            }
            int s = 0;
            for (int i = 0; i < 100_000; i++)
                s += Lib.tiny(i);
            sink += s;
            long t0 = MX.getCurrentThreadCpuTime();
            own(150);
            ownNs += MX.getCurrentThreadCpuTime() - t0;
        }

        static void own(long ms) {
            long end = System.nanoTime() + ms * 1_000_000L, s = 0;
            while (System.nanoTime() < end)
                for (int i = 0; i < 1000; i++)
                    s += i * s + 1;
            sink += s;
        }
    }

    public static void main(String[] args) {
        App.run();
        System.err.println("TF lib_cpu_ns=" + App.libNs + " own_cpu_ns=" + App.ownNs + " tiny=100000");
        System.err.println("TimesFilter: done");
    }
}
