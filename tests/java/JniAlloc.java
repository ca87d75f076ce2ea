/**
 * heap=sites truth for objects made by native code through JNI
 * (tests/jni/jni_alloc.c, loaded from java.library.path):
 *
 *   Made      2,000 by JNI NewObject, whose constructor runs (the tracker
 *             sees it); a JVM may post VMObjectAlloc for the same object
 *             too: counted once each; every 2nd kept, 1,000 live
 *   Bare      500 by JNI AllocObject (no constructor, no byte code), all kept
 *   Made[]    300 by JNI NewObjectArray (length 4), 100 kept
 *
 * HotSpot 17 and 25 post no VMObjectAlloc for any of them.
 *
 * Prints "TRUTH <class> <frame> <allocated> <live>" lines on stderr, as
 * AllocTruth does.
 */
public class JniAlloc {
    static final class Made {
        long v;
        Made() { v = 42; }
    }
    static final class Bare { long v; }

    static native Object newObject(Class<?> c);
    static native Object allocObject(Class<?> c);
    static native Object[] newArray(Class<?> c, int length);

    static Object[] kept = new Object[1_000 + 500 + 100];

    public static void main(String[] args) {
        System.loadLibrary("jni_alloc");
        int k = 0;
        for (int i = 0; i < 2_000; i++) {
            Object o = newObject(Made.class);
            if (i % 2 == 0) kept[k++] = o;
        }
        for (int i = 0; i < 500; i++)
            kept[k++] = allocObject(Bare.class);
        for (int i = 0; i < 300; i++) {
            Object[] a = newArray(Made.class, 4);
            if (i % 3 == 0) kept[k++] = a;
        }
        System.gc();
        System.err.println("TRUTH JniAlloc$Made JniAlloc.newObject 2000 1000");
        System.err.println("TRUTH JniAlloc$Bare JniAlloc.allocObject 500 500");
        System.err.println("TRUTH JniAlloc$Made[] JniAlloc.newArray 300 100");
        if (kept[k - 1] == null) System.out.println();
    }
}
