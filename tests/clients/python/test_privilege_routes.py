"""Privileges on every route (issue #57): ownership of tables and views,
the folders a LOCATION may take, VACUUM beside a nested table, metadata
that would show what a user may not read, and the limits that keep one
statement from taking the server down. alice owns `secret.salaries`; bob
may create in `bob` and `shared` and holds no grant on alice's objects."""

import threading
import time

import deltalake
import psycopg
import pytest

from test_privileges import connect, server_on, sqlstate


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("routes")
    team = folder / "ingest" / "team"
    team.mkdir(parents=True)
    with server_on(folder, "routes") as port:
        with connect(port, "admin") as admin:
            for schema in ["secret", "bob", "shared"]:
                admin.execute(f"CREATE SCHEMA {schema}")
            admin.execute("GRANT CREATE ON SCHEMA secret TO alice")
            admin.execute("GRANT CREATE ON SCHEMA shared TO alice")
            admin.execute("GRANT CREATE ON SCHEMA bob TO bob")
            admin.execute("GRANT CREATE ON SCHEMA shared TO bob")
        with connect(port, "alice") as alice:
            alice.execute("CREATE TABLE secret.salaries (id INT, salary INT)")
            alice.execute("INSERT INTO secret.salaries VALUES (1, 100), (2, 200)")
            alice.execute(f"CREATE TABLE secret.ext_salaries (id INT, salary INT) LOCATION '{team / 'ext'}'")
            alice.execute("INSERT INTO secret.ext_salaries VALUES (1, 100), (2, 200)")
            alice.execute("CREATE TABLE shared.alice_notes (x INT)")
            alice.execute("CREATE VIEW shared.alice_view AS SELECT id FROM secret.salaries")
        yield folder, port


def test_ownership_of_tables_and_views(server):
    folder, port = server
    with connect(port, "admin") as admin, connect(port, "alice") as alice, \
            connect(port, "bob") as bob, connect(port, "carol") as carol:
        admin.execute("GRANT SELECT ON VIEW shared.alice_view TO carol")
        # IF NOT EXISTS on alice's table grants bob nothing.
        bob.execute("CREATE TABLE IF NOT EXISTS shared.alice_notes (x INT)")
        assert sqlstate(bob, "SELECT * FROM shared.alice_notes") == "42501"
        assert sqlstate(bob, "INSERT INTO shared.alice_notes VALUES (1)") == "42501"
        bob.execute("CREATE VIEW IF NOT EXISTS shared.alice_view AS SELECT 1 AS id")
        assert sqlstate(bob, "SELECT * FROM shared.alice_view") == "42501"
        # Replacing, altering and dropping need ownership, CREATE in the
        # schema is not enough.
        for sql in [
            "CREATE OR REPLACE VIEW shared.alice_view AS SELECT 42 AS id",
            "ALTER VIEW shared.alice_view AS SELECT 42 AS id",
            "ALTER VIEW shared.alice_view RENAME TO shared.bobs",
            "ALTER VIEW shared.alice_view SET TBLPROPERTIES ('k' = 'v')",
            "DROP VIEW shared.alice_view",
            "DROP VIEW IF EXISTS shared.alice_view",
            "CREATE OR REPLACE TABLE shared.alice_notes (x INT)",
            "ALTER TABLE shared.alice_notes ADD COLUMNS (y INT)",
            "DROP TABLE shared.alice_notes",
            "DROP VIEW secret.nothing_here_but_no_create",
        ]:
            expected = "42P01" if "nothing_here" in sql else "42501"
            assert (sql, sqlstate(bob, sql)) == (sql, expected)
        # A grant to read is not ownership either.
        admin.execute("GRANT SELECT, MODIFY ON TABLE shared.alice_notes TO bob")
        assert sqlstate(bob, "DROP TABLE shared.alice_notes") == "42501"
        assert sqlstate(bob, "ALTER TABLE shared.alice_notes SET TBLPROPERTIES ('k' = 'v')") == "42501"
        bob.execute("INSERT INTO shared.alice_notes VALUES (1)")
        admin.execute("REVOKE SELECT, MODIFY ON TABLE shared.alice_notes FROM bob")
        # carol's grant still serves alice's view, as alice wrote it.
        assert carol.execute("SELECT id FROM shared.alice_view ORDER BY id").fetchall() == [(1,), (2,)]
        # The owner may; so may an admin.
        alice.execute("CREATE OR REPLACE VIEW shared.alice_view AS SELECT id FROM secret.salaries WHERE id = 1")
        assert carol.execute("SELECT id FROM shared.alice_view").fetchall() == [(1,)]
        alice.execute("ALTER TABLE shared.alice_notes ADD COLUMNS (y INT)")
        # bob's own objects are his to replace and drop.
        bob.execute("CREATE VIEW bob.v AS SELECT 1 AS one")
        bob.execute("CREATE OR REPLACE VIEW bob.v AS SELECT 2 AS two")
        bob.execute("DROP VIEW bob.v")


