"""A real Lakegres server for the client tests: the built binary on a free
loopback port with a temporary warehouse, ready when it logs its address."""

import os
import pathlib
import re
import subprocess
import threading

import pytest

from moto_s3 import Moto

ROOT = pathlib.Path(__file__).resolve().parents[3]


def missing_tool(required_by: str, reason: str):
    """Fails when tests/run asked for the tool (`required_by` is set in the
    environment), else skips."""
    if os.environ.get(required_by):
        pytest.fail(reason)
    pytest.skip(reason)


def server_binary() -> str:
    if os.environ.get("LAKEGRES_BIN"):
        return os.environ["LAKEGRES_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(pathlib.Path(target) / "debug" / "lakegres")


class Server:
    def __init__(self, warehouse: pathlib.Path, *flags: str):
        self.warehouse = warehouse
        self.proc = subprocess.Popen(
            [server_binary(), "--listen", "127.0.0.1:0", "--warehouse", str(warehouse), *flags],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "warn,lakegres=info", "NO_COLOR": "1"},
            text=True,
        )
        self.port = None
        for line in self.proc.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+),", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            raise RuntimeError("the server did not start")
        # Keep draining the log so the server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=tester dbname=lakegres"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("lakegres") / "warehouse")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def moto():
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    m = Moto("lake")
    yield m
    m.stop()
