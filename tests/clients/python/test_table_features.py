"""Delta table features (issue #23) leave tables the `deltalake` package
reads with the rows the server returns: column mapping with renamed and
dropped columns, nested types, deletion-vector and other protocol upgrades.
deltalake's `to_pyarrow_table` ignores column mapping, so column-mapped
tables are read through its DataFusion `QueryBuilder`, which honours it."""

import json
from datetime import date

import deltalake
import psycopg
import pyarrow
from deltalake import QueryBuilder


def read_mapped(path, sql="SELECT * FROM t ORDER BY 1"):
    table = path if isinstance(path, deltalake.DeltaTable) else deltalake.DeltaTable(str(path))
    batches = QueryBuilder().register("t", table).execute(sql).read_all()
    return pyarrow.table(batches).to_pylist()


def test_column_mapping_rename_drop_read_by_deltalake(server):
    path = server.warehouse / "default" / "tf_people"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tf_people (id INT, `first name` STRING, amount DOUBLE, day DATE)"
            " PARTITIONED BY (day)"
        )
        conn.execute(
            "INSERT INTO tf_people VALUES (1, 'ann', 1.5, DATE'2024-01-01'),"
            " (2, 'bob', 2.5, DATE'2024-01-02')"
        )
        conn.execute(
            "ALTER TABLE tf_people SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
        )
        conn.execute("ALTER TABLE tf_people RENAME COLUMN amount TO `total €`")
        conn.execute("ALTER TABLE tf_people RENAME COLUMN day TO d")
        conn.execute("ALTER TABLE tf_people DROP COLUMN `first name`")
        conn.execute("INSERT INTO tf_people VALUES (3, 3.5, DATE'2024-01-03')")
        conn.execute("UPDATE tf_people SET `total €` = 10 WHERE id = 1")
        served = conn.execute("SELECT * FROM tf_people ORDER BY id").fetchall()
        history = [
            r[4] for r in conn.execute("DESCRIBE HISTORY tf_people").fetchall()
        ]

    assert [tuple(r) for r in served] == [
        (1, 10.0, date(2024, 1, 1)),
        (2, 2.5, date(2024, 1, 2)),
        (3, 3.5, date(2024, 1, 3)),
    ]
    assert history[:6] == [
        "UPDATE",
        "WRITE",
        "DROP COLUMNS",
        "RENAME COLUMN",
        "RENAME COLUMN",
        "SET TBLPROPERTIES",
    ]
    table = deltalake.DeltaTable(str(path))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (2, 5)
    assert [f.name for f in table.schema().fields] == ["id", "total €", "d"]
    assert table.metadata().partition_columns == ["d"]
    rows = read_mapped(path)
    assert [tuple(r.values()) for r in rows] == [tuple(r) for r in served]
    # The files still hold the first physical names: nothing was rewritten
    # but the file UPDATE touched.
    first = deltalake.DeltaTable(str(path), version=1)
    assert [f.name for f in first.schema().fields] == ["id", "first name", "amount", "day"]


def test_nested_types_and_deletion_vector_protocol_read_by_deltalake(server):
    path = server.warehouse / "default" / "tf_nested"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tf_nested (id INT, tags ARRAY<STRING>, props MAP<STRING,INT>,"
            " addr STRUCT<street: STRING COMMENT 'the street', zip: INT NOT NULL>)"
            " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
        )
        conn.execute(
            "INSERT INTO tf_nested VALUES (1, array('a', 'b'), map('x', 1),"
            " named_struct('street', 'Main', 'zip', 123)), (2, NULL, NULL, NULL)"
        )
        conn.execute("DELETE FROM tf_nested WHERE id = 2")
        # A STRUCT and a MAP come as their Databricks text, an array as a list.
        row = conn.execute("SELECT * FROM tf_nested").fetchone()
        assert row == (1, ["a", "b"], "{x -> 1}", "{Main, 123}")

    table = deltalake.DeltaTable(str(path))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "deletionVectors" in protocol.reader_features
    addr = {f.name: f for f in table.schema().fields}["addr"]
    inner = {f.name: f for f in addr.type.fields}
    assert inner["zip"].nullable is False
    assert inner["street"].metadata == {"comment": "the street"}
    rows = read_mapped(path)
    assert rows == [
        {
            "id": 1,
            "tags": ["a", "b"],
            "props": [("x", 1)],
            "addr": {"street": "Main", "zip": 123},
        }
    ]
    # Its MAP and STRUCT come back as text, which the every-table check
    # (test_zz_deltalake_reads) does not compare with deltalake's values.
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE tf_nested")


