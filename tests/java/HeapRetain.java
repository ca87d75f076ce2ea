import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

/**
 * A heap whose retained sizes and paths are known, for `hprof heap`
 * (tests/heap_analyze_tests.py), after the JVMPI paper's example of
 * unnecessary object retention: an instance of C is not collected because an
 * instance of D refers to it, which a local variable of an active frame of
 * B.g refers to.
 *
 *   HeapRetain$C       one instance, held only by the D: its field data is a
 *                      byte[1000000] held by nothing else.
 *   HeapRetain$D       one instance, held only by the local d of B.g, which
 *                      waits in the call marked "paper-wait".
 *   HeapRetain$Entry   ENTRIES instances, values of the static HashMap
 *                      Registry.MAP (keys "k0".."k99"); each holds a long[1000]
 *                      held by nothing else.
 *   HeapRetain$Ring    RING instances in a cycle (each next the following,
 *                      the last the first), held by the static Registry.RING;
 *                      each holds an int[100].
 *   Registry.GRID      an int[GRID_ROWS][] of int[GRID_COLS]: arrays of arrays.
 *   HeapRetain$Garbage GARBAGE instances made and dropped before READY: none
 *                      is reachable, so a dump after a GC holds none.
 *
 * Usage: java HeapRetain GO_FILE. Prints "READY <pid>", waits in B.g until
 * GO_FILE exists (at most 600 s, then exits 3), prints "DONE" and exits 0.
 */
public class HeapRetain {
    static final int ENTRIES = 100, RING = 50, GRID_ROWS = 20, GRID_COLS = 500, GARBAGE = 1000;

    static class C {
        byte[] data = new byte[1_000_000];   // site-data
    }

    static class D {
        C c;
        D(C c) { this.c = c; }
    }

    static class Entry {
        long[] payload = new long[1000];
    }

    static class Ring {
        Ring next;
        int[] ints = new int[100];
    }

    static class Garbage {
        byte[] junk = new byte[10_000];
    }

    static class Registry {
        static final Map<String, Entry> MAP = new HashMap<>();
        static Ring RING;
        static int[][] GRID;
    }

    static class B {
        void g(String go) throws Exception {
            D d = new D(new C());   // paper-new
            System.out.println("READY " + ProcessHandle.current().pid());
            System.out.flush();
            waitFor(go);   // paper-wait
            System.out.println("DONE " + d.c.data.length);
        }

        static void waitFor(String go) throws Exception {
            long deadline = System.currentTimeMillis() + 600_000;
            while (!Files.exists(Paths.get(go))) {
                if (System.currentTimeMillis() > deadline)
                    System.exit(3);
                Thread.sleep(20);
            }
        }
    }

    static Object sink;

    /* in a method of its own, so that no local of main's frame holds a Ring */
    static void buildRing() {
        Ring first = new Ring(), r = first;
        for (int i = 1; i < RING; i++) {
            r.next = new Ring();
            r = r.next;
        }
        r.next = first;
        Registry.RING = first;
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < ENTRIES; i++)
            Registry.MAP.put("k" + i, new Entry());
        buildRing();
        Registry.GRID = new int[GRID_ROWS][GRID_COLS];
        for (int i = 0; i < GARBAGE; i++)
            sink = new Garbage();
        sink = null;
        System.gc();
        new B().g(args[0]);
    }
}
