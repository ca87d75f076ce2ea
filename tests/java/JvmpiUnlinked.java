/* A heap dump through the JVMPI layer names the Class object of a class that
 * was loaded and never linked: Class.forName(name, false, loader) loads Lazy
 * without linking it (HotSpot links a class at its first use, and the
 * program never uses it), and a static holds its Class object. Class data
 * sharing loads hundreds of JDK classes the same way; their Class objects are
 * named by their loaders and by constant pools. Truth: the dump's `held`
 * static leads to the class JvmpiUnlinked$Lazy, and no id in the dump leads
 * nowhere. Prints "unlinked JvmpiUnlinked$Lazy". */
public class JvmpiUnlinked {
    static class Lazy {
        static int counter = 42;
        long value;
        Object next;
    }

    static Class<?> held;

    public static void main(String[] args) throws Exception {
        held = Class.forName("JvmpiUnlinked$Lazy", false, JvmpiUnlinked.class.getClassLoader());
        System.out.println("unlinked " + held.getName());
    }
}
