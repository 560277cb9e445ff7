"""bench/small: the statements applications and ingestion jobs send one at a
time, through pgbench, on Lakegres and PostgreSQL 15 in one run:

- `SELECT 1;`, 1 client, simple and prepared protocol;
- `INSERT INTO small_ins VALUES (:id, 'x');`, 1, 4 and 8 clients on one
  table (on Lakegres concurrent appends share commits: group commit);
- the same INSERTs on a warehouse in S3 (moto), with the object-store
  requests per INSERT read from the server's /metrics.

Prints tps per figure and Lakegres / PostgreSQL."""

import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "clients", "python"))
from peers import Lakegres, Postgres, free_port  # noqa: E402
from peers import pgbench as peers_pgbench  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = int(os.environ.get("SECONDS", "10"))
CLIENTS = [int(c) for c in os.environ.get("CLIENTS", "1,4,8").split(",")]
KINDS = ["get", "head", "put", "list", "delete"]
CREATE = "CREATE TABLE small_ins (id BIGINT, s STRING)"


def pgbench(port, user, db, script, clients, mode="simple"):
    return peers_pgbench(port, user, db, os.path.join(HERE, script), clients, SECONDS, mode)


def requests(http):
    with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=10) as r:
        text = r.read().decode()
    found = dict(re.findall(r'^lakegres_object_store_requests_total\{op="(\w+)"\} (\d+)$', text, re.M))
    return {k: int(found.get(k, 0)) for k in KINDS}


def lakegres_figures(warehouse=None, args=(), selects=True):
    http = free_port()
    lg = Lakegres(warehouse, args=["--http-listen", f"127.0.0.1:{http}", *args])
    figures, per_insert = {}, {}
    try:
        if selects:
            figures["select1 simple"] = pgbench(lg.port, "bench", "lakegres", "select1.sql", 1)[0]
            figures["select1 prepared"] = pgbench(lg.port, "bench", "lakegres", "select1.sql", 1, "prepared")[0]
        for clients in CLIENTS:
            lg.psql("DROP TABLE IF EXISTS small_ins")
            lg.psql(CREATE)
            before = requests(http)
            tps, done = pgbench(lg.port, "bench", "lakegres", "insert.sql", clients)
            after = requests(http)
            figures[f"insert {clients}"] = tps
            per_insert[clients] = {k: (after[k] - before[k]) / max(done, 1) for k in KINDS}
            out = subprocess.run(
                ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(lg.port), "-U", "bench", "-d", "lakegres",
                 "-c", "SELECT count(*) FROM small_ins", "-c", "DESCRIBE HISTORY small_ins LIMIT 1"],
                check=True, capture_output=True, text=True).stdout.split("\n")
            per_insert[clients]["rows"] = int(out[0])
            # The latest version; version 0 is the CREATE.
            per_insert[clients]["commits"] = int(out[1].split("|")[0])
    finally:
        lg.stop()
    return figures, per_insert


def postgres_figures():
    pg = Postgres()
    figures = {}
    try:
        figures["select1 simple"] = pgbench(pg.port, "postgres", "postgres", "select1.sql", 1)[0]
        figures["select1 prepared"] = pgbench(pg.port, "postgres", "postgres", "select1.sql", 1, "prepared")[0]
        for clients in CLIENTS:
            pg.psql("DROP TABLE IF EXISTS small_ins")
            pg.psql("CREATE TABLE small_ins (id BIGINT, s TEXT)")
            figures[f"insert {clients}"] = pgbench(pg.port, "postgres", "postgres", "insert.sql", clients)[0]
    finally:
        pg.stop()
    return figures


def main():
    print("Lakegres, local disk ...", file=sys.stderr)
    local, local_requests = lakegres_figures()
    s3, s3_requests = {}, {}
    if not os.environ.get("SKIP_S3"):
        from moto_s3 import Moto
        print("Lakegres, S3 (moto) ...", file=sys.stderr)
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
        moto = Moto("bench")
        try:
            s3, s3_requests = lakegres_figures(
                "s3://bench/wh",
                ["--storage-endpoint", moto.endpoint, "--storage-allow-http", "true", "--storage-region", "us-east-1"],
                selects=False)
        finally:
            moto.stop()
    print("PostgreSQL 15 ...", file=sys.stderr)
    postgres = postgres_figures()

    print(f"\n### small statements (pgbench, {SECONDS} s each)\n")
    print("| work | Lakegres tps | PostgreSQL tps | Lakegres / PostgreSQL |")
    print("|---|---|---|---|")
    for key, label in [("select1 simple", "`SELECT 1`, 1 client, simple protocol"),
                       ("select1 prepared", "`SELECT 1`, 1 client, prepared")] + \
            [(f"insert {c}", f"single-row INSERT, {c} client{'s' if c > 1 else ''}, one table") for c in CLIENTS]:
        print(f"| {label} | {local[key]:,.0f} | {postgres[key]:,.0f} | {local[key] / postgres[key]:.3f} |")
    for c in CLIENTS:
        if s3:
            print(f"| single-row INSERT, {c} client{'s' if c > 1 else ''}, S3 (moto) | {s3[f'insert {c}']:,.0f} "
                  f"| | |")
    print("\nINSERTs per commit (group commit) and object-store requests per INSERT:\n")
    print("| warehouse | clients | rows | commits | rows / commit | get | head | put | list | delete |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, table in [("local", local_requests), ("S3 (moto)", s3_requests)]:
        for c, r in table.items():
            print(f"| {name} | {c} | {r['rows']:,} | {r['commits']:,} | {r['rows'] / max(r['commits'], 1):.1f} | "
                  + " | ".join(f"{r[k]:.2f}" for k in KINDS) + " |")


if __name__ == "__main__":
    main()
