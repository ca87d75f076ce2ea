import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU work in phases the test switches while the program runs, for attach
 * and run-time control tests: phase A runs only alpha(), phase B only
 * beta(), each a pure CPU loop on the main thread, so a profile of a time
 * window must name exactly the phase that ran in it. The phase is read
 * from the file <dir>/phase ("A", "B", or "end") every 20 ms; the program
 * announces each phase it enters on stderr ("Phases: entering B") and
 * ends at "end" or after <max seconds>.
 * Also a few idle threads started before any agent, which must not get
 * CPU samples (they sleep). stdout: exactly "Phases: done" at the end.
 * args: <dir> [max seconds, default 60]
 */
public class Phases {
    static volatile long sink;

    static long alpha(long x) {
        for (int i = 0; i < 50_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 31;
        }
        return x;
    }

    static long beta(long x) {
        for (int i = 0; i < 50_000; i++) {
            x = x * 2862933555777941757L + 3037000493L;
            x ^= x >>> 27;
        }
        return x;
    }

    static String phase(Path file, String current) {
        try {
            String s = Files.readString(file).trim();
            return s.isEmpty() ? current : s;
        } catch (Exception e) {
            return current;
        }
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0], "phase");
        long max = args.length > 1 ? Long.parseLong(args[1]) : 60;
        for (int i = 0; i < 3; i++) {
            Thread t = new Thread(() -> {
                try { Thread.sleep(max * 1000); } catch (InterruptedException e) { }
            }, "idle-" + i);
            t.setDaemon(true);
            t.start();
        }
        System.err.println("PID " + ProcessHandle.current().pid());
        long deadline = System.nanoTime() + max * 1_000_000_000L;
        String current = "";
        long x = 1, nextCheck = 0;
        while (System.nanoTime() < deadline) {
            long now = System.nanoTime();
            if (now >= nextCheck) {
                String p = phase(file, current);
                if (!p.equals(current)) {
                    current = p;
                    System.err.println("Phases: entering " + current);
                }
                nextCheck = now + 20_000_000L;
            }
            if (current.equals("end")) break;
            x = current.equals("B") ? beta(x) : alpha(x);
        }
        sink = x;
        System.out.println("Phases: done");
    }
}
