// node-postgres: parameters (extended protocol), types, and a pool.
import { test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startServer } from "./server.mjs";

test("queries with parameters and a pool", async () => {
  const server = await startServer();
  const pool = new pg.Pool({ ...server.config, max: 3 });
  try {
    await pool.query("CREATE TABLE np (id INT, name STRING, amount DOUBLE, day DATE)");
    for (let i = 1; i <= 3; i++) {
      await pool.query("INSERT INTO np VALUES ($1, $2, $3, $4)", [i, `n${i}`, i / 2, "2026-01-0" + i]);
    }
    const { rows, fields } = await pool.query("SELECT id, name, amount FROM np WHERE id >= $1 ORDER BY id", [2]);
    assert.deepEqual(rows, [
      { id: 2, name: "n2", amount: 1 },
      { id: 3, name: "n3", amount: 1.5 },
    ]);
    assert.deepEqual(fields.map((f) => f.name), ["id", "name", "amount"]);
    // Several clients at once from the pool.
    const counts = await Promise.all(
      [1, 2, 3, 4, 5].map(() => pool.query("SELECT count(*) AS n FROM np")),
    );
    assert.deepEqual(counts.map((r) => Number(r.rows[0].n)), [3, 3, 3, 3, 3]);
  } finally {
    await pool.end();
    server.stop();
  }
});

test("a NULL parameter in a write's condition selects nothing", async () => {
  // node-postgres sends every parameter as text of no type (oid 0): the
  // server types it from the statement; null is an untyped NULL (issue #56).
  const server = await startServer();
  const client = new pg.Client(server.config);
  await client.connect();
  try {
    await client.query("CREATE TABLE np_null (id INT, region STRING)");
    await client.query("INSERT INTO np_null VALUES (1, 'eu'), (2, 'us'), (3, NULL)");
    const del = await client.query("DELETE FROM np_null WHERE region = $1", [null]);
    assert.equal(del.rowCount, 0);
    const merge = await client.query(
      "MERGE INTO np_null t USING (SELECT $1::INT AS id) s ON t.id = s.id AND t.region = $2 " +
        "WHEN MATCHED THEN DELETE",
      [1, null],
    );
    assert.equal(merge.rowCount, 0);
    const upd = await client.query("UPDATE np_null SET region = $1 WHERE id = $2", ["xx", 2]);
    assert.equal(upd.rowCount, 1);
    const { rows } = await client.query("SELECT id, region FROM np_null ORDER BY id");
    assert.deepEqual(rows, [
      { id: 1, region: "eu" },
      { id: 2, region: "xx" },
      { id: 3, region: null },
    ]);
  } finally {
    await client.end();
    server.stop();
  }
});

test("a transaction block: ROLLBACK undoes it, COMMIT applies it, others see it only then", async () => {
  const server = await startServer();
  const client = new pg.Client(server.config);
  const other = new pg.Client(server.config);
  await client.connect();
  await other.connect();
  try {
    await client.query("CREATE TABLE np_tx (id INT)");
    await client.query("BEGIN");
    await client.query("INSERT INTO np_tx VALUES ($1)", [1]);
    assert.equal(Number((await client.query("SELECT count(*) AS n FROM np_tx")).rows[0].n), 1);
    assert.equal(Number((await other.query("SELECT count(*) AS n FROM np_tx")).rows[0].n), 0);
    await client.query("ROLLBACK");
    assert.equal(Number((await client.query("SELECT count(*) AS n FROM np_tx")).rows[0].n), 0);
    await client.query("BEGIN");
    await client.query("INSERT INTO np_tx VALUES ($1)", [2]);
    await client.query("COMMIT");
    assert.deepEqual((await other.query("SELECT id FROM np_tx")).rows, [{ id: 2 }]);
  } finally {
    await client.end();
    await other.end();
    server.stop();
  }
});

test("backslashes, quotes and unicode go in and out unchanged (issue #60)", async () => {
  // The server reads literals with Databricks' escapes and says
  // standard_conforming_strings = off; bound parameters and the driver's
  // own escapeLiteral both keep values as they are.
  const server = await startServer();
  const client = new pg.Client(server.config);
  await client.connect();
  try {
    const values = ["a\\b", "\\d+", "it's", "it\\'s", 'say "hi"', "tab\there", "é😀", "100%", "\\"];
    await client.query("CREATE TABLE np_esc (n INT, v STRING)");
    for (const [n, v] of values.entries()) {
      await client.query("INSERT INTO np_esc VALUES ($1, $2)", [n, v]);
      const quoted = await client.query(`SELECT ${client.escapeLiteral(v)} AS v`);
      assert.equal(quoted.rows[0].v, v);
    }
    const { rows } = await client.query("SELECT v FROM np_esc ORDER BY n");
    assert.deepEqual(rows.map((r) => r.v), values);
    const re = await client.query("SELECT regexp_extract('order 1234', '(\\\\d+)', 1) AS d");
    assert.equal(re.rows[0].d, "1234");
  } finally {
    await client.end();
    server.stop();
  }
});
