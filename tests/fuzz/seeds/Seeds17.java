// Java 17 seeds for the bci fuzzer: records, sealed types, switch
// expressions, pattern matching, text blocks, nest mates. main prints a
// checksum that must not change when the classes are instrumented.
import java.util.List;

public class Seeds17 {
    sealed interface Expr permits Num, Add, Mul, Neg {}
    record Num(long value) implements Expr {}
    record Add(Expr left, Expr right) implements Expr {}
    record Mul(Expr left, Expr right) implements Expr {}
    record Neg(Expr inner) implements Expr {
        Neg { if (inner == null) throw new IllegalArgumentException("null"); }
    }

    static long eval(Expr e) {
        if (e instanceof Num n) return n.value();
        if (e instanceof Add a) return eval(a.left()) + eval(a.right());
        if (e instanceof Mul m) return eval(m.left()) * eval(m.right());
        if (e instanceof Neg n) return -eval(n.inner());
        throw new AssertionError(e);
    }

    enum Day { MON, TUE, WED, THU, FRI, SAT, SUN }

    static int kind(Day d) {
        return switch (d) {
            case SAT, SUN -> 0;
            case FRI -> { int x = d.ordinal(); yield x * 2; }
            default -> 1;
        };
    }

    static String name(Object o) {
        return switch (o.hashCode() & 3) {
            case 0 -> "zero";
            case 1 -> { try { yield String.valueOf(Integer.parseInt(o.toString())); } catch (NumberFormatException e) { yield "nan"; } }
            default -> o instanceof String s && s.length() > 2 ? s.substring(0, 2) : "other";
        };
    }

    private int secret = 41;
    class Inner { int peek() { return ++secret; } }   /* private access via nest mates */

    static final String TEXT = """
        line one
          line two \
        continued
        """;

    public static void main(String[] args) {
        Expr e = new Add(new Num(3), new Mul(new Num(4), new Neg(new Num(5))));
        long sum = eval(e);
        for (Day d : Day.values()) sum = sum * 3 + kind(d);
        for (Object o : List.of("abc", 17, "12", 3.5, 'c', new int[0].length)) sum += name(o).length();
        Seeds17 s = new Seeds17();
        sum += s.new Inner().peek() + TEXT.length();
        try { new Neg(null); } catch (IllegalArgumentException ex) { sum += 1000; }
        var rec = new Num(9);
        sum += rec.hashCode() == new Num(9).hashCode() ? 1 : 0;
        sum += rec.toString().length();
        System.out.println("Seeds17 checksum " + sum);
    }
}
