package corpus;

import static corpus.Util.p;

/**
 * Recursion: fib, Ackermann, mutual recursion, a deep recursion that throws
 * at the bottom and unwinds through every frame, recursion in a constructor
 * chain.
 */
public final class Recursion {
    private Recursion() {}

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int ack(int m, int n) {
        if (m == 0) return n + 1;
        if (n == 0) return ack(m - 1, 1);
        return ack(m - 1, ack(m, n - 1));
    }

    static boolean isEven(int n) {
        return n == 0 || isOdd(n - 1);
    }

    static boolean isOdd(int n) {
        return n != 0 && isEven(n - 1);
    }

    static int unwind(int n) {
        if (n == 0) throw new IllegalStateException("bottom reached");
        try {
            return unwind(n - 1);
        } finally {
            Util.sink++;
        }
    }

    static final class Node {
        final Node next;
        final int depth;

        Node(int d) {
            next = d > 0 ? new Node(d - 1) : null;
            depth = d;
        }

        int length() {
            return next == null ? 1 : 1 + next.length();
        }
    }

    static void run() {
        p("fib " + fib(18));
        p("ack " + ack(2, 3) + " " + ack(3, 3));
        p("even " + isEven(100) + " " + isOdd(77) + " " + isEven(33));
        int before = Util.sink;
        try {
            unwind(500);
        } catch (IllegalStateException e) {
            p("unwind " + e.getMessage() + " finally ran " + (Util.sink - before));
        }
        p("nodes " + new Node(300).length());
    }
}