def test_dropping_a_temporary_view_keeps_the_grants_on_a_table_of_its_name(server):
    folder, port = server
    with connect(port, "admin") as admin, connect(port, "bob") as bob, connect(port, "carol") as carol:
        admin.execute("GRANT SELECT ON TABLE secret.salaries TO carol")
        bob.execute("CREATE TEMPORARY VIEW salaries AS SELECT 1 AS id")
        bob.execute("USE secret")
        bob.execute("DROP VIEW salaries")
        assert sqlstate(bob, "DROP VIEW salaries") == "42501"
        bob.execute("DROP VIEW IF EXISTS bob.never_was")
        assert carol.execute("SELECT count(*) FROM secret.salaries").fetchone() == (2,)
        assert admin.execute("SHOW GRANTS ON TABLE secret.salaries").fetchall().count(
            ("carol", "SELECT", "TABLE", "secret.salaries")) == 1


def test_a_new_object_of_an_old_name_inherits_no_grant(server):
    """Grants belong to an object: whatever removed the old one (here its
    folder deleted by hand, which no DROP saw), a new table or view of that
    name starts with its creator's grants only; a rename takes the grants
    along and leaves none behind."""
    import shutil

    folder, port = server
    with connect(port, "admin") as admin, connect(port, "alice") as alice, \
            connect(port, "carol") as carol:
        alice.execute("CREATE TABLE shared.fleeting (x INT)")
        alice.execute("INSERT INTO shared.fleeting VALUES (1)")
        admin.execute("GRANT SELECT ON TABLE shared.fleeting TO carol")
        assert carol.execute("SELECT x FROM shared.fleeting").fetchall() == [(1,)]
        shutil.rmtree(folder / "w" / "shared" / "fleeting")
        admin.execute("CREATE TABLE shared.fleeting (x INT)")
        admin.execute("INSERT INTO shared.fleeting VALUES (7)")
        assert sqlstate(carol, "SELECT x FROM shared.fleeting") == "42501"
        assert [g for g in admin.execute("SHOW GRANTS ON TABLE shared.fleeting").fetchall()
                if g[2] == "TABLE"] == []
        # A rename moves the grants with the object, onto a name whose old
        # grants are gone with its old object.
        admin.execute("GRANT SELECT ON TABLE shared.fleeting TO carol")
        admin.execute("ALTER TABLE shared.fleeting RENAME TO shared.lasting")
        assert carol.execute("SELECT x FROM shared.lasting").fetchall() == [(7,)]
        alice.execute("CREATE VIEW shared.fleeting AS SELECT 1 AS x")
        assert sqlstate(carol, "SELECT x FROM shared.fleeting") == "42501"


