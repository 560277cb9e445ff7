"""psql's meta-commands that read pg_catalog (the rest of them is issue #6)."""

import subprocess

import psycopg


def psql(server, command):
    out = subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", server.dsn, "-c", command],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_dt_and_dn_list_tables_and_schemas_once(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS meta")
        conn.execute("CREATE TABLE meta.listed (a INT)")
    assert "meta|listed|table|postgres" in psql(server, r"\dt meta.*")
    schemas = [line.split("|")[0] for line in psql(server, r"\dn")]
    assert "meta" in schemas and "default" in schemas
    assert len(schemas) == len(set(schemas))
