import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * Runs many javac compilations in one JVM (the tests compile the corpus at
 * up to 18 --release levels, with and without -g: one javac process each
 * would cost a JVM start and a cold JIT every time).
 *
 *   java tests/bci/BciJavac.java JOBFILE
 *
 * JOBFILE: one compilation per line, arguments separated by tabs (exactly
 * javac's arguments).  Prints "OK <n>" or "FAIL <n> <rc>" per job (n counts
 * from 0), followed by javac's diagnostics indented by 4 spaces.  Exit code
 * 1 if any job failed.
 */
public class BciJavac {
    public static void main(String[] args) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        boolean failed = false;
        int n = 0;
        for (String line : lines) {
            if (line.trim().isEmpty()) continue;
            String[] a = line.split("\t");
            ByteArrayOutputStream diag = new ByteArrayOutputStream();
            int rc;
            try (PrintStream ps = new PrintStream(diag, true, "UTF-8")) {
                rc = javac.run(null, ps, ps, a);
            }
            String d = diag.toString("UTF-8").trim();
            System.out.println((rc == 0 ? "OK " + n : "FAIL " + n + " " + rc));
            if (!d.isEmpty()) System.out.println("    " + d.replace("\n", "\n    "));
            failed |= rc != 0;
            n++;
        }
        System.exit(failed ? 1 : 0);
    }
}
