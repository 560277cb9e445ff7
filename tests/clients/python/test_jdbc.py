"""pgjdbc (Debian's libpostgresql-jdbc-java) through tests/clients/java/JdbcTest.java,
run with `java` against the test server."""

import pathlib
import shutil
import subprocess

import pytest

JAR = pathlib.Path("/usr/share/java/postgresql.jar")
TEST = pathlib.Path(__file__).resolve().parents[1] / "java" / "JdbcTest.java"


@pytest.mark.skipif(shutil.which("java") is None or not JAR.exists(), reason="tests/run installs java and pgjdbc")
def test_pgjdbc(server):
    out = subprocess.run(["java", "-cp", str(JAR), str(TEST), str(server.port)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("all ok"), out.stdout
