package corpus;

import java.io.PrintStream;

/** Output helpers shared by the corpus (Java 8 source). Everything printed is deterministic. */
public final class Util {
    private Util() {}

    static final PrintStream out = System.out;

    static void p(String s) {
        out.println(s);
    }

    static void p(String label, long v) {
        out.println(label + "=" + v);
    }

    static void p(String label, Object v) {
        out.println(label + "=" + v);
    }

    /** The exception and the corpus frames of its stack trace (method and line). */
    static void trace(String label, Throwable t) {
        StringBuilder sb = new StringBuilder(label).append(": ").append(t.getClass().getName())
            .append(": ").append(t.getMessage());
        for (StackTraceElement e : t.getStackTrace()) {
            String c = e.getClassName();
            if (c.startsWith("corpus.") || c.startsWith("modern") || c.startsWith("counts.") || c.startsWith("huge."))
                sb.append("\n    at ").append(c).append('.').append(e.getMethodName()).append(':').append(e.getLineNumber());
        }
        out.println(sb);
        if (t.getCause() != null) trace(label + " cause", t.getCause());
        for (Throwable s : t.getSuppressed()) trace(label + " suppressed", s);
    }

    static int sink;

    static boolean tick(int i) {
        sink += i;
        return (sink & 7) == 3;
    }
}
