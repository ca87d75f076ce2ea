import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;

/**
 * One class name, two classes: TwoLoaders$Twin is loaded from the test
 * classes by two class loaders of its own (no parent but the boot loader),
 * so the JVM holds two classes of that name. Loader A's class gets 3 live
 * instances, loader B's 5. The application loader never loads Twin.
 *
 * The agent's dump at exit must show two classes named TwoLoaders$Twin with
 * 3 and 5 instances (tests/heap_tests.py, heap_dump_two_loaders).
 */
public final class TwoLoaders {
    public static final class Twin {
        final int n;
        public Twin(int n) { this.n = n; }
    }

    static final List<Object> KEPT = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        URL here = TwoLoaders.class.getProtectionDomain().getCodeSource().getLocation();
        int[] counts = { 3, 5 };
        for (int count : counts) {
            ClassLoader loader = new URLClassLoader(new URL[] { here }, null);
            Class<?> twin = Class.forName("TwoLoaders$Twin", true, loader);
            if (twin.getClassLoader() != loader)
                throw new AssertionError("Twin was not defined by its own loader");
            KEPT.add(loader);
            for (int i = 0; i < count; i++)
                KEPT.add(twin.getConstructor(int.class).newInstance(i));
        }
        System.err.println("TRUTH TwoLoaders$Twin 3 5");
    }
}
