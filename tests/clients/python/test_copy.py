"""Postgres COPY through psql's \\copy and psycopg's cursor.copy(): rows in
and out in text and CSV, one Delta version per COPY, bad rows named by line."""

import subprocess

import psycopg


def psql(server, *commands, stdin=None):
    args = ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", server.dsn]
    for c in commands:
        args += ["-c", c]
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)


def test_psql_copy_both_ways(server, tmp_path):
    src = tmp_path / "people.csv"
    src.write_text('id,name,born\n1,ann,1990-01-02\n2,"smith, bob",\n3,,2001-12-31\n')
    out = psql(
        server,
        "CREATE TABLE people (id INT, name STRING, born DATE)",
        f"\\copy people FROM '{src}' WITH (FORMAT csv, HEADER)",
    )
    assert out.returncode == 0, out.stderr
    assert "COPY 3" in out.stdout
    dst = tmp_path / "people.txt"
    out = psql(server, f"\\copy (SELECT * FROM people ORDER BY id) TO '{dst}'")
    assert out.returncode == 0, out.stderr
    assert dst.read_text() == "1\tann\t1990-01-02\n2\tsmith, bob\t\\N\n3\t\\N\t2001-12-31\n"
    # The text format back in, from psql's standard input.
    out = psql(server, "\\copy people FROM STDIN", stdin="4\tdee\t\\N\n\\.\n")
    assert out.returncode == 0, out.stderr
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM people").fetchone()[0] == 4
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name,born\n5,eve,2000-01-01\n6,fay,not-a-date\n")
    out = psql(server, f"\\copy people FROM '{bad}' WITH (FORMAT csv, HEADER)")
    assert out.returncode != 0
    assert "line 3" in out.stderr and "born" in out.stderr, out.stderr


def test_psycopg_copy_in_and_out(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE pc (id BIGINT, label STRING, score DOUBLE)")
        with conn.cursor() as cur:
            with cur.copy("COPY pc (id, label, score) FROM STDIN") as copy:
                for i in range(10_000):
                    copy.write_row((i, f"label {i}", i / 4))
            assert cur.rowcount == 10_000
            row = cur.execute("SELECT count(*), sum(id), max(score) FROM pc").fetchone()
            assert row == (10_000, sum(range(10_000)), 9_999 / 4)
            with cur.copy("COPY (SELECT id, label FROM pc WHERE id < 2 ORDER BY id) TO STDOUT (FORMAT csv)") as copy:
                data = b"".join(bytes(chunk) for chunk in copy)
            assert data == b"0,label 0\n1,label 1\n"


def test_psycopg_binary_copy_round_trip(server):
    import datetime
    import decimal

    rows = [
        (1, 10_000_000_000, "ann", 1.5, datetime.date(2026, 1, 2),
         datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc),
         decimal.Decimal("12345.67"), True),
        (2, -5, None, -0.25, None, None, decimal.Decimal("-0.05"), False),
    ]
    types = ["int4", "int8", "text", "float8", "date", "timestamptz", "numeric", "bool"]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE bin (i INT, l BIGINT, s STRING, f DOUBLE, d DATE, ts TIMESTAMP, "
            "n DECIMAL(10,2), b BOOLEAN)"
        )
        with conn.cursor() as cur:
            with cur.copy("COPY bin FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for r in rows:
                    copy.write_row(r)
            assert cur.rowcount == 2
            got = cur.execute("SELECT * FROM bin ORDER BY i").fetchall()
            assert got == rows
            with cur.copy("COPY (SELECT * FROM bin ORDER BY i) TO STDOUT (FORMAT BINARY)") as copy:
                copy.set_types(types)
                out = list(copy.rows())
            assert out == rows
