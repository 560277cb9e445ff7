"""Parameters of the types drivers declare, read as Postgres reads them
(issue #61).

A Python float, int or Decimal goes into any number column: a float into a
DECIMAL rounds to its scale, a value that does not fit answers 22003. In a
condition the parameter keeps its declared type: `i = 1.5` on an INT
column compares 1.5 and matches nothing (it must not round to a row).
psycopg 3 declares float8 / int2..int8 / numeric and sends them in text or
binary; psycopg2 and pg8000 inline or declare them their own way; asyncpg
takes the types the server describes.
"""

import asyncio
import decimal

import asyncpg
import pg8000.native
import psycopg
import psycopg2
import pytest

D = decimal.Decimal


def fresh(conn, table):
    conn.execute(f"CREATE OR REPLACE TABLE {table} (k INT, d DECIMAL(10,2), i INT, b BIGINT, f DOUBLE, s STRING)")


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_numbers_go_into_every_number_column(server, binary):
    table = f"pt_numbers_{int(binary)}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table)
        cur = conn.cursor(binary=binary)
        insert = f"INSERT INTO {table} (k, d, i, b, f, s) VALUES (%s, %s, %s, %s, %s, %s)"
        cur.execute(insert, [1, 1.5, 2, 3, 4, 5.5])
        cur.execute(insert, [2, 2, D("7"), D("8.00"), D("0.1"), D("1.25")])
        cur.execute(insert, [3, 1 / 3, 10**9, 10**12, 1e300, None])
        cur.execute(insert, [4, D("3.456"), None, D("1E+3"), None, 7])
        # A declared parameter in an expression keeps its type.
        assert cur.execute("SELECT %s + 1", [1.5]).fetchone()[0] == 2.5
        assert cur.execute("SELECT %s * 2", [D("1.25")]).fetchone()[0] == D("2.50")
        rows = conn.execute(f"SELECT k, d, i, b, f, s FROM {table} ORDER BY k").fetchall()
    assert rows == [
        (1, D("1.50"), 2, 3, 4.0, "5.5"),
        (2, D("2.00"), 7, 8, 0.1, "1.25"),
        (3, D("0.33"), 10**9, 10**12, 1e300, None),
        (4, D("3.46"), None, 1000, None, "7"),
    ]


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_numbers_that_do_not_fit_answer_22003(server, binary):
    table = f"pt_range_{int(binary)}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table)
        cur = conn.cursor(binary=binary)
        for column, value in [
            ("d", 10**12),
            ("d", 1e12),
            ("d", D("1E+20")),
            ("i", 10**12),
            ("i", D("1E+20")),
            ("b", D("1E+20")),
        ]:
            with pytest.raises(psycopg.errors.NumericValueOutOfRange):
                cur.execute(f"INSERT INTO {table} ({column}) VALUES (%s)", [value])
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert len(conn.execute(f"DESCRIBE HISTORY {table}").fetchall()) == 1


@pytest.mark.parametrize("binary", [False, True])
def test_a_declared_number_in_a_condition_is_not_rounded(server, binary):
    table = f"pt_where_{int(binary)}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table)
        conn.execute(f"INSERT INTO {table} (k, d, i) VALUES (1, 1.00, 1), (2, 2.00, 2), (3, 3.00, 3)")
        cur = conn.cursor(binary=binary)
        assert cur.execute(f"SELECT k FROM {table} WHERE i = %s", [2.0000001]).fetchall() == []
        assert cur.execute(f"SELECT k FROM {table} WHERE i = %s", [2.0]).fetchall() == [(2,)]
        assert cur.execute(f"SELECT k FROM {table} WHERE i = %s", [10**12]).fetchall() == []
        for sql, value in [
            (f"DELETE FROM {table} WHERE i = %s", 2.5),
            (f"DELETE FROM {table} WHERE d = %s", D("2.001")),
            (f"DELETE FROM {table} WHERE d = %s", 2.001),
            (f"UPDATE {table} SET k = 0 WHERE i = %s", 1.0000001),
            (f"DELETE FROM {table} WHERE i > %s", 10**12),
        ]:
            cur.execute(sql, [value])
            assert cur.fetchone()[0] == 0, sql
        cur.execute(f"UPDATE {table} SET d = %s WHERE k = %s", [9.999, 1])
        assert cur.fetchone()[0] == 1
        rows = conn.execute(f"SELECT k, d FROM {table} ORDER BY k").fetchall()
    assert rows == [(1, D("10.00")), (2, D("2.00")), (3, D("3.00"))]


def test_psycopg2_and_pg8000_numbers(server):
    table = "pt_other_drivers"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table)
    conn2 = psycopg2.connect(server.dsn)
    conn2.autocommit = True
    with conn2.cursor() as cur:
        cur.execute(f"INSERT INTO {table} (k, d, i, f) VALUES (%s, %s, %s, %s)", (1, 1.5, 2, D("0.5")))
    conn2.close()
    native = pg8000.native.Connection("tester", host="127.0.0.1", port=server.port, database="lakegres")
    native.run(f"INSERT INTO {table} (k, d, i, f) VALUES (:k, :d, :i, :f)", k=2, d=2.25, i=3, f=D("1.5"))
    native.close()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        rows = conn.execute(f"SELECT k, d, i, f FROM {table} ORDER BY k").fetchall()
    assert rows == [(1, D("1.50"), 2, 0.5), (2, D("2.25"), 3, 1.5)]


def test_asyncpg_numbers_take_the_described_types(server):
    table = "pt_asyncpg"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table)

    async def run():
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="tester", database="lakegres")
        try:
            await conn.execute(f"INSERT INTO {table} (k, d, f) VALUES ($1, $2, $3)", 1, D("1.255"), 2.5)
            await conn.execute(f"INSERT INTO {table} (k, d, f) VALUES ($1, $2, $3)", 2, None, None)
            with pytest.raises(asyncpg.exceptions.NumericValueOutOfRangeError):
                await conn.execute(f"INSERT INTO {table} (k, d) VALUES ($1, $2)", 3, D("1E+20"))
            return await conn.fetch(f"SELECT k, d, f FROM {table} ORDER BY k")
        finally:
            await conn.close()

    rows = [tuple(r) for r in asyncio.run(run())]
    assert rows == [(1, D("1.26"), 2.5), (2, None, None)]
