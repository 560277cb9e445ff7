"""bench/copy_into_scale (issue #27): a landing folder of small CSV files
(100 rows each) that a daily job loads with COPY INTO, a batch at a time,
then a COPY INTO that finds nothing new. Prints the time of each batch
(files/s), of the re-run, and the size of the table's log, checkpoint and
load record; on local disk and on S3 (moto), with the object-store requests
of each COPY INTO from the server's /metrics. Not a timed test."""

import argparse
import concurrent.futures
import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "clients", "python"))
from moto_s3 import Moto  # noqa: E402
from peers import REQUEST_KINDS as KINDS, MeteredLakegres  # noqa: E402

ROWS_PER_FILE = 100
BUCKET = "bench"
COPY = ("COPY INTO bench.landing FROM '{url}' FILEFORMAT = CSV "
        "FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true')")


def csv_body(n: int) -> bytes:
    first = n * ROWS_PER_FILE
    lines = ["id,name,amount,day"]
    lines += [f"{first + i},name_{first + i},{(first + i) % 1000}.{i % 100:02d},2026-{1 + n % 12:02d}-{1 + i % 28:02d}"
              for i in range(ROWS_PER_FILE)]
    return ("\n".join(lines) + "\n").encode()


def name(n: int) -> str:
    return f"batch-{n // 1000:04d}/part-{n:07d}.csv"


class Server(MeteredLakegres):
    """A release Lakegres with /metrics on a spare port."""

    def copy_into(self, url):
        """Seconds, rows loaded and requests by kind of one COPY INTO."""
        before = self.requests()
        start = time.perf_counter()
        rows = self.conn.execute(COPY.format(url=url)).fetchone()[0]
        spent = time.perf_counter() - start
        after = self.requests()
        return spent, rows, {k: after[k] - before[k] for k in KINDS}


def run(server, put, url, files, batch, sizes):
    """Loads `files` files in batches of `batch`, then re-runs; the rows of
    the report."""
    server.conn.execute("CREATE SCHEMA IF NOT EXISTS bench")
    server.conn.execute("CREATE TABLE bench.landing (id BIGINT, name STRING, amount DECIMAL(10,2), day DATE)")
    report = []
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for start in range(0, files, batch):
            end = min(files, start + batch)
            list(pool.map(put, range(start, end)))
            spent, rows, made = server.copy_into(url)
            assert rows == (end - start) * ROWS_PER_FILE, (rows, start, end)
            report.append((f"files {start:,}–{end - 1:,} (of {end:,})", spent, end - start, made))
            print(f"  loaded {end:,} files: {spent:.2f} s", file=sys.stderr)
    best = None
    for _ in range(3):
        spent, rows, made = server.copy_into(url)
        assert rows == 0, rows
        if best is None or spent < best[0]:
            best = (spent, made)
    report.append((f"re-run, nothing new ({files:,} loaded)", best[0], 0, best[1]))
    total = server.conn.execute("SELECT count(*) FROM bench.landing").fetchone()[0]
    assert total == files * ROWS_PER_FILE, total
    return report, sizes()


def listing(server, put, path, files):
    """Writes a flat folder of `files` files, then times LIST over it: the
    first row (rows streamed as they arrive) and the last, and a
    `list_files` with LIMIT 10; with the requests of the LIST."""
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(files)))
    best = None
    for _ in range(3):
        before = server.requests()
        start = time.perf_counter()
        first, rows = None, 0
        for _row in server.conn.cursor().stream(f"LIST '{path}'"):
            if first is None:
                first = time.perf_counter() - start
            rows += 1
        total = time.perf_counter() - start
        after = server.requests()
        assert rows == files, rows
        start = time.perf_counter()
        limited = server.conn.execute(f"SELECT name FROM list_files('{path}') LIMIT 10").fetchall()
        limit = time.perf_counter() - start
        assert len(limited) == 10
        if best is None or total < best[1]:
            best = (first, total, limit, {k: after[k] - before[k] for k in KINDS})
    return best


def list_table(title, files, timing):
    first, total, limit, made = timing
    print(f"\n{title}: LIST of {files:,} files: first row {first:.3f} s, last {total:.2f} s "
          f"({made['list']} LIST requests); `list_files(…) LIMIT 10` {limit:.3f} s.")


