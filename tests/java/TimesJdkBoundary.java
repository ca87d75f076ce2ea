import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * cpu=times with jdk=boundary (times_jdk_boundary): the program calls the
 * JDK, which calls more of the JDK and, for a sort, the program back.
 * parseBad: Integer.parseInt on bad input, 1,000 times (each throws from
 * inside the JDK, through JDK frames, caught here); sortAll: 20 sorts of
 * 2,000 Integers with a Comparator of ours (which calls Integer.compare);
 * formatAll: String.format 2,000 times.
 *
 * Truth (stderr): "TJ parses=1000 sorts=20 compares=C formats=2000", then
 * "TimesJdkBoundary: done".
 */
public class TimesJdkBoundary {
    static long compares;
    static volatile int sink;

    static final class ByValue implements Comparator<Integer> {
        public int compare(Integer a, Integer b) {
            compares++;
            return Integer.compare(a, b);
        }
    }

    static int parseBad(int n) {
        int failed = 0;
        for (int i = 0; i < n; i++) {
            try {
                sink += Integer.parseInt("x" + i);
            } catch (NumberFormatException e) {
                failed++;
            }
        }
        return failed;
    }

    static void sortAll(int sorts) {
        Random r = new Random(42);
        for (int s = 0; s < sorts; s++) {
            List<Integer> l = new ArrayList<>();
            for (int i = 0; i < 2000; i++)
                l.add(r.nextInt(1_000_000));
            Collections.sort(l, new ByValue());
            sink += l.get(0);
        }
    }

    static void formatAll(int n) {
        for (int i = 0; i < n; i++)
            sink += String.format("%d-%s", i, "x").length();
    }

    public static void main(String[] args) {
        int parses = parseBad(1000);
        sortAll(20);
        formatAll(2000);
        System.err.println("TJ parses=" + parses + " sorts=20 compares=" + compares + " formats=2000");
        System.err.println("TimesJdkBoundary: done");
    }
}
