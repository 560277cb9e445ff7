"""Driver parameters in every write statement, NULL among them (issue #56).

A NULL in an application's variable must never widen a write: `DELETE …
WHERE region = %s` with None deletes nothing, a MERGE whose ON holds a NULL
parameter matches nothing. Each statement runs through psycopg 3 (server-
side parameters, the extended protocol), and the key ones through asyncpg
too (binary parameters typed from the server's Describe); each checks the
rows after it and the table's Delta versions (a statement that changes
nothing adds none; an INSERT form adds one, as Delta's writes do).
"""

import asyncio
import pathlib

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def versions(server, table: str) -> int:
    log = pathlib.Path(server.warehouse) / "default" / table / "_delta_log"
    return len(list(log.glob("*.json")))


def rows(conn, table: str, columns: str = "key, region, value"):
    return sorted(
        conn.execute(f"SELECT {columns} FROM {table}").fetchall(),
        key=lambda r: tuple((v is None, v) for v in r),
    )


def affected(cur) -> int:
    """`num_affected_rows`, the first column of the Databricks result row
    that UPDATE, DELETE and MERGE return."""
    return cur.fetchone()[0]


def fresh(conn, table: str, partitioned: bool = False):
    conn.execute(
        f"CREATE OR REPLACE TABLE {table} (key INT, region STRING, value INT)"
        + (" PARTITIONED BY (region)" if partitioned else "")
    )
    conn.execute(f"INSERT INTO {table} VALUES (1, 'eu', 1), (2, 'us', 2), (3, NULL, 3)")


ALL = [(1, "eu", 1), (2, "us", 2), (3, None, 3)]


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_null_parameter_deletes_and_updates_nothing(server, partitioned):
    table = f"wp_dml_{int(partitioned)}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table, partitioned)
        before = versions(server, table)
        for sql, params in [
            (f"DELETE FROM {table} WHERE region = %s", (None,)),
            (f"DELETE FROM {table} WHERE value = %s", (None,)),
            (f"DELETE FROM {table} WHERE region IN (%s, %s)", (None, "zz")),
            (f"DELETE FROM {table} WHERE region = %s OR value = %s", (None, None)),
            (f"DELETE FROM {table} WHERE NOT (region = %s)", (None,)),
            (f"UPDATE {table} SET value = 0 WHERE region = %s", (None,)),
            (f"UPDATE {table} SET value = %s WHERE key = %s", (0, None)),
        ]:
            assert affected(conn.execute(sql, params)) == 0, sql
        assert rows(conn, table) == ALL
        assert versions(server, table) == before

        # A parameter with a value deletes exactly its rows, one version.
        assert affected(conn.execute(f"DELETE FROM {table} WHERE region = %s", ("eu",))) == 1
        assert rows(conn, table) == ALL[1:]
        assert versions(server, table) == before + 1


