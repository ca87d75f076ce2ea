/**
 * A JVM to attach to (tests/test_attach_cli.py): prints "READY <pid>" on
 * stdout once main runs (so the JVM has finished starting, including its
 * signal handlers) and then sleeps for args[0] ms (default 20000), using no
 * CPU, so a test machine's two cores stay free for the tool under test.
 * Prints "AttachTarget: done" on stdout when it ends normally.
 */
public class AttachTarget {
    public static void main(String[] args) throws InterruptedException {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 20000;
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(ms);
        System.out.println("AttachTarget: done");
    }
}
