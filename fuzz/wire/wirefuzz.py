"""fuzz/wire: a PostgreSQL wire-protocol fuzzer for Lakegres. Standard
library only.

It starts a release Lakegres on a spare loopback port with a temporary
warehouse, then for --seconds runs --workers threads that each open
connection after connection and send one generated case: random bytes or
mutated startup packets before login, or -- after a real startup and login
-- frontend messages built from templates and mutated field by field (lying
lengths, bad counts and format codes, invalid UTF-8, unknown types, 1-byte
writes, closing mid-message, mid-COPY and mid-row-stream), and now and then
valid but hostile SQL. Beside them, canary clients keep running queries with
known answers. Every case ends with the client half-closing its side: a
server that does not close the connection within --stall seconds has
stalled on it.

Findings (a crash, a panic in the log, a stall, a canary failure) are written
as JSON cases with the bytes in hex to the findings folder; `--replay FILE`
runs one case against a fresh server and says what happened."""

import argparse
import base64
import hashlib
import hmac
import json
import os
import pathlib
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[2]
USER = "fuzz"
PASSWORD = "fuzz-pw"
DB = "lakegres"
PROTO_V3 = 196608
SSL_CODE, GSS_CODE, CANCEL_CODE = 80877103, 80877104, 80877102


# --------------------------------------------------------------- the server

def default_binary():
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(pathlib.Path(target) / "release" / "lakegres")


