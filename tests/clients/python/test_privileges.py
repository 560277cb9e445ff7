"""Privileges (issue #7): GRANT / REVOKE / SHOW GRANTS kept in the
warehouse, an admin role from the configuration, and 42501 for every read
and write a user was not granted — also through time travel, read_files of
the table's folder, point lookups and DESCRIBE HISTORY — seen alike by a
second server on the same warehouse."""

import contextlib
import time

import psycopg
import pytest

from test_security import start


@contextlib.contextmanager
def server_on(folder, name):
    """A server with trust logins and `admin` as admin, on warehouse `folder/w`."""
    config = folder / f"{name}.toml"
    config.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{folder / "w"}"\n'
                      f'[auth]\nadmins = ["admin"]\n')
    proc, port, log = start(config)
    try:
        assert port, "".join(log)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def connect(port, user):
    return psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user={user}", autocommit=True)


def sqlstate(conn, sql, params=None, **kw):
    try:
        conn.execute(sql, params, **kw).fetchall() if kw or params else conn.execute(sql)
        return "ok"
    except psycopg.Error as e:
        return e.sqlstate


def version(conn, table):
    return conn.execute(f"DESCRIBE HISTORY {table} LIMIT 1").fetchone()[0]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    folder = tmp_path_factory.mktemp("privileges")
    (folder / "ingest").mkdir()
    (folder / "ingest" / "rows.csv").write_text("id,v\n7,seven\n")
    with server_on(folder, "one") as port:
        with connect(port, "admin") as admin:
            admin.execute("CREATE SCHEMA sales")
            admin.execute("CREATE TABLE sales.orders (id INT, v STRING) USING DELTA")
            admin.execute("INSERT INTO sales.orders VALUES (1, 'one'), (2, 'two')")
            admin.execute("CREATE TABLE sales.secret (id INT, v STRING) USING DELTA")
            admin.execute("INSERT INTO sales.secret VALUES (1, 'hidden')")
            admin.execute("GRANT SELECT ON TABLE sales.orders TO reader")
            admin.execute(f"CREATE TABLE sales.outside (id INT) LOCATION '{folder / 'ingest' / 'outside'}'")
            admin.execute("INSERT INTO sales.outside VALUES (5)")
        yield folder, port


