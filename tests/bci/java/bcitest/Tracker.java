package bcitest;

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The tracker that hprof-bci's inserted calls go to in the rewriter tests
 * (tests/bci/, `hprof-bci --tracker bcitest/Tracker`).  It is never itself
 * rewritten: it lives in its own class directory (build/tests/bci/tracker).
 *
 * It counts, per thread (no locking on the hot path):
 *   methodEntry(id) / methodExit(id)   per id, and keeps a per-thread stack of
 *                                      ids: an exit must pop the id on top,
 *                                      anything else is recorded as an error
 *                                      (exit without entry, exit of another id);
 *   newArray(o)                        per array class name (o must be a
 *                                      non-null array, else an error);
 *   objectInit(o)                      a plain count (o must be non-null).
 *
 * At exit (shutdown hook) it writes its report to the file named by the
 * system property bcitest.out, or to stderr:
 *
 *   BCITRACKER 1
 *   entry <id> <count>          one line per id with entries
 *   exit <id> <count>           one line per id with exits
 *   array <class name> <count>  e.g. "array [I 5", "array [[Ljava.lang.String; 2"
 *   objectinit <count>
 *   maxdepth <n>                deepest per-thread stack seen
 *   threads <n>                 threads that called the tracker
 *   unbalanced <thread> <depth> a thread whose stack is not empty at exit
 *   error <text>                the first 50 errors
 *   errors <n>                  number of errors
 *   END
 */
public final class Tracker {
    private Tracker() {}

    static final class PerThread {
        final String name;
        final Thread thread;
        int[] stack = new int[64];
        int depth;
        int maxDepth;
        long[] entries = new long[256];
        long[] exits = new long[256];
        final Map<Class<?>, long[]> arrays = new HashMap<>();
        long objectInits;

        PerThread(Thread t) {
            thread = t;
            name = t.getName();
        }
    }

    private static final List<PerThread> ALL = new ArrayList<>();
    private static final List<String> ERRORS = new ArrayList<>();
    private static long nErrors;
    private static volatile boolean done;

