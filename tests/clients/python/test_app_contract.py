"""What Postgres applications rely on (issue #61): catalog visibility by
search_path, and dbt's incremental SQL with composite keys and date
defaults.

SQLAlchemy's `has_table` (and so pandas' `to_sql`) asks
`pg_table_is_visible`: a table of another schema must not count, or pandas
appends to (or refuses) a table it does not write to.
"""

import pathlib
import subprocess

import pandas as pd
import pytest
import psycopg
import sqlalchemy as sa


def versions(server, schema: str, table: str) -> int:
    log = pathlib.Path(server.warehouse) / schema / table / "_delta_log"
    return len(list(log.glob("*.json")))


def test_has_table_sees_only_the_search_path(server):
    url = f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS ac_other")
        conn.exec_driver_sql("CREATE OR REPLACE TABLE ac_other.ac_only_there (a INT)")
        conn.exec_driver_sql("INSERT INTO ac_other.ac_only_there VALUES (7)")
    inspector = sa.inspect(engine)
    assert not inspector.has_table("ac_only_there")
    assert inspector.has_table("ac_only_there", schema="ac_other")
    assert "ac_only_there" not in inspector.get_table_names()
    # pandas creates the table where it was asked to, and leaves the other.
    pd.DataFrame({"a": [1, 2]}).to_sql("ac_only_there", engine, if_exists="fail", index=False)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT a FROM ac_only_there ORDER BY a").fetchall() == [(1,), (2,)]
        assert conn.execute("SELECT a FROM ac_other.ac_only_there").fetchall() == [(7,)]
        visible = conn.execute(
            "SELECT n.nspname, pg_table_is_visible(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON c.relnamespace = n.oid"
            " WHERE c.relname = 'ac_only_there' ORDER BY 1"
        ).fetchall()
        assert visible == [("ac_other", False), ("default", True)]
        conn.execute("SET search_path = ac_other")
        visible = conn.execute(
            "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid"
            " WHERE c.relname = 'ac_only_there' AND pg_catalog.pg_table_is_visible(c.oid)"
        ).fetchall()
        assert visible == [("ac_other",)]
        # The system catalogs stay visible.
        assert conn.execute(
            "SELECT pg_table_is_visible('pg_class'::regclass)"
        ).fetchone() == (True,)
    engine.dispose()