def test_a_user_reads_only_what_was_granted(warehouse):
    folder, port = warehouse
    with connect(port, "reader") as reader:
        assert reader.execute("SELECT id, v FROM sales.orders ORDER BY id").fetchall() == [(1, "one"), (2, "two")]
        assert sqlstate(reader, "SELECT * FROM sales.secret") == "42501"
        assert sqlstate(reader, "SELECT count(*) FROM sales.secret") == "42501"
        # A join, a subquery, a CTE and a cursor all reach the table.
        assert sqlstate(reader, "SELECT * FROM sales.orders o JOIN sales.secret s ON o.id = s.id") == "42501"
        assert sqlstate(reader, "SELECT * FROM sales.orders WHERE id IN (SELECT id FROM sales.secret)") == "42501"
        assert sqlstate(reader, "WITH x AS (SELECT * FROM sales.secret) SELECT * FROM x") == "42501"
        assert sqlstate(reader, "DECLARE c CURSOR FOR SELECT * FROM sales.secret") == "42501"
        # Time travel, both spellings.
        assert sqlstate(reader, "SELECT * FROM sales.secret VERSION AS OF 1") == "42501"
        assert sqlstate(reader, "SELECT * FROM sales.secret@v1") == "42501"
        assert sqlstate(reader, "SELECT * FROM table_changes('sales.secret', 0)") == "42501"
        assert reader.execute("SELECT count(*) FROM sales.orders VERSION AS OF 1").fetchone() == (2,)
        # A prepared point lookup (the path that skips planning).
        assert sqlstate(reader, "SELECT v FROM sales.secret WHERE id = %s", (1,), prepare=True) == "42501"
        assert reader.execute("SELECT v FROM sales.orders WHERE id = %s", (2,), prepare=True).fetchall() == [("two",)]
        # The table's files, by path: only a table one may read.
        secret_folder = folder / "w" / "sales" / "secret"
        orders_folder = folder / "w" / "sales" / "orders"
        assert sqlstate(reader, f"SELECT * FROM read_files('{secret_folder}', format => 'parquet')") == "42501"
        assert sqlstate(reader, f"SELECT * FROM read_files('{folder / 'w' / 'sales' / 'x' / '..' / 'secret'}', "
                                "format => 'parquet')") == "42501"
        assert sqlstate(reader, f"LIST '{secret_folder}'") == "42501"
        assert sqlstate(reader, f"LIST '{folder / 'w'}'") == "42501"
        assert reader.execute(f"SELECT count(*) FROM read_files('{orders_folder}', format => 'parquet')"
                              ).fetchone() == (2,)
        # An external table's folder, outside the warehouse: by name only.
        outside = folder / "ingest" / "outside"
        assert sqlstate(reader, "SELECT * FROM sales.outside") == "42501"
        assert sqlstate(reader, f"SELECT * FROM read_files('{outside}', format => 'parquet')") == "42501"
        assert sqlstate(reader, f"LIST '{outside}/_delta_log'") == "42501"
        assert reader.execute(f"LIST '{folder / 'ingest'}'").fetchall()
        # History shows what writes did; the catalog shows no row counts.
        assert sqlstate(reader, "DESCRIBE HISTORY sales.secret") == "42501"
        assert sqlstate(reader, "DESCRIBE DETAIL sales.secret") == "42501"
        assert reader.execute("SELECT reltuples FROM pg_class WHERE relname = 'secret'").fetchall() == [(0.0,)]
        # Its columns stay visible, as in Postgres' catalogs.
        assert [r[0] for r in reader.execute("DESCRIBE sales.secret").fetchall()] == ["id", "v"]


def test_a_read_only_user_can_write_nothing(warehouse):
    folder, port = warehouse
    with connect(port, "admin") as admin, connect(port, "reader") as reader:
        before = version(admin, "sales.orders")
        writes = [
            "INSERT INTO sales.orders VALUES (3, 'three')",
            "INSERT INTO sales.orders SELECT * FROM sales.orders",
            "INSERT OVERWRITE sales.orders SELECT * FROM sales.orders",
            "INSERT INTO sales.orders REPLACE WHERE id = 1 SELECT 1, 'uno'",
            "UPDATE sales.orders SET v = 'x'",
            "DELETE FROM sales.orders WHERE id = 1",
            "TRUNCATE TABLE sales.orders",
            "MERGE INTO sales.orders t USING (SELECT 1 AS id, 'x' AS v) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET *",
            f"COPY INTO sales.orders FROM '{folder / 'ingest'}' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')",
            "OPTIMIZE sales.orders",
            "VACUUM sales.orders",
            "VACUUM sales.orders DRY RUN",
            "RESTORE TABLE sales.orders TO VERSION AS OF 1",
            "DROP TABLE sales.orders",
            "ALTER TABLE sales.orders ADD COLUMNS (extra INT)",
            "ALTER TABLE sales.orders RENAME TO sales.renamed",
            "ALTER TABLE sales.orders SET TBLPROPERTIES ('k' = 'v')",
            "ALTER TABLE sales.orders ADD CONSTRAINT positive CHECK (id > 0)",
            "COMMENT ON TABLE sales.orders IS 'mine now'",
            "CREATE OR REPLACE TABLE sales.orders (id INT) USING DELTA",
            "CREATE TABLE sales.mine (id INT) USING DELTA",
            "CREATE TABLE sales.mine AS SELECT * FROM sales.orders",
            "CREATE SCHEMA mine",
            "DROP SCHEMA sales CASCADE",
            "GRANT SELECT ON TABLE sales.secret TO reader",
            "REVOKE SELECT ON TABLE sales.orders FROM reader",
        ]
        for sql in writes:
            assert (sql, sqlstate(reader, sql)) == (sql, "42501")
        with pytest.raises(psycopg.Error) as refused:
            with reader.cursor().copy("COPY sales.orders FROM STDIN") as copy:
                copy.write_row((9, "nine"))
        assert refused.value.sqlstate == "42501"
        assert version(admin, "sales.orders") == before
        assert admin.execute("SELECT count(*) FROM sales.orders").fetchone() == (2,)
        assert admin.execute("SHOW TABLES IN sales").fetchall() == [
            ("sales", "orders", False), ("sales", "outside", False), ("sales", "secret", False)]
        # COPY out is a read, and reader may read orders.
        with reader.cursor().copy("COPY sales.orders TO STDOUT") as copy:
            assert sorted(bytes(b) for b in copy) == [b"1\tone\n", b"2\ttwo\n"]


