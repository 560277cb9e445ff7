"""The dbt project in tests/clients/dbt, run with dbt-postgres against a real
server: seeds, view / table / incremental models (merge, delete+insert,
append, on_schema_change='append_new_columns'), a check snapshot, data
tests, docs generate, and a second run after the source data changed (which
renames, drops, merges, adds columns and closes snapshot rows). The profile's
dbname is `shopdb`: any database name reaches the warehouse."""

import json
import os
import pathlib
import shutil
import subprocess
from decimal import Decimal

import psycopg
import pytest
from deltalake import DeltaTable

from conftest import ROOT, Server, missing_tool

PROJECT = ROOT / "tests" / "clients" / "dbt"


def dbt_binary() -> str | None:
    path = os.environ.get("LAKEGRES_DBT") or str(ROOT / ".venv-dbt" / "bin" / "dbt")
    return path if pathlib.Path(path).exists() else None


@pytest.fixture(scope="module")
def dbt(tmp_path_factory):
    binary = dbt_binary()
    if binary is None:
        missing_tool("LAKEGRES_REQUIRE_DBT", "dbt is not installed (tests/run installs it into .venv-dbt)")
    base = tmp_path_factory.mktemp("dbt")
    server = Server(base / "warehouse")
    project = base / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "logs"))

    def run(*args: str) -> str:
        done = subprocess.run(
            [binary, "--no-use-colors", *args, "--profiles-dir", str(project)],
            cwd=project,
            env={**os.environ, "LAKEGRES_PORT": str(server.port), "DO_NOT_TRACK": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"dbt {' '.join(args)} failed:\n{done.stdout[-6000:]}"
        return done.stdout

    yield run, server, project
    server.stop()


def rows(server: Server, sql: str) -> list[tuple]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


ORDERS = [
    (100, 1, "12.50", "shipped", "2024-01-03"),
    (101, 1, "7.25", "placed", "2024-01-04"),
    (102, 2, "30.00", "shipped", "2024-01-04"),
    (103, 3, "5.00", "returned", "2024-01-05"),
    (104, 4, "99.99", "placed", "2024-01-06"),
    (105, 2, "1.01", "shipped", "2024-01-07"),
]


def orders(server: Server, model: str) -> list[tuple]:
    return [
        (o, c, str(a), s, d.isoformat())
        for o, c, a, s, d in rows(server, f"SELECT * FROM shop.{model} ORDER BY order_id")
    ]


def test_dbt_project_end_to_end(dbt):
    run, server, project = dbt

    assert "PASS=2" in run("seed")
    assert "PASS=7" in run("run")
    assert "PASS=1" in run("snapshot")
    assert "PASS=12" in run("test")
    # The catalog the client connected to is the name it gave.
    with psycopg.connect(server.dsn.replace("dbname=lakegres", "dbname=shopdb"), autocommit=True) as conn:
        assert conn.execute("SELECT current_database()").fetchall() == [("shopdb",)]
    for model in ("orders_merge", "orders_delete_insert", "orders_append"):
        assert orders(server, model) == ORDERS, model
    totals = "SELECT customer_id, orders, CAST(total AS STRING) FROM shop.customer_totals ORDER BY 1"
    assert rows(server, totals) == [(1, 2, "19.75"), (2, 2, "31.01"), (3, 1, "5.00"), (4, 1, "99.99")]
    # Views are views, tables tables, for every client.
    assert rows(
        server,
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'shop' AND table_name LIKE 'stg%' ORDER BY 1",
    ) == [("stg_customers", "VIEW"), ("stg_orders", "VIEW")]
    assert rows(server, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'stg%'") == [(0,)]

    # The source changes: order 101 ships, order 106 arrives.
    seed = project / "seeds" / "orders.csv"
    text = seed.read_text().replace("101,1,7.25,placed", "101,1,7.25,shipped")
    seed.write_text(text + "106,3,20.00,placed,2024-01-08\n")
    run("seed")
    # The second run replaces the views (rename to a backup, rename the new
    # one in, drop the backup) and runs each incremental strategy; with
    # `wide`, orders_wide selects two more columns, which dbt adds (it reads
    # information_schema.columns of the temporary table it staged the new
    # rows in, then sends ALTER TABLE … ADD COLUMN "amount" numeric(10,2)).
    assert "PASS=7" in run("run", "--vars", "{wide: true}")
    assert "PASS=1" in run("snapshot")
    assert "PASS=12" in run("test")

    new = (106, 3, "20.00", "placed", "2024-01-08")
    shipped = [(100, 1, "12.50", "shipped", "2024-01-03"), (101, 1, "7.25", "shipped", "2024-01-04")]
    # merge on order_id: 101 updated, 106 inserted.
    assert orders(server, "orders_merge") == shipped + ORDERS[2:] + [new]
    # delete+insert of the rows from the latest date on (105, 106): 101 keeps
    # its old status.
    assert orders(server, "orders_delete_insert") == ORDERS + [new]
    # append of the orders past the highest id.
    assert orders(server, "orders_append") == ORDERS + [new]
    assert rows(server, "SELECT customer_id, orders FROM shop.customer_totals ORDER BY 1") == [
        (1, 2),
        (2, 2),
        (3, 2),
        (4, 1),
    ]
    assert rows(server, "SELECT * FROM shop.orders_wide WHERE order_id >= 105 ORDER BY 1") == [
        (105, "shipped", None, None),
        (106, "placed", "PLACED", Decimal("20.00")),
    ]
    # The check snapshot closed order 101's old row and opened two.
    assert rows(
        server,
        "SELECT order_id, status, dbt_valid_to IS NULL FROM shop.orders_snapshot "
        "WHERE order_id IN (101, 106) ORDER BY order_id, dbt_valid_from",
    ) == [(101, "placed", False), (101, "shipped", True), (106, "placed", True)]
    # No temporary table and no backup is left behind.
    assert rows(
        server,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop' "
        "AND (table_name LIKE '%dbt_tmp%' OR table_name LIKE '%dbt_backup%')",
    ) == []

    # Each incremental model is an ordinary Delta table: one commit for the
    # first run's CREATE TABLE AS, one for each later run's write.
    warehouse = server.warehouse
    merged = DeltaTable(str(warehouse / "shop" / "orders_merge"))
    assert merged.version() == 1
    assert merged.history(1)[0]["operation"] == "MERGE"
    table = merged.to_pyarrow_table().sort_by("order_id")
    assert table.column("order_id").to_pylist() == [100, 101, 102, 103, 104, 105, 106]
    assert table.column("status").to_pylist()[1] == "shipped"
    appended = DeltaTable(str(warehouse / "shop" / "orders_append"))
    assert appended.version() == 1
    assert appended.to_pyarrow_table().num_rows == 7

    # docs generate reads the catalog: types with their modifiers, views,
    # and the descriptions dbt wrote with COMMENT ON (persist_docs).
    run("docs", "generate")
    catalog = json.loads((project / "target" / "catalog.json").read_text())
    assert catalog["errors"] is None
    nodes = catalog["nodes"]
    assert len(nodes) == 10
    stg_orders = nodes["model.lakegres_shop.stg_orders"]
    assert stg_orders["metadata"]["type"] == "VIEW"
    assert stg_orders["metadata"]["comment"] == "One row per order, typed."
    assert stg_orders["columns"]["amount"]["type"] == "numeric(10,2)"
    stg_customers = nodes["model.lakegres_shop.stg_customers"]
    assert stg_customers["columns"]["customer_id"]["comment"] == "The customer's key."
    totals = nodes["model.lakegres_shop.customer_totals"]
    assert totals["metadata"]["type"] == "BASE TABLE"
    assert totals["metadata"]["comment"] == "Orders and spend per customer."
    assert totals["columns"]["total"]["comment"] == "The sum of the customer's order amounts."
    assert list(totals["columns"]) == ["customer_id", "name", "orders", "total"]
