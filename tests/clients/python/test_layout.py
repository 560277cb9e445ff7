"""The files CTAS, INSERT and OPTIMIZE write are laid out for scanning:
row groups of at most 131,072 rows (so a scan's threads share a file), and
statistics in the log for the columns `delta.dataSkippingNumIndexedCols`
names, read back from the files and the log with pyarrow and deltalake."""

import json

import deltalake
import psycopg
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 131_072


def data_files(server, table):
    dt = deltalake.DeltaTable(str(server.warehouse / "default" / table))
    return dt, [uri.removeprefix("file://") for uri in dt.file_uris()]


def row_groups(path):
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def adds(server, table):
    log = server.warehouse / "default" / table / "_delta_log"
    out = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                out.append(action["add"])
    return out


def test_ctas_and_optimize_write_row_groups_a_scan_can_split(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("SET datafusion.execution.target_partitions = 1")
        conn.execute(
            "CREATE TABLE layout_ctas AS SELECT n AS id, n * 2 AS twice "
            "FROM (SELECT * FROM range(0, 300000)) AS r(n)"
        )
        _, files = data_files(server, "layout_ctas")
        assert [row_groups(f) for f in files] == [[ROW_GROUP_ROWS, ROW_GROUP_ROWS, 37_856]]

        # Three appends, then OPTIMIZE into one file with the same row groups.
        conn.execute("CREATE TABLE layout_opt (id BIGINT)")
        for start in (0, 100_000, 200_000):
            conn.execute(
                f"INSERT INTO layout_opt SELECT n FROM (SELECT * FROM range({start}, {start + 100_000})) AS r(n)"
            )
        conn.execute("OPTIMIZE layout_opt")
        dt, files = data_files(server, "layout_opt")
        assert [row_groups(f) for f in files] == [[ROW_GROUP_ROWS, ROW_GROUP_ROWS, 37_856]]
        assert conn.execute("SELECT count(*), sum(id) FROM layout_opt").fetchone() == (
            300_000,
            sum(range(300_000)),
        )


def test_log_statistics_cover_the_indexed_columns(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE layout_stats (a INT, b STRING, c DOUBLE)")
        conn.execute("INSERT INTO layout_stats VALUES (1, 'x', 1.5), (3, 'y', NULL)")
        stats = json.loads(adds(server, "layout_stats")[-1]["stats"])
        assert stats["numRecords"] == 2
        assert stats["minValues"] == {"a": 1, "b": "x", "c": 1.5}
        assert stats["maxValues"] == {"a": 3, "b": "y", "c": 1.5}
        assert stats["nullCount"] == {"a": 0, "b": 0, "c": 1}

        # Only the first column when the table says so.
        conn.execute(
            "CREATE TABLE layout_one (a INT, b STRING) "
            "TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '1')"
        )
        conn.execute("INSERT INTO layout_one VALUES (1, 'x'), (2, 'y')")
        stats = json.loads(adds(server, "layout_one")[-1]["stats"])
        assert stats["minValues"] == {"a": 1}
        assert stats["maxValues"] == {"a": 2}
        assert set(stats["nullCount"]) == {"a"}

        # Or the columns it names.
        conn.execute(
            "CREATE TABLE layout_named (a INT, b STRING) "
            "TBLPROPERTIES ('delta.dataSkippingStatsColumns' = 'b')"
        )
        conn.execute("INSERT INTO layout_named VALUES (1, 'x'), (2, 'y')")
        stats = json.loads(adds(server, "layout_named")[-1]["stats"])
        assert stats["minValues"] == {"b": "x"}
        assert stats["maxValues"] == {"b": "y"}
