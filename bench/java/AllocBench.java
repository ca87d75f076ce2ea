import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Allocation-heavy benchmark doing a FIXED amount of work (not a fixed time), so
 * that the cost of allocation profiling (heap=sites) shows up as extra CPU /
 * wall time.
 *
 * Usage: java AllocBench [threads=2] [rounds=40]
 * Each worker thread executes `rounds` rounds; each round runs every kernel once:
 *   logs        builds ~8,000 log lines with StringBuilder, splits and parses them
 *               into small records, groups them in a HashMap of ArrayLists
 *   collections boxed Integers/Longs in ArrayList, HashMap, HashSet, TreeMap,
 *               a sort and a stream pipeline
 *   arrays      byte/char/int/long/Object arrays of 16 to 8192 elements
 *               (power-of-two spread), Arrays.copyOf growth, clone,
 *               int[][] (multianewarray) and ragged double[][]
 *   trees       a binary search tree of small nodes, a persistent (cons) list
 *   documents   JSON-like nested HashMaps/ArrayLists with boxed numbers and
 *               strings, serialized to a String
 *   cache       the live set: a per-thread LRU cache (LinkedHashMap, access
 *               order) of up to CACHE_ENTRIES entries with a byte[] payload of
 *               64 B..4 KB, a String key and an int[]; misses replace entries, so
 *               objects survive long enough to be promoted and then die old
 * The caches stay reachable from a static field until the JVM exits (about
 * 2 x 35 MB live at the end, 66 MB of it payloads). A checksum is printed so the JIT cannot drop the
 * work; it is deterministic for a given (threads, rounds).
 */
public final class AllocBench {

    static final int CACHE_ENTRIES = 30_000;

    /** The live set, kept reachable until exit. */
    static final List<Map<Long, Entry>> CACHES = Collections.synchronizedList(new ArrayList<>());

    // ------------------------------------------------------------------ logs
    record LogEvent(String host, String method, String path, int status, int millis) {}

    static final class Stats {
        long count, sum, max;
        final Map<Integer, Integer> byStatus = new HashMap<>();
        void add(LogEvent e) {
            count++;
            sum += e.millis();
            max = Math.max(max, e.millis());
            byStatus.merge(e.status(), 1, Integer::sum);
        }
    }

    static final String[] METHODS = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
    static final int[] STATUSES = {200, 200, 200, 200, 201, 204, 301, 404, 500};

