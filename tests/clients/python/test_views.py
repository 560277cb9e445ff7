"""Views stored in the warehouse (issue #21, item 1) as clients see them:
psql's \\dv and \\d, SQLAlchemy's view inspection, DESCRIBE EXTENDED and
SHOW CREATE TABLE, a second server on the warehouse, and the view's object
in the warehouse folder."""

import json
import subprocess

import psycopg
import sqlalchemy as sa

from conftest import Server
from test_psql_meta import psql


def test_psql_and_sqlalchemy_list_and_describe_views(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS cv")
        conn.execute("CREATE OR REPLACE TABLE cv.base (id INT, name STRING, amount DECIMAL(12,2))")
        conn.execute("INSERT INTO cv.base VALUES (1, 'a', 1.50), (2, 'b', 2.50)")
        conn.execute("CREATE OR REPLACE VIEW cv.named (ident COMMENT 'the id', name) COMMENT 'a view' "
                     "AS SELECT id, name FROM cv.base WHERE id > 1")
    assert psql(server, r"\dv cv.*") == ["cv|named|view|tester"]
    assert psql(server, r"\d cv.named") == ["ident|integer|||", "name|text|||"]
    described = subprocess.run(["psql", "-X", "-d", server.dsn, "-c", r"\d+ cv.named"],
                               capture_output=True, text=True, timeout=60)
    assert "View definition:\nSELECT id, name FROM cv.base WHERE id > 1" in described.stdout, described

    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    inspector = sa.inspect(engine)
    assert inspector.get_view_names(schema="cv") == ["named"]
    assert "named" not in inspector.get_table_names(schema="cv")
    assert inspector.get_view_definition("named", schema="cv") == "SELECT id, name FROM cv.base WHERE id > 1"
    assert [c["name"] for c in inspector.get_columns("named", schema="cv")] == ["ident", "name"]
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT ident, name FROM cv.named")).fetchall()
    assert rows == [(2, "b")]
    engine.dispose()


def test_describe_extended_and_show_create_of_a_view(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS cv")
        conn.execute("CREATE OR REPLACE TABLE cv.facts (id INT, v STRING)")
        conn.execute("CREATE OR REPLACE VIEW cv.described (k COMMENT 'key', v) COMMENT 'facts view' "
                     "TBLPROPERTIES ('team' = 'sales') AS SELECT id, v FROM cv.facts")
        rows = {r[0]: r[1] for r in conn.execute("DESCRIBE EXTENDED cv.described").fetchall()}
        assert rows["k"] == "int" and rows["v"] == "string"
        assert rows["Type"] == "VIEW"
        assert rows["Comment"] == "facts view"
        assert rows["Owner"] == "tester"
        assert rows["View Text"] == "SELECT id, v FROM cv.facts"
        assert rows["View Query Output Columns"] == "[`k`, `v`]"
        assert rows["Table Properties"] == "[team=sales]"
        (create,) = conn.execute("SHOW CREATE TABLE cv.described").fetchone()
        assert create == (
            "CREATE VIEW lakegres.cv.described (\n"
            "  k COMMENT 'key',\n"
            "  v)\n"
            "COMMENT 'facts view'\n"
            "TBLPROPERTIES (\n"
            "  'team' = 'sales')\n"
            "AS SELECT id, v FROM cv.facts"
        )
        # What SHOW CREATE TABLE prints makes the same view again.
        conn.execute("DROP VIEW cv.described")
        conn.execute(create)
        assert conn.execute("SELECT count(*) FROM cv.described").fetchone() == (0,)


def test_a_second_server_sees_views_and_their_changes(server):
    """The view is an object in the warehouse: another server on it reads
    it, sees it replaced and dropped, and the object says what it stores."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE shared_base (n INT)")
        conn.execute("INSERT INTO shared_base VALUES (1), (2), (3)")
        conn.execute("CREATE OR REPLACE VIEW shared_v AS SELECT n FROM shared_base WHERE n > 1")
        other = Server(server.warehouse)
        try:
            with psycopg.connect(other.dsn, autocommit=True) as elsewhere:
                assert elsewhere.execute("SELECT sum(n) FROM shared_v").fetchone() == (5,)
                conn.execute("CREATE OR REPLACE VIEW shared_v AS SELECT n * 10 AS n FROM shared_base")
                assert elsewhere.execute("SELECT sum(n) FROM shared_v").fetchone() == (60,)
                assert elsewhere.execute("SHOW VIEWS LIKE 'shared_v'").fetchall() == [
                    ("default", "shared_v", False, False)]
                conn.execute("DROP VIEW shared_v")
                try:
                    elsewhere.execute("SELECT * FROM shared_v")
                    raise AssertionError("a dropped view was read")
                except psycopg.errors.UndefinedTable:
                    pass
        finally:
            other.stop()
        conn.execute("CREATE VIEW shared_w AS SELECT n FROM shared_base")
    stored = json.loads((server.warehouse / "default" / "shared_w" / "_lakegres_view.json").read_text())
    assert stored["sql"] == "SELECT n FROM shared_base"
    assert stored["schema"] == "default"
    assert stored["columns"] == [{"name": "n", "arrow_type": "Int32", "comment": None}]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("DROP VIEW shared_w")
        conn.execute("DROP TABLE shared_base")


def test_show_table_extended_describes_tables_and_views(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS ste")
        conn.execute("CREATE OR REPLACE TABLE ste.parts (id INT, p STRING) PARTITIONED BY (p)")
        conn.execute("CREATE OR REPLACE VIEW ste.parts_v AS SELECT id FROM ste.parts")
        conn.execute("CREATE OR REPLACE TABLE ste.other (x INT)")
        rows = conn.execute("SHOW TABLE EXTENDED IN ste LIKE 'parts*'").fetchall()
        assert [r[:3] for r in rows] == [("ste", "parts", False), ("ste", "parts_v", False)]
        table, view = rows[0][3].splitlines(), rows[1][3].splitlines()
        assert "Table: parts" in table and "Type: MANAGED" in table and "Provider: delta" in table
        assert table[-3:] == ["Schema: root", " |-- id: int (nullable = true)", " |-- p: string (nullable = true)"]
        assert "Type: VIEW" in view and "View Text: SELECT id FROM ste.parts" in view
        assert view[-2:] == ["Schema: root", " |-- id: int (nullable = true)"]
        for bad, state in [("SHOW TABLE EXTENDED IN nope LIKE 'x'", "3F000"), ("SHOW TABLE EXTENDED", "42601")]:
            try:
                conn.execute(bad)
                raise AssertionError(bad)
            except psycopg.Error as e:
                assert e.sqlstate == state, (bad, e.sqlstate)
