import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fixed CPU work in four equal segments for bench/attach: before the
 * agent is attached, while it profiles, and twice after `stop` (the first
 * pays for the JIT compiling again the methods `stop` restored). Between segments
 * the program waits (sleeping, no CPU) for the file <dir>/go-<n> that the
 * driver creates once it has attached or stopped the agent. The work is a
 * mix of small virtual calls and arithmetic (so cpu=times has calls to
 * time) on 2 threads. Prints "segment <n> done checksum=<hex>" on stderr.
 * args: <dir> [units per segment, default 40]
 */
public class AttachBench {
    interface Op { long apply(long x, int i); }
    static final class Mix implements Op { public long apply(long x, int i) { return x * 6364136223846793005L + i; } }
    static final class Rot implements Op { public long apply(long x, int i) { return Long.rotateLeft(x, i & 63) ^ i; } }
    static final class Xor implements Op { public long apply(long x, int i) { return x ^ (x >>> 29) ^ i; } }
    static final Op[] OPS = { new Mix(), new Rot(), new Xor() };

    static long unit(long x) {
        for (int i = 0; i < 2_000_000; i++) x = OPS[i % 3].apply(x, i);
        return x;
    }

    static long work(int units, long seed) throws InterruptedException {
        long[] out = new long[2];
        Thread[] ts = new Thread[2];
        for (int t = 0; t < 2; t++) {
            final int k = t;
            ts[t] = new Thread(() -> {
                long x = seed + k;
                for (int u = 0; u < units; u++) x = unit(x);
                out[k] = x;
            }, "worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        return out[0] ^ out[1];
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int units = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        System.err.println("PID " + ProcessHandle.current().pid());
        long sum = 0;
        for (int seg = 0; seg < 4; seg++) {
            if (seg > 0) {
                System.err.println("segment " + seg + " waiting");
                while (!Files.exists(dir.resolve("go-" + seg))) Thread.sleep(5);
            }
            sum ^= work(units, seg);
            System.err.println("segment " + seg + " done checksum=" + Long.toHexString(sum));
        }
    }
}