    static long logs(SplittableRandom rnd) {
        int n = 8_000;
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StringBuilder sb = new StringBuilder();
            sb.append("2024-03-").append(1 + rnd.nextInt(28)).append('T')
              .append(rnd.nextInt(24)).append(':').append(rnd.nextInt(60)).append(' ')
              .append("host-").append(rnd.nextInt(40)).append(' ')
              .append(METHODS[rnd.nextInt(METHODS.length)]).append(' ')
              .append("/api/v1/items/").append(rnd.nextInt(5000)).append("?q=").append(Long.toHexString(rnd.nextLong()))
              .append(' ').append(STATUSES[rnd.nextInt(STATUSES.length)])
              .append(' ').append(rnd.nextInt(2000)).append("ms");
            lines.add(sb.toString());
        }
        Map<String, List<LogEvent>> byHost = new HashMap<>();
        for (String line : lines) {
            String[] f = line.split(" ");
            String path = f[3];
            int q = path.indexOf('?');
            if (q >= 0) path = path.substring(0, q);
            LogEvent e = new LogEvent(f[1], f[2], path, Integer.parseInt(f[4]),
                    Integer.parseInt(f[5].substring(0, f[5].length() - 2)));
            byHost.computeIfAbsent(e.host(), k -> new ArrayList<>()).add(e);
        }
        Map<String, Stats> stats = new TreeMap<>();
        for (Map.Entry<String, List<LogEvent>> en : byHost.entrySet()) {
            Stats s = new Stats();
            for (LogEvent e : en.getValue()) s.add(e);
            stats.put(en.getKey().toUpperCase(), s);
        }
        long acc = 0;
        for (Map.Entry<String, Stats> en : stats.entrySet()) {
            Stats s = en.getValue();
            acc = acc * 31 + en.getKey().hashCode() + s.count * 7 + s.sum + s.max + s.byStatus.getOrDefault(500, 0);
        }
        return acc;
    }

    // ----------------------------------------------------------- collections
    static long collections(SplittableRandom rnd) {
        int n = 30_000;
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) list.add(rnd.nextInt(1_000_000));
        Collections.sort(list);
        Map<Integer, Long> counts = new HashMap<>();
        for (Integer v : list) counts.merge(v % 5000, (long) v, Long::sum);
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 5000; i++) keys.add("k" + (list.get(i) % 3000));
        TreeMap<Long, Integer> tm = new TreeMap<>();
        for (Map.Entry<Integer, Long> e : counts.entrySet()) tm.put(e.getValue(), e.getKey());
        List<String> mapped = list.stream()
                .filter(v -> (v & 3) == 0)
                .map(v -> Integer.toString(v, 16))
                .collect(Collectors.toList());
        long acc = keys.size() * 31L + tm.size() + mapped.size();
        for (String s : mapped) acc += s.length();
        acc += tm.firstKey() + tm.lastKey();
        return acc;
    }

    // ---------------------------------------------------------------- arrays
    static long arrays(SplittableRandom rnd) {
        long acc = 0;
        for (int i = 0; i < 600; i++) {
            int size = 16 << rnd.nextInt(10);          // 16 .. 8192 elements
            switch (i % 5) {
                case 0 -> {
                    byte[] b = new byte[size];
                    rnd.nextBytes(b);
                    acc += b[size - 1] + b.length;
                }
                case 1 -> {
                    int[] a = new int[size];
                    for (int j = 0; j < size; j++) a[j] = j * 31 + i;
                    int[] c = a.clone();
                    acc += c[size / 2];
                }
                case 2 -> {
                    long[] a = new long[4];           // grows like ArrayList's array
                    int len = 0;
                    for (int j = 0; j < size / 4; j++) {
                        if (len == a.length) a = Arrays.copyOf(a, len * 2);
                        a[len++] = j;
                    }
                    acc += a.length + a[len - 1];
                }
                case 3 -> {
                    char[] c = new char[size / 4];
                    Arrays.fill(c, (char) ('a' + i % 26));
                    acc += new String(c).hashCode();
                    Object[] o = new Object[size / 16];
                    for (int j = 0; j < o.length; j++) o[j] = (j & 1) == 0 ? "x" : Integer.valueOf(j);
                    acc += o.length;
                }
                default -> {
                    int rows = 2 + rnd.nextInt(30), cols = 2 + rnd.nextInt(30);
                    int[][] m = new int[rows][cols];       // multianewarray: inner arrays too
                    m[rows - 1][cols - 1] = i;
                    double[][] ragged = new double[rows][];
                    for (int r = 0; r < rows; r++) ragged[r] = new double[1 + r];
                    acc += m[rows - 1][cols - 1] + ragged[rows - 1].length;
                }
            }
        }
        return acc;
    }

    // ----------------------------------------------------------------- trees
    static final class Node {
        final int key;
        Node left, right;
        Node(int key) { this.key = key; }
    }

    record Cons(long head, Cons tail) {}

    static long trees(SplittableRandom rnd) {
        Node root = null;
        int n = 15_000;
        for (int i = 0; i < n; i++) {
            int k = rnd.nextInt();
            if (root == null) { root = new Node(k); continue; }
            Node p = root;
            while (true) {
                if (k < p.key) {
                    if (p.left == null) { p.left = new Node(k); break; }
                    p = p.left;
                } else {
                    if (p.right == null) { p.right = new Node(k); break; }
                    p = p.right;
                }
            }
        }
        long acc = height(root);
        Cons list = null;
        for (int i = 0; i < 20_000; i++) list = new Cons(i ^ rnd.nextInt(16), list);
        for (Cons c = list; c != null; c = c.tail()) acc += c.head();
        return acc;
    }

    static int height(Node n) {
        return n == null ? 0 : 1 + Math.max(height(n.left), height(n.right));
    }

    // ------------------------------------------------------------- documents
    static Object document(SplittableRandom rnd, int depth) {
        if (depth == 0 || rnd.nextInt(4) == 0) {
            return switch (rnd.nextInt(4)) {
                case 0 -> "value-" + rnd.nextInt(100_000);
                case 1 -> rnd.nextDouble() * 1000;
                case 2 -> (long) rnd.nextInt(1_000_000) + 1000;
                default -> rnd.nextBoolean();
            };
        }
        if (rnd.nextBoolean()) {
            Map<String, Object> m = new HashMap<>();
            int n = 1 + rnd.nextInt(6);
            for (int i = 0; i < n; i++) m.put("field" + i, document(rnd, depth - 1));
            return m;
        }
        List<Object> l = new ArrayList<>();
        int n = 1 + rnd.nextInt(6);
        for (int i = 0; i < n; i++) l.add(document(rnd, depth - 1));
        return l;
    }

    static void serialize(Object o, StringBuilder sb) {
        if (o instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : new TreeMap<>(m).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                sb.append('"').append(e.getKey()).append("\":");
                serialize(e.getValue(), sb);
            }
            sb.append('}');
        } else if (o instanceof List<?> l) {
            sb.append('[');
            for (int i = 0; i < l.size(); i++) {
                if (i > 0) sb.append(',');
                serialize(l.get(i), sb);
            }
            sb.append(']');
        } else if (o instanceof String s) {
            sb.append('"').append(s).append('"');
        } else if (o instanceof Double d) {
            sb.append(String.valueOf(Math.round(d * 100) / 100.0));
        } else {
            sb.append(o);
        }
    }

    static long documents(SplittableRandom rnd) {
        long acc = 0;
        for (int i = 0; i < 150; i++) {
            Object doc = document(rnd, 6);
            StringBuilder sb = new StringBuilder();
            serialize(doc, sb);
            String json = sb.toString();
            acc = acc * 31 + json.length() + json.hashCode();
        }
        return acc;
    }

    // ----------------------------------------------------------------- cache
    static final class Entry {
        final String key;
        final byte[] payload;
        final int[] meta;
        Entry(String key, byte[] payload, int[] meta) { this.key = key; this.payload = payload; this.meta = meta; }
    }

    static Map<Long, Entry> newCache() {
        return new LinkedHashMap<>(CACHE_ENTRIES * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Entry> eldest) {
                return size() > CACHE_ENTRIES;
            }
        };
    }

    static long cache(SplittableRandom rnd, Map<Long, Entry> cache) {
        long acc = 0;
        for (int i = 0; i < 6_000; i++) {
            // Skewed keys: a hot set that stays, a long tail that churns.
            long k = rnd.nextInt(4) == 0 ? rnd.nextInt(200_000) : rnd.nextInt(20_000);
            Entry e = cache.get(k);
            if (e == null) {
                int size = 64 << rnd.nextInt(7);      // 64 B .. 4 KB
                byte[] p = new byte[size];
                p[0] = (byte) k;
                e = new Entry("entry:" + k, p, new int[] {(int) k, size, i});
                cache.put(k, e);
            }
            acc += e.payload.length + e.meta[0] + e.key.length();
        }
        return acc + cache.size();
    }

    // ---------------------------------------------------------------- driver
    static long worker(int id, int rounds) {
        SplittableRandom rnd = new SplittableRandom(0xA110CL + id);
        Map<Long, Entry> cache = newCache();
        CACHES.add(cache);
        long acc = 0;
        for (int r = 0; r < rounds; r++) {
            acc = acc * 1_000_003 + logs(rnd);
            acc = acc * 1_000_003 + collections(rnd);
            acc = acc * 1_000_003 + arrays(rnd);
            acc = acc * 1_000_003 + trees(rnd);
            acc = acc * 1_000_003 + documents(rnd);
            acc = acc * 1_000_003 + cache(rnd, cache);
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        long t0 = System.nanoTime();
        long[] results = new long[threads];
        Thread[] ts = new Thread[threads];
        Throwable[] err = new Throwable[1];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            ts[t] = new Thread(() -> {
                try { results[id] = worker(id, rounds); }
                catch (Throwable e) { err[0] = e; }
            }, "allocbench-worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        if (err[0] != null) throw new RuntimeException(err[0]);
        long sum = 0;
        for (long v : results) sum += v;
        long live = 0;
        for (Map<Long, Entry> c : CACHES)
            for (Entry e : c.values()) live += e.payload.length;
        System.out.printf("AllocBench threads=%d rounds=%d checksum=%016x cache-payload=%dMB elapsed=%.2fs%n",
                threads, rounds, sum, live >> 20, (System.nanoTime() - t0) / 1e9);
    }
}
