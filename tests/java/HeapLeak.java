import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * A heap with three leak suspects of known size, for `hprof heap`'s suspects
 * and --html page (tests/heap_analyze_tests.py). Sizes with compressed oops
 * (12-byte headers, 4-byte references):
 *
 *   HeapLeak.CACHE     an ArrayList of capacity and size LEAKS, whose Object[]
 *                      (16 + 4 * LEAKS bytes) holds LEAKS Leak objects, each
 *                      (16 bytes) with a byte[LEAK_BYTES] of its own
 *                      (16 + LEAK_BYTES): an accumulation point.
 *   big                a byte[BIG] held by a local of main only (line
 *                      "big-local").
 *   HeapLeak.CHAIN     a singly linked list of LINKS Link objects (16 bytes,
 *                      or 24 with its byte[] reference: 12 + 4 + 4 rounded
 *                      up), each with a byte[LINK_BYTES] of its own: each
 *                      link retains the rest of the chain, which is named by
 *                      its head.
 *   HeapLeak$Chunk     CHUNKS instances, each held by a local of its own
 *                      thread "chunk-N" (line "chunk-local") and by nothing
 *                      else, each with a byte[CHUNK_BYTES]: many instances of
 *                      one class that no single object holds.
 *
 * Usage: java HeapLeak GO_FILE. Prints "READY <pid>", waits until GO_FILE
 * exists (at most 600 s, then exits 3), prints "DONE" and exits 0.
 */
public class HeapLeak {
    static final int LEAKS = 20_000, LEAK_BYTES = 504, BIG = 4_000_000, CHUNKS = 8, CHUNK_BYTES = 500_000,
        LINKS = 8_000, LINK_BYTES = 496;

    static class Leak {
        byte[] data = new byte[LEAK_BYTES];
    }

    static class Link {
        Link next;
        byte[] data = new byte[LINK_BYTES];
    }

    static class Chunk {
        byte[] data = new byte[CHUNK_BYTES];
    }

    static final List<Leak> CACHE = new ArrayList<>(LEAKS);
    static Link CHAIN;

    static void waitFor(String go) throws Exception {
        long deadline = System.currentTimeMillis() + 600_000;
        while (!Files.exists(Paths.get(go))) {
            if (System.currentTimeMillis() > deadline)
                System.exit(3);
            Thread.sleep(20);
        }
    }

    static void hold(String go, CountDownLatch ready) {
        Chunk chunk = new Chunk();
        ready.countDown();
        try {
            waitFor(go);   // chunk-local
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        if (chunk.data.length != CHUNK_BYTES)
            throw new AssertionError();
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < LEAKS; i++)
            CACHE.add(new Leak());
        for (int i = 0; i < LINKS; i++) {
            Link link = new Link();
            link.next = CHAIN;
            CHAIN = link;
        }
        CountDownLatch ready = new CountDownLatch(CHUNKS);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < CHUNKS; i++) {
            Thread t = new Thread(() -> hold(args[0], ready), "chunk-" + i);
            t.start();
            threads.add(t);
        }
        ready.await();
        byte[] big = new byte[BIG];
        System.gc();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        waitFor(args[0]);   // big-local
        for (Thread t : threads)
            t.join();
        System.out.println("DONE " + big.length + " " + CACHE.size());
    }
}