class Server:
    """One Lakegres process; its stderr goes to a log file that is also
    scanned for panics."""

    PANIC = re.compile(r"overflowed its stack|SIGSEGV|memory allocation of .* failed", re.I)

    def __init__(self, binary, workdir, auth, on_panic=None):
        self.binary, self.auth, self.on_panic = binary, auth, on_panic
        self.dir = tempfile.mkdtemp(prefix="lakegres-fuzz-", dir=workdir)
        self.log_path = os.path.join(self.dir, "server.log")
        self.panics = []
        args = [binary, "--listen", "127.0.0.1:0", "--warehouse", os.path.join(self.dir, "warehouse")]
        if auth != "trust":
            users = os.path.join(self.dir, "users.toml")
            subprocess.run([binary, "--users-file", users, "user", "add", USER], input=PASSWORD + "\n",
                           text=True, check=True, capture_output=True)
            args += ["--auth", auth, "--users-file", users]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     errors="replace",
                                     env={**os.environ, "RUST_LOG": "warn,lakegres=info", "NO_COLOR": "1",
                                          "RUST_BACKTRACE": "1"})
        self.port = None
        deadline = time.time() + 60
        for line in self.proc.stderr:
            self.log.write(line)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if time.time() > deadline:
                break
        self.log.flush()
        if self.port is None:
            raise RuntimeError(f"lakegres did not start; see {self.log_path}")
        self.reader = threading.Thread(target=self._read_log, daemon=True)
        self.reader.start()

    def _read_log(self):
        block = None
        for line in self.proc.stderr:
            self.log.write(line)
            self.log.flush()
            if "panicked at" in line:
                block = [line.rstrip()]
            elif block is not None:
                block.append(line.rstrip())
                if line.startswith("note:") or not line.strip() or len(block) > 40:
                    self._panic(block)
                    block = None
            elif self.PANIC.search(line):
                self._panic([line.rstrip()])
        if block:
            self._panic(block)

    def _panic(self, block):
        sig = signature(block)
        self.panics.append(sig)
        if self.on_panic:
            self.on_panic(sig, block)

    def alive(self):
        return self.proc.poll() is None

    def status(self, key):
        """A /proc/PID/status figure in KiB (VmRSS, VmHWM), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def stop(self, keep=False):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.log.close()
        if not keep:
            shutil.rmtree(os.path.join(self.dir, "warehouse"), ignore_errors=True)

    def tail(self, n=40):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.readlines()[-n:]
        except OSError:
            return []


def signature(block):
    """What a panic is, without its numbers: the message and the first frame
    outside std, core and bytes, e.g. `split_to out of bounds: N <= N in
    <pgwire::messages::extendedquery::Bind as ...Message>::decode_body`."""
    if "overflowed its stack" in block[0] or "stack overflow" in block[0]:
        return "stack overflow (process aborts)"
    text = block[1] if len(block) > 1 else block[0]
    what = re.sub(r"\d+", "N", text.strip())[:120]
    for line in block[2:]:
        m = re.match(r"\s*\d+: (.*)", line)
        if m and not re.match(r"(__rustc|core::|std::|bytes::|alloc::|rust_begin)", m.group(1)):
            return f"{what} in {m.group(1)}"
    return what


# ------------------------------------------------------- protocol encoding

def i16(v):
    return struct.pack("!h", max(-32768, min(32767, v)))


def i32(v):
    return struct.pack("!i", max(-2**31, min(2**31 - 1, v)))


def cstr(s):
    return (s.encode() if isinstance(s, str) else s) + b"\0"


def msg(t, body=b""):
    return t + i32(len(body) + 4) + body


def startup(params=None, version=PROTO_V3):
    params = params or {"user": USER, "database": DB}
    body = i32(version) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return i32(len(body) + 4) + body


def query(sql):
    return msg(b"Q", cstr(sql))


def parse(sql, name="", oids=()):
    return msg(b"P", cstr(name) + cstr(sql) + i16(len(oids)) + b"".join(i32(o) for o in oids))


def bind(params=(), portal="", stmt="", fmts=(), rfmts=()):
    body = cstr(portal) + cstr(stmt) + i16(len(fmts)) + b"".join(i16(f) for f in fmts) + i16(len(params))
    for p in params:
        body += i32(-1) if p is None else i32(len(p)) + p
    return msg(b"B", body + i16(len(rfmts)) + b"".join(i16(f) for f in rfmts))


def describe(kind=b"S", name=""):
    return msg(b"D", kind + cstr(name))


def execute(portal="", max_rows=0):
    return msg(b"E", cstr(portal) + i32(max_rows))


SYNC, FLUSH, TERMINATE, COPY_DONE = msg(b"S"), msg(b"H"), msg(b"X"), msg(b"c")


def scram_client(sock, buf):
    """SCRAM-SHA-256 exchange after an AuthenticationSASL; returns the rest of
    the received bytes."""
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=,r={nonce}"
    first = ("n,," + first_bare).encode()
    sock.sendall(msg(b"p", cstr("SCRAM-SHA-256") + i32(len(first)) + first))
    server_first, buf = expect_auth(sock, buf, 11)
    attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac("sha256", PASSWORD.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_msg = f"{first_bare},{server_first.decode()},{without_proof}".encode()
    sig = hmac.new(stored, auth_msg, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()
    sock.sendall(msg(b"p", f"{without_proof},p={proof}".encode()))
    _, buf = expect_auth(sock, buf, 12)
    return buf


def read_msg(sock, buf):
    """One backend message (type, body) and the rest of the buffer."""
    while True:
        if len(buf) >= 5:
            n = struct.unpack("!i", buf[1:5])[0]
            if n < 4 or n > 1 << 30:
                raise ProtocolError(f"bad backend length {n}")
            if len(buf) >= n + 1:
                return buf[:1], buf[5:n + 1], buf[n + 1:]
        chunk = sock.recv(65536)
        if not chunk:
            raise ProtocolError("server closed the connection")
        buf += chunk


def expect_auth(sock, buf, code):
    while True:
        t, body, buf = read_msg(sock, buf)
        if t == b"E":
            raise ProtocolError("login refused: " + error_text(body))
        if t == b"R" and struct.unpack("!i", body[:4])[0] == code:
            return body[4:], buf


def error_text(body):
    fields = dict((f[:1], f[1:].decode(errors="replace")) for f in body.split(b"\0") if f)
    return f"{fields.get(b'C', '?')} {fields.get(b'M', '')}"


class ProtocolError(Exception):
    pass


def login(sock, auth):
    """Startup and login; returns (pid, secret) from BackendKeyData."""
    sock.sendall(startup())
    buf, key = b"", (0, 0)
    while True:
        t, body, buf = read_msg(sock, buf)
        if t == b"E":
            raise ProtocolError("login refused: " + error_text(body))
        if t == b"R":
            code = struct.unpack("!i", body[:4])[0]
            if code == 10:
                buf = scram_client(sock, buf)
            elif code == 3:
                sock.sendall(msg(b"p", cstr(PASSWORD)))
        elif t == b"K":
            key = struct.unpack("!ii", body[:8])
        elif t == b"Z":
            return key


def simple_query(sock, sql, buf=b""):
    """Rows (lists of str/None) of one simple-protocol query; raises on an
    ErrorResponse."""
    sock.sendall(query(sql))
    return collect(sock, buf)


def collect(sock, buf=b""):
    rows, err = [], None
    while True:
        t, body, buf = read_msg(sock, buf)
        if t == b"D":
            n, pos, row = struct.unpack("!h", body[:2])[0], 2, []
            for _ in range(n):
                ln = struct.unpack("!i", body[pos:pos + 4])[0]
                pos += 4
                row.append(None if ln < 0 else body[pos:pos + ln].decode())
                pos += max(ln, 0)
            rows.append(row)
        elif t == b"E":
            err = error_text(body)
        elif t == b"Z":
            if err:
                raise ProtocolError(err)
            return rows


# ------------------------------------------------------------- mutation

INTS16 = [0, 1, -1, 2, 3, 255, 256, 0x7FFF, -0x8000, 1000]
INTS32 = [0, 1, -1, 2, 3, 4, 5, 8, 0x7FFFFFFF, -0x80000000, 0x40000001, 1 << 20, 65535, 23, 25, 17]
BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x28\x8c\xbc", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80"]
SQLS = [
    "SELECT 1", "SELECT $1::int", "SELECT $1, $2", "SELECT * FROM fz_t WHERE id = $1",
    "INSERT INTO fz_t VALUES ($1, $2)", "SELECT id, v FROM fz_t", "SELECT generate_series(1, 5000)",
    "BEGIN", "COMMIT", "ROLLBACK", "SHOW TABLES", "SELECT version()", "SET statement_timeout = '3s'",
    "SELECT $1::text || 'x'", "SELECT CAST($1 AS BIGINT) + 1", "SELECT * FROM pg_catalog.pg_type LIMIT 3",
    "COPY fz_t FROM STDIN", "COPY fz_t TO STDOUT", "COPY (SELECT generate_series(1, 3)) TO STDOUT",
    "SELECT 1; SELECT 2", "", ";", "SELECT 'a\0b'", "VALUES (1), (2)", "SELECT $3", "SELECT now()",
]
PARAM_VALUES = [b"1", b"42", b"-1", b"abc", b"", b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00\x00\x2a",
                b"2026-01-01", b"NaN", b"\xff\xfe", b"9" * 400, b"t"]


def rand_bytes(r, lo=0, hi=64):
    return bytes(r.getrandbits(8) for _ in range(r.randint(lo, hi)))


def mutate_str(r, s):
    s = s.encode() if isinstance(s, str) else s
    k = r.randrange(8)
    if k == 0:
        return s + r.choice(BAD_UTF8)
    if k == 1:
        i = r.randint(0, len(s))
        return s[:i] + r.choice(BAD_UTF8) + s[i:]
    if k == 2:
        return b""
    if k == 3:
        return s * r.randint(2, 2000)
    if k == 4:
        return rand_bytes(r, 1, 32).replace(b"\0", b"")
    if k == 5:
        return s[: r.randint(0, len(s))]
    if k == 6:
        return s + b"\0" + s   # an embedded terminator: the field ends early
    return s


class Field:
    """A typed field of a frontend message, so a mutation can aim at one."""

    def __init__(self, kind, value):
        self.kind, self.value = kind, value   # kind: i16 i32 str raw

    def encode(self):
        if self.kind == "i16":
            return i16(self.value)
        if self.kind == "i32":
            return i32(self.value)
        if self.kind == "str":
            return cstr(self.value)
        return self.value


def template(r, kind=None):
    """A valid frontend message as (type, [Field]); kind picks one."""
    F = Field
    kind = kind or r.choice(["Q", "P", "B", "D", "E", "S", "H", "C", "d", "c", "f", "F", "p", "X"])
    sql = r.choice(SQLS)
    if kind == "Q":
        return b"Q", [F("str", sql)]
    if kind == "P":
        n = r.choice([0, 0, 1, 2])
        return b"P", [F("str", r.choice(["", "s1", "s2"])), F("str", sql), F("i16", n)] + \
            [F("i32", r.choice([0, 23, 20, 25, 16, 1043, 99999])) for _ in range(n)]
    if kind == "B":
        nf = r.choice([0, 1, 2])
        npar = r.choice([0, 1, 2])
        fields = [F("str", r.choice(["", "p1"])), F("str", r.choice(["", "s1", "s2"])), F("i16", nf)]
        fields += [F("i16", r.choice([0, 1])) for _ in range(nf)] + [F("i16", npar)]
        for _ in range(npar):
            v = r.choice(PARAM_VALUES + [None])
            fields += [F("i32", -1)] if v is None else [F("i32", len(v)), F("raw", v)]
        nr = r.choice([0, 1])
        return b"B", fields + [F("i16", nr)] + [F("i16", r.choice([0, 1])) for _ in range(nr)]
    if kind == "D":
        return b"D", [F("raw", r.choice([b"S", b"P"])), F("str", r.choice(["", "s1", "p1"]))]
    if kind == "E":
        return b"E", [F("str", r.choice(["", "p1"])), F("i32", r.choice([0, 0, 1, 2, -1]))]
    if kind == "C":
        return b"C", [F("raw", r.choice([b"S", b"P"])), F("str", r.choice(["", "s1", "p1"]))]
    if kind == "d":
        return b"d", [F("raw", r.choice([b"1\tone\n", b"2\ttwo\n", b"x\ty\n", b"3,three\n", b"\\.\n",
                                         b"PGCOPY\n\xff\r\n\0" + bytes(8)]))]
    if kind == "f":
        return b"f", [F("str", "client gave up")]
    if kind == "F":
        n = r.choice([0, 1, 2])
        fields = [F("i32", r.choice([1, 1598, 2275, 0, -1])), F("i16", 1), F("i16", 0), F("i16", n)]
        for _ in range(n):
            v = r.choice(PARAM_VALUES)
            fields += [F("i32", len(v)), F("raw", v)]
        return b"F", fields + [F("i16", 0)]
    if kind == "p":
        return b"p", [F("str", PASSWORD)]
    return kind.encode(), []   # S H c X: no body


def mutate_message(r, t, fields):
    """Encode one templated message after 0-3 mutations; returns
    (bytes, framed) where framed is False when the length lies."""
    fields = list(fields)
    for _ in range(r.choice([0, 1, 1, 2, 3])):
        if not fields:
            break
        k = r.randrange(6)
        i = r.randrange(len(fields))
        f = fields[i]
        if k == 0 and f.kind in ("i16", "i32"):
            fields[i] = Field(f.kind, r.choice(INTS16 if f.kind == "i16" else INTS32))
        elif k == 1 and f.kind in ("str", "raw"):
            fields[i] = Field(f.kind, mutate_str(r, f.value))
        elif k == 2:
            del fields[i]
        elif k == 3:
            fields.insert(i, f)
        elif k == 4:
            fields[i] = Field("raw", rand_bytes(r, 0, 8))
        else:
            fields[i] = Field("raw", f.encode()[:-1] if f.kind == "str" else f.encode())  # no terminator
    if r.random() < 0.08:
        t = bytes([r.choice([0, 1, ord("A"), ord("Z"), ord("z"), ord("Y"), 0xFF, r.getrandbits(8)])])
    body = b"".join(f.encode() for f in fields)
    if r.random() < 0.15:
        body = flip(r, body)
    return frame(r, t, body)


def flip(r, data):
    data = bytearray(data)
    for _ in range(r.randint(1, 4)):
        if not data:
            break
        k = r.randrange(3)
        i = r.randrange(len(data))
        if k == 0:
            data[i] ^= 1 << r.randrange(8)
        elif k == 1:
            del data[i:i + r.randint(1, 8)]
        else:
            data[i:i] = rand_bytes(r, 1, 8)
    return bytes(data)


def frame(r, t, body):
    """Type + length + body; the length usually tells the truth."""
    k = r.random()
    true_len = len(body) + 4
    if k < 0.8:
        return t + i32(true_len) + body, True
    lie = r.choice([true_len - 1, true_len + 1, true_len + r.randint(2, 100), 0, 3, -1, -5,
                    0x40000001, 0x7FFFFFFF, -0x80000000, true_len // 2, r.randint(5, 1 << 24)])
    return t + i32(lie) + body, lie == true_len


# ------------------------------------------------------------- the cases
# A case is a list of steps, each a dict that JSON keeps as is:
#   {"op": "login"}                         startup + login, then go on
#   {"op": "send", "hex": H, "chunk": N}    send bytes (N bytes a write)
#   {"op": "read", "s": S}                  read what comes for S seconds
#   {"op": "abort", "rst": B, "after": N}   read N bytes, then close (RST if B)
#   {"op": "probe"}                         send Sync; some answer must come
# Without an abort, the case ends by half-closing and waiting for the
# server to close.

def send(data, chunk=0):
    return {"op": "send", "hex": data.hex(), "chunk": chunk}


def chunked(r):
    return 1 if r.random() < 0.12 else 0


def gen_startup_random(r):
    return [send(rand_bytes(r, 1, r.choice([8, 64, 4096])), chunked(r))]


def gen_startup_mutated(r):
    k = r.randrange(10)
    params = {"user": USER, "database": DB}
    if r.random() < 0.3:
        params[r.choice(["application_name", "options", "client_encoding", "replication", "x" * 300])] = \
            r.choice(["fz", "-c statement_timeout=1", "\xff", "", "database", "SQL_ASCII"])
    good = startup(params)
    if k == 0:       # length lies
        data = i32(r.choice([0, 4, 7, 8, len(good) - 1, len(good) + 1, 10001, 0x7FFFFFFF, -1, -0x80000000,
                             1 << 20, 0x40000001])) + good[4:]
    elif k == 1:     # no final terminator, or none at all
        body = good[4:-1] if r.random() < 0.5 else good[4:8] + good[8:].replace(b"\0", b"x")
        data = i32(len(body) + 4) + body
    elif k == 2:     # unknown protocol versions
        v = r.choice([0, 1, 0x00020000, 0x00030001, 0x00040000, 0x12345678, -1, SSL_CODE + 7,
                      (3 << 16) | 0xFFFF, 0x00010000])
        data = startup(params, v)
    elif k == 3:     # SSLRequest / GSSENCRequest with garbage
        code = r.choice([SSL_CODE, GSS_CODE])
        data = i32(8) + i32(code) + (rand_bytes(r, 1, 16) if r.random() < 0.5 else b"")
        if r.random() < 0.3:
            data = i32(r.choice([4, 9, 12, 100])) + i32(code)
        return [send(data, chunked(r)), {"op": "read", "s": 0.3}] + \
            r.choice([[], [send(good)], [send(rand_bytes(r, 1, 64))], [send(i32(8) + i32(code))],
                      [send(b"\x16\x03\x01\x00\x05hello")]])
    elif k == 4:     # CancelRequest variants
        data = i32(r.choice([16, 12, 20, 8, 0x7FFFFFFF])) + i32(CANCEL_CODE) + rand_bytes(r, 0, 12)
    elif k == 5:     # odd parameters
        body = i32(PROTO_V3) + b"".join(r.choice([cstr("user"), cstr(USER), cstr("database"), b"\0",
                                                  cstr(mutate_str(r, "user")), rand_bytes(r, 1, 20)])
                                        for _ in range(r.randint(0, 10)))
        data = i32(len(body) + 4) + body
    elif k == 6:     # a frontend message instead of a startup packet
        data = mutate_message(r, *template(r))[0]
    elif k == 7:     # huge parameter list
        body = i32(PROTO_V3) + (cstr("a" * r.randint(1, 300)) + cstr("b" * r.randint(1, 3000))) * r.randint(1, 40)
        data = i32(len(body) + 4) + body + b"\0"
    elif k == 8:     # a valid startup cut short
        data = good[: r.randint(1, len(good) - 1)]
    else:
        data = flip(r, good)
    return [send(data, chunked(r))]


def gen_auth_mutated(r):
    """Only under a password method: mutate the SASL or password exchange."""
    steps = [send(startup()), {"op": "read", "s": 0.3}]
    k = r.randrange(4)
    if k == 0:
        first = b"n,,n=,r=" + base64.b64encode(rand_bytes(r, 18, 18))
        body = cstr(r.choice(["SCRAM-SHA-256", "SCRAM-SHA-256-PLUS", "PLAIN", "", "x" * 500])) + \
            i32(r.choice([len(first), -1, 0, len(first) + 10, 0x7FFFFFFF])) + first
        steps.append(send(frame(r, b"p", flip(r, body) if r.random() < 0.3 else body)[0], chunked(r)))
    elif k == 1:
        steps.append(send(mutate_message(r, b"p", [Field("str", PASSWORD)])[0], chunked(r)))
    elif k == 2:
        steps.append(send(mutate_message(r, *template(r))[0], chunked(r)))
    else:
        steps.append(send(msg(b"p", cstr("SCRAM-SHA-256") + i32(-1)) + msg(b"p", rand_bytes(r, 0, 200))))
    return steps


def gen_frontend_mutated(r):
    steps, framed = [{"op": "login"}], True
    data = b""
    for _ in range(r.randint(1, 8)):
        m, ok = mutate_message(r, *template(r))
        data += m
        framed = framed and ok
    steps.append(send(data, chunked(r)))
    if framed and b"COPY" not in data and r.random() < 0.7:
        steps.append({"op": "probe"})
    return steps


def gen_frontend_random(r):
    steps = [{"op": "login"}]
    k = r.randrange(3)
    if k == 0:
        data = rand_bytes(r, 1, 512)
    elif k == 1:   # unknown types, honest lengths
        data = b"".join(frame(r, bytes([r.getrandbits(8)]), rand_bytes(r, 0, 64))[0] for _ in range(r.randint(1, 5)))
    else:          # a valid extended exchange with random bytes spliced in
        good = parse("SELECT $1::int") + bind([b"7"]) + describe(b"P") + execute() + SYNC
        i = r.randint(0, len(good))
        data = good[:i] + rand_bytes(r, 1, 16) + good[i:]
    return [*steps, send(data, chunked(r))]


def gen_wrong_time(r):
    """Valid messages at the wrong moment."""
    k = r.randrange(6)
    if k == 0:
        return [{"op": "login"}, send(msg(b"p", cstr(PASSWORD)) + SYNC), {"op": "probe"}]
    if k == 1:
        return [{"op": "login"}, send(startup()), {"op": "read", "s": 0.2}]
    if k == 2:
        return [send(msg(b"p", cstr(PASSWORD)))]
    if k == 3:
        return [{"op": "login"}, send(msg(b"d", b"1\tx\n") + COPY_DONE + msg(b"f", cstr("no")) + SYNC),
                {"op": "probe"}]
    if k == 4:
        return [{"op": "login"}, send(execute("nope") + bind(stmt="nope") + describe(b"P", "nope") + SYNC),
                {"op": "probe"}]
    return [{"op": "login"}, send(i32(16) + i32(CANCEL_CODE) + rand_bytes(r, 8, 8))]


def gen_split(r):
    """A valid exchange in 1-byte writes, maybe closed half-way."""
    good = r.choice([
        query("SELECT 1") + query("SELECT id, v FROM fz_t"),
        parse("SELECT $1::int + 1", "s1") + bind([b"41"], stmt="s1") + describe(b"P") + execute() + SYNC,
        query("COPY fz_t FROM STDIN") + msg(b"d", b"5\tfive\n") + COPY_DONE,
    ])
    steps = [{"op": "login"}]
    if r.random() < 0.4:
        cut = r.randint(1, len(good) - 1)
        return steps + [send(good[:cut], 1), {"op": "abort", "rst": r.random() < 0.5, "after": 0}]
    return steps + [send(good, 1), {"op": "read", "s": 0.3}]


def gen_close_mid_message(r):
    m, _ = mutate_message(r, *template(r)) if r.random() < 0.5 else (query("SELECT 1") + parse("SELECT 2"), True)
    cut = r.randint(1, max(1, len(m) - 1))
    return [{"op": "login"}, send(m[:cut], chunked(r)), {"op": "abort", "rst": r.random() < 0.5, "after": 0}]


def gen_copy(r):
    steps = [{"op": "login"}]
    fmt = r.choice(["", " WITH (FORMAT csv)", " (FORMAT binary)", " WITH (FORMAT text, HEADER true)"])
    data = query(f"COPY fz_t FROM STDIN{fmt}")
    rows = [r.choice([b"1\tone\n", b"2,two\n", b"x\ty\n", b"\\N\t\\N\n", b"7\t" + r.choice(BAD_UTF8) + b"\n",
                      b"PGCOPY\n\xff\r\n\0" + bytes(8) + i16(2) + i32(4) + i32(9) + i32(-1) + i16(-1),
                      rand_bytes(r, 1, 40), b"8\t" + b"z" * r.randint(1, 100000) + b"\n"])
            for _ in range(r.randint(0, 6))]
    for row in rows:
        data += mutate_message(r, b"d", [Field("raw", row)])[0] if r.random() < 0.2 else msg(b"d", row)
    end = r.randrange(5)
    if end == 0:
        return steps + [send(data, chunked(r)), {"op": "read", "s": 0.2},
                        {"op": "abort", "rst": r.random() < 0.5, "after": 0}]
    if end == 1:
        data += COPY_DONE
    elif end == 2:
        data += msg(b"f", cstr(mutate_str(r, "abandon")))
    elif end == 3:
        data += r.choice([SYNC, FLUSH, query("SELECT 1"), parse("SELECT 1"), TERMINATE])
    else:
        data += COPY_DONE + COPY_DONE + msg(b"d", b"late\n")
    return steps + [send(data, chunked(r))]


def gen_row_stream(r):
    n = r.choice([10000, 200000, 1000000])
    q = r.choice([f"SELECT generate_series(1, {n})",
                  f"COPY (SELECT generate_series(1, {n}) AS g) TO STDOUT",
                  f"SELECT g, repeat('x', 100) FROM generate_series(1, {n}) AS t(g)"])
    if r.random() < 0.5:
        data = query(q)
    else:
        data = parse(q) + bind() + execute(max_rows=r.choice([0, 10])) + SYNC
    return [{"op": "login"}, send(data), {"op": "abort", "rst": r.random() < 0.5,
                                          "after": r.choice([0, 100, 10000, 1000000])}]


def gen_hostile_sql(r):
    k = r.randrange(7)
    n = r.choice([100, 1000, 5000, 20000])
    if k == 0:
        sql = "SELECT " + "(" * n + "1" + ")" * n
    elif k == 1:
        sql = "SELECT " + "+".join(["1"] * n)
    elif k == 2:
        sql = "SELECT 1 WHERE 1 IN (" + ",".join(str(i) for i in range(n * 5)) + ")"
    elif k == 3:
        ident = "a" * (n * 10)
        sql = r.choice([f'SELECT 1 AS "{ident}"', f"SELECT {ident} FROM fz_t", f"CREATE TABLE {ident} (x int)"])
    elif k == 4:
        sql = "SELECT 1 FROM fz_t WHERE " + " OR ".join(f"id = {i}" for i in range(n))
    elif k == 5:
        sql = "SELECT " + "NOT " * n + "true"
    else:
        sql = "SELECT " + "CASE WHEN true THEN " * min(n, 2000) + "1" + " END" * min(n, 2000)
    return [{"op": "login"}, send(query(sql))]


CATEGORIES = {   # name: (generator, weight)
    "startup_random": (gen_startup_random, 10),
    "startup_mutated": (gen_startup_mutated, 20),
    "auth_mutated": (gen_auth_mutated, 8),
    "frontend_mutated": (gen_frontend_mutated, 35),
    "frontend_random": (gen_frontend_random, 10),
    "wrong_time": (gen_wrong_time, 6),
    "split_writes": (gen_split, 5),
    "close_mid_message": (gen_close_mid_message, 6),
    "copy": (gen_copy, 8),
    "row_stream_close": (gen_row_stream, 3),
    "hostile_sql": (gen_hostile_sql, 1),
}


def generate(r, auth, skip=()):
    names = [n for n in CATEGORIES if (auth != "trust" or n != "auth_mutated") and n not in skip]
    name = r.choices(names, [CATEGORIES[n][1] for n in names])[0]
    return name, CATEGORIES[name][0](r)


# ------------------------------------------------------- running a case

def backend_outcome(data, ssl_first):
    """Framing of what the server sent: (error_count, auth_ok)."""
    pos, errors, ok = 0, 0, False
    if ssl_first and data[:1] in (b"N", b"S", b"G"):
        pos = 1
    while pos + 5 <= len(data):
        t = data[pos:pos + 1]
        n = struct.unpack("!i", data[pos + 1:pos + 5])[0]
        if n < 4:
            break
        if t == b"E":
            errors += 1
        if t == b"R" and data[pos + 5:pos + 9] == b"\0\0\0\0":
            ok = True
        pos += 1 + n
    return errors, ok


def drain(sock, got, seconds, until_ready=False, cap=1 << 22):
    """Read for up to `seconds` (keeping at most `cap` bytes in `got`);
    returns "eof", "reset", "ready" (a ReadyForQuery came) or "timeout"."""
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            sock.settimeout(max(0.01, deadline - time.time()))
            try:
                chunk = sock.recv(1 << 20)
            except socket.timeout:
                return "timeout"
            if not chunk:
                return "eof"
            if len(got) < cap:
                got += chunk
            if until_ready and b"Z\0\0\0\x05" in got:
                return "ready"
        return "timeout"
    except OSError:
        return "reset"


def run_case(port, steps, auth, stall=20.0, io_timeout=10.0):
    """Run one case; returns a dict with its outcome and what was seen."""
    res = {"outcome": None, "stall": None, "errors": 0, "sent": 0, "received": 0}
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError as e:
        return {**res, "outcome": "connect_failed", "detail": str(e)}
    sock.settimeout(io_timeout)
    got = bytearray()
    ssl_first = False
    try:
        for i, st in enumerate(steps):
            op = st["op"]
            if op == "login":
                try:
                    login(sock, auth)
                except (ProtocolError, OSError) as e:
                    return {**res, "outcome": "login_failed", "detail": str(e),
                            "stall": "login" if isinstance(e, socket.timeout) else None}
            elif op == "send":
                data = bytes.fromhex(st["hex"])
                ssl_first = ssl_first or (i == 0 and data[4:8] in (i32(SSL_CODE), i32(GSS_CODE)))
                step = st.get("chunk") or len(data) or 1
                try:
                    for j in range(0, len(data), step):
                        sock.sendall(data[j:j + step])
                        res["sent"] += len(data[j:j + step])
                except socket.timeout:
                    res["send_blocked"] = True
                    break
                except OSError:
                    res["outcome"] = "closed_while_sending"
                    break
            elif op == "read":
                if drain(sock, got, st["s"]) in ("eof", "reset"):
                    break
            elif op == "probe":
                try:
                    sock.sendall(SYNC)
                except OSError:
                    break
                if drain(sock, got, stall, until_ready=True) == "timeout":
                    return {**res, "outcome": "stall", "stall": "no answer to Sync"}
            elif op == "abort":
                if st.get("after"):
                    drain(sock, got, 5, cap=st["after"] + 1) if len(got) < st["after"] else None
                if st.get("rst"):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return {**res, "outcome": "client_aborted"}
        if res["outcome"] is None:
            # Half-close: the server must notice our EOF and close in time.
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            end = drain(sock, got, stall)
            if end == "timeout":
                res["outcome"], res["stall"] = "stall", "still open after the client's EOF"
            elif end == "reset":
                res["outcome"] = "reset"
        res["errors"] = backend_outcome(bytes(got), ssl_first)[0]
        if res["outcome"] in (None, "closed_while_sending"):
            res["outcome"] = "error_then_closed" if res["errors"] else "closed_silently"
        return res
    finally:
        res["received"] = len(got)
        try:
            sock.close()
        except OSError:
            pass


# ------------------------------------------------------------- the canary

CANARY_ROWS = 100
CANARY_SUM = CANARY_ROWS * (CANARY_ROWS + 1) // 2


def setup_tables(port, auth):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        login(sock, auth)
        simple_query(sock, "CREATE TABLE IF NOT EXISTS fz_t (id BIGINT, v STRING)")
        simple_query(sock, "CREATE TABLE IF NOT EXISTS canary_t (id BIGINT, v STRING)")
        if simple_query(sock, "SELECT count(*) FROM canary_t")[0][0] == "0":
            simple_query(sock, "INSERT INTO canary_t SELECT CAST(value AS BIGINT), 'v' || CAST(value AS STRING) "
                               f"FROM generate_series(1, {CANARY_ROWS})")


class Canary(threading.Thread):
    """A well-behaved client that checks known answers, simple or extended."""

    def __init__(self, fuzz, extended, seed):
        super().__init__(daemon=True)
        self.fuzz, self.extended, self.r = fuzz, extended, random.Random(seed)
        self.name = "extended" if extended else "simple"
        self.queries, self.failures, self.max_latency = 0, [], 0.0

    def one(self, sock):
        if self.extended:
            k = self.r.randint(1, CANARY_ROWS)
            sock.sendall(parse("SELECT v FROM canary_t WHERE id = $1", oids=[20]) + bind([str(k).encode()])
                         + execute() + SYNC)
            rows, want = collect(sock), [[f"v{k}"]]
        else:
            rows = simple_query(sock, "SELECT count(*), sum(id), min(v), max(v) FROM canary_t")
            want = [[str(CANARY_ROWS), str(CANARY_SUM), "v1", "v99"]]
        if rows != want:
            raise ProtocolError(f"wrong answer {rows!r}, want {want!r}")

    def run(self):
        sock = None
        while not self.fuzz.stopping.is_set():
            start = time.time()
            try:
                if sock is None:
                    sock = socket.create_connection(("127.0.0.1", self.fuzz.server.port), timeout=5)
                    sock.settimeout(self.fuzz.args.canary_stall)
                    login(sock, self.fuzz.args.auth)
                self.one(sock)
                self.queries += 1
            except (OSError, ProtocolError) as e:
                if not self.fuzz.stopping.is_set():
                    what = "stall" if isinstance(e, socket.timeout) else "error"
                    self.failures.append((time.time(), what, str(e)))
                if sock:
                    sock.close()
                sock = None
                while self.fuzz.restarting.is_set():
                    time.sleep(0.2)
                time.sleep(0.5)
                continue
            lat = time.time() - start
            self.max_latency = max(self.max_latency, lat)
            time.sleep(0.1)
        if sock:
            sock.close()


# --------------------------------------------------------------- the run

KEEP = 3   # finding files kept per distinct signature


class Fuzz:
    def __init__(self, args):
        self.args = args
        self.stopping, self.restarting = threading.Event(), threading.Event()
        self.lock = threading.Lock()
        self.cases, self.messages = Counter(), Counter()
        self.outcomes = defaultdict(Counter)
        self.inflight, self.recent = {}, defaultdict(list)
        self.sigs = {}          # signature -> {"kind", "count", "files"}
        self.nfiles = 0
        self.crashes, self.panics, self.stalls = [], 0, 0
        self.out = pathlib.Path(args.findings) / time.strftime("%Y%m%d-%H%M%S")
        self.out.mkdir(parents=True, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="wirefuzz-")
        self.server = None
        self.rss = []

    def start_server(self):
        self.server = Server(self.args.binary, self.workdir, self.args.auth, on_panic=self.on_panic)
        setup_tables(self.server.port, self.args.auth)

    def candidates(self):
        """Every case running now or ended in the last 3 s: the server does
        not say which connection panicked."""
        now = time.time()
        with self.lock:
            out = [{"worker": w, "category": c, "case_seed": sd, "steps": st}
                   for w, (c, sd, st) in self.inflight.items()]
            for w, lst in self.recent.items():
                out += [{"worker": w, "category": c, "case_seed": sd, "steps": st}
                        for t, c, sd, st in lst if now - t < 3]
        return out

    def on_panic(self, sig, block):
        self.panics += 1
        if sig.startswith("stack overflow"):
            return   # the process dies: the monitor records the crash
        self.finding("panic", sig, {"log": block[:12]}, candidates=self.candidates())

    def finding(self, kind, sig, info, steps=None, candidates=None):
        with self.lock:
            entry = self.sigs.setdefault(sig, {"kind": kind, "count": 0, "files": []})
            entry["count"] += 1
            if len(entry["files"]) >= KEEP:
                return
            self.nfiles += 1
            path = self.out / f"{self.nfiles:03d}-{kind}.json"
            entry["files"].append(str(path))
        doc = {"kind": kind, "signature": sig, "info": info, "auth": self.args.auth, "seed": self.args.seed}
        if steps is not None:
            doc["steps"] = steps
        if candidates:
            doc["candidates"] = candidates
        path.write_text(json.dumps(doc, indent=1))
        print(f"  finding {path.name}: {sig}", flush=True)

    def worker(self, wid):
        r = random.Random(f"{self.args.seed}-{wid}")
        while not self.stopping.is_set():
            if self.restarting.is_set() or not self.server.alive():
                time.sleep(0.2)
                continue
            case_seed = r.getrandbits(48)
            cat, steps = generate(random.Random(case_seed), self.args.auth, self.args.skip)
            with self.lock:
                self.inflight[wid] = (cat, case_seed, steps)
            try:
                res = run_case(self.server.port, steps, self.args.auth, stall=self.args.stall)
            except Exception as e:   # a fuzzer bug must not end the run
                res = {"outcome": "client_error", "detail": repr(e), "received": 0}
            if res["outcome"] in ("connect_failed", "login_failed") and \
                    (self.restarting.is_set() or not self.server.alive()):
                res["outcome"] = "server_down"   # a crash, not this case
                time.sleep(0.2)
            with self.lock:
                self.inflight.pop(wid, None)
                self.recent[wid] = [x for x in self.recent[wid] if time.time() - x[0] < 3][-5:]
                self.recent[wid].append((time.time(), cat, case_seed, steps))
                self.cases[cat] += 1
                self.messages[cat] += sum(1 for s in steps if s["op"] == "send")
                self.outcomes[cat][res["outcome"]] += 1
            if res.get("stall") and self.server.alive() and not self.restarting.is_set():
                self.stalls += 1
                self.finding("stall", f"stall: {res['stall']} ({cat})",
                             {"category": cat, "case_seed": case_seed, "received": res["received"]}, steps=steps)

    def monitor(self, until):
        last_print = time.time()
        while time.time() < until:
            time.sleep(0.2)
            if not self.server.alive():
                self.restarting.set()
                cands = self.candidates()
                code = self.server.proc.returncode
                self.server.stop()
                log = self.out / f"server-crash-{len(self.crashes) + 1}.log"
                shutil.copy(self.server.log_path, log)
                sig = next((p for p in reversed(self.server.panics) if p.startswith("stack overflow")),
                           f"exit {code}")
                tail = [x.rstrip() for x in self.server.tail(30)]
                self.crashes.append({"time": time.time(), "exit": code, "signature": sig})
                self.finding("crash", f"crash: {sig}", {"exit": code, "log": str(log),
                                                        "log_tail": tail[-10:]}, candidates=cands)
                self.start_server()
                self.restarting.clear()
            rss, hwm = self.server.status("VmRSS"), self.server.status("VmHWM")
            if rss:
                self.rss.append((time.time(), rss, hwm))
            if time.time() - last_print >= 30:
                last_print = time.time()
                with self.lock:
                    total = sum(self.cases.values())
                print(f"  {int(until - time.time()):4d} s left: {total} cases, rss {rss // 1024 if rss else '?'} MiB, "
                      f"peak {hwm // 1024 if hwm else '?'} MiB, crashes {len(self.crashes)}, "
                      f"panics {self.panics}, stalls {self.stalls}", flush=True)

    def run(self):
        a = self.args
        print(f"wire fuzz: {a.binary}, {a.seconds} s, {a.workers} workers, seed {a.seed}, auth {a.auth}")
        print(f"findings: {self.out}", flush=True)
        self.start_server()
        start_rss = (self.server.status("VmRSS"), self.server.status("VmHWM"))
        canaries = [Canary(self, ext, f"{a.seed}-canary-{ext}") for ext in (False, True)]
        for c in canaries:
            c.start()
        workers = [threading.Thread(target=self.worker, args=(i,), daemon=True) for i in range(a.workers)]
        for w in workers:
            w.start()
        t0 = time.time()
        self.monitor(t0 + a.seconds)
        self.stopping.set()
        for w in workers:
            w.join(timeout=a.stall + 30)
        for c in canaries:
            c.join(timeout=a.canary_stall + 5)
        elapsed = time.time() - t0
        fresh = fresh_connection(self.server.port, a.auth)
        if fresh != "ok":
            self.finding("fresh_connection", "fresh connection failed", {"detail": fresh})
        end_rss = (self.server.status("VmRSS"), self.server.status("VmHWM"))
        alive = self.server.alive()
        self.server.stop()
        shutil.copy(self.server.log_path, self.out / "server.log")
        # Canary failures within 5 s of a crash are the crash's; the rest
        # are findings of their own.
        for c in canaries:
            for t, what, detail in c.failures:
                if not any(abs(t - x["time"]) < 5 for x in self.crashes):
                    self.finding("canary", f"canary {c.name}: {what}", {"time": t, "detail": detail})
        self.report(elapsed, canaries, fresh, alive, start_rss, end_rss)
        if a.triage_seconds > 0:
            triage(self, time.time() + a.triage_seconds)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return 1 if self.sigs else 0

    def report(self, elapsed, canaries, fresh, alive, start_rss, end_rss):
        def mib(k):
            return f"{k / 1024:.0f} MiB" if k else "?"
        a = self.args
        lines = [f"\n== wire fuzz: {elapsed:.0f} s, seed {a.seed}, {a.workers} workers, auth {a.auth}"]
        kinds = ["error_then_closed", "closed_silently", "reset", "client_aborted", "login_failed",
                 "connect_failed", "stall", "server_down", "client_error"]
        lines.append(f"{'category':18}{'cases':>7}{'sends':>7}" + "".join(f"{k[:13]:>14}" for k in kinds))
        tot = Counter()
        for cat in CATEGORIES:
            if self.cases[cat]:
                tot.update(self.outcomes[cat])
                lines.append(f"{cat:18}{self.cases[cat]:>7}{self.messages[cat]:>7}"
                             + "".join(f"{self.outcomes[cat][k]:>14}" for k in kinds))
        lines.append(f"{'total':18}{sum(self.cases.values()):>7}{sum(self.messages.values()):>7}"
                     + "".join(f"{tot[k]:>14}" for k in kinds))
        lines.append("(error_then_closed: an ErrorResponse came, then the server closed; closed_silently: closed "
                     "with no ErrorResponse; client_aborted: the case closed first)")
        lines.append(f"server alive at the end: {alive}; crashes: {len(self.crashes)}; panics in the log: "
                     f"{self.panics}; stalls: {self.stalls}; fresh connection at the end: {fresh}")
        for c in canaries:
            lost = sum(1 for t, _, _ in c.failures if any(abs(t - x["time"]) < 5 for x in self.crashes))
            lines.append(f"canary {c.name}: {c.queries} queries, {len(c.failures)} failures ({lost} at crashes), "
                         f"max latency {c.max_latency:.2f} s")
        lines.append(f"server RSS: at start {mib(start_rss[0])} (peak {mib(start_rss[1])}); "
                     f"at end {mib(end_rss[0])} (peak {mib(end_rss[1])})")
        if self.crashes:
            lines.append(f"peak RSS of any server instance ({len(self.crashes) + 1} after the crashes): "
                         f"{mib(max((h for _, _, h in self.rss if h), default=None))}")
        if len(self.rss) > 10:
            step = max(1, len(self.rss) // 12)
            lines.append("RSS over the run, MiB: " + " ".join(str(x[1] // 1024) for x in self.rss[::step]))
        lines.append(f"distinct findings: {len(self.sigs)}")
        for sig, e in sorted(self.sigs.items(), key=lambda kv: -kv[1]["count"]):
            lines.append(f"  {e['count']:5d} x {e['kind']}: {sig}")
            for f in e["files"][:1]:
                lines.append(f"          {f}")
        text = "\n".join(lines)
        print(text, flush=True)
        with open(self.out / "summary.txt", "a") as f:
            f.write(text + "\n")


def fresh_connection(port, auth):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.settimeout(10)
            login(sock, auth)
            rows = simple_query(sock, "SELECT count(*), sum(id) FROM canary_t")
            return "ok" if rows == [[str(CANARY_ROWS), str(CANARY_SUM)]] else f"wrong answer {rows}"
    except (OSError, ProtocolError) as e:
        return f"failed: {e}"


# ------------------------------------------------ replay, triage, minimise

class Replayer:
    """Runs cases one at a time against a server of its own, restarted
    when it dies, and says which signatures each case set off."""

    def __init__(self, binary, auth, stall):
        self.binary, self.auth, self.stall = binary, auth, stall
        self.workdir = tempfile.mkdtemp(prefix="wirefuzz-replay-")
        self.server = None

    def run(self, steps):
        if self.server is None or not self.server.alive():
            if self.server:
                self.server.stop()
            self.server = Server(self.binary, self.workdir, self.auth)
            setup_tables(self.server.port, self.auth)
        before = len(self.server.panics)
        res = run_case(self.server.port, steps, self.auth, stall=self.stall)
        for _ in range(6):   # give a dying server or a panic line a moment
            time.sleep(0.05)
            if not self.server.alive():
                break
        sigs = set(self.server.panics[before:])
        if not self.server.alive():
            crash = next((s for s in sigs if s.startswith("stack overflow")), f"exit {self.server.proc.returncode}")
            sigs = {f"crash: {crash}"} | {s for s in sigs if not s.startswith("stack overflow")}
        if res.get("stall"):
            sigs.add("stall")
        return res, sigs

    def close(self):
        if self.server:
            self.server.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def split_messages(data):
    """Frontend messages (type, length, body) as far as their lengths hold;
    whatever does not frame is the last piece."""
    out, pos = [], 0
    while pos + 5 <= len(data):
        n = struct.unpack("!i", data[pos + 1:pos + 5])[0]
        if n < 4 or pos + 1 + n > len(data):
            break
        out.append(data[pos:pos + 1 + n])
        pos += 1 + n
    return out + ([data[pos:]] if pos < len(data) else [])


def show(data, first=False):
    """A readable line per frontend message: type, length, body; `first`:
    the connection's first bytes, a startup packet (no type byte)."""
    lines = []
    if first and len(data) >= 8:
        n, code = struct.unpack("!ii", data[:8])
        lines.append(f"startup len={n} code={code} (0x{code & 0xFFFFFFFF:08x}) body={data[8:max(8, n)][:100]!r}")
        data = data[max(8, n):] if n >= 8 else b""
    for m in split_messages(data):
        if len(m) >= 5:
            t = chr(m[0]) if 32 < m[0] < 127 else f"0x{m[0]:02x}"
            lines.append(f"{t} len={struct.unpack('!i', m[1:5])[0]} body={m[5:][:100]!r}"
                         + ("..." if len(m) > 105 else ""))
        else:
            lines.append(f"bytes {m!r}")
    return lines


