package corpus;

import static corpus.Util.p;

/**
 * Interfaces with default and static methods, default methods calling
 * abstract ones, diamond inheritance resolved with X.super.m(), interface
 * constants initialised by code (interface <clinit>), functional interfaces.
 */
public final class Ifaces {
    private Ifaces() {}

    interface Shape {
        int[] TABLE = make();       // interface <clinit>

        static int[] make() {
            int[] t = new int[4];
            for (int i = 0; i < t.length; i++) t[i] = i * i;
            return t;
        }

        double area();

        default String describe() {
            return name() + " area " + Math.round(area() * 100) / 100.0;
        }

        default String name() {
            return "shape";
        }

        static Shape unit() {
            return () -> 1.0;
        }
    }

    interface Named {
        default String name() {
            return "named";
        }
    }

    static final class Square implements Shape, Named {
        final double s;

        Square(double s) {
            this.s = s;
        }

        @Override
        public double area() {
            return s * s;
        }

        @Override
        public String name() {
            return Shape.super.name() + "+" + Named.super.name();
        }
    }

    @FunctionalInterface
    interface TriFunc<A, B, C, R> {
        R apply(A a, B b, C c);

        default TriFunc<A, B, C, String> str() {
            return (a, b, c) -> String.valueOf(apply(a, b, c));
        }
    }

    static void run() {
        p(new Square(1.5).describe());
        p(Shape.unit().describe());
        p("table " + Shape.TABLE[3]);
        TriFunc<Integer, Integer, Integer, Integer> f = (a, b, c) -> a * b + c;
        p("tri " + f.str().apply(3, 4, 5));
    }
}
