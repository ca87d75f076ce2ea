import java.util.ArrayList;
import java.util.List;

/**
 * Programs for the fault tests (tests/test_faults.py):
 *
 *   Faults oom            allocates 64 KiB arrays in Faults.grow, kept in a
 *                         list, until the heap is full: the OutOfMemoryError
 *                         is not caught, so the JVM exits with status 1
 *                         after printing it (run with a small -Xmx).
 *   Faults heap <n>       keeps n small objects (Faults$Cell, linked), prints
 *                         "Faults: READY <n>" on stderr and returns: a large
 *                         heap for the dump at exit.
 *   Faults exitwhen <n> <file>
 *                         keeps n objects as `heap` does, prints "Faults:
 *                         READY <n>", waits until <file> exists (a dump
 *                         command has begun writing it; 120 s at most) and
 *                         calls System.exit(0) then: the VM exits while the
 *                         command runs.
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
        case "exitwhen": {
            int n = Integer.parseInt(args[1]);
            for (int i = 0; i < n; i++)
                head = new Cell(i, head);
            System.err.println("Faults: READY " + n);
            java.io.File file = new java.io.File(args[2]);
            long end = System.nanoTime() + 120_000_000_000L;
            while (!file.exists() && System.nanoTime() < end) {
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    break;
                }
            }
            System.err.println("Faults: exiting, " + (file.exists() ? "the file exists" : "no file"));
            System.exit(0);
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
