package corpus;

import static corpus.Util.p;

/**
 * Static initialisers: order of initialisation, a <clinit> with loops and
 * branches, a <clinit> that throws (ExceptionInInitializerError, then
 * NoClassDefFoundError on the next use), instanceof/checkcast, assert (off).
 */
public final class Statics {
    private Statics() {}

    static final StringBuilder LOG = new StringBuilder();

    static final class A {
        static final int[] PRIMES;

        static {
            LOG.append("A.<clinit> ");
            int[] t = new int[10];
            int n = 0;
            for (int c = 2; n < t.length; c++) {
                boolean prime = true;
                for (int d = 2; d * d <= c; d++)
                    if (c % d == 0) {
                        prime = false;
                        break;
                    }
                if (prime) t[n++] = c;
            }
            PRIMES = t;
        }
    }

    static final class B {
        static final int V = compute();

        static int compute() {
            LOG.append("B.compute ");
            return A.PRIMES[4] * 2;
        }
    }

    static final class Broken {
        static final int V;

        static {
            if (LOG.length() > 0) throw new IllegalStateException("broken clinit");
            V = 1;
        }
    }

    static String kinds(Object o) {
        String r;
        if (o instanceof Integer) r = "int " + ((Integer) o + 1);
        else if (o instanceof CharSequence) r = "chars " + ((CharSequence) o).length();
        else if (o instanceof int[]) r = "int[] " + ((int[]) o).length;
        else if (o instanceof Object[]) r = "Object[] " + ((Object[]) o).length;
        else r = "other";
        assert r.length() > 100 : "assertions are off";
        return r;
    }

    static void run() {
        p("B.V " + B.V + " log " + LOG);
        for (int i = 0; i < 2; i++) {
            try {
                p("Broken.V " + Broken.V);
            } catch (Throwable e) {
                p("broken " + i + " " + e.getClass().getName());
            }
        }
        p(kinds(41) + ", " + kinds("abc") + ", " + kinds(new int[3]) + ", " + kinds(new String[2]) + ", " + kinds(2.0));
    }
}