def test_psql_lists_the_search_path_only(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS ac_listed")
        conn.execute("CREATE OR REPLACE TABLE ac_listed.ac_in_listed (a INT)")
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester", "-d", "lakegres",
         "-X", "-A", "-t", "-c", "SET search_path = ac_listed", "-c", r"\dt"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.split() == ["SET", "ac_listed|ac_in_listed|table|tester"]


def test_dbt_incremental_with_a_composite_key_and_a_date_default(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_orders (order_id INT, customer_id INT, updated_at TIMESTAMP)")
        conn.execute(
            "INSERT INTO ac_orders VALUES (1, 10, '2024-01-01'), (1, 11, '2024-01-02'),"
            " (2, 10, NULL), (3, NULL, '2024-01-03')"
        )
        conn.execute("CREATE OR REPLACE TABLE ac_new (order_id INT, customer_id INT)")
        conn.execute("INSERT INTO ac_new VALUES (1, 10), (2, 10), (3, NULL), (4, 4)")
        # dbt's high-water mark: the string default takes the column's type.
        assert conn.execute(
            "SELECT coalesce(max(updated_at), '1900-01-01') FROM ac_orders WHERE order_id = 2"
        ).fetchone()[0].isoformat() == "1900-01-01T00:00:00+00:00"
        assert conn.execute(
            "SELECT order_id FROM ac_orders WHERE updated_at > coalesce(NULL, '2024-01-01') ORDER BY 1"
        ).fetchall() == [(1,), (3,)]
        before = versions(server, "default", "ac_orders")
        # A composite unique_key: the (3, NULL) row matches nothing, as in
        # Postgres (NULL = NULL is not true).
        cur = conn.execute(
            "DELETE FROM ac_orders WHERE (order_id, customer_id) IN"
            " (SELECT DISTINCT order_id, customer_id FROM ac_new)"
        )
        assert cur.fetchone()[0] == 2
        assert versions(server, "default", "ac_orders") == before + 1
        rows = conn.execute("SELECT order_id, customer_id FROM ac_orders ORDER BY 1, 2").fetchall()
        assert rows == [(1, 11), (3, None)]
        # Nothing matches: no new version.
        cur = conn.execute(
            "DELETE FROM ac_orders WHERE (order_id, customer_id) IN"
            " (SELECT order_id, customer_id FROM ac_new WHERE order_id > 100)"
        )
        assert cur.fetchone()[0] == 0
        assert versions(server, "default", "ac_orders") == before + 1


def test_postgres_expressions(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO 'b%', 'abc' NOT SIMILAR TO '(a|x)b_',"
            " 'a.c' SIMILAR TO 'a.c', 'abc' SIMILAR TO 'a.c', '100%' SIMILAR TO '100#%' ESCAPE '#'"
        ).fetchone()
        assert row == (True, False, False, True, False, True)
        assert conn.execute(
            "SELECT pg_typeof(1), pg_typeof(1.5), pg_typeof('x'::text), pg_typeof(1::bigint)"
        ).fetchone() == ("integer", "numeric", "text", "bigint")
        a, b = conn.execute("SELECT gen_random_uuid(), gen_random_uuid()").fetchone()
        assert len(a) == 36 and a != b


def properties(conn, table):
    return dict(conn.execute(f"SHOW TBLPROPERTIES {table}").fetchall())


def test_orm_ddl_keys_serial_and_indexes(server):
    from sqlalchemy import ForeignKey, String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

    class Base(DeclarativeBase):
        pass

    class Owner(Base):
        __tablename__ = "ac_owner"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(30), index=True)

    class Pet(Base):
        __tablename__ = "ac_pet"
        id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
        tag: Mapped[str] = mapped_column(unique=True)
        owner_id: Mapped[int] = mapped_column(ForeignKey("ac_owner.id"))

    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    Base.metadata.create_all(engine)
    assert sa.inspect(engine).has_table("ac_pet")
    with engine.begin() as conn:
        conn.execute(sa.insert(Pet), [{"id": 1, "tag": "a", "owner_id": 7}])
    engine.dispose()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        # SERIAL is a BIGINT identity; the primary key is NOT NULL.
        columns = {r[0]: r[1:] for r in conn.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns"
            " WHERE table_name = 'ac_owner'").fetchall()}
        assert columns["id"] == ("bigint", "NO")
        conn.execute("INSERT INTO ac_owner (name) VALUES ('ann'), ('bob')")
        assert conn.execute("SELECT id, name FROM ac_owner ORDER BY id").fetchall() == [(1, "ann"), (2, "bob")]
        assert properties(conn, "ac_owner")["lakegres.key.ac_owner_pkey"] == "PRIMARY KEY (id)"
        keys = {k: v for k, v in properties(conn, "ac_pet").items() if k.startswith("lakegres.key.")}
        assert keys == {
            "lakegres.key.ac_pet_pkey": "PRIMARY KEY (id)",
            "lakegres.key.ac_pet_tag_key": "UNIQUE (tag)",
            "lakegres.key.ac_pet_owner_id_fkey": "FOREIGN KEY (owner_id) REFERENCES ac_owner (id)",
        }
        assert conn.execute("SELECT id, tag, owner_id FROM ac_pet").fetchall() == [(1, "a", 7)]

        # Postgres' own forms: table constraints, names, actions, serials.
        conn.execute(
            "CREATE TABLE ac_line (id serial PRIMARY KEY, order_id bigint NOT NULL,"
            " sku text CONSTRAINT ac_sku_unique UNIQUE, qty int,"
            " CONSTRAINT ac_line_order FOREIGN KEY (order_id) REFERENCES ac_owner (id)"
            " ON DELETE CASCADE ON UPDATE NO ACTION NOT ENFORCED,"
            " UNIQUE (order_id, sku))"
        )
        keys = {k: v for k, v in properties(conn, "ac_line").items() if k.startswith("lakegres.key.")}
        assert keys == {
            "lakegres.key.ac_line_pkey": "PRIMARY KEY (id)",
            "lakegres.key.ac_sku_unique": "UNIQUE (sku)",
            "lakegres.key.ac_line_order": "FOREIGN KEY (order_id) REFERENCES ac_owner (id)",
            "lakegres.key.ac_line_order_id_sku_key": "UNIQUE (order_id, sku)",
        }
        conn.execute("CREATE TABLE ac_pk2 (a int, b int, PRIMARY KEY (a, b))")
        with pytest.raises(psycopg.errors.NotNullViolation):
            conn.execute("INSERT INTO ac_pk2 VALUES (1, NULL)")
        # Keys are informational: nothing enforces them, so ENFORCED is
        # refused, as are a second primary key and an unknown column.
        for sql, state in [
            ("CREATE TABLE ac_bad (a int PRIMARY KEY ENFORCED)", "42601"),
            ("CREATE TABLE ac_bad (a int PRIMARY KEY, b int, PRIMARY KEY (b))", "0A000"),
            ("CREATE TABLE ac_bad (a int, PRIMARY KEY (nope))", "42703"),
            ("CREATE TABLE ac_bad (a int CHECK (a > 0))", "42601"),
        ]:
            with pytest.raises(psycopg.Error) as e:
                conn.execute(sql)
            assert e.value.sqlstate == state, sql
        assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'ac_bad'").fetchone() == (0,)
        # CREATE INDEX and DROP INDEX are accepted with a notice.
        notices = []
        conn.add_notice_handler(lambda n: notices.append(n.message_primary))
        conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS ac_ix ON ac_line USING btree (sku)")
        conn.execute("DROP INDEX IF EXISTS ac_ix")
        assert len(notices) == 2 and "no indexes" in notices[0]
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("CREATE INDEX ac_ix2 ON ac_nowhere (a)")


