"""Seed 000 (../shared/seeds/000_fdb3f250d0cc9841.txt): steps 1 and 2 through
psql as written, step 3 (the DESCRIBE-driven dynamic INSERT) with psycopg."""

import pathlib
import subprocess

import psycopg

SQL = pathlib.Path(__file__).resolve().parents[1] / "psql" / "seed_000_steps_1_2.sql"


def run_step_3(conn):
    """Step 3 of the seed, with `spark.sql` replaced by a psycopg cursor."""
    cur = conn.cursor()
    cur.execute("DESCRIBE TABLE employees_target1")
    target_columns = [row[0] for row in cur.fetchall() if row[0] != ""]

    cur.execute("DESCRIBE TABLE employees_temp_table1")
    temp_columns = [row[0] for row in cur.fetchall() if row[0] != "" and row[0] != "match"]

    columns_str = ", ".join(target_columns)
    values_str = ", ".join(
        [f"temp.{col}" if col in temp_columns else f"tgt.{col}" for col in target_columns]
    )
    dynamic_sql_query = f"""
INSERT INTO employees_target1 ({columns_str})
SELECT {values_str}
FROM (
    SELECT DISTINCT match, {', '.join(temp_columns)}
    FROM employees_temp_table1
) temp
JOIN employees_target1 tgt ON temp.match = tgt.emp_id
WHERE temp.match IS NOT NULL;
"""
    cur.execute(dynamic_sql_query)
    print("Modified rows inserted successfully into employees_target1.")


def test_seed_000_steps_1_to_3(server):
    out = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", server.dsn, "-f", str(SQL)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "ERROR" not in out.stderr

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT match, salary FROM employees_temp_table1 ORDER BY match").fetchall()
        assert rows == [(1, 80000.0), (5, 90000.0)]

        run_step_3(conn)

        rows = conn.execute(
            "SELECT emp_id, name, department, salary FROM employees_target1 "
            "ORDER BY emp_id, salary"
        ).fetchall()
        # The original rows stay; the modified ones are inserted beside them.
        assert rows == [
            (1, "Alice", "HR", 60000.0),
            (1, "Alice", "HR", 80000.0),
            (2, "Bob", "IT", 70000.0),
            (3, "Charlie", "Finance", 80000.0),
            (4, "David", "IT", 75000.0),
            (5, "Eve", "Marketing", 65000.0),
            (5, "Eve", "Marketing", 90000.0),
            (6, "Frank", "Sales", 72000.0),
        ]
    # Create (v0), INSERT (v1), step 3's INSERT (v2).
    log = server.warehouse / "default" / "employees_target1" / "_delta_log"
    assert sorted(p.name for p in log.glob("*.json")) == [
        "00000000000000000000.json",
        "00000000000000000001.json",
        "00000000000000000002.json",
    ]
