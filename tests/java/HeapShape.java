import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A heap of known shape, for checking heap dumps exactly
 * (tests/heap_dump_check.py checks a dump of it with tests/hprof_reader.py).
 *
 * Everything below is deterministic, so a checker can compare values:
 *
 *   HeapShape.keep     Node[12345]; keep[i] is Node #i, and these are the only
 *                      HeapShape$Node instances in the program.
 *   Node #i            id = i, big = i * 1000000007L, d = i * 0.5 (exact),
 *                      flag = (i % 3 == 0), next = Node #(i+1) (null for the
 *                      last one: a linked list in keep order),
 *                      name = "node-" + i for even i, null for odd i,
 *                      extra = {this, null, Node.class} (an Object[3]) when
 *                      i % 1000 == 0 (13 of them), null otherwise.
 *   HeapShape.ints     int[777][], each an int[10] with ints[k][j] = k*10 + j;
 *                      these 777 arrays are referenced from nowhere else.
 *   HeapShape.leaves   Base[3] holding 3 HeapShape$Leaf (extends HeapShape$Base,
 *                      which has its own fields, one of them shadowed in Leaf):
 *                      Leaf #k: Base.baseId = 100+k, Base.baseName = "base-"+k,
 *                      Base.shadow = 11*k, Leaf.leafId = 200+k,
 *                      Leaf.shadow = -(11*k) - 1, Leaf.leafD = k + 0.25,
 *                      Leaf.prev = Leaf #(k-1) (null for k = 0).
 *   static fields of HeapShape of every primitive type (see below; not final,
 *   so they are real fields and not compile-time constants), sNull = null and
 *   sString = "heap-shape".
 *
 * Usage: java HeapShape [go-file [max seconds, default 600]]
 * Builds the heap, prints "READY <pid>" on stdout, then waits: until go-file
 * exists when given (polling every 20 ms), else until a line or EOF on stdin;
 * then prints "DONE <checksum>" and exits 0.  Exits 3 if the wait times out,
 * so a lost test cannot leave it running forever.
 */
public class HeapShape {
    static final int NODES = 12345;
    static final int INT_ARRAYS = 777;
    static final int INT_ARRAY_LEN = 10;
    static final int LEAVES = 3;

    static class Base {
        int baseId;
        String baseName;
        long shadow;
    }

    static final class Leaf extends Base {
        int leafId;
        long shadow;            // hides Base.shadow: both are in the instance
        double leafD;
        Leaf prev;
    }

    static final class Node {
        int id;
        long big;
        double d;
        boolean flag;
        Node next;
        String name;
        Object[] extra;
    }

    // One static of every primitive type, with values that are easy to get
    // wrong (sign, width, byte order, NaN-free but not small).
    static boolean sBoolean = true;
    static byte sByte = -123;
    static char sChar = '\u20ac';
    static short sShort = -12345;
    static int sInt = -123456789;
    static long sLong = -1234567890123456789L;
    static float sFloat = 3.25f;
    static double sDouble = -6.02214076e23;
    static Object sNull = null;
    static String sString = "heap-shape";

    static Node[] keep;
    static int[][] ints;
    static Base[] leaves;

    static void build() {
        keep = new Node[NODES];
        for (int i = 0; i < NODES; i++) {
            Node n = new Node();
            n.id = i;
            n.big = i * 1000000007L;
            n.d = i * 0.5;
            n.flag = (i % 3 == 0);
            n.name = (i % 2 == 0) ? "node-" + i : null;
            if (i % 1000 == 0) {
                n.extra = new Object[] {n, null, Node.class};
            }
            keep[i] = n;
        }
        for (int i = 0; i + 1 < NODES; i++) {
            keep[i].next = keep[i + 1];
        }
        ints = new int[INT_ARRAYS][];
        for (int k = 0; k < INT_ARRAYS; k++) {
            int[] a = new int[INT_ARRAY_LEN];
            for (int j = 0; j < INT_ARRAY_LEN; j++) {
                a[j] = k * 10 + j;
            }
            ints[k] = a;
        }
        leaves = new Base[LEAVES];
        Leaf prev = null;
        for (int k = 0; k < LEAVES; k++) {
            Leaf l = new Leaf();
            l.baseId = 100 + k;
            l.baseName = "base-" + k;
            ((Base) l).shadow = 11L * k;
            l.leafId = 200 + k;
            l.shadow = -(11L * k) - 1;
            l.leafD = k + 0.25;
            l.prev = prev;
            leaves[k] = l;
            prev = l;
        }
    }

    /** Uses every kept object, so nothing can be optimised away before the end. */
    static long checksum() {
        long s = 0;
        for (Node n = keep[0]; n != null; n = n.next) {
            s += n.id + n.big + (long) n.d + (n.flag ? 1 : 0)
                    + (n.name == null ? 0 : n.name.length()) + (n.extra == null ? 0 : n.extra.length);
        }
        for (int[] a : ints) {
            for (int v : a) {
                s += v;
            }
        }
        for (Base b : leaves) {
            Leaf l = (Leaf) b;
            s += l.baseId + l.baseName.length() + ((Base) l).shadow + l.leafId + l.shadow + (long) l.leafD;
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        build();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        if (args.length > 0) {
            Path go = Paths.get(args[0]);
            long maxMs = 1000L * (args.length > 1 ? Long.parseLong(args[1]) : 600);
            long deadline = System.nanoTime() + maxMs * 1000000L;
            while (!Files.exists(go)) {
                if (System.nanoTime() - deadline > 0) {
                    System.out.println("TIMEOUT waiting for " + go);
                    System.exit(3);
                }
                Thread.sleep(20);
            }
        } else {
            int c;
            do {
                c = System.in.read();
            } while (c >= 0 && c != '\n');
        }
        System.out.println("DONE " + checksum());
    }
}
