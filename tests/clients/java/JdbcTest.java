// pgjdbc (Debian's libpostgresql-jdbc-java) against a running Lakegres:
// Statement, PreparedStatement batches, executeUpdate counts, result set
// metadata, DatabaseMetaData (schemas, tables, columns with comments,
// primary keys, type info), OIDs stable across sessions,
// autocommit on and off.
// Run: java -cp /usr/share/java/postgresql.jar JdbcTest.java PORT
import java.sql.*;
import java.util.*;

public class JdbcTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
        System.out.println("ok - " + what);
    }

    // Backslashes, quotes and unicode round-trip unchanged (issue #60). The
    // server reads literals with Databricks' escapes and reports
    // standard_conforming_strings = off. pgjdbc's simple mode (42.5) puts
    // values into the text as if it were on, so such a connection turns it
    // on with its startup options, and reads literals as Postgres does.
    static void escapes(String url) throws Exception {
        String[] values = {"a\\b", "\\d+", "it's", "it\\'s", "say \"hi\"", "tab\there", "\u00e9\ud83d\ude00", "\\"};
        String[][] modes = {
            {"extended", "", "'(\\\\d+)'"},
            {"simple", "&preferQueryMode=simple&options=-c%20standard_conforming_strings=on", "'(\\d+)'"},
        };
        for (String[] mode : modes) {
            try (Connection c = DriverManager.getConnection(url + mode[1])) {
                try (Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS jdbc_esc");
                    s.execute("CREATE TABLE jdbc_esc (n INT, v STRING)");
                }
                try (PreparedStatement p = c.prepareStatement("INSERT INTO jdbc_esc VALUES (?, ?)")) {
                    for (int i = 0; i < values.length; i++) {
                        p.setInt(1, i);
                        p.setString(2, values[i]);
                        p.executeUpdate();
                    }
                }
                List<String> got = new ArrayList<>();
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT v FROM jdbc_esc ORDER BY n")) {
                    while (r.next()) got.add(r.getString(1));
                }
                check(got.equals(Arrays.asList(values)), mode[0] + ": parameters with backslashes and quotes round-trip: " + got);
                try (PreparedStatement p = c.prepareStatement("SELECT regexp_extract(?, " + mode[2] + ", 1)")) {
                    p.setString(1, "order 1234");
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        check("1234".equals(r.getString(1)), mode[0] + ": " + mode[2] + " is the regex (\\d+)");
                    }
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/lakegres?user=tester";
        escapes(url);
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jdbc_t");
                s.execute("CREATE TABLE jdbc_t (id INT COMMENT 'the key', name STRING, amount DECIMAL(10,2), ts TIMESTAMP) COMMENT 'jdbc rows'");
                int n = s.executeUpdate("INSERT INTO jdbc_t VALUES (1, 'a', 1.50, TIMESTAMP '2026-01-02 03:04:05')");
                check(n == 1, "executeUpdate returns the inserted count");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jdbc_t VALUES (?, ?, ?, ?)")) {
                for (int i = 2; i <= 4; i++) {
                    p.setInt(1, i);
                    p.setString(2, "n" + i);
                    p.setBigDecimal(3, new java.math.BigDecimal(i + ".25"));
                    p.setTimestamp(4, null);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(java.util.Arrays.equals(counts, new int[] {1, 1, 1}),
                        "a prepared batch of 3 counts one row each: " + java.util.Arrays.toString(counts));
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*) FROM jdbc_t")) {
                r.next();
                check(r.getLong(1) == 4, "the batch inserted its 3 rows");
            }
            // A NULL parameter selects nothing (issue #56): setNull in a
            // DELETE's condition and in a MERGE's ON change no row.
            try (PreparedStatement p = c.prepareStatement("DELETE FROM jdbc_t WHERE name = ?")) {
                p.setNull(1, Types.VARCHAR);
                check(p.executeUpdate() == 0, "DELETE … WHERE name = NULL deletes nothing");
            }
            try (PreparedStatement p = c.prepareStatement(
                    "MERGE INTO jdbc_t t USING (SELECT ? AS id) s ON t.id = s.id AND t.name = ? "
                            + "WHEN MATCHED THEN DELETE")) {
                p.setInt(1, 2);
                p.setNull(2, Types.VARCHAR);
                check(p.executeUpdate() == 0, "MERGE … ON t.name = NULL matches nothing");
                p.setString(2, "n2");
                check(p.executeUpdate() == 1, "MERGE … ON t.name = 'n2' deletes its row");
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*) FROM jdbc_t")) {
                r.next();
                check(r.getLong(1) == 3, "one row deleted by the MERGE, none by the NULLs");
                s.execute("INSERT INTO jdbc_t VALUES (2, 'n2', 2.25, NULL)");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT id, name, amount FROM jdbc_t WHERE id >= ? ORDER BY id")) {
                p.setInt(1, 3);
                try (ResultSet r = p.executeQuery()) {
                    ResultSetMetaData m = r.getMetaData();
                    check(m.getColumnCount() == 3 && m.getColumnName(2).equals("name"), "result set metadata");
                    check(m.getColumnType(1) == Types.INTEGER, "id is an INTEGER column");
                    List<String> names = new ArrayList<>();
                    while (r.next()) names.add(r.getInt(1) + ":" + r.getString(2) + ":" + r.getBigDecimal(3));
                    check(names.equals(List.of("3:n3:3.25", "4:n4:4.25")), "prepared query rows " + names);
                }
            }
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                try (ResultSet r = s.executeQuery("SELECT count(*) FROM jdbc_t")) {
                    r.next();
                    check(r.getLong(1) == 4, "a read with autocommit off");
                }
            }
            c.commit();
            // Autocommit off: a block, undone by rollback(), applied by
            // commit(); a failed statement aborts it (issue #59).
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jdbc_t (id, name) VALUES (?, ?)")) {
                p.setInt(1, 50);
                p.setString(2, "undone");
                p.executeUpdate();
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*) FROM jdbc_t")) {
                    r.next();
                    check(r.getLong(1) == 5, "the block reads its own INSERT");
                }
                c.rollback();
                p.setInt(1, 51);
                p.setString(2, "kept");
                p.executeUpdate();
                c.commit();
            }
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO jdbc_t (id, name) VALUES (52, 'lost')");
                boolean failed = false;
                try {
                    s.executeQuery("SELECT 1 / 0");
                } catch (java.sql.SQLException e) {
                    failed = "22012".equals(e.getSQLState());
                }
                check(failed, "1 / 0 fails with 22012");
                c.commit(); // of an aborted block: rolls back
                try (ResultSet r = s.executeQuery("SELECT count(*), count(CASE WHEN id = 51 THEN 1 END) FROM jdbc_t")) {
                    r.next();
                    check(r.getLong(1) == 5 && r.getLong(2) == 1, "rollback() undid 50, commit() kept 51, the aborted block lost 52");
                }
                c.commit();
            }
            c.setAutoCommit(true);

            DatabaseMetaData md = c.getMetaData();
            Set<String> schemas = new HashSet<>();
            try (ResultSet r = md.getSchemas()) { while (r.next()) schemas.add(r.getString("TABLE_SCHEM")); }
            check(schemas.contains("default"), "getSchemas lists default");
            // A view is listed as a VIEW, not as a TABLE.
            try (Statement s = c.createStatement()) {
                s.execute("CREATE OR REPLACE VIEW jdbc_v AS SELECT id FROM jdbc_t");
            }
            Set<String> tables = new HashSet<>();
            try (ResultSet r = md.getTables(null, "default", "%", new String[] {"TABLE"})) {
                while (r.next()) tables.add(r.getString("TABLE_NAME"));
            }
            check(tables.contains("jdbc_t"), "getTables lists jdbc_t");
            check(!tables.contains("jdbc_v"), "getTables TABLE leaves views out");
            Set<String> views = new HashSet<>();
            try (ResultSet r = md.getTables(null, "default", "%", new String[] {"VIEW"})) {
                while (r.next()) views.add(r.getString("TABLE_NAME") + ":" + r.getString("TABLE_TYPE"));
            }
            check(views.contains("jdbc_v:VIEW") && !views.contains("jdbc_t:VIEW"), "getTables VIEW " + views);
            List<String> columns = new ArrayList<>();
            try (ResultSet r = md.getColumns(null, "default", "jdbc_t", "%")) {
                while (r.next()) columns.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME"));
            }
            check(columns.size() == 4 && columns.get(0).startsWith("id:"), "getColumns " + columns);
            try (ResultSet r = md.getPrimaryKeys(null, "default", "jdbc_t")) {
                check(!r.next(), "getPrimaryKeys: none");
            }
            try (ResultSet r = md.getColumns(null, "default", "jdbc_t", "id")) {
                check(r.next() && "the key".equals(r.getString("REMARKS")), "getColumns REMARKS");
            }
            try (ResultSet r = md.getTables(null, "default", "jdbc_t", null)) {
                check(r.next() && "jdbc rows".equals(r.getString("REMARKS")), "getTables REMARKS");
            }
            Set<String> types = new HashSet<>();
            try (ResultSet r = md.getTypeInfo()) {
                while (r.next()) types.add(r.getString("TYPE_NAME"));
            }
            check(types.contains("int4") && types.contains("text") && types.contains("numeric"),
                    "getTypeInfo lists the base types");
            // The table's OID is the same in every session.
            int oid;
            try (Statement s = c.createStatement();
                    ResultSet r = s.executeQuery("SELECT oid FROM pg_class WHERE relname = 'jdbc_t'")) {
                check(r.next(), "jdbc_t in pg_class");
                oid = r.getInt(1);
            }
            try (Connection other = DriverManager.getConnection(url);
                    Statement s = other.createStatement();
                    ResultSet r = s.executeQuery("SELECT oid FROM pg_class WHERE relname = 'jdbc_t'")) {
                check(r.next() && r.getInt(1) == oid, "the OID of jdbc_t is the same in another session");
            }
        }
        System.out.println("all ok");
    }
}
