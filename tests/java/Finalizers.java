import java.util.concurrent.atomic.AtomicLong;

/**
 * Finalizer truth (issue 17): makes ROUNDS x PER_ROUND objects with a
 * finalize() method in a small heap (run it with -Xmx64m or so), each built
 * by Finalizable(int) which calls Finalizable.init once, and checks that the
 * JVM's Finalizer thread keeps up: at the end it waits up to WAIT_MS for the
 * rest (System.gc + System.runFinalization). Prints on stderr:
 *   TRUTH created=N finalized=M inits=N rounds=R cpu_ms=C backlog_max=B paced_ms=P
 * (backlog_max: the most objects created and not yet finalized seen at the end
 * of a round). Exit 0 when every object was finalized, 2 when some were not
 * within the wait, 3 on OutOfMemoryError.
 * Arguments: [rounds] [per round] [wait ms] [pace: 1 or 0]. With pace 1
 * (the default) main waits after a round while more than 4 rounds of objects
 * are unfinalized, until at most 2 are (paced_ms: the time it waited), so the
 * heap needed stays bounded whatever the machine's load; with 0 it never waits
 * (bench/finalizers: the backlog shows as memory).
 */
public class Finalizers {
    static final AtomicLong finalized = new AtomicLong();
    static long inits;
    static volatile Object sink;

    static final class Finalizable {
        final int[] payload;   /* 64 + 16 bytes: the heap fills if finalization falls behind */

        Finalizable(int i) {
            payload = new int[16];
            init(i);
        }

        void init(int i) {
            payload[0] = i;
            inits++;
        }

        @SuppressWarnings({"deprecation", "removal"})
        @Override
        protected void finalize() {
            finalized.incrementAndGet();
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        int perRound = args.length > 1 ? Integer.parseInt(args[1]) : 50_000;
        long waitMs = args.length > 2 ? Long.parseLong(args[2]) : 60_000;
        boolean pace = args.length <= 3 || !args[3].equals("0");
        long created = 0, backlogMax = 0, pacedNs = 0;
        long cpu0 = cpuNs();
        try {
            for (int r = 0; r < rounds; r++) {
                for (int i = 0; i < perRound; i++) {
                    sink = new Finalizable(i);
                    created++;
                }
                long backlog = created - finalized.get();
                if (backlog > backlogMax) backlogMax = backlog;
                if (pace && backlog > 4L * perRound) {
                    /* Unreachable objects are queued for finalization only by a
                     * GC, and while main waits it allocates nothing: after 20 ms
                     * without progress, ask for one. */
                    long t0 = System.nanoTime(), seen = finalized.get();
                    int idle = 0;
                    while (created - finalized.get() > 2L * perRound && System.nanoTime() - t0 < waitMs * 1_000_000L) {
                        Thread.sleep(1);
                        long now = finalized.get();
                        if (now != seen) { seen = now; idle = 0; }
                        else if (++idle >= 20) { System.gc(); idle = 0; }
                    }
                    pacedNs += System.nanoTime() - t0;
                }
            }
        } catch (OutOfMemoryError e) {
            sink = null;
            System.err.println("OutOfMemoryError");
            System.err.flush();
            Runtime.getRuntime().halt(3);
        }
        sink = null;
        long deadline = System.nanoTime() + waitMs * 1_000_000L;
        while (finalized.get() < created && System.nanoTime() < deadline) {
            System.gc();
            runFinalization();
            if (finalized.get() < created) Thread.sleep(20);
        }
        long cpuMs = (cpuNs() - cpu0) / 1_000_000L;
        System.err.println("TRUTH created=" + created + " finalized=" + finalized.get() + " inits=" + inits
                           + " rounds=" + rounds + " cpu_ms=" + cpuMs + " backlog_max=" + backlogMax
                           + " paced_ms=" + pacedNs / 1_000_000L);
        System.exit(finalized.get() == created ? 0 : 2);
    }

    @SuppressWarnings({"deprecation", "removal"})
    static void runFinalization() { System.runFinalization(); }

    static long cpuNs() {
        return java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }
}
