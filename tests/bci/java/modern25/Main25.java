package modern25;

import java.util.List;

/**
 * Java 21..25 language features, compiled at --release 25 only: pattern
 * matching switch (typeSwitch invokedynamic, guards, exhaustive sealed
 * switches with MatchException paths), record patterns, unnamed variables,
 * and flexible constructor bodies (JEP 513: statements, including a
 * try/catch and a switch, before super(...), with `this` uninitialized; a
 * field assigned before super).  Run by corpus.Main when present.
 */
public final class Main25 {
    private Main25() {}

    sealed interface Expr permits Num, Add, Mul, Neg {}

    record Num(int v) implements Expr {}

    record Add(Expr l, Expr r) implements Expr {}

    record Mul(Expr l, Expr r) implements Expr {}

    record Neg(Expr e) implements Expr {}

    static int eval(Expr e) {
        return switch (e) {
            case Num n -> n.v();
            case Add(Num(var a), Num(var b)) -> a + b;
            case Add(var l, var r) -> eval(l) + eval(r);
            case Mul(Num(int z), var _) when z == 0 -> 0;
            case Mul(var l, var r) -> eval(l) * eval(r);
            case Neg(Neg(var inner)) -> eval(inner);
            case Neg(var x) -> -eval(x);
        };
    }

    static String describe(Object o) {
        return switch (o) {
            case null -> "null";
            case Integer i when i > 100 -> "big " + i;
            case Integer i -> "int " + i;
            case String s when s.isEmpty() -> "empty";
            case String s -> "str " + s.length();
            case int[] a -> "ints " + a.length;
            case List<?> l when l.size() > 2 -> "long list";
            case List<?> _ -> "list";
            default -> "other " + o.getClass().getSimpleName();
        };
    }

    static class Base {
        final String tag;

        Base(String tag) {
            this.tag = tag;
        }
    }

    static final class Flexible extends Base {
        final int checked;

        Flexible(String s) {
            int v;
            try {
                v = Integer.parseInt(s);
            } catch (NumberFormatException e) {
                v = -1;
            }
            String t = switch (v) {
                case -1 -> "bad";
                case 0 -> "zero";
                default -> v > 0 ? "pos" : "neg";
            };
            if (t.equals("neg")) throw new IllegalArgumentException("negative " + v);
            checked = v;            // field assigned before super (JEP 513)
            super(t + ":" + new int[Math.max(v, 0) % 5].length);
        }
    }

    public static void main(String[] args) {
        Expr e = new Add(new Mul(new Num(3), new Neg(new Num(4))), new Neg(new Neg(new Add(new Num(1), new Num(2)))));
        System.out.println("eval " + eval(e) + " " + eval(new Mul(new Num(0), new Num(9))));
        Object[] objs = { null, 5, 500, "", "abc", new int[3], List.of(1, 2, 3), List.of(), 2.5 };
        StringBuilder sb = new StringBuilder();
        for (Object o : objs) sb.append(describe(o)).append("; ");
        System.out.println("describe " + sb);
        for (String s : new String[] { "12", "x", "0", "-4" }) {
            try {
                Flexible f = new Flexible(s);
                System.out.println("flexible " + f.tag + " " + f.checked);
            } catch (IllegalArgumentException ex) {
                System.out.println("flexible threw " + ex.getMessage());
            }
        }
        int total = 0;
        for (var _ : List.of(1, 2, 3)) total++;
        System.out.println("unnamed " + total);
    }
}
