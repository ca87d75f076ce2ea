import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Fills the heap with about TARGET MB of live objects, a mix of what real
 * heaps hold, then prints "READY ..." on stdout and waits until its standard
 * input is closed (or it is killed). Used by bench/heapdump to time heap dumps.
 * Meanwhile a thread measures the program's pauses: each line "gap" on stdin
 * is answered with "GAP <ms> ms", the longest since the last answer.
 *
 * Usage: java -Xmx3g HeapFill [target-MB=1024]
 *
 * Shares of the target (shallow sizes with compressed oops, estimated):
 *   25 %  small objects: Item (32 B: long, int, two references) in linked
 *         chains of 1-64, every 4th one with a short name String
 *   15 %  a HashMap<Integer, Item> (boxed keys, HashMap nodes, the table)
 *   20 %  Strings of 8-80 Latin-1 characters in ArrayLists
 *   15 %  Object[] of 4-1024 elements referring to the Items and Strings
 *   15 %  byte[] of 64 B-64 KB (log-uniform)
 *   10 %  int[], long[] and double[] of 16-16384 elements
 * The content is deterministic (fixed seed), so every run builds the same heap.
 */
public final class HeapFill {

    static final class Item {
        final long id;
        final int kind;
        Item next;
        String name;
        Item(long id, int kind, Item next) { this.id = id; this.kind = kind; this.next = next; }
    }

    /** The longest time between two wake-ups of the pause meter (ns). */
    static final AtomicLong maxGapNanos = new AtomicLong();

    /**
     * A thread that wakes up every millisecond and keeps the longest time
     * between two wake-ups: how long the program was stopped (a safepoint, a
     * VM operation such as a heap dump), as a program would see it.
     */
    static void startPauseMeter() {
        Thread t = new Thread(() -> {
            long last = System.nanoTime();
            for (;;) {
                LockSupport.parkNanos(1_000_000L);
                long now = System.nanoTime();
                maxGapNanos.accumulateAndGet(now - last, Math::max);
                last = now;
            }
        }, "pause-meter");
        t.setDaemon(true);
        t.start();
    }

    /** Everything live hangs from here. */
    static final List<Object> ROOTS = new ArrayList<>();

    static long align(long n) { return (n + 7) & ~7L; }

    public static void main(String[] args) throws Exception {
        long targetMb = args.length > 0 ? Long.parseLong(args[0]) : 1024;
        long target = targetMb << 20;
        long t0 = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(0x4EA9F111L);
        long objects = 0;

        // 25 %: small objects in chains.
        List<Item> chains = new ArrayList<>();
        ROOTS.add(chains);
        List<Item> all = new ArrayList<>();        // samples for the Object[]s below
        long budget = target * 25 / 100, used = 0, id = 0;
        while (used < budget) {
            int len = 1 + rnd.nextInt(64);
            Item head = null;
            for (int i = 0; i < len; i++) {
                head = new Item(id++, rnd.nextInt(16), head);
                used += 32;
                objects++;
                if ((id & 3) == 0) {
                    head.name = "item-" + id;
                    used += 24 + align(16 + head.name.length());
                    objects += 2;
                }
            }
            chains.add(head);
            if (all.size() < 1_000_000) all.add(head);
        }

        // 15 %: a big HashMap.
        Map<Integer, Item> map = new HashMap<>();
        ROOTS.add(map);
        budget = target * 15 / 100;
        used = 0;
        int key = 0;
        while (used < budget) {
            map.put(key, new Item(key, key & 7, null));
            key++;
            used += 32 + 16 + 32 + 8;   // Item, Integer, HashMap$Node, table slot (amortized)
            objects += 3;
        }

        // 20 %: strings.
        List<List<String>> stringLists = new ArrayList<>();
        ROOTS.add(stringLists);
        List<String> strings = new ArrayList<>();
        budget = target * 20 / 100;
        used = 0;
        List<String> cur = new ArrayList<>();
        char[] buf = new char[80];
        while (used < budget) {
            int n = 8 + rnd.nextInt(73);
            for (int i = 0; i < n; i++) buf[i] = (char) ('a' + rnd.nextInt(26));
            String s = new String(buf, 0, n);
            cur.add(s);
            if (strings.size() < 1_000_000) strings.add(s);
            used += 24 + align(16 + n) + 4;
            objects += 2;
            if (cur.size() == 10_000) {
                stringLists.add(cur);
                cur = new ArrayList<>();
            }
        }
        stringLists.add(cur);
        ROOTS.add(strings);

        // 15 %: object arrays referring to what is above.
        List<Object[]> arrays = new ArrayList<>();
        ROOTS.add(arrays);
        budget = target * 15 / 100;
        used = 0;
        while (used < budget) {
            int n = 4 << rnd.nextInt(9);              // 4 .. 1024
            Object[] a = new Object[n];
            for (int i = 0; i < n; i++) {
                int r = rnd.nextInt(8);
                a[i] = r < 4 ? all.get(rnd.nextInt(all.size()))
                     : r < 7 ? strings.get(rnd.nextInt(strings.size())) : null;
            }
            arrays.add(a);
            used += align(16 + 4L * n) + 4;
            objects++;
        }

        // 15 %: byte arrays, 64 B .. 64 KB, log-uniform.
        List<byte[]> bytes = new ArrayList<>();
        ROOTS.add(bytes);
        budget = target * 15 / 100;
        used = 0;
        while (used < budget) {
            int n = (int) Math.round(Math.pow(2, 6 + rnd.nextDouble() * 10));
            byte[] b = new byte[n];
            for (int i = 0; i < n; i += 61) b[i] = (byte) rnd.nextInt();
            bytes.add(b);
            used += align(16 + n) + 4;
            objects++;
        }

        // 10 %: int[], long[], double[] of 16 .. 16384 elements.
        List<Object> prims = new ArrayList<>();
        ROOTS.add(prims);
        budget = target * 10 / 100;
        used = 0;
        while (used < budget) {
            int n = 16 << rnd.nextInt(11);
            switch (rnd.nextInt(3)) {
                case 0 -> {
                    int[] a = new int[n];
                    for (int i = 0; i < n; i += 7) a[i] = rnd.nextInt();
                    prims.add(a);
                    used += align(16 + 4L * n);
                }
                case 1 -> {
                    long[] a = new long[n];
                    for (int i = 0; i < n; i += 7) a[i] = rnd.nextLong();
                    prims.add(a);
                    used += align(16 + 8L * n);
                }
                default -> {
                    double[] a = new double[n];
                    for (int i = 0; i < n; i += 7) a[i] = rnd.nextDouble();
                    prims.add(a);
                    used += align(16 + 8L * n);
                }
            }
            used += 4;
            objects++;
        }

        System.gc();
        Runtime rt = Runtime.getRuntime();
        long heapUsed = rt.totalMemory() - rt.freeMemory();
        System.out.printf("READY target=%dMB heap-used-after-gc=%dMB objects~%d fill=%.1fs pid=%d%n",
                targetMb, heapUsed >> 20, objects, (System.nanoTime() - t0) / 1e9, ProcessHandle.current().pid());
        System.out.flush();
        startPauseMeter();
        // Wait until told to go (stdin closed) or killed; a line "gap" asks
        // for the longest pause the program saw since the last one.
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.trim().equals("gap")) {
                    long gap = maxGapNanos.getAndSet(0);
                    System.out.printf("GAP %.1f ms%n", gap / 1e6);
                    System.out.flush();
                }
            }
        } catch (IOException e) {
            // stdin gone: exit
        }
        System.out.println("bye " + ROOTS.size());
    }
}
