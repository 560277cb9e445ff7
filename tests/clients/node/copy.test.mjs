// COPY FROM STDIN and TO STDOUT through node-postgres and pg-copy-streams.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { from as copyFrom, to as copyTo } from "pg-copy-streams";
import { startServer } from "./server.mjs";

test("copy in and out with node-postgres", async () => {
  const server = await startServer();
  const client = new pg.Client(server.config);
  try {
    await client.connect();
    await client.query("CREATE TABLE n (id BIGINT, name STRING)");
    const rows = [];
    for (let i = 0; i < 5000; i++) rows.push(`${i},name ${i}\n`);
    const ingest = client.query(copyFrom("COPY n FROM STDIN WITH (FORMAT csv)"));
    await pipeline(Readable.from(rows), ingest);
    assert.equal(ingest.rowCount, 5000);
    const { rows: [count] } = await client.query("SELECT count(*) AS n, max(id) AS m FROM n");
    assert.equal(Number(count.n), 5000);
    assert.equal(Number(count.m), 4999);

    const out = client.query(copyTo("COPY (SELECT id, name FROM n WHERE id < 3 ORDER BY id) TO STDOUT"));
    const chunks = [];
    for await (const chunk of out) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString(), "0\tname 0\n1\tname 1\n2\tname 2\n");

    // A bad row: an error with its line, and nothing committed.
    const bad = client.query(copyFrom("COPY n FROM STDIN WITH (FORMAT csv)"));
    await assert.rejects(pipeline(Readable.from(["1,a\n", "x,b\n"]), bad), (e) => {
      assert.equal(e.code, "22P02");
      assert.match(e.message, /line 2/);
      return true;
    });
    const { rows: [after] } = await client.query("SELECT count(*) AS n FROM n");
    assert.equal(Number(after.n), 5000);
  } finally {
    await client.end();
    server.stop();
  }
});
