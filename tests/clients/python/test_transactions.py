"""Transaction blocks through the drivers and libraries users write them
with (issue #59): psycopg 3 and psycopg2 with autocommit off, SQLAlchemy's
engine.begin() and begin_nested(), pandas' to_sql(if_exists='replace'),
asyncpg's transaction(), psql's ON_ERROR_ROLLBACK; a block's writes are
seen by nobody else until COMMIT, and ROLLBACK, a failing statement or a
disconnect leaves nothing; grants a block changed go back with it."""

import asyncio
import subprocess
import time

import asyncpg
import pandas as pd
import psycopg
import psycopg2
import pytest
import sqlalchemy as sa

from test_privileges import connect, server_on, sqlstate


def rows(server, sql):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        return c.execute(sql).fetchall()


def execute(server, sql):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(sql)


def latest_version(server, table):
    return rows(server, f"DESCRIBE HISTORY {table} LIMIT 1")[0][0]


def test_psycopg_rollback_undoes_the_block_and_commit_is_one_version(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE tr_pg (id INT, v STRING)")
        c.execute("INSERT INTO tr_pg VALUES (1, 'a'), (2, 'b')")
    before = latest_version(server, "tr_pg")
    # psycopg's default: autocommit off, the first statement opens a block.
    with psycopg.connect(server.dsn) as c:
        c.execute("INSERT INTO tr_pg VALUES (%s, %s)", (3, "c"))
        c.execute("DELETE FROM tr_pg WHERE id = %s", (1,))
        assert c.execute("SELECT id FROM tr_pg ORDER BY id").fetchall() == [(2,), (3,)]
        assert rows(server, "SELECT id FROM tr_pg ORDER BY id") == [(1,), (2,)]
        c.rollback()
        assert c.execute("SELECT id FROM tr_pg ORDER BY id").fetchall() == [(1,), (2,)]
        c.rollback()
    assert rows(server, "SELECT id FROM tr_pg ORDER BY id") == [(1,), (2,)]
    assert latest_version(server, "tr_pg") == before

    with psycopg.connect(server.dsn) as c:
        c.execute("INSERT INTO tr_pg VALUES (%s, %s)", (3, "c"))
        # A NULL parameter matches no row, inside a block as outside.
        c.execute("DELETE FROM tr_pg WHERE id = %s", (None,))
        c.execute("UPDATE tr_pg SET v = %s WHERE id = %s", ("B", 2))
        c.commit()
    assert rows(server, "SELECT id, v FROM tr_pg ORDER BY id") == [(1, "a"), (2, "B"), (3, "c")]
    assert latest_version(server, "tr_pg") == before + 1


def test_copy_from_stdin_and_many_inserts_take_part(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE tr_copy (id INT, v STRING)")
    before = latest_version(server, "tr_copy")
    with psycopg.connect(server.dsn) as c:
        with c.cursor().copy("COPY tr_copy (id, v) FROM STDIN") as copy:
            for i in range(3):
                copy.write_row((i, f"r{i}"))
        # Single-row INSERTs of literals wait in the block and are written
        # as one file with the block's next write of the table.
        for i in range(3, 203):
            c.execute(f"INSERT INTO tr_copy VALUES ({i}, 'v')")
        assert c.execute("SELECT count(*) FROM tr_copy").fetchone() == (203,)
        assert rows(server, "SELECT count(*) FROM tr_copy") == [(0,)]
        c.rollback()
        assert c.execute("SELECT count(*) FROM tr_copy").fetchone() == (0,)
        with c.cursor().copy("COPY tr_copy (id, v) FROM STDIN") as copy:
            copy.write_row((1, "kept"))
        # Literals and parameters alike (a parameterized INSERT is parsed
        # and described by the extended protocol each time).
        for i in range(2, 52):
            c.execute(f"INSERT INTO tr_copy VALUES ({i}, 'v')")
        for i in range(52, 102):
            c.execute("INSERT INTO tr_copy VALUES (%s, %s)", (i, "v"))
        c.execute("SAVEPOINT s")
        c.execute("INSERT INTO tr_copy VALUES (500, 'undone')")
        c.execute("ROLLBACK TO SAVEPOINT s")
        c.commit()
    assert rows(server, "SELECT count(*), max(id) FROM tr_copy") == [(101, 101)]
    assert latest_version(server, "tr_copy") == before + 1
    # The block's 100 INSERTs are one data file, the COPY another.
    detail = rows(server, "DESCRIBE DETAIL tr_copy")[0]
    with psycopg.connect(server.dsn, autocommit=True) as c:
        names = [d.name for d in c.execute("DESCRIBE DETAIL tr_copy").description]
    assert detail[names.index("numFiles")] == 2, detail


def test_psycopg2_failed_statement_aborts_the_block(server):
    conn = psycopg2.connect(host="127.0.0.1", port=server.port, user="tester", dbname="lakegres")
    conn.autocommit = True
    conn.cursor().execute("CREATE TABLE tr_p2 (id INT)")
    conn.autocommit = False
    cur = conn.cursor()
    cur.execute("INSERT INTO tr_p2 VALUES (1)")
    with pytest.raises(psycopg2.errors.DivisionByZero):
        cur.execute("SELECT 1 / 0")
    with pytest.raises(psycopg2.errors.InFailedSqlTransaction):
        cur.execute("INSERT INTO tr_p2 VALUES (2)")
    conn.commit()  # of a failed block: rolls back
    cur.execute("SELECT count(*) FROM tr_p2")
    assert cur.fetchone() == (0,)
    conn.rollback()
    conn.close()


def test_sqlalchemy_begin_rolls_back_on_error_and_nested_blocks_are_savepoints(server):
    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE tr_sa (id INT, v STRING)"))
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO tr_sa VALUES (1, 'old'), (2, 'old')"))
    with pytest.raises(sa.exc.DataError):
        with engine.begin() as c:
            c.execute(sa.text("DELETE FROM tr_sa"))
            c.execute(sa.text("INSERT INTO tr_sa VALUES (3, 'new')"))
            c.execute(sa.text("INSERT INTO tr_sa VALUES (1 / 0, 'bad')"))
    assert rows(server, "SELECT id, v FROM tr_sa ORDER BY id") == [(1, "old"), (2, "old")]

    with engine.connect() as c:
        with c.begin():
            c.execute(sa.text("INSERT INTO tr_sa VALUES (4, 'kept')"))
            nested = c.begin_nested()
            c.execute(sa.text("INSERT INTO tr_sa VALUES (5, 'undone')"))
            nested.rollback()
            with c.begin_nested():
                c.execute(sa.text("INSERT INTO tr_sa VALUES (6, 'released')"))
    assert rows(server, "SELECT id FROM tr_sa ORDER BY id") == [(1,), (2,), (4,), (6,)]
    engine.dispose()


def test_pandas_to_sql_replace_that_fails_keeps_the_old_table(server):
    engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{server.port}/lakegres")
    pd.DataFrame({"id": [1, 2], "v": ["old", "old"]}).to_sql("tr_pd", engine, index=False)
    calls = []

    def fail_on_second_chunk(table, conn, keys, data_iter):
        # Row 2 is one the server refuses (as a value out of a column's
        # range would be): the block is aborted, and pandas' COMMIT at the
        # end answers ROLLBACK, as Postgres' does.
        calls.append(1)
        values = ", ".join(f"({int(i)}, '{v}')" for i, v in data_iter)
        if len(calls) == 2:
            values = "(1 / 0, 'bad')"
        conn.execute(sa.text(f"INSERT INTO {table.name} VALUES {values}"))

    frame = pd.DataFrame({"id": [10, 20], "v": ["new", "new"]})
    with pytest.raises(sa.exc.DataError):
        frame.to_sql("tr_pd", engine, index=False, if_exists="replace", chunksize=1,
                     method=fail_on_second_chunk)
    assert rows(server, "SELECT id, v FROM tr_pd ORDER BY id") == [(1, "old"), (2, "old")]

    frame.to_sql("tr_pd", engine, index=False, if_exists="replace")
    assert rows(server, "SELECT id, v FROM tr_pd ORDER BY id") == [(10, "new"), (20, "new")]
    engine.dispose()


def test_asyncpg_transaction_and_savepoint(server):
    async def run():
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="tester",
                                     database="lakegres")
        await conn.execute("CREATE TABLE tr_apg (id INT)")
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await conn.execute("INSERT INTO tr_apg VALUES ($1)", 1)
                assert await conn.fetchval("SELECT count(*) FROM tr_apg") == 1
                raise RuntimeError("undo")
        assert await conn.fetchval("SELECT count(*) FROM tr_apg") == 0
        async with conn.transaction():
            await conn.execute("INSERT INTO tr_apg VALUES ($1)", 2)
            try:
                async with conn.transaction():  # a savepoint
                    await conn.execute("INSERT INTO tr_apg VALUES ($1)", 3)
                    raise RuntimeError("undo the inner block")
            except RuntimeError:
                pass
        assert [r[0] for r in await conn.fetch("SELECT id FROM tr_apg ORDER BY id")] == [2]
        await conn.close()

    asyncio.run(run())


def test_disconnect_inside_a_block_rolls_back(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE tr_gone (id INT)")
    c = psycopg.connect(server.dsn)
    c.execute("INSERT INTO tr_gone VALUES (1)")
    c.execute("CREATE TABLE tr_gone_new (id INT)")
    c.close()  # no COMMIT
    assert rows(server, "SELECT count(*) FROM tr_gone") == [(0,)]
    with psycopg.connect(server.dsn, autocommit=True) as other:
        assert sqlstate(other, "SELECT * FROM tr_gone_new") == "42P01"


def test_psql_error_in_a_block_rolls_back_and_on_error_rollback_keeps_the_rest(server):
    execute(server, "CREATE TABLE tr_psql (id INT)")
    psql = ["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester", "lakegres"]
    script = "BEGIN;\nINSERT INTO tr_psql VALUES (1);\nSELECT 1/0;\nCOMMIT;\n"
    done = subprocess.run(psql, input=script, capture_output=True, text=True)
    assert "ROLLBACK" in done.stdout, done.stdout
    assert rows(server, "SELECT count(*) FROM tr_psql") == [(0,)]
    # psql's ON_ERROR_ROLLBACK: a savepoint around each statement.
    script = ("\\set ON_ERROR_ROLLBACK on\nBEGIN;\nINSERT INTO tr_psql VALUES (1);\n"
              "SELECT 1/0;\nINSERT INTO tr_psql VALUES (2);\nCOMMIT;\n")
    done = subprocess.run(psql, input=script, capture_output=True, text=True)
    assert "COMMIT" in done.stdout, done.stdout + done.stderr
    assert rows(server, "SELECT id FROM tr_psql ORDER BY id") == [(1,), (2,)]


def test_ddl_a_block_cannot_take_part_in_is_refused(server):
    execute(server, "CREATE TABLE tr_refused (id INT)")
    with psycopg.connect(server.dsn) as c:
        c.execute("INSERT INTO tr_refused VALUES (1)")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            c.execute("OPTIMIZE tr_refused")
        assert "MULTI_STATEMENT_TRANSACTION_NOT_SUPPORTED" in str(e.value)
        c.rollback()
    assert rows(server, "SELECT count(*) FROM tr_refused") == [(0,)]


def test_grants_a_rolled_back_block_changed_go_back(tmp_path):
    with server_on(tmp_path, "grants") as port:
        with connect(port, "admin") as admin:
            admin.execute("CREATE TABLE tr_owned (id INT)")
            admin.execute("GRANT SELECT ON TABLE tr_owned TO reader")
            admin.execute("GRANT CREATE ON SCHEMA default TO maker")
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=maker") as maker:
            maker.execute("CREATE TABLE tr_made (id INT)")
            maker.execute("INSERT INTO tr_made VALUES (1)")  # the creator owns it in the block
            maker.rollback()
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=admin") as admin:
            admin.execute("ALTER TABLE tr_owned RENAME TO tr_renamed")
            admin.execute("DROP TABLE tr_renamed")
            admin.rollback()
        with connect(port, "admin") as admin:
            grants = admin.execute("SHOW GRANTS ON TABLE tr_owned").fetchall()
            assert any("reader" in str(g) for g in grants), grants
            made = admin.execute("SHOW GRANTS").fetchall()
            assert not any("tr_made" in str(g) for g in made), made
        with connect(port, "reader") as reader:
            assert reader.execute("SELECT count(*) FROM tr_owned").fetchone() == (0,)


def transfers_with_a_concurrent_reader(dsn_a, dsn_b, suffix):
    """Two servers on one warehouse: each moves money between two accounts
    in blocks (two UPDATEs of `accounts` and an INSERT into `transfers`: two
    tables), retrying on 40001, while a reader on the second server checks
    in one statement that the total never changes and that the money moved
    always matches the transfers recorded. At the end every committed
    transfer is there once."""
    import threading

    accounts, ledger = f"tr_accounts_{suffix}", f"tr_transfers_{suffix}"
    with psycopg.connect(dsn_a, autocommit=True) as c:
        c.execute(f"CREATE TABLE {accounts} (id INT, balance INT)")
        c.execute(f"INSERT INTO {accounts} VALUES (1, 1000), (2, 1000)")
        c.execute(f"CREATE TABLE {ledger} (n INT)")
    committed, totals, errors = [], [], []
    done = threading.Event()

    def transfer(dsn, first):
        try:
            with psycopg.connect(dsn) as c:
                for n in range(first, first + 6):
                    while True:
                        try:
                            c.execute(f"UPDATE {accounts} SET balance = balance - 10 WHERE id = 1")
                            c.execute(f"UPDATE {accounts} SET balance = balance + 10 WHERE id = 2")
                            c.execute(f"INSERT INTO {ledger} VALUES ({n})")
                            c.commit()
                            committed.append(n)
                            break
                        except psycopg.errors.SerializationFailure:
                            c.rollback()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def read(dsn):
        # One statement reads both tables: the money moved must match the
        # transfers recorded, at every moment.
        query = (f"SELECT (SELECT sum(balance) FROM {accounts}), "
                 f"(SELECT balance FROM {accounts} WHERE id = 2) - 1000 - 10 * (SELECT count(*) FROM {ledger})")
        with psycopg.connect(dsn, autocommit=True) as c:
            while not done.is_set():
                totals.append(tuple(c.execute(query).fetchone()))

    writers = [threading.Thread(target=transfer, args=(dsn_a, 100)),
               threading.Thread(target=transfer, args=(dsn_b, 200))]
    reader = threading.Thread(target=read, args=(dsn_b,))
    reader.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=300)
    done.set()
    reader.join(timeout=60)
    assert not errors, errors
    assert len(committed) == 12
    assert totals and set(totals) == {(2000, 0)}, set(totals)
    with psycopg.connect(dsn_b, autocommit=True) as c:
        assert c.execute(f"SELECT balance FROM {accounts} ORDER BY id").fetchall() == [(880,), (1120,)]
        assert sorted(r[0] for r in c.execute(f"SELECT n FROM {ledger}").fetchall()) == sorted(committed)


def test_transfers_between_two_servers_with_a_reader_local(tmp_path):
    from conftest import Server
    first = Server(tmp_path / "wh")
    second = Server(tmp_path / "wh")
    try:
        transfers_with_a_concurrent_reader(first.dsn, second.dsn, "local")
    finally:
        first.stop()
        second.stop()


def test_transfers_between_two_servers_with_a_reader_s3(moto, tmp_path):
    from test_security import start
    procs = [start(moto.config(tmp_path, name)) for name in ("tx_one", "tx_two")]
    try:
        ports = [port for _, port, _ in procs]
        assert all(ports), [log for _, _, log in procs]
        dsn = [f"host=127.0.0.1 port={p} user=tester dbname=lakegres" for p in ports]
        transfers_with_a_concurrent_reader(dsn[0], dsn[1], "s3")
    finally:
        for proc, _, _ in procs:
            proc.terminate()
            proc.wait(timeout=30)
