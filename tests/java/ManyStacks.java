/*
 * More distinct stacks than cpu=times' tracker keeps for one thread, with a
 * known call count for each: `prefix` nested calls of down(), then a binary
 * tree of `levels` calls of left()/right() chosen by the bits of i, for every
 * i below 2^levels. A tree call k levels below the root is entered
 * 2^(levels-k) times along each of its 2^k paths. With whole stacks (the
 * keys hold every frame, up to 256), 2^(levels+1) keys of ~prefix+levels
 * ids each are far beyond the tracker's 16M ids: the stacks seen after that
 * must not be counted as any other stack.
 */
public class ManyStacks {
    static long leaves;

    static void down(int prefix, int levels) {
        if (prefix > 0) { down(prefix - 1, levels); return; }
        for (int i = 0; i < (1 << levels); i++) left(levels, i);
    }

    static void left(int level, int bits) {
        if (level == 0) { leaves++; return; }
        if ((bits & 1) == 0) left(level - 1, bits >>> 1); else right(level - 1, bits >>> 1);
    }

    static void right(int level, int bits) {
        if (level == 0) { leaves++; return; }
        if ((bits & 1) == 0) left(level - 1, bits >>> 1); else right(level - 1, bits >>> 1);
    }

    public static void main(String[] args) {
        int prefix = Integer.parseInt(args[0]), levels = Integer.parseInt(args[1]);
        down(prefix, levels);
        System.err.println("TRUTH leaves=" + leaves);
    }
}
