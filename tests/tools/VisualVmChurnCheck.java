import java.io.File;

import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;

/**
 * Opens a binary heap dump of tests/java/ClassChurn.java with VisualVM's own
 * heap reader (jfluid-heap) and prints what it sees of the carriers, for
 * tests/heap_tests.py: "carriers N whole M", N the non-null elements of
 * ClassChurn.carriers, M those that are ClassChurn$Carrier instances with
 * mark 0x5EED and self the instance itself.
 *
 * Usage: java -cp <jfluid-heap.jar>:<classes> VisualVmChurnCheck DUMP
 */
public class VisualVmChurnCheck {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        JavaClass main = heap.getJavaClassByName("ClassChurn");
        ObjectArrayInstance carriers = (ObjectArrayInstance) main.getValueOfStaticField("carriers");
        int n = 0, whole = 0;
        for (Object o : carriers.getValues()) {
            if (o == null)
                continue;
            n++;
            Instance i = (Instance) o;
            Object self = i.getValueOfField("self");
            if (i.getJavaClass().getName().equals("ClassChurn$Carrier") && self instanceof Instance
                    && ((Instance) self).getInstanceId() == i.getInstanceId()
                    && Integer.valueOf(0x5EED).equals(i.getValueOfField("mark")))
                whole++;
        }
        System.out.println("carriers " + n + " whole " + whole);
    }
}
