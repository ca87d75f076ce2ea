/*
 * Where the class-file rewriter's calls land for the JVMPI layer
 * (src/jvmpi/tracker.c, allocs.c): methodEntry at the start of every method,
 * methodExit before every return and throw out of it, objectInit first in
 * Object.<init> (every object a constructor builds), newArray after every
 * array allocation. While no agent listens the calls return at once; while
 * one does, they go to the layer, which posts METHOD_ENTRY, METHOD_EXIT or
 * OBJECT_ALLOC on this thread.
 *
 * Defined by the layer in java.base's java.lang package with the boot
 * loader, so code of every module can call it, and never instrumented.
 */
package java.lang;

public final class JvmpiTracker {
    private JvmpiTracker() {}

    /** Bits: 1 METHOD_ENTRY, 4 METHOD_EXIT, 8 OBJECT_ALLOC (set by the layer). */
    static volatile int engaged;

    public static void methodEntry(int id) {
        if ((engaged & 1) != 0) entry(id);
    }

    public static void methodExit(int id) {
        if ((engaged & 4) != 0) exit(id);
    }

    public static void objectInit(Object o) {
        if ((engaged & 8) != 0) allocated(o);
    }

    /** Also the inner arrays of a multianewarray: the layer finds them. */
    public static void newArray(Object a) {
        if ((engaged & 8) != 0) allocated(a);
    }

    private static native void entry(int id);
    private static native void allocated(Object o);
    private static native void exit(int id);
}
