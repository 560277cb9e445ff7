"""Seed 002 (../shared/seeds/002_6b4b36e22803c1b5.txt): the incremental load
of CSV files that land in one folder every day, run twice with new files in
between — (a) as the seed writes it, with SQL for each Spark step, and (b)
with COPY INTO. Both must end with the rows of every file exactly once."""

import psycopg

DAY_1 = {
    "emp_1.csv": "id,name,salary\n1,ann,100\n2,ben,200\n",
    "emp_2.csv": "id,name,salary\n3,cat,300\n",
}
DAY_2 = {
    "emp_3.csv": "id,name,salary\n4,dan,400\n5,eve,500\n",
}
ALL_ROWS = [(1, "ann", 100), (2, "ben", 200), (3, "cat", 300), (4, "dan", 400), (5, "eve", 500)]


def land(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def run_seed_pattern(conn, folder):
    """One daily run of the seed, each Spark step as SQL."""
    # 1. List the current files of the folder into a table.
    conn.execute(
        f"CREATE OR REPLACE TABLE inc.files_present AS SELECT name, path FROM list_files('{folder}')"
    )
    # 2. The processed-files table, empty with the same schema, made once.
    conn.execute("CREATE TABLE IF NOT EXISTS inc.processed_files AS SELECT * FROM inc.files_present WHERE false")
    # 3. The files not processed yet: a left anti join.
    files_yet_to_process = [
        row[0]
        for row in conn.execute(
            "SELECT f.path FROM inc.files_present f LEFT ANTI JOIN inc.processed_files p ON f.name = p.name"
        ).fetchall()
    ]
    # 4. Read them (header = true) and load them.
    for path in files_yet_to_process:
        conn.execute(
            f"INSERT INTO inc.emp SELECT CAST(id AS INT), name, CAST(salary AS INT) "
            f"FROM read_files('{path}', format => 'csv', header => true)"
        )
    # 5. Record them as processed, as written in the seed.
    conn.execute(
        """MERGE INTO inc.processed_files AS target
USING inc.files_present AS source
ON target.name = source.name
WHEN NOT MATCHED THEN
    INSERT (`name`, path)
    VALUES (source.name, source.path);"""
    )
    return len(files_yet_to_process)


def test_seed_002_pattern_twice(server):
    folder = server.warehouse.parent / "ingest" / "emp_data"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("create database if not exists inc;")
        conn.execute("CREATE TABLE inc.emp (id INT, name STRING, salary INT)")
        land(folder, DAY_1)
        assert run_seed_pattern(conn, folder) == 2
        land(folder, DAY_2)
        assert run_seed_pattern(conn, folder) == 1
        # A run with nothing new loads nothing.
        assert run_seed_pattern(conn, folder) == 0
        assert conn.execute("SELECT id, name, salary FROM inc.emp ORDER BY id").fetchall() == ALL_ROWS
        names = [r[0] for r in conn.execute("SELECT name FROM inc.processed_files ORDER BY name").fetchall()]
        assert names == ["emp_1.csv", "emp_2.csv", "emp_3.csv"]
        conn.execute("DROP SCHEMA inc CASCADE")


def test_seed_002_with_copy_into_twice(server):
    folder = server.warehouse.parent / "ingest" / "emp_copy"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE emp_copy (id INT, name STRING, salary INT)")
        copy = (
            "COPY INTO emp_copy FROM 'emp_copy' FILEFORMAT = CSV "
            "FORMAT_OPTIONS ('header' = 'true')"
        )
        land(folder, DAY_1)
        assert conn.execute(copy).fetchall() == [(3, 3, 0)]
        land(folder, DAY_2)
        assert conn.execute(copy).fetchall() == [(2, 2, 0)]
        assert conn.execute(copy).fetchall() == [(0, 0, 0)]
        assert conn.execute("SELECT id, name, salary FROM emp_copy ORDER BY id").fetchall() == ALL_ROWS
        # force reloads every file.
        forced = conn.execute(copy + " COPY_OPTIONS ('force' = 'true')").fetchall()
        assert forced == [(5, 5, 0)]
        conn.execute("DROP TABLE emp_copy")
