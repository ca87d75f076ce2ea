import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A call-heavy workload for cpu=times: an interpreter evaluating expression
 * trees (a virtual call per node, small helper methods) and a tokenizer that
 * calls tiny methods per character. Fixed work; prints calls= and checksum=.
 * Arguments: rounds (default 40).
 */
public class CallBench {
    static long calls;

    abstract static class Node {
        abstract long eval(long[] env);
    }
    static final class Const extends Node {
        final long v;
        Const(long v) { this.v = v; }
        long eval(long[] env) { return v; }
    }
    static final class Var extends Node {
        final int i;
        Var(int i) { this.i = i; }
        long eval(long[] env) { return env[i]; }
    }
    static final class Add extends Node {
        final Node a, b;
        Add(Node a, Node b) { this.a = a; this.b = b; }
        long eval(long[] env) { return mix(a.eval(env), b.eval(env)); }
    }
    static final class Mul extends Node {
        final Node a, b;
        Mul(Node a, Node b) { this.a = a; this.b = b; }
        long eval(long[] env) { return clamp(a.eval(env) * (b.eval(env) | 1)); }
    }
    static long mix(long x, long y) { return x + y + (x >>> 7); }
    static long clamp(long v) { return v & 0xffffffffL; }

    static Node build(Random r, int depth) {
        if (depth == 0) return r.nextBoolean() ? new Const(r.nextInt(100)) : new Var(r.nextInt(4));
        return r.nextBoolean() ? new Add(build(r, depth - 1), build(r, depth - 1))
                               : new Mul(build(r, depth - 1), build(r, depth - 1));
    }

    /** Add and Mul nodes: each eval of the tree evaluates each once. */
    static long inner(Node n) {
        if (n instanceof Add a) return 1 + inner(a.a) + inner(a.b);
        if (n instanceof Mul m) return 1 + inner(m.a) + inner(m.b);
        return 0;
    }

    static boolean isDigit(char c) { return c >= '0' && c <= '9'; }
    static boolean isSpace(char c) { return c == ' '; }
    static int digit(char c) { return c - '0'; }

    static List<Long> tokenize(String s) {
        List<Long> out = new ArrayList<>();
        long cur = -1;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (isDigit(c)) cur = (cur < 0 ? 0 : cur * 10) + digit(c);
            else if (isSpace(c) && cur >= 0) { out.add(cur); cur = -1; }
        }
        if (cur >= 0) out.add(cur);
        return out;
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        Random r = new Random(42);
        Node tree = build(r, 14);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 20000; i++) sb.append(r.nextInt(100000)).append(' ');
        String text = sb.toString();
        long sum = 0;
        for (int k = 0; k < rounds; k++) {
            long[] env = { k, k + 1, k * 3, 7 };
            for (int j = 0; j < 20; j++) sum += tree.eval(env);
            for (long v : tokenize(text)) sum ^= v;
        }
        System.out.println("evals=" + inner(tree) * 20 * rounds);
        System.out.println("checksum=" + Long.toHexString(sum));
    }
}