    private static final ThreadLocal<PerThread> CURRENT = new ThreadLocal<PerThread>() {
        @Override
        protected PerThread initialValue() {
            PerThread p = new PerThread(Thread.currentThread());
            synchronized (ALL) {
                ALL.add(p);
            }
            return p;
        }
    };

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Tracker::report, "bcitest-tracker-report"));
    }

    private static void error(String msg) {
        synchronized (ERRORS) {
            nErrors++;
            if (ERRORS.size() < 50)
                ERRORS.add(msg + " [thread " + Thread.currentThread().getName() + "]");
        }
    }

    private static long[] grow(long[] a, int id) {
        int n = a.length;
        while (n <= id) n *= 2;
        long[] b = new long[n];
        System.arraycopy(a, 0, b, 0, a.length);
        return b;
    }

    public static void methodEntry(int id) {
        PerThread p = CURRENT.get();
        if (id < 0) {
            error("methodEntry with negative id " + id);
            return;
        }
        if (id >= p.entries.length) p.entries = grow(p.entries, id);
        p.entries[id]++;
        if (p.depth == p.stack.length) {
            int[] s = new int[p.stack.length * 2];
            System.arraycopy(p.stack, 0, s, 0, p.depth);
            p.stack = s;
        }
        p.stack[p.depth++] = id;
        if (p.depth > p.maxDepth) p.maxDepth = p.depth;
    }

    public static void methodExit(int id) {
        PerThread p = CURRENT.get();
        if (id < 0) {
            error("methodExit with negative id " + id);
            return;
        }
        if (id >= p.exits.length) p.exits = grow(p.exits, id);
        p.exits[id]++;
        if (p.depth == 0) {
            error("methodExit(" + id + ") with an empty stack");
        } else if (p.stack[p.depth - 1] != id) {
            error("methodExit(" + id + ") but the innermost entered method is " + p.stack[p.depth - 1]
                  + " (depth " + p.depth + ")");
            // Resynchronise: pop up to and including id if it is on the stack.
            for (int i = p.depth - 1; i >= 0; i--) {
                if (p.stack[i] == id) {
                    p.depth = i;
                    break;
                }
            }
        } else {
            p.depth--;
        }
    }

    public static void newArray(Object o) {
        PerThread p = CURRENT.get();
        if (o == null) {
            error("newArray(null)");
            return;
        }
        Class<?> c = o.getClass();
        if (!c.isArray()) {
            error("newArray with a non-array: " + c.getName());
            return;
        }
        long[] n = p.arrays.get(c);
        if (n == null) p.arrays.put(c, n = new long[1]);
        n[0]++;
    }

    public static void objectInit(Object o) {
        PerThread p = CURRENT.get();
        if (o == null) {
            error("objectInit(null)");
            return;
        }
        p.objectInits++;
    }

    static synchronized void report() {
        if (done) return;
        done = true;
        TreeMap<Integer, long[]> ids = new TreeMap<>();
        TreeMap<String, Long> arrays = new TreeMap<>();
        long objectInits = 0;
        int maxDepth = 0;
        List<String> unbalanced = new ArrayList<>();
        List<PerThread> all;
        synchronized (ALL) {
            all = new ArrayList<>(ALL);
        }
        for (PerThread p : all) {
            for (int i = 0; i < p.entries.length; i++)
                if (p.entries[i] != 0) ids.computeIfAbsent(i, k -> new long[2])[0] += p.entries[i];
            for (int i = 0; i < p.exits.length; i++)
                if (p.exits[i] != 0) ids.computeIfAbsent(i, k -> new long[2])[1] += p.exits[i];
            for (Map.Entry<Class<?>, long[]> e : p.arrays.entrySet())
                arrays.merge(e.getKey().getName(), e.getValue()[0], Long::sum);
            objectInits += p.objectInits;
            maxDepth = Math.max(maxDepth, p.maxDepth);
            if (p.depth != 0)
                unbalanced.add(p.name.replace(' ', '_') + " " + p.depth + (p.thread.isAlive() ? " alive" : " dead"));
        }
        StringBuilder sb = new StringBuilder();
        sb.append("BCITRACKER 1\n");
        for (Map.Entry<Integer, long[]> e : ids.entrySet()) {
            if (e.getValue()[0] != 0) sb.append("entry ").append(e.getKey()).append(' ').append(e.getValue()[0]).append('\n');
            if (e.getValue()[1] != 0) sb.append("exit ").append(e.getKey()).append(' ').append(e.getValue()[1]).append('\n');
        }
        for (Map.Entry<String, Long> e : arrays.entrySet())
            sb.append("array ").append(e.getKey()).append(' ').append(e.getValue()).append('\n');
        sb.append("objectinit ").append(objectInits).append('\n');
        sb.append("maxdepth ").append(maxDepth).append('\n');
        sb.append("threads ").append(all.size()).append('\n');
        for (String u : unbalanced) sb.append("unbalanced ").append(u).append('\n');
        synchronized (ERRORS) {
            for (String e : ERRORS) sb.append("error ").append(e.replace('\n', ' ')).append('\n');
            sb.append("errors ").append(nErrors).append('\n');
        }
        sb.append("END\n");
        String path = System.getProperty("bcitest.out");
        try {
            if (path != null && !path.isEmpty()) {
                try (Writer w = new OutputStreamWriter(new FileOutputStream(path), StandardCharsets.UTF_8)) {
                    w.write(sb.toString());
                }
            } else {
                PrintStream err = System.err;
                err.print(sb);
                err.flush();
            }
        } catch (Exception e) {
            PrintWriter pw = new PrintWriter(System.err, true);
            pw.println("bcitest.Tracker: cannot write " + path + ": " + e);
        }
    }
}
