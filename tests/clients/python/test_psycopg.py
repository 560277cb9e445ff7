"""psycopg over the extended protocol: parameters, types, errors."""

import datetime
import decimal

import psycopg
import pytest


def test_types_round_trip(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE py_types (i INT, b BIGINT, d DOUBLE, m DECIMAL(10,2), s STRING, "
            "dt DATE, ts TIMESTAMP, ok BOOLEAN)"
        )
        conn.execute(
            "INSERT INTO py_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                1,
                2**40,
                1.25,
                decimal.Decimal("12.34"),
                "héllo",
                datetime.date(2026, 1, 15),
                datetime.datetime(2026, 1, 15, 10, 30, tzinfo=datetime.timezone.utc),
                True,
            ),
        )
        row = conn.execute("SELECT i, b, d, m, s, dt, ts, ok FROM py_types").fetchone()
        assert row[0] == 1
        assert row[1] == 2**40
        assert row[2] == 1.25
        assert row[3] == decimal.Decimal("12.34")
        assert row[4] == "héllo"
        assert row[5] == datetime.date(2026, 1, 15)
        assert row[6] == datetime.datetime(2026, 1, 15, 10, 30, tzinfo=datetime.timezone.utc)
        assert row[7] is True

        cur = conn.execute("SELECT s FROM py_types WHERE i = %s", (1,))
        assert cur.fetchall() == [("héllo",)]


def test_errors_carry_sqlstates(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM py_missing")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("SELEC 1")
        with pytest.raises(psycopg.errors.DuplicateTable):
            conn.execute("CREATE TABLE py_dup (a INT)")
            conn.execute("CREATE TABLE py_dup (a INT)")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_version_looks_like_postgres_15(server):
    with psycopg.connect(server.dsn) as conn:
        (v,) = conn.execute("SELECT version()").fetchone()
        assert v.startswith("PostgreSQL 15.")
        assert conn.info.server_version >= 150000
        conn.rollback()


def test_temporary_views_belong_to_their_session(server):
    with psycopg.connect(server.dsn, autocommit=True) as owner, \
            psycopg.connect(server.dsn, autocommit=True) as other:
        owner.execute("CREATE TABLE tv_py (id INT, v STRING)")
        owner.execute("INSERT INTO tv_py VALUES (1, 'a'), (2, 'b')")
        owner.execute("CREATE TEMP VIEW tv_py_v AS SELECT id, v FROM tv_py WHERE id > %s" % 1)
        # Parameters through the extended protocol, over the view.
        assert owner.execute("SELECT v FROM tv_py_v WHERE id = %s", (2,)).fetchall() == [("b",)]
        with pytest.raises(psycopg.errors.UndefinedTable):
            other.execute("SELECT * FROM tv_py_v")
    # Gone at disconnect.
    with psycopg.connect(server.dsn, autocommit=True) as again:
        with pytest.raises(psycopg.errors.UndefinedTable):
            again.execute("SELECT * FROM tv_py_v")
        # No temporary view is left (stored views of other tests may be listed).
        assert [r for r in again.execute("SHOW VIEWS").fetchall() if r[2]] == []
        again.execute("DROP TABLE tv_py")


def test_session_variables_and_execute_immediate_with_parameters(server):
    """Variables belong to their session and mix with the extended
    protocol's parameters; EXECUTE IMMEDIATE's rows are described before
    they are sent."""
    with psycopg.connect(server.dsn, autocommit=True) as conn, \
            psycopg.connect(server.dsn, autocommit=True) as other:
        conn.execute("CREATE OR REPLACE TABLE var_py (id INT, v STRING)")
        conn.execute("INSERT INTO var_py VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        conn.execute("DECLARE VARIABLE lo INT DEFAULT 1")
        assert conn.execute("SELECT v FROM var_py WHERE id > lo AND id < %s ORDER BY id", (3,)).fetchall() == [("b",)]
        cur = conn.execute("EXECUTE IMMEDIATE 'SELECT id, v FROM var_py WHERE id = ?' USING 3")
        assert [d.name for d in cur.description] == ["id", "v"]
        assert cur.fetchall() == [(3, "c")]
        with pytest.raises(psycopg.errors.UndefinedColumn):
            other.execute("SELECT lo")
        conn.execute("DROP TABLE var_py")
