"""Shared pieces of the benchmarks: a release Lakegres server and a
PostgreSQL 15 server on spare loopback ports, each in a temporary folder,
and a timer. Standard library only, but for `MeteredLakegres` (psycopg)."""

import os
import pathlib
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pgbench(port, user, db, path, clients, seconds, mode="simple"):
    """Runs pgbench's script `path` with `clients` clients for `seconds`;
    returns (tps, transactions processed)."""
    out = subprocess.run(
        ["pgbench", "-n", "-M", mode, "-f", path, "-c", str(clients), "-j", str(min(clients, 4)),
         "-T", str(seconds), "-h", "127.0.0.1", "-p", str(port), "-U", user, db],
        check=True, capture_output=True, text=True,
    ).stdout
    tps = re.search(r"tps = ([0-9.]+)", out)
    done = re.search(r"number of transactions actually processed: (\d+)", out)
    if not tps or not done:
        raise RuntimeError(out)
    return float(tps.group(1)), int(done.group(1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn, repeat=3):
    """Best of `repeat` wall-clock runs, in seconds."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def psql(port, sql, out=subprocess.DEVNULL, user="postgres", db="postgres"):
    subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port),
         "-U", user, "-d", db, "-c", sql],
        check=True, stdout=out,
    )


class Lakegres:
    def __init__(self, warehouse=None, args=(), prefix=()):
        """A release server on a free port, on `warehouse` (another server's,
        which then stays when this one stops, or a URL) or a new one; `args`
        are further flags, `prefix` a command it runs under (`taskset -c 0`).
        `LAKEGRES_BIN` names another binary (no build)."""
        binary = os.environ.get("LAKEGRES_BIN")
        if not binary:
            target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
            subprocess.run(["cargo", "build", "--release", "-p", "lakegres"], cwd=ROOT, check=True)
            binary = str(pathlib.Path(target) / "release" / "lakegres")
        self.dir = tempfile.mkdtemp(prefix="lakegres-bench-")
        self.proc = subprocess.Popen(
            [*prefix, binary, "--listen", "127.0.0.1:0",
             "--warehouse", warehouse or os.path.join(self.dir, "warehouse"), *args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
            env={**os.environ, "RUST_LOG": "warn,lakegres=info", "NO_COLOR": "1"},
        )
        self.port = None
        for line in self.proc.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+),", line)
            if m:
                self.port = int(m.group(1))
                break
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    @classmethod
    def worker(cls, token_file, warehouse, prefix=()):
        """A `lakegres worker` on a free port, with `warehouse`'s settings
        and the cluster's secret in `token_file`."""
        return cls(warehouse, args=["--cluster-token-file", str(token_file),
                                    "worker", "--listen", "127.0.0.1:0"], prefix=prefix)

    def psql(self, sql, out=subprocess.DEVNULL):
        psql(self.port, sql, out=out, user="bench", db="lakegres")

    def peak_memory_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


REQUEST_KINDS = ["get", "head", "put", "list", "delete"]


class MeteredLakegres:
    """A release Lakegres with /metrics on a spare port, its object-store
    request counters, and a psycopg connection (autocommit)."""

    def __init__(self, warehouse=None, args=()):
        import psycopg

        self.http = free_port()
        self.lg = Lakegres(warehouse, args=["--http-listen", f"127.0.0.1:{self.http}", *args])
        self.conn = psycopg.connect(f"host=127.0.0.1 port={self.lg.port} dbname=lakegres user=bench",
                                    autocommit=True)

    def requests(self):
        """Object-store requests so far, by kind
        (`lakegres_object_store_requests_total`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/metrics", timeout=10) as r:
            text = r.read().decode()
        found = dict(re.findall(r'^lakegres_object_store_requests_total\{op="(\w+)"\} (\d+)$', text, re.M))
        return {k: int(found.get(k, 0)) for k in REQUEST_KINDS}

    def stop(self):
        self.conn.close()
        self.lg.stop()


class Postgres:
    """PostgreSQL 15 from Debian's packages (installed if missing), run as
    the `postgres` user on a spare port."""

    BIN = pathlib.Path("/usr/lib/postgresql/15/bin")

    def __init__(self):
        if not (self.BIN / "initdb").exists():
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql-15"], check=True)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="pg-bench-")
        os.chmod(self.dir, 0o777)
        self.data = os.path.join(self.dir, "data")
        user = pwd.getpwnam("postgres")
        as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(as_pg + [str(self.BIN / "initdb"), "-D", self.data, "-A", "trust", "-U", "postgres"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(
            as_pg + [str(self.BIN / "pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w",
                     "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                           "-c shared_buffers=2GB -c work_mem=256MB -c max_wal_size=8GB",
                     "start"],
            check=True, stdout=subprocess.DEVNULL,
        )
        self.as_pg = as_pg
        del user

    def psql(self, sql, out=subprocess.DEVNULL):
        psql(self.port, sql, out=out)

    def stop(self):
        subprocess.run(self.as_pg + [str(self.BIN / "pg_ctl"), "-D", self.data, "-m", "fast", "stop"],
                       check=False, stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
