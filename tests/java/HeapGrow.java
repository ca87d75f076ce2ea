import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * A leak that grows between two heap dumps, for `hprof heap --baseline`
 * (tests/heap_analyze_tests.py): HeapGrow.LEAKS holds FIRST Leak objects,
 * each with a byte[1000] of its own, at "READY 1"; GROWN more at "READY 2".
 *
 * Usage: java HeapGrow GO1 GO2. Prints "READY 1 <pid>", waits until GO1
 * exists, adds GROWN, prints "READY 2", waits until GO2 exists, exits 0
 * (3 after 600 s without a go file).
 */
public class HeapGrow {
    static final int FIRST = 1000, GROWN = 2000;

    static class Leak {
        byte[] data = new byte[1000];   // leak-data
    }

    static final List<Leak> LEAKS = new ArrayList<>();

    static void waitFor(String go) throws Exception {
        long deadline = System.currentTimeMillis() + 600_000;
        while (!Files.exists(Paths.get(go))) {
            if (System.currentTimeMillis() > deadline)
                System.exit(3);
            Thread.sleep(20);
        }
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < FIRST; i++)
            LEAKS.add(new Leak());
        System.out.println("READY 1 " + ProcessHandle.current().pid());
        System.out.flush();
        waitFor(args[0]);
        for (int i = 0; i < GROWN; i++)
            LEAKS.add(new Leak());   // grow-more
        System.out.println("READY 2");
        System.out.flush();
        waitFor(args[1]);
    }
}
