import java.util.ArrayList;
import java.util.List;

/**
 * CPU-heavy virtual threads with a known split.
 *
 * Four virtual threads "vcpu-a-0".."vcpu-a-3" run taskA, which does 7 units
 * of work; four "vcpu-b-0".."vcpu-b-3" run taskB, which does 3 units of the
 * same work (Work.unit: identical arithmetic), all at once, so taskA has 70%
 * of the CPU the tasks use. Each unit is done in chunks with Thread.yield()
 * between them, so the threads unmount and come back on whichever carrier is
 * free. Work.unit is warmed up on the main thread first (JIT-compiled
 * before the tasks start, so that a unit costs the same in both tasks).
 *
 * stderr: "VCPU a_units=28 b_units=12" then "VirtualCpu: done".
 * On a JDK without virtual threads: "VirtualCpu: no virtual threads in this
 * JDK", exit code 3. Compiles with --release 17 (reflection).
 * args: [unit iterations, default 20000000]
 */
public class VirtualCpu {
    static volatile long sink;

    static final class Work {
        static long unit(long iterations, long x) {
            for (long done = 0; done < iterations; done += 1_000_000) {
                for (int i = 0; i < 1_000_000; i++)
                    x = x * 6364136223846793005L + 1442695040888963407L;
                Thread.yield();
            }
            return x;
        }
    }

    static void taskA(long iterations) {
        long x = 1;
        for (int u = 0; u < 7; u++)
            x = Work.unit(iterations, x);
        sink += x;
    }

    static void taskB(long iterations) {
        long x = 2;
        for (int u = 0; u < 3; u++)
            x = Work.unit(iterations, x);
        sink += x;
    }

    public static void main(String[] args) throws Exception {
        long iterations = args.length > 0 ? Long.parseLong(args[0]) : 20_000_000L;
        Object builder;
        try {
            builder = Thread.class.getMethod("ofVirtual").invoke(null);
        } catch (NoSuchMethodException e) {
            System.err.println("VirtualCpu: no virtual threads in this JDK");
            System.exit(3);
            return;
        }
        Class<?> b = Class.forName("java.lang.Thread$Builder");
        for (int i = 0; i < 20; i++)
            sink += Work.unit(2_000_000L, i);   // warm-up: compiled before the tasks
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            for (String kind : new String[] {"a", "b"}) {
                Runnable r = kind.equals("a") ? () -> taskA(iterations) : () -> taskB(iterations);
                Object named = b.getMethod("name", String.class).invoke(builder, "vcpu-" + kind + "-" + i);
                threads.add((Thread) b.getMethod("start", Runnable.class).invoke(named, r));
            }
        }
        for (Thread t : threads)
            t.join();
        System.err.println("VCPU a_units=28 b_units=12");
        System.err.println("VirtualCpu: done");
    }
}
