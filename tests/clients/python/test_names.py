"""Names as Postgres clients write them (issue #22, item 3): the database
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
