package corpus;

import static corpus.Util.p;

/** Varargs: zero, one and many arguments, primitive varargs, null, arrays passed as is. */
public final class Varargs {
    private Varargs() {}

    static int count(Object... xs) {
        return xs == null ? -1 : xs.length;
    }

    static long sum(int first, long... rest) {
        long s = first;
        for (long r : rest) s += r;
        return s;
    }

    static String join(String sep, String... parts) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) sb.append(sep);
            sb.append(parts[i]);
        }
        return sb.toString();
    }

    static void run() {
        p("count " + count() + " " + count("a") + " " + count("a", 1, 2.0) + " " + count((Object[]) null)
          + " " + count((Object) null) + " " + count(new Object[] { 1, 2 }));
        p("sum " + sum(1) + " " + sum(1, 2L) + " " + sum(1, 2, 3, 4, 5));
        p("join " + join("-") + " " + join("-", "x") + " " + join("-", "x", "y", "z"));
        p(String.format("format %d %s %05.1f", 42, "str", 3.14159));
    }
}
