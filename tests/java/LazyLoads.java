import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Classes loaded lazily from known calls, each kept alive to the exit dump:
 *
 *   LazyLoads$A    by `new A()` in first()                 (application loader)
 *   LazyLoads$B    by Class.forName in second()            (application loader)
 *   LazyLoads$C    by loadClass in third(), on a loader of its own class,
 *                  LazyLoads$Custom, which defines it from the same bytes;
 *                  an instance made later links it (the JVM reports no
 *                  loader of a class not linked yet to a heap walk)
 *   a lambda       made in fourth(): a hidden class LazyLoads$$Lambda...
 *
 * Each call prints the line it is on (TRUTH <what> <line>), found from the
 * stack of a Throwable made on that same line. The agent's class records
 * must carry a trace whose top frame is that method at that line
 * (tests/heap_tests.py, class_load_traces_*; report_class_loads).
 */
public final class LazyLoads {
    static final class A { }
    static final class B { }
    static final class C { }

    /** Defines the classes it is asked for itself (no parent but the boot loader). */
    static final class Custom extends ClassLoader {
        Custom() { super(null); }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            try (InputStream in = LazyLoads.class.getResourceAsStream("/" + name.replace('.', '/') + ".class")) {
                if (in == null)
                    throw new ClassNotFoundException(name);
                byte[] bytes = in.readAllBytes();
                return defineClass(name, bytes, 0, bytes.length);
            } catch (java.io.IOException e) {
                throw new ClassNotFoundException(name, e);
            }
        }
    }

    static final List<Object> KEPT = new ArrayList<>();

    static int here(Throwable t) { return t.getStackTrace()[0].getLineNumber(); }

    static void first() { truth("A", here(new Throwable())); KEPT.add(new A()); }

    static void second() throws Exception { truth("B", here(new Throwable())); KEPT.add(Class.forName("LazyLoads$B")); }

    static void third(ClassLoader loader) throws Exception { truth("C", here(new Throwable())); KEPT.add(loader.loadClass("LazyLoads$C")); }

    static void fourth() { truth("lambda", here(new Throwable())); Supplier<Object> s = () -> KEPT; KEPT.add(s); }

    static void truth(String what, int line) { System.err.println("TRUTH " + what + " " + line); }

    public static void main(String[] args) throws Exception {
        first();
        second();
        Custom custom = new Custom();
        KEPT.add(custom);
        third(custom);
        fourth();
        Class<?> c = (Class<?>) KEPT.get(3);
        if (c.getClassLoader() != custom)
            throw new AssertionError("C was not defined by the custom loader");
        java.lang.reflect.Constructor<?> make = c.getDeclaredConstructor();
        make.setAccessible(true);
        KEPT.add(make.newInstance());
    }
}
