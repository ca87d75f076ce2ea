/**
 * A heap large enough that dumping it takes seconds: args[0] million small
 * objects (default 3) kept live in linked chunks, then waits, using no CPU,
 * for a tool to attach and dump: args[1] ms at most (default 20000), or
 * until the file args[2] exists. Prints "READY <pid>" on stdout once the
 * objects exist.
 */
public class BigHeap {
    static final class Node {
        long a, b;
        Node next;
    }

    static Object[] keep;

    public static void main(String[] args) throws InterruptedException {
        int millions = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        long ms = args.length > 1 ? Long.parseLong(args[1]) : 20000;
        keep = new Object[millions * 1000];
        for (int i = 0; i < keep.length; i++) {
            Node head = null;
            for (int k = 0; k < 1000; k++) {
                Node n = new Node();
                n.a = k;
                n.next = head;
                head = n;
            }
            keep[i] = head;
        }
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        java.io.File stop = args.length > 2 ? new java.io.File(args[2]) : null;
        long end = System.nanoTime() + ms * 1_000_000L;
        while (System.nanoTime() < end && (stop == null || !stop.exists()))
            Thread.sleep(100);
    }
}
