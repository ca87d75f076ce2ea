/* Class initializers under INSTRUCTION_START (issue 34, JCov). HotSpot posts
 * no JVMTI SingleStep while it resolves a call or a field, and a class first
 * used by an invokestatic or getstatic is initialized inside that resolution:
 * its <clinit>, and what that calls, ran unstepped. `new` initializes after
 * resolving: stepped. Truth (each <clinit> runs once, on main):
 *   ByCall.<clinit> (main's ByCall.get()): its loop condition (line "loop")
 *     evaluated 6 times, taken (leaving) once; seed(10) called once from it,
 *     its `x > 5` evaluated once, taken (to the else) never;
 *   ByField.<clinit> (main's ByField.value): pick(2) once, its switch's key 2
 *     once (tableswitch 1..2: keys 1, 2 and the default);
 *   ByNew.<clinit> (main's new ByNew()): its line run once.
 * Prints "clinit 102" (base 70 + value 11 + made 21). */
public class JvmpiClinitCoverage {
    static class ByCall {
        static int base;

        static {
            int s = 0;
            for (int i = 0; i < 5; i++) { // loop
                s += i;
            }
            base = seed(s);
        }

        static int seed(int x) {
            return x > 5 ? x * 7 : x; // seed
        }

        static int get() {
            return base;
        }
    }

    static class ByField {
        static int value = pick(2);

        static int pick(int k) {
            switch (k) { // pick
                case 1: return 10;
                case 2: return 11;
                default: return 0;
            }
        }
    }

    static class ByNew {
        static int made = 21; // made
        int own = made;
    }

    public static void main(String[] args) {
        int sum = ByCall.get() + ByField.value + new ByNew().own;
        System.out.println("clinit " + sum);
    }
}