def test_grants_on_a_schema_creators_and_revokes(warehouse):
    folder, port = warehouse
    with connect(port, "admin") as admin, connect(port, "writer") as writer:
        admin.execute("GRANT CREATE, USE SCHEMA ON SCHEMA sales TO writer")
        admin.execute("GRANT SELECT, MODIFY ON TABLE sales.orders TO writer")
        writer.execute("INSERT INTO sales.orders VALUES (3, 'three')")
        writer.execute("UPDATE sales.orders SET v = 'THREE' WHERE id = 3")
        # A table a user creates is theirs to use.
        writer.execute("CREATE TABLE sales.notes (id INT, note STRING) USING DELTA")
        writer.execute("INSERT INTO sales.notes VALUES (1, 'mine')")
        assert writer.execute("SELECT note FROM sales.notes").fetchall() == [("mine",)]
        assert sqlstate(writer, "SELECT * FROM sales.secret") == "42501"
        assert writer.execute("SHOW GRANTS ON TABLE sales.notes").fetchall() == [
            ("writer", "CREATE", "SCHEMA", "sales"),
            ("writer", "USE SCHEMA", "SCHEMA", "sales"),
            ("writer", "ALL PRIVILEGES", "TABLE", "sales.notes"),
        ]
        # Others see only their own grants; admins see all.
        assert writer.execute("SHOW GRANTS reader").fetchall() == []
        assert admin.execute("SHOW GRANTS ON TABLE sales.orders").fetchall() == [
            ("reader", "SELECT", "TABLE", "sales.orders"),
            ("writer", "SELECT", "TABLE", "sales.orders"),
            ("writer", "MODIFY", "TABLE", "sales.orders"),
            ("writer", "CREATE", "SCHEMA", "sales"),
            ("writer", "USE SCHEMA", "SCHEMA", "sales"),
        ]
        # MODIFY on a schema holds for every table in it, now and later.
        admin.execute("GRANT SELECT, MODIFY ON SCHEMA sales TO loader")
        with connect(port, "loader") as loader:
            loader.execute("INSERT INTO sales.secret VALUES (2, 'loaded')")
            admin.execute("CREATE TABLE sales.later (id INT) USING DELTA")
            loader.execute("INSERT INTO sales.later VALUES (1)")
            admin.execute("REVOKE MODIFY ON SCHEMA sales FROM loader")
            assert sqlstate(loader, "INSERT INTO sales.later VALUES (2)") == "42501"
            assert loader.execute("SELECT count(*) FROM sales.later").fetchone() == (1,)
        # Errors of the statements themselves.
        assert sqlstate(admin, "GRANT SELECT ON TABLE sales.nope TO reader") == "42P01"
        assert sqlstate(admin, "GRANT SELECT ON SCHEMA nope TO reader") == "3F000"
        assert sqlstate(admin, "GRANT CREATE ON TABLE sales.orders TO reader") == "42809"
        assert sqlstate(admin, "GRANT FLY ON TABLE sales.orders TO reader") == "42601"
        # A dropped table's grants go with it.
        admin.execute("DROP TABLE sales.notes")
        admin.execute("CREATE TABLE sales.notes (id INT) USING DELTA")
        assert sqlstate(writer, "SELECT * FROM sales.notes") == "42501"


