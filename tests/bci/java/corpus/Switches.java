package corpus;

import static corpus.Util.p;

/**
 * tableswitch and lookupswitch at each of the 4 padding alignments (the code
 * before the switch is 1, 4, 7 or 10 bytes: iload_0 after nothing, iinc,
 * wide iinc, iinc + wide iinc), string switch, enum switch (a synthetic
 * $SwitchMap class whose <clinit> catches NoSuchFieldError), char switch,
 * negative ranges, default-only and one-case switches, nested switches.
 * tests/bci checks the alignments in the compiled classes.
 */
public final class Switches {
    private Switches() {}

    // ---- tableswitch, opcode at offset 1, 4, 7, 10 (mod 4: 1, 0, 3, 2)
    static int ts1(int x) {
        switch (x) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            case 3: return 13;
            case 4: return 14;
            default: return -1;
        }
    }

    static int ts4(int x) {
        x += 1;
        switch (x) {
            case 0: return 20;
            case 1: return 21;
            case 2: return 22;
            case 3: return 23;
            case 4: return 24;
            default: return -2;
        }
    }

    static int ts7(int x) {
        x += 1000;
        switch (x) {
            case 1000: return 30;
            case 1001: return 31;
            case 1002: return 32;
            case 1003: return 33;
            case 1004: return 34;
            default: return -3;
        }
    }

    static int ts10(int x) {
        x += 1;
        x += 1000;
        switch (x) {
            case 1001: return 40;
            case 1002: return 41;
            case 1003: return 42;
            case 1004: return 43;
            case 1005: return 44;
            default: return -4;
        }
    }

    // ---- lookupswitch, same alignments
    static int ls1(int x) {
        switch (x) {
            case -100000: return 1;
            case 7: return 2;
            case 1000: return 3;
            case 99999: return 4;
            default: return 0;
        }
    }

    static int ls4(int x) {
        x += 1;
        switch (x) {
            case -99999: return 11;
            case 8: return 12;
            case 1001: return 13;
            case 100000: return 14;
            default: return 10;
        }
    }

    static int ls7(int x) {
        x += 1000;
        switch (x) {
            case -99000: return 21;
            case 1007: return 22;
            case 2000: return 23;
            case 100999: return 24;
            default: return 20;
        }
    }

    static int ls10(int x) {
        x += 1;
        x += 1000;
        switch (x) {
            case -98999: return 31;
            case 1008: return 32;
            case 2001: return 33;
            case 101000: return 34;
            default: return 30;
        }
    }

    // Fall-through, breaks, a switch in a loop with continue, negative range.
    static int fall(int n) {
        int r = 0;
        for (int i = -3; i < n; i++) {
            switch (i) {
                case -3:
                    r += 1;
                case -2:
                    r += 2;
                    break;
                case -1:
                    continue;
                case 0:
                case 1:
                    r *= 3;
                    break;
                case 2:
                    if (r > 50) break;
                    r += 100;
                default:
                    r -= i;
            }
            r++;
        }
        return r;
    }

    static int defaultOnly(int x) {
        switch (x) {
            default:
                return x * 2;
        }
    }

    static int oneCase(int x) {
        switch (x) {
            case 42:
                return 1;
        }
        return 0;
    }

    static String chars(String s) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case 'a': case 'e': case 'i': case 'o': case 'u':
                    sb.append('V');
                    break;
                case ' ':
                    sb.append('_');
                    break;
                case '\u20ac':
                    sb.append('E');
                    break;
                default:
                    sb.append(c);
            }
        }
        return sb.toString();
    }

    static int strings(String s) {
        switch (s) {
            case "alpha": return 1;
            case "beta": return 2;
            case "gamma": return 3;
            case "Aa": return 4;     // "Aa" and "BB" have the same hashCode
            case "BB": return 5;
            case "": return 6;
            default: return 0;
        }
    }

    enum Color { RED, GREEN, BLUE, BLACK }

    static String colors(Color c) {
        switch (c) {
            case RED: return "r";
            case GREEN: return "g";
            case BLUE: return "b";
            default: return "?";
        }
    }

    static int nested(int a, int b) {
        switch (a) {
            case 0:
                switch (b) {
                    case 0: return 0;
                    case 1: return 1;
                    case 2: return 2;
                    default: return 3;
                }
            case 1:
                switch (b * 1000) {
                    case 0: return 10;
                    case 5000: return 15;
                    default: return 19;
                }
            default:
                return 99;
        }
    }

    // A switch whose position depends on the code before it, in an instance method.
    int base = 3;

    int inst(int x) {
        int y = base + x;
        switch (y % 6) {
            case 0: y += 1; break;
            case 1: y += 2; break;
            case 2: y -= 3; break;
            case 3: y *= 2; break;
            case 4: y /= 2; break;
            case 5: y = -y; break;
            default: y = 0;
        }
        return y;
    }

    static void run() {
        StringBuilder sb = new StringBuilder();
        for (int x = -2; x <= 6; x++)
            sb.append(ts1(x)).append(' ').append(ts4(x)).append(' ').append(ts7(x)).append(' ').append(ts10(x)).append(", ");
        p("tableswitch " + sb);
        sb.setLength(0);
        int[] keys = { -100000, -99999, -100001, 7, 8, 1000, 1001, 99999, 100000, 0, -99000, 1007, 2000, 100999, -98999, 1008, 2001, 101000, 6, 1006 };
        for (int k : keys)
            sb.append(ls1(k)).append(' ').append(ls4(k)).append(' ').append(ls7(k)).append(' ').append(ls10(k)).append(", ");
        p("lookupswitch " + sb);
        p("fall " + fall(5) + " " + fall(-3) + " " + fall(10));
        p("defaultOnly " + defaultOnly(21) + " oneCase " + oneCase(42) + oneCase(41));
        p("chars " + chars("a quiet euro \u20ac coin"));
        String[] ss = { "alpha", "beta", "gamma", "Aa", "BB", "", "delta", "AaAa" };
        sb.setLength(0);
        for (String s : ss) sb.append(strings(s));
        p("strings " + sb);
        sb.setLength(0);
        for (Color c : Color.values()) sb.append(colors(c));
        p("colors " + sb);
        sb.setLength(0);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 6; b++) sb.append(nested(a, b)).append(',');
        p("nested " + sb);
        Switches s = new Switches();
        sb.setLength(0);
        for (int x = 0; x < 8; x++) sb.append(s.inst(x)).append(',');
        p("inst " + sb);
    }
}
