// pgjdbc over TLS (verify-full against the test's certificate) with a
// SCRAM-SHA-256 login, and a wrong password refused with 28P01.
// Run: java -cp /usr/share/java/postgresql.jar JdbcTlsTest.java PORT CERT USER PASSWORD
import java.sql.*;

public class JdbcTlsTest {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://localhost:" + args[0] + "/lakegres?sslmode=verify-full&sslrootcert=" + args[1];
        try (Connection c = DriverManager.getConnection(url, args[2], args[3]);
                Statement s = c.createStatement();
                ResultSet r = s.executeQuery("SELECT 6 * 7")) {
            r.next();
            if (r.getInt(1) != 42) throw new AssertionError("SELECT over TLS");
        }
        try {
            DriverManager.getConnection(url, args[2], args[3] + "x").close();
            throw new AssertionError("a wrong password logged in");
        } catch (SQLException e) {
            if (!"28P01".equals(e.getSQLState())) throw new AssertionError("SQLSTATE " + e.getSQLState());
        }
        System.out.println("all ok");
    }
}
