import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The demo application profiled by `make demo`: a small log-analysis job.
 *
 * A worker thread generates access-log lines, parses them with a regular
 * expression, aggregates bytes per path in a HashMap, sorts the result and
 * fingerprints each batch with SHA-256. Meanwhile two threads do what real
 * services do most of the time: one waits in a socket read for a client that
 * never sends, one sleeps between "health checks". They use no CPU, so a
 * truthful CPU profiler gives them no samples (old HPROF gave them most).
 */
public class Demo {
    static final Pattern LINE = Pattern.compile(
        "^(\\d+\\.\\d+\\.\\d+\\.\\d+) - - \\[[^\\]]+\\] \"(GET|POST) (\\S+) HTTP/1\\.1\" (\\d{3}) (\\d+)$");
    static final String[] PATHS = { "/", "/index.html", "/api/users", "/api/orders", "/static/app.js",
                                    "/static/style.css", "/login", "/logout", "/api/search" };
    static volatile long sink;

    static List<String> generate(Random r, int n) {
        List<String> lines = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            StringBuilder sb = new StringBuilder(96);
            sb.append(r.nextInt(256)).append('.').append(r.nextInt(256)).append('.')
              .append(r.nextInt(256)).append('.').append(r.nextInt(256))
              .append(" - - [21/Nov/2026:08:00:00 +0000] \"")
              .append(r.nextBoolean() ? "GET" : "POST").append(' ')
              .append(PATHS[r.nextInt(PATHS.length)]).append(" HTTP/1.1\" ")
              .append(r.nextInt(10) == 0 ? 404 : 200).append(' ').append(r.nextInt(50000));
            lines.add(sb.toString());
        }
        return lines;
    }

    static Map<String, Long> parse(List<String> lines) {
        Map<String, Long> bytesPerPath = new HashMap<>();
        for (String line : lines) {
            Matcher m = LINE.matcher(line);
            if (m.matches() && m.group(4).equals("200"))
                bytesPerPath.merge(m.group(3), Long.parseLong(m.group(5)), Long::sum);
        }
        return bytesPerPath;
    }

    static List<Map.Entry<String, Long>> rank(Map<String, Long> totals) {
        List<Map.Entry<String, Long>> entries = new ArrayList<>(totals.entrySet());
        entries.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
        return entries;
    }

    static byte[] fingerprint(List<String> lines) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (String line : lines)
            sha.update(line.getBytes(StandardCharsets.UTF_8));
        return sha.digest();
    }

    public static void main(String[] args) throws Exception {
        int batches = args.length > 0 ? Integer.parseInt(args[0]) : 40;

        // A client connection that never sends: its reader blocks in a native read.
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept();
        Thread reader = new Thread(() -> {
            try (InputStream in = accepted.getInputStream()) {
                in.read();
            } catch (IOException e) { /* closed at exit */ }
        }, "connection-reader");
        reader.setDaemon(true);
        reader.start();
        Thread health = new Thread(() -> {
            try { for (;;) Thread.sleep(500); } catch (InterruptedException e) { }
        }, "health-check");
        health.setDaemon(true);
        health.start();

        Random r = new Random(42);
        long t0 = System.nanoTime();
        List<Map.Entry<String, Long>> top = null;
        for (int b = 0; b < batches; b++) {
            List<String> lines = generate(r, 20000);
            top = rank(parse(lines));
            sink += fingerprint(lines)[0];
        }
        System.out.printf("analysed %d lines in %.1f s; busiest path: %s (%d bytes)%n",
                          batches * 20000, (System.nanoTime() - t0) / 1e9,
                          top.get(0).getKey(), top.get(0).getValue());
        client.close();
        server.close();
    }
}
