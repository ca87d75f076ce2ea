import java.lang.reflect.Constructor;

/**
 * heap=sites truth: allocates known numbers of objects at known sites and
 * keeps a known number alive, then prints the truth on stderr as
 * "TRUTH <class> <allocated> <live>" lines. Every site is its own method, so
 * its trace is known.
 *
 *   Small          100,000 by `new`, every 4th kept: 25,000 live
 *   int[]          50,000 `new int[16]` dropped, plus 7 kept (int[100])
 *   long[][]       3,000 `new long[2][3]` kept: also 6,000 long[] inside
 *   Refl           1,000 by Constructor.newInstance (reflection), 10 kept
 *   Copy           500 by clone() (the VM allocates those itself), all kept,
 *                  and the one they are cloned from, dead at exit
 *   AllocTruth$$Lambda  a capturing lambda made 2,000 times in makeLambda
 *                  (through method handles and Unsafe.allocateInstance), 20
 *                  kept; its class's name is printed as the JVM names it
 *
 * argv[0] = "wait": then wait for a line on stdin before exiting (so a test
 * can take a dump first); default: exit at once.
 */
public class AllocTruth {
    static final class Small { int a, b; Small(int a) { this.a = a; this.b = -a; } }
    static final class Refl { long v; public Refl() { v = 42; } }
    static final class Copy implements Cloneable {
        int x;
        Copy(int x) { this.x = x; }
        Copy copy() { try { return (Copy) clone(); } catch (CloneNotSupportedException e) { throw new AssertionError(e); } }
    }

    static Small[] keptSmall = new Small[25_000];
    static int[][] keptInts = new int[7][];
    static long[][][] keptGrids = new long[3_000][][];
    static Refl[] keptRefl = new Refl[10];
    static Copy[] keptCopies = new Copy[500];
    static long sink;
    static volatile int[] lastDropped;

    static Small makeSmall(int i) { return new Small(i); }
    static int[] makeInts() { return new int[16]; }
    static int[] makeBigInts() { return new int[100]; }
    static long[][] makeGrid() { return new long[2][3]; }
    static Copy makeOriginal() { return new Copy(7); }
    static Runnable makeLambda(int i) { return () -> sink += i; }
    static Runnable[] keptLambdas = new Runnable[20];
    static volatile Runnable lastLambda;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 100_000; i++) {
            Small s = makeSmall(i);
            if (i % 4 == 0) keptSmall[i / 4] = s;
            sink += s.a;
        }
        // Stored where other code could see it, so that the JIT cannot leave
        // the allocation out (escape analysis): sampling sees real allocations.
        for (int i = 0; i < 50_000; i++) { lastDropped = makeInts(); sink += lastDropped.length; }
        lastDropped = null;
        for (int i = 0; i < 7; i++) keptInts[i] = makeBigInts();
        for (int i = 0; i < 3_000; i++) keptGrids[i] = makeGrid();
        Constructor<Refl> ctor = Refl.class.getConstructor();
        for (int i = 0; i < 1_000; i++) {
            Refl r = ctor.newInstance();
            if (i < 10) keptRefl[i] = r;
        }
        for (int i = 0; i < 2_000; i++) {
            Runnable l = makeLambda(i);
            if (i < 20) keptLambdas[i] = l;
            lastLambda = l;
        }
        lastLambda = null;
        Copy original = makeOriginal();
        for (int i = 0; i < 500; i++) keptCopies[i] = original.copy();
        System.gc();
        // TRUTH <class> <a frame every trace of these objects has> <allocated> <live at exit>
        System.err.println("TRUTH AllocTruth$Small AllocTruth.makeSmall 100000 25000");
        System.err.println("TRUTH int[] AllocTruth.makeInts 50000 0");
        System.err.println("TRUTH int[] AllocTruth.makeBigInts 7 7");
        System.err.println("TRUTH long[][] AllocTruth.makeGrid 3000 3000");
        System.err.println("TRUTH long[] AllocTruth.makeGrid 6000 6000");
        System.err.println("TRUTH AllocTruth$Refl AllocTruth.main 1000 10");
        System.err.println("TRUTH AllocTruth$Copy AllocTruth$Copy.copy 500 500");
        System.err.println("TRUTH " + keptLambdas[0].getClass().getName() + " AllocTruth.makeLambda 2000 20");
        // main's local is dead once main returns, when the exit dump is taken
        System.err.println("TRUTH AllocTruth$Copy AllocTruth.makeOriginal 1 0");
        if (args.length > 0 && args[0].equals("wait")) {
            System.out.println("READY " + ProcessHandle.current().pid());
            System.out.flush();
            System.in.read();
        }
        if (sink == 1) System.out.println();
    }
}
