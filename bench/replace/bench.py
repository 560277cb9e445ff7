"""bench/replace: selective overwrite of a 10-million-row table with 365
daily partitions — `REPLACE WHERE day = …` of one day and `REPLACE USING
(day)` of three days on Lakegres, each sent over an open connection (as
an application or a scheduler's session sends it), against
`write_deltalake(..., mode='overwrite', predicate=...)` of the `deltalake`
Python package on a copy of the same table. Prints times, ratios and the
files each commit removed and added (only the touched partitions should be
rewritten)."""

import json
import os
import pathlib
import shutil
import sys
import tempfile

import deltalake
import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, timed  # noqa: E402

N = int(os.environ.get("ROWS", "10000000"))
ONE_DAY = "2025-06-01"
THREE_DAYS = ["2025-06-01", "2025-06-02", "2025-06-03"]


def last_commit_files(table_dir):
    """(removed, added) files of the table's newest commit."""
    log = pathlib.Path(table_dir) / "_delta_log"
    newest = max(log.glob("*.json"))
    actions = [json.loads(line) for line in newest.read_text().splitlines() if line.strip()]
    return (sum("remove" in a for a in actions), sum("add" in a for a in actions))


def main():
    lg = Lakegres()
    copy = tempfile.mkdtemp(prefix="deltars-replace-")
    results = {}
    try:
        lg.psql(f"CREATE TABLE r_tgt PARTITIONED BY (day) AS SELECT value AS id, "
                f"DATE '2025-01-01' + CAST(value % 365 AS INT) AS day, value * 1.0 AS amount "
                f"FROM generate_series(0, {N - 1})")
        lg.psql(f"CREATE TABLE r_one AS SELECT id + {N} AS id, day, CAST(amount * 2 AS DECIMAL(23, 1)) AS amount "
                f"FROM r_tgt WHERE day = DATE '{ONE_DAY}'")
        days = ", ".join(f"DATE '{d}'" for d in THREE_DAYS)
        lg.psql(f"CREATE TABLE r_three AS SELECT id + {N} AS id, day, CAST(amount * 3 AS DECIMAL(23, 1)) AS amount "
                f"FROM r_tgt WHERE day IN ({days})")
        warehouse = pathlib.Path(lg.dir) / "warehouse" / "default"
        for t in ["r_tgt", "r_one", "r_three"]:
            shutil.copytree(warehouse / t, pathlib.Path(copy) / t)

        conn = psycopg.connect(f"host=127.0.0.1 port={lg.port} dbname=lakegres user=bench",
                               autocommit=True)
        results["where", "lakegres"] = timed(lambda: conn.execute(
            f"INSERT INTO r_tgt REPLACE WHERE day = DATE '{ONE_DAY}' SELECT * FROM r_one"))
        results["where", "lakegres_files"] = last_commit_files(warehouse / "r_tgt")
        results["using", "lakegres"] = timed(lambda: conn.execute(
            "INSERT INTO r_tgt REPLACE USING (day) SELECT * FROM r_three"))
        results["using", "lakegres_files"] = last_commit_files(warehouse / "r_tgt")
        # What the statements would cost more through psql: its process
        # start and connection, once per statement.
        results["psql_floor"] = timed(lambda: lg.psql("SELECT 1"))
        conn.close()
        mem = lg.peak_memory_mib()
    finally:
        lg.stop()

    try:
        target = os.path.join(copy, "r_tgt")
        one = deltalake.DeltaTable(os.path.join(copy, "r_one")).to_pyarrow_table()
        three = deltalake.DeltaTable(os.path.join(copy, "r_three")).to_pyarrow_table()
        results["where", "deltars"] = timed(lambda: deltalake.write_deltalake(
            target, one, mode="overwrite", predicate=f"day = '{ONE_DAY}'"))
        results["where", "deltars_files"] = last_commit_files(target)
        in_list = ", ".join(f"'{d}'" for d in THREE_DAYS)
        results["using", "deltars"] = timed(lambda: deltalake.write_deltalake(
            target, three, mode="overwrite", predicate=f"day IN ({in_list})"))
        results["using", "deltars_files"] = last_commit_files(target)
    finally:
        shutil.rmtree(copy, ignore_errors=True)

    print(f"\n### replace: {N:,} rows in 365 daily partitions (best of 3)\n")
    print("| statement | Lakegres (open connection) | delta-rs write_deltalake (in-process) | Lakegres / delta-rs "
          "| files removed/added: Lakegres | delta-rs |")
    print("|---|---|---|---|---|---|")
    for key, label in [("where", f"REPLACE WHERE day = '{ONE_DAY}'"),
                       ("using", "REPLACE USING (day), 3 days")]:
        lgt, drt = results[key, "lakegres"], results[key, "deltars"]
        lf, df = results[key, "lakegres_files"], results[key, "deltars_files"]
        print(f"| {label} | {lgt:.3f} s | {drt:.3f} s | {lgt / drt:.2f} | {lf[0]}/{lf[1]} | {df[0]}/{df[1]} |")
    print(f"\nA psql process per statement would add {results['psql_floor']:.3f} s (`psql -c 'SELECT 1'`); "
          f"Lakegres peak memory (VmHWM, includes loading the table): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