def test_merge_takes_parameters_in_every_part(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, "wp_merge")
        conn.execute("CREATE OR REPLACE TABLE wp_src (key INT, region STRING, value INT)")
        conn.execute("INSERT INTO wp_src VALUES (1, 'eu', 10), (2, 'us', 20), (4, 'eu', 40)")
        before = versions(server, "wp_merge")

        # A filtered upsert whose filter is NULL matches nothing: the source
        # rows are all new rows, and nothing else changes.
        merge = (
            "MERGE INTO wp_merge t USING (SELECT * FROM wp_src WHERE value > %s) s "
            "ON t.key = s.key AND t.region = %s "
            "WHEN MATCHED AND s.value > %s THEN UPDATE SET value = s.value + %s "
            "WHEN MATCHED THEN DELETE "
            "WHEN NOT MATCHED THEN INSERT (key, region, value) VALUES (s.key + 100, s.region, %s)"
        )
        row = conn.execute(merge, (0, None, 0, 1, None)).fetchone()
        assert row == (3, 0, 0, 3)
        assert rows(conn, "wp_merge") == sorted(
            ALL + [(101, "eu", None), (102, "us", None), (104, "eu", None)],
            key=lambda r: r[0],
        )
        assert versions(server, "wp_merge") == before + 1

        # With values: key 1 (eu) matches and is updated, key 2 is not
        # matched (us), key 4 is new.
        fresh(conn, "wp_merge")
        row = conn.execute(merge, (0, "eu", 5, 1, 7)).fetchone()
        assert row == (3, 1, 0, 2)
        assert rows(conn, "wp_merge") == [
            (1, "eu", 11),
            (2, "us", 2),
            (3, None, 3),
            (102, "us", 7),
            (104, "eu", 7),
        ]

        # Postgres' UPDATE … FROM (run as the MERGE it means) with a NULL
        # parameter in its condition updates nothing.
        fresh(conn, "wp_merge")
        before = versions(server, "wp_merge")
        cur = conn.execute(
            "UPDATE wp_merge SET value = s.value FROM wp_src s "
            "WHERE wp_merge.key = s.key AND s.region = %s",
            (None,),
        )
        assert affected(cur) == 0
        assert versions(server, "wp_merge") == before
        cur = conn.execute(
            "UPDATE wp_merge SET value = s.value FROM wp_src s "
            "WHERE wp_merge.key = s.key AND s.region = %s",
            ("eu",),
        )
        assert affected(cur) == 1
        assert rows(conn, "wp_merge") == [(1, "eu", 10), (2, "us", 2), (3, None, 3)]

        # NULL clause conditions take no row; WHEN NOT MATCHED BY SOURCE too.
        fresh(conn, "wp_merge")
        before = versions(server, "wp_merge")
        row = conn.execute(
            "MERGE INTO wp_merge t USING wp_src s ON t.key = s.key "
            "WHEN MATCHED AND t.value = %s THEN DELETE "
            "WHEN NOT MATCHED BY SOURCE AND t.region = %s THEN DELETE",
            (None, None),
        ).fetchone()
        assert row == (0, 0, 0, 0)
        assert versions(server, "wp_merge") == before


def test_insert_forms_take_parameters(server, tmp_path):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        # INSERT … SELECT and CTAS.
        fresh(conn, "wp_ins")
        conn.execute("INSERT INTO wp_ins SELECT key + 10, region, value FROM wp_ins WHERE region = %s", ("us",))
        assert (12, "us", 2) in rows(conn, "wp_ins")
        conn.execute("CREATE OR REPLACE TABLE wp_ctas AS SELECT * FROM wp_ins WHERE value > %s", (1,))
        assert [r[0] for r in rows(conn, "wp_ctas")] == [2, 3, 12]

        # REPLACE WHERE with a NULL parameter deletes nothing; its new rows
        # fail the condition (44000) and nothing is written.
        fresh(conn, "wp_ins")
        before = versions(server, "wp_ins")
        with pytest.raises(psycopg.Error) as e:
            conn.execute("INSERT INTO wp_ins REPLACE WHERE region = %s SELECT 9, 'eu', 9", (None,))
        assert e.value.sqlstate == "44000"
        assert versions(server, "wp_ins") == before
        conn.execute("INSERT INTO wp_ins REPLACE WHERE region = %s SELECT 9, %s, 9", ("eu", "eu"))
        assert rows(conn, "wp_ins") == [(2, "us", 2), (3, None, 3), (9, "eu", 9)]

        # REPLACE ON with a NULL parameter in its condition matches nothing:
        # the new rows are appended.
        fresh(conn, "wp_ins")
        conn.execute(
            "INSERT INTO wp_ins AS t REPLACE ON t.key = s.key AND t.region = %s "
            "(SELECT 1 AS key, 'xx' AS region, %s AS value) AS s",
            (None, 5),
        )
        assert rows(conn, "wp_ins") == sorted(ALL + [(1, "xx", 5)], key=lambda r: (r[0], r[1] or ""))
        # REPLACE USING with a parameter in its query.
        conn.execute("INSERT INTO wp_ins REPLACE USING (key) SELECT %s AS key, 'yy' AS region, 0 AS value", (2,))
        assert (2, "yy", 0) in rows(conn, "wp_ins") and (2, "us", 2) not in rows(conn, "wp_ins")

        # INSERT OVERWRITE … PARTITION (region = %s): NULL replaces the NULL
        # partition only.
        fresh(conn, "wp_part", partitioned=True)
        conn.execute("INSERT OVERWRITE wp_part PARTITION (region = %s) SELECT 7, 7", (None,))
        assert rows(conn, "wp_part") == [(1, "eu", 1), (2, "us", 2), (7, None, 7)]
        conn.execute("INSERT OVERWRITE wp_part PARTITION (region = %s) SELECT 8, 8", ("eu",))
        assert rows(conn, "wp_part") == [(2, "us", 2), (7, None, 7), (8, "eu", 8)]

        # COPY INTO's SELECT filter with a parameter, NULL and not.
        conn.execute("CREATE OR REPLACE TABLE wp_copy (key INT, region STRING, value INT)")
        ingest = pathlib.Path(server.warehouse).parent / "ingest" / "wp_copy"
        ingest.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({"key": pa.array([1, 2, 3], pa.int32()),
                      "region": ["eu", "us", None],
                      "value": pa.array([1, 2, 3], pa.int32())}),
            ingest / "a.parquet",
        )
        conn.execute(
            f"COPY INTO wp_copy FROM (SELECT key, region, value FROM '{ingest}' WHERE region = %s) "
            "FILEFORMAT = PARQUET",
            (None,),
        )
        assert rows(conn, "wp_copy") == []
        conn.execute(
            f"COPY INTO wp_copy FROM (SELECT key, region, value FROM '{ingest}' WHERE value >= %s) "
            "FILEFORMAT = PARQUET COPY_OPTIONS ('force' = 'true')",
            (2,),
        )
        assert rows(conn, "wp_copy") == [(2, "us", 2), (3, None, 3)]

        # OPTIMIZE takes no parameters: a clear 0A000.
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            conn.execute("OPTIMIZE wp_part WHERE region = %s", ("eu",))
        assert "parameters" in str(e.value)


