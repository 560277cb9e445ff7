"""psql's meta-commands that read pg_catalog, with our tables' comments."""

import subprocess

import psycopg


def psql(server, command):
    out = subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", server.dsn, "-c", command],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_dt_and_dn_list_tables_and_schemas_once(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS meta")
        conn.execute("CREATE TABLE meta.listed (a INT)")
    # The owner is the user who created the table (its first commit's
    # userName), for tables and views alike.
    bob = server.dsn.replace("user=tester", "user=bob")
    with psycopg.connect(bob, autocommit=True) as conn:
        conn.execute("CREATE TABLE meta.bobs (a INT)")
        conn.execute("CREATE VIEW meta.bobs_view AS SELECT a FROM meta.bobs")
    listed = psql(server, r"\dt meta.*")
    assert "meta|listed|table|tester" in listed and "meta|bobs|table|bob" in listed, listed
    assert "meta|bobs_view|view|bob" in psql(server, r"\dv meta.*")
    schemas = [line.split("|")[0] for line in psql(server, r"\dn")]
    assert "meta" in schemas and "default" in schemas
    assert len(schemas) == len(set(schemas))


def test_describe_a_table_and_other_listings(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS meta")
        conn.execute("CREATE TABLE meta.described (id INT NOT NULL COMMENT 'the key', name STRING, day DATE) "
                     "PARTITIONED BY (day) COMMENT 'described rows'")
    lines = psql(server, r"\d meta.described")
    assert lines == ["id|integer||not null|", "name|text|||", "day|date|||"], lines
    plus = psql(server, r"\d+ meta.described")
    assert [(line.split("|")[:2] + line.split("|")[-1:]) for line in plus] == [
        ["id", "integer", "the key"], ["name", "text", ""], ["day", "date", ""]]
    tables = psql(server, r"\dt+ meta.*")
    assert any(line.startswith("meta|described|table|") and line.endswith("|described rows") for line in tables), tables
    assert any(line.startswith("lakegres|") for line in psql(server, r"\l+"))
    for command in [r"\du", r"\df", r"\dv", r"\di", r"\dn+"]:
        subprocess.run(["psql", "-X", "-d", server.dsn, "-c", command], check=False, timeout=60)
    assert psql(server, r"\df") == []


def test_describe_shows_type_modifiers(server):
    """Decimals show their precision and scale (pg_attribute.atttypmod),
    VARCHAR(n) and CHAR(n) their length, and timestamps whether they keep a
    time zone (issue #21 item 6)."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS meta")
        conn.execute("CREATE OR REPLACE TABLE meta.typed (amount DECIMAL(12,2), whole DECIMAL(5,0), "
                     "ts TIMESTAMP, local TIMESTAMP_NTZ, code VARCHAR(20), flag CHAR(1))")
        (typmod,) = conn.execute(
            "SELECT a.atttypmod FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON a.attrelid = c.oid "
            "WHERE c.relname = 'typed' AND a.attname = 'amount'").fetchone()
        assert typmod == (12 << 16 | 2) + 4
    assert psql(server, r"\d meta.typed") == [
        "amount|numeric(12,2)|||", "whole|numeric(5)|||",
        "ts|timestamp with time zone|||", "local|timestamp without time zone|||",
        "code|character varying(20)|||", "flag|character(1)|||"]


def test_what_pools_send_when_they_reset_a_connection(server):
    for statement in ["DISCARD ALL", "RESET ALL", "UNLISTEN *", "CLOSE ALL", "SELECT pg_advisory_unlock_all()",
                      "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
                      "BEGIN READ ONLY; COMMIT", "SET search_path TO default", "SET TIME ZONE 'UTC'"]:
        psql(server, statement)
    assert len(psql(server, "SHOW ALL")) > 20


def test_cursors_fetch_in_steps(server):
    with psycopg.connect(server.dsn) as conn:
        conn.execute("DECLARE c CURSOR FOR SELECT value FROM generate_series(1, 10) ORDER BY value")
        got = []
        while rows := conn.execute("FETCH FORWARD 3 FROM c").fetchall():
            got += [r[0] for r in rows]
        assert got == list(range(1, 11))
        conn.execute("CLOSE c")
    lines = psql(server, "BEGIN; DECLARE c CURSOR FOR SELECT value FROM generate_series(1, 5); "
                         "FETCH 2 FROM c; FETCH ALL FROM c; CLOSE c; COMMIT")
    assert [line for line in lines if line.isdigit()] == ["1", "2", "3", "4", "5"]


def test_statement_timeout_and_rollback(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '300ms'")
        try:
            conn.execute("SELECT count(*) FROM generate_series(1, 100000000000)")
            raise AssertionError("the statement was not cancelled")
        except psycopg.errors.QueryCanceled:
            pass
        conn.execute("SET statement_timeout = 0")
        conn.execute("CREATE TABLE meta_rb (a INT)")
        notices = []
        conn.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
        conn.execute("BEGIN")
        conn.execute("INSERT INTO meta_rb VALUES (1)")
        conn.execute("ROLLBACK")
        # ROLLBACK undoes the block's write (issue #59), without a warning.
        assert notices == [], notices
        assert conn.execute("SELECT count(*) FROM meta_rb").fetchone()[0] == 0


def test_transaction_statements_outside_a_block(server):
    """COMMIT and ROLLBACK with no block open warn (25P01) and change
    nothing; SAVEPOINT, RELEASE and ROLLBACK TO need a block (25P01, an
    error, as in Postgres); BEGIN inside a block warns (25001) and keeps it."""
    from psycopg.pq import TransactionStatus

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        notices = []
        conn.add_notice_handler(
            lambda d: notices.append((d.severity, d.sqlstate, d.message_primary))
        )
        conn.execute("COMMIT")
        conn.execute("ROLLBACK")
        assert [(n[0], n[1]) for n in notices] == [("WARNING", "25P01")] * 2, notices
        assert "NO_ACTIVE_TRANSACTION" in notices[0][2]
        for statement in ["SAVEPOINT s", "RELEASE s", "ROLLBACK TO SAVEPOINT s"]:
            try:
                conn.execute(statement)
                raise AssertionError(f"{statement} ran outside a block")
            except psycopg.errors.NoActiveSqlTransaction:
                pass
        assert conn.info.transaction_status == TransactionStatus.IDLE
        notices.clear()
        conn.execute("BEGIN")
        conn.execute("BEGIN")
        assert [(n[0], n[1]) for n in notices] == [("WARNING", "25001")], notices
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        conn.execute("SAVEPOINT s")
        conn.execute("RELEASE s")
        conn.execute("COMMIT")
        assert conn.info.transaction_status == TransactionStatus.IDLE


def test_copy_and_row_errors_in_a_transaction_block(server):
    """COPY FROM STDIN is a write of its block (ROLLBACK undoes it); a COPY
    whose data fails, and a query whose rows fail while they stream, fail
    the block as any failed statement does."""
    from psycopg.pq import TransactionStatus

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE meta_copy_block (a INT)")
        notices = []
        conn.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
        conn.execute("BEGIN")
        with conn.cursor().copy("COPY meta_copy_block FROM STDIN") as copy:
            copy.write("1\n2\n")
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        assert conn.execute("SELECT count(*) FROM meta_copy_block").fetchone()[0] == 2
        conn.execute("ROLLBACK")
        assert notices == [], notices
        assert conn.execute("SELECT count(*) FROM meta_copy_block").fetchone()[0] == 0

        conn.execute("BEGIN")
        try:
            with conn.cursor().copy("COPY meta_copy_block FROM STDIN") as copy:
                copy.write("not a number\n")
            raise AssertionError("bad COPY data was accepted")
        except psycopg.errors.InvalidTextRepresentation:
            pass
        assert conn.info.transaction_status == TransactionStatus.INERROR
        conn.execute("ROLLBACK")

        conn.execute("CREATE TABLE meta_strings AS SELECT * FROM (VALUES ('1'), ('x')) AS v(s)")
        conn.execute("BEGIN")
        try:
            # The cast fails while the rows stream, after the statement started.
            conn.execute("SELECT CAST(s AS INT) FROM meta_strings").fetchall()
            raise AssertionError("a failing row was returned")
        except psycopg.errors.InvalidCharacterValueForCast:
            pass
        assert conn.info.transaction_status == TransactionStatus.INERROR
        try:
            conn.execute("SELECT 1")
            raise AssertionError("a statement ran in a failed block")
        except psycopg.errors.InFailedSqlTransaction:
            pass
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_named_cursors_and_pg_stat_activity(server):
    with psycopg.connect(server.dsn + " application_name=named") as conn:
        with conn.cursor(name="server_side") as cur:  # DECLARE, Describe portal, FETCH FORWARD n
            cur.itersize = 3
            cur.execute("SELECT value FROM generate_series(1, 10) ORDER BY value")
            assert [r[0] for r in cur] == list(range(1, 11))
    with psycopg.connect(server.dsn + " application_name=watcher", autocommit=True) as watcher:
        with psycopg.connect(server.dsn + " application_name=sleeper", autocommit=True):
            rows = watcher.execute(
                "SELECT pid, usename, application_name, state, query FROM pg_stat_activity ORDER BY pid"
            ).fetchall()
    apps = {r[2]: r for r in rows}
    assert apps["watcher"][3] == "active" and "pg_stat_activity" in apps["watcher"][4]
    assert apps["sleeper"][3] == "idle" and apps["sleeper"][1] == "tester"
    assert len({r[0] for r in rows}) == len(rows)
