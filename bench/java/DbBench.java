import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Contended embedded-database benchmark doing a FIXED amount of work (not a
 * fixed time), so that profiler overhead shows up as extra CPU / wall time.
 * Plain JDBC, so it runs against any embedded database on the class path
 * (bench/run uses H2 or HSQLDB from Debian packages, in-memory).
 *
 * Usage: java -cp <db.jar>:<classes> DbBench url threads tx rows hotRows hotPct [initSql...]
 *
 *  - table ACCOUNTS (rows rows) and an empty table HISTORY;
 *  - each of `threads` threads runs `tx` transactions (autocommit off), mixed:
 *      45 %  read:     4 point selects of random rows
 *      35 %  deposit:  update one row (a hot row with probability hotPct %,
 *                      the hot rows being ids 0..hotRows-1) + insert a HISTORY row
 *      20 %  transfer: update two rows (one hot with probability hotPct %),
 *                      in id order so that they cannot deadlock
 *    A transaction that fails (lock timeout, serialization failure) is rolled
 *    back and retried with the same parameters until it commits.
 *  - prints a checksum over the final state (sum of balances, a sum weighted
 *    by row id, HISTORY count and sum), which depends only on (threads, tx, rows, hotRows, hotPct) since
 *    every transaction commits exactly once.
 *  - extra arguments are SQL statements run once before the table is created
 *    (e.g. to choose the database's transaction model).
 */
public final class DbBench {

    static final AtomicLong RETRIES = new AtomicLong();
    static final AtomicLong SELECTS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: DbBench url threads tx rows hotRows hotPct [initSql...]");
            System.exit(2);
        }
        final String url = args[0];
        final int threads = Integer.parseInt(args[1]);
        final int tx = Integer.parseInt(args[2]);
        final int rows = Integer.parseInt(args[3]);
        final int hotRows = Integer.parseInt(args[4]);
        final int hotPct = Integer.parseInt(args[5]);

        // Keep this connection open for the whole run: an in-memory database
        // disappears when its last connection closes.
        Connection admin = DriverManager.getConnection(url, "SA", "");
        try (Statement st = admin.createStatement()) {
            for (int i = 6; i < args.length; i++)
                st.execute(args[i]);
            st.execute("CREATE TABLE ACCOUNTS (ID INT PRIMARY KEY, BALANCE BIGINT NOT NULL, NAME VARCHAR(40))");
            st.execute("CREATE TABLE HISTORY (ID BIGINT PRIMARY KEY, ACCT INT NOT NULL, DELTA INT NOT NULL, NOTE VARCHAR(40))");
        }
        admin.setAutoCommit(false);
        try (PreparedStatement ps = admin.prepareStatement("INSERT INTO ACCOUNTS VALUES (?, ?, ?)")) {
            for (int i = 0; i < rows; i++) {
                ps.setInt(1, i);
                ps.setLong(2, 1000);
                ps.setString(3, "account-" + i);
                ps.addBatch();
                if (i % 1000 == 999 || i == rows - 1)
                    ps.executeBatch();
            }
        }
        admin.commit();

        long t0 = System.nanoTime();
        final CountDownLatch start = new CountDownLatch(1);
        final Throwable[] failure = new Throwable[1];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                    worker(url, id, tx, rows, hotRows, hotPct);
                } catch (Throwable e) {
                    synchronized (failure) {
                        if (failure[0] == null)
                            failure[0] = e;
                    }
                }
            }, "db-worker-" + t);
            workers[t].start();
        }
        start.countDown();
        for (Thread w : workers)
            w.join();
        double elapsed = (System.nanoTime() - t0) / 1e9;
        if (failure[0] != null) {
            failure[0].printStackTrace();
            System.exit(1);
        }

        long sum, wsum, hcount, hsum;
        try (Statement st = admin.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT SUM(BALANCE), SUM(BALANCE * MOD(ID, 97)) FROM ACCOUNTS")) {
                rs.next();
                sum = rs.getLong(1);
                wsum = rs.getLong(2);
            }
            try (ResultSet rs = st.executeQuery("SELECT COUNT(*), SUM(DELTA) FROM HISTORY")) {
                rs.next();
                hcount = rs.getLong(1);
                hsum = rs.getLong(2);
            }
        }
        admin.commit();
        admin.close();
        long checksum = sum * 1_000_003L ^ wsum * 0x9e3779b97f4a7c15L ^ hcount * 7919L ^ hsum;
        String db = url.replaceFirst("^jdbc:([a-z0-9]+):.*$", "$1");
        System.out.printf("DbBench db=%s threads=%d tx=%d rows=%d hot=%d/%d%% checksum=%016x "
                          + "balance=%d history=%d retries=%d elapsed=%.2fs tx/s=%.0f%n",
                          db, threads, tx, rows, hotRows, hotPct, checksum, sum, hcount,
                          RETRIES.get(), elapsed, threads * (double) tx / elapsed);
    }

    static int pick(SplittableRandom r, int rows, int hotRows, int hotPct) {
        return r.nextInt(100) < hotPct ? r.nextInt(hotRows) : r.nextInt(rows);
    }

    static void worker(String url, int id, int tx, int rows, int hotRows, int hotPct) throws Exception {
        SplittableRandom r = new SplittableRandom(0x5eedL * 31 + id);
        try (Connection c = DriverManager.getConnection(url, "SA", "")) {
            c.setAutoCommit(false);
            PreparedStatement sel = c.prepareStatement("SELECT BALANCE, NAME FROM ACCOUNTS WHERE ID = ?");
            PreparedStatement upd = c.prepareStatement("UPDATE ACCOUNTS SET BALANCE = BALANCE + ? WHERE ID = ?");
            PreparedStatement ins = c.prepareStatement("INSERT INTO HISTORY VALUES (?, ?, ?, ?)");
            long seq = 0;
            int[] ids = new int[4];
            for (int i = 0; i < tx; i++) {
                int kind = r.nextInt(100);
                int a, b = 0, delta = 1 + r.nextInt(100);
                if (kind < 45) {
                    for (int k = 0; k < 4; k++)
                        ids[k] = r.nextInt(rows);
                    a = -1;
                } else if (kind < 80) {
                    a = pick(r, rows, hotRows, hotPct);
                } else {
                    a = pick(r, rows, hotRows, hotPct);
                    b = r.nextInt(rows);
                    if (b == a)
                        b = (a + 1) % rows;
                }
                long hid = ((long) id << 40) | seq++;
                for (;;) {
                    try {
                        if (kind < 45) {
                            long s = 0;
                            for (int k = 0; k < 4; k++) {
                                sel.setInt(1, ids[k]);
                                try (ResultSet rs = sel.executeQuery()) {
                                    if (rs.next())
                                        s += rs.getLong(1) + rs.getString(2).length();
                                }
                            }
                            if (s == 42)
                                SELECTS.incrementAndGet();
                        } else if (kind < 80) {
                            upd.setInt(1, delta);
                            upd.setInt(2, a);
                            upd.executeUpdate();
                            ins.setLong(1, hid);
                            ins.setInt(2, a);
                            ins.setInt(3, delta);
                            ins.setString(4, "deposit " + i);
                            ins.executeUpdate();
                        } else {
                            int lo = Math.min(a, b), hi = Math.max(a, b);
                            upd.setInt(1, lo == a ? -delta : delta);
                            upd.setInt(2, lo);
                            upd.executeUpdate();
                            upd.setInt(1, hi == a ? -delta : delta);
                            upd.setInt(2, hi);
                            upd.executeUpdate();
                        }
                        c.commit();
                        break;
                    } catch (SQLException e) {
                        RETRIES.incrementAndGet();
                        try {
                            c.rollback();
                        } catch (SQLException ignored) {
                        }
                        if (RETRIES.get() > 10L * tx * 8)
                            throw e;
                    }
                }
            }
        }
    }
}
