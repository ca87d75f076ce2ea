import java.lang.management.ManagementFactory;
import java.lang.reflect.Constructor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import javax.management.ObjectName;

/**
 * Many short virtual threads with a known profile (issue 18): each of n
 * virtual threads calls Step.work 3 times and makes 2 Made objects, one
 * with `new` and one by reflection (Constructor.newInstance, which since
 * JDK 18 allocates through Unsafe.allocateInstance and calls the
 * constructor after: the VM's allocation event, then the tracker). After
 * all have ended and a full GC, it counts the cpu=times states still alive
 * (java.lang.HprofThreadState, a class the agent defines) in a class
 * histogram: a state per virtual thread left behind would show here.
 *
 * stderr: "TRUTH n=<n> work_calls=<3n> made=<2n> states=<live states>"
 * then "VirtualMany: done". On a JDK without virtual threads: "VirtualMany:
 * no virtual threads in this JDK", exit code 3. Compiles with --release 17
 * (reflection). args: [n, default 20000]
 */
public class VirtualMany {
    static volatile long sink;

    static final class Made {
        final int value;
        Made(int value) { this.value = value; }
    }

    static final class Step {
        static long work(int i, long x) {
            for (int k = 0; k < 50; k++)
                x = x * 6364136223846793005L + i;
            return x;
        }
    }

    static void task(int i, Constructor<Made> reflective) {
        long x = i;
        for (int k = 0; k < 3; k++)
            x = Step.work(i, x);
        try {
            Made a = new Made(i);
            Made b = reflective.newInstance(i);
            x += a.value + b.value;
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
        sink += x;
    }

    static long liveInstances(String className) throws Exception {
        String h = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                new Object[] { null }, new String[] { String[].class.getName() });
        for (String line : h.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 4 && f[3].equals(className)) return Long.parseLong(f[1]);
        }
        return 0;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        ExecutorService ex;
        try {
            ex = (ExecutorService) java.util.concurrent.Executors.class
                    .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (NoSuchMethodException e) {
            System.err.println("VirtualMany: no virtual threads in this JDK");
            System.exit(3);
            return;
        }
        Constructor<Made> reflective = Made.class.getDeclaredConstructor(int.class);
        for (int i = 0; i < n; i++) {
            final int k = i;
            ex.execute(() -> task(k, reflective));
        }
        ex.shutdown();
        if (!ex.awaitTermination(10, TimeUnit.MINUTES))
            throw new IllegalStateException("the virtual threads did not finish");
        long states = liveInstances("java.lang.HprofThreadState");
        System.err.println("TRUTH n=" + n + " work_calls=" + 3L * n + " made=" + 2L * n + " states=" + states);
        System.err.println("VirtualMany: done");
    }
}
