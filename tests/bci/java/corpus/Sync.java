package corpus;

import static corpus.Util.p;

/**
 * synchronized blocks (monitorenter/monitorexit with javac's catch-any
 * handler that covers itself), nested and in loops, exceptions leaving a
 * synchronized block or method, synchronized static and instance methods,
 * wait/notify, and threads contending on them (joined; exact totals).
 */
public final class Sync {
    private final Object lock = new Object();
    private int count;
    private static int scount;

    synchronized void inc() {
        count++;
    }

    static synchronized void sinc() {
        scount++;
    }

    synchronized int incOrThrow(int i) {
        if (i % 7 == 6) throw new IllegalStateException("i=" + i);
        return ++count;
    }

    int block(int n) {
        int r = 0;
        for (int i = 0; i < n; i++) {
            synchronized (lock) {
                r += i;
                synchronized (this) {
                    count++;
                    if (i == n - 1) return r;
                }
            }
        }
        return -1;
    }

    int blockThrows(int i) {
        synchronized (lock) {
            if (i % 2 == 0) throw new IllegalArgumentException("even " + i);
            return i;
        }
    }

    static String waitNotify() throws InterruptedException {
        final Object m = new Object();
        final int[] state = new int[1];
        Thread t = new Thread(() -> {
            synchronized (m) {
                state[0] = 1;
                m.notifyAll();
                while (state[0] != 2) {
                    try {
                        m.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                state[0] = 3;
            }
        }, "corpus-waiter");
        t.start();
        synchronized (m) {
            while (state[0] != 1) m.wait();
            state[0] = 2;
            m.notifyAll();
        }
        t.join();
        return "state " + state[0];
    }

    static void run() throws InterruptedException {
        final Sync s = new Sync();
        Thread[] ts = new Thread[4];
        for (int k = 0; k < ts.length; k++) {
            ts[k] = new Thread(new Runnable() {
                @Override
                public void run() {
                    for (int i = 0; i < 5000; i++) {
                        s.inc();
                        sinc();
                        try {
                            s.incOrThrow(i);
                        } catch (IllegalStateException e) {
                            // expected every 7th
                        }
                    }
                }
            }, "corpus-sync-" + k);
            ts[k].start();
        }
        for (Thread t : ts) t.join();
        p("sync count=" + s.count + " scount=" + scount);
        p("block " + s.block(10) + " count=" + s.count);
        int ok = 0, bad = 0;
        for (int i = 0; i < 10; i++) {
            try {
                ok += s.blockThrows(i);
            } catch (IllegalArgumentException e) {
                bad++;
            }
        }
        p("blockThrows ok=" + ok + " bad=" + bad + " holds=" + Thread.holdsLock(s.lock));
        p("waitNotify " + waitNotify());
    }
}
