import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A stop file for a test program's main loop: the test makes the file once
 * the program's thread has had the CPU time the test needs (read from
 * /proc), instead of the program guessing how long to run on a loaded
 * machine. A daemon thread of this class polls the file every 20 ms, so
 * that the samples it takes are of no frame of the program's class.
 *
 *   StopFile.watch(args);            // "stop=<path>" among the args, or none
 *   while (... && !StopFile.stopped()) work();
 */
public final class StopFile {
    private static volatile boolean stopped;

    private StopFile() {}

    /** Starts watching the path of a "stop=<path>" argument; none: never stopped. */
    public static void watch(String[] args) {
        for (String a : args) {
            if (!a.startsWith("stop="))
                continue;
            Path path = Path.of(a.substring(5));
            Thread t = new Thread(() -> {
                try {
                    while (!Files.exists(path))
                        Thread.sleep(20);
                    stopped = true;
                } catch (InterruptedException e) {
                    // the JVM is ending
                }
            }, "stop-file");
            t.setDaemon(true);
            t.start();
        }
    }

    public static boolean stopped() {
        return stopped;
    }
}