def test_a_second_server_on_the_warehouse_agrees(warehouse):
    folder, port = warehouse
    with server_on(folder, "two") as port2, connect(port, "admin") as admin, \
            connect(port2, "reader") as reader:
        assert reader.execute("SELECT count(*) FROM sales.orders").fetchone()[0] >= 2
        assert sqlstate(reader, "SELECT * FROM sales.secret") == "42501"
        admin.execute("GRANT SELECT ON TABLE sales.secret TO reader")
        assert reader.execute("SELECT v FROM sales.secret WHERE id = 1").fetchall() == [("hidden",)]
        admin.execute("REVOKE SELECT ON TABLE sales.secret FROM reader")
        assert sqlstate(reader, "SELECT v FROM sales.secret WHERE id = 1") == "42501"
        # The grants are files in the warehouse, one per version.
        assert sorted(p.name for p in (folder / "w" / "_lakegres" / "grants").iterdir())[0] == "00000000000000000001.json"


def test_a_view_is_read_with_its_own_grant_on_every_server(warehouse):
    """SELECT on a view lets a user read it without SELECT on the tables it
    reads (Unity Catalog's rule); the tables themselves stay closed, and a
    second server on the warehouse sees the view and its grant."""
    folder, port = warehouse
    with connect(port, "admin") as admin, connect(port, "viewer") as viewer:
        admin.execute("CREATE VIEW sales.public_secret AS SELECT id FROM sales.secret WHERE id = 1")
        assert sqlstate(viewer, "SELECT * FROM sales.public_secret") == "42501"
        admin.execute("GRANT SELECT ON VIEW sales.public_secret TO viewer")
        assert viewer.execute("SELECT id FROM sales.public_secret").fetchall() == [(1,)]
        # The view opens its own rows only.
        assert sqlstate(viewer, "SELECT * FROM sales.secret") == "42501"
        assert sqlstate(viewer, "SELECT * FROM sales.public_secret p JOIN sales.secret s ON p.id = s.id") == "42501"
        assert sqlstate(viewer, "INSERT INTO sales.public_secret VALUES (3)") == "42809"
        assert viewer.execute("SHOW GRANTS ON VIEW sales.public_secret").fetchall() == [
            ("viewer", "SELECT", "TABLE", "sales.public_secret"),
        ]
        with server_on(folder, "three") as port2, connect(port2, "viewer") as elsewhere:
            assert elsewhere.execute("SELECT id FROM sales.public_secret").fetchall() == [(1,)]
            assert sqlstate(elsewhere, "SELECT * FROM sales.secret") == "42501"
            # A view another server creates is seen at once.
            admin.execute("CREATE VIEW sales.two AS SELECT 2 AS n")
            admin.execute("GRANT SELECT ON VIEW sales.two TO viewer")
            assert elsewhere.execute("SELECT n FROM sales.two").fetchall() == [(2,)]
            admin.execute("DROP VIEW sales.two")
            assert sqlstate(elsewhere, "SELECT n FROM sales.two") == "42P01"
        # A user who may create in the schema owns the view they create.
        admin.execute("GRANT CREATE ON SCHEMA sales TO viewer")
        viewer.execute("CREATE VIEW sales.mine AS SELECT id FROM sales.public_secret")
        assert viewer.execute("SELECT * FROM sales.mine").fetchall() == [(1,)]
        # A dropped view's grants go with it.
        admin.execute("DROP VIEW sales.public_secret")
        admin.execute("CREATE VIEW sales.public_secret AS SELECT 1 AS id")
        assert sqlstate(viewer, "SELECT * FROM sales.public_secret") == "42501"


