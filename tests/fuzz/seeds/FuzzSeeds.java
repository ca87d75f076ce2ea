// Seeds for the bci fuzzer (tests/fuzz) and a program for checking rewritten
// classes: main prints a checksum of everything it computes, which must not
// change when the classes are instrumented. Java 8 source, so it is compiled
// both with --release 8 (class version 52) and --release 17 (61).
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntBinaryOperator;
import java.util.function.Supplier;

public class FuzzSeeds {
    static long total;
    static final int[] TABLE = new int[16];
    static { for (int i = 0; i < TABLE.length; i++) TABLE[i] = i * i; }

    enum Color { RED, GREEN, BLUE; Color next() { return values()[(ordinal() + 1) % 3]; } }

    interface Shape { double area(); default String describe() { return getClass().getSimpleName() + area(); } }

    static final class Square implements Shape {
        final double side;
        Square(double side) { this.side = side; }
        Square() { this(2.0); }
        public double area() { return side * side; }
    }

    abstract static class Base { abstract int value(); int twice() { return 2 * value(); } }

    /* A constructor argument computed with a branch: frames with an
     * uninitialized object on the stack. */
    static class Holder extends Base {
        final Object o;
        Holder(int x) { super(); o = new StringBuilder(x > 3 ? "big" : "small").append(x); }
        int value() { return o.toString().length(); }
    }

    static int table(int x) {
        switch (x) {
        case 0: return 10;
        case 1: return 11;
        case 2: return 12;
        case 3: return 13;
        case 5: return 15;
        default: return -1;
        }
    }

    static int lookup(int x) {
        switch (x) {
        case -1000: return 1;
        case 7: return 2;
        case 100000: return 3;
        case Integer.MAX_VALUE: return 4;
        default: return 0;
        }
    }

    static int strings(String s) {
        switch (s) {
        case "alpha": return 1;
        case "beta": return 2;
        case "Aa": return 3;          /* same hashCode as "BB" */
        case "BB": return 4;
        default: return 0;
        }
    }

    static long longs(long a, double d, float f, int n) {
        long r = a;
        double acc = d;
        for (int i = 0; i < n; i++) {
            r = r * 31 + (long) (acc * f);
            acc = acc / 3 + i;
            if (r > Long.MAX_VALUE / 64 || r < Long.MIN_VALUE / 64) r >>>= 7;
        }
        return r ^ Double.doubleToLongBits(acc);
    }

    static int arrays(int n) {
        boolean[] z = new boolean[n]; byte[] b = new byte[n]; char[] c = new char[n];
        short[] s = new short[n]; int[] i = new int[n]; long[] l = new long[n];
        float[] f = new float[n]; double[] d = new double[n];
        String[] str = new String[n];
        int[][] grid = new int[n][n + 1];
        long[][][] cube = new long[2][n][];
        Object[][] jag = new Object[n][];
        int sum = z.length + b.length + c.length + s.length + i.length + l.length + f.length
                + d.length + str.length + grid[0].length + cube[1].length + jag.length;
        int[] lit = { 1, 2, 3, n };
        return sum + lit[3] + Arrays.stream(TABLE).sum();
    }

    static int exceptions(int x) {
        int r = 0;
        try {
            try {
                if (x % 3 == 0) throw new IllegalStateException("x" + x);
                r += 100 / (x % 5);
            } catch (ArithmeticException e) {
                r -= 1;
            } finally {
                r += 1000;
            }
            if (x % 7 == 0) return r + thrower(x);
        } catch (IllegalStateException | IllegalArgumentException e) {
            r += e.getMessage().length();
        } finally {
            r *= 2;
        }
        return r;
    }

    static int thrower(int x) {
        if (x > 10) throw new IllegalArgumentException("deep" + x);
        return x;
    }

    static synchronized int sync(Object lock, int x) {
        synchronized (lock) {
            if (x < 0) return -x;
            synchronized (FuzzSeeds.class) { total += x; }
        }
        return x;
    }

    static int lambdas(int n) {
        IntBinaryOperator add = (a, b) -> a + b;
        IntBinaryOperator max = Math::max;
        Supplier<List<String>> mk = ArrayList::new;
        List<String> list = mk.get();
        int acc = 0;
        for (int i = 0; i < n; i++) {
            final int k = i;
            Runnable r = () -> list.add("item" + k);
            r.run();
            acc = add.applyAsInt(acc, max.applyAsInt(i, n - i));
        }
        return acc + list.stream().mapToInt(String::length).sum();
    }

