/**
 * Coverage truth for the JVMPI layer's INSTRUCTION_START (tests/test_jvmpi_coverage.py,
 * coverage_agent.c; docs/jvmpi.md "Tested with JCov"). What runs is known
 * exactly:
 *   sign(x)     14 calls: main's 10 (i % 3 for i = 0..9: 6 positive) and
 *               thread "worker"'s 4 (0, -1, -2, -3): the if holds 6 times
 *   table(k)    k = 0..4: cases 0, 1, 2 once each, the default twice
 *   lookup(k)   k = 1, 100, 7: cases 1 and 100 once, 1000 never, the
 *               default once
 *   squares(4)  an int[4] (OBJECT_ALLOC's call follows it), a loop of 4
 *   guarded(a, i) twice: a[2] (no exception), a[9] (caught once)
 *   Box         one made, get() twice (synchronized)
 *   neverCalled() and NeverLoaded never run (NeverLoaded is never loaded)
 * No lambda and no string concatenation (invokedynamic), so that JVMPI-era
 * tools such as JCov can read the class files.
 */
public class JvmpiCoverage {
    static int sink;

    static int sign(int x) {
        if (x > 0) { // COV_SIGN_IF
            return 1;
        }
        return -1;
    }

    static void neverCalled() {
        sink++; // COV_NEVER
    }

    static int table(int k) {
        switch (k) { // COV_TABLE
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            default: return -1;
        }
    }

    static int lookup(int k) {
        switch (k) { // COV_LOOKUP
            case 1: return 1;
            case 100: return 2;
            case 1000: return 3; // COV_CASE_1000
            default: return 0;
        }
    }

    static int[] squares(int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) { // COV_SQUARES_LOOP
            a[i] = i * i;
        }
        return a;
    }

    static int guarded(int[] a, int i) {
        try {
            return a[i];
        } catch (ArrayIndexOutOfBoundsException e) {
            return -1;
        }
    }

    static class NeverLoaded {
        static int m() {
            return 5;
        }
    }

    static class Box {
        final int v;

        Box(int v) {
            this.v = v;
        }

        synchronized int get() {
            return v;
        }
    }

    static class Worker extends Thread {
        Worker() {
            super("worker");
        }

        public void run() {
            for (int i = 0; i < 4; i++) { // COV_WORKER_LOOP
                sink += sign(-i);
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        for (int i = 0; i < 10; i++) { // COV_MAIN_LOOP
            sink += sign(i % 3);
        }
        for (int k = 0; k < 5; k++) { // COV_MAIN_LOOP2
            sink += table(k);
        }
        sink += lookup(1) + lookup(100) + lookup(7);
        int[] sq = squares(4);
        sink += guarded(sq, 2) + guarded(sq, 9);
        Box b = new Box(3);
        sink += b.get() + b.get();
        Worker w = new Worker();
        w.start();
        w.join();
        System.gc();
        if (args.length > 100) { // COV_MAIN_IF
            sink += NeverLoaded.m();
            neverCalled();
        }
        System.out.println(sink);
        System.err.println("JvmpiCoverage done");
    }
}
