"""The Python drivers and libraries users connect with: psycopg2, pg8000,
asyncpg (binary format, prepared statements, a pool that resets its
connections), SQLAlchemy 2 (inspection, Core) and pandas."""

import asyncio
import datetime
import decimal

import asyncpg
import pytest
import pandas as pd
import pg8000.native
import psycopg2
import sqlalchemy as sa


def test_psycopg2_parameters_and_executemany(server):
    conn = psycopg2.connect(host="127.0.0.1", port=server.port, user="tester", dbname="lakegres")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TABLE drv_p2 (id INT, name STRING, amount DECIMAL(10,2), day DATE)")
    cur.execute("INSERT INTO drv_p2 VALUES (%s, %s, %s, %s)", (1, "a", decimal.Decimal("1.50"), datetime.date(2026, 1, 1)))
    cur.executemany("INSERT INTO drv_p2 VALUES (%s, %s, %s, %s)", [(2, "b", None, None), (3, "c", decimal.Decimal("3.25"), None)])
    cur.execute("SELECT id, name, amount, day FROM drv_p2 WHERE id <= %s ORDER BY id", (2,))
    assert cur.fetchall() == [(1, "a", decimal.Decimal("1.50"), datetime.date(2026, 1, 1)), (2, "b", None, None)]
    assert [d.name for d in cur.description] == ["id", "name", "amount", "day"]
    conn.close()


def test_pg8000_native(server):
    conn = pg8000.native.Connection(host="127.0.0.1", port=server.port, user="tester", database="lakegres")
    conn.run("CREATE TABLE drv_p8 (id BIGINT, v DOUBLE)")
    conn.run("INSERT INTO drv_p8 VALUES (:i, :v)", i=7, v=0.5)
    assert conn.run("SELECT id, v FROM drv_p8 WHERE id = :i", i=7) == [[7, 0.5]]
    conn.close()


def test_asyncpg_binary_prepared_and_pool(server):
    async def run():
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="tester", database="lakegres")
        await conn.execute("CREATE TABLE drv_apg (id INT, name STRING, ts TIMESTAMP)")
        ts = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
        await conn.executemany("INSERT INTO drv_apg VALUES ($1, $2, $3)", [(1, "a", ts), (2, "b", None)])
        statement = await conn.prepare("SELECT id, name, ts FROM drv_apg WHERE id = $1")
        row = await statement.fetchrow(1)
        assert (row["id"], row["name"], row["ts"]) == (1, "a", ts)
        assert await statement.fetchval(2) == 2
        await conn.close()
        pool = await asyncpg.create_pool(host="127.0.0.1", port=server.port, user="tester",
                                         database="lakegres", min_size=1, max_size=2)
        for _ in range(3):  # each release resets the connection
            async with pool.acquire() as c:
                assert await c.fetchval("SELECT count(*) FROM drv_apg") == 2
        await pool.close()

    asyncio.run(run())


@pytest.fixture(scope="module")
def uncached_server(tmp_path_factory):
    """A server that reads every point lookup through Parquet."""
    from conftest import Server
    srv = Server(tmp_path_factory.mktemp("uncached") / "warehouse", "--lookup-cache-size", "0")
    yield srv
    srv.stop()


