import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;

/**
 * Classes that go: ClassUnload$Item is loaded by a class loader of its own
 * (no parent but the boot loader), allocated 1,000 times by its own code
 * (ClassUnload$Maker.make, so through the tracker), and the loader is
 * dropped. The agent must not keep the class, hence its loader, alive: after
 * a few System.gc() the loader is unloaded, as it is without the agent. Then a
 * second loader's ClassUnload$Item (another class of the same name) is
 * allocated 500 times on the same thread.
 *
 * stderr: "TRUTH ClassUnload$Item ClassUnload$Maker.make 1000 0" and "... 500 500"
 * (allocated, live), one line per class, and "UNLOADED true|false".
 */
public final class ClassUnload {
    public static final class Item {
        final int n;
        Item(int n) { this.n = n; }
    }

    public static final class Maker {
        public static Object[] make(int count) {
            Object[] items = new Object[count];
            for (int i = 0; i < count; i++)
                items[i] = new Item(i);
            return items;
        }
    }

    static Object kept;

    static Object[] makeIn(ClassLoader loader, int count) throws Exception {
        Class<?> maker = Class.forName("ClassUnload$Maker", true, loader);
        if (maker.getClassLoader() != loader)
            throw new AssertionError("Maker was not defined by its own loader");
        Object[] items = (Object[]) maker.getMethod("make", int.class).invoke(null, count);
        if (items.length != count || items[0].getClass().getClassLoader() != loader)
            throw new AssertionError("Maker made the wrong items");
        return items;
    }

    static WeakReference<ClassLoader> makeAndDrop(URL here, int count) throws Exception {
        ClassLoader loader = new URLClassLoader(new URL[] { here }, null);
        makeIn(loader, count);
        return new WeakReference<>(loader);
    }

    public static void main(String[] args) throws Exception {
        URL here = ClassUnload.class.getProtectionDomain().getCodeSource().getLocation();
        WeakReference<ClassLoader> first = makeAndDrop(here, 1000);
        for (int i = 0; i < 100 && first.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        boolean unloaded = first.get() == null;
        kept = makeIn(new URLClassLoader(new URL[] { here }, null), 500);
        System.err.println("TRUTH ClassUnload$Item ClassUnload$Maker.make 1000 0");
        System.err.println("TRUTH ClassUnload$Item ClassUnload$Maker.make 500 500");
        System.err.println("UNLOADED " + unloaded);
    }
}
