import java.util.LinkedHashMap;
import java.util.Map;

/**
 * heap=sites truth under GC churn: an LRU cache of 10,000 entries takes
 * argv[0] byte[1000] values, evicting the eldest, so exactly 10,000 of them
 * are alive at exit however many GCs freed the others. (Found by the heap
 * benchmark: before the live census, late ObjectFree events left up to
 * 432,631 of 2,000,000 counted as live.)
 */
public class Evict {
    static final int CAP = 10_000;
    static Map<Integer, byte[]> cache;

    static byte[] value() { return new byte[1000]; }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        cache = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, byte[]> e) { return size() > CAP; }
        };
        for (int i = 0; i < n; i++) cache.put(i, value());
        System.err.println("TRUTH byte[] Evict.value " + n + " " + cache.size());
    }
}
