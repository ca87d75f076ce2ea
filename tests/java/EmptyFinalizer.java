import java.lang.management.ManagementFactory;
import javax.management.ObjectName;

/**
 * An empty finalizer stays empty (issue 17): a class whose finalize() only
 * returns (Jython's PyObject declares one) does not make the JVM register its
 * instances for finalization, and must not once instrumented. Keeps N
 * instances of such a class alive, then N of a class with a real finalize(),
 * and counts java.lang.ref.Finalizer objects (one per registered instance)
 * in a class histogram of the live heap (the DiagnosticCommand MBean, as
 * `jcmd GC.class_histogram`) before and after each. Prints on stderr:
 *   TRUTH n=N finalizers_before=A after_empty=B after_real=C
 * With the JVM's own rules, B - A is about 0 and C - B at least N.
 */
public class EmptyFinalizer {
    static class Base {
        int value;
        Base(int v) { value = v; }
        @SuppressWarnings({"deprecation", "removal"})
        @Override
        protected final void finalize() { }
    }

    static final class Empty extends Base {
        Empty(int v) { super(v); }
    }

    static final class Real {
        int value;
        Real(int v) { value = v; }
        @SuppressWarnings({"deprecation", "removal"})
        @Override
        protected void finalize() { value = -1; }
    }

    static long finalizers() throws Exception {
        String h = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                new Object[] { null }, new String[] { String[].class.getName() });
        for (String line : h.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 4 && f[3].equals("java.lang.ref.Finalizer")) return Long.parseLong(f[1]);
        }
        return 0;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        long before = finalizers();
        Object[] empties = new Object[n];
        for (int i = 0; i < n; i++) empties[i] = new Empty(i);
        long afterEmpty = finalizers();
        Object[] reals = new Object[n];
        for (int i = 0; i < n; i++) reals[i] = new Real(i);
        long afterReal = finalizers();
        System.err.println("TRUTH n=" + n + " finalizers_before=" + before + " after_empty=" + afterEmpty
                           + " after_real=" + afterReal + " kept=" + (empties.length + reals.length));
    }
}
