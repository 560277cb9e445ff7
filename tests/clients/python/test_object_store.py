"""Object storage (moto's S3): external tables made by CREATE [OR REPLACE]
TABLE … LOCATION … AS SELECT — on a local disk and in S3 each statement is
one Delta commit at the location, a replace is the next version of the same
table, and the `deltalake` package reads every version with the rows the
server returns — and the object-store request counters in /metrics."""

import contextlib
import re
import socket
import urllib.request

import deltalake
import psycopg

from test_security import start


@contextlib.contextmanager
def counted_server(moto, tmp_path, name):
    """A server on moto with /metrics on a spare port: yields its port and
    a function returning the object-store requests it made so far, by kind."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        http_port = s.getsockname()[1]
    proc, port, log = start(moto.config(tmp_path, name, top=f'http_listen = "127.0.0.1:{http_port}"\n'))
    try:
        assert port, "".join(log)

        def requests():
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as r:
                text = r.read().decode()
            return {m.group(1): int(float(m.group(2))) for m in
                    re.finditer(r'^lakegres_object_store_requests_total\{op="(\w+)"\} (\S+)$', text, re.M)}

        yield port, requests
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_ctas_at_a_location_is_a_delta_table_there(moto, tmp_path):
    proc, port, log = start(moto.config(tmp_path, "external"))
    try:
        assert port, "".join(log)
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=tester", autocommit=True) as conn:
            for name, location, options in [
                ("ext_s3", f"s3://{moto.bucket}/ingest/ext_s3", moto.storage_options),
                ("ext_local", str(tmp_path / "ext_local"), None),
            ]:
                conn.execute(f"CREATE TABLE {name} LOCATION '{location}' AS "
                             "SELECT 1 AS id, 'a' AS name UNION ALL SELECT 2, 'b'")
                conn.execute(f"CREATE OR REPLACE TABLE {name} LOCATION '{location}' AS "
                             f"SELECT id * 10 AS id, name, id > 1 AS big FROM {name}")
                rows = conn.execute(f"SELECT id, name, big FROM {name} ORDER BY id").fetchall()
                assert rows == [(10, "a", False), (20, "b", True)]
                # A CTAS onto it: refused, nothing written.
                try:
                    conn.execute(f"CREATE TABLE {name}_again LOCATION '{location}' AS SELECT 1 AS id")
                    raise AssertionError("CTAS onto a Delta table succeeded")
                except psycopg.Error as e:
                    assert e.sqlstate == "42601", e

                table = deltalake.DeltaTable(location, storage_options=options)
                assert table.version() == 1, location
                got = sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist())
                assert got == rows, location
                first = deltalake.DeltaTable(location, version=0, storage_options=options)
                assert sorted(r["id"] for r in first.to_pyarrow_table().to_pylist()) == [1, 2]
                conn.execute(f"DROP TABLE {name}")
                # DROP forgets the name; the Delta table stays where it was.
                assert deltalake.DeltaTable(location, storage_options=options).version() == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_metrics_count_object_store_requests(moto, tmp_path):
    with counted_server(moto, tmp_path, "requests") as (port, requests):
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=tester", autocommit=True) as conn:
            conn.execute("CREATE TABLE counted (id INT, v STRING)")
            before = requests()
            conn.execute("INSERT INTO counted VALUES (1, 'a'), (2, 'b')")
            written = requests()
            assert conn.execute("SELECT count(*), max(v) FROM counted").fetchone() == (2, "b")
            read = requests()
        assert set(before) >= {"get", "head", "put", "list", "delete"}
        # The INSERT put a data file and a commit; the SELECT read the data file.
        assert written["put"] >= before["put"] + 2, (before, written)
        assert read["get"] > written["get"], (written, read)


def test_a_write_does_not_read_back_its_own_commit(moto, tmp_path):
    """A write hands the table it committed to the server's cache: besides
    delta-rs' LIST after the commit (none before it: the commit entry's
    put-if-absent finds a newer version), the statement makes one LIST of
    the log from its cached version, which finds the table current (that
    version's commit file with its e-tag, and no next one), no HEAD, and
    reads nothing back."""
    with counted_server(moto, tmp_path, "own_commit") as (port, requests):
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=tester", autocommit=True) as conn:
            conn.execute("CREATE TABLE upserted (id INT, v STRING)")
            conn.execute("INSERT INTO upserted VALUES (1, 'a'), (2, 'b')")
            # Puts: the data file and the commit; the DELETE drops the
            # file that holds id 3 whole, so it writes its commit only.
            statements = [
                ("INSERT INTO upserted VALUES (3, 'c')", 2),
                ("MERGE INTO upserted t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 4, 'd') s "
                 "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", 2),
                ("UPDATE upserted SET v = 'A' WHERE id = 1", 2),
                ("DELETE FROM upserted WHERE id = 3", 1),
            ]
            for sql, puts in statements:
                before = requests()
                conn.execute(sql)
                after = requests()
                spent = {k: after[k] - before[k] for k in ("head", "list", "put")}
                assert spent == {"head": 0, "list": 2, "put": puts}, (sql, spent)
            rows = conn.execute("SELECT id, v FROM upserted ORDER BY id").fetchall()
            assert rows == [(1, "A"), (2, "B"), (4, "d")]
            history = conn.execute("DESCRIBE HISTORY upserted")
            names = [d.name for d in history.description]
            assert [r[names.index("version")] for r in history.fetchall()] == [5, 4, 3, 2, 1, 0]
        table = deltalake.DeltaTable(f"s3://{moto.bucket}/wh/default/upserted", storage_options=moto.storage_options)
        assert table.version() == 5