def test_a_view_reads_with_its_owners_rights(warehouse):
    """A view reads what it reads with its owner's rights, checked as it is
    read (issue #57): a view over a table its owner may not read serves no
    row, to anyone; a revoke from the owner closes the view at once; a view
    within a view is read with its own owner's rights; and a CTE of a view
    is the view's, whatever schema its reader is in."""
    folder, port = warehouse
    with connect(port, "admin") as admin, connect(port, "bob") as bob, \
            connect(port, "alice") as alice, connect(port, "carol") as carol:
        admin.execute("CREATE SCHEMA IF NOT EXISTS bob")
        admin.execute("GRANT CREATE ON SCHEMA bob TO bob")
        admin.execute("CREATE TABLE IF NOT EXISTS bob.own (id INT, v STRING)")
        admin.execute("INSERT INTO bob.own VALUES (9, 'bob')")
        admin.execute("GRANT SELECT ON TABLE bob.own TO bob")

        # bob may not read sales.secret: neither may a view of his, when he
        # creates it or when anyone reads it.
        assert sqlstate(bob, "CREATE VIEW bob.steal AS SELECT * FROM sales.secret") == "42501"
        assert sqlstate(bob, "CREATE VIEW bob.steal2 AS SELECT * FROM sales.public_secret") == "42501"
        assert bob.execute("SELECT id FROM bob.own").fetchall() == [(9,)]

        # alice may read sales.secret and creates a view of it; carol reads
        # the view with its grant only, until alice loses her SELECT.
        admin.execute("GRANT SELECT ON TABLE sales.secret TO alice")
        admin.execute("GRANT CREATE ON SCHEMA bob TO alice")
        alice.execute("CREATE VIEW bob.alice_v AS SELECT id, v FROM sales.secret")
        admin.execute("GRANT SELECT ON VIEW bob.alice_v TO carol")
        secret = admin.execute("SELECT id, v FROM sales.secret ORDER BY id").fetchall()
        assert carol.execute("SELECT id, v FROM bob.alice_v ORDER BY id").fetchall() == secret
        assert sqlstate(carol, "SELECT * FROM sales.secret") == "42501"
        # A view of alice's view, owned by bob, who may not read alice's view.
        admin.execute("GRANT SELECT ON VIEW bob.alice_v TO bob")
        bob.execute("CREATE VIEW bob.over AS SELECT id FROM bob.alice_v")
        admin.execute("GRANT SELECT ON VIEW bob.over TO carol")
        assert carol.execute("SELECT id FROM bob.over ORDER BY id").fetchall() == [(i,) for i, _ in secret]
        admin.execute("REVOKE SELECT ON VIEW bob.alice_v FROM bob")
        assert sqlstate(carol, "SELECT id FROM bob.over") == "42501"
        # The revoke from the owner closes the view for every reader.
        admin.execute("REVOKE SELECT ON TABLE sales.secret FROM alice")
        assert sqlstate(carol, "SELECT id FROM bob.alice_v") == "42501"
        assert sqlstate(alice, "SELECT id FROM bob.alice_v") == "42501"

        # A view's CTE is the view's: read from another schema, it never
        # names a table there.
        bob.execute("CREATE VIEW bob.cte_v AS WITH secret AS (SELECT * FROM bob.own) SELECT id, v FROM secret")
        admin.execute("GRANT SELECT ON VIEW bob.cte_v TO carol")
        carol.execute("USE sales")
        assert carol.execute("SELECT id, v FROM bob.cte_v").fetchall() == [(9, "bob")]
        carol.execute("USE default")

        # EXPLAIN of a view shows what its tables' statistics and files
        # hold: for those who may read the tables themselves.
        admin.execute("GRANT SELECT ON TABLE sales.secret TO alice")
        assert sqlstate(carol, "EXPLAIN SELECT * FROM bob.alice_v") == "42501"
        assert sqlstate(carol, "EXPLAIN VERBOSE SELECT * FROM bob.alice_v") == "42501"
        assert sqlstate(carol, "EXPLAIN ANALYZE SELECT * FROM bob.alice_v") == "42501"
        # The private names a view's tables are read by serve no other
        # statement, even when EXPLAIN has shown them.
        plan = "\n".join(r[1] for r in alice.execute("EXPLAIN SELECT * FROM bob.alice_v").fetchall())
        private = [w.strip('",') for w in plan.replace("=", " ").split() if "@view" in w]
        assert private, plan
        name = private[0].split(".", 1)[-1] if private[0].startswith("lakegres_time_travel.") else private[0]
        assert sqlstate(carol, f'SELECT * FROM lakegres_time_travel."{name}"') == "42P01"
        assert sqlstate(carol, f'SELECT * FROM bob.alice_v, lakegres_time_travel."{name}"') == "42P01"