def test_a_location_belongs_to_one_table(server):
    folder, port = server
    team = folder / "ingest" / "team"
    with connect(port, "admin") as admin, connect(port, "bob") as bob, connect(port, "alice") as alice:
        # Another table's folder, a folder inside it, a folder above it, a
        # folder above the warehouse.
        for location in [team / "ext", team / "ext" / "inner", team, folder]:
            sql = f"CREATE TABLE bob.steal (id INT, salary INT) LOCATION '{location}'"
            assert (str(location), sqlstate(bob, sql)) == (str(location), "42501")
        assert sqlstate(bob, f"CREATE TABLE bob.steal LOCATION '{team / 'ext'}'") == "42501"
        assert sqlstate(bob, f"CREATE TABLE bob.steal SHALLOW CLONE bob.nothing LOCATION '{team}'") in ("42501", "42P01")
        # Even an admin may not nest one table in another's folder.
        assert sqlstate(admin, f"CREATE TABLE bob.nested (x INT) LOCATION '{team / 'ext' / 'inner'}'") == "42501"
        # A second name for alice's table needs alice's SELECT and MODIFY.
        admin.execute("GRANT SELECT ON TABLE secret.ext_salaries TO bob")
        assert sqlstate(bob, f"CREATE TABLE bob.steal LOCATION '{team / 'ext'}'") == "42501"
        admin.execute("GRANT MODIFY ON TABLE secret.ext_salaries TO bob")
        bob.execute(f"CREATE TABLE bob.alias LOCATION '{team / 'ext'}'")
        assert bob.execute("SELECT count(*) FROM bob.alias").fetchone() == (2,)
        bob.execute("DROP TABLE bob.alias")
        admin.execute("REVOKE SELECT, MODIFY ON TABLE secret.ext_salaries FROM bob")
        # A folder of its own, beside the others, is bob's to take.
        bob.execute(f"CREATE TABLE bob.own_ext (x INT) LOCATION '{team / 'bobs'}'")
        bob.execute("INSERT INTO bob.own_ext VALUES (1)")
        # A Delta table no table names: registering it is for admins.
        bob.execute("DROP TABLE bob.own_ext")
        assert sqlstate(bob, f"CREATE TABLE bob.own_ext LOCATION '{team / 'bobs'}'") == "42501"
        admin.execute(f"CREATE TABLE bob.own_ext LOCATION '{team / 'bobs'}'")
        assert admin.execute("SELECT x FROM bob.own_ext").fetchall() == [(1,)]
        assert alice.execute("SELECT count(*) FROM secret.ext_salaries").fetchone() == (2,)


def test_vacuum_never_deletes_a_nested_tables_files(server):
    """A Delta table in a folder below another table's (registered before
    the LOCATION checks, or written there by another engine) keeps its
    files whatever the outer table's VACUUM retention."""
    folder, port = server
    outer = folder / "ingest" / "outer"
    with connect(port, "admin") as admin:
        admin.execute(f"CREATE TABLE shared.inner_t (id INT) LOCATION '{outer / 'inner'}'")
        admin.execute("INSERT INTO shared.inner_t VALUES (1), (2), (3)")
        admin.execute("DROP TABLE shared.inner_t")  # forgets the name, keeps the files
        admin.execute(f"CREATE TABLE shared.outer_t (id INT) LOCATION '{outer}'")
        admin.execute("INSERT INTO shared.outer_t VALUES (10)")
        admin.execute("INSERT OVERWRITE shared.outer_t VALUES (11)")
        inner_files = sorted(p.relative_to(outer) for p in (outer / "inner").rglob("*") if p.is_file())
        assert any(p.parts[1] == "_delta_log" for p in inner_files)
        admin.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
        listed = [r[0] for r in admin.execute("VACUUM shared.outer_t RETAIN 0 HOURS DRY RUN").fetchall()]
        assert len(listed) == 1 and "/inner/" not in listed[0], listed
        admin.execute("VACUUM shared.outer_t RETAIN 0 HOURS")
        assert sorted(p.relative_to(outer) for p in (outer / "inner").rglob("*") if p.is_file()) == inner_files
        assert admin.execute("SELECT id FROM shared.outer_t").fetchall() == [(11,)]
        # The nested table reads whole.
        assert deltalake.DeltaTable(str(outer / "inner")).to_pyarrow_table().num_rows == 3


