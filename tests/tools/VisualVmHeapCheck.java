import java.io.File;
import java.util.List;

import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

/**
 * Opens a binary heap dump with VisualVM's own heap reader (the jfluid-heap
 * library of Debian's visualvm package) and prints what it sees of
 * tests/java/HeapShape.java's heap, one "key value" per line, for
 * tests/heap_tests.py to compare with what HeapShape documents.
 *
 * Usage: java -cp <jfluid-heap.jar>:<classes> VisualVmHeapCheck DUMP
 */
public class VisualVmHeapCheck {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        System.out.println("classes " + heap.getAllClasses().size());
        System.out.println("live_instances " + heap.getSummary().getTotalLiveInstances());
        System.out.println("gc_roots " + heap.getGCRoots().size());
        for (String name : new String[] {"HeapShape$Node", "HeapShape$Leaf", "HeapShape"}) {
            JavaClass c = heap.getJavaClassByName(name);
            System.out.println("count " + name + " " + (c == null ? -1 : c.getInstancesCount()));
        }
        JavaClass shape = heap.getJavaClassByName("HeapShape");
        for (String field : new String[] {"sInt", "sLong", "sShort", "sByte", "sBoolean", "sDouble"})
            System.out.println("static " + field + " " + shape.getValueOfStaticField(field));
        Instance s = (Instance) shape.getValueOfStaticField("sString");
        System.out.println("static sString " + stringOf(s));
        // Walk the Node chain from keep[0] through `next`, checking ids.
        JavaClass node = heap.getJavaClassByName("HeapShape$Node");
        int chain = 0, badIds = 0;
        Instance first = null;
        for (Instance i : node.getInstances())
            if (((Number) i.getValueOfField("id")).intValue() == 0)
                first = i;
        for (Instance i = first; i != null; i = (Instance) i.getValueOfField("next")) {
            if (((Number) i.getValueOfField("id")).intValue() != chain)
                badIds++;
            chain++;
        }
        System.out.println("node_chain " + chain + " bad_ids " + badIds);
        int intArrays = 0;
        JavaClass ints = heap.getJavaClassByName("int[]");
        for (Instance i : ints.getInstances()) {
            PrimitiveArrayInstance a = (PrimitiveArrayInstance) i;
            List<String> v = a.getValues();
            if (v.size() == 10 && Integer.parseInt(v.get(1)) == Integer.parseInt(v.get(0)) + 1
                && Integer.parseInt(v.get(0)) % 10 == 0)
                intArrays++;
        }
        System.out.println("int10_arrays_in_sequence " + intArrays);
    }

    /** The characters of a java.lang.String instance (byte[] value, Latin-1 or UTF-16). */
    static String stringOf(Instance s) {
        if (s == null)
            return "null";
        Object value = s.getValueOfField("value");
        if (!(value instanceof PrimitiveArrayInstance))
            return "?";
        StringBuilder b = new StringBuilder();
        for (String x : ((PrimitiveArrayInstance) value).getValues())
            b.append((char) Integer.parseInt(x));
        return b.toString();
    }
}