def test_an_external_table_another_server_creates_opens_its_folder(warehouse):
    """The external tables' locations a server keeps in memory for reads by
    path are read again within a second: a table another server creates is
    seen; one it drops no longer lends its grants to the folder."""
    folder, port = warehouse
    late = folder / "ingest" / "late"
    with server_on(folder, "three") as port3, connect(port3, "admin") as admin3, \
            connect(port, "latecomer") as latecomer:
        # Server one reads its external tables' locations now.
        assert sqlstate(latecomer, f"LIST '{folder / 'ingest' / 'outside'}'") == "42501"
        admin3.execute(f"CREATE TABLE sales.late LOCATION '{late}' AS SELECT 3 AS id")
        admin3.execute("GRANT SELECT ON TABLE sales.late TO latecomer")
        read = f"SELECT * FROM read_files('{late}', format => 'parquet')"
        deadline = time.monotonic() + 10
        while sqlstate(latecomer, read) == "42501" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert latecomer.execute(read).fetchall() == [(3,)]
        # The folder above holds sales.outside too, which latecomer may not read.
        assert refusal(latecomer, f"SELECT * FROM read_files('{folder / 'ingest'}', format => 'parquet')") == (
            "42501", f"[INSUFFICIENT_PERMISSIONS] user latecomer may not read the files under {folder / 'ingest'}: "
                     f"they include the Delta table folder {folder / 'ingest' / 'outside'}, which needs SELECT on "
                     "table sales.outside")
        admin3.execute("DROP TABLE sales.late")
        assert sqlstate(latecomer, read) == "42501"


def test_only_admins_signal_other_users_sessions(warehouse):
    folder, port = warehouse
    with connect(port, "admin") as admin, connect(port, "reader") as reader, \
            connect(port, "writer") as writer:
        writer_pid = writer.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert reader.execute("SELECT pg_cancel_backend(%s)", (writer_pid,)).fetchone() == (False,)
        assert reader.execute("SELECT pg_terminate_backend(%s)", (writer_pid,)).fetchone() == (False,)
        assert writer.execute("SELECT 1").fetchone() == (1,)
        assert admin.execute("SELECT pg_terminate_backend(%s)", (writer_pid,)).fetchone() == (True,)


