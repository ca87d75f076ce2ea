/**
 * A known allocation mix, for readers of allocation samples (JFR's
 * jdk.ObjectAllocationSample): for args[0] ms (default 2000) one thread
 * allocates byte[1000] in makeBytes or long[125] in makeLongs, each dropped
 * at once, chosen at random 3 to 1. Both arrays take 1016 bytes (a 16-byte
 * header), so byte[] is 75% of the bytes allocated and long[] 25%. The
 * order is random because JFR samples the allocation that starts a new
 * TLAB: a fixed pattern (three byte[], one long[]) can line up with the
 * TLAB size so that one kind always starts the TLAB (JDK 25 then put 97%
 * of the bytes on byte[]).
 * stderr: "AllocMix: bytes N longs M" (the counts of each).
 */
public class AllocMix {
    static volatile Object sink;

    static void makeBytes() {
        sink = new byte[1000];
    }

    static void makeLongs() {
        sink = new long[125];
    }

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        long end = System.nanoTime() + ms * 1_000_000L;
        long bytes = 0, longs = 0, x = 88172645463325252L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                if ((x & 3) != 0) {
                    makeBytes();
                    bytes++;
                } else {
                    makeLongs();
                    longs++;
                }
            }
        }
        System.err.println("AllocMix: bytes " + bytes + " longs " + longs);
    }
}
