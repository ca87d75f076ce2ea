import java.io.File;
import java.io.FileOutputStream;

/**
 * CPU spent in the kernel on behalf of Java code: the main thread writes
 * 4 MiB files over and over (write(2) into the page cache, then close),
 * for the native_kernel test (sampler=perf: kernel frames on top of
 * FileOutputStream.writeBytes' native frames).
 *
 * args: milliseconds to run (default 2000).
 */
public class SysWrite {
    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        File file = File.createTempFile("syswrite", ".bin");
        file.deleteOnExit();
        byte[] buf = new byte[1 << 16];
        long end = System.nanoTime() + millis * 1_000_000L, written = 0;
        while (System.nanoTime() < end) {
            try (FileOutputStream out = new FileOutputStream(file)) {
                for (int i = 0; i < 64; i++)
                    out.write(buf);
            }
            written += file.length();
        }
        file.delete();
        System.err.println("WRITTEN " + written);
    }
}
