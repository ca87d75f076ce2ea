import java.net.URI;
import java.nio.file.*;
import java.util.*;
import java.util.stream.*;

/**
 * Loads and links every class of the running JDK's modules (jrt:/), so that
 * with -Xverify:all each one is verified. Linking without initializing:
 * Class.forName(name, false, ...) loads, getDeclaredMethods() links (and so
 * verifies). Prints `LOADED n VERIFY_ERRORS n OTHER_ERRORS n` and each
 * VerifyError. Arguments: a module-name prefix filter (optional).
 */
public class LoadAllClasses {
    public static void main(String[] args) throws Exception {
        String prefix = args.length > 0 ? args[0] : "";
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<String[]> classes = new ArrayList<>();
        try (Stream<Path> mods = Files.list(jrt.getPath("/modules"))) {
            for (Path mod : (Iterable<Path>) mods::iterator) {
                String m = mod.getFileName().toString();
                if (!m.startsWith(prefix)) continue;
                try (Stream<Path> files = Files.walk(mod)) {
                    files.filter(p -> p.toString().endsWith(".class")).forEach(p -> {
                        String rel = mod.relativize(p).toString();
                        if (rel.equals("module-info.class") || rel.endsWith("/package-info.class")) return;
                        classes.add(new String[] { m, rel.substring(0, rel.length() - 6).replace('/', '.') });
                    });
                }
            }
        }
        ModuleLayer boot = ModuleLayer.boot();
        ClassLoader app = ClassLoader.getSystemClassLoader();
        int loaded = 0, verifyErrors = 0, other = 0;
        for (String[] c : classes) {
            ClassLoader loader = boot.findModule(c[0]).map(Module::getClassLoader).orElse(app);
            try {
                Class<?> k = Class.forName(c[1], false, loader);
                k.getDeclaredMethods();
                loaded++;
            } catch (VerifyError e) {
                verifyErrors++;
                System.err.println("VERIFY_ERROR " + c[1] + ": " + e.getMessage());
            } catch (Throwable e) {
                other++;
            }
        }
        System.err.println("LOADED " + loaded + " VERIFY_ERRORS " + verifyErrors + " OTHER_ERRORS " + other
                           + " OF " + classes.size());
    }
}
