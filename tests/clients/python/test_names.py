"""Names and catalogs as Postgres clients read them (issue #22, items 3 and 5): the database
the client connected to is this warehouse's catalog in three-part names,
`current_database()` answers it, and startup `options` (`-c search_path=…`)
are honoured."""

import psycopg


def test_the_client_database_is_the_catalog_and_startup_options_apply(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS nm")
    dsn = server.dsn.replace("dbname=lakegres", "dbname=shopdb") + " options='-c search_path=nm'"
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT current_database(), current_catalog, current_schema()").fetchone() == (
            "shopdb", "shopdb", "nm")
        assert conn.execute("SHOW search_path").fetchone() == ("nm",)
        conn.execute("CREATE TABLE shopdb.nm.t (a INT)")
        conn.execute("INSERT INTO shopdb.nm.t VALUES (1), (2)")
        conn.execute("UPDATE shopdb.nm.t SET a = 3 WHERE a = 2")
        conn.execute("DELETE FROM shopdb.nm.t WHERE a = 1")
        # Unqualified names resolve in the search_path's schema.
        assert conn.execute("SELECT a FROM t").fetchall() == [(3,)]
        assert conn.execute('SELECT a FROM "shopdb"."nm"."t"').fetchall() == [(3,)]
    # `lakegres` stays the catalog's own name for every client.
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT current_database(), current_schema()").fetchone() == ("lakegres", "default")
        assert conn.execute("SELECT a FROM lakegres.nm.t").fetchall() == [(3,)]


def test_pg_database_answers_the_client_database(server):
    dsn = server.dsn.replace("dbname=lakegres", "dbname=shopdb")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT datname FROM pg_database ORDER BY 1").fetchall() == [
            ("postgres",), ("shopdb",)]
        assert conn.execute(
            "SELECT d.datname FROM pg_catalog.pg_database d WHERE d.datname = current_database()"
        ).fetchall() == [("shopdb",)]


