"""bench/transactions: what an application's loop of INSERTs inside one
transaction costs — pgbench runs `BEGIN; INSERT … (ROWS times); COMMIT;`
with 1 and 8 clients on one table, on Lakegres and PostgreSQL 15 in one
run. On Lakegres each block stages its INSERTs and commits them as one
Delta version; the run checks that (versions added = blocks committed).

Prints blocks/s, rows/s and Lakegres / PostgreSQL."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, Postgres  # noqa: E402
from peers import pgbench as peers_pgbench  # noqa: E402

SECONDS = int(os.environ.get("SECONDS", "20"))
CLIENTS = [int(c) for c in os.environ.get("CLIENTS", "1,8").split(",")]
ROWS = int(os.environ.get("ROWS", "1000"))
# pgbench's protocol: simple (each INSERT's text sent whole) or prepared.
MODE = os.environ.get("MODE", "simple")


def script() -> str:
    """The pgbench script: one block of ROWS single-row INSERTs."""
    lines = ["\\set id random(1, 1000000000)", "BEGIN;"]
    lines += ["INSERT INTO tx_ins VALUES (:id, 'x');"] * ROWS
    lines.append("COMMIT;")
    f = tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


def pgbench(port, user, db, path, clients):
    return peers_pgbench(port, user, db, path, clients, SECONDS, MODE)


def query(port, user, db, sql):
    return subprocess.run(
        ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", db, "-c", sql],
        check=True, capture_output=True, text=True).stdout.strip()


def lakegres_figures(path):
    lg = Lakegres()
    figures, checks = {}, {}
    try:
        for clients in CLIENTS:
            lg.psql("DROP TABLE IF EXISTS tx_ins")
            lg.psql("CREATE TABLE tx_ins (id BIGINT, s STRING)")
            tps, done = pgbench(lg.port, "bench", "lakegres", path, clients)
            figures[clients] = tps
            rows = int(query(lg.port, "bench", "lakegres", "SELECT count(*) FROM tx_ins"))
            version = int(query(lg.port, "bench", "lakegres", "DESCRIBE HISTORY tx_ins LIMIT 1").split("|")[0])
            checks[clients] = (done, rows, version)
    finally:
        lg.stop()
    return figures, checks


def postgres_figures(path):
    pg = Postgres()
    figures = {}
    try:
        for clients in CLIENTS:
            pg.psql("DROP TABLE IF EXISTS tx_ins")
            pg.psql("CREATE TABLE tx_ins (id BIGINT, s TEXT)")
            figures[clients] = pgbench(pg.port, "postgres", "postgres", path, clients)[0]
    finally:
        pg.stop()
    return figures


def main():
    path = script()
    print("Lakegres ...", file=sys.stderr)
    local, checks = lakegres_figures(path)
    print("PostgreSQL 15 ...", file=sys.stderr)
    postgres = postgres_figures(path)
    os.unlink(path)

    print(f"\n### {ROWS:,} single-row INSERTs in one block (pgbench {MODE}, {SECONDS} s each)\n")
    print("| clients | Lakegres blocks/s | rows/s | PostgreSQL blocks/s | rows/s | Lakegres / PostgreSQL |")
    print("|---|---|---|---|---|---|")
    for c in CLIENTS:
        print(f"| {c} | {local[c]:,.2f} | {local[c] * ROWS:,.0f} | {postgres[c]:,.2f} | {postgres[c] * ROWS:,.0f} "
              f"| {local[c] / postgres[c]:.3f} |")
    print("\nLakegres: blocks committed, rows, Delta versions after the CREATE (one per block):\n")
    for c, (done, rows, version) in checks.items():
        print(f"- {c} client{'s' if c > 1 else ''}: {done} blocks, {rows:,} rows, {version} versions")


if __name__ == "__main__":
    main()
