"""Every table the client tests wrote is a plain Delta table that the
`deltalake` package reads with the same rows the server returns. Runs last
(file name) so it sees the tables of the other tests."""

import datetime
import decimal
import re

import deltalake
import psycopg
import pyarrow
from deltalake import QueryBuilder


def arrow_of(dt):
    """The table's rows: deltalake's pyarrow reader, or its DataFusion
    reader for what the former does not take (reader features such as
    deletion vectors, column mapping, a shallow clone's absolute paths)."""
    protocol = dt.protocol()
    mapped = dt.metadata().configuration.get("delta.columnMapping.mode", "none") != "none"
    # The pyarrow reader joins an absolute path to the table's folder.
    absolute = any(":" in u.removeprefix("file://") for u in dt.file_uris())
    if protocol.min_reader_version < 2 and not mapped and not absolute:
        return dt.to_pyarrow_table()
    batches = QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    return pyarrow.table(batches)


def normalize(v):
    if isinstance(v, datetime.datetime) and v.tzinfo is None:
        return v.replace(tzinfo=datetime.timezone.utc)
    if isinstance(v, float):
        return round(v, 9)
    return v


def test_deltalake_reads_every_table(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS dl")
        conn.execute(
            "CREATE TABLE dl.parts (id INT, region STRING, amount DECIMAL(12,2), day DATE) "
            "PARTITIONED BY (region)"
        )
        conn.execute(
            "INSERT INTO dl.parts VALUES (1, 'eu', 10.50, '2026-01-01'), (2, 'us', 20.00, '2026-01-02'), "
            "(3, 'eu', NULL, NULL)"
        )
        conn.execute("CREATE TABLE dl.ctas AS SELECT region, sum(amount) AS total FROM dl.parts GROUP BY region")
        conn.execute("UPDATE dl.parts SET amount = amount * 2 WHERE region = 'eu'")
        conn.execute("DELETE FROM dl.parts WHERE id = 2")
        conn.execute(
            "MERGE INTO dl.parts t USING (SELECT 1 AS id, 'eu' AS region, 1.00 AS amount, DATE '2026-02-01' AS day "
            "UNION ALL SELECT 9, 'apac', 9.99, DATE '2026-02-02') s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        # Selective overwrites (issue #4), each a plain Delta commit.
        conn.execute("CREATE TABLE dl.days (id INT, v STRING, day DATE) PARTITIONED BY (day)")
        conn.execute(
            "INSERT INTO dl.days VALUES (1, 'a', '2026-01-01'), (2, 'b', '2026-01-02'), (3, 'c', '2026-01-03')"
        )
        conn.execute("INSERT OVERWRITE dl.days PARTITION (day = '2026-01-01') SELECT 10, 'aa'")
        conn.execute("INSERT INTO dl.days REPLACE WHERE day = '2026-01-02' VALUES (20, 'bb', '2026-01-02')")
        conn.execute(
            "INSERT INTO dl.days REPLACE USING (day) SELECT 30 AS id, 'cc' AS v, DATE '2026-01-03' AS day"
        )
        conn.execute(
            "INSERT INTO dl.days t REPLACE ON t.id = s.id (SELECT 30 AS id, 'ccc' AS v, DATE '2026-01-04' AS day) s"
        )
        days = deltalake.DeltaTable(str(server.warehouse / "dl" / "days"))
        assert days.version() == 5
        assert sorted(days.to_pyarrow_table().column("id").to_pylist()) == [10, 20, 30]
        history = days.history()
        assert [h["operation"] for h in history[:4]] == ["WRITE"] * 4

        checked = 0
        for schema_dir in sorted(p for p in server.warehouse.iterdir() if p.is_dir()):
            for table_dir in sorted(p for p in schema_dir.iterdir() if (p / "_delta_log").is_dir()):
                name = f"{schema_dir.name}.{table_dir.name}"
                dt = deltalake.DeltaTable(str(table_dir))
                arrow = arrow_of(dt)
                columns = [f.name for f in dt.schema().fields]
                quoted = [c if re.fullmatch(r"[a-z_][a-z0-9_]*", c) else f'"{c}"' for c in columns]
                cur = conn.execute(f"SELECT {', '.join(quoted)} FROM {name}")
                served = sorted(
                    (tuple(normalize(v) for v in row) for row in cur.fetchall()), key=repr
                )
                read = sorted(
                    (
                        tuple(normalize(arrow.column(c)[i].as_py()) for c in columns)
                        for i in range(arrow.num_rows)
                    ),
                    key=repr,
                )
                assert served == read, name
                checked += 1
        assert checked >= 5
