"""Object storage (moto's S3): external tables made by CREATE [OR REPLACE]
TABLE … LOCATION … AS SELECT — on a local disk and in S3 each statement is
one Delta commit at the location, a replace is the next version of the same
table, and the `deltalake` package reads every version with the rows the
server returns."""

import deltalake
import psycopg

from test_security import start


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

