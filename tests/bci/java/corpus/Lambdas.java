package corpus;

import static corpus.Util.p;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.IntBinaryOperator;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Lambdas (capturing and not, nested, throwing, recursive through a field),
 * method references (static, bound, unbound, constructor, array
 * constructor), streams calling back into the corpus from JDK code.
 */
public final class Lambdas {
    private Lambdas() {}

    static Function<Integer, Integer> fact;

    static {
        fact = n -> n <= 1 ? 1 : n * fact.apply(n - 1);
    }

    static int twice(int x) {
        return 2 * x;
    }

    static void run() {
        final int base = 7;
        IntBinaryOperator op = (a, b) -> a * base + b;
        p("op " + op.applyAsInt(3, 4));
        Function<Integer, Function<Integer, Integer>> curried = a -> b -> a - b + base;
        p("curried " + curried.apply(10).apply(3));
        p("fact " + fact.apply(10));
        Supplier<List<String>> sup = ArrayList::new;
        List<String> l = sup.get();
        l.add("x");
        l.add("yy");
        Function<String, Integer> len = String::length;
        BiFunction<String, Integer, Character> at = String::charAt;
        String s = "hello";
        Supplier<String> up = s::toUpperCase;
        Function<Integer, int[]> mk = int[]::new;
        p("refs " + len.apply("abcd") + " " + at.apply("abc", 1) + " " + up.get() + " " + mk.apply(5).length + " " + l);
        p("stream " + IntStream.range(0, 20).filter(i -> i % 3 != 0).map(Lambdas::twice).boxed()
            .collect(Collectors.toList()));
        TreeMap<Integer, List<String>> byLen = new TreeMap<>();
        for (String w : new String[] { "a", "bb", "cc", "ddd", "e" })
            byLen.computeIfAbsent(w.length(), k -> new ArrayList<>()).add(w);
        p("byLen " + byLen);
        Runnable r = () -> {
            throw new IllegalStateException("from lambda");
        };
        try {
            r.run();
        } catch (IllegalStateException e) {
            Util.trace("lambda", e);
        }
        int[] counter = { 0 };
        Runnable inc = () -> counter[0]++;
        for (int i = 0; i < 100; i++) inc.run();
        p("counter " + counter[0]);
    }
}