def test_external_table_folders_are_read_with_the_tables_grants(moto, tmp_path):
    """On S3 as on a local disk, a folder that is (or is inside) an external
    table is read by path only by admins and by users with SELECT on that
    table; the root's other files are unaffected."""
    moto.put("ingest/files/rows.csv", b"id,v\n7,seven\n")
    proc, port, log = start(moto.config(tmp_path, "s3priv", '[auth]\nadmins = ["admin"]\n'))
    try:
        assert port, "".join(log)
        s3 = f"s3://{moto.bucket}/ingest/ext"
        local = tmp_path / "local_ext"
        with connect(port, "admin") as admin:
            admin.execute("CREATE SCHEMA IF NOT EXISTS xp")
            admin.execute(f"CREATE TABLE xp.s3 LOCATION '{s3}' AS SELECT 1 AS id, 'one' AS v")
            admin.execute(f"CREATE TABLE xp.local LOCATION '{local}' AS SELECT 1 AS id, 'one' AS v")
            admin.execute("CREATE TABLE xp.landing (id INT, v STRING)")
            admin.execute("GRANT SELECT, MODIFY ON TABLE xp.landing TO reader")
            assert admin.execute(f"SELECT count(*) FROM read_files('{s3}', format => 'parquet')").fetchone() == (1,)
        with connect(port, "reader") as reader:
            for folder in [s3, local]:
                for sql in [
                    f"SELECT * FROM read_files('{folder}', format => 'parquet')",
                    f"SELECT * FROM read_files('{folder}/_delta_log/00000000000000000000.json', format => 'json')",
                    f"LIST '{folder}'",
                    f"LIST '{folder}/_delta_log'",
                    f"SELECT * FROM list_files('{folder}')",
                    f"SELECT * FROM parquet.`{folder}`",
                    f"COPY INTO xp.landing FROM '{folder}' FILEFORMAT = PARQUET",
                ]:
                    assert sqlstate(reader, sql) == "42501", sql
            assert sqlstate(reader, "SELECT * FROM xp.s3") == "42501"
            assert version(reader, "xp.landing") == 0
            # Nothing else changes: the root's other files read as before.
            files = f"s3://{moto.bucket}/ingest/files"
            assert reader.execute(f"SELECT * FROM read_files('{files}/rows.csv', format => 'csv', header => true)"
                                  ).fetchall() == [("7", "seven")]
            assert reader.execute(f"LIST '{files}'").fetchall()
            reader.execute(f"COPY INTO xp.landing FROM '{files}' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')")
            assert reader.execute("SELECT * FROM xp.landing").fetchall() == [(7, "seven")]
        with connect(port, "admin") as admin:
            admin.execute("GRANT SELECT ON TABLE xp.s3 TO reader")
            admin.execute("GRANT SELECT ON TABLE xp.local TO reader")
        # SELECT on the table opens its folder, as for a managed table's.
        with connect(port, "reader") as reader:
            for folder in [s3, local]:
                assert reader.execute(f"SELECT count(*) FROM read_files('{folder}', format => 'parquet')"
                                      ).fetchone() == (1,), folder
                assert reader.execute(f"LIST '{folder}'").fetchall(), folder
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def refusal(conn, sql):
    """The SQLSTATE and message of a statement that must fail."""
    with pytest.raises(psycopg.Error) as failed:
        conn.execute(sql).fetchall()
    return failed.value.sqlstate, failed.value.diag.message_primary


