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
