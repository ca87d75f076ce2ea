/**
 * JVMPI truth (tests/test_jvmpi_*.py): a program whose method calls, classes
 * and threads are known exactly.
 *
 *   calls   main: a() 1000 times, thrower() 10 times (each throws, caught
 *           in main); threads worker-0..3: worker-i runs work() (i+1)*100
 *           times, each work() calls leaf() twice
 *   classes loads JvmpiCalls$Point (2 instance fields, 1 static, 2 methods
 *           and <init>/<clinit>, implements Comparable) and starts threads
 *           t-0..t-2, joins them; System.gc() 3 times
 *   toggle  a() 100 times, b(), a() 50 times, loads JvmpiCalls$Late, c(),
 *           a() 70 times
 *   alloc   JvmpiCalls$Blob: 1 kept in proto (a = 7, b = 0x0102030405060708,
 *           c = itself, and in pair = { proto, null }), 1000 by new, 100 by
 *           reflection (Constructor.newInstance), 50 by clone(); arrays of
 *           Blob: pair, 200
 *           new Blob[3], 10 new Blob[4][5] (10 Blob[][] and 40 Blob[]), 20
 *           by Array.newInstance; 300 new int[12347]; then System.gc()
 *   free    1000 Blobs, every other one kept (500 become garbage); loads
 *           JvmpiCalls$Gone through a class loader of its own, makes one,
 *           drops both; System.gc() twice
 *   heap    live at the end, held by JvmpiCalls$Holder's statics (answer = 42,
 *           big = 0x1122334455667788, head, counted, squares): a chain of 5
 *           JvmpiCalls$Node (value i, weight 1000 + i, next: the one of i + 1,
 *           the last null), a Counted[37] of 37 JvmpiCalls$Counted, an
 *           int[11] of squares (i * i); and one JvmpiCalls$Marker referenced
 *           only by a local of hold(), where the daemon thread "holder"
 *           sleeps until the JVM ends
 *   monitors thread "waiter" waits on WAITED (Object.wait, until the JVM ends);
 *           main holds HELD while thread "blocked" blocks on it, then lets
 *           it go: one contended enter, entered, and exit (main's); main
 *           ends once waiter waits
 *   branches evens(10) (a loop of 10 with an if taken for the 5 odd i),
 *           table(k) for k = 0..4 (a tableswitch on 0..2), lookup(k) for k =
 *           1, 100, 5 (a lookupswitch on 1, 100, 1000)
 *   idle    prints READY on standard output, then waits (at most 60 s) until
 *           the file named by -Djvmpi.stop exists
 *   hot     hot(i) 300,000 times (the JIT compiles it)
 *   hprof   what HPROF met (hprof_like.c): thread "short" ends before the
 *           end; 100 JvmpiCalls$Made by made(), whose constructor calls
 *           Base's, and 1 by the constructor of JvmpiCalls$MadeHolder;
 *           new JvmpiCalls$Unlinked[3] (the class is never linked);
 *           a lambda and a string concatenation (java.lang.invoke's own
 *           arrays); all kept live until the end
 *   define  daemon thread "definer" defines JvmpiCalls$Carrier again and
 *           again, each time through a class loader of its own, and keeps
 *           the last 200 instances (mark 0x5EED, big its number, self
 *           itself) in carriers; main returns once 400 are defined, the
 *           definer goes on until the JVM ends
 *   hook    loads JvmpiCalls$Late, then prints "hook text " + text() on
 *           stderr (text() returns a literal an agent may rewrite)
 *   functions threads "spinner" (in spin(), on a CPU), "sleeper" (in
 *           Thread.sleep), "blocked" (contending for LOCK, which main holds
 *           for 30 s), "waiter" (LOCK2.wait(200) once); the agent is expected
 *           to end the JVM (ProfilerExit) before main lets LOCK go
 */
public class JvmpiCalls {
    static volatile int sink;

    static void a() { sink++; }

    static void b() { sink += 2; }

    static void c() { sink += 3; }

    static void thrower() { throw new IllegalStateException("known"); }

    static void leaf() {
        sink ^= 1; // LEAF_LINE
    }

    static void work() {
        leaf(); // WORK_CALL_LINE
        leaf();
    }

    static final class Point implements Comparable<Point> {
        static final Point ORIGIN = new Point(0, 0);
        final int x;
        final int y;

        Point(int x, int y) { this.x = x; this.y = y; }

        int norm() { return x * x + y * y; }

        public int compareTo(Point o) { return Integer.compare(norm(), o.norm()); }
    }

    static final class Late {
        static int touched;
        static void touch() { touched++; }
    }

    static final class Blob implements Cloneable {
        int a;
        long b;
        Object c;

        Blob() {}

