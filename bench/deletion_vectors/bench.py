"""bench/deletion_vectors: a table of ROWS rows (default 10M) in 10 files of
ROWS/10 rows, built by 10 INSERT … SELECT through psql and copied twice:
one copy gets `delta.enableDeletionVectors = true`, one keeps rewriting
files, one is left to the `deltalake` package (in-process). On each, a
DELETE and then an UPDATE of 0.1% of the rows, spread over every file
(`id % 1000 = 7`, `id % 1000 = 8`), timed once, with the bytes each wrote
(new files in the table's folder, log excluded), and a full-table scan
(best of 3) before and after each. Prints a markdown table with ratios."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import deltalake
import pyarrow
from deltalake import QueryBuilder

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, timed  # noqa: E402

ROWS = int(os.environ.get("ROWS", "10000000"))
FILES = 10
SCAN = "SELECT count(*), sum(amount), max(name) FROM {t}"
DELETE = "id % 1000 = 7"
UPDATE = "id % 1000 = 8"


def once(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def data_files(folder):
    """Every file of the table but its log, with its size."""
    return {
        p: p.stat().st_size
        for p in pathlib.Path(folder).rglob("*")
        if p.is_file() and "_delta_log" not in p.parts
    }


def written(folder, before):
    return sum(size for p, size in data_files(folder).items() if p not in before)


def lakegres_out(lg, sql):
    return subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
         str(lg.port), "-U", "bench", "-d", "lakegres", "-c", sql],
        check=True, capture_output=True, text=True).stdout.strip()


def main():
    lg = Lakegres()
    copy = tempfile.mkdtemp(prefix="dv-bench-")
    per_file = ROWS // FILES
    results = {}
    try:
        lg.psql("CREATE TABLE base (id BIGINT, name STRING, amount DOUBLE, day DATE)")
        for f in range(FILES):
            lg.psql(
                f"INSERT INTO base SELECT id, 'name_' || id, id * 1.5, "
                f"DATE '2026-01-01' + CAST(id % 365 AS INT) "
                f"FROM range({f * per_file}, {(f + 1) * per_file}) AS r(id)")
        warehouse = pathlib.Path(lg.dir) / "warehouse" / "default"
        shutil.copytree(warehouse / "base", pathlib.Path(copy) / "base")
        lg.psql("CREATE TABLE cow DEEP CLONE base")
        lg.psql("CREATE TABLE dv DEEP CLONE base")
        lg.psql("ALTER TABLE dv SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
        files = len(list((warehouse / "base").glob("*.parquet")))
        expected = lakegres_out(lg, SCAN.format(t="base"))
        for t in ("cow", "dv"):
            r = results[t] = {}
            folder = warehouse / t
            r["scan0"] = timed(lambda: lg.psql(SCAN.format(t=t)))
            before = data_files(folder)
            r["delete"], _ = once(lambda: lg.psql(f"DELETE FROM {t} WHERE {DELETE}"))
            r["delete_bytes"] = written(folder, before)
            r["scan1"] = timed(lambda: lg.psql(SCAN.format(t=t)))
            before = data_files(folder)
            r["update"], _ = once(
                lambda: lg.psql(f"UPDATE {t} SET amount = amount + 1 WHERE {UPDATE}"))
            r["update_bytes"] = written(folder, before)
            r["scan2"] = timed(lambda: lg.psql(SCAN.format(t=t)))
            r["result"] = lakegres_out(lg, SCAN.format(t=t))
        assert results["cow"]["result"] == results["dv"]["result"], results
        mem = lg.peak_memory_mib()
    finally:
        lg.stop()

    try:
        folder = pathlib.Path(copy) / "base"
        dt = deltalake.DeltaTable(str(folder))

        def scan():
            table = deltalake.DeltaTable(str(folder))
            q = QueryBuilder().register("t", table).execute(SCAN.format(t="t"))
            return pyarrow.table(q.read_all())

        r = results["deltalake"] = {}
        r["scan0"] = timed(scan)
        before = data_files(folder)
        r["delete"], _ = once(lambda: dt.delete(DELETE))
        r["delete_bytes"] = written(folder, before)
        r["scan1"] = timed(scan)
        before = data_files(folder)
        dt = deltalake.DeltaTable(str(folder))
        r["update"], _ = once(
            lambda: dt.update(updates={"amount": "amount + 1"}, predicate=UPDATE))
        r["update_bytes"] = written(folder, before)
        r["scan2"] = timed(scan)
        got = scan().to_pylist()[0]
        r["result"] = "|".join(str(v) for v in got.values())
    finally:
        shutil.rmtree(copy, ignore_errors=True)

    cow, dv, dl = results["cow"], results["dv"], results["deltalake"]
    mib = 1024 * 1024
    print(f"\n### deletion vectors: {ROWS:,} rows in {files} files; DELETE `{DELETE}` "
          f"({ROWS // 1000:,} rows), then UPDATE `{UPDATE}`; scans best of 3\n")
    print(f"Scan before: `{expected}`; after both, Lakegres `{dv['result']}`, "
          f"deltalake `{dl['result']}`.\n")
    print("| work | Lakegres, deletion vectors | Lakegres, rewriting files | "
          "deltalake (in-process, rewrites) | rewrite / DV | deltalake / DV |")
    print("|---|---|---|---|---|---|")
    for key, label in (("delete", "DELETE"), ("update", "UPDATE")):
        print(f"| {label} time | {dv[key]:.2f} s | {cow[key]:.2f} s | {dl[key]:.2f} s | "
              f"{cow[key] / dv[key]:.1f}× | {dl[key] / dv[key]:.1f}× |")
        b = f"{key}_bytes"
        print(f"| {label} bytes written | {dv[b] / mib:.2f} MiB | {cow[b] / mib:.1f} MiB | "
              f"{dl[b] / mib:.1f} MiB | {cow[b] / max(dv[b], 1):.0f}× | "
              f"{dl[b] / max(dv[b], 1):.0f}× |")
    for key, label in (("scan0", "scan, before"), ("scan1", "scan, after DELETE"),
                       ("scan2", "scan, after UPDATE")):
        print(f"| {label} | {dv[key]:.3f} s | {cow[key]:.3f} s | {dl[key]:.3f} s | "
              f"{cow[key] / dv[key]:.2f} | {dl[key] / dv[key]:.2f} |")
    print(f"\nScan with deletion vectors after both, against the same table before any "
          f"delete: {dv['scan2'] / dv['scan0']:.2f}× (aim: within 1.20×). "
          f"Lakegres peak memory (VmHWM): {mem:.0f} MiB")


if __name__ == "__main__":
    main()
