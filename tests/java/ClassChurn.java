import java.io.InputStream;
import java.lang.reflect.Array;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/*
 * Classes defined while heap dumps are taken: thread "definer" defines
 * ClassChurn$Carrier again and again, each time by a class loader of its
 * own, and keeps the last CARRIERS instances in the static array `carriers`
 * (slot n % CARRIERS). Every kept instance is complete before it is stored:
 *   mark = 0x5EED, big = n (its number, distinct), self = itself,
 *   box  = a ClassChurn$Carrier[1] of its own class holding itself.
 * A dump taken meanwhile meets classes loaded after it read the class list.
 *
 * Usage: java ClassChurn go-file [max seconds, default 300]
 * Prints "READY <pid>" on stdout once 2 * CARRIERS are defined, defines on
 * until go-file exists, then prints "DONE <defined>" and exits 0 (3 on
 * timeout, so a lost test cannot leave it running).
 */
public class ClassChurn {
    public static final class Carrier {
        public int mark;
        public long big;
        public Object self;
        public Object box;
        public Carrier() {}
    }

    static final int CARRIERS = 200;
    static final Object[] carriers = new Object[CARRIERS];
    static volatile long defined;
    static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        byte[] bytes;
        try (InputStream in = ClassChurn.class.getResourceAsStream("ClassChurn$Carrier.class")) {
            bytes = in.readAllBytes();
        }
        Thread definer = new Thread(() -> {
            try {
                for (long n = 0; !stop; n++) {
                    ClassLoader own = new ClassLoader(null) {
                        @Override protected Class<?> findClass(String name) {
                            return defineClass(name, bytes, 0, bytes.length);
                        }
                    };
                    Class<?> c = own.loadClass("ClassChurn$Carrier");
                    Object o = c.getConstructor().newInstance();
                    Object box = Array.newInstance(c, 1);
                    Array.set(box, 0, o);
                    c.getField("mark").setInt(o, 0x5EED);
                    c.getField("big").setLong(o, n);
                    c.getField("self").set(o, o);
                    c.getField("box").set(o, box);
                    carriers[(int)(n % CARRIERS)] = o;
                    defined = n + 1;
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }, "definer");
        definer.start();
        while (defined < 2 * CARRIERS) Thread.sleep(10);
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        Path go = Paths.get(args[0]);
        long limit = System.nanoTime() + (args.length > 1 ? Long.parseLong(args[1]) : 300) * 1_000_000_000L;
        while (!Files.exists(go)) {
            if (System.nanoTime() > limit) {
                System.out.println("TIMEOUT waiting for " + go);
                System.exit(3);
            }
            Thread.sleep(20);
        }
        stop = true;
        definer.join();
        System.out.println("DONE " + defined);
    }
}
