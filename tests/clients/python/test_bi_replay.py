"""The start-up and catalog queries BI tools send (tests/clients/bi/*.sql:
DBeaver, Metabase, Grafana, Npgsql for Power BI), replayed: each answers
without error, and the answers name our schemas, tables and columns."""

import pathlib

import psycopg

BI = pathlib.Path(__file__).resolve().parents[1] / "bi"


def statements(name):
    text = (BI / name).read_text()
    for chunk in text.split(";\n"):
        lines = [line for line in chunk.splitlines() if not line.startswith("--")]
        statement = "\n".join(lines).strip().rstrip(";")
        if statement:
            yield statement


def replay(conn, name):
    answers = []
    for statement in statements(name):
        cur = conn.execute(statement)
        answers.append(cur.fetchall() if cur.description else None)
    return answers


def test_bi_tools_catalog_queries(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bi_orders (id INT, region STRING)")

        dbeaver = replay(conn, "dbeaver.sql")
        assert any("default" in row for row in dbeaver[4])
        assert any("bi_orders" in row for row in dbeaver[-2])
        assert [row[0] for row in dbeaver[-1]] == ["bi_orders", "bi_orders"]

        grafana = replay(conn, "grafana.sql")
        assert ("bi_orders",) in grafana[0]
        assert [row[0] for row in grafana[1]] == ["id", "region"]
        assert grafana[2] == [("150006",)]

        metabase = replay(conn, "metabase.sql")
        assert "default" in [row[0] for row in metabase[0]]
        assert ("default", "bi_orders", "TABLE") in [(r[1], r[2], r[3]) for r in metabase[1]]

        npgsql = replay(conn, "npgsql.sql")
        type_names = {row[2] for row in npgsql[1]}
        assert {"int4", "int8", "text", "bool", "timestamptz"} <= type_names
