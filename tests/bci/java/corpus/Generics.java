package corpus;

import static corpus.Util.p;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Generic classes and methods (LocalVariableTypeTable entries with -g),
 * bounded type parameters, wildcards, and bridge methods (synthetic, and
 * rewritten like any other method).
 */
public final class Generics {
    private Generics() {}

    static final class Box<T extends Comparable<T>> implements Comparable<Box<T>> {
        final T v;

        Box(T v) {
            this.v = v;
        }

        @Override
        public int compareTo(Box<T> o) {           // plus a bridge compareTo(Object)
            return v.compareTo(o.v);
        }

        <R> R map(java.util.function.Function<? super T, ? extends R> f) {
            return f.apply(v);
        }

        @Override
        public String toString() {
            return "Box(" + v + ")";
        }
    }

    static <T extends Comparable<? super T>> T max(List<? extends T> xs) {
        T best = null;
        for (T x : xs)
            if (best == null || x.compareTo(best) > 0) best = x;
        return best;
    }

    static <K, V extends Number> Map<K, Double> scale(Map<K, V> m, double f) {
        Map<K, Double> r = new TreeMap<>();
        for (Map.Entry<K, V> e : m.entrySet()) r.put(e.getKey(), e.getValue().doubleValue() * f);
        return r;
    }

    static double total(List<? extends Number> xs) {
        double t = 0;
        for (Number n : xs) t += n.doubleValue();
        return t;
    }

    static void addAll(List<? super Integer> into, int n) {
        for (int i = 0; i < n; i++) into.add(i);
    }

    static void run() {
        List<Box<String>> boxes = new ArrayList<>();
        for (String s : new String[] { "pear", "apple", "fig" }) boxes.add(new Box<>(s));
        Collections.sort(boxes);
        p("boxes " + boxes + " max " + max(boxes) + " len " + boxes.get(0).map(String::length));
        List<Box<String>> rev = new ArrayList<>(boxes);
        rev.sort(Comparator.reverseOrder());
        p("rev " + rev);
        Map<String, Integer> m = new TreeMap<>();
        m.put("a", 1);
        m.put("b", 2);
        p("scale " + scale(m, 1.5));
        List<Number> nums = new ArrayList<>();
        addAll(nums, 5);
        nums.add(2.5);
        p("total " + total(nums));
        Comparable<Box<String>> c = boxes.get(1);
        @SuppressWarnings({ "rawtypes", "unchecked" })
        int viaBridge = ((Comparable) c).compareTo(boxes.get(2));
        p("bridge " + viaBridge);
    }
}
