"""bench/copy: a 5-million-row CSV (id, name, department, salary,
timestamp; about 250 MB) loaded with psql's `\\copy … FROM` into Lakegres and
into PostgreSQL 15, loaded with Lakegres' `COPY INTO` from disk, and
exported with `\\copy … TO` from both. Prints times, rows/s and ratios."""

import os
import pathlib
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, Postgres, psql, timed  # noqa: E402

ROWS = int(os.environ.get("ROWS", "5000000"))
DEPARTMENTS = ["engineering", "sales", "marketing", "finance", "support", "operations", "legal", "research"]


def write_csv(path):
    rnd = random.Random(42)
    with open(path, "w") as f:
        f.write("id,name,department,salary,hired_at\n")
        for i in range(ROWS):
            f.write(f"{i},employee_{i:08d},{DEPARTMENTS[i % 8]},{rnd.randint(30000, 250000)}.{i % 100:02d},"
                    f"20{10 + i % 15:02d}-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}\n")


def copy_times(run_sql, create, path):
    def load():
        run_sql(create)
        run_sql(f"\\copy emp FROM '{path}' WITH (FORMAT csv, HEADER)")

    load_time = timed(load)
    export_time = timed(lambda: run_sql("\\copy emp TO '/dev/null' WITH (FORMAT csv)"))
    return load_time, export_time


def main():
    work = tempfile.mkdtemp(prefix="copy-bench-")
    os.chmod(work, 0o755)
    path = os.path.join(work, "emp.csv")
    write_csv(path)
    os.chmod(path, 0o644)
    size_mb = os.path.getsize(path) / 1e6
    results = {}

    lg = Lakegres()
    try:
        lg_create = ("DROP TABLE IF EXISTS emp; CREATE TABLE emp (id BIGINT, name STRING, department STRING, "
                     "salary DECIMAL(10,2), hired_at TIMESTAMP)")
        results["lakegres"] = copy_times(lambda sql: lg.psql(sql), lg_create, path)
        try:
            ingest = pathlib.Path(lg.dir) / "ingest"
            ingest.mkdir(exist_ok=True)
            subprocess.run(["cp", path, str(ingest / "emp.csv")], check=True)

            def copy_into():
                lg.psql(lg_create)
                lg.psql(f"COPY INTO emp FROM '{ingest}' FILEFORMAT = CSV FORMAT_OPTIONS ('header' = 'true')")

            results["copy_into"] = timed(copy_into)
        except subprocess.CalledProcessError:
            results["copy_into"] = None
        mem = lg.peak_memory_mib()
    finally:
        lg.stop()

    pg = Postgres()
    try:
        pg_create = ("DROP TABLE IF EXISTS emp; CREATE TABLE emp (id bigint, name text, department text, "
                     "salary numeric(10,2), hired_at timestamptz)")
        results["postgres"] = copy_times(lambda sql: pg.psql(sql), pg_create, path)
    finally:
        pg.stop()
        subprocess.run(["rm", "-rf", work], check=False)

    (lg_load, lg_out), (pg_load, pg_out) = results["lakegres"], results["postgres"]
    print(f"\n### copy: {ROWS:,} rows, {size_mb:.0f} MB CSV (best of 3)\n")
    print("| work | Lakegres | PostgreSQL 15 | Lakegres rows/s | PostgreSQL rows/s | speed vs PostgreSQL |")
    print("|---|---|---|---|---|---|")
    print(f"| `\\copy … FROM` (psql) | {lg_load:.2f} s | {pg_load:.2f} s | {ROWS / lg_load:,.0f} | "
          f"{ROWS / pg_load:,.0f} | {pg_load / lg_load:.2f}× |")
    print(f"| `\\copy … TO` (psql) | {lg_out:.2f} s | {pg_out:.2f} s | {ROWS / lg_out:,.0f} | "
          f"{ROWS / pg_out:,.0f} | {pg_out / lg_out:.2f}× |")
    if results.get("copy_into"):
        ci = results["copy_into"]
        print(f"| `COPY INTO` from disk | {ci:.2f} s | — | {ROWS / ci:,.0f} | — | {pg_load / ci:.2f}× of PG `\\copy` |")
    print(f"\nLakegres peak memory (VmHWM): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