def test_information_schema_columns_speak_postgres(server):
    """dbt's get_columns_in_relation and BI tools read these back into DDL."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS ct")
        conn.execute(
            "CREATE OR REPLACE TABLE ct.typed (id BIGINT, n INT, name STRING, code VARCHAR(20), "
            "amount DECIMAL(12,2), f DOUBLE, ok BOOLEAN, d DATE, at TIMESTAMP, "
            "at_ntz TIMESTAMP_NTZ, tags ARRAY<STRING>)")
        got = conn.execute(
            "SELECT column_name, data_type, character_maximum_length, numeric_precision, "
            "numeric_scale, datetime_precision, udt_name FROM information_schema.columns "
            "WHERE table_schema = 'ct' AND table_name = 'typed' ORDER BY ordinal_position"
        ).fetchall()
        assert got == [
            ("id", "bigint", None, 64, 0, None, "int8"),
            ("n", "integer", None, 32, 0, None, "int4"),
            ("name", "text", None, None, None, None, "text"),
            ("code", "character varying", 20, None, None, None, "varchar"),
            ("amount", "numeric", None, 12, 2, None, "numeric"),
            ("f", "double precision", None, 53, None, None, "float8"),
            ("ok", "boolean", None, None, None, None, "bool"),
            ("d", "date", None, None, None, 0, "date"),
            ("at", "timestamp with time zone", None, None, None, 6, "timestamptz"),
            ("at_ntz", "timestamp without time zone", None, None, None, 6, "timestamp"),
            ("tags", "ARRAY", None, None, None, None, "_text"),
        ]
        assert conn.execute(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
            "JOIN pg_catalog.pg_class c ON a.attrelid = c.oid WHERE c.relname = 'typed' "
            "AND a.attname IN ('amount', 'code') ORDER BY a.attnum"
        ).fetchall() == [("character varying(20)",), ("numeric(12,2)",)]
        # The types read back are types ALTER TABLE takes, several per
        # statement as Postgres writes them.
        conn.execute(
            'ALTER TABLE ct.typed ADD COLUMN "m" numeric(23,2), ADD COLUMN "t" character varying(5), '
            'ADD COLUMN "u" timestamp with time zone'
        )
        assert conn.execute(
            "SELECT column_name, data_type, numeric_precision FROM information_schema.columns "
            "WHERE table_name = 'typed' AND ordinal_position > 11 ORDER BY ordinal_position"
        ).fetchall() == [("m", "numeric", 23), ("t", "character varying", None),
                         ("u", "timestamp with time zone", None)]
        # A session's temporary table is listed too, in pg_temp.
        conn.execute("CREATE TEMPORARY TABLE staged AS SELECT id, amount FROM ct.typed")
        assert conn.execute(
            "SELECT table_schema, column_name, data_type, numeric_precision, numeric_scale "
            "FROM information_schema.columns WHERE table_name = 'staged' ORDER BY ordinal_position"
        ).fetchall() == [("pg_temp", "id", "bigint", 64, 0), ("pg_temp", "amount", "numeric", 12, 2)]


def test_sqlalchemy_reflects_every_table_kind(server):
    """Table(autoload_with=…) runs get_indexes/get_unique_constraints, whose
    `a.attnum = ANY(ix.indkey)` needs pg_index.indkey as an int2 array."""
    import sqlalchemy as sa

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS refl")
        conn.execute("CREATE OR REPLACE TABLE refl.plain (id BIGINT NOT NULL, v DECIMAL(8,3))")
        conn.execute("CREATE OR REPLACE TABLE refl.parts (id INT, day DATE) PARTITIONED BY (day)")
        conn.execute("CREATE OR REPLACE VIEW refl.v AS SELECT id FROM refl.plain")
    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    try:
        inspector = sa.inspect(engine)
        meta = sa.MetaData()
        plain = sa.Table("plain", meta, schema="refl", autoload_with=engine)
        assert [(c.name, str(c.type), c.nullable) for c in plain.columns] == [
            ("id", "BIGINT", False), ("v", "NUMERIC(8, 3)", True)]
        parts = sa.Table("parts", meta, schema="refl", autoload_with=engine)
        assert [c.name for c in parts.columns] == ["id", "day"]
        view = sa.Table("v", meta, schema="refl", autoload_with=engine)
        assert [c.name for c in view.columns] == ["id"]
        for name in ("plain", "parts", "v"):
            assert inspector.get_indexes(name, schema="refl") == []
            assert inspector.get_unique_constraints(name, schema="refl") == []
            assert inspector.get_pk_constraint(name, schema="refl")["constrained_columns"] == []
            assert inspector.get_foreign_keys(name, schema="refl") == []
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(plain)).scalar() == 0
    finally:
        engine.dispose()
    # SQLAlchemy 1.4 (Superset's) compares boolean catalog columns with
    # 'f', as Postgres allows.
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute(
            "SELECT i.relname, a.attname FROM pg_class t JOIN pg_index ix ON t.oid = ix.indrelid "
            "JOIN pg_class i ON i.oid = ix.indexrelid LEFT OUTER JOIN pg_attribute a "
            "ON t.oid = a.attrelid AND a.attnum = ANY(ix.indkey) "
            "WHERE t.relkind IN ('r', 'v', 'f', 'm', 'p') AND ix.indisprimary = 'f'"
        ).fetchall() == []
        assert conn.execute(
            "SELECT count(*) > 0 FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid "
            "WHERE n.nspname = 'refl' AND c.relhasindex = 'f' AND c.relkind = 'r'"
        ).fetchone() == (True,)


def test_repeated_unnamed_columns_keep_their_databricks_names(server):
    """Databricks names `SELECT 1, 1` columns `1` and `1`; DataFusion refuses
    two columns of one name, so the server marks the second and cuts the
    mark off when it describes the result."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT 1, 1, 1 + 1, 1 + 1, x, x FROM (SELECT 7 AS x)")
        assert [c.name for c in cur.description] == ["1", "1", "(1 + 1)", "(1 + 1)", "x", "x"]
        assert cur.fetchall() == [(1, 1, 2, 2, 7, 7)]
        # The extended protocol describes the same names.
        cur = conn.execute("SELECT %s::int AS p, 1, 1", (5,), prepare=True)
        assert [c.name for c in cur.description] == ["p", "1", "1"]
        with conn.cursor().copy("COPY (SELECT 1, 1) TO STDOUT WITH (FORMAT csv, HEADER true)") as copy:
            text = b"".join(bytes(b) for b in copy).decode()
        assert text == "1,1\n1,1\n"
        # A table made from such a query still may not repeat a name.
        conn.execute("CREATE OR REPLACE TABLE rep AS SELECT 1, 2")
        assert [c.name for c in conn.execute("SELECT * FROM rep").description] == ["1", "2"]
