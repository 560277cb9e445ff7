"""bench/optimize: a table built by 2,000 single-row INSERTs through psql
(2,000 commits, 2,000 small files), then through psql a full-table
aggregate before and after `OPTIMIZE`, and `OPTIMIZE` itself, against
`DeltaTable.optimize.compact()` of the `deltalake` package (in-process) on
a copy of the same table taken before the OPTIMIZE. Prints a markdown
table with the ratios."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import deltalake

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, timed  # noqa: E402

INSERTS = int(os.environ.get("INSERTS", "2000"))
AGGREGATE = "SELECT count(*), sum(amount), min(day), max(name) FROM ev"
PLAN = "EXPLAIN SELECT * FROM ev WHERE id = 7"


def once(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    lg = Lakegres()
    copy = tempfile.mkdtemp(prefix="optimize-bench-")
    try:
        lg.psql("CREATE TABLE ev (id BIGINT, name STRING, amount DOUBLE, day DATE)")
        script = pathlib.Path(copy) / "inserts.sql"
        with open(script, "w") as f:
            for i in range(INSERTS):
                f.write(f"INSERT INTO ev VALUES ({i}, 'name_{i:05d}', {i * 1.5}, "
                        f"DATE '2026-01-01' + INTERVAL '{i % 365} days');\n")
        load, _ = once(lambda: subprocess.run(
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(lg.port),
             "-U", "bench", "-d", "lakegres", "-f", str(script)],
            check=True, stdout=subprocess.DEVNULL))
        table = pathlib.Path(lg.dir) / "warehouse" / "default" / "ev"
        shutil.copytree(table, pathlib.Path(copy) / "ev")
        files_before = len(list(table.glob("*.parquet")))

        floor = timed(lambda: lg.psql("SELECT 1"))
        # Planning over a long log: on a server that has the table loaded,
        # and the first statement of a new server on the same warehouse,
        # which reads the log from its last checkpoint.
        checkpoints = len(list((table / "_delta_log").glob("*.checkpoint.parquet")))
        plan_warm = timed(lambda: lg.psql(PLAN))
        fresh = Lakegres(warehouse=str(pathlib.Path(lg.dir) / "warehouse"))
        try:
            plan_cold, _ = once(lambda: fresh.psql(PLAN))
        finally:
            fresh.stop()
        before = timed(lambda: lg.psql(AGGREGATE))
        optimize, _ = once(lambda: lg.psql("OPTIMIZE ev"))
        after = timed(lambda: lg.psql(AGGREGATE))
        expected = subprocess.run(
            ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(lg.port), "-U", "bench",
             "-d", "lakegres", "-c", AGGREGATE], check=True, capture_output=True, text=True).stdout
        mem = lg.peak_memory_mib()
    finally:
        lg.stop()

    try:
        dt_open, dt = once(lambda: deltalake.DeltaTable(os.path.join(copy, "ev")))
        assert dt.version() == INSERTS
        dt_before = timed(lambda: dt.to_pyarrow_table().num_rows)
        dt_optimize, metrics = once(lambda: dt.optimize.compact())
        dt = deltalake.DeltaTable(os.path.join(copy, "ev"))
        dt_after = timed(lambda: dt.to_pyarrow_table().num_rows)
        assert dt.to_pyarrow_table().num_rows == INSERTS
        assert metrics["numFilesRemoved"] == files_before
    finally:
        shutil.rmtree(copy, ignore_errors=True)

    print(f"\n### optimize: {INSERTS:,} single-row INSERTs ({files_before:,} files), "
          f"aggregates best of 3, OPTIMIZE once\n")
    print(f"Result of the aggregate: `{expected.strip()}`; loading the table took {load:.1f} s "
          f"({INSERTS / load:,.0f} INSERTs/s through one psql).\n")
    print("| work | Lakegres (psql) | delta-rs Python (in-process) | ratio |")
    print("|---|---|---|---|")
    print(f"| full-table aggregate, before OPTIMIZE | {before:.3f} s | {dt_before:.3f} s (read all rows) "
          f"| {before / dt_before:.2f} |")
    print(f"| OPTIMIZE / `optimize.compact()` | {optimize:.3f} s | {dt_optimize:.3f} s | "
          f"{optimize / dt_optimize:.2f} |")
    print(f"| full-table aggregate, after OPTIMIZE | {after:.3f} s | {dt_after:.3f} s (read all rows) "
          f"| {after / dt_after:.2f} |")
    print(f"| aggregate before / after | {before / after:.1f}× faster | {dt_before / dt_after:.1f}× faster | |")
    print(f"| planning over {INSERTS:,} commits ({checkpoints} checkpoints), first statement of a new "
          f"server | {plan_cold:.3f} s | {dt_open:.3f} s (open the table) | {plan_cold / dt_open:.2f} |")
    print(f"| the same, table already loaded | {plan_warm:.3f} s | | |")
    print(f"\npsql round trip (`SELECT 1`): {floor:.3f} s. Lakegres peak memory (VmHWM): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
