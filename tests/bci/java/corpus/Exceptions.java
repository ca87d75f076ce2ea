package corpus;

import static corpus.Util.p;
import static corpus.Util.trace;

/**
 * Nested try/catch/finally, finally that overrides a return, exceptions
 * thrown from finally and from catch, multi-catch, try-with-resources with
 * suppressed exceptions, exceptions propagating through several frames
 * (each frame exits exceptionally), catch inside loops.  The printed stack
 * traces carry line numbers when compiled with line tables.
 */
public final class Exceptions {
    private Exceptions() {}

    static final class MyException extends Exception {
        final int code;

        MyException(String msg, int code, Throwable cause) {
            super(msg, cause);
            this.code = code;
        }
    }

    static int depth3(int x) throws MyException {
        if (x % 3 == 0) throw new MyException("depth3 x=" + x, x, null);
        if (x % 3 == 1) throw new IllegalArgumentException("iae x=" + x);
        return x * 10;
    }

    static int depth2(int x) throws MyException {
        int r = 1;
        r += depth3(x);
        return r;
    }

    static int depth1(int x) throws MyException {
        try {
            return depth2(x) + 1;
        } finally {
            Util.sink++;
        }
    }

    static String propagate(int x) {
        try {
            return "ok " + depth1(x);
        } catch (MyException e) {
            trace("propagate", e);
            return "my " + e.code;
        } catch (RuntimeException e) {
            trace("propagate", e);
            return "rt";
        }
    }

    @SuppressWarnings("finally")
    static int finallyOverrides(int x) {
        try {
            if (x > 0) return x;
            throw new IllegalStateException("x=" + x);
        } finally {
            if (x > 5) return -x;
        }
    }

    static String nested(int x) {
        StringBuilder sb = new StringBuilder();
        try {
            sb.append('a');
            try {
                sb.append('b');
                if (x == 1) throw new RuntimeException("one");
                try {
                    sb.append('c');
                    if (x == 2) throw new ArithmeticException("two");
                    if (x == 3) return sb.append("R3").toString();
                } catch (ArithmeticException e) {
                    sb.append("[AE]");
                    if (x == 2) throw new IllegalStateException("from catch", e);
                } finally {
                    sb.append('F');
                    if (x == 4) throw new UnsupportedOperationException("from finally");
                }
                sb.append('d');
            } catch (IllegalStateException | UnsupportedOperationException e) {
                sb.append("[").append(e.getClass().getSimpleName()).append("]");
            } finally {
                sb.append('G');
            }
            sb.append('e');
        } catch (RuntimeException e) {
            sb.append("[outer ").append(e.getMessage()).append("]");
        } finally {
            sb.append('H');
        }
        return sb.toString();
    }

    static final class Res implements AutoCloseable {
        final String name;
        final boolean failClose;
        final StringBuilder log;

        Res(String name, boolean failClose, StringBuilder log) {
            this.name = name;
            this.failClose = failClose;
            this.log = log;
            log.append("open ").append(name).append(';');
        }

        @Override
        public void close() {
            log.append("close ").append(name).append(';');
            if (failClose) throw new IllegalStateException("close " + name);
        }
    }

    static String resources(int mode) {
        StringBuilder log = new StringBuilder();
        try (Res a = new Res("a", mode == 1, log); Res b = new Res("b", mode >= 2, log)) {
            log.append("body;");
            if (mode == 3) throw new RuntimeException("body");
        } catch (RuntimeException e) {
            log.append("caught ").append(e.getMessage());
            for (Throwable s : e.getSuppressed()) log.append(" suppressed ").append(s.getMessage());
        }
        return log.toString();
    }

    static int loopCatch(int n) {
        int ok = 0, bad = 0;
        for (int i = 0; i < n; i++) {
            try {
                int[] a = new int[i % 4];
                a[2] = 1;
                ok++;
            } catch (ArrayIndexOutOfBoundsException e) {
                bad++;
                if (bad > 1000) break;
            }
        }
        return ok * 1000 + bad;
    }

    static int rethrow(int x) throws Exception {
        try {
            if (x > 0) throw new java.io.IOException("io " + x);
            return 0;
        } catch (Exception e) {
            Util.sink--;
            throw e;
        }
    }

    static int deep(int n) {
        if (n == 0) throw new ArithmeticException("bottom");
        return deep(n - 1) + 1;
    }

    static void run() {
        for (int x = 0; x < 4; x++) p("propagate(" + x + ") " + propagate(x));
        for (int x : new int[] { -1, 3, 7 }) {
            try {
                p("finallyOverrides " + finallyOverrides(x));
            } catch (IllegalStateException e) {
                trace("finallyOverrides", e);
            }
        }
        for (int x = 0; x <= 4; x++) p("nested(" + x + ") " + nested(x));
        for (int m = 0; m <= 3; m++) p("resources(" + m + ") " + resources(m));
        p("loopCatch " + loopCatch(50));
        try {
            rethrow(0);
            rethrow(5);
        } catch (Exception e) {
            trace("rethrow", e);
        }
        try {
            deep(200);
        } catch (ArithmeticException e) {
            p("deep: " + e.getMessage() + " frames>=" + (e.getStackTrace().length >= 200));
        }
        try {
            Object o = "str";
            Integer i = (Integer) o;
            p("no " + i);
        } catch (ClassCastException e) {
            p("cce");
        }
        try {
            Object o = null;
            p(o.toString());
        } catch (NullPointerException e) {
            p("npe");
        }
        try {
            p("div " + (10 / (Util.sink - Util.sink)));
        } catch (ArithmeticException e) {
            trace("div", e);
        }
    }
}