def test_locations_and_nested_vacuum_on_s3(moto, tmp_path):
    """The same rules on an object store, with a partitioned outer table: a
    LOCATION inside, above or at another table's folder is refused; VACUUM
    of the outer table keeps a nested table's files in a partition folder."""
    from test_security import start

    keys = lambda prefix: sorted(o["Key"] for o in moto.client.list_objects_v2(
        Bucket=moto.bucket, Prefix=prefix).get("Contents", []))
    base = f"s3://{moto.bucket}/ingest/routes"
    proc, port, log = start(moto.config(tmp_path, "s3routes", '[auth]\nadmins = ["admin"]\n'))
    try:
        assert port, "".join(log)
        with connect(port, "admin") as admin, connect(port, "bob") as bob:
            admin.execute("CREATE SCHEMA IF NOT EXISTS bob")
            admin.execute("GRANT CREATE ON SCHEMA bob TO bob")
            admin.execute(f"CREATE TABLE bob.alices (id INT) LOCATION '{base}/team/ext'")
            for location in [f"{base}/team/ext", f"{base}/team/ext/inner", f"{base}/team", base]:
                sql = f"CREATE TABLE bob.steal (id INT) LOCATION '{location}'"
                assert (location, sqlstate(bob, sql)) == (location, "42501")
            assert sqlstate(admin, f"CREATE TABLE bob.nested (x INT) LOCATION '{base}/team/ext/inner'") == "42501"
            bob.execute(f"CREATE TABLE bob.own (x INT) LOCATION '{base}/team/bobs'")
            bob.execute("INSERT INTO bob.own VALUES (1)")
            assert bob.execute("SELECT x FROM bob.own").fetchall() == [(1,)]

            outer = f"{base}/outer"
            admin.execute(f"CREATE TABLE bob.inner_t (id INT) LOCATION '{outer}/p=1/inner'")
            admin.execute("INSERT INTO bob.inner_t VALUES (1), (2), (3)")
            admin.execute("DROP TABLE bob.inner_t")
            admin.execute(f"CREATE TABLE bob.outer_t (id INT, p INT) PARTITIONED BY (p) LOCATION '{outer}'")
            admin.execute("INSERT INTO bob.outer_t VALUES (10, 1), (20, 2)")
            admin.execute("INSERT OVERWRITE bob.outer_t VALUES (11, 1), (21, 2)")
            inner = keys("ingest/routes/outer/p=1/inner/")
            assert any("/_delta_log/" in k for k in inner)
            admin.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
            listed = [r[0] for r in admin.execute("VACUUM bob.outer_t RETAIN 0 HOURS DRY RUN").fetchall()]
            assert len(listed) == 2 and not any("/inner/" in f for f in listed), listed
            admin.execute("VACUUM bob.outer_t RETAIN 0 HOURS")
            assert keys("ingest/routes/outer/p=1/inner/") == inner
            assert admin.execute("SELECT id, p FROM bob.outer_t ORDER BY id").fetchall() == [(11, 1), (21, 2)]
            nested = deltalake.DeltaTable(f"{outer}/p=1/inner", storage_options=moto.storage_options)
            assert nested.to_pyarrow_table().num_rows == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_no_values_through_metadata(server):
    folder, port = server
    with connect(port, "admin") as admin, connect(port, "alice") as alice, \
            connect(port, "bob") as bob, connect(port, "carol") as carol:
        # Time travel: the privilege error comes before the version check.
        assert sqlstate(bob, "SELECT * FROM secret.salaries VERSION AS OF 9999") == "42501"
        assert sqlstate(bob, "SELECT * FROM secret.salaries VERSION AS OF 1") == "42501"
        assert sqlstate(bob, "SELECT * FROM secret.salaries TIMESTAMP AS OF '2000-01-01'") == "42501"
        assert sqlstate(bob, "DESCRIBE HISTORY secret.salaries") == "42501"
        assert sqlstate(admin, "SELECT * FROM secret.salaries VERSION AS OF 9999") == "22003"
        # Internal names are not SQL's.
        assert sqlstate(bob, 'SELECT * FROM lakegres_time_travel."secret.salaries@0"') == "42P01"
        assert sqlstate(admin, 'SELECT * FROM lakegres_time_travel."secret.salaries@0"') == "42P01"
        # Other users' statements show as in Postgres; one's own as sent.
        alice.execute("SELECT 'alice-literal-42' AS x")
        rows = bob.execute("SELECT usename, query FROM pg_stat_activity WHERE usename IN ('alice', 'bob')").fetchall()
        assert ("alice", "<insufficient privilege>") in rows, rows
        assert not any("alice-literal-42" in (q or "") for _, q in rows), rows
        assert any(u == "bob" and "pg_stat_activity" in q for u, q in rows), rows
        seen = admin.execute("SELECT query FROM pg_stat_activity WHERE usename = 'alice'").fetchall()
        assert any("alice-literal-42" in q for (q,) in seen), seen
        # EXPLAIN of a view whose tables the reader may not read.
        admin.execute("GRANT SELECT ON VIEW shared.alice_view TO dave")
        with connect(port, "dave") as dave:
            assert dave.execute("SELECT count(*) FROM shared.alice_view").fetchone()[0] >= 1
            for explain in ["EXPLAIN", "EXPLAIN VERBOSE", "EXPLAIN ANALYZE"]:
                assert sqlstate(dave, f"{explain} SELECT * FROM shared.alice_view") == "42501"
        assert alice.execute("EXPLAIN VERBOSE SELECT * FROM shared.alice_view").fetchall()


