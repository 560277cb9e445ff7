"""Logins and TLS (issue #7): SCRAM-SHA-256 and password logins against
verifiers written by `lakegres user add`, wrong and unknown users refused
with 28P01, TLS with verify-full, plaintext refused when TLS is required,
and start-up refusing what would be unsafe."""

import contextlib
import datetime
import ipaddress
import os
import re
import subprocess
import threading
import time

import psycopg
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import server_binary

PASSWORD = "correct horse"


def self_signed(folder):
    """A certificate for localhost and 127.0.0.1, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def auth_config(folder, name, method, users, tls=""):
    """A configuration file for a server on a free loopback port."""
    config = folder / name
    config.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{folder / (name + ".warehouse")}"\n'
                      f'[auth]\nmethod = "{method}"\nusers_file = "{users}"\n{tls}')
    return config


@contextlib.contextmanager
def trusted_server(folder, settings=""):
    """A server with trust logins and extra settings; yields its dsn."""
    config = folder / "server.toml"
    config.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{folder / "w"}"\n{settings}')
    proc, port, log = start(config)
    try:
        assert port, "".join(log)
        yield f"host=127.0.0.1 port={port} dbname=lakegres user=tester"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def in_background(conn, sql):
    """Runs `sql` on `conn` in a thread; the dict gets "ok" or the SQLSTATE."""
    outcome = {}

    def run():
        try:
            conn.execute(sql)
            outcome["sql"] = "ok"
        except psycopg.Error as e:
            outcome["sql"] = e.sqlstate

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def start(config, extra=()):
    proc = subprocess.Popen([server_binary(), "--config", str(config), *extra], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "RUST_LOG": "warn,lakegres=info", "NO_COLOR": "1"})
    log = []
    port = None
    for line in proc.stderr:
        log.append(line)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+),", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        proc.wait(timeout=30)
        return proc, None, log
    threading.Thread(target=lambda: [log.append(line) for line in proc.stderr], daemon=True).start()
    return proc, port, log


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    folder = tmp_path_factory.mktemp("secure")
    users = folder / "users.toml"
    for name in ["alice", "bob"]:
        subprocess.run([server_binary(), "--users-file", str(users), "user", "add", name],
                       input=f"{PASSWORD}\n", text=True, check=True, capture_output=True)
    cert, key = self_signed(folder)
    config = auth_config(folder, "scram.toml", "scram-sha-256", users,
                         tls=f'[tls]\ncert = "{cert}"\nkey = "{key}"\nrequired = true\n')
    proc, port, log = start(config)
    assert port, "".join(log)
    yield {"port": port, "cert": cert, "key": key, "users": users, "folder": folder, "log": log}
    proc.terminate()
    proc.wait(timeout=30)


def dsn(secure, user="alice", password=PASSWORD, sslmode="verify-full"):
    return (f"host=localhost port={secure['port']} dbname=lakegres user={user} password='{password}' "
            f"sslmode={sslmode} sslrootcert={secure['cert']}")


def test_the_users_file_holds_verifiers_not_passwords(secure):
    text = secure["users"].read_text()
    assert PASSWORD not in text
    assert re.search(r'alice = "SCRAM-SHA-256\$4096:[^$]+\$[^:]+:[^"]+"', text), text


def test_scram_login_over_verified_tls(secure):
    with psycopg.connect(dsn(secure)) as conn:
        assert conn.info.pgconn.ssl_in_use
        assert conn.execute("SELECT 40 + 2").fetchone() == (42,)
    out = subprocess.run(["psql", "-X", "-A", "-t", "-d", dsn(secure, user="bob"), "-c", "SELECT 'psql ok'"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "psql ok", out.stderr


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", PASSWORD)])
def test_wrong_passwords_and_unknown_users_get_28P01(secure, user, password):
    with pytest.raises(psycopg.OperationalError) as failed:
        psycopg.connect(dsn(secure, user=user, password=password))
    assert f'password authentication failed for user "{user}"' in str(failed.value)
    # The log is read by a thread; give it a moment to see the line.
    deadline = time.monotonic() + 10
    while not any("login failed" in line and user in line for line in secure["log"]):
        assert time.monotonic() < deadline, "no 'login failed' line in the log"
        time.sleep(0.05)


def test_plaintext_is_refused_when_tls_is_required(secure):
    with pytest.raises(psycopg.OperationalError) as failed:
        psycopg.connect(dsn(secure, sslmode="disable"))
    assert "accepts only TLS connections" in str(failed.value)


def test_password_method(secure, tmp_path):
    proc, port, log = start(auth_config(tmp_path, "password.toml", "password", secure["users"]))
    try:
        assert port, "".join(log)
        base = f"host=127.0.0.1 port={port} dbname=lakegres user=alice sslmode=disable"
        with psycopg.connect(f"{base} password='{PASSWORD}'") as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(f"{base} password=nope")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_unsafe_configurations_stop_startup(secure, tmp_path):
    # Trust on an address other than loopback.
    trust = tmp_path / "trust.toml"
    trust.write_text(f'listen = "0.0.0.0:0"\nwarehouse = "{tmp_path / "w1"}"\n[auth]\nmethod = "trust"\n')
    proc, port, log = start(trust)
    assert port is None and proc.returncode != 0
    assert "allowed only on a loopback listen address" in "".join(log)
    # An unreadable certificate: no silent fall-back to plaintext.
    broken = tmp_path / "broken.toml"
    broken.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{tmp_path / "w2"}"\n'
                      f'[tls]\ncert = "{tmp_path / "missing.pem"}"\nkey = "{secure["key"]}"\n')
    proc, port, log = start(broken)
    assert port is None and proc.returncode != 0
    assert "reading the certificate" in "".join(log)


JAR = "/usr/share/java/postgresql.jar"


@pytest.mark.skipif(not os.path.exists(JAR), reason="tests/run installs java and pgjdbc")
def test_pgjdbc_over_tls_with_scram(secure):
    test = os.path.join(os.path.dirname(__file__), "..", "java", "JdbcTlsTest.java")
    out = subprocess.run(["java", "-cp", JAR, test, str(secure["port"]), str(secure["cert"]), "alice", PASSWORD],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and "all ok" in out.stdout, out.stdout + out.stderr


def test_connections_past_max_connections_get_53300(tmp_path):
    with trusted_server(tmp_path, "max_connections = 2\n") as base:
        first, second = psycopg.connect(base), psycopg.connect(base)
        with pytest.raises(psycopg.OperationalError, match="too many clients already"):
            psycopg.connect(base)
        # The sessions already in keep working; a closed one frees a place.
        assert first.execute("SELECT 1").fetchone() == (1,)
        second.close()
        for _ in range(50):
            try:
                third = psycopg.connect(base)
                break
            except psycopg.OperationalError:
                time.sleep(0.1)
        assert third.execute("SELECT 2").fetchone() == (2,)
        first.close()
        third.close()


def test_sockets_that_never_log_in_lock_no_one_out(tmp_path):
    """110 sockets that connect and send nothing (issue #57): past 32 the
    server closes them at once, those it keeps hold no connection's slot,
    and it closes each after 10 s without a login. Logged-in users get in
    and are answered throughout."""
    import socket
    with trusted_server(tmp_path, "max_connections = 5\n") as base:
        port = int(base.split("port=")[1].split()[0])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(110)]
        started = time.monotonic()
        users = [psycopg.connect(base, connect_timeout=5) for _ in range(5)]
        assert time.monotonic() - started < 3
        assert all(u.execute("SELECT 1").fetchone() == (1,) for u in users)
        with pytest.raises(psycopg.OperationalError, match="too many clients already"):
            psycopg.connect(base)
        # Past the limit of sockets logging in, the server closed them.
        closed = 0
        for s in idle:
            s.settimeout(0.05)
            try:
                closed += s.recv(1) == b""
            except (socket.timeout, ConnectionResetError):
                pass
        assert closed >= 110 - 32, closed
        # The rest are closed within the login timeout.
        time.sleep(11)
        for s in idle:
            s.settimeout(2)
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
            s.close()
        for u in users:
            u.close()


def test_messages_past_max_message_size_end_the_connection_with_54000(tmp_path):
    import socket
    import struct
    with trusted_server(tmp_path, "max_message_size = 1048576\n") as base:
        other = psycopg.connect(base, autocommit=True)
        greedy = psycopg.connect(base, autocommit=True)
        small = "x" * 500_000
        assert greedy.execute(f"SELECT length('{small}')").fetchone() == (500_000,)
        with pytest.raises(psycopg.OperationalError) as refused:
            greedy.execute(f"SELECT length('{'x' * 2_000_000}')")
        assert refused.value.sqlstate == "54000"
        assert "max_message_size" in str(refused.value)
        assert greedy.closed or greedy.broken
        # A bound parameter counts too (extended protocol).
        binder = psycopg.connect(base, autocommit=True)
        with pytest.raises(psycopg.OperationalError) as refused:
            binder.execute("SELECT length(%s)", ["y" * 2_000_000])
        assert refused.value.sqlstate == "54000"
        # Refused on its length alone, before the body is sent: a startup
        # packet that claims 1 GiB gets its answer at once.
        port = int(base.split("port=")[1].split()[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(struct.pack("!II", 1 << 30, 196608))
            reply = raw.recv(1000)
            assert reply[:1] == b"E" and b"54000" in reply
        assert other.execute("SELECT 1").fetchone() == (1,)
        other.close()


def test_metrics_and_health_count_what_happened(tmp_path):
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        http_port = s.getsockname()[1]
    config = tmp_path / "metrics.toml"
    config.write_text(f'listen = "127.0.0.1:0"\nwarehouse = "{tmp_path / "w"}"\n'
                      f'http_listen = "127.0.0.1:{http_port}"\n')
    proc, port, log = start(config)
    try:
        assert port, "".join(log)

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}{path}", timeout=10) as r:
                return r.status, r.read().decode()

        def value(text, name):
            m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
            return float(m.group(1)) if m else 0.0

        assert get("/health") == (200, "ok\n")
        _, before = get("/metrics")
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=tester", autocommit=True) as conn:
            conn.execute("CREATE TABLE m (a INT)")
            conn.execute("INSERT INTO m VALUES (1), (2)")
            with pytest.raises(psycopg.Error):
                conn.execute("SELECT * FROM no_such_table")
            # A key lookup is answered without planning; a range is planned.
            assert conn.execute("SELECT a FROM m WHERE a = 2").fetchall() == [(2,)]
            assert conn.execute("SELECT a FROM m WHERE a > 1").fetchall() == [(2,)]
            _, during = get("/metrics")
            assert value(during, "lakegres_connections_open") == 1
        insert_ok = 'lakegres_statements_total{kind="insert",outcome="ok"}'
        select_error = 'lakegres_statements_total{kind="select",outcome="error"}'
        assert value(during, insert_ok) == value(before, insert_ok) + 1
        assert value(during, select_error) == value(before, select_error) + 1
        assert value(during, "lakegres_commits_total") == value(before, "lakegres_commits_total") + 2
        lookups = "lakegres_point_lookups_total"
        assert value(during, lookups) == value(before, lookups) + 1
        # The INSERT's commit added one data file; CREATE TABLE added none.
        files = value(during, "lakegres_files_written_total") - value(before, "lakegres_files_written_total")
        written = value(during, "lakegres_bytes_written_total") - value(before, "lakegres_bytes_written_total")
        assert files == 1 and written > 0
        # One audit line per write: user, kind, table, the version it made.
        deadline = time.monotonic() + 10
        audit = []
        while len(audit) < 2:
            assert time.monotonic() < deadline, "".join(log)
            audit = [line for line in log if "lakegres::audit" in line]
            time.sleep(0.05)
        assert 'user="tester"' in audit[0] and 'kind="CREATE TABLE"' in audit[0] and "version=0" in audit[0]
        assert ('user="tester"' in audit[1] and 'kind="INSERT"' in audit[1] and "table=default.m" in audit[1]
                and "version=1" in audit[1] and "files_added=1" in audit[1])
        # A block: its statements log no version; its COMMIT logs the one
        # version it made, naming the block's statements (issue #59).
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=lakegres user=tester") as conn:
            conn.execute("INSERT INTO m VALUES (3)")
            conn.execute("DELETE FROM m WHERE a = 1")
            conn.commit()
        _, after = get("/metrics")
        assert value(after, "lakegres_commits_total") == value(during, "lakegres_commits_total") + 1
        deadline = time.monotonic() + 10
        while not [line for line in log if 'kind="COMMIT"' in line]:
            assert time.monotonic() < deadline, "".join(log)
            time.sleep(0.05)
        audit = [line for line in log if "lakegres::audit" in line]
        assert 'kind="INSERT"' in audit[2] and "version=" not in audit[2], audit[2]
        assert 'kind="DELETE"' in audit[3] and "version=" not in audit[3], audit[3]
        assert ('kind="COMMIT"' in audit[4] and "table=default.m" in audit[4] and "version=2" in audit[4]
                and 'statements="WRITE, DELETE"' in audit[4]), audit[4]
        assert value(during, "lakegres_statement_seconds_count") >= 3
        assert "lakegres_memory_pool_bytes" in during
        # The lookup decoded table m into the lookup cache.
        assert value(before, "lakegres_lookup_cache_bytes") == 0
        assert value(during, "lakegres_lookup_cache_bytes") > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_query_past_the_memory_pool_fails_with_53200_and_others_carry_on(tmp_path):
    with trusted_server(tmp_path, "[sql]\nmemory_limit = 50000000\n") as base:
        hungry = psycopg.connect(base, autocommit=True)
        # One group of 20M values: nothing to spill, more than the pool.
        thread, outcome = in_background(
            hungry, "SELECT cardinality(array_agg(value)) FROM generate_series(1, 20000000)")
        with psycopg.connect(base, autocommit=True) as other:
            for _ in range(20):
                assert other.execute("SELECT sum(value) FROM generate_series(1, 1000)").fetchone() == (500500,)
        thread.join(timeout=120)
        assert outcome["sql"] == "53200"
        hungry.close()
        with psycopg.connect(base) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_pg_cancel_backend_and_pg_terminate_backend(tmp_path):
    with trusted_server(tmp_path) as base:
        admin = psycopg.connect(base, autocommit=True)
        victim = psycopg.connect(base, autocommit=True)
        pid = victim.info.backend_pid
        # The pid clients see is the one pg_stat_activity lists.
        assert admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() == (1,)
        thread, outcome = in_background(victim, "SELECT count(*) FROM generate_series(1, 2000000000)")
        # Cancel once the statement runs (a loaded machine may take a while).
        for _ in range(100):
            state = admin.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
            if state == ("active",):
                break
            time.sleep(0.1)
        time.sleep(0.2)
        assert admin.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchone() == (True,)
        thread.join(timeout=60)
        assert outcome["sql"] == "57014"
        assert victim.execute("SELECT 1").fetchone() == (1,)
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
        with pytest.raises(psycopg.OperationalError):
            for _ in range(50):
                victim.execute("SELECT 1")
                time.sleep(0.1)
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (False,)
        assert admin.execute("SELECT 2").fetchone() == (2,)
        admin.close()


def test_idle_session_timeouts_close_idle_connections(server):
    """idle_session_timeout ends a connection idle outside a transaction,
    idle_in_transaction_session_timeout one idle inside a block; others are
    untouched."""
    dsn = f"host=127.0.0.1 port={server.port} dbname=lakegres user=tester"
    idle = psycopg.connect(dsn, autocommit=True)
    idle.execute("SET idle_session_timeout = '1s'")
    # A client that keeps sending statements is never idle for long.
    busy = psycopg.connect(dsn, autocommit=True)
    busy.execute("SET idle_session_timeout = '1s'")
    for _ in range(8):
        assert busy.execute("SELECT 1").fetchone() == (1,)
        time.sleep(0.3)
    in_block = psycopg.connect(dsn)
    in_block.execute("SET idle_in_transaction_session_timeout = 1000")
    in_block.commit()
    in_block.execute("SELECT 1")  # opens a block (autocommit off)
    untouched = psycopg.connect(dsn, autocommit=True)
    time.sleep(1.5)
    for closed in (idle, in_block):
        with pytest.raises(psycopg.OperationalError):
            closed.execute("SELECT 1")
    assert untouched.execute("SELECT 1").fetchone() == (1,)
    for conn in (idle, busy, in_block, untouched):
        conn.close()


def test_closed_connections_give_their_memory_back(server):
    """Each connection's session used to stay in memory after it closed
    (a reference cycle through pg_catalog): ~5.5 KiB per connection, found
    by fuzz/wire. 300 connections (1.6 MiB then) must now leave well under
    768 KiB."""
    import socket

    def rss_kib():
        with open(f"/proc/{server.proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

    def connect_and_close(n):
        for _ in range(n):
            socket.create_connection(("127.0.0.1", server.port)).close()

    connect_and_close(50)  # warm up allocator pools
    time.sleep(1)
    before = rss_kib()
    connect_and_close(300)
    time.sleep(2)
    assert rss_kib() - before < 768
