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
        assert again.execute("SHOW VIEWS").fetchall() == []
        again.execute("DROP TABLE tv_py")
