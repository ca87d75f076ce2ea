package corpus;

import static corpus.Util.p;
import static corpus.Util.trace;

/**
 * Constructors whose super(...) / this(...) arguments are computed with
 * conditionals (StackMapTable frames with uninitializedThis before the
 * super call), with arrays allocated before super (newarray while `this` is
 * uninitialized), with calls that throw before super returns (the
 * constructor exits exceptionally with `this` uninitialized), `new X(c ? a :
 * b)` (frames holding Uninitialized(offset-of-new) entries), inner classes
 * that store this$0 before super, and anonymous classes with arguments.
 */
public final class Ctors {
    private Ctors() {}

    static class Base {
        final String what;
        final int n;

        Base(String what, int n) {
            this.what = what;
            this.n = n;
        }

        Base(int[] a) {
            this("array" + a.length, a.length > 0 ? a[0] : -1);
        }

        @Override
        public String toString() {
            return what + ":" + n;
        }
    }

    static String a() {
        return "a";
    }

    static String b() {
        return "b";
    }

    static int parse(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        } finally {
            Util.sink++;
        }
    }

    static int mustBePositive(int x) {
        if (x <= 0) throw new IllegalArgumentException("not positive: " + x);
        return x;
    }

    static final class Cond extends Base {
        Cond(int x) {
            super(x > 0 ? a() : b(), x < 0 ? -x : x == 0 ? 100 : x);
        }
    }

    static final class TryArg extends Base {
        final long extra;

        TryArg(String s) {
            super(s == null ? "null" : s, parse(s));
            long e;
            try {
                e = Long.parseLong(s) * 2;
            } catch (NumberFormatException ex) {
                e = -2;
            }
            extra = e;
        }

        @Override
        public String toString() {
            return super.toString() + "/" + extra;
        }
    }

    static final class ArrArg extends Base {
        ArrArg(int k) {
            super(k > 1 ? new int[] { k, k + 1 } : new int[k]);
        }
    }

    static final class Throwing extends Base {
        Throwing(int x) {
            super("t", mustBePositive(x));
        }
    }

    static final class Delegating extends Base {
        Delegating() {
            this(Util.sink > 0 ? 1 : 2, "d");
        }

        Delegating(int a, String b) {
            super(b + a, a);
        }
    }

    static final class Pair {
        final Object l, r;

        Pair(Object l, Object r) {
            this.l = l;
            this.r = r;
        }

        @Override
        public String toString() {
            return "(" + l + "," + r + ")";
        }
    }

    // new Pair(c ? new Pair(..) : null, ...): uninitialized objects on the stack across branches.
    static Pair nest(int d) {
        return new Pair(d > 0 ? nest(d - 1) : "leaf", d % 2 == 0 ? new Pair(d, d > 2 ? "big" : "small") : null);
    }

    final class Inner extends Base {
        final int k;

        Inner(int k) {
            super("inner", k > 5 ? k * 2 : k);
            this.k = k + tag;
        }
    }

    int tag = 1000;

    static Base anon(final int x) {
        return new Base(x > 3 ? "big" : "small", x) {
            @Override
            public String toString() {
                return "anon-" + super.toString() + "-" + x;
            }
        };
    }

    static void run() {
        p("cond " + new Cond(5) + " " + new Cond(-3) + " " + new Cond(0));
        p("tryArg " + new TryArg("21") + " " + new TryArg("x") + " " + new TryArg(null));
        p("arrArg " + new ArrArg(3) + " " + new ArrArg(1) + " " + new ArrArg(0));
        for (int x : new int[] { 1, 0, -1 }) {
            try {
                p("throwing " + new Throwing(x));
            } catch (IllegalArgumentException e) {
                trace("throwing", e);
            }
        }
        p("delegating " + new Delegating());
        p("nest " + nest(4));
        Ctors c = new Ctors();
        Ctors.Inner i1 = c.new Inner(3), i2 = c.new Inner(9);
        p("inner " + i1 + "/" + i1.k + " " + i2 + "/" + i2.k);
        p("anon " + anon(2) + " " + anon(7));
    }
}
