package corpus;

import static corpus.Util.p;

import java.util.Iterator;

/**
 * Inner (non-static) classes, inner classes of inner classes, static nested
 * classes, local classes capturing variables, anonymous classes, and private
 * members used across the nest (synthetic accessors at --release 8 and 10,
 * nestmates from 11).
 */
public final class Nested {
    private int secret = 40;

    private int secret() {
        return secret + 2;
    }

    final class In {
        private int mine = 5;

        final class InIn {
            int sum() {
                return secret() + mine + secret;
            }
        }
    }

    static final class Counter implements Iterable<Integer> {
        private final int n;

        Counter(int n) {
            this.n = n;
        }

        @Override
        public Iterator<Integer> iterator() {
            return new Iterator<Integer>() {
                private int i;

                @Override
                public boolean hasNext() {
                    return i < n;
                }

                @Override
                public Integer next() {
                    return i++ * i;
                }
            };
        }
    }

    static int local(final int k) {
        class Acc {
            int total;

            void add(int v) {
                total += v * k;
            }
        }
        Acc a = new Acc();
        for (int i = 0; i < 5; i++) a.add(i);
        return a.total;
    }

    static void run() {
        Nested n = new Nested();
        Nested.In in = n.new In();
        Nested.In.InIn inin = in.new InIn();
        p("inin " + inin.sum());
        in.mine = 6;
        n.secret = 1;
        p("inin " + inin.sum());
        StringBuilder sb = new StringBuilder();
        for (int v : new Counter(6)) sb.append(v).append(' ');
        p("counter " + sb);
        p("local " + local(3));
    }
}
