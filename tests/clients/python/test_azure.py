"""An Azure Blob warehouse (az://, abfss://) on Azurite, the Azure Storage
emulator (npm package `azurite`, installed into tests/clients/node by
`npm ci`): the start-up conditional-PUT probe passes, DDL and DML commit
one Delta version each, two servers on one warehouse share the catalog and
race commits (every acknowledged write is in the table once, losers get
40001), and the `deltalake` package reads the tables with the same
options."""

import os
import pathlib
import re
import shutil
import subprocess
import threading

import deltalake
import psycopg
import pytest

from conftest import ROOT
from test_security import start

AZURITE = ROOT / "tests" / "clients" / "node" / "node_modules" / ".bin" / "azurite-blob"
# Azurite's well-known development account and key.
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "lake"


class Azurite:
    """azurite-blob on a free loopback port, data in `folder`."""

    def __init__(self, folder: pathlib.Path):
        self.proc = subprocess.Popen(
            [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", "0", "--location", str(folder),
             "--silent", "--disableTelemetry", "--skipApiVersionCheck"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port, log = None, []
        for line in self.proc.stdout:
            log.append(line)
            if m := re.search(r"listens on http://127\.0\.0\.1:(\d+)", line):
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.wait(timeout=30)
            raise RuntimeError("azurite did not start:\n" + "".join(log))
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def storage_options(self) -> dict:
        """object_store's Azure options, for the server and for `deltalake`."""
        return {"azure_storage_account_name": ACCOUNT, "azure_storage_account_key": KEY,
                "azure_storage_endpoint": self.endpoint, "allow_http": "true"}

    @property
    def container(self):
        from azure.storage.blob import BlobServiceClient
        return BlobServiceClient(self.endpoint, credential={"account_name": ACCOUNT, "account_key": KEY}) \
            .get_container_client(CONTAINER)

    def config(self, folder: pathlib.Path, name: str, warehouse: str) -> pathlib.Path:
        config = folder / f"{name}.toml"
        options = "".join(f'{k} = "{v}"\n' for k, v in self.storage_options.items() if k != "allow_http")
        config.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{warehouse}"\n'
                          f'[storage]\nallow_http = true\n[storage.options]\n{options}')
        return config

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    if not (AZURITE.exists() and shutil.which("node")):
        if os.environ.get("LAKEGRES_REQUIRE_AZURITE"):
            pytest.fail(f"{AZURITE} or node is missing (npm ci in tests/clients/node)")
        pytest.skip("azurite is not installed (npm ci in tests/clients/node)")
    az = Azurite(tmp_path_factory.mktemp("azurite"))
    az.container.create_container()
    yield az
    az.stop()


class Running:
    def __init__(self, config):
        self.proc, self.port, self.log = start(config)
        assert self.port, "".join(self.log)

    def connect(self):
        return psycopg.connect(f"host=127.0.0.1 port={self.port} dbname=lakegres user=tester", autocommit=True)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def sqlstate(conn, sql):
    try:
        conn.execute(sql)
        return "ok"
    except psycopg.Error as e:
        return e.sqlstate


def history(conn, table):
    return [(r[0], r[4]) for r in conn.execute(f"DESCRIBE HISTORY {table}").fetchall()]


def test_statements_on_an_az_warehouse(azurite, tmp_path):
    server = Running(azurite.config(tmp_path, "az", f"az://{CONTAINER}/wh"))
    try:
        with server.connect() as conn:
            conn.execute("CREATE SCHEMA s")
            conn.execute("CREATE TABLE s.t (id INT, v STRING)")
            conn.execute("INSERT INTO s.t VALUES (1, 'a'), (2, 'b')")
            merged = conn.execute(
                "MERGE INTO s.t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 3, 'c') src ON s.t.id = src.id "
                "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (src.id, src.v)"
            ).fetchone()
            assert merged == (2, 1, 0, 1)
            conn.execute("UPDATE s.t SET v = 'x' WHERE id = 1")
            conn.execute("DELETE FROM s.t WHERE id = 3")
            rows = conn.execute("SELECT id, v FROM s.t ORDER BY id").fetchall()
            assert rows == [(1, "x"), (2, "B")]
            assert history(conn, "s.t") == [(4, "DELETE"), (3, "UPDATE"), (2, "MERGE"), (1, "WRITE"),
                                            (0, "CREATE TABLE")]
            assert conn.execute("SELECT id, v FROM s.t VERSION AS OF 2 ORDER BY id").fetchall() == \
                [(1, "a"), (2, "B"), (3, "c")]
            assert sqlstate(conn, "CREATE TABLE s.t (id INT)") == "42P07"
            assert conn.execute("SHOW TABLES IN s").fetchall() == [("s", "t", False)]
        # The blobs: one commit per statement under the warehouse prefix.
        logs = sorted(b.name for b in azurite.container.list_blobs(name_starts_with="wh/s/t/_delta_log/"))
        assert logs == [f"wh/s/t/_delta_log/{v:020}.json" for v in range(5)]
        table = deltalake.DeltaTable(f"az://{CONTAINER}/wh/s/t", storage_options=azurite.storage_options)
        assert table.version() == 4
        assert sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist()) == rows
    finally:
        server.stop()


