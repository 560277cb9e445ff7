"""Databricks' reading of SQL text over Postgres drivers (issue #60).

The server reports `standard_conforming_strings = off` and reads `'…'` with
Databricks' backslash escapes; drivers that put parameters into the text
themselves (psycopg2, psycopg 3's client cursors and literals, psql's
variables) then double backslashes, and drivers that bind them (psycopg 3,
asyncpg, pg8000) send them apart. Either way a value goes in and comes out
unchanged."""

import asyncio
import subprocess

import asyncpg
import pg8000.native
import psycopg
import psycopg2
import pytest
import sqlalchemy as sa
from psycopg import sql

VALUES = [
    "a\\b",
    "C:\\path\\new",
    "\\d+\\s*",
    "it's",
    "it\\'s",
    'say "hi"',
    "tab\there",
    "line\nbreak",
    "é😀 ünïcode",
    "100%",
    "a_b",
    "'; DROP TABLE dl_values; --",
    "\\",
    "",
]


@pytest.fixture(scope="module")
def values_table(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dl_values (driver STRING, n INT, v STRING)")
    return "dl_values"


def stored(server, driver):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT n, v FROM dl_values WHERE driver = %s ORDER BY n", (driver,)
        ).fetchall()
    return [v for _, v in rows]


def test_server_reports_escapes_off(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.info.parameter_status("standard_conforming_strings") == "off"
        assert conn.execute("SELECT length('\\t'), '\\\\d'").fetchone() == (1, "\\d")
    conn = psycopg2.connect(server.dsn)
    assert conn.get_parameter_status("standard_conforming_strings") == "off"
    conn.close()


def test_psycopg2_quotes_parameters_into_the_text(server, values_table):
    conn = psycopg2.connect(server.dsn)
    conn.autocommit = True
    cur = conn.cursor()
    for n, v in enumerate(VALUES):
        cur.execute("INSERT INTO dl_values VALUES ('psycopg2', %s, %s)", (n, v))
        cur.execute("SELECT %s, length(%s)", (v, v))
        assert cur.fetchone() == (v, len(v))
    cur.execute("SELECT regexp_extract(%s, %s, 1)", ("order 1234", "(\\d+)"))
    assert cur.fetchone() == ("1234",)
    conn.close()
    assert stored(server, "psycopg2") == VALUES


def test_psycopg3_binds_and_quotes(server, values_table):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        for n, v in enumerate(VALUES):
            conn.execute("INSERT INTO dl_values VALUES ('psycopg3', %s, %s)", (n, v))
            assert conn.execute("SELECT %s::STRING", (v,)).fetchone() == (v,)
            # A literal quoted by the driver for the server's setting.
            literal = sql.SQL("SELECT {}").format(sql.Literal(v))
            assert conn.execute(literal).fetchone() == (v,)
        cur = psycopg.ClientCursor(conn)
        for n, v in enumerate(VALUES):
            cur.execute("INSERT INTO dl_values VALUES ('psycopg3-client', %s, %s)", (n, v))
    assert stored(server, "psycopg3") == VALUES
    assert stored(server, "psycopg3-client") == VALUES


def test_asyncpg_and_pg8000_bind(server, values_table):
    async def run():
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="tester", database="lakegres")
        await conn.executemany(
            "INSERT INTO dl_values VALUES ('asyncpg', $1, $2)", list(enumerate(VALUES))
        )
        for v in VALUES:
            assert await conn.fetchval("SELECT $1::STRING", v) == v
        await conn.close()

    asyncio.run(run())
    assert stored(server, "asyncpg") == VALUES
    conn = pg8000.native.Connection(host="127.0.0.1", port=server.port, user="tester", database="lakegres")
    for n, v in enumerate(VALUES):
        conn.run("INSERT INTO dl_values VALUES ('pg8000', :n, :v)", n=n, v=v)
    conn.close()
    assert stored(server, "pg8000") == VALUES


def test_sqlalchemy_text_and_core(server, values_table):
    engine = sa.create_engine(f"postgresql+psycopg2://tester@127.0.0.1:{server.port}/lakegres")
    with engine.begin() as conn:
        for n, v in enumerate(VALUES):
            conn.execute(sa.text("INSERT INTO dl_values VALUES ('sqlalchemy', :n, :v)"), {"n": n, "v": v})
        got = conn.execute(sa.text("SELECT :v"), {"v": "x\\y'z"}).scalar()
        assert got == "x\\y'z"
    engine.dispose()
    assert stored(server, "sqlalchemy") == VALUES


def test_psql_variables_and_escapes(server):
    script = (
        "\\set v 'a\\\\b it''s'\n"
        "SELECT :'v' AS v, length(:'v') AS n;\n"
        "SELECT regexp_replace('a  b', '\\\\s+', '_') AS r;\n"
    )
    out = subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(server.port),
         "-U", "tester", "-d", "lakegres"],
        input=script, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["a\\b it's|8", "a_b"]