@pytest.mark.parametrize("which", ["server", "uncached_server"])
def test_prepared_lookups_see_other_connections_writes(which, request):
    """Key lookups by a prepared statement (answered from the table's rows
    decoded in memory, or read through Parquet when the cache is off)
    return the latest committed rows, in text and binary."""
    import psycopg
    server = request.getfixturevalue(which)
    dsn = f"host=127.0.0.1 port={server.port} dbname=lakegres user=tester"
    with psycopg.connect(dsn, autocommit=True) as writer, \
            psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as reader:
        writer.execute("CREATE TABLE drv_lookup AS SELECT id, concat('v', CAST(id AS STRING)) AS v, "
                       "CAST('2026-01-01 00:00:00' AS TIMESTAMP) AS ts FROM range(1, 5001) AS t(id)")
        query = "SELECT id, v, ts FROM drv_lookup WHERE id = %s"
        ts = datetime.datetime(2026, 1, 1)  # a cast to TIMESTAMP makes a timestamp_ntz column
        planned = "SELECT id, v, ts FROM drv_lookup WHERE id >= %s AND id <= %s"
        for binary in (False, True):
            with reader.cursor(binary=binary) as cur:
                assert cur.execute(query, (4242,)).fetchall() == [(4242, "v4242", ts)]
                lookup_types = [d.type_code for d in cur.description]
                assert cur.execute(planned, (4242, 4242)).fetchall() == [(4242, "v4242", ts)]
                assert [d.type_code for d in cur.description] == lookup_types
                assert cur.execute(query, (9999,)).fetchall() == []
        for n in range(3):
            writer.execute(f"UPDATE drv_lookup SET v = 'new{n}' WHERE id = 4242")
            assert reader.execute(query, (4242,)).fetchone()[1] == f"new{n}"
        writer.execute("INSERT INTO drv_lookup VALUES (9999, 'late', NULL)")
        assert reader.execute(query, (9999,)).fetchall() == [(9999, "late", None)]
        # Files written before a column was added have no such column.
        writer.execute("ALTER TABLE drv_lookup ADD COLUMN extra INT")
        writer.execute("INSERT INTO drv_lookup VALUES (9999, 'later', NULL, 7)")
        widened = "SELECT id, v, extra FROM drv_lookup WHERE id = %s"
        assert sorted(reader.execute(widened, (9999,)).fetchall()) == [(9999, "late", None), (9999, "later", 7)]
        assert reader.execute(widened, (1,)).fetchall() == [(1, "v1", None)]
        assert reader.execute("SELECT id FROM drv_lookup WHERE v = %s", ("v17",)).fetchall() == [(17,)]


def test_sqlalchemy_inspection_core_and_pandas(server):
    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE drv_sa (id INT NOT NULL COMMENT 'the key', name STRING) COMMENT 'rows'"))
        conn.execute(sa.text("INSERT INTO drv_sa VALUES (:i, :n)"), [{"i": 1, "n": "a"}, {"i": 2, "n": "b"}])
    inspector = sa.inspect(engine)
    assert "default" in inspector.get_schema_names()
    assert "drv_sa" in inspector.get_table_names(schema="default")
    columns = inspector.get_columns("drv_sa", schema="default")
    assert [(c["name"], str(c["type"]), c["nullable"], c["comment"]) for c in columns] == [
        ("id", "INTEGER", False, "the key"),
        ("name", "TEXT", True, None),
    ]
    assert inspector.get_table_comment("drv_sa", schema="default") == {"text": "rows"}
    assert inspector.get_pk_constraint("drv_sa", schema="default")["constrained_columns"] == []
    # Autoload reflects the table from the catalog.
    table = sa.Table("drv_sa", sa.MetaData(), autoload_with=engine, schema="default")
    assert [c.name for c in table.columns] == ["id", "name"]
    with engine.begin() as conn:
        conn.execute(sa.insert(table).values(id=3, name="c"))
    with engine.connect() as conn:
        rows = conn.execute(sa.select(table.c.name).where(table.c.id >= 2).order_by(table.c.id)).fetchall()
    assert [tuple(r) for r in rows] == [("b",), ("c",)]

    frame = pd.read_sql("SELECT id, name FROM drv_sa ORDER BY id", engine)
    assert frame["name"].tolist() == ["a", "b", "c"]
    pd.DataFrame({"x": [1, 2], "y": ["p", "q"]}).to_sql("drv_pd", engine, index=False, if_exists="append")
    assert pd.read_sql("SELECT x, y FROM drv_pd ORDER BY x", engine).values.tolist() == [[1, "p"], [2, "q"]]


def test_dml_result_rows_can_be_switched_off(server):
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE drv_rows (a INT)")
        cur = conn.execute("INSERT INTO drv_rows VALUES (1), (2)")
        assert cur.fetchall() == [(2, 2)]
        # SHOW ALL lists Lakegres' own settings with Postgres' parameters.
        settings = dict(conn.execute("SHOW ALL").fetchall())
        assert settings["lakegres.dml_result_rows"] == "on"
        assert settings["TimeZone"] == "UTC"
        conn.execute("SET lakegres.dml_result_rows = off")
        assert dict(conn.execute("SHOW ALL").fetchall())["lakegres.dml_result_rows"] == "off"
        cur = conn.execute("INSERT INTO drv_rows VALUES (3)")
        assert cur.description is None and cur.statusmessage == "INSERT 0 1" and cur.rowcount == 1
        cur = conn.execute("UPDATE drv_rows SET a = a + 1 WHERE a > 1")
        assert cur.description is None and cur.rowcount == 2
