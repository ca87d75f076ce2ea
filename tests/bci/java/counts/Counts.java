package counts;

import java.util.function.IntUnaryOperator;

/**
 * A program with known call and allocation counts, for the exact-count test
 * (tests/bci/bcitests.py: COUNTS_EXPECTED lists them).  Java 8 source.  It
 * allocates no array other than the ones counted below (no varargs, no
 * string formatting).  Prints a deterministic summary on stdout.
 */
public final class Counts {
    static final Object LOCK = new Object();   // Counts.<clinit>: 1
    static Object keep;
    static int ticks;
    static long total;

    static int hot(int x) {                     // 1,000,000 calls
        return x + 1;
    }

    static int fib(int n) {                     // fib(20): 21,891 calls
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int down(int n) {                    // down(999): 1,000 calls, depth 1,000
        if (n == 0) return 0;
        return down(n - 1) + 1;
    }

    static void thrower(int i) {                // 1,234 calls, every one exits by exception
        throw new IllegalStateException("thrower " + i);
    }

    static int maybe(int i) {                   // 3,000 calls, 1,000 exit by exception
        if (i % 3 == 0) throw new IllegalArgumentException("maybe");
        return i;
    }

    static int chainC(int i) {                  // 500 calls, all throw
        throw new UnsupportedOperationException("c" + i);
    }

    static int chainB(int i) {                  // 500 calls, all exit by exception (from chainC)
        int r = chainC(i) + 1;
        return r * 2;
    }

    static int chainA(int i) {                  // 500 calls, all exit by exception, via a finally
        try {
            return chainB(i) + 1;
        } finally {
            total++;
        }
    }

    static int deepThrow(int n) {               // 10 x deepThrow(300): 3,010 calls, all exit by exception
        if (n == 0) throw new ArithmeticException("deep");
        return deepThrow(n - 1) + 1;
    }

    static boolean tick() {                     // 1,000 calls
        return ++ticks % 10 == 0;
    }

    static int spinUntil(int k) {               // 100 calls; its loop's back branch targets offset 0
        while (true) {
            if (tick()) return k;
        }
    }

    static int sw(int x) {                      // 10,000 calls
        switch (x & 7) {
            case 0: return 1;
            case 1: return 5;
            case 2: return 9;
            case 3:
                switch (x) {
                    case 3: return 100;
                    case 1000003: return 200;
                    default: return 7;
                }
            default: return -1;
        }
    }

    static synchronized int syncM(int i) {     // 2,000 calls, 1,000 exit by exception
        if ((i & 1) == 1) throw new IllegalStateException("odd");
        return i;
    }

    static int work(int i) {                    // 4 threads x 25,000 = 100,000 calls
        return i ^ (i >>> 3);
    }

    static final class Worker extends Thread { // <init>: 4, run: 4
        long sum;

        Worker(int k) {
            super("counts-worker-" + k);
        }

        @Override
        public void run() {
            for (int i = 0; i < 25000; i++) sum += work(i);
        }
    }

    static class Obj {                          // <init>: 3,000 direct + 100 via Obj2
        final int v;

        Obj(int v) {
            this.v = v;
        }
    }

    static int check(int x) {                   // 200 calls, 100 throw
        if (x < 0) throw new IllegalArgumentException("negative");
        return x;
    }

    static final class Obj2 extends Obj {       // <init>: 200 calls, 100 exit by exception before super()
        Obj2(int x) {
            super(check(x) > 50 ? x * 2 : x);
        }
    }

    static final class Holder {                 // <clinit>: 1, init: 1
        static final int VALUE = init();

        static int init() {
            return 42;
        }
    }

    static void arrays() {                      // 1 call; array counts in COUNTS_EXPECTED
        for (int i = 0; i < 101; i++) keep = new boolean[i % 3];
        for (int i = 0; i < 102; i++) keep = new byte[i % 3];
        for (int i = 0; i < 100; i++) keep = new char[i % 3];
        for (int i = 0; i < 3; i++) keep = new char[] { 'a', 'b' };          // char: 103
        for (int i = 0; i < 104; i++) keep = new short[i % 3];
        for (int i = 0; i < 105; i++) keep = new int[i % 3];
        for (int i = 0; i < 106; i++) keep = new long[i % 3];
        for (int i = 0; i < 107; i++) keep = new float[i % 3];
        for (int i = 0; i < 108; i++) keep = new double[i % 3];
        for (int i = 0; i < 109; i++) keep = new String[i % 3];
        for (int i = 0; i < 110; i++) keep = new Object[i % 3];
        for (int i = 0; i < 111; i++) keep = new int[2][i % 3];              // multianewarray [[I
        for (int i = 0; i < 112; i++) keep = new long[i % 3][];              // anewarray [J
        for (int i = 0; i < 113; i++) keep = new int[2][i % 3][];            // multianewarray [[[I, 2 dims
        for (int i = 0; i < 114; i++) keep = new String[i % 3][2];           // multianewarray [[Ljava/lang/String;
        int nase = 0;
        for (int i = 0; i < 7; i++) {
            try {
                keep = new int[-1 - i];                                     // throws: not counted
            } catch (NegativeArraySizeException e) {
                nase++;
            }
        }
        for (int i = 0; i < 5; i++) {
            try {
                keep = new int[2][-1 - i];                                  // throws: not counted
            } catch (NegativeArraySizeException e) {
                nase++;
            }
        }
        total += nase;
    }

    public static void main(String[] args) throws InterruptedException {
        long s = 0;
        for (int i = 0; i < 1000000; i++) s += hot(i);
        System.out.println("hot " + s);
        System.out.println("fib " + fib(20));
        System.out.println("down " + down(999));
        int caught = 0;
        for (int i = 0; i < 1234; i++) {
            try {
                thrower(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        for (int i = 0; i < 3000; i++) {
            try {
                s += maybe(i);
            } catch (IllegalArgumentException e) {
                caught++;
            }
        }
        for (int i = 0; i < 500; i++) {
            try {
                s += chainA(i);
            } catch (UnsupportedOperationException e) {
                caught++;
            }
        }
        for (int i = 0; i < 10; i++) {
            try {
                s += deepThrow(300);
            } catch (ArithmeticException e) {
                caught++;
            }
        }
        System.out.println("caught " + caught + " s " + s);
        for (int i = 0; i < 100; i++) s += spinUntil(i);
        for (int i = 0; i < 10000; i++) s += sw(i * 125001);
        for (int i = 0; i < 2000; i++) {
            try {
                s += syncM(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        IntUnaryOperator f = x -> x * 2 + 1;    // lambda body: 5,000 calls
        for (int i = 0; i < 5000; i++) s += f.applyAsInt(i);
        System.out.println("ticks " + ticks + " caught " + caught + " s " + s);
        Thread[] ts = new Thread[4];                                        // [Ljava.lang.Thread; 1
        for (int k = 0; k < 4; k++) {
            ts[k] = new Worker(k);
            ts[k].start();
        }
        for (Thread t : ts) {
            t.join();
            s += ((Worker) t).sum;
        }
        for (int i = 0; i < 3000; i++) keep = new Obj(i);
        for (int i = 0; i < 200; i++) {
            try {
                keep = new Obj2(i - 100);
            } catch (IllegalArgumentException e) {
                caught++;
            }
        }
        arrays();
        synchronized (LOCK) {
            s += Holder.VALUE;
        }
        System.out.println("total " + total + " caught " + caught + " s " + s);
    }
}
