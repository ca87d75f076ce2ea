import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CpuSplit's work under a main class of its own, ended by the test: runs
 * CpuSplit.main(args[1..]) and exits (status 0) as soon as the file args[0]
 * exists, so the test need not wait on a loaded machine for the rest of a
 * CPU budget chosen to outlast it. Its own name keeps `hprof profile
 * CpuSplitUntil` (by main class) from finding another test's CpuSplit.
 * args: <stop file> [CpuSplit's args]
 */
public class CpuSplitUntil {
    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[0]);
        Thread watcher = new Thread(() -> {
            try {
                while (!Files.exists(stop))
                    Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            }
            System.exit(0);
        }, "stop-watcher");
        watcher.setDaemon(true);
        watcher.start();
        CpuSplit.main(java.util.Arrays.copyOfRange(args, 1, args.length));
    }
}
