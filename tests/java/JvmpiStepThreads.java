/* Two threads single-stepped at once through different methods (issue 34:
 * INSTRUCTION_START's per-thread state). Both wait at a latch, then "odd"
 * calls odd(i) and "tens" calls tens(i) for i in 0..N-1, N = 3,000.
 * Truth: odd called 3,000 times, its `i % 2 == 1` evaluated 3,000 times and
 * taken (javac's if_icmpne to the return 0) when false: 1,500; tens called
 * 3,000 times, its switch on i % 10 each key 0..9 300 times, never the
 * default. Prints "threads 1500 3000 overlap Y" (Y: each thread's loop
 * began before the other's ended, so they were stepped at once). */
import java.util.concurrent.CountDownLatch;

public class JvmpiStepThreads {
    static final int N = 3_000;
    static final CountDownLatch GO = new CountDownLatch(1);

    static int odd(int i) {
        if (i % 2 == 1) { // odd
            return 1;
        }
        return 0;
    }

    static int tens(int i) {
        switch (i % 10) { // tens
            case 0: return 1;
            case 1: return 1;
            case 2: return 1;
            case 3: return 1;
            case 4: return 1;
            case 5: return 1;
            case 6: return 1;
            case 7: return 1;
            case 8: return 1;
            case 9: return 1;
            default: return 0;
        }
    }

    static class Runner extends Thread {
        final boolean odd;
        int sum;
        long began, ended;

        Runner(String name, boolean odd) {
            super(name);
            this.odd = odd;
        }

        @Override
        public void run() {
            try {
                GO.await();
            } catch (InterruptedException e) {
                return;
            }
            began = System.nanoTime();
            int s = 0;
            for (int i = 0; i < N; i++) {
                s += odd ? odd(i) : tens(i);
            }
            sum = s;
            ended = System.nanoTime();
        }
    }

    public static void main(String[] args) throws Exception {
        Runner a = new Runner("odd", true), b = new Runner("tens", false);
        a.start();
        b.start();
        GO.countDown();
        a.join();
        b.join();
        boolean overlap = a.began < b.ended && b.began < a.ended;
        System.out.println("threads " + a.sum + " " + b.sum + " overlap " + (overlap ? "Y" : "N"));
    }
}
