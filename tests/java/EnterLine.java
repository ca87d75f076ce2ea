/**
 * Contention at known lines, for where monitor=y places contended enters
 * and how it names lock classes and threads in MONITOR DUMP.
 *
 * "holder" takes GATE (an EnterLine$Gate) and keeps it while "blocked-1"
 * and "blocked-2" block entering it in a synchronized statement (the line
 * marked ENTER-STATEMENT below) and "sync-caller" blocks calling the
 * static synchronized method gate() (the call's line is marked
 * ENTER-CALL); meanwhile "waiter" sits in WAIT_LOCK.wait(ms) (an
 * EnterLine$WaitLock, marked WAIT-CALL) for the whole time. The holder
 * keeps the lock for args[0] ms (default 600), then the program ends.
 * stderr: "EnterLine: holding" once the others are blocked, then
 * "WAIT_NS <ns>" (the waiter's own time in wait) and "EnterLine: done".
 */
public class EnterLine {
    static final class Gate {
    }

    static final class WaitLock {
    }

    static final Gate GATE = new Gate();
    static final WaitLock WAIT_LOCK = new WaitLock();
    static volatile long sink;

    static void blockOnStatement() {
        long x = sink;
        synchronized (GATE) { // ENTER-STATEMENT
            x += 1;
            sink = x;
        }
    }

    static synchronized void gate() {
        sink += 2;
    }


    public static void main(String[] args) throws Exception {
        long holdMs = args.length > 0 ? Long.parseLong(args[0]) : 600;
        Thread waiter = new Thread(() -> {
            long t0 = System.nanoTime();
            synchronized (WAIT_LOCK) {
                try {
                    WAIT_LOCK.wait(holdMs); // WAIT-CALL
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            System.err.println("WAIT_NS " + (System.nanoTime() - t0));
        }, "waiter");
        Thread[] blocked = {
            new Thread(EnterLine::blockOnStatement, "blocked-1"),
            new Thread(EnterLine::blockOnStatement, "blocked-2"),
            new Thread(() -> gate(), "sync-caller"), // ENTER-CALL
        };
        Thread holder = new Thread(() -> {
            synchronized (GATE) {
                synchronized (EnterLine.class) {
                    waiter.start();
                    for (Thread t : blocked)
                        t.start();
                    long deadline = System.nanoTime() + 10_000_000_000L;
                    while (System.nanoTime() < deadline) {
                        boolean all = waiter.getState() == Thread.State.TIMED_WAITING;
                        for (Thread t : blocked)
                            all &= t.getState() == Thread.State.BLOCKED;
                        if (all)
                            break;
                        Thread.onSpinWait();
                    }
                    System.err.println("EnterLine: holding");
                    try {
                        Thread.sleep(holdMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        }, "holder");
        holder.start();
        holder.join();
        for (Thread t : blocked)
            t.join();
        waiter.join();
        System.err.println("EnterLine: done");
    }
}
