package corpus;

import static corpus.Util.p;

import java.util.Arrays;

/**
 * Arrays: newarray of each of the 8 primitive types, anewarray (objects and
 * `new int[3][]`, which is an anewarray of [I), multianewarray with all and
 * with partial dimensions (`new int[2][3][]`), array initialisers, zero-length
 * arrays, NegativeArraySizeException (the allocation throws: the inserted
 * call after it is not reached), ArrayStoreException, clone().
 */
public final class ArraysDemo {
    private ArraysDemo() {}

    static String prims(int n) {
        boolean[] z = new boolean[n];
        byte[] b = new byte[n];
        char[] c = new char[n];
        short[] s = new short[n];
        int[] i = new int[n];
        long[] l = new long[n];
        float[] f = new float[n];
        double[] d = new double[n];
        for (int k = 0; k < n; k++) {
            z[k] = k % 2 == 0;
            b[k] = (byte) (k * 50);
            c[k] = (char) ('a' + k);
            s[k] = (short) (k * 1000);
            i[k] = k * k;
            l[k] = (long) k << 33;
            f[k] = k / 4f;
            d[k] = k / 8.0;
        }
        return Arrays.toString(z) + Arrays.toString(b) + new String(c) + Arrays.toString(s) + Arrays.toString(i)
            + Arrays.toString(l) + Arrays.toString(f) + Arrays.toString(d);
    }

    static String objects(int n) {
        String[] s = new String[n];
        Object[] o = new Object[n];
        int[][] partial = new int[n][];             // anewarray [I
        for (int k = 0; k < n; k++) {
            s[k] = "s" + k;
            o[k] = k % 2 == 0 ? s[k] : Integer.valueOf(k);
            partial[k] = new int[k];
        }
        Runnable[] rs = new Runnable[0];
        return Arrays.toString(s) + Arrays.toString(o) + Arrays.deepToString(partial) + rs.length;
    }

    static String multi(int a, int b) {
        int[][] m2 = new int[a][b];                 // multianewarray dims 2
        long[][][] m3 = new long[2][a][b];          // multianewarray dims 3
        String[][] s2 = new String[a][b];
        int[][][] part = new int[a][b][];           // multianewarray [[[I dims 2
        double[][][][] z = new double[a][0][b][];   // zero-length middle dimension
        for (int i = 0; i < a; i++)
            for (int j = 0; j < b; j++) {
                m2[i][j] = i * 10 + j;
                m3[1][i][j] = (long) i * j;
                s2[i][j] = i + ":" + j;
                part[i][j] = new int[] { i, j };
            }
        return Arrays.deepToString(m2) + Arrays.deepToString(m3) + Arrays.deepToString(s2)
            + Arrays.deepToString(part) + z.length + z[0].length;
    }

    static String inits() {
        int[] a = { 1, 2, 3 };
        char[][] cc = { { 'x' }, { 'y', 'z' }, {} };
        Object[] mixed = { "s", 1, 'c', 2.0, null, new int[] { 9 } };
        int[] copy = a.clone();
        copy[0] = 99;
        return Arrays.toString(a) + Arrays.deepToString(cc) + mixed.length + Arrays.toString(copy);
    }

    static String failing(int n) {
        StringBuilder sb = new StringBuilder();
        try {
            int[] x = new int[n];
            sb.append("len ").append(x.length);
        } catch (NegativeArraySizeException e) {
            sb.append("NASE ");
        }
        try {
            int[][] x = new int[2][n];
            sb.append(" len2 ").append(x[1].length);
        } catch (NegativeArraySizeException e) {
            sb.append("NASE2 ");
        }
        try {
            Object[] o = new String[1];
            o[0] = Integer.valueOf(n);
        } catch (ArrayStoreException e) {
            sb.append(" ASE");
        }
        return sb.toString();
    }

    static void run() {
        p("prims " + prims(4));
        p("objects " + objects(3));
        p("multi " + multi(2, 3));
        p("inits " + inits());
        p("failing " + failing(2) + " | " + failing(-1));
    }
}