def test_reading_above_a_delta_table_folder_needs_its_grants(moto, tmp_path):
    """Issue #9: a folder read recursively (read_files, parquet.`…`, COPY
    INTO) must not hand out the files of a Delta table folder below it that
    the user may not read by path: the statement fails with 42501 naming
    that folder and loads nothing. SELECT on the external table registered
    there opens it, as it opens the table's own folder; admins read all; a
    folder with only plain files below it reads as before. LIST shows one
    level, so a table folder is an entry in it, never its files. On S3 as
    on a local disk."""
    s3_root = f"s3://{moto.bucket}/ingest/gap"
    for key, body in [
        ("plain/rows.csv", b"id,v\n7,seven\n"),
        ("plain/sub/more.csv", b"id,v\n8,eight\n"),
        ("stray/rows.csv", b"id,v\n9,nine\n"),
        ("stray/t/_delta_log/00000000000000000000.json", b"{}\n"),
        ("stray/t/part-0.csv", b"id,v\n10,ten\n"),
    ]:
        moto.put(f"ingest/gap/{key}", body)
        local = tmp_path / "gap" / key
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(body)
    local_root = str((tmp_path / "gap").resolve())
    proc, port, log = start(moto.config(tmp_path, "s3gap", '[auth]\nadmins = ["admin"]\n'))
    try:
        assert port, "".join(log)
        with connect(port, "admin") as admin:
            admin.execute("CREATE SCHEMA IF NOT EXISTS gap")
            for where, root in [("s3", s3_root), ("local", local_root)]:
                admin.execute(f"CREATE TABLE gap.{where} LOCATION '{root}/above/ext' "
                              "AS SELECT 1 AS id, 'one' AS v")
                admin.execute(f"CREATE TABLE gap.dest_{where} (id INT, v STRING)")
                for user in ["reader", "holder"]:
                    admin.execute(f"GRANT SELECT, MODIFY ON TABLE gap.dest_{where} TO {user}")
                admin.execute(f"GRANT SELECT ON TABLE gap.{where} TO holder")
        with connect(port, "reader") as reader, connect(port, "holder") as holder, \
                connect(port, "admin") as admin:
            for where, root in [("s3", s3_root), ("local", local_root)]:
                above, ext, dest = f"{root}/above", f"{root}/above/ext", f"gap.dest_{where}"
                # Without SELECT on gap.<where>: refused, naming the folder.
                for sql, listed in [
                    (f"SELECT * FROM read_files('{above}', format => 'parquet')", above),
                    (f"SELECT * FROM read_files('{root}', format => 'parquet')", root),
                    (f"SELECT * FROM parquet.`{above}`", above),
                    (f"COPY INTO {dest} FROM '{above}' FILEFORMAT = PARQUET", above),
                    # A pattern picks from the listing only after the check.
                    (f"COPY INTO {dest} FROM '{above}' FILEFORMAT = PARQUET PATTERN = '*/*.parquet'", above),
                    (f"COPY INTO {dest} FROM '{root}' FILEFORMAT = CSV PATTERN = 'plain/*.csv' "
                     "FORMAT_OPTIONS ('header' = 'true')", root),
                ]:
                    assert refusal(reader, sql) == (
                        "42501",
                        f"[INSUFFICIENT_PERMISSIONS] user reader may not read the files under {listed}: they "
                        f"include the Delta table folder {ext}, which needs SELECT on table gap.{where}"), sql
                assert version(reader, dest) == 0
                # LIST is one level: the table's folder is an entry, no more.
                assert [r[:3] for r in reader.execute(f"LIST '{above}'").fetchall()] == [(f"{ext}/", "ext/", 0)]
                assert [r[:3] for r in reader.execute(f"SELECT * FROM list_files('{above}')").fetchall()
                        ] == [(f"{ext}/", "ext/", 0)]
                # A Delta folder no table names is for admins only.
                stray = f"{root}/stray"
                for user, conn in [("reader", reader), ("holder", holder)]:
                    assert refusal(conn, f"SELECT * FROM read_files('{stray}', format => 'csv', header => true)"
                                   ) == ("42501",
                                         f"[INSUFFICIENT_PERMISSIONS] user {user} may not read the files under "
                                         f"{stray}: they include the Delta table folder {stray}/t, which no "
                                         "table names: only admins may read it by path"), (where, user)
                assert sorted(admin.execute(f"SELECT * FROM read_files('{stray}', format => 'csv', header => true)"
                                            ).fetchall()) == [("10", "ten"), ("9", "nine")]
                # Only plain files below: read and loaded as before.
                plain = f"{root}/plain"
                assert sorted(reader.execute(f"SELECT * FROM read_files('{plain}', format => 'csv', header => true)"
                                             ).fetchall()) == [("7", "seven"), ("8", "eight")]
                assert [r[1] for r in reader.execute(f"LIST '{plain}'").fetchall()] == ["rows.csv", "sub/"]
                assert reader.execute(f"COPY INTO {dest} FROM '{plain}' FILEFORMAT = CSV "
                                      "FORMAT_OPTIONS ('header' = 'true')").fetchall() == [(2, 2, 0)]
                assert reader.execute(f"SELECT * FROM {dest} ORDER BY id").fetchall() == [(7, "seven"), (8, "eight")]
                assert version(reader, dest) == 1
                # SELECT on the table there opens the folder above it too.
                assert holder.execute(f"SELECT * FROM read_files('{above}', format => 'parquet')"
                                      ).fetchall() == [(1, "one")]
                assert holder.execute(f"SELECT * FROM parquet.`{above}`").fetchall() == [(1, "one")]
                assert holder.execute(f"COPY INTO {dest} FROM '{above}' FILEFORMAT = PARQUET").fetchall() == [(1, 1, 0)]
                assert holder.execute(f"SELECT * FROM {dest} ORDER BY id").fetchall() == [
                    (1, "one"), (7, "seven"), (8, "eight")]
                # Admins read everything below the root.
                assert admin.execute(f"SELECT * FROM read_files('{above}', format => 'parquet')"
                                     ).fetchall() == [(1, "one")]
                assert refusal(holder, f"SELECT count(*) FROM read_files('{root}', format => 'csv')")[0] == "42501"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
