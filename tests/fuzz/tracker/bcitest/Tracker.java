package bcitest;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Tracker for checking classes rewritten by hprof-bci (--tracker bcitest/Tracker):
 * counts the inserted calls and prints the counts to stderr at exit, as
 * "bcitest.Tracker: entries=E exits=X arrays=A inits=I". Must itself stay
 * uninstrumented (it is compiled separately and put on the class path).
 */
public final class Tracker {
    private static final AtomicLong ENTRIES = new AtomicLong();
    private static final AtomicLong EXITS = new AtomicLong();
    private static final AtomicLong ARRAYS = new AtomicLong();
    private static final AtomicLong INITS = new AtomicLong();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.println(
                "bcitest.Tracker: entries=" + ENTRIES.get() + " exits=" + EXITS.get()
                + " arrays=" + ARRAYS.get() + " inits=" + INITS.get())));
    }

    private Tracker() {}

    public static void methodEntry(int id) {
        if (id < 0) throw new IllegalStateException("negative method id " + id);
        ENTRIES.incrementAndGet();
    }

    public static void methodExit(int id) {
        if (id < 0) throw new IllegalStateException("negative method id " + id);
        EXITS.incrementAndGet();
    }

    public static void newArray(Object array) {
        if (array == null || !array.getClass().isArray())
            throw new IllegalStateException("newArray got " + array);
        ARRAYS.incrementAndGet();
    }

    public static void objectInit(Object obj) {
        INITS.incrementAndGet();
    }
}