def ping_while(port, work):
    """Runs `work` on another connection while this one times `SELECT 1`:
    the slowest answer, in seconds."""
    done = threading.Event()
    result = {}

    def run():
        try:
            work()
        finally:
            done.set()

    worker = threading.Thread(target=run)
    slowest = 0.0
    with connect(port, "carol") as other:
        worker.start()
        while not done.is_set():
            started = time.monotonic()
            assert other.execute("SELECT 1").fetchone() == (1,)
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.02)
    worker.join()
    return slowest, result


@pytest.mark.parametrize("sql,expected", [
    ("SELECT 1 AS x " + " ".join(f"UNION ALL SELECT {i}" for i in range(5000)), "54001"),
    ("SELECT 1 AS x " + " ".join(f"UNION ALL SELECT {i}" for i in range(100000)), "54001"),
    ("SELECT count(*) FROM range(1) t0 "
     + " ".join(f"JOIN range(1) t{i} ON t{i}.id = t{i - 1}.id" for i in range(1, 1000)), "54001"),
    ("WITH " + ", ".join(f"c{i} AS (SELECT {'1 AS x' if i == 0 else f'x FROM c{i - 1}'})" for i in range(10000))
     + " SELECT * FROM c9999", "54001"),
    ("SELECT " + "+".join(["1"] * 5000), "54001"),
    ("SELECT length(repeat('x', 1500000000))", "54000"),
    ("SELECT size(sequence(1, 300000000))", "54000"),
    ("SELECT length(lpad('x', 2147483647, 'y'))", "54000"),
    ("SELECT size(array_repeat(x, 300000000)) FROM VALUES (1), (2) AS t(x)", "54000"),
])
def test_a_statement_past_a_limit_is_refused_and_the_server_serves_on(server, sql, expected):
    folder, port = server
    outcome = {}

    def work():
        with connect(port, "bob") as bob:
            outcome["state"] = sqlstate(bob, sql)

    slowest, _ = ping_while(port, work)
    assert outcome["state"] == expected
    assert slowest < 0.25, slowest
    with connect(port, "bob") as bob:
        assert bob.execute("SELECT 1").fetchone() == (1,)


def test_bounded_functions_still_answer_within_the_bound(server):
    folder, port = server
    with connect(port, "bob") as bob:
        assert bob.execute("SELECT length(repeat('ab', 1000000)), lpad('x', 3, 'y'), rpad('x', 3), "
                           "size(sequence(1, 10)), size(sequence(10, 1, -3)), size(array_repeat('a', 4)), "
                           "length(space(5))").fetchone() == (2000000, "yyx", "x  ", 10, 4, 4, 5)
        assert bob.execute("SELECT sum(length(repeat('x', 10))) FROM range(100000)").fetchone() == (1000000,)


