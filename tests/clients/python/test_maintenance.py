"""OPTIMIZE, RESTORE and VACUUM leave plain Delta tables: after each, the
`deltalake` package reads the same rows the server returns, at the same
version, with the operation in its history."""

import pathlib

import deltalake
import psycopg
import pyarrow
import pytest


def served(conn, table):
    return sorted(conn.execute(f"SELECT id, p FROM {table}").fetchall())


def read(path):
    dt = deltalake.DeltaTable(str(path))
    t = dt.to_pyarrow_table()
    return dt, sorted(zip(t.column("id").to_pylist(), t.column("p").to_pylist()))


def parquet_files(path: pathlib.Path):
    return sorted(p for p in path.rglob("*.parquet"))


def test_optimize_restore_vacuum_read_by_deltalake(server):
    path = server.warehouse / "default" / "mt_events"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE mt_events (id INT, p STRING) USING DELTA PARTITIONED BY (p)")
        for i in range(1, 9):
            conn.execute("INSERT INTO mt_events VALUES (%s, %s)", (i, "a" if i % 2 else "b"))
        conn.execute("DELETE FROM mt_events WHERE id = 8")
        before = served(conn, "mt_events")
        assert before == [(i, "a" if i % 2 else "b") for i in range(1, 8)]
        dt, rows = read(path)
        assert (dt.version(), rows) == (9, before)
        assert len(dt.file_uris()) == 7

        # OPTIMIZE: one file per partition, same rows.
        path_out, metrics = conn.execute("OPTIMIZE mt_events").fetchone()
        assert path_out.endswith("/default/mt_events/")
        assert '"numFilesRemoved":7' in metrics and '"numFilesAdded":2' in metrics
        dt, rows = read(path)
        assert (dt.version(), rows) == (10, before)
        assert len(dt.file_uris()) == 2
        assert dt.history(1)[0]["operation"] == "OPTIMIZE"
        detail = conn.execute("DESCRIBE DETAIL mt_events").fetchone()
        sizes = pyarrow.table(dt.get_add_actions(flatten=True)).column("size_bytes").to_pylist()
        assert (detail[9], detail[10]) == (2, sum(sizes))

        # RESTORE to version 4 (ids 1 to 4, four files), then back to 10.
        restored = conn.execute("RESTORE TABLE mt_events TO VERSION AS OF 4").fetchone()
        assert restored[1:4] == (4, 2, 4)
        dt, rows = read(path)
        assert (dt.version(), rows) == (11, served(conn, "mt_events"))
        assert rows == [(1, "a"), (2, "b"), (3, "a"), (4, "b")]
        assert dt.history(1)[0]["operation"] == "RESTORE"
        conn.execute("RESTORE mt_events VERSION AS OF 10")
        dt, rows = read(path)
        assert (dt.version(), rows) == (12, before)

        # VACUUM: the retention check first, then everything unreferenced goes.
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("VACUUM mt_events RETAIN 0 HOURS")
        assert refused.value.sqlstate == "22023"
        conn.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
        listed = [r[0] for r in conn.execute("VACUUM mt_events RETAIN 0 HOURS DRY RUN").fetchall()]
        # 8 inserted files and 2 written by OPTIMIZE; 2 are live.
        assert len(listed) == 8
        assert len(parquet_files(path)) == 10
        conn.execute("VACUUM mt_events RETAIN 0 HOURS")
        conn.execute("RESET spark.databricks.delta.retentionDurationCheck.enabled")
        files = parquet_files(path)
        assert len(files) == 2
        assert all(f.as_uri() not in listed for f in files)
        dt, rows = read(path)
        assert (dt.version(), rows) == (14, before)
        assert [h["operation"] for h in dt.history(2)] == ["VACUUM END", "VACUUM START"]
        assert sorted(pathlib.Path(u.removeprefix("file://")) for u in dt.file_uris()) == files


def wait_for(path: pathlib.Path, seconds=30):
    import time
    for _ in range(seconds * 10):
        if path.exists():
            return True
        time.sleep(0.1)
    return False


def test_checkpoints_follow_the_interval_and_a_failed_one_fails_no_write(server):
    """Checkpoints come every delta.checkpointInterval commits, written after
    the statement answered; one that cannot be written is logged, and the
    INSERT that committed still succeeds."""
    log = server.warehouse / "default" / "mt_ckpt" / "_delta_log"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE mt_ckpt (id INT, p STRING) USING DELTA "
                     "TBLPROPERTIES ('delta.checkpointInterval' = '5')")
        for i in range(1, 10):  # versions 1 … 9
            conn.execute("INSERT INTO mt_ckpt VALUES (%s, 'a')", (i,))
        assert wait_for(log / "00000000000000000004.checkpoint.parquet")
        assert wait_for(log / "00000000000000000009.checkpoint.parquet")
        assert not (log / "00000000000000000003.checkpoint.parquet").exists()
        # A folder where the next checkpoint must go: writing it fails.
        (log / "00000000000000000014.checkpoint.parquet").mkdir()
        for i in range(10, 16):  # versions 10 … 15
            conn.execute("INSERT INTO mt_ckpt VALUES (%s, 'a')", (i,))
        assert conn.execute("DESCRIBE HISTORY mt_ckpt LIMIT 1").fetchone()[0] == 15
        assert conn.execute("SELECT count(*) FROM mt_ckpt").fetchone() == (15,)
        dt, rows = read(log.parent)
        assert (dt.version(), len(rows)) == (15, 15)


def test_the_change_feed_is_the_one_deltalake_reads(server):
    """table_changes() answers what the deltalake package's load_cdf reads
    from the same table: the server writes the change files it needs."""
    path = server.warehouse / "default" / "mt_cdf"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE mt_cdf (id INT, p STRING) USING DELTA "
                     "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
        conn.execute("INSERT INTO mt_cdf VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        conn.execute("UPDATE mt_cdf SET p = 'B' WHERE id = 2")
        conn.execute("DELETE FROM mt_cdf WHERE id = 3")
        conn.execute("MERGE INTO mt_cdf t USING (SELECT 1 AS id, 'A' AS p) s ON t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET *")
        cur = conn.execute("SELECT id, p, _change_type, _commit_version, _commit_timestamp "
                           "FROM table_changes('mt_cdf', 1)")
        served = sorted((r[0], r[1], r[2], int(r[3]), r[4].replace(tzinfo=None)) for r in cur.fetchall())
    feed = pyarrow.table(deltalake.DeltaTable(str(path)).load_cdf(starting_version=1).read_all())
    read = sorted((r["id"], r["p"], r["_change_type"], r["_commit_version"], r["_commit_timestamp"])
                  for r in feed.to_pylist())
    assert served == read
    assert [r[2] for r in served if r[3] == 4] == ["update_postimage", "update_preimage"]
