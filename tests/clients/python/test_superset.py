"""Apache Superset against Lakegres (issue #22, item 1), as a Superset user
works: the database, a physical dataset on a Delta table, a time-series
chart with a time range (Superset sends `DATE_TRUNC('day', day)` and
`day >= TO_DATE('2025-12-01', 'YYYY-MM-DD')`), a bar chart, a table chart,
a dashboard holding them and its filter. Superset 6.1 runs from PyPI in its
own venv (.venv-superset, which tests/run installs), with SQLite metadata;
tests/clients/superset/flow.py drives its REST API. Then headless Chromium
(Debian's package, through playwright-core from tests/clients/node) opens
the dashboard: every chart-data request it makes succeeds, and its
screenshot is kept as a test artifact (LAKEGRES_ARTIFACTS, else the test's
temporary folder)."""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import time
import urllib.request

import psycopg
import pytest

from conftest import ROOT, Server, missing_tool

SUPERSET = ROOT / "tests" / "clients" / "superset"


def superset_python() -> pathlib.Path | None:
    path = pathlib.Path(os.environ.get("LAKEGRES_SUPERSET_VENV", ROOT / ".venv-superset")) / "bin"
    return path if (path / "superset").exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def superset(tmp_path_factory):
    bin_dir = superset_python()
    if bin_dir is None:
        missing_tool("LAKEGRES_REQUIRE_SUPERSET",
                     "Superset is not installed (tests/run installs it into .venv-superset)")
    home = tmp_path_factory.mktemp("superset")
    env = {**os.environ, "SUPERSET_HOME": str(home), "FLASK_APP": "superset",
           "SUPERSET_CONFIG_PATH": str(SUPERSET / "superset_config.py")}
    for args in (["db", "upgrade"],
                 ["fab", "create-admin", "--username", "admin", "--firstname", "a",
                  "--lastname", "b", "--email", "admin@example.com", "--password", "admin"],
                 ["init"]):
        done = subprocess.run([str(bin_dir / "superset"), *args], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"superset {args[0]} failed:\n{done.stderr[-3000:]}"
    port = free_port()
    log = open(home / "server.log", "w")
    proc = subprocess.Popen([str(bin_dir / "superset"), "run", "-h", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        assert time.time() < deadline, (home / "server.log").read_text()[-3000:]
        time.sleep(1)
    server = Server(home / "warehouse")
    yield bin_dir, port, server, home
    server.stop()
    proc.terminate()
    proc.wait(timeout=30)


def test_superset_dataset_charts_and_dashboard(superset):
    bin_dir, port, server, home = superset
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA sales")
        conn.execute("CREATE TABLE sales.orders (id BIGINT, region STRING, amount DECIMAL(12,2), "
                     "day DATE) PARTITIONED BY (region)")
        conn.execute("INSERT INTO sales.orders VALUES (1, 'eu', 10.50, '2025-11-30'), "
                     "(2, 'us', 20.00, '2025-12-01'), (3, 'eu', 5.00, '2025-12-02'), "
                     "(4, 'us', 7.25, '2025-12-02')")
    done = subprocess.run([str(bin_dir / "python"), str(SUPERSET / "flow.py"), str(port),
                           str(server.port)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:] + (home / "server.log").read_text()[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])

    assert out["test_connection"] == 200
    assert out["database"] == 201
    assert "sales" in out["schemas"]
    assert out["tables"] == ["orders"]
    assert out["table_metadata"] == 200
    assert out["columns"] == [["id", "BIGINT"], ["region", "TEXT"], ["amount", "NUMERIC"],
                              ["day", "DATE"]]
    assert out["dataset"] == 201

    status, rows, sql = out["time_series"]
    assert status == 200, sql
    assert "TO_DATE('2025-12-01', 'YYYY-MM-DD')" in sql
    # Days as epoch milliseconds: 2025-12-01 and 2025-12-02 (11-30 is out of range).
    assert [(r["day"], float(r["SUM(amount)"])) for r in rows] == [
        (1764547200000.0, 20.0), (1764633600000.0, 12.25)]

    status, rows, _ = out["bar"]
    assert status == 200
    assert [(r["region"], float(r["SUM(amount)"])) for r in rows] == [("us", 27.25), ("eu", 15.5)]

    status, rows, _ = out["table"]
    assert status == 200
    assert [(r["id"], r["region"]) for r in rows] == [(1, "eu"), (2, "us"), (3, "eu"), (4, "us")]

    assert out["charts"] == [True, True, True]
    assert out["dashboard"] == 201
    assert out["dashboard_charts"] == ["Amount by region", "Daily amount", "Orders"]
    status, rows, sql = out["filtered_bar"]
    assert status == 200, sql
    assert [(r["region"], float(r["SUM(amount)"])) for r in rows] == [("eu", 15.5)]

    # The dashboard in a real browser.
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    node_modules = ROOT / "tests" / "clients" / "node" / "node_modules" / "playwright-core"
    if not (pathlib.Path(chromium).exists() and node_modules.exists() and shutil.which("node")):
        missing_tool("LAKEGRES_REQUIRE_SUPERSET",
                     "Chromium or playwright-core is missing (tests/run installs them)")
    artifacts = pathlib.Path(os.environ.get("LAKEGRES_ARTIFACTS", home))
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "superset-dashboard.png"
    done = subprocess.run(
        ["node", "superset_dashboard.mjs", f"http://127.0.0.1:{port}", str(out["dashboard_id"]),
         str(shot)],
        cwd=ROOT / "tests" / "clients" / "node", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    page = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(page["statuses"]) >= 3, page
    assert all(s == 200 for s in page["statuses"]), page
    assert page["errors"] == 0, page
    assert shot.stat().st_size > 10_000