def test_orm_sessions_with_serial_keys_and_relationships(server):
    from sqlalchemy import ForeignKey, String, select
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

    class Base(DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = "ac_author"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(30))
        books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")

    class Book(Base):
        __tablename__ = "ac_book"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str]
        author_id: Mapped[int] = mapped_column(ForeignKey("ac_author.id"))
        author: Mapped[Author] = relationship(back_populates="books")

    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        ann = Author(name="ann", books=[Book(title="a1"), Book(title="a2")])
        session.add(ann)
        session.commit()
        assert ann.id == 1 and sorted(b.id for b in ann.books) == [1, 2]
        # Several rows in one statement: ids in the order of the objects.
        others = [Author(name=f"x{i}", books=[Book(title=f"x{i}b")]) for i in range(4)]
        session.add_all(others)
        session.commit()
        assert [a.id for a in others] == [2, 3, 4, 5]
    with Session(engine) as session:
        rows = session.execute(select(Author.name, Book.title).join(Author.books).order_by(Book.id)).all()
        assert rows == [("ann", "a1"), ("ann", "a2"), ("x0", "x0b"), ("x1", "x1b"), ("x2", "x2b"), ("x3", "x3b")]
        x1 = session.scalars(select(Author).where(Author.name == "x1")).one()
        x1.name = "x1!"
        session.delete(session.get(Author, 5))
        session.commit()
        assert session.scalars(select(Author.name).order_by(Author.id)).all() == ["ann", "x0", "x1!", "x2"]
        assert session.scalar(select(sa.func.count()).select_from(Book)) == 5
        # A rolled-back session leaves nothing.
        session.add(Author(name="gone"))
        session.flush()
        session.rollback()
        assert session.scalar(select(sa.func.count()).select_from(Author)) == 4
    engine.dispose()


