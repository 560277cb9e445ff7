"""ALTER TABLE, CHECK constraints, NOT NULL and generated columns leave
plain Delta tables: the `deltalake` package reads the new schema, the
constraint property and the rows, and refuses (as Delta requires) to write
a row that breaks the constraint. COPY FROM STDIN is held to the same
checks, committing nothing when a row breaks them."""

import deltalake
import psycopg
import pyarrow
import pytest


def version(conn, table):
    return conn.execute(f"DESCRIBE HISTORY {table} LIMIT 1").fetchone()[0]


def test_alter_and_constraints_read_by_deltalake(server):
    path = server.warehouse / "default" / "al_orders"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE al_orders (id INT NOT NULL, qty INT,"
            " total INT GENERATED ALWAYS AS (qty * 10)) USING DELTA"
        )
        conn.execute("INSERT INTO al_orders (id, qty) VALUES (1, 2), (2, 3)")
        conn.execute("ALTER TABLE al_orders ADD COLUMNS (note STRING COMMENT 'free text')")
        conn.execute("ALTER TABLE al_orders ADD CONSTRAINT qty_pos CHECK (qty > 0)")
        conn.execute("INSERT INTO al_orders (id, qty, note) VALUES (3, 4, 'x')")

        create = conn.execute("SHOW CREATE TABLE al_orders").fetchone()[0]
        assert "  id INT NOT NULL,\n" in create
        assert "  total INT GENERATED ALWAYS AS (qty * 10),\n" in create
        assert "  note STRING COMMENT 'free text')\n" in create
        assert "'delta.constraints.qty_pos' = 'qty > 0'" in create

        dt = deltalake.DeltaTable(str(path))
        assert dt.version() == 4
        fields = {f.name: f for f in dt.schema().fields}
        assert list(fields) == ["id", "qty", "total", "note"]
        assert fields["id"].nullable is False
        assert fields["total"].metadata["delta.generationExpression"] == "qty * 10"
        assert fields["note"].metadata["comment"] == "free text"
        assert dt.metadata().configuration["delta.constraints.qty_pos"] == "qty > 0"
        protocol = dt.protocol()
        assert protocol.min_writer_version >= 4
        t = dt.to_pyarrow_table()
        rows = sorted(zip(*(t.column(c).to_pylist() for c in ["id", "qty", "total", "note"])))
        assert rows == [(1, 2, 20, None), (2, 3, 30, None), (3, 4, 40, "x")]
        assert [h["operation"] for h in dt.history(2)] == ["WRITE", "ADD CONSTRAINT"]

        # delta-rs honours the constraint the server added.
        bad = pyarrow.table(
            {
                "id": pyarrow.array([9], pyarrow.int32()),
                "qty": pyarrow.array([-1], pyarrow.int32()),
                "total": pyarrow.array([-10], pyarrow.int32()),
                "note": pyarrow.array([None], pyarrow.string()),
            }
        )
        with pytest.raises(Exception):
            deltalake.write_deltalake(str(path), bad, mode="append")
        assert deltalake.DeltaTable(str(path)).version() == 4


@pytest.fixture(scope="module")
def copy_table(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE al_copy (id INT NOT NULL, qty INT) USING DELTA")
        conn.execute("ALTER TABLE al_copy ADD CONSTRAINT qty_pos CHECK (qty > 0)")
    return "al_copy"


@pytest.mark.parametrize(
    "rows, state, text",
    [
        ("5\t1\n6\t-1\n", "23514", "CHECK constraint qty_pos (qty > 0) violated by row with values: qty : -1"),
        ("\\N\t1\n", "23502", "NOT NULL constraint violated for column: id."),
    ],
)
def test_copy_from_stdin_checks_constraints(server, copy_table, rows, state, text):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        before = version(conn, copy_table)
        with pytest.raises(psycopg.Error) as err:
            with conn.cursor().copy(f"COPY {copy_table} (id, qty) FROM STDIN") as copy:
                copy.write(rows)
        assert err.value.sqlstate == state
        assert text in str(err.value)
        assert version(conn, copy_table) == before
        assert conn.execute(f"SELECT count(*) FROM {copy_table}").fetchone()[0] == 0