def test_a_large_constant_copied_into_every_row_stays_within_the_bound(server):
    """A folded 100 MB constant in a projection is one value in the plan but
    a copy in every row of a batch: 22 rows of it passed 2 GB (and failed
    with an offset overflow, after taking it outside the memory pool). Such
    a plan runs in batches small enough for the bound."""
    folder, port = server
    outcome = {}

    def work():
        with connect(port, "bob") as bob:
            outcome["rows"] = bob.execute(
                "SELECT count(*), max(octet_length(concat(s, repeat('x', 100000000)))) "
                "FROM (SELECT 'a' AS s FROM range(22))").fetchone()

    slowest, _ = ping_while(port, work)
    assert outcome["rows"] == (22, 100000001)
    assert slowest < 0.25, slowest


# Every route by which a statement reads a table, as a user holding SELECT
# on it (`reader`) and as one holding nothing on it (`stranger`): the
# reader gets an answer, the stranger 42501 before anything else is
# checked. `{own}` is the user's own schema, `{folder}` the table's
# managed folder.
READ_ROUTES = [
    "SELECT * FROM secret.matrix",
    "SELECT count(*) FROM secret.matrix WHERE id IS NULL",
    "SELECT no_such_column FROM secret.matrix",
    "SELECT id FROM secret.matrix WHERE no_such_column = 1",
    "SELECT * FROM (SELECT id FROM secret.matrix) s JOIN range(1) r ON true",
    "WITH x AS (SELECT * FROM secret.matrix) SELECT * FROM x",
    "SELECT * FROM secret.matrix VERSION AS OF 1",
    "SELECT * FROM secret.matrix VERSION AS OF 9999",
    "SELECT * FROM secret.matrix@v1",
    "SELECT * FROM secret.matrix TIMESTAMP AS OF '2100-01-01'",
    "SELECT * FROM table_changes('secret.matrix', 0)",
    "DESCRIBE HISTORY secret.matrix",
    "DESCRIBE DETAIL secret.matrix",
    "EXPLAIN SELECT * FROM secret.matrix",
    "EXPLAIN ANALYZE SELECT * FROM secret.matrix",
    "DECLARE c CURSOR FOR SELECT * FROM secret.matrix",
    "SELECT * FROM parquet.`{folder}`",
    "SELECT count(*) FROM read_files('{folder}', format => 'parquet')",
    "CREATE TABLE {own}.copied AS SELECT * FROM secret.matrix",
    "CREATE TABLE {own}.cloned SHALLOW CLONE secret.matrix",
    "CREATE VIEW {own}.over AS SELECT * FROM secret.matrix",
    "INSERT INTO {own}.sink SELECT id FROM secret.matrix",
    "MERGE INTO {own}.sink t USING secret.matrix s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
]


def give_own_schemas(admin, users):
    """Each user's own schema `own_<user>`, where the routes write."""
    for user in users:
        admin.execute(f"CREATE SCHEMA IF NOT EXISTS own_{user}")
        admin.execute(f"GRANT CREATE ON SCHEMA own_{user} TO {user}")


