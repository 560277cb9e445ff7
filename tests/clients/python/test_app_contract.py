"""What Postgres applications rely on (issue #61): catalog visibility by
search_path, and dbt's incremental SQL with composite keys and date
defaults.

SQLAlchemy's `has_table` (and so pandas' `to_sql`) asks
`pg_table_is_visible`: a table of another schema must not count, or pandas
appends to (or refuses) a table it does not write to.
"""

import pathlib
import subprocess

import pandas as pd
import psycopg
import sqlalchemy as sa


def versions(server, schema: str, table: str) -> int:
    log = pathlib.Path(server.warehouse) / schema / table / "_delta_log"
    return len(list(log.glob("*.json")))


def test_has_table_sees_only_the_search_path(server):
    url = f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS ac_other")
        conn.exec_driver_sql("CREATE OR REPLACE TABLE ac_other.ac_only_there (a INT)")
        conn.exec_driver_sql("INSERT INTO ac_other.ac_only_there VALUES (7)")
    inspector = sa.inspect(engine)
    assert not inspector.has_table("ac_only_there")
    assert inspector.has_table("ac_only_there", schema="ac_other")
    assert "ac_only_there" not in inspector.get_table_names()
    # pandas creates the table where it was asked to, and leaves the other.
    pd.DataFrame({"a": [1, 2]}).to_sql("ac_only_there", engine, if_exists="fail", index=False)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT a FROM ac_only_there ORDER BY a").fetchall() == [(1,), (2,)]
        assert conn.execute("SELECT a FROM ac_other.ac_only_there").fetchall() == [(7,)]
        visible = conn.execute(
            "SELECT n.nspname, pg_table_is_visible(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON c.relnamespace = n.oid"
            " WHERE c.relname = 'ac_only_there' ORDER BY 1"
        ).fetchall()
        assert visible == [("ac_other", False), ("default", True)]
        conn.execute("SET search_path = ac_other")
        visible = conn.execute(
            "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid"
            " WHERE c.relname = 'ac_only_there' AND pg_catalog.pg_table_is_visible(c.oid)"
        ).fetchall()
        assert visible == [("ac_other",)]
        # The system catalogs stay visible.
        assert conn.execute(
            "SELECT pg_table_is_visible('pg_class'::regclass)"
        ).fetchone() == (True,)
    engine.dispose()


def test_psql_lists_the_search_path_only(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS ac_listed")
        conn.execute("CREATE OR REPLACE TABLE ac_listed.ac_in_listed (a INT)")
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester", "-d", "lakegres",
         "-X", "-A", "-t", "-c", "SET search_path = ac_listed", "-c", r"\dt"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.split() == ["SET", "ac_listed|ac_in_listed|table|tester"]


def test_dbt_incremental_with_a_composite_key_and_a_date_default(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_orders (order_id INT, customer_id INT, updated_at TIMESTAMP)")
        conn.execute(
            "INSERT INTO ac_orders VALUES (1, 10, '2024-01-01'), (1, 11, '2024-01-02'),"
            " (2, 10, NULL), (3, NULL, '2024-01-03')"
        )
        conn.execute("CREATE OR REPLACE TABLE ac_new (order_id INT, customer_id INT)")
        conn.execute("INSERT INTO ac_new VALUES (1, 10), (2, 10), (3, NULL), (4, 4)")
        # dbt's high-water mark: the string default takes the column's type.
        assert conn.execute(
            "SELECT coalesce(max(updated_at), '1900-01-01') FROM ac_orders WHERE order_id = 2"
        ).fetchone()[0].isoformat() == "1900-01-01T00:00:00+00:00"
        assert conn.execute(
            "SELECT order_id FROM ac_orders WHERE updated_at > coalesce(NULL, '2024-01-01') ORDER BY 1"
        ).fetchall() == [(1,), (3,)]
        before = versions(server, "default", "ac_orders")
        # A composite unique_key: the (3, NULL) row matches nothing, as in
        # Postgres (NULL = NULL is not true).
        cur = conn.execute(
            "DELETE FROM ac_orders WHERE (order_id, customer_id) IN"
            " (SELECT DISTINCT order_id, customer_id FROM ac_new)"
        )
        assert cur.fetchone()[0] == 2
        assert versions(server, "default", "ac_orders") == before + 1
        rows = conn.execute("SELECT order_id, customer_id FROM ac_orders ORDER BY 1, 2").fetchall()
        assert rows == [(1, 11), (3, None)]
        # Nothing matches: no new version.
        cur = conn.execute(
            "DELETE FROM ac_orders WHERE (order_id, customer_id) IN"
            " (SELECT order_id, customer_id FROM ac_new WHERE order_id > 100)"
        )
        assert cur.fetchone()[0] == 0
        assert versions(server, "default", "ac_orders") == before + 1


def test_postgres_expressions(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO 'b%', 'abc' NOT SIMILAR TO '(a|x)b_',"
            " 'a.c' SIMILAR TO 'a.c', 'abc' SIMILAR TO 'a.c', '100%' SIMILAR TO '100#%' ESCAPE '#'"
        ).fetchone()
        assert row == (True, False, False, True, False, True)
        assert conn.execute(
            "SELECT pg_typeof(1), pg_typeof(1.5), pg_typeof('x'::text), pg_typeof(1::bigint)"
        ).fetchone() == ("integer", "numeric", "text", "bigint")
        a, b = conn.execute("SELECT gen_random_uuid(), gen_random_uuid()").fetchone()
        assert len(a) == 36 and a != b
