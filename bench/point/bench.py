"""bench/point: single-row lookups by key on a 1M-row table with pgbench
(`-n -M prepared -f point.sql -c 8 -T 20`) on Lakegres and PostgreSQL 15, in
one run; prints transactions per second and the ratio.

PostgreSQL's table has a primary key; Lakegres' table is a Delta table
sorted by id (as a load ordered by key writes it). Lakegres answers from the
table decoded in its lookup cache (the first lookup decodes it); it runs
again with the cache off, where each lookup reads Parquet, pruned to one row
group by the statistics."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, Postgres  # noqa: E402

ROWS = int(os.environ.get("ROWS", "1000000"))
CLIENTS = int(os.environ.get("CLIENTS", "8"))
SECONDS = int(os.environ.get("SECONDS", "20"))
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "point.sql")

DEPARTMENT = ("CASE {v} % 4 WHEN 0 THEN 'sales' WHEN 1 THEN 'engineering' WHEN 2 THEN 'finance' "
              "ELSE 'support' END")
LAKEGRES_FILL = (f"SELECT CAST(value AS BIGINT) AS id, 'employee_' || CAST(value AS STRING) AS name, "
                 f"{DEPARTMENT.format(v='value')} AS department, CAST(value % 100000 AS DOUBLE) AS salary "
                 f"FROM generate_series(1, {ROWS})")
POSTGRES_FILL = (f"SELECT g::bigint AS id, 'employee_' || g AS name, {DEPARTMENT.format(v='g')} AS department, "
                 f"(g % 100000)::float8 AS salary FROM generate_series(1, {ROWS}) AS g")


def pgbench(port, user, db):
    out = subprocess.run(
        ["pgbench", "-n", "-M", "prepared", "-f", SCRIPT, "-c", str(CLIENTS), "-j", str(min(CLIENTS, 4)),
         "-T", str(SECONDS), "-h", "127.0.0.1", "-p", str(port), "-U", user, db],
        check=True, capture_output=True, text=True,
    ).stdout
    m = re.search(r"tps = ([0-9.]+)", out)
    if not m:
        raise RuntimeError(out)
    return float(m.group(1))


def main():
    lg = Lakegres()
    try:
        lg.psql(f"CREATE TABLE point_emp AS {LAKEGRES_FILL}")
        lakegres_tps = pgbench(lg.port, "bench", "lakegres")
        lakegres_mib = lg.peak_memory_mib()
        # The same table read through Parquet for every lookup.
        parquet = Lakegres(warehouse=os.path.join(lg.dir, "warehouse"), args=("--lookup-cache-size", "0"))
        try:
            parquet_tps = pgbench(parquet.port, "bench", "lakegres")
        finally:
            parquet.stop()
    finally:
        lg.stop()

    pg = Postgres()
    try:
        pg.psql(f"CREATE TABLE point_emp AS {POSTGRES_FILL}")
        pg.psql("ALTER TABLE point_emp ADD PRIMARY KEY (id)")
        pg.psql("VACUUM ANALYZE point_emp")
        postgres_tps = pgbench(pg.port, "postgres", "postgres")
    finally:
        pg.stop()

    print(f"\npoint lookups, {ROWS:,} rows, {CLIENTS} clients, {SECONDS} s each (pgbench -M prepared)")
    print(f"{'':32}{'tps':>12}")
    print(f"{'Lakegres':32}{lakegres_tps:>12,.0f}")
    print(f"{'Lakegres, lookup cache off':32}{parquet_tps:>12,.0f}")
    print(f"{'PostgreSQL':32}{postgres_tps:>12,.0f}")
    print(f"ratio (Lakegres / PostgreSQL): {lakegres_tps / postgres_tps:.3f}")
    print(f"ratio, cache off:              {parquet_tps / postgres_tps:.3f}")
    print(f"Lakegres peak memory with the table in its lookup cache: {lakegres_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
