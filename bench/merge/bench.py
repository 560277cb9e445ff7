"""bench/merge: an upsert whose source is half updates, half new keys —
200k rows into 2M, and 1M into 10M — on Lakegres (MERGE over an open
psycopg connection, as an application sends it), on
the `deltalake` Python package in-process (delta-rs' own merge), and on
PostgreSQL 15 (MERGE into a table with a primary key). Prints a markdown
table of times, ratios and Lakegres' peak memory."""

import os
import shutil
import sys
import tempfile

import pyarrow as pa
import deltalake
import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, Postgres, timed  # noqa: E402

SIZES = [(2_000_000, 200_000), (10_000_000, 1_000_000)]
if os.environ.get("SIZES"):
    SIZES = [tuple(int(x) for x in s.split(":")) for s in os.environ["SIZES"].split(",")]


def source_ids_sql(n, s, col):
    """Half of the source hits existing keys spread over the target, half is new."""
    half = s // 2
    step = n // half
    return f"CASE WHEN {col} < {half} THEN {col} * {step} ELSE {n} + {col} END"


def lakegres_case(lg, n, s):
    lg.psql(f"CREATE OR REPLACE TABLE m_src AS SELECT {source_ids_sql(n, s, 'value')} AS id, "
            f"'new_' || value AS name, CAST(value * 2 AS DOUBLE) AS v FROM generate_series(0, {s - 1})")

    def reset():
        lg.psql(f"CREATE OR REPLACE TABLE m_tgt AS SELECT value AS id, 'name_' || value AS name, "
                f"CAST(value AS DOUBLE) AS v FROM generate_series(0, {n - 1})")

    conn = psycopg.connect(f"host=127.0.0.1 port={lg.port} dbname=lakegres user=bench", autocommit=True)

    def run():
        conn.execute("MERGE INTO m_tgt t USING m_src s ON t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")

    try:
        return repeat_with_reset(reset, run)
    finally:
        conn.close()


def deltars_case(n, s):
    d = tempfile.mkdtemp(prefix="deltars-bench-")
    half = s // 2
    step = n // half
    src_ids = [i * step if i < half else n + i for i in range(s)]
    source = pa.table({
        "id": pa.array(src_ids, pa.int64()),
        "name": pa.array([f"new_{i}" for i in range(s)]),
        "v": pa.array([i * 2.0 for i in range(s)], pa.float64()),
    })
    target = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([f"name_{i}" for i in range(n)]),
        "v": pa.array([i * 1.0 for i in range(n)], pa.float64()),
    })
    path = os.path.join(d, "t")

    def reset():
        deltalake.write_deltalake(path, target, mode="overwrite")

    def run():
        dt = deltalake.DeltaTable(path)
        (dt.merge(source=source, predicate="t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())

    try:
        return repeat_with_reset(reset, run)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def postgres_case(pg, n, s):
    pg.psql(f"DROP TABLE IF EXISTS m_src; CREATE TABLE m_src AS SELECT ({source_ids_sql(n, s, 'g')})::bigint AS id, "
            f"'new_' || g AS name, (g * 2.0)::float8 AS v FROM generate_series(0, {s - 1}) g")

    def reset():
        pg.psql(f"DROP TABLE IF EXISTS m_tgt; CREATE TABLE m_tgt (id bigint PRIMARY KEY, name text, v float8); "
                f"INSERT INTO m_tgt SELECT g, 'name_' || g, g * 1.0 FROM generate_series(0, {n - 1}) g")
        pg.psql("VACUUM ANALYZE m_tgt")

    def run():
        pg.psql("MERGE INTO m_tgt t USING m_src s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET name = s.name, v = s.v "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.v)")

    return repeat_with_reset(reset, run)


def repeat_with_reset(reset, run, repeat=3):
    best = None
    for _ in range(repeat):
        reset()
        t = timed(run, repeat=1)
        best = t if best is None else min(best, t)
    return best


def main():
    results = []
    lg = Lakegres()
    try:
        for n, s in SIZES:
            results.append({"n": n, "s": s, "lakegres": lakegres_case(lg, n, s)})
        mem = lg.peak_memory_mib()
    finally:
        lg.stop()
    for r in results:
        r["deltars"] = deltars_case(r["n"], r["s"])
    pg = Postgres()
    try:
        for r in results:
            r["postgres"] = postgres_case(pg, r["n"], r["s"])
    finally:
        pg.stop()
    print("\n### merge: upsert, half updates and half new keys (best of 3)\n")
    print("| source into target | Lakegres | delta-rs (Python, in-process) | PostgreSQL 15 | Lakegres / delta-rs | Lakegres / PostgreSQL |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['s']:,} into {r['n']:,} | {r['lakegres']:.2f} s | {r['deltars']:.2f} s | {r['postgres']:.2f} s | "
              f"{r['lakegres'] / r['deltars']:.2f} | {r['lakegres'] / r['postgres']:.2f} |")
    print(f"\nLakegres peak memory (VmHWM): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
