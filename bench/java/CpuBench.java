import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * CPU-bound benchmark doing a FIXED amount of work (not a fixed time), so that
 * profiler overhead shows up as extra CPU / wall time.
 *
 * Usage: java CpuBench [threads=2] [rounds=120]
 * Each worker thread executes `rounds` rounds; each round runs every kernel once.
 * Kernels: SHA-256 + hand-written hashing, object sorting with comparators,
 * string building/parsing, a HashMap word-count workload, virtual dispatch over
 * a small class hierarchy, and a recursive (deep-stack) computation.
 * A checksum is printed so the JIT cannot drop the work; it is deterministic
 * for a given (threads, rounds).
 */
public final class CpuBench {

    // ---------------------------------------------------------------- hashing
    static long hashing(SplittableRandom rnd) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[4096];
        long acc = 0;
        for (int i = 0; i < 150; i++) {
            rnd.nextBytes(buf);
            md.update(buf);
            byte[] d = md.digest();
            acc += d[0] + (d[31] << 8);
            acc ^= fnv1a(buf);
        }
        return acc;
    }

    static long fnv1a(byte[] data) {
        long h = 0xcbf29ce484222325L;
        for (byte b : data) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        return h;
    }

    // ---------------------------------------------------------------- sorting
    record Person(String name, int age, double score) {}

    static long sorting(SplittableRandom rnd) {
        int n = 20_000;
        Person[] ps = new Person[n];
        for (int i = 0; i < n; i++) {
            ps[i] = new Person("p" + rnd.nextInt(100_000), rnd.nextInt(100), rnd.nextDouble());
        }
        Arrays.sort(ps, Comparator.comparingInt(Person::age)
                .thenComparing(Person::name)
                .thenComparingDouble(Person::score));
        int[] ints = new int[100_000];
        for (int i = 0; i < ints.length; i++) ints[i] = rnd.nextInt();
        Arrays.sort(ints);
        return ps[n / 2].age() + ints[ints.length / 2] + ps[0].name().length();
    }

    // ---------------------------------------------------------------- strings
    static long strings(SplittableRandom rnd) {
        long acc = 0;
        for (int r = 0; r < 20; r++) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 1500; i++) {
                sb.append("item-").append(rnd.nextInt(1000)).append(',').append(i * 3.25).append(';');
            }
            String s = sb.toString();
            String[] parts = s.split(";");
            for (String p : parts) {
                int comma = p.indexOf(',');
                acc += Integer.parseInt(p.substring(5, comma));
                acc += p.toUpperCase().hashCode() & 0xff;
            }
        }
        return acc;
    }

    // ---------------------------------------------------------------- hashmap
    static long hashmap(SplittableRandom rnd) {
        Map<String, Integer> counts = new HashMap<>();
        Map<Long, long[]> boxes = new HashMap<>();
        for (int i = 0; i < 60_000; i++) {
            String w = "w" + rnd.nextInt(5_000);
            counts.merge(w, 1, Integer::sum);
            long k = rnd.nextInt(20_000);
            boxes.computeIfAbsent(k, x -> new long[1])[0] += i;
        }
        long acc = 0;
        for (Map.Entry<String, Integer> e : counts.entrySet()) acc += e.getValue() * e.getKey().length();
        for (long[] v : boxes.values()) acc ^= v[0];
        return acc;
    }

    // ------------------------------------------------------- virtual dispatch
    interface Shape { double area(); double perimeter(); }
    static final class Circle implements Shape {
        final double r; Circle(double r) { this.r = r; }
        public double area() { return Math.PI * r * r; }
        public double perimeter() { return 2 * Math.PI * r; }
    }
    static final class Rect implements Shape {
        final double w, h; Rect(double w, double h) { this.w = w; this.h = h; }
        public double area() { return w * h; }
        public double perimeter() { return 2 * (w + h); }
    }
    static final class Tri implements Shape {
        final double a, b, c; Tri(double a, double b, double c) { this.a = a; this.b = b; this.c = c; }
        public double area() { double s = (a + b + c) / 2; return Math.sqrt(Math.max(0, s * (s - a) * (s - b) * (s - c))); }
        public double perimeter() { return a + b + c; }
    }
    static abstract class Op { abstract long apply(long x); }
    static final class AddOp extends Op { long apply(long x) { return x + 7; } }
    static final class MulOp extends Op { long apply(long x) { return x * 31; } }
    static final class XorOp extends Op { long apply(long x) { return x ^ (x >>> 13); } }
    static final class RotOp extends Op { long apply(long x) { return Long.rotateLeft(x, 5); } }

    static long dispatch(SplittableRandom rnd) {
        List<Shape> shapes = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {
            switch (rnd.nextInt(3)) {
                case 0 -> shapes.add(new Circle(rnd.nextDouble() * 10));
                case 1 -> shapes.add(new Rect(rnd.nextDouble() * 10, rnd.nextDouble() * 10));
                default -> shapes.add(new Tri(3 + rnd.nextDouble(), 4 + rnd.nextDouble(), 5 + rnd.nextDouble()));
            }
        }
        double sum = 0;
        for (int k = 0; k < 30; k++) for (Shape s : shapes) sum += s.area() / (1 + s.perimeter());
        Op[] ops = { new AddOp(), new MulOp(), new XorOp(), new RotOp() };
        long x = rnd.nextLong();
        for (int i = 0; i < 1_500_000; i++) x = ops[(int) (x & 3)].apply(x);
        return (long) sum ^ x;
    }

    // --------------------------------------------------------------- recursion
    static long recursion(SplittableRandom rnd) {
        long acc = 0;
        for (int i = 0; i < 12; i++) acc += fib(20 + (i % 4)) + ackLike(rnd.nextInt(3) + 60, 0);
        return acc;
    }
    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    static long ackLike(int depth, long v) { return depth == 0 ? v : ackLike(depth - 1, v * 3 + depth) ^ depth; }

    // ------------------------------------------------------------------ driver
    static long worker(int id, int rounds) throws Exception {
        SplittableRandom rnd = new SplittableRandom(12345L + id);
        long acc = 0;
        for (int r = 0; r < rounds; r++) {
            acc += hashing(rnd);
            acc += sorting(rnd);
            acc += strings(rnd);
            acc += hashmap(rnd);
            acc += dispatch(rnd);
            acc += recursion(rnd);
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 120;
        long t0 = System.nanoTime();
        long[] results = new long[threads];
        Thread[] ts = new Thread[threads];
        Exception[] err = new Exception[1];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            ts[t] = new Thread(() -> {
                try { results[id] = worker(id, rounds); }
                catch (Exception e) { err[0] = e; }
            }, "cpubench-worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        if (err[0] != null) throw err[0];
        long sum = 0;
        for (long v : results) sum += v;
        System.out.printf("CpuBench threads=%d rounds=%d checksum=%016x elapsed=%.2fs%n",
                threads, rounds, sum, (System.nanoTime() - t0) / 1e9);
    }
}
