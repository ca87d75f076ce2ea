package corpus;

import java.lang.reflect.Method;

/**
 * The corpus driver: runs every feature class, printing deterministic
 * results (identical with and without the rewriter), then the mains of
 * modern17.Main17 and modern25.Main25 when they were compiled (release >= 17
 * and >= 25).  A Throwable escaping a section is printed and the next one runs.
 */
public final class Main {
    private Main() {}

    interface Section {
        void run() throws Exception;
    }

    static void section(String name, Section s) {
        System.out.println("== " + name);
        try {
            s.run();
        } catch (Throwable t) {
            Util.trace("SECTION " + name + " FAILED", t);
        }
    }

    static void optional(String cls) {
        Class<?> c;
        try {
            c = Class.forName(cls);
        } catch (ClassNotFoundException e) {
            System.out.println("== " + cls + " not present");
            return;
        }
        section(cls, () -> {
            Method m = c.getMethod("main", String[].class);
            m.invoke(null, (Object) new String[0]);
        });
    }

    public static void main(String[] args) {
        section("Branches", Branches::run);
        section("Switches", Switches::run);
        section("Exceptions", Exceptions::run);
        section("Sync", Sync::run);
        section("Ctors", Ctors::run);
        section("Wide", Wide::run);
        section("Lambdas", Lambdas::run);
        section("Nested", Nested::run);
        section("Enums", Enums::run);
        section("Ifaces", Ifaces::run);
        section("Varargs", Varargs::run);
        section("Generics", Generics::run);
        section("ArraysDemo", ArraysDemo::run);
        section("Recursion", Recursion::run);
        section("Statics", Statics::run);
        optional("modern17.Main17");
        optional("modern25.Main25");
        System.out.println("== sink " + Util.sink);
        System.out.println("== done");
    }
}
