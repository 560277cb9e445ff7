// A real Lakegres server for the node tests: the built binary on a free
// loopback port with a temporary warehouse, ready when it logs its address.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

export async function startServer() {
  const target = process.env.CARGO_TARGET_DIR ?? path.join(root, "target");
  const binary = process.env.LAKEGRES_BIN ?? path.join(target, "debug", "lakegres");
  const dir = mkdtempSync(path.join(tmpdir(), "lakegres-node-"));
  const proc = spawn(binary, ["--listen", "127.0.0.1:0", "--warehouse", path.join(dir, "warehouse")], {
    env: { ...process.env, RUST_LOG: "warn,lakegres=info", NO_COLOR: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const port = await new Promise((resolve, reject) => {
    let buffered = "";
    proc.stderr.on("data", (chunk) => {
      buffered += chunk.toString();
      const m = buffered.match(/listening on 127\.0\.0\.1:(\d+),/);
      if (m) resolve(Number(m[1]));
    });
    proc.on("exit", (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return {
    port,
    config: { host: "127.0.0.1", port, user: "tester", database: "lakegres" },
    stop: () => proc.kill("SIGTERM"),
  };
}
