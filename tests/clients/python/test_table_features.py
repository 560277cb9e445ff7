"""Delta table features (issue #23) leave tables the `deltalake` package
reads with the rows the server returns: column mapping with renamed and
dropped columns, nested types, deletion-vector and other protocol upgrades.
deltalake's `to_pyarrow_table` ignores column mapping, so column-mapped
tables are read through its DataFusion `QueryBuilder`, which honours it."""

from datetime import date

import deltalake
import psycopg
import pyarrow
from deltalake import QueryBuilder


def read_mapped(path, sql="SELECT * FROM t ORDER BY 1"):
    table = deltalake.DeltaTable(str(path))
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