@pytest.fixture(scope="module")
def matrix(server):
    folder, port = server
    with connect(port, "admin") as admin:
        admin.execute("CREATE TABLE secret.matrix (id INT, salary INT) "
                      "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
        admin.execute("INSERT INTO secret.matrix VALUES (1, 100), (2, 200)")
        admin.execute("GRANT SELECT ON TABLE secret.matrix TO reader")
        give_own_schemas(admin, ["reader", "stranger"])
    return folder, port


@pytest.mark.parametrize("route", READ_ROUTES)
@pytest.mark.parametrize("user", ["reader", "stranger"])
def test_a_read_route_needs_select(matrix, route, user):
    folder, port = matrix
    with connect(port, user) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS own_{user}.sink (id INT)")
        for gone in ["copied", "cloned"]:
            conn.execute(f"DROP TABLE IF EXISTS own_{user}.{gone}")
        conn.execute(f"DROP VIEW IF EXISTS own_{user}.over")
        sql = route.format(own=f"own_{user}", folder=folder / "w" / "secret" / "matrix")
        if sql.startswith("DECLARE"):
            conn.execute("BEGIN")
        got = sqlstate(conn, sql)
        if user == "stranger":
            assert (sql, got) == (sql, "42501")
        elif "no_such_column" in sql:
            assert (sql, got) == (sql, "42703")
        elif "9999" in sql:
            assert (sql, got) == (sql, "22003")
        elif "2100" in sql:
            assert (sql, got) == (sql, "42816")  # after the latest version
        else:
            assert (sql, got) == (sql, "ok")


JOINS = "SELECT count(*) FROM range(1) t0 " + " ".join(
    f"JOIN range(1) t{i} ON t{i}.id = t{i - 1}.id" for i in range(1, 100))


def test_timeout_cancel_and_terminate_stop_a_statement_being_planned(server):
    """A join of 99 tables spends seconds (of a debug build) in the
    optimizer, which has no await: statement_timeout, a cancel request and
    pg_terminate_backend stop it there (57014) through the checkpoints
    between the optimizer's rules."""
    folder, port = server
    with connect(port, "bob") as bob:
        bob.execute("SET statement_timeout = '200ms'")
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            bob.execute(JOINS)
        bob.execute("RESET statement_timeout")
        threading.Timer(0.3, bob.cancel).start()
        with pytest.raises(psycopg.errors.QueryCanceled, match="user request"):
            bob.execute(JOINS)
        assert bob.execute("SELECT 1").fetchone() == (1,)
        # A cancel between statements cancels nothing.
        bob.cancel()
        time.sleep(0.2)
        assert bob.execute("SELECT count(*) FROM range(3)").fetchone() == (3,)
        pid = bob.execute("SELECT pg_backend_pid()").fetchone()[0]
        with connect(port, "bob") as same_user:
            threading.Timer(0.3, lambda: same_user.execute(f"SELECT pg_terminate_backend({pid})")).start()
            with pytest.raises(psycopg.OperationalError):
                bob.execute(JOINS)
                bob.execute("SELECT 1")
            assert same_user.execute("SELECT 1").fetchone() == (1,)


# Every route by which a statement reads a view: a user with SELECT on the
# view only (`viewer`) reads it with its owner's rights; one without
# (`stranger`) gets 42501.
VIEW_ROUTES = [
    "SELECT * FROM shared.alice_view",
    "SELECT * FROM shared.alice_view v JOIN range(1) r ON true",
    "WITH x AS (SELECT * FROM shared.alice_view) SELECT * FROM x",
    "SELECT * FROM (SELECT id FROM shared.alice_view) s",
    "SELECT id FROM range(1, 3) AS r(id) WHERE id IN (SELECT id FROM shared.alice_view)",
    "DECLARE c CURSOR FOR SELECT * FROM shared.alice_view",
    "CREATE TABLE {own}.copied AS SELECT * FROM shared.alice_view",
    "CREATE VIEW {own}.over AS SELECT * FROM shared.alice_view",
    "INSERT INTO {own}.sink SELECT id FROM shared.alice_view",
    "MERGE INTO {own}.sink t USING shared.alice_view s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
    "UPDATE {own}.sink SET id = s.id FROM shared.alice_view s WHERE {own}.sink.id = s.id",
    "DELETE FROM {own}.sink WHERE id IN (SELECT id FROM shared.alice_view)",
]


@pytest.fixture(scope="module")
def view_matrix(server):
    folder, port = server
    with connect(port, "admin") as admin:
        admin.execute("GRANT SELECT ON VIEW shared.alice_view TO viewer")
        give_own_schemas(admin, ["viewer", "stranger"])
    return folder, port


@pytest.mark.parametrize("route", VIEW_ROUTES)
@pytest.mark.parametrize("user", ["viewer", "stranger"])
def test_a_view_route_needs_select_on_the_view(view_matrix, route, user):
    folder, port = view_matrix
    with connect(port, user) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS own_{user}.sink (id INT)")
        conn.execute(f"DROP TABLE IF EXISTS own_{user}.copied")
        conn.execute(f"DROP VIEW IF EXISTS own_{user}.over")
        sql = route.format(own=f"own_{user}")
        if sql.startswith("DECLARE"):
            conn.execute("BEGIN")
        got = sqlstate(conn, sql)
        assert (sql, got) == (sql, "42501" if user == "stranger" else "ok")
    if user == "viewer" and "copied AS" in route:
        with connect(port, user) as conn:
            assert conn.execute("SELECT count(*) FROM own_viewer.copied").fetchone()[0] >= 1


def test_information_schema_lists_what_the_user_holds_a_privilege_on(server):
    """As in Postgres and Databricks: information_schema's tables, views
    and columns list only objects the user holds a privilege on (and the
    session's temporary tables); pg_catalog lists all, as Postgres' does."""
    folder, port = server
    with connect(port, "admin") as admin, connect(port, "frank") as frank:
        admin.execute("CREATE SCHEMA IF NOT EXISTS open_s")
        admin.execute("CREATE TABLE IF NOT EXISTS open_s.shown (x INT)")
        admin.execute("CREATE TABLE IF NOT EXISTS open_s.hidden (x INT)")
        admin.execute("CREATE OR REPLACE VIEW open_s.shown_v AS SELECT 1 AS x")
        admin.execute("CREATE OR REPLACE VIEW open_s.hidden_v AS SELECT 1 AS x")
        admin.execute("GRANT SELECT ON TABLE open_s.shown TO frank")
        admin.execute("GRANT SELECT ON VIEW open_s.shown_v TO frank")
        listed = {
            "tables": "SELECT table_name FROM information_schema.tables WHERE table_schema = 'open_s' ORDER BY 1",
            "views": "SELECT table_name FROM information_schema.views WHERE table_schema = 'open_s' ORDER BY 1",
            "columns": "SELECT DISTINCT table_name FROM information_schema.columns "
                       "WHERE table_schema = 'open_s' ORDER BY 1",
        }
        assert [r[0] for r in frank.execute(listed["tables"]).fetchall()] == ["shown", "shown_v"]
        assert [r[0] for r in frank.execute(listed["views"]).fetchall()] == ["shown_v"]
        assert [r[0] for r in frank.execute(listed["columns"]).fetchall()] == ["shown", "shown_v"]
        assert [r[0] for r in admin.execute(listed["tables"]).fetchall()] == ["hidden", "hidden_v", "shown", "shown_v"]
        assert len(frank.execute("SELECT relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                                 "ON c.relnamespace = n.oid WHERE n.nspname = 'open_s'").fetchall()) == 4
        frank.execute("CREATE TEMPORARY TABLE scratch (y INT)")
        assert frank.execute("SELECT count(*) FROM information_schema.columns "
                             "WHERE table_name = 'scratch'").fetchone() == (1,)


def test_create_index_needs_a_grant_on_the_table(server):
    folder, port = server
    with connect(port, "bob") as bob, connect(port, "alice") as alice:
        assert sqlstate(bob, "CREATE INDEX ix_salaries ON secret.salaries (id)") == "42501"
        alice.execute("CREATE INDEX ix_salaries ON secret.salaries (id)")


def test_returning_needs_select(server):
    folder, port = server
    with connect(port, "admin") as admin, connect(port, "carol") as carol, connect(port, "alice") as alice:
        alice.execute("CREATE TABLE shared.alice_rows (id INT)")
        alice.execute("INSERT INTO shared.alice_rows VALUES (1), (2)")
        admin.execute("GRANT MODIFY ON TABLE shared.alice_rows TO carol")
        assert sqlstate(carol, "DELETE FROM shared.alice_rows WHERE id = 1 RETURNING id") == "42501"
        assert sqlstate(carol, "INSERT INTO shared.alice_rows VALUES (3) RETURNING id") == "42501"
        # Neither wrote anything.
        assert alice.execute("SELECT id FROM shared.alice_rows ORDER BY id").fetchall() == [(1,), (2,)]
