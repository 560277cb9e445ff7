"""bench/functions: a 10-million-row table through one SELECT of ten
typical loading expressions (date_format, to_date with a pattern,
regexp_extract, get_json_object, split + element access, sha2, concat_ws, a
CASE, regexp_replace, a decimal division) on Lakegres and the same query
with DuckDB's equivalents, in-process on the same rows. Each expression is
folded into an aggregate so that every row is computed and none is sent
to the client. Prints a markdown table."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from peers import Lakegres, timed  # noqa: E402

ROWS = int(os.environ.get("ROWS", "10000000"))

# The same rows in both engines: built from the row number alone.
LAKEGRES_LOAD = f"""
CREATE TABLE events AS
SELECT value AS id,
       to_timestamp(1700000000 + value * 7) AS ts,
       date_format(to_timestamp(1700000000 + value * 7), 'dd/MM/yyyy') AS day_text,
       'user' || (value % 1000) || '@host' || (value % 7) || '.example.com' AS email,
       '{{"a":{{"b":' || (value % 100) || ',"c":"x' || value || '"}},"n":' || value || '}}' AS payload,
       'p' || (value % 3) || ',q' || (value % 5) || ',r' || (value % 11) AS parts,
       CAST(value % 100000 AS DECIMAL(12,2)) AS amount
FROM generate_series(1, {ROWS})
"""

DUCKDB_LOAD = f"""
CREATE TABLE events AS
SELECT value AS id,
       to_timestamp(1700000000 + value * 7) AS ts,
       strftime(to_timestamp(1700000000 + value * 7), '%d/%m/%Y') AS day_text,
       'user' || (value % 1000) || '@host' || (value % 7) || '.example.com' AS email,
       '{{"a":{{"b":' || (value % 100) || ',"c":"x' || value || '"}},"n":' || value || '}}' AS payload,
       'p' || (value % 3) || ',q' || (value % 5) || ',r' || (value % 11) AS parts,
       CAST(value % 100000 AS DECIMAL(12,2)) AS amount
FROM generate_series(1, {ROWS}) AS r(value)
"""

LAKEGRES_QUERY = """
SELECT count(*),
       max(date_format(ts, 'yyyy-MM')),
       max(to_date(day_text, 'dd/MM/yyyy')),
       max(regexp_extract(email, '@(.*)$', 1)),
       max(get_json_object(payload, '$.a.c')),
       max(split(parts, ',')[1]),
       max(sha2(email, 256)),
       max(concat_ws('-', email, parts)),
       sum(CASE WHEN amount > 50000 THEN 1 WHEN amount > 1000 THEN 2 ELSE 3 END),
       max(regexp_replace(parts, '[^0-9]', '')),
       max(amount / 7)
FROM events
"""

DUCKDB_QUERY = """
SELECT count(*),
       max(strftime(ts, '%Y-%m')),
       max(strptime(day_text, '%d/%m/%Y')::DATE),
       max(regexp_extract(email, '@(.*)$', 1)),
       max(json_extract_string(payload, '$.a.c')),
       max(string_split(parts, ',')[2]),
       max(sha256(email)),
       max(concat_ws('-', email, parts)),
       sum(CASE WHEN amount > 50000 THEN 1 WHEN amount > 1000 THEN 2 ELSE 3 END),
       max(regexp_replace(parts, '[^0-9]', '', 'g')),
       max(amount / 7)
FROM events
"""


def main():
    import duckdb

    lg = Lakegres()
    try:
        lg.psql(LAKEGRES_LOAD)
        lakegres = timed(lambda: lg.psql(LAKEGRES_QUERY))
        memory = lg.peak_memory_mib()
    finally:
        lg.stop()
    con = duckdb.connect()
    con.execute(DUCKDB_LOAD)
    duck = timed(lambda: con.execute(DUCKDB_QUERY).fetchall())
    per_row = lambda s: s / ROWS * 1e9  # noqa: E731
    print(f"\n{ROWS:,} rows, ten expressions, best of 3 (2 cores)\n")
    print("| engine | time | ns per row | ratio |")
    print("|---|---|---|---|")
    print(f"| Lakegres | {lakegres:.2f} s | {per_row(lakegres):.0f} | {lakegres / duck:.2f} |")
    print(f"| DuckDB {duckdb.__version__} | {duck:.2f} s | {per_row(duck):.0f} | 1.00 |")
    print(f"\nLakegres peak memory: {memory:.0f} MiB")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"(total {time.time() - started:.0f} s)")
