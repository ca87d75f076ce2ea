package corpus;

import static corpus.Util.p;

/**
 * Every conditional branch opcode (if<cond> x6, if_icmp<cond> x6,
 * if_acmpeq/ne, ifnull/ifnonnull), goto, lcmp/fcmp/dcmp + if, short-circuit
 * logic, labelled loops, and loops whose backward branch targets offset 0.
 */
public final class Branches {
    private Branches() {}

    // if<cond> against zero: javac emits the inverse opcode for each.
    static int ifz(int x) {
        int r = 0;
        if (x == 0) r |= 1;     // ifne
        if (x != 0) r |= 2;     // ifeq
        if (x < 0) r |= 4;      // ifge
        if (x >= 0) r |= 8;     // iflt
        if (x > 0) r |= 16;     // ifle
        if (x <= 0) r |= 32;    // ifgt
        return r;
    }

    static int icmp(int a, int b) {
        int r = 0;
        if (a == b) r |= 1;     // if_icmpne
        if (a != b) r |= 2;     // if_icmpeq
        if (a < b) r |= 4;      // if_icmpge
        if (a >= b) r |= 8;     // if_icmplt
        if (a > b) r |= 16;     // if_icmple
        if (a <= b) r |= 32;    // if_icmpgt
        return r;
    }

    // Boolean values of comparisons: the other polarity of each opcode.
    static int icmpValues(int a, int b) {
        boolean[] v = { a == b, a != b, a < b, a >= b, a > b, a <= b, a == 0, a != 0, a < 0, a >= 0, a > 0, a <= 0 };
        int r = 0;
        for (int i = 0; i < v.length; i++) r = r * 2 + (v[i] ? 1 : 0);
        return r;
    }

    static int acmp(Object a, Object b) {
        int r = 0;
        if (a == b) r |= 1;     // if_acmpne
        if (a != b) r |= 2;     // if_acmpeq
        if (a == null) r |= 4;  // ifnonnull
        if (a != null) r |= 8;  // ifnull
        boolean same = a == b, notNull = b != null;
        if (same) r |= 16;
        if (notNull) r |= 32;
        return r;
    }

    static int lcmp(long a, long b) {
        int r = 0;
        if (a == b) r |= 1;
        if (a != b) r |= 2;
        if (a < b) r |= 4;
        if (a >= b) r |= 8;
        if (a > b) r |= 16;
        if (a <= b) r |= 32;
        return r;
    }

    static int fcmp(float a, float b, double c, double d) {
        int r = 0;
        if (a < b) r |= 1;      // fcmpg
        if (a > b) r |= 2;      // fcmpl
        if (a == b) r |= 4;
        if (c < d) r |= 8;      // dcmpg
        if (c > d) r |= 16;     // dcmpl
        if (c != d) r |= 32;
        return r;
    }

    static String logic(int a, int b, boolean c) {
        String s = "";
        if (a > 0 && b > 0) s += "A";
        if (a > 0 || b > 0) s += "B";
        if (!(a > 0) && (b < 0 || c)) s += "C";
        if ((a > b) == c) s += "D";
        if (a > 0 ? b > 0 : c) s += "E";
        s += (a < b ? "<" : a > b ? ">" : "=");
        boolean x = a > 0 ^ b > 0;
        if (x) s += "X";
        return s;
    }

    // Backward branch to offset 0: the loop head is the first instruction.
    static int counter;

    static boolean g() {
        return ++counter % 5 == 0;
    }

    static void whileTrueAtZero() {
        while (true) {
            if (g()) return;
        }
    }

    static int doWhileAtZero(int n) {
        do {
            n -= 3;
        } while (n > 0);
        return n;
    }

    static int forEverAtZero(int n) {
        for (;;) {
            if (n-- <= 0) return 7 + n;
        }
    }

    // Offset 0 is both a loop head and the start of a try range.
    static int tryLoopAtZero(int n) {
        while (true) {
            try {
                if (n-- < 0) return n;
                if (n % 4 == 1) throw new IllegalStateException("n=" + n);
            } catch (IllegalStateException e) {
                counter += 100;
            }
        }
    }

    static int labelled(int n) {
        int r = 0;
        outer:
        for (int i = 0; i < n; i++) {
            inner:
            for (int j = 0; j < n; j++) {
                if (j > i) continue outer;
                if (i * j > 12) break outer;
                if ((i + j) % 3 == 0) continue inner;
                r += i * j + 1;
            }
            r ^= i;
        }
        return r;
    }

    static int whileLoops(int n) {
        int r = 0, i = 0;
        while (i < n) {
            r += i;
            i++;
        }
        do {
            r = r * 3 + 1;
            i--;
        } while (i > n / 2);
        for (int k = n; k > 0; k /= 2) r -= k;
        return r;
    }

    static void run() {
        int[] xs = { -2, -1, 0, 1, 2, Integer.MIN_VALUE, Integer.MAX_VALUE };
        StringBuilder sb = new StringBuilder();
        for (int x : xs) {
            sb.append(ifz(x)).append(',');
            for (int y : xs) sb.append(icmp(x, y)).append('/').append(icmpValues(x, y)).append(',');
        }
        p("ifz/icmp " + sb);
        Object o1 = new Object(), o2 = "s";
        p("acmp " + acmp(o1, o1) + " " + acmp(o1, o2) + " " + acmp(null, null) + " " + acmp(null, o2) + " " + acmp(o2, null));
        p("lcmp " + lcmp(1L << 40, 1L << 40) + " " + lcmp(-1L, 1L) + " " + lcmp(Long.MAX_VALUE, Long.MIN_VALUE));
        p("fcmp " + fcmp(1f, 2f, 3.0, 3.0) + " " + fcmp(Float.NaN, 1f, Double.NaN, 0.0) + " " + fcmp(2f, 1f, -0.0, 0.0));
        StringBuilder l = new StringBuilder();
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++)
                l.append(logic(a, b, false)).append('|').append(logic(a, b, true)).append(' ');
        p("logic " + l);
        counter = 0;
        whileTrueAtZero();
        whileTrueAtZero();
        p("whileTrueAtZero counter", counter);
        p("doWhileAtZero " + doWhileAtZero(10) + " " + doWhileAtZero(-5));
        p("forEverAtZero " + forEverAtZero(4) + " " + forEverAtZero(0));
        p("tryLoopAtZero " + tryLoopAtZero(9) + " counter=" + counter);
        p("labelled " + labelled(6) + " " + labelled(10));
        p("whileLoops " + whileLoops(10) + " " + whileLoops(1));
    }
}