def matches(sig, sigs):
    return sig in sigs or (sig.startswith("stall") and "stall" in sigs)


def ddmin(data, test, deadline):
    """Delta debugging: the shortest cut of `data` that `test` still likes,
    removing halves, then quarters, ... down to single bytes."""
    n = 2
    while len(data) > 1 and time.time() < deadline:
        size = max(1, len(data) // n)
        for j in range(0, len(data), size):
            trial = data[:j] + data[j + size:]
            if trial and test(trial):
                data, n = trial, max(n - 1, 2)
                break
        else:
            if size == 1:
                break
            n = min(n * 2, len(data))
    return data


def minimise(rep, steps, sig, deadline):
    """Smaller steps that still set off `sig`: drop steps; in each send drop
    whole messages, shrink each honest message's body (its length kept
    true), then cut raw bytes."""
    tries = 0

    def still(i, data):
        nonlocal tries
        tries += 1
        trial = steps[:i] + ([{**steps[i], "hex": data.hex()}] if data is not None else []) + steps[i + 1:]
        return matches(sig, rep.run(trial)[1])

    i = 0
    while i < len(steps) and time.time() < deadline:
        if steps[i]["op"] != "login" and len(steps) > 1 and still(i, None):
            steps = steps[:i] + steps[i + 1:]
        else:
            i += 1
    for i, st in enumerate(steps):
        if st["op"] != "send":
            continue
        msgs = split_messages(bytes.fromhex(st["hex"]))
        j = 0
        while len(msgs) > 1 and j < len(msgs) and time.time() < deadline:
            if still(i, b"".join(msgs[:j] + msgs[j + 1:])):
                msgs = msgs[:j] + msgs[j + 1:]
            else:
                j += 1
        for j, m in enumerate(msgs):
            if len(m) > 5 and struct.unpack("!i", m[1:5])[0] == len(m) - 1:
                def honest(body, j=j, t=m[:1]):
                    return still(i, b"".join(msgs[:j] + [msg(t, body)] + msgs[j + 1:]))
                msgs[j] = msg(m[:1], ddmin(m[5:], honest, deadline))
        steps[i] = {**st, "hex": ddmin(b"".join(msgs), lambda d: still(i, d), deadline).hex()}
    return steps, tries


def triage(fuzz, deadline):
    """For each distinct crash, stall or panic: find one case that sets it
    off on its own (first pass), then minimise each (second pass, the time
    left shared out) and write it beside the findings."""
    order = {"crash": 0, "stall": 1, "panic": 2}
    todo = sorted([(sig, e) for sig, e in fuzz.sigs.items() if e["kind"] in order],
                  key=lambda kv: (order[kv[1]["kind"]], -kv[1]["count"]))
    if not todo:
        return
    print(f"\n== triage of {len(todo)} distinct findings (until {time.strftime('%H:%M:%S', time.localtime(deadline))})",
          flush=True)
    rep = Replayer(fuzz.args.binary, fuzz.args.auth, fuzz.args.stall)
    lines, found = [], []
    try:
        for k, (sig, e) in enumerate(todo):
            my_deadline = time.time() + (deadline - time.time()) / 2 / (len(todo) - k)
            hit = None
            for f in e["files"]:
                doc = json.loads(pathlib.Path(f).read_text())
                cands = [{"steps": doc["steps"], "category": doc["info"].get("category")}] if doc.get("steps") \
                    else doc.get("candidates", [])
                # Hostile SQL first: the usual suspect of a crash.
                for c in sorted(cands, key=lambda c: c.get("category") != "hostile_sql"):
                    if time.time() > my_deadline:
                        break
                    if matches(sig, rep.run(c["steps"])[1]):
                        hit = c
                        break
                if hit or time.time() > my_deadline:
                    break
            if hit:
                found.append((sig, e, hit))
            else:
                lines.append(f"  not reproduced alone (in the time given): {sig}")
        for k, (sig, e, hit) in enumerate(found):
            my_deadline = time.time() + (deadline - time.time()) / (len(found) - k)
            small, tries = minimise(rep, [dict(s) for s in hit["steps"]], sig, my_deadline)
            fuzz.nfiles += 1
            path = fuzz.out / f"{fuzz.nfiles:03d}-minimal.json"
            path.write_text(json.dumps({"kind": e["kind"], "signature": sig, "auth": fuzz.args.auth,
                                        "category": hit.get("category"), "steps": small}, indent=1))
            lines.append(f"  {sig}\n      one {hit.get('category')} case, minimised in {tries} tries to "
                         f"{[s['op'] for s in small]}:")
            for j, s in enumerate(small):
                if s["op"] == "send":
                    lines += [f"        {x}" for x in show(bytes.fromhex(s["hex"]), j == 0)[:6]]
            lines.append(f"      replay: fuzz/wire/run --replay {path}")
    finally:
        rep.close()
    text = "\n".join(lines)
    print(text, flush=True)
    with open(fuzz.out / "summary.txt", "a") as f:
        f.write("\ntriage\n" + text + "\n")


def replay(args):
    doc = json.loads(pathlib.Path(args.replay).read_text())
    auth = doc.get("auth", args.auth)
    cases = [{"category": doc.get("category", "case"), "steps": doc["steps"]}] if doc.get("steps") \
        else doc.get("candidates", [])
    if not cases:
        print("nothing to replay: this finding has no input (rerun the fuzzer with the same --seed)")
        return 2
    rep = Replayer(args.binary, auth, args.stall)
    bad = 0
    try:
        for i, case in enumerate(cases):
            print(f"case {i} ({case.get('category')}):")
            for j, st in enumerate(case["steps"]):
                if st["op"] == "send":
                    h = st["hex"]
                    print(f"  send {len(h) // 2} bytes{' in 1-byte writes' if st.get('chunk') else ''}: "
                          f"{h[:200]}{'...' if len(h) > 200 else ''}")
                    for line in show(bytes.fromhex(h), j == 0)[:20]:
                        print(f"      {line}")
                else:
                    print(f"  {json.dumps(st)}")
            res, sigs = rep.run(case["steps"])
            print(f"  -> {res['outcome']}, {res['received']} bytes back; set off: {sorted(sigs) or 'nothing'}")
            if sigs:
                bad += 1
                print("  server log tail:\n    " + "    ".join(rep.server.tail(12)))
    finally:
        rep.close()
    print(f"{bad} of {len(cases)} cases set something off")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--seed", default=str(int(time.time())))
    p.add_argument("--binary", default=default_binary())
    p.add_argument("--auth", default="trust", choices=["trust", "scram-sha-256", "password"])
    p.add_argument("--stall", type=float, default=20.0,
                   help="seconds the server gets to close after the client's EOF, or to answer a Sync")
    p.add_argument("--canary-stall", type=float, default=5.0, help="seconds a canary query may take")
    p.add_argument("--triage-seconds", type=int, default=240,
                   help="after the run: time to reproduce each finding alone and minimise it (0: none)")
    p.add_argument("--skip", action="append", default=[], choices=sorted(CATEGORIES), metavar="CATEGORY",
                   help="leave a category out, e.g. hostile_sql to keep one server up the whole run (repeatable)")
    p.add_argument("--findings", default=str(ROOT / "fuzz" / "wire" / "findings"))
    p.add_argument("--replay", metavar="FILE", help="run the case(s) of one finding against a fresh server")
    args = p.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"no lakegres binary at {args.binary}: build it (cargo build --release -p lakegres) "
                 "or pass --binary")
    if args.replay:
        return replay(args)
    return Fuzz(args).run()


if __name__ == "__main__":
    sys.exit(main())