    static int wideLocals(int seed) {
        // More than 255 local slots: wide loads and stores.
        long a0 = seed, a1 = a0 + 1, a2 = a1 + 1, a3 = a2 + 1, a4 = a3 + 1, a5 = a4 + 1, a6 = a5 + 1, a7 = a6 + 1;
        long b0 = a7, b1 = b0 * 3, b2 = b1 * 3, b3 = b2 * 3, b4 = b3 * 3, b5 = b4 * 3, b6 = b5 * 3, b7 = b6 * 3;
        double c0 = b7, c1 = c0 / 2, c2 = c1 / 2, c3 = c2 / 2, c4 = c3 / 2, c5 = c4 / 2, c6 = c5 / 2, c7 = c6 / 2;
        double d0 = c7, d1 = d0 + c1, d2 = d1 + c2, d3 = d2 + c3, d4 = d3 + c4, d5 = d4 + c5, d6 = d5 + c6, d7 = d6 + c7;
        long e0 = a0 + b0, e1 = a1 + b1, e2 = a2 + b2, e3 = a3 + b3, e4 = a4 + b4, e5 = a5 + b5, e6 = a6 + b6, e7 = a7 + b7;
        long f0 = e0 ^ e7, f1 = e1 ^ e6, f2 = e2 ^ e5, f3 = e3 ^ e4, f4 = f0 + f1, f5 = f2 + f3, f6 = f4 * f5, f7 = f6 >> 3;
        long g0 = f7, g1 = g0 + 1, g2 = g1 + 1, g3 = g2 + 1, g4 = g3 + 1, g5 = g4 + 1, g6 = g5 + 1, g7 = g6 + 1;
        long h0 = g7, h1 = h0 + 1, h2 = h1 + 1, h3 = h2 + 1, h4 = h3 + 1, h5 = h4 + 1, h6 = h5 + 1, h7 = h6 + 1;
        long i0 = h7, i1 = i0 + 1, i2 = i1 + 1, i3 = i2 + 1, i4 = i3 + 1, i5 = i4 + 1, i6 = i5 + 1, i7 = i6 + 1;
        long j0 = i7, j1 = j0 + 1, j2 = j1 + 1, j3 = j2 + 1, j4 = j3 + 1, j5 = j4 + 1, j6 = j5 + 1, j7 = j6 + 1;
        long k0 = j7, k1 = k0 + 1, k2 = k1 + 1, k3 = k2 + 1, k4 = k3 + 1, k5 = k4 + 1, k6 = k5 + 1, k7 = k6 + 1;
        long l0 = k7, l1 = l0 + 1, l2 = l1 + 1, l3 = l2 + 1, l4 = l3 + 1, l5 = l4 + 1, l6 = l5 + 1, l7 = l6 + 1;
        long m0 = l7, m1 = m0 + 1, m2 = m1 + 1, m3 = m2 + 1, m4 = m3 + 1, m5 = m4 + 1, m6 = m5 + 1, m7 = m6 + 1;
        long n0 = m7, n1 = n0 + 1, n2 = n1 + 1, n3 = n2 + 1, n4 = n3 + 1, n5 = n4 + 1, n6 = n5 + 1, n7 = n6 + 1;
        long o0 = n7, o1 = o0 + 1, o2 = o1 + 1, o3 = o2 + 1, o4 = o3 + 1, o5 = o4 + 1, o6 = o5 + 1, o7 = o6 + 1;
        long p0 = o7, p1 = p0 + 1, p2 = p1 + 1, p3 = p2 + 1, p4 = p3 + 1, p5 = p4 + 1, p6 = p5 + 1, p7 = p6 + 1;
        long q0 = p7, q1 = q0 + 1, q2 = q1 + 1, q3 = q2 + 1, q4 = q3 + 1, q5 = q4 + 1, q6 = q5 + 1, q7 = q6 + 1;
        long r0 = q7, r1 = r0 + 1, r2 = r1 + 1, r3 = r2 + 1, r4 = r3 + 1, r5 = r4 + 1, r6 = r5 + 1, r7 = r6 + 1;
        double s0 = d7, s1 = s0 + 1, s2 = s1 + 1, s3 = s2 + 1, s4 = s3 + 1, s5 = s4 + 1, s6 = s5 + 1, s7 = s6 + 1;
        double t0 = s7, t1 = t0 + 1, t2 = t1 + 1, t3 = t2 + 1, t4 = t3 + 1, t5 = t4 + 1, t6 = t5 + 1, t7 = t6 + 1;
        int[] arr = new int[(int) (r7 & 7) + 1];
        int v = 0;
        for (int w = 0; w < arr.length; w++) v += w;
        return (int) (r7 + (long) t7 + v + arr.length);
    }

    static int labeled(int n) {
        int count = 0;
        outer:
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (j == i) continue outer;
                if (i * j > 20) break outer;
                count += (i ^ j) & 1;
            }
        }
        char ch = (char) ('a' + n); short sh = (short) (n * 1000); byte by = (byte) n;
        return count + ch + sh + by + (n > 2 && n < 9 || n == 0 ? 1 : 0);
    }

    static int varargs(String fmt, Object... args) { return String.format(fmt, args).length(); }

    static String recurse(int depth) {
        if (depth == 0) return "";
        return depth + (depth % 2 == 0 ? "e" : "o") + recurse(depth - 1);
    }

    public static void main(String[] args) throws Exception {
        long sum = 0;
        for (int x = -2; x < 12; x++) {
            sum = sum * 7 + table(x) + lookup(x) + exceptions(x) + labeled(x);
        }
        sum += lookup(100000) + lookup(Integer.MAX_VALUE) + lookup(-1000);
        for (String s : new String[] { "alpha", "beta", "Aa", "BB", "zz" }) sum = sum * 3 + strings(s);
        sum ^= longs(17, 0.5, 1.25f, 40);
        sum += arrays(5) + lambdas(20) + wideLocals(3) + varargs("%d-%s", 42, "x");
        Object lock = new Object();
        for (int i = -3; i < 4; i++) sum += sync(lock, i);
        Color c = Color.RED;
        for (int i = 0; i < 5; i++) { c = c.next(); sum += c.ordinal(); }
        Shape sq = new Square();
        sum += (long) sq.area() + sq.describe().length() + new Holder(5).twice() + new Holder(1).value();
        sum += recurse(12).hashCode();
        Thread t = new Thread(() -> { synchronized (FuzzSeeds.class) { total += lambdas(5); } });
        t.start();
        t.join();
        System.out.println("FuzzSeeds checksum " + sum + " total " + total);
    }
}
