"""bench/select_stream: 10 million rows (id, name, dept, salary, ts)
streamed to `psql -X -A -t` and a GROUP BY over them, on Lakegres and on
PostgreSQL 15 with the same data. Prints a markdown table."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, Postgres, timed  # noqa: E402

ROWS = int(os.environ.get("ROWS", "10000000"))

LAKEGRES_LOAD = f"""
CREATE TABLE emp AS
SELECT value AS id,
       'name_' || value AS name,
       'dept_' || (value % 20) AS dept,
       (value % 100000) * 1.5 AS salary,
       to_timestamp(1700000000 + value) AS ts
FROM generate_series(1, {ROWS})
"""

POSTGRES_LOAD = f"""
CREATE TABLE emp AS
SELECT g::bigint AS id,
       'name_' || g AS name,
       'dept_' || (g % 20) AS dept,
       ((g % 100000) * 1.5)::float8 AS salary,
       to_timestamp(1700000000 + g) AS ts
FROM generate_series(1, {ROWS}) g
"""

STREAM = "SELECT * FROM emp"
AGGREGATE = "SELECT dept, count(*), avg(salary), max(ts) FROM emp GROUP BY dept ORDER BY dept"


def main():
    results = {}
    lg = Lakegres()
    try:
        lg.psql(LAKEGRES_LOAD)
        results["lakegres"] = (
            timed(lambda: lg.psql(STREAM)),
            timed(lambda: lg.psql(AGGREGATE)),
            lg.peak_memory_mib(),
        )
    finally:
        lg.stop()
    pg = Postgres()
    try:
        pg.psql(POSTGRES_LOAD)
        pg.psql("VACUUM ANALYZE emp")
        results["postgres"] = (
            timed(lambda: pg.psql(STREAM)),
            timed(lambda: pg.psql(AGGREGATE)),
            None,
        )
    finally:
        pg.stop()

    lgs, lga, mem = results["lakegres"]
    pgs, pga, _ = results["postgres"]
    print(f"\n### select_stream: {ROWS:,} rows (best of 3)\n")
    print("| work | Lakegres | PostgreSQL 15 | Lakegres / PostgreSQL |")
    print("|---|---|---|---|")
    print(f"| `SELECT *` to psql | {lgs:.2f} s | {pgs:.2f} s | {lgs / pgs:.2f} |")
    print(f"| GROUP BY aggregate | {lga:.2f} s | {pga:.2f} s | {lga / pga:.2f} |")
    print(f"\nLakegres peak memory (VmHWM): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
