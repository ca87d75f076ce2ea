import java.io.File;

import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;

/**
 * Retained sizes as VisualVM's heap library (jfluid-heap, Debian's visualvm
 * package) computes them, for tests/heap_analyze_tests.py to compare with
 * `hprof heap --json` and for bench/heapanalyze to time. One line each:
 *   class NAME COUNT SHALLOW RETAINED     (JavaClass.getRetainedSizeByClass)
 *   object CLASS ID SIZE RETAINED         (each instance of the classes named)
 *
 * Usage: java -cp <jfluid-heap.jar>:<classes> VisualVmRetained DUMP [CLASS...]
 */
public class VisualVmRetained {
    public static void main(String[] args) throws Exception {
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        for (JavaClass c : heap.getAllClasses()) {
            if (c.getInstancesCount() == 0)
                continue;
            System.out.println("class " + c.getName() + " " + c.getInstancesCount() + " "
                               + c.getAllInstancesSize() + " " + c.getRetainedSizeByClass());
        }
        for (int i = 1; i < args.length; i++) {
            JavaClass c = heap.getJavaClassByName(args[i]);
            if (c == null)
                continue;
            for (Instance o : c.getInstances())
                System.out.println("object " + args[i] + " 0x" + Long.toHexString(o.getInstanceId()) + " "
                                   + o.getSize() + " " + o.getRetainedSize());
        }
    }
}