def test_identity_values_unique_across_two_servers_and_read_by_deltalake(server):
    """Two servers insert into one identity table at once: an INSERT whose
    commit lost the race to another identity write runs again on the new
    version with new values (nothing of the lost attempt visible); every
    acknowledged row is there once, every id distinct, the high-water mark
    the largest id; MERGE fills the column too."""
    import threading

    from conftest import Server

    path = server.warehouse / "default" / "tf_ids"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tf_ids (id BIGINT GENERATED ALWAYS AS IDENTITY, src STRING, n INT)"
        )
    other = Server(server.warehouse)
    conflicts = []
    failures = []

    def writer(dsn, label):
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                for n in range(15):
                    while True:
                        try:
                            conn.execute(
                                "INSERT INTO tf_ids (src, n) VALUES (%s, %s), (%s, %s)",
                                (label, n, label, n + 100),
                            )
                            break
                        except psycopg.errors.SerializationFailure:
                            conflicts.append(label)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    try:
        threads = [
            threading.Thread(target=writer, args=(server.dsn, "one")),
            threading.Thread(target=writer, args=(other.dsn, "two")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        other.stop()
    assert failures == []
    # The server runs an INSERT that lost its commit again: no client saw
    # a conflict.
    assert conflicts == []

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT id, src, n FROM tf_ids").fetchall()
        assert len(rows) == 60
        assert sorted((s, n) for _, s, n in rows) == sorted(
            [(s, n) for s in ("one", "two") for n in list(range(15)) + list(range(100, 115))]
        )
        ids = [i for i, _, _ in rows]
        assert len(set(ids)) == 60 and None not in ids

        merged = conn.execute(
            "MERGE INTO tf_ids t USING (SELECT 'merge' AS src, 7 AS n) s ON t.src = s.src"
            " WHEN NOT MATCHED THEN INSERT *"
        ).fetchone()
        assert merged[-1] == 1
        all_ids = [r[0] for r in conn.execute("SELECT id FROM tf_ids").fetchall()]
        assert len(set(all_ids)) == 61
        create = conn.execute("SHOW CREATE TABLE tf_ids").fetchone()[0]
        assert "  id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),\n" in create

    table = deltalake.DeltaTable(str(path))
    assert table.protocol().min_writer_version == 6
    field = {f.name: f for f in table.schema().fields}["id"]
    assert field.metadata["delta.identity.allowExplicitInsert"] is False
    mark = field.metadata["delta.identity.highWaterMark"]
    read = table.to_pyarrow_table().column("id").to_pylist()
    assert sorted(read) == sorted(all_ids)
    assert mark == max(read)


def test_clones_read_by_deltalake_and_a_vacuumed_source_is_an_error(server):
    """A shallow clone's log names the source's files by absolute path and
    a deep clone's its own copies; `deltalake` reads both. A deep clone
    cloned again copies only the new file. After the source is vacuumed,
    the shallow clone fails to read (the file is named) instead of
    returning fewer rows, as on Databricks; cloning again repairs it."""
    import json

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tfc_src (id INT, v STRING)")
        conn.execute("INSERT INTO tfc_src VALUES (1, 'a'), (2, 'b')")
        conn.execute("CREATE TABLE tfc_shallow SHALLOW CLONE tfc_src")
        conn.execute("CREATE TABLE tfc_deep DEEP CLONE tfc_src")
        conn.execute("INSERT INTO tfc_src VALUES (3, 'c')")
        conn.execute("CREATE OR REPLACE TABLE tfc_deep DEEP CLONE tfc_src")
        history = conn.execute("DESCRIBE HISTORY tfc_deep").fetchall()
        # version, timestamp, userId, userName, operation, parameters, …
        columns = [d.name for d in conn.execute("DESCRIBE HISTORY tfc_deep LIMIT 1").description]
        latest = dict(zip(columns, history[0]))
        assert latest["operation"] == "CLONE"
        params = latest["operationParameters"]
        params = params if isinstance(params, dict) else json.loads(params)
        assert params["isShallow"] == "false" and params["sourceVersion"] == "2"
        metrics = latest["operationMetrics"]
        metrics = metrics if isinstance(metrics, dict) else json.loads(metrics)
        assert metrics["numCopiedFiles"] == "1" and metrics["sourceNumOfFiles"] == "2"

    shallow = deltalake.DeltaTable(str(server.warehouse / "default" / "tfc_shallow"))
    paths = shallow.file_uris()
    assert all("/tfc_src/" in p for p in paths), paths
    # deltalake's pyarrow reader joins absolute paths to the table root;
    # its DataFusion reader takes them as they are.
    rows = read_mapped(server.warehouse / "default" / "tfc_shallow")
    assert [r["id"] for r in rows] == [1, 2]
    deep = deltalake.DeltaTable(str(server.warehouse / "default" / "tfc_deep"))
    assert all("/tfc_deep/" in p for p in deep.file_uris())
    assert sorted(deep.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
        conn.execute("DELETE FROM tfc_src WHERE id = 1")
        conn.execute("VACUUM tfc_src RETAIN 0 HOURS")
        try:
            conn.execute("SELECT * FROM tfc_shallow").fetchall()
            raise AssertionError("a clone of vacuumed files read without error")
        except psycopg.Error as e:
            assert "not found" in str(e)
        conn.execute("CREATE OR REPLACE TABLE tfc_shallow SHALLOW CLONE tfc_src")
        assert sorted(conn.execute("SELECT id FROM tfc_shallow").fetchall()) == [(2,), (3,)]


def test_clustering_lets_a_filter_read_fewer_files(server):
    """OPTIMIZE orders a clustered table by its clustering column, so a
    filter on it reads one file where it read every file before; the log
    keeps the columns as the delta.clustering domain, and `deltalake`
    reads the table."""
    import re

    def files_read(conn, sql):
        plan = "\n".join(r[1] for r in conn.execute("EXPLAIN ANALYZE " + sql).fetchall())
        # Distinct files: a large file may be read in byte ranges.
        scans = "".join(re.findall(r"file_groups=\{[^}]*\}", plan))
        return len(set(re.findall(r"[^/\s,\[]+\.parquet", scans)))

    path = server.warehouse / "default" / "tf_clustered"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tf_clustered (id BIGINT, v STRING) CLUSTER BY (id)"
        )
        # Four writes, each spread over the whole id range: no file can
        # be skipped by its statistics yet.
        for part in range(4):
            conn.execute(
                f"INSERT INTO tf_clustered SELECT id, 'v' || id FROM range(0, 400000) t(id)"
                f" WHERE id % 4 = {part} ORDER BY random()"
            )
        query = "SELECT count(*) FROM tf_clustered WHERE id = 123456"
        written = conn.execute("DESCRIBE DETAIL tf_clustered").fetchone()[9]
        before = files_read(conn, query)
        assert before == written == 4
        # Small files, so that the ordered rows span several.
        conn.execute(
            "ALTER TABLE tf_clustered SET TBLPROPERTIES ('delta.targetFileSize' = '400000')"
        )
        conn.execute("OPTIMIZE tf_clustered")
        files = conn.execute("DESCRIBE DETAIL tf_clustered").fetchone()[9]
        after = files_read(conn, query)
        assert files >= 4 and after == 1, (files, after)
        assert conn.execute(query).fetchone() == (1,)
        # Incremental: a new write is clustered alone, the clustered files
        # stay; FULL reclusters them all.
        conn.execute("INSERT INTO tf_clustered VALUES (400000, 'new'), (-1, 'new')")
        again = json.loads(conn.execute("OPTIMIZE tf_clustered").fetchone()[1])
        assert (again["numFilesRemoved"], again["numFilesAdded"]) == (1, 1), again
        full = json.loads(conn.execute("OPTIMIZE tf_clustered FULL").fetchone()[1])
        assert full["numFilesRemoved"] == files + 1, (full, files)

    latest = max((path / "_delta_log").glob("*.json"))
    adds = [json.loads(line)["add"] for line in latest.read_text().splitlines() if '"add"' in line]
    assert adds and all(a.get("clusteringProvider") == "liquid" for a in adds)
    log = "".join(p.read_text() for p in sorted((path / "_delta_log").glob("*.json")))
    assert '"domain":"delta.clustering"' in log
    table = deltalake.DeltaTable(str(path))
    assert {"clustering", "domainMetadata"} <= set(table.protocol().writer_features)
    assert table.to_pyarrow_table().num_rows == 400002


def test_column_defaults_through_parameters_and_prepared_statements(server):
    """`DEFAULT` in VALUES works in the extended protocol too (psycopg
    sends parameters and prepares); the default is kept in the field
    metadata Delta readers see."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tf_defaults (id INT, s STRING DEFAULT 'z', n INT DEFAULT 7)")
        conn.execute("INSERT INTO tf_defaults VALUES (%s, DEFAULT, DEFAULT)", (1,))
        conn.execute("INSERT INTO tf_defaults (id, n) VALUES (2, DEFAULT)", prepare=True)
        conn.execute("INSERT INTO tf_defaults (id) VALUES (%s)", (3,))
        rows = conn.execute("SELECT * FROM tf_defaults ORDER BY id").fetchall()
    assert rows == [(1, "z", 7), (2, "z", 7), (3, "z", 7)]
    table = deltalake.DeltaTable(str(server.warehouse / "default" / "tf_defaults"))
    fields = {f.name: f for f in table.schema().fields}
    assert fields["s"].metadata["CURRENT_DEFAULT"] == "'z'"
    assert "allowColumnDefaults" in table.protocol().writer_features


def test_deletion_vectors_mark_rows_and_deltalake_honours_them(server):
    """DELETE and UPDATE on a table with deletion vectors leave its data
    files alone: the rows removed are marked in one deletion-vector file
    per statement, and `deltalake` reads the rows the server returns at
    every version; REORG … APPLY (PURGE) rewrites the files without them."""
    path = server.warehouse / "default" / "tf_dv"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tf_dv (id BIGINT, v STRING)"
            " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
        )
        conn.execute("INSERT INTO tf_dv SELECT id, 'v' || id FROM range(0, 10000) AS r(id)")
        parquet_before = sorted(p.name for p in path.glob("*.parquet"))
        deleted = conn.execute("DELETE FROM tf_dv WHERE id % 100 = 7").fetchone()
        assert deleted == (100,)
        # Merge-on-read: no data file written, one vector file.
        assert sorted(p.name for p in path.glob("*.parquet")) == parquet_before
        assert len(list(path.glob("deletion_vector_*.bin"))) == 1
        updated = conn.execute("UPDATE tf_dv SET v = 'new' WHERE id < 5").fetchone()
        assert updated == (5,)
        # The UPDATE wrote its 5 new rows and one more vector file.
        assert len(list(path.glob("*.parquet"))) == len(parquet_before) + 1
        assert len(list(path.glob("deletion_vector_*.bin"))) == 2
        served = {
            version: conn.execute(
                f"SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'new')"
                f" FROM tf_dv VERSION AS OF {version}"
            ).fetchone()
            for version in (1, 2, 3)
        }
        conn.execute("REORG TABLE tf_dv APPLY (PURGE)")
        purged = conn.execute("SELECT count(*), sum(id) FROM tf_dv").fetchone()

    assert served[1] == (10000, 49995000, 0)
    assert served[2] == (9900, 49995000 - sum(range(7, 10000, 100)), 0)
    assert served[3] == (9900, served[2][1], 5)
    assert purged == served[3][:2]
    adds = [a for a in _log_actions(path, 3) if "add" in a]
    vectors = [a["add"]["deletionVector"] for a in adds if a["add"].get("deletionVector")]
    assert len(vectors) == 1 and vectors[0]["storageType"] == "u"
    assert vectors[0]["cardinality"] == 105
    for version in (1, 2, 3):
        table = deltalake.DeltaTable(str(path), version=version)
        got = read_mapped(
            table,
            "SELECT count(*) AS c, sum(id) AS s,"
            " sum(CASE WHEN v = 'new' THEN 1 ELSE 0 END) AS n FROM t",
        )
        assert tuple(got[0].values()) == served[version], version
    latest = deltalake.DeltaTable(str(path))
    assert latest.version() == 4
    assert not any(
        a["add"].get("deletionVector") for a in _log_actions(path, 4) if "add" in a
    )


def _log_actions(path, version):
    entry = path / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in entry.read_text().splitlines() if line]
