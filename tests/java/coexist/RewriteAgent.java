import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;

/**
 * A second class-rewriting agent for tests/test_coexist.py: a -javaagent
 * whose ClassFileTransformer rewrites the class named by its argument,
 * replacing every constant-pool string that starts with FROM by TO + the rest
 * (entries change length, so the whole constant pool is rebuilt). On
 * TimesTruth it turns main's "TRUTH hot=..." line into "TRUTH javaagent=1
 * hot=...": the program's output shows the rewrite took effect.
 * Prints "RewriteAgent: rewrote N constants of CLASS" on stderr.
 */
public class RewriteAgent implements ClassFileTransformer {
    static final String FROM = "TRUTH hot=";
    static final String TO = "TRUTH javaagent=1 hot=";
    private final String target;

    RewriteAgent(String target) { this.target = target; }

    public static void premain(String args, Instrumentation inst) {
        inst.addTransformer(new RewriteAgent(args == null ? "TimesTruth" : args));
    }

    @Override
    public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain pd, byte[] bytes) {
        if (!target.equals(name))
            return null;
        try {
            return rewrite(bytes);
        } catch (IOException | RuntimeException e) {
            System.err.println("RewriteAgent: cannot rewrite " + name + ": " + e);
            return null;
        }
    }

    static byte[] rewrite(byte[] bytes) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        ByteArrayOutputStream buf = new ByteArrayOutputStream(bytes.length + 64);
        DataOutputStream out = new DataOutputStream(buf);
        out.writeInt(in.readInt());            // magic
        out.writeInt(in.readInt());            // minor, major
        int count = in.readUnsignedShort();
        out.writeShort(count);
        int rewritten = 0;
        for (int i = 1; i < count; i++) {
            int tag = in.readUnsignedByte();
            out.writeByte(tag);
            switch (tag) {
                case 1: {                          // Utf8
                    String s = in.readUTF();
                    if (s.startsWith(FROM)) {
                        s = TO + s.substring(FROM.length());
                        rewritten++;
                    }
                    out.writeUTF(s);
                    break;
                }
                case 7: case 8: case 16: case 19: case 20:
                    out.writeShort(in.readUnsignedShort());
                    break;
                case 15:
                    out.writeByte(in.readUnsignedByte());
                    out.writeShort(in.readUnsignedShort());
                    break;
                case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18:
                    out.writeInt(in.readInt());
                    break;
                case 5: case 6:                    // Long, Double: two slots
                    out.writeLong(in.readLong());
                    i++;
                    break;
                default:
                    throw new IOException("constant pool tag " + tag + " at entry " + i);
            }
        }
        in.transferTo(out);                        // the rest refers to entries by index only
        out.flush();
        System.err.println("RewriteAgent: rewrote " + rewritten + " constants");
        return buf.toByteArray();
    }
}
