package modern17;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Java 17 language features (compiled at --release 17 and later): records
 * (compact and explicit constructors, invokedynamic toString/equals/
 * hashCode), sealed interfaces, switch expressions with yield and arrows,
 * text blocks, pattern-matching instanceof, var, private interface methods,
 * local records/enums/interfaces, nestmate private access, indy string
 * concatenation.  Run by corpus.Main when present.
 */
public final class Main17 {
    private Main17() {}

    record Point(int x, int y) {
        Point {
            if (x < 0 || y < 0) throw new IllegalArgumentException("negative " + x + "," + y);
        }

        Point(int both) {
            this(both, both > 10 ? both / 2 : both);
        }

        int dist() {
            return Math.abs(x) + Math.abs(y);
        }
    }

    record Named<T>(String name, T value, long[] extra) {
        Named {
            Objects.requireNonNull(name);
            extra = extra == null ? new long[0] : extra.clone();
        }
    }

    sealed interface Shape permits Circle, Rect, Tri {}

    record Circle(double r) implements Shape {}

    record Rect(double w, double h) implements Shape {}

    static final class Tri implements Shape {
        final double b, h;

        Tri(double b, double h) {
            this.b = b;
            this.h = h;
        }
    }

    static double area(Shape s) {
        if (s instanceof Circle c) return Math.PI * c.r() * c.r();
        if (s instanceof Rect r && r.w() > 0) return r.w() * r.h();
        if (s instanceof Tri t) return t.b * t.h / 2;
        return 0;
    }

    static String kind(int d) {
        return switch (d % 7) {
            case 0, 6 -> "weekend";
            case 1 -> {
                String s = "mon";
                yield s + "day";
            }
            case 2, 3, 4 -> "mid";
            default -> {
                if (d < 0) yield "negative";
                yield "fri";
            }
        };
    }

    static int strSwitch(String s) {
        return switch (s) {
            case "a", "b" -> 1;
            case "Aa", "BB" -> s.charAt(0);
            default -> s.length();
        };
    }

    interface Greeter {
        private String prefix() {
            return "Hello, ";
        }

        default String greet(String n) {
            return prefix() + n;
        }
    }

    private int secret = 17;

    class Peer {
        int peek() {
            return secret * 2;      // nestmate access, no accessor
        }
    }

    public static void main(String[] args) {
        var pts = new ArrayList<Point>();
        for (int i = 0; i < 4; i++) pts.add(new Point(i, i * i));
        pts.add(new Point(20));
        System.out.println("points " + pts + " eq " + pts.get(1).equals(new Point(1, 1)) + " hash " + new Point(3, 4).hashCode());
        try {
            new Point(-1, 2);
        } catch (IllegalArgumentException e) {
            System.out.println("compact ctor: " + e.getMessage());
        }
        var n = new Named<>("n", List.of(1, 2), new long[] { 5 });
        System.out.println("named " + n.name() + " " + n.value() + " " + n.extra().length);
        Shape[] shapes = { new Circle(1), new Rect(2, 3), new Tri(4, 5), new Rect(-1, 2) };
        var sb = new StringBuilder();
        for (Shape s : shapes) sb.append(String.format("%.3f ", area(s)));
        System.out.println("areas " + sb);
        sb.setLength(0);
        for (int d = -1; d < 9; d++) sb.append(kind(d)).append(',');
        System.out.println("kinds " + sb);
        System.out.println("strSwitch " + strSwitch("a") + strSwitch("BB") + strSwitch("xyz"));
        String text = """
            text block line 1
              indented "quotes"
            end\
            """;
        System.out.println(text);
        System.out.println(new Greeter() {}.greet("records"));
        System.out.println("peer " + new Main17().new Peer().peek());
        record Local(String a, int b) {}
        enum LocalEnum { P, Q }
        interface LocalI { int f(); }
        LocalI li = () -> new Local("z", 3).b() + LocalEnum.Q.ordinal();
        System.out.println("locals " + new Local("x", 1) + " " + li.f());
        Object o = 42;
        String desc = o instanceof Integer i && i > 40 ? "big int " + i : "other";
        System.out.println(desc);
    }
}
