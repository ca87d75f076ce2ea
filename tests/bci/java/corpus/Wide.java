package corpus;

import static corpus.Util.p;

/**
 * long and double locals, arguments, fields and stack values (two-slot types
 * in frames), the dup/dup2 family (dup_x1, dup_x2, dup2, dup2_x1, dup2_x2),
 * conversions, and branches on long/double comparisons.
 */
public final class Wide {
    long lf;
    double df;
    int ifield;
    static long slf;

    long setL(long v) {
        return lf = v;                  // dup2_x1
    }

    int setI(int v) {
        return ifield = v;              // dup_x1
    }

    int postInc() {
        return ifield++;                // dup, dup_x1
    }

    static long arrAssign(long[] a, int i, long v) {
        long r;
        a[i] = r = v * 3;               // dup2_x2
        return r;
    }

    static int arrAssignI(int[] a, int i, int v) {
        return a[i] = v;                // dup_x2
    }

    static long arrInc(long[] a, int i) {
        a[i] += 5L;                     // dup2, laload, lastore
        return a[i]++;                  // dup2, laload, dup2_x2
    }

    static double mix(int i, long l, float f, double d, long l2, int j) {
        double acc = 0;
        long sum = l + l2;
        for (int k = 0; k < i; k++) {
            if (sum > 0L) {
                acc += d * k;
                sum -= k;
            } else if (sum < -100L) {
                acc -= f;
                sum += 2 * k + j;
            } else {
                acc = acc / 2 + (double) sum;
                sum = (long) (acc * 3) ^ 0x5555L;
            }
        }
        double r = acc + sum + (long) f;
        return d > 1e10 ? Double.POSITIVE_INFINITY : r;
    }

    static String conversions(long l, double d) {
        int i = (int) l;
        short s = (short) l;
        byte b = (byte) l;
        char c = (char) l;
        float f = (float) d;
        long dl = (long) d;
        int di = (int) d;
        double ld = (double) l;
        return i + "," + s + "," + b + "," + (int) c + "," + f + "," + dl + "," + di + "," + ld;
    }

    static long localsAcrossBranches(long a, double b) {
        long x = a;
        double y = b;
        int n = 0;
        while (x != 0L) {
            long t = x & 0xFFL;
            double u = y * t;
            if (u > 100.0) {
                y = u / 1000.0;
                n++;
            } else {
                long v = t << 3;
                y += v;
            }
            x >>>= 8;
        }
        return n * 1000000L + (long) y;
    }

    static void run() {
        Wide w = new Wide();
        p("setL " + w.setL(1L << 35) + " setI " + w.setI(77) + " postInc " + w.postInc() + " " + w.ifield);
        long[] la = new long[3];
        int[] ia = new int[3];
        p("arrAssign " + arrAssign(la, 1, 7L) + " " + arrAssignI(ia, 2, 9) + " arrInc " + arrInc(la, 1) + " " + la[1]);
        p("mix " + mix(10, 5L, 1.5f, 2.25, -3L, 4) + " " + mix(20, -200L, 0.5f, 0.75, 1L, 3) + " " + mix(3, 1L, 1f, 1e11, 0L, 0));
        p("conversions " + conversions(0x123456789ABCL, -12345.678) + " " + conversions(-1L, 1e20));
        p("localsAcrossBranches " + localsAcrossBranches(0x0102030405060708L, 1.5) + " " + localsAcrossBranches(-1L, 0.25));
        slf = Long.MIN_VALUE;
        slf--;
        w.df = Math.sqrt(2.0);
        p("static " + slf + " df " + w.df);
    }
}
