import java.util.ArrayList;
import java.util.List;

/**
 * Programs for the fault tests (tests/faults_tests.py):
 *
 *   Faults oom            allocates 64 KiB arrays in Faults.grow, kept in a
 *                         list, until the heap is full: the OutOfMemoryError
 *                         is not caught, so the JVM exits with status 1
 *                         after printing it (run with a small -Xmx).
 *   Faults heap <n>       keeps n small objects (Faults$Cell, linked), prints
 *                         "Faults: READY <n>" on stderr and returns: a large
 *                         heap for the dump at exit.
 *   Faults spin <ms>      CPU work in LongRun.spin for ms milliseconds, after
 *                         printing "Faults: READY" on stderr (for signals
 *                         sent mid-run), then "Faults: done".
 */
public class Faults {
    static final List<long[]> kept = new ArrayList<>();
    static volatile long sink;
    static Cell head;

    static final class Cell {
        final long value;
        final Cell next;
        Cell(long value, Cell next) { this.value = value; this.next = next; }
    }

    static void grow() {
        while (true)
            kept.add(new long[8192]);
    }

    public static void main(String[] args) {
        switch (args[0]) {
        case "oom":
            grow();
            break;
        case "heap": {
            int n = Integer.parseInt(args[1]);
            for (int i = 0; i < n; i++)
                head = new Cell(i, head);
            System.err.println("Faults: READY " + n);
            break;
        }
        case "spin": {
            long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000L;
            System.err.println("Faults: READY");
            long x = 1;
            while (System.nanoTime() < end)
                x = LongRun.spin(x);
            sink = x;
            System.err.println("Faults: done");
            break;
        }
        default:
            throw new IllegalArgumentException(args[0]);
        }
    }
}
