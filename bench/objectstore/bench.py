"""bench/objectstore: the same MERGE and SELECT workloads on a Lakegres
warehouse on local disk and on one in S3 (moto, through
tests/it/moto_atomic.py), side by side, as the table's history grows. At
each point (HISTORY commits, 10,100,500 by default) it runs MEASURED merges,
full-table scans and point queries and reports, per statement, the time and
the object-store requests by kind, read from the server's own
`lakegres_object_store_requests_total{op}` counters in /metrics. The aim
(issue #9): requests per MERGE small and flat as history grows.

The merge is an upsert of SOURCE rows (half spread over the target, half
new keys on the first run) into a ROWS-row table; each one is a commit, and
the history between two points is made of them."""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "clients", "python"))
from moto_s3 import Moto  # noqa: E402
from peers import REQUEST_KINDS as KINDS, MeteredLakegres  # noqa: E402

HISTORY = [int(x) for x in os.environ.get("HISTORY", "10,100,500").split(",")]
ROWS = int(os.environ.get("ROWS", "100000"))
SOURCE = int(os.environ.get("SOURCE", "1000"))
MEASURED = int(os.environ.get("MEASURED", "5"))
BUCKET = "bench"


class Server(MeteredLakegres):
    """A release Lakegres with /metrics on a spare port."""

    def measure(self, sql, times):
        """Median seconds and median requests by kind of `sql`, run `times`
        times (the median: the typical statement, not the one that happens
        to write a checkpoint)."""
        spent, counted = [], {k: [] for k in KINDS}
        for _ in range(times):
            before = self.requests()
            start = time.perf_counter()
            cur = self.conn.execute(sql)
            if cur.description:
                cur.fetchall()
            spent.append(time.perf_counter() - start)
            after = self.requests()
            for k in KINDS:
                counted[k].append(after[k] - before[k])
        return statistics.median(spent), {k: statistics.median(v) for k, v in counted.items()}


MERGE = ("MERGE INTO os_t t USING os_src s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
SCAN = "SELECT count(*), sum(v) FROM os_t"
POINT = f"SELECT name FROM os_t WHERE id = {ROWS // 3}"


def run(server):
    c = server.conn
    half = SOURCE // 2
    step = max(ROWS // max(half, 1), 1)
    c.execute(f"CREATE OR REPLACE TABLE os_t AS SELECT value AS id, 'name_' || value AS name, value * 1.0 AS v "
              f"FROM generate_series(0, {ROWS - 1})")
    c.execute(f"CREATE OR REPLACE TABLE os_src AS SELECT CASE WHEN value < {half} THEN value * {step} "
              f"ELSE {ROWS} + value END AS id, 'new_' || value AS name, value * 2.0 AS v "
              f"FROM generate_series(0, {SOURCE - 1})")
    commits, points = 1, []
    for target in HISTORY:
        # The merges that make the history, with what they cost all told
        # (checkpoints included: every 100th commit writes one).
        before, made = server.requests(), 0
        while commits < target:
            c.execute(MERGE)
            commits += 1
            made += 1
        after = server.requests()
        amortized = {k: (after[k] - before[k]) / max(made, 1) for k in KINDS}
        merge = server.measure(MERGE, MEASURED)
        commits += MEASURED
        scan = server.measure(SCAN, MEASURED)
        point = server.measure(POINT, MEASURED)
        points.append({"history": target, "merge": merge, "scan": scan, "point": point,
                       "amortized": amortized, "made": made})
        print(f"  {target} commits: merge {merge[0] * 1000:.0f} ms {merge[1]}, amortized {amortized}",
              file=sys.stderr)
    return points


def cells(measured, kinds):
    seconds, counted = measured
    return [f"{seconds * 1000:.0f} ms"] + [f"{counted[k]:.1f}".rstrip("0").rstrip(".") for k in kinds]


def main():
    print("local disk ...", file=sys.stderr)
    local = Server()
    try:
        on_disk = run(local)
    finally:
        local.stop()
    print("S3 (moto) ...", file=sys.stderr)
    moto = Moto(BUCKET)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    try:
        remote = Server(f"s3://{BUCKET}/wh", args=["--storage-endpoint", moto.endpoint, "--storage-allow-http",
                                                   "true", "--storage-region", "us-east-1"])
        try:
            on_s3 = run(remote)
        finally:
            remote.stop()
    finally:
        moto.stop()

    print(f"\n### objectstore: per statement as history grows ({ROWS:,}-row table, {SOURCE:,}-row upsert; "
          f"median of {MEASURED})\n")
    print("Requests per statement by kind (get / head / put / list / delete), from "
          "`lakegres_object_store_requests_total`.\n")
    print("| commits | warehouse | MERGE | get | head | put | list | delete "
          "| scan | get | head | list | point | get | head | list |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, s in zip(on_disk, on_s3):
        for name, p in [("local", d), ("S3 (moto)", s)]:
            row = [str(p["history"]), name] + cells(p["merge"], KINDS) + cells(p["scan"], ["get", "head", "list"]) \
                + cells(p["point"], ["get", "head", "list"])
            print("| " + " | ".join(row) + " |")
    print("\nMERGE requests amortized over the merges that made the history up to that point "
          "(checkpoints included), S3:\n")
    print("| commits | merges | get | head | put | list | delete |")
    print("|---|---|---|---|---|---|---|")
    for s in on_s3:
        a = s["amortized"]
        print(f"| {s['history']} | {s['made']} | " + " | ".join(f"{a[k]:.1f}" for k in KINDS) + " |")
    print("\n| commits | MERGE S3 / local | scan S3 / local | point S3 / local |")
    print("|---|---|---|---|")
    for d, s in zip(on_disk, on_s3):
        print(f"| {d['history']} | {s['merge'][0] / d['merge'][0]:.2f} | {s['scan'][0] / d['scan'][0]:.2f} "
              f"| {s['point'][0] / d['point'][0]:.2f} |")


if __name__ == "__main__":
    main()