def test_insert_returning(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_ret (id BIGINT GENERATED ALWAYS AS IDENTITY, name STRING, qty INT DEFAULT 5)")
        before = versions(server, "default", "ac_ret")
        rows = conn.execute(
            "INSERT INTO ac_ret (name) VALUES ('p'), ('q') RETURNING id, name, upper(name) AS up, qty"
        ).fetchall()
        assert sorted(rows) == [(1, "p", "P", 5), (2, "q", "Q", 5)]
        assert versions(server, "default", "ac_ret") == before + 1
        cur = conn.execute("INSERT INTO ac_ret (name, qty) VALUES (%s, %s) RETURNING *", ["r", 1.5])
        assert cur.fetchall() == [(3, "r", 1)] and cur.statusmessage == "INSERT 0 1"
        assert conn.execute("INSERT INTO ac_ret (name) SELECT 'z' WHERE false RETURNING id").fetchall() == []
        # In a block: the rows are the block's until COMMIT; ROLLBACK
        # leaves nothing.
        conn.autocommit = False
        assert conn.execute("INSERT INTO ac_ret (name) VALUES ('s') RETURNING id").fetchall() == [(4,)]
        assert conn.execute("SELECT count(*) FROM ac_ret").fetchone() == (4,)
        conn.rollback()
        conn.autocommit = True
        assert conn.execute("SELECT count(*) FROM ac_ret").fetchone() == (3,)
        # A RETURNING that fails writes nothing.
        at = versions(server, "default", "ac_ret")
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("INSERT INTO ac_ret (name) VALUES ('t') RETURNING nope")
        assert versions(server, "default", "ac_ret") == at
        assert conn.execute("SELECT count(*) FROM ac_ret").fetchone() == (3,)


def test_alembic_first_migration(server):
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    with engine.begin() as conn:
        context = MigrationContext.configure(conn)
        op = Operations(context)
        op.create_table(
            "ac_account",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("email", sa.String(120), nullable=False, unique=True),
            sa.Column("created", sa.DateTime(timezone=True), server_default=sa.func.now()),
        )
        op.create_index("ix_ac_account_email", "ac_account", ["email"])
        context._ensure_version_table()
        conn.execute(context._version.insert().values(version_num="0001"))
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall() == [("0001",)]
        conn.exec_driver_sql("INSERT INTO ac_account (email) VALUES ('a@x')")
        row = conn.exec_driver_sql("SELECT id, email, created IS NOT NULL FROM ac_account").fetchone()
        assert tuple(row) == (1, "a@x", True)
    engine.dispose()


def test_insert_on_conflict_is_one_merge(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_up (id INT PRIMARY KEY, name STRING, hits INT)")
        conn.execute("INSERT INTO ac_up VALUES (1, 'a', 1), (2, 'b', 1)")
        before = versions(server, "default", "ac_up")
        cur = conn.execute(
            "INSERT INTO ac_up (id, name, hits) VALUES (%s, %s, %s), (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET name = excluded.name, hits = hits + excluded.hits",
            [2, "B", 5, 3, "c", 1],
        )
        assert cur.statusmessage == "INSERT 0 2"
        assert versions(server, "default", "ac_up") == before + 1
        assert conn.execute("SELECT id, name, hits FROM ac_up ORDER BY id").fetchall() == [
            (1, "a", 1), (2, "B", 6), (3, "c", 1)]
        # DO NOTHING, on the primary key when no target is named.
        cur = conn.execute("INSERT INTO ac_up VALUES (1, 'zz', 9), (4, 'd', 1) ON CONFLICT DO NOTHING")
        assert cur.statusmessage == "INSERT 0 1"
        # DO UPDATE … WHERE: a conflict the condition refuses changes nothing.
        conn.execute(
            "INSERT INTO ac_up AS u VALUES (4, 'D', 1) ON CONFLICT ON CONSTRAINT ac_up_pkey"
            " DO UPDATE SET name = excluded.name WHERE u.hits > 100"
        )
        assert conn.execute("SELECT id, name FROM ac_up ORDER BY id").fetchall() == [
            (1, "a"), (2, "B"), (3, "c"), (4, "d")]
        # A NULL key conflicts with nothing.
        conn.execute("CREATE OR REPLACE TABLE ac_uq (k INT UNIQUE, v INT)")
        for _ in range(2):
            conn.execute("INSERT INTO ac_uq VALUES (NULL, 1), (7, 1) ON CONFLICT (k) DO NOTHING")
        assert conn.execute("SELECT k, v FROM ac_uq ORDER BY k NULLS LAST").fetchall() == [
            (7, 1), (None, 1), (None, 1)]
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("INSERT INTO ac_up VALUES (5, 'e', 1) ON CONFLICT DO UPDATE SET name = 'x'")
        # A table without keys has nothing to conflict with.
        conn.execute("CREATE OR REPLACE TABLE ac_nokey (id INT)")
        conn.execute("INSERT INTO ac_nokey VALUES (1)")
        conn.execute("INSERT INTO ac_nokey VALUES (1) ON CONFLICT DO NOTHING")
        assert conn.execute("SELECT count(*) FROM ac_nokey").fetchone() == (2,)


def test_set_returning_generate_series(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT generate_series(1, 3)")
        assert cur.description[0].name == "generate_series"
        assert cur.fetchall() == [(1,), (2,), (3,)]
        assert conn.execute("SELECT generate_series(1, 10, 4) AS n ORDER BY n DESC").fetchall() == [(9,), (5,), (1,)]


def test_the_session_time_zone_reads_and_shows_timestamps(server):
    import datetime as dt

    utc = dt.timezone.utc
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_tz (k INT, ts TIMESTAMP, ntz TIMESTAMP_NTZ)")
        conn.execute("SET TIME ZONE 'America/New_York'")
        conn.execute("INSERT INTO ac_tz VALUES (1, '2024-01-01 10:00:00', '2024-01-01 10:00:00')")
        conn.execute("INSERT INTO ac_tz (k, ts) VALUES (2, %s)", [dt.datetime(2024, 7, 1, 10, 0)])
        conn.execute("INSERT INTO ac_tz (k, ts) VALUES (3, %s)", [dt.datetime(2024, 1, 1, 12, 0, tzinfo=utc)])
        # A time without a zone is read in the session's zone.
        assert conn.execute("SELECT k FROM ac_tz WHERE ts = '2024-01-01 10:00:00'").fetchall() == [(1,)]
        # 12:00 UTC is 07:00 in New York.
        assert conn.execute(
            "SELECT k FROM ac_tz WHERE ts > CAST('2024-01-01 09:00:00' AS TIMESTAMP) ORDER BY k"
        ).fetchall() == [(1,), (2,)]
        rows = dict(conn.execute("SELECT k, ts FROM ac_tz").fetchall())
        assert rows[1] == dt.datetime(2024, 1, 1, 15, 0, tzinfo=utc)
        assert rows[2] == dt.datetime(2024, 7, 1, 14, 0, tzinfo=utc)
        assert rows[3] == dt.datetime(2024, 1, 1, 12, 0, tzinfo=utc)
        # Shown in the session's zone, with its offset, as Postgres does.
        assert rows[1].utcoffset() == dt.timedelta(hours=-5)
        assert rows[2].utcoffset() == dt.timedelta(hours=-4)
        text = conn.execute("SELECT CAST(ts AS STRING) || '', ntz FROM ac_tz WHERE k = 1").fetchone()
        assert text[1] == dt.datetime(2024, 1, 1, 10, 0)
        conn.execute("SET TIME ZONE 'UTC'")
        assert conn.execute("SELECT ts, ntz FROM ac_tz WHERE k = 1").fetchone() == (
            dt.datetime(2024, 1, 1, 15, 0, tzinfo=utc), dt.datetime(2024, 1, 1, 10, 0))
        assert conn.execute("SELECT ts FROM ac_tz WHERE k = 1").fetchone()[0].utcoffset() == dt.timedelta(0)
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester", "-d", "lakegres",
         "-X", "-A", "-t", "-c", "SET TIME ZONE 'Asia/Kolkata'", "-c", "SELECT ts FROM ac_tz WHERE k = 1"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.split("\n")[1] == "2024-01-01 20:30:00+05:30"


def test_postgres_column_types(server):
    import decimal

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE TABLE ac_types (j jsonb, js json, u uuid, a int[], t text[],"
            " n numeric, f float, r real, d decimal)"
        )
        types = {r[0]: r[1] for r in conn.execute("DESCRIBE ac_types").fetchall()}
        assert types == {
            "j": "string", "js": "string", "u": "string", "a": "array<int>", "t": "array<string>",
            "n": "decimal(38,18)", "f": "double", "r": "float", "d": "decimal(10,0)",
        }
        conn.execute(
            "INSERT INTO ac_types (j, u, a, t, n, f) VALUES"
            " ('{\"k\": 1}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{4,5,NULL}', '{\"a b\",c}', 1.25, 0.1)"
        )
        conn.execute("INSERT INTO ac_types (a, n, f) VALUES (%s, %s, %s)", [[7, 8], decimal.Decimal("2.5"), 1 / 3])
        rows = conn.execute("SELECT j:k, u, a, t, n, f FROM ac_types ORDER BY n").fetchall()
        assert rows == [
            ("1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", [4, 5, None], ["a b", "c"], decimal.Decimal("1.25"), 0.1),
            (None, None, [7, 8], None, decimal.Decimal("2.5"), 1 / 3),
        ]
        # A text that is no array fails; it is not stored as a NULL element.
        with pytest.raises(psycopg.errors.InvalidCharacterValueForCast):
            conn.execute("INSERT INTO ac_types (a) VALUES ('nope')")
        with pytest.raises(psycopg.errors.InvalidCharacterValueForCast):
            conn.execute("INSERT INTO ac_types (a) VALUES ('{x}')")
        assert conn.execute("SELECT count(*) FROM ac_types").fetchone() == (2,)


def test_delete_returning(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE TABLE ac_del (id INT, name STRING)")
        conn.execute("INSERT INTO ac_del VALUES (1, 'a'), (2, 'b'), (3, NULL)")
        before = versions(server, "default", "ac_del")
        cur = conn.execute("DELETE FROM ac_del AS d WHERE d.id >= %s RETURNING d.id, upper(name) AS up", [2])
        assert sorted(cur.fetchall(), key=lambda r: r[0]) == [(2, "B"), (3, None)]
        assert cur.statusmessage == "DELETE 2"
        assert versions(server, "default", "ac_del") == before + 1
        # A NULL parameter selects nothing and deletes nothing.
        assert conn.execute("DELETE FROM ac_del WHERE id = %s RETURNING id", [None]).fetchall() == []
        assert versions(server, "default", "ac_del") == before + 1
        conn.autocommit = False
        assert conn.execute("DELETE FROM ac_del RETURNING *").fetchall() == [(1, "a")]
        conn.rollback()
        conn.autocommit = True
        assert conn.execute("SELECT id, name FROM ac_del").fetchall() == [(1, "a")]