def test_prepared_statements_with_null_and_values(server):
    """The same prepared DELETE and MERGE run with NULL, then with values."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, "wp_prep")
        delete = "DELETE FROM wp_prep WHERE region = %s"
        for _ in range(3):
            assert affected(conn.execute(delete, (None,), prepare=True)) == 0
        assert rows(conn, "wp_prep") == ALL
        assert affected(conn.execute(delete, ("us",), prepare=True)) == 1
        assert rows(conn, "wp_prep") == [ALL[0], ALL[2]]


def test_asyncpg_binary_parameters(server):
    """asyncpg types every parameter from the server's Describe and sends
    it in binary: the Describe of MERGE and REPLACE must give those types."""

    async def run():
        conn = await asyncpg.connect(
            host="127.0.0.1", port=server.port, user="tester", database="lakegres"
        )
        try:
            await conn.execute("CREATE OR REPLACE TABLE wp_apg (key INT, region STRING, value INT)")
            await conn.execute("INSERT INTO wp_apg VALUES (1, 'eu', 1), (2, 'us', 2), (3, NULL, 3)")
            status = await conn.execute("DELETE FROM wp_apg WHERE region = $1", None)
            assert status == "DELETE 0"
            row = await conn.fetchrow(
                "MERGE INTO wp_apg t USING (SELECT $1::INT AS key, $2 AS region) s "
                "ON t.key = s.key AND t.region = $3 "
                "WHEN MATCHED THEN UPDATE SET value = $4 "
                "WHEN NOT MATCHED THEN INSERT (key, region, value) VALUES (s.key, s.region, $4)",
                1, "eu", None, 100,
            )
            assert tuple(row) == (1, 0, 0, 1)
            await conn.execute(
                "INSERT INTO wp_apg REPLACE WHERE key = $1 SELECT $1, $2::STRING, $3::INT", 2, "us", 20
            )
            got = await conn.fetch("SELECT key, region, value FROM wp_apg ORDER BY key, value")
            return [tuple(r) for r in got]
        finally:
            await conn.close()

    assert asyncio.run(run()) == [(1, "eu", 1), (1, "eu", 100), (2, "us", 20), (3, None, 3)]