        @Override
        public Blob clone() {
            try {
                return (Blob) super.clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static Blob proto;
    static Object keep;

    static Blob[] pair;

    static void alloc() throws Exception {
        proto = new Blob();
        proto.a = 7;
        proto.b = 0x0102030405060708L;
        proto.c = proto;
        pair = new Blob[] { proto, null };
        for (int i = 0; i < 1000; i++) keep = new Blob();
        java.lang.reflect.Constructor<Blob> constructor = Blob.class.getDeclaredConstructor();
        for (int i = 0; i < 100; i++) keep = constructor.newInstance();
        for (int i = 0; i < 50; i++) keep = proto.clone();
        for (int i = 0; i < 200; i++) keep = new Blob[3];
        for (int i = 0; i < 10; i++) keep = new Blob[4][5];
        for (int i = 0; i < 20; i++) keep = java.lang.reflect.Array.newInstance(Blob.class, 6);
        for (int i = 0; i < 300; i++) keep = new int[12347];
        keep = null;
        System.gc();
    }

    static final Object LOCK = new Object();
    static final Object LOCK2 = new Object();
    static volatile boolean stop;

    static void spin() {
        while (!stop) sink++; // SPIN_LINE
    }

    static void functions() throws InterruptedException {
        Thread spinner = new Thread(JvmpiCalls::spin, "spinner");
        Thread sleeper = new Thread(() -> {
            try { Thread.sleep(60_000); } catch (InterruptedException e) { sink++; }
        }, "sleeper");
        Thread blocked = new Thread(() -> { synchronized (LOCK) { sink++; } }, "blocked");
        Thread waiter = new Thread(() -> {
            synchronized (LOCK2) {
                try { LOCK2.wait(200); } catch (InterruptedException e) { sink++; }
            }
        }, "waiter");
        spinner.setDaemon(true);
        sleeper.setDaemon(true);
        synchronized (LOCK) {
            spinner.start();
            sleeper.start();
            blocked.start();
            waiter.start();
            waiter.join();
            Thread.sleep(30_000);
        }
        stop = true;
        blocked.join();
    }

    public static final class Gone {
        public Gone() {}
    }

    static final java.util.ArrayList<Blob> kept = new java.util.ArrayList<>();

    static void free() throws Exception {
        for (int i = 0; i < 1000; i++) {
            Blob b = new Blob();
            if (i % 2 == 0) kept.add(b);
        }
        java.net.URL here = new java.io.File(System.getProperty("java.class.path")).toURI().toURL();
        ClassLoader loader = new java.net.URLClassLoader(new java.net.URL[] { here }, null);
        Object gone = loader.loadClass("JvmpiCalls$Gone").getDeclaredConstructor().newInstance();
        sink += gone.hashCode() & 1;
        gone = null;
        loader = null;
        System.gc();
        System.gc();
    }

    static void calls() throws InterruptedException {
        for (int i = 0; i < 1000; i++) a();
        for (int i = 0; i < 10; i++) {
            try { thrower(); } catch (IllegalStateException expected) { sink++; }
        }
        Thread[] workers = new Thread[4];
        for (int t = 0; t < workers.length; t++) {
            final int n = (t + 1) * 100;
            workers[t] = new Thread(() -> { for (int i = 0; i < n; i++) work(); }, "worker-" + t);
            workers[t].start();
        }
        for (Thread w : workers) w.join();
    }

    static void classes() throws InterruptedException {
        sink += new Point(3, 4).compareTo(Point.ORIGIN);
        Thread[] ts = new Thread[3];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> sink++, "t-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        for (int i = 0; i < 3; i++) System.gc();
    }

    static final class Node {
        final int value;
        final long weight;
        Node next;

        Node(int value) { this.value = value; this.weight = 1000L + value; }
    }

    static final class Counted {}

    static final class Marker {
        int id = 5;
    }

    static final class Holder {
        static int answer = 42;
        static long big = 0x1122334455667788L;
        static Node head;
        static Counted[] counted;
        static int[] squares;
    }

    static void hold(Marker m, java.util.concurrent.CountDownLatch ready) throws InterruptedException {
        ready.countDown();
        try {
            Thread.sleep(1_000_000); // HOLD_LINE
        } finally {
            sink += m.id;              // m stays live while the thread sleeps
        }
    }

    static void heap() throws InterruptedException {
        Node head = null;
        for (int i = 4; i >= 0; i--) {
            Node n = new Node(i);
            n.next = head;
            head = n;
        }
        Holder.head = head;
        Holder.counted = new Counted[37];
        for (int i = 0; i < 37; i++) Holder.counted[i] = new Counted();
        Holder.squares = new int[11];
        for (int i = 0; i < 11; i++) Holder.squares[i] = i * i;
        java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
        Thread holder = new Thread(() -> {
            try { hold(new Marker(), ready); } catch (InterruptedException e) { sink++; }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        ready.await();
        while (holder.getState() != Thread.State.TIMED_WAITING) Thread.sleep(10);
    }

    static final Object HELD = new Object();
    static final Object WAITED = new Object();

    static void monitors() throws InterruptedException {
        Thread waiter = new Thread(() -> {
            synchronized (WAITED) {
                try { WAITED.wait(); } catch (InterruptedException e) { sink++; }
            }
        }, "waiter");
        waiter.setDaemon(true);
        waiter.start();
        Thread blocked = new Thread(() -> { synchronized (HELD) { sink++; } }, "blocked");
        synchronized (HELD) {
            blocked.start();
            while (blocked.getState() != Thread.State.BLOCKED) Thread.sleep(10);
            Thread.sleep(1000);    // JVMTI posts blocked's contended enter after its state says BLOCKED
        }
        blocked.join();
        while (waiter.getState() != Thread.State.WAITING) Thread.sleep(10);
    }

    static int evens(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) s++;
        }
        return s;
    }

    static int table(int k) {
        switch (k) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            default: return -1;
        }
    }

    static int lookup(int k) {
        switch (k) {
            case 1: return 20;
            case 100: return 21;
            case 1000: return 22;
            default: return -2;
        }
    }

    static void branches() {
        sink += evens(10);
        for (int k = 0; k <= 4; k++) sink += table(k);
        sink += lookup(1) + lookup(100) + lookup(5);
    }

    static void idle() throws InterruptedException {
        java.io.File stop = new java.io.File(System.getProperty("jvmpi.stop"));
        System.out.println("READY");
        System.out.flush();
        for (int i = 0; i < 1200 && !stop.exists(); i++) Thread.sleep(50);
    }

    static int hot(int i) {
        int x = i * 31; // HOT_FIRST_LINE
        return x ^ (x >>> 7); // HOT_LAST_LINE
    }

    static String text() { return "JVMPI-ORIGINAL"; }

    static void hook() {
        Late.touch();
        System.err.println("hook text " + text());
    }

    static void toggle() {
        for (int i = 0; i < 100; i++) a();
        b();
        for (int i = 0; i < 50; i++) a();
        Late.touch();
        c();
        for (int i = 0; i < 70; i++) a();
    }

    static class Base { int base; Base() { base = 1; } }
    static final class Made extends Base { long v; Made(long v) { super(); this.v = v; } }
    static final class Unlinked { int never; }
    static Object[] hprofKept;

    static Made made(long v) {
        return new Made(v); // MADE_LINE
    }

    /* Allocates in its constructor: its Made's trace starts here. */
    static final class MadeHolder {
        final Made made;
        MadeHolder() { made = new Made(-1); } // HOLDER_LINE
    }

    static void hprof() throws Exception {
        Thread t = new Thread(() -> sink++, "short");
        t.start();
        t.join();
        Made[] m = new Made[100];
        for (int i = 0; i < m.length; i++) m[i] = made(i);
        MadeHolder h = new MadeHolder();
        Unlinked[] u = new Unlinked[3];
        Runnable r = () -> sink++;
        r.run();
        String s = "s" + sink + m.length;
        hprofKept = new Object[] { m, u, r, s, h };
    }

    /* Defined again and again (define), each time by a loader of its own. */
    public static final class Carrier { public int mark; public long big; public Object self; public Carrier() {} }
    static final int CARRIERS = 200;
    static final Object[] carriers = new Object[CARRIERS];
    static volatile long defined;

    static void define() throws Exception {
        byte[] bytes;
        try (java.io.InputStream in = JvmpiCalls.class.getResourceAsStream("JvmpiCalls$Carrier.class")) {
            bytes = in.readAllBytes();
        }
        Thread t = new Thread(() -> {
            try {
                for (long n = 0;; n++) {
                    ClassLoader own = new ClassLoader(null) {
                        @Override protected Class<?> findClass(String name) {
                            return defineClass(name, bytes, 0, bytes.length);
                        }
                    };
                    Class<?> c = own.loadClass("JvmpiCalls$Carrier");
                    Object o = c.getConstructor().newInstance();
                    c.getField("mark").setInt(o, 0x5EED);
                    c.getField("big").setLong(o, n);
                    c.getField("self").set(o, o);
                    carriers[(int)(n % CARRIERS)] = o;
                    defined = n + 1;
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }, "definer");
        t.setDaemon(true);
        t.start();
        while (defined < 2 * CARRIERS) Thread.sleep(10);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "calls": calls(); break;
            case "classes": classes(); break;
            case "toggle": toggle(); break;
            case "alloc": alloc(); break;
            case "functions": functions(); break;
            case "hook": hook(); break;
            case "free": free(); break;
            case "heap": heap(); break;
            case "idle": idle(); break;
            case "monitors": monitors(); break;
            case "branches": branches(); break;
            case "hprof": hprof(); break;
            case "define": define(); break;
            case "hot": for (int i = 0; i < 300_000; i++) sink += hot(i); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.err.println("JvmpiCalls " + args[0] + " done");
    }
}