def test_abfss_url(azurite, tmp_path):
    warehouse = f"abfss://{CONTAINER}@{ACCOUNT}.dfs.core.windows.net/wh_abfss"
    server = Running(azurite.config(tmp_path, "abfss", warehouse))
    try:
        with server.connect() as conn:
            conn.execute("CREATE TABLE a (x INT)")
            conn.execute("INSERT INTO a VALUES (7), (8)")
            assert conn.execute("SELECT sum(x) FROM a").fetchone() == (15,)
        names = {b.name for b in azurite.container.list_blobs(name_starts_with="wh_abfss/default/a/_delta_log/")}
        assert names == {f"wh_abfss/default/a/_delta_log/{v:020}.json" for v in range(2)}
    finally:
        server.stop()


def test_two_servers_race_commits(azurite, tmp_path):
    """Counter MERGEs and appends from two servers at once. A MERGE that
    loses the race for a version gets 40001 and commits nothing; each
    acknowledged one adds 1 exactly once, which only holds if Azurite
    refuses the second create of a commit file (If-None-Match: *)."""
    warehouse = f"az://{CONTAINER}/race"
    servers = [Running(azurite.config(tmp_path, f"race{i}", warehouse)) for i in range(2)]
    try:
        with servers[0].connect() as conn:
            conn.execute("CREATE TABLE counter (k INT, n BIGINT)")
            conn.execute("INSERT INTO counter VALUES (1, 0)")
            conn.execute("CREATE TABLE appends (writer INT, i INT)")
        # The second server sees the tables the first made.
        with servers[1].connect() as conn:
            assert conn.execute("SELECT k, n FROM counter").fetchall() == [(1, 0)]

        outcomes, lock = [], threading.Lock()

        def writer(w):
            with servers[w % 2].connect() as conn:
                for i in range(4):
                    merge = sqlstate(conn, "MERGE INTO counter USING (SELECT 1 AS k) src ON counter.k = src.k "
                                           "WHEN MATCHED THEN UPDATE SET n = counter.n + 1")
                    append = sqlstate(conn, f"INSERT INTO appends VALUES ({w}, {i})")
                    with lock:
                        outcomes.append((merge, append))

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len(outcomes) == 24, outcomes
        merges = [m for m, _ in outcomes]
        assert set(merges) <= {"ok", "40001"}, merges
        assert all(a == "ok" for _, a in outcomes), outcomes  # blind appends never conflict
        ok = merges.count("ok")
        # Six writers on one row: runs here see about 14 of 24 lose.
        assert ok >= 1 and merges.count("40001") >= 1, merges
        with servers[1].connect() as conn:
            assert conn.execute("SELECT k, n FROM counter").fetchall() == [(1, ok)]
            assert conn.execute("SELECT count(*), count(DISTINCT writer * 100 + i) FROM appends").fetchone() == (24, 24)
            versions = [v for v, _ in history(conn, "counter")]
            assert versions == list(range(ok + 1, -1, -1))
        table = deltalake.DeltaTable(f"{warehouse}/default/counter", storage_options=azurite.storage_options)
        assert table.version() == ok + 1
        assert table.to_pyarrow_table().to_pylist() == [{"k": 1, "n": ok}]
    finally:
        for s in servers:
            s.stop()