def local_sizes(table: pathlib.Path):
    def sizes():
        log = table / "_delta_log"
        checkpoints = [p for p in log.iterdir() if ".checkpoint." in p.name]
        record = table / "_lakegres_copy_into"
        return {
            "log": sum(p.stat().st_size for p in log.iterdir() if p.is_file()),
            "checkpoint": max((p.stat().st_size for p in checkpoints), default=0),
            "record": sum(p.stat().st_size for p in record.rglob("*") if p.is_file()) if record.exists() else 0,
            "data files": sum(1 for p in table.glob("*.parquet")),
        }
    return sizes


def s3_sizes(moto, prefix):
    def sizes():
        client = moto.client
        out = {"log": 0, "checkpoint": 0, "record": 0, "data files": 0}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for o in page.get("Contents", []):
                key = o["Key"][len(prefix):]
                if key.startswith("_delta_log/"):
                    out["log"] += o["Size"]
                    if ".checkpoint." in key:
                        out["checkpoint"] = max(out["checkpoint"], o["Size"])
                elif key.startswith("_lakegres_copy_into/"):
                    out["record"] += o["Size"]
                elif key.endswith(".parquet"):
                    out["data files"] += 1
        return out
    return sizes


def table(title, report, sizes):
    print(f"\n### {title}\n")
    print("| COPY INTO | time | files/s | get | head | put | list | delete |")
    print("|---|---|---|---|---|---|---|---|")
    for what, spent, n, made in report:
        rate = f"{n / spent:,.0f}" if n else "—"
        print(f"| {what} | {spent:.2f} s | {rate} | " + " | ".join(str(made[k]) for k in KINDS) + " |")
    print(f"\nLog {sizes['log'] / 1e6:.2f} MB (largest checkpoint {sizes['checkpoint'] / 1e6:.2f} MB), "
          f"load record {sizes['record'] / 1e6:.2f} MB, {sizes['data files']} data files.")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--s3-files", type=int, default=4_000, help="0 skips S3")
    parser.add_argument("--s3-batch", type=int, default=2_000)
    parser.add_argument("--list-files", type=int, default=100_000, help="a flat folder for LIST (S3: --s3-files)")
    args = parser.parse_args()

    print("local disk ...", file=sys.stderr)
    local = Server()
    try:
        landing = pathlib.Path(local.lg.dir) / "ingest" / "landing"

        def put_local(n):
            path = landing / name(n)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(csv_body(n))

        table_dir = pathlib.Path(local.lg.dir) / "warehouse" / "bench" / "landing"
        on_disk = run(local, put_local, str(landing), args.files, args.batch, local_sizes(table_dir))
        flat = pathlib.Path(local.lg.dir) / "ingest" / "flat"
        flat.mkdir(parents=True, exist_ok=True)
        local_list = listing(local, lambda n: (flat / f"part-{n:07d}.csv").write_bytes(b"n\n1\n"),
                             str(flat), args.list_files)
    finally:
        local.stop()

    on_s3 = s3_list = None
    if args.s3_files:
        print("S3 (moto) ...", file=sys.stderr)
        moto = Moto(BUCKET)
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
        try:
            remote = Server(f"s3://{BUCKET}/wh", args=[
                "--storage-endpoint", moto.endpoint, "--storage-allow-http", "true",
                "--storage-region", "us-east-1", "--file-root", f"s3://{BUCKET}/ingest"])
            client = moto.client
            try:
                on_s3 = run(remote, lambda n: client.put_object(Bucket=BUCKET, Key=f"ingest/landing/{name(n)}",
                                                                Body=csv_body(n)),
                            f"s3://{BUCKET}/ingest/landing", args.s3_files, args.s3_batch,
                            s3_sizes(moto, "wh/bench/landing/"))
                s3_list = listing(remote, lambda n: client.put_object(Bucket=BUCKET, Key=f"ingest/flat/part-{n:07d}.csv",
                                                                      Body=b"n\n1\n"),
                                  f"s3://{BUCKET}/ingest/flat", args.s3_files)
            finally:
                remote.stop()
        finally:
            moto.stop()

    table(f"copy_into_scale: local disk, {args.files:,} files of {ROWS_PER_FILE} rows in batches of "
          f"{args.batch:,}", *on_disk)
    list_table("Local disk", args.list_files, local_list)
    if on_s3:
        table(f"copy_into_scale: S3 (moto), {args.s3_files:,} files in batches of {args.s3_batch:,}; "
              "requests per COPY INTO from `lakegres_object_store_requests_total`", *on_s3)
        list_table("S3 (moto)", args.s3_files, s3_list)


if __name__ == "__main__":
    main()
