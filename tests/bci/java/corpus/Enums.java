package corpus;

import static corpus.Util.p;

import java.util.EnumMap;

/**
 * Enums: constructors with arguments, constant-specific bodies (abstract
 * methods), static fields initialised in <clinit>, values()/valueOf(),
 * switches over them, EnumMap.
 */
public final class Enums {
    private Enums() {}

    enum Op {
        ADD("+") {
            @Override
            int apply(int a, int b) {
                return a + b;
            }
        },
        SUB("-") {
            @Override
            int apply(int a, int b) {
                return a - b;
            }
        },
        MUL("*") {
            @Override
            int apply(int a, int b) {
                return a * b;
            }
        },
        DIV("/") {
            @Override
            int apply(int a, int b) {
                if (b == 0) throw new ArithmeticException("div by zero in enum");
                return a / b;
            }
        };

        final String sym;
        static final int COUNT;

        static {
            int c = 0;
            for (Op o : values()) c++;
            COUNT = c;
        }

        Op(String sym) {
            this.sym = sym;
        }

        abstract int apply(int a, int b);
    }

    enum Planet {
        MERCURY(3.303e+23, 2.4397e6), EARTH(5.976e+24, 6.37814e6);

        final double mass, radius;

        Planet(double mass, double radius) {
            this.mass = mass;
            this.radius = radius;
        }

        double gravity() {
            return 6.67300E-11 * mass / (radius * radius);
        }
    }

    static void run() {
        StringBuilder sb = new StringBuilder();
        for (Op o : Op.values()) {
            try {
                sb.append(o).append(o.sym).append(o.apply(12, 4)).append(o.apply(3, 0)).append(' ');
            } catch (ArithmeticException e) {
                sb.append("AE ");
            }
        }
        p("ops " + sb + "count " + Op.COUNT + " " + Op.valueOf("MUL").ordinal());
        EnumMap<Op, Integer> m = new EnumMap<>(Op.class);
        for (Op o : Op.values()) m.put(o, o.apply(100, 7));
        p("enummap " + m);
        for (Planet pl : Planet.values()) p(pl + " " + String.format("%.4f", pl.gravity()));
        try {
            Op.valueOf("MOD");
        } catch (IllegalArgumentException e) {
            p("valueOf failed");
        }
    }
}
