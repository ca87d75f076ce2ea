/**
 * Loads one class by name, says "LOADED <name>" on stderr, then waits, so
 * that an agent attached after it meets the class already loaded (and must
 * retransform it).
 *
 *     java LoadThenWait <class> [ms]    (default 3000)
 */
public class LoadThenWait {
    public static void main(String[] args) throws Exception {
        Class.forName(args[0]);
        System.err.println("PID " + ProcessHandle.current().pid());
        System.err.println("LOADED " + args[0]);
        System.err.flush();
        Thread.sleep(args.length > 1 ? Long.parseLong(args[1]) : 3000);
    }
}
