import java.util.function.Function;
import java.util.function.IntUnaryOperator;
import java.util.function.LongSupplier;

/**
 * CPU spent under several lambdas and a method reference, each a hidden
 * class whose name the JVM makes per run (Lambdas$$Lambda$14/0x... on
 * JDK 17, Lambdas$$Lambda/0x... on JDK 21+): frames named by those names
 * would differ between two runs of the same program.
 *
 *     java Lambdas [ms]    (default 2000)
 */
public class Lambdas {
    static volatile long sink;

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        IntUnaryOperator square = x -> spin(x, 1);
        IntUnaryOperator cube = x -> spin(x, 2);
        Function<Integer, Integer> boxed = x -> spin(x, 3);
        LongSupplier supplier = () -> spin(7, 4);
        IntUnaryOperator reference = Lambdas::twice;
        long end = System.nanoTime() + ms * 1_000_000L;
        while (System.nanoTime() < end)
            sink += square.applyAsInt(1) + cube.applyAsInt(2) + boxed.apply(3) + supplier.getAsLong()
                    + reference.applyAsInt(5);
    }

    static int spin(int x, int k) {
        int r = x;
        for (int i = 0; i < 20000; i++)
            r = r * 31 + i * k;
        return r;
    }

    static int twice(int x) {
        return spin(x, 5);
    }
}
