// Runs a little SQL on an in-memory HSQLDB and prints a checksum: run with
// the original and with the hprof-bci-rewritten hsqldb.jar, the output must
// be the same (tests/fuzz/check-hprof-bci.sh).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class HsqlCheck {
    public static void main(String[] args) throws Exception {
        long h = 0;
        try (Connection c = DriverManager.getConnection("jdbc:hsqldb:mem:bci", "SA", "");
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), v DOUBLE)");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO t VALUES (?, ?, ?)")) {
                for (int i = 0; i < 2000; i++) {
                    p.setInt(1, i);
                    p.setString(2, "n" + i % 17);
                    p.setDouble(3, i * 1.5);
                    p.addBatch();
                }
                p.executeBatch();
            }
            try (ResultSet r = s.executeQuery(
                    "SELECT name, COUNT(*), SUM(v) FROM t WHERE MOD(id, 3) <> 1 GROUP BY name ORDER BY name")) {
                while (r.next())
                    h = h * 31 + r.getString(1).hashCode() + r.getInt(2) + (long) r.getDouble(3);
            }
            try {
                s.execute("SELECT nope FROM t");        /* an exception through rewritten frames */
            } catch (SQLException e) {
                h += e.getErrorCode();
            }
            s.execute("SHUTDOWN");
        }
        System.out.println("HsqlCheck checksum " + h);
    }
}
