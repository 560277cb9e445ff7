#!/usr/bin/env python3
"""How often Lakegres gives Apache Spark's answer on Spark's SQLQueryTestSuite
golden files (`sql-tests/results/*.sql.out`, Spark 4.x, ANSI mode).

Each golden file runs against a fresh Lakegres server (a fresh warehouse),
query by query, and each query is classified:

- pass: Spark gives rows and Lakegres the same rows (in order when the query
  has an outer ORDER BY, else as a multiset), or both raise an error, or the
  query is a command (`struct<>`, no output) and Lakegres succeeds;
- wrong: both give rows and they differ (the silently different answers);
- error: Spark gives rows (or succeeds), Lakegres raises an error;
- unexpected_rows: Spark raises an error, Lakegres returns rows;
- skip: `SET spark.*` / `RESET` (Spark configuration; still sent, not counted).

See README.md in this directory for where the golden files come from.
"""

import argparse
import collections
import datetime
import decimal
import math
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

import psycopg

DEFAULT_FILES = [
    "string-functions", "regexp-functions", "date", "timestamp", "datetime-special", "cast",
    "decimalArithmeticOperations", "math", "json-functions", "array", "map",
    "higher-order-functions", "group-by", "grouping_set", "group-analytics", "window", "pivot",
    "cte", "union", "except", "intersect-all", "try_arithmetic", "try_cast", "try_aggregates",
    "try_element_at", "conditional-functions", "null-handling", "literals", "interval",
    "order-by-nulls-ordering",
]
DEFAULT_DIR = pathlib.Path.home() / ".cache" / "lakegres" / "spark-sql-tests"
SESSION_ZONE = "America/Los_Angeles"


# ---------------------------------------------------------------------------
# Golden files


class Golden:
    __slots__ = ("n", "sql", "schema", "output", "is_error", "error_class", "types")

    def __init__(self, n, sql, schema, output):
        self.n = n
        self.sql = sql
        self.schema = schema
        self.output = output
        self.is_error = schema == "struct<>" and output != ""
        self.error_class = None
        if self.is_error:
            m = re.search(r'"errorClass" : "([^"]+)"', output)
            self.error_class = m.group(1) if m else None
        self.types = parse_schema(schema) if not self.is_error else None


def jrstrip(s):
    """Java's replaceAll("\\s+$", ""): Python's rstrip() would also take
    \\x1c-\\x1f and other Unicode spaces."""
    return re.sub(r"[ \t\n\x0b\f\r]+\Z", "", s)


def read_golden(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    out = []
    for n, block in enumerate(re.split(r"(?m)^-- !query\n", text)[1:], 1):
        m = re.match(r"(.*?)\n-- !query schema\n(.*?)\n-- !query output\n?(.*)\Z", block, re.S)
        if not m:
            continue
        sql, schema, output = m.groups()
        # SQLQueryTestSuite strips trailing whitespace off the whole output.
        out.append(Golden(n, sql, schema.strip(), jrstrip(output)))
    return out


# Spark catalogString schemas: struct<name:type,...>; names may hold any
# character, so fields are found by trying each ':' until a type parses.

_PRIM = re.compile(
    r"interval(?: (?:year|month|day|hour|minute|second)(?: to (?:year|month|day|hour|minute|second))?)?"
    r"|[a-z_]+(?:\(\d+(?:,\s*\d+)?\))?(?: collate [A-Za-z0-9_]+)?"
)


def _parse_type(s, i):
    if s.startswith("array<", i):
        t, j = _parse_type(s, i + 6)
        if j < len(s) and s[j] == ">":
            return ("array", t), j + 1
        raise ValueError
    if s.startswith("map<", i):
        k, j = _parse_type(s, i + 4)
        if j >= len(s) or s[j] != ",":
            raise ValueError
        v, j = _parse_type(s, j + 1)
        if j < len(s) and s[j] == ">":
            return ("map", k, v), j + 1
        raise ValueError
    if s.startswith("struct<", i):
        fields, j = _parse_fields(s, i + 7)
        return ("struct", fields), j
    m = _PRIM.match(s, i)
    if not m or m.end() == i:
        raise ValueError
    return m.group(0), m.end()


def _parse_fields(s, i):
    """Fields from i up to and including the closing '>'."""
    if i < len(s) and s[i] == ">":
        return [], i + 1
    j = s.find(":", i)
    while j != -1:
        try:
            t, k = _parse_type(s, j + 1)
            if k < len(s) and s[k] == ">":
                return [(s[i:j], t)], k + 1
            if k < len(s) and s[k] == ",":
                rest, end = _parse_fields(s, k + 1)
                return [(s[i:j], t)] + rest, end
        except ValueError:
            pass
        j = s.find(":", j + 1)
    raise ValueError


def parse_schema(schema):
    """Column types of a golden schema, or None when it does not parse."""
    if schema == "struct<>":
        return []
    try:
        if not schema.startswith("struct<"):
            return None
        fields, end = _parse_fields(schema, 7)
        if end != len(schema):
            return None
        return [t for _, t in fields]
    except (ValueError, RecursionError):
        return None


def is_complex(t):
    return isinstance(t, tuple)


# Spark's Hive-style text of nested values: arrays [a,b], maps {k:v},
# structs {"f":v}, strings "quoted" (no escaping), null as null.

def parse_hive(s, t):
    v, i = _hive_value(s, 0, t)
    if i != len(s):
        raise ValueError("trailing text")
    return v


def _hive_value(s, i, t, stops=",]}"):
    if s.startswith("null", i) and (i + 4 == len(s) or s[i + 4] in ",]}:"):
        return None, i + 4
    if is_complex(t):
        kind = t[0]
        if kind == "array":
            if s[i] != "[":
                raise ValueError
            i += 1
            items = []
            if s[i] == "]":
                return ("array", items), i + 1
            while True:
                v, i = _hive_value(s, i, t[1])
                items.append(v)
                if s[i] == "]":
                    return ("array", items), i + 1
                if s[i] != ",":
                    raise ValueError
                i += 1
        if kind == "map":
            if s[i] != "{":
                raise ValueError
            i += 1
            items = []
            if s[i] == "}":
                return ("map", items), i + 1
            while True:
                k, i = _hive_value(s, i, t[1], stops=":")
                if s[i] != ":":
                    raise ValueError
                v, i = _hive_value(s, i + 1, t[2])
                items.append((k, v))
                if s[i] == "}":
                    return ("map", items), i + 1
                if s[i] != ",":
                    raise ValueError
                i += 1
        if kind == "struct":
            if s[i] != "{":
                raise ValueError
            i += 1
            items = []
            for n, (name, ft) in enumerate(t[1]):
                key = '"' + name + '":'
                if not s.startswith(key, i):
                    raise ValueError
                v, i = _hive_value(s, i + len(key), ft)
                items.append((name, v))
                if n + 1 < len(t[1]):
                    if s[i] != ",":
                        raise ValueError
                    i += 1
            if s[i] != "}":
                raise ValueError
            return ("struct", items), i + 1
        raise ValueError
    if t.startswith("string") or t.startswith("char") or t.startswith("varchar"):
        if s[i] != '"':
            raise ValueError
        j = i + 1
        while True:
            j = s.index('"', j)
            if j + 1 == len(s) or s[j + 1] in ",]}:":
                return ("leaf", s[i + 1:j]), j + 1
            j += 1
    j = i
    while j < len(s) and s[j] not in stops:
        j += 1
    return ("leaf", s[i:j]), j


def render_cast_string(v):
    """A parsed Spark value as Spark's CAST(... AS STRING) writes it: how
    Lakegres sends maps, structs and arrays of arrays (as text)."""
    if v is None:
        return "null"
    kind = v[0]
    if kind == "leaf":
        return v[1]
    if kind == "array":
        return "[" + ", ".join(render_cast_string(x) for x in v[1]) + "]"
    if kind == "map":
        return "{" + ", ".join(render_cast_string(k) + " -> " + render_cast_string(x)
                               for k, x in v[1]) + "}"
    return "{" + ", ".join(render_cast_string(x) for _, x in v[1]) + "}"


# ---------------------------------------------------------------------------
# Lakegres values

PG_ARRAY_ELEM = {
    1000: 16, 1001: 17, 1002: 18, 1005: 21, 1007: 23, 1016: 20, 1021: 700, 1022: 701,
    1009: 25, 1015: 1043, 1014: 1042, 1182: 1082, 1115: 1114, 1185: 1184, 1231: 1700,
    1187: 1186, 1183: 1083, 199: 114, 3807: 3802,
}
PG_TYPE_NAME = {
    16: "bool", 17: "bytea", 18: "char", 20: "int8", 21: "int2", 23: "int4", 25: "text",
    700: "float4", 701: "float8", 705: "unknown", 1043: "varchar", 1042: "bpchar",
    1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz", 1186: "interval",
    1700: "numeric", 114: "json", 3802: "jsonb",
}


def type_name(oid):
    if oid in PG_ARRAY_ELEM:
        return type_name(PG_ARRAY_ELEM[oid]) + "[]"
    return PG_TYPE_NAME.get(oid, str(oid))


def parse_pg_array(s):
    """A Postgres array literal as nested lists of str / None."""
    if s.startswith("["):  # dimension decoration [1:2]={...}
        s = s[s.index("=") + 1:]
    v, i = _pg_array(s, 0)
    if i != len(s):
        raise ValueError
    return v


def _pg_array(s, i):
    if s[i] != "{":
        raise ValueError
    i += 1
    items = []
    if s[i] == "}":
        return items, i + 1
    while True:
        if s[i] == "{":
            v, i = _pg_array(s, i)
        elif s[i] == '"':
            j = i + 1
            buf = []
            while s[j] != '"':
                if s[j] == "\\":
                    j += 1
                buf.append(s[j])
                j += 1
            v, i = "".join(buf), j + 1
        else:
            j = i
            while s[j] not in ",}":
                j += 1
            raw = s[i:j]
            v, i = (None if raw.upper() == "NULL" else raw), j
        items.append(v)
        if s[i] == "}":
            return items, i + 1
        if s[i] != ",":
            raise ValueError
        i += 1


def trim_fraction(ts):
    """`10:00:00.500000` -> `10:00:00.5`, `.000000` dropped (Spark's form)."""
    m = re.match(r"^(.*\d{2}:\d{2}:\d{2})\.(\d+)$", ts)
    if not m:
        return ts
    frac = m.group(2).rstrip("0")
    return m.group(1) + ("." + frac if frac else "")


_TZ = None


def session_zone():
    global _TZ
    if _TZ is None:
        try:
            import zoneinfo
            _TZ = zoneinfo.ZoneInfo(SESSION_ZONE)
        except Exception:  # noqa: BLE001
            _TZ = False
    return _TZ


def timestamptz_to_session(s):
    """`2024-01-01 18:00:00+00` -> the same instant in the session zone."""
    m = re.match(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2}(?::?\d{2}){0,2})$", s)
    if not m:
        return trim_fraction(s)
    tz = session_zone()
    try:
        base, off = m.groups()
        sign = -1 if off[0] == "-" else 1
        parts = [int(p) for p in re.findall(r"\d{2}", off[1:])] + [0, 0]
        delta = datetime.timedelta(hours=parts[0], minutes=parts[1], seconds=parts[2])
        frac = ""
        if "." in base:
            base, frac = base.split(".")
        dt = datetime.datetime.strptime(base, "%Y-%m-%d %H:%M:%S")
        utc = (dt - sign * delta).replace(tzinfo=datetime.timezone.utc)
        if not tz:
            return trim_fraction(s[: m.start(2)])
        t = utc.astimezone(tz)  # strftime would print year 1 as "1"
        local = f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        return trim_fraction(local + ("." + frac if frac else ""))
    except (ValueError, OverflowError):
        return trim_fraction(m.group(1))


def parse_pg_interval(s):
    """Postgres-style interval text -> (months, days, micros)."""
    months = days = micros = 0
    rest = s.strip()
    for num, unit in re.findall(r"(-?\d+) (years?|mons?|days?)\b", rest):
        n = int(num)
        if unit.startswith("year"):
            months += 12 * n
        elif unit.startswith("mon"):
            months += n
        else:
            days += n
    rest = re.sub(r"(-?\d+) (years?|mons?|days?)\b", "", rest).strip()
    if rest:
        m = re.fullmatch(r"([+-]?)(\d+):(\d{2}):(\d{2})(?:\.(\d{1,9}))?", rest)
        if not m:
            raise ValueError(s)
        sign, h, mi, se, frac = m.groups()
        us = ((int(h) * 60 + int(mi)) * 60 + int(se)) * 1_000_000
        us += int((frac or "").ljust(6, "0")[:6] or 0)
        micros += -us if sign == "-" else us
    return months, days, micros


def _jdiv(a, b):  # Java's truncating division / remainder
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b > 0) else -q
    return q, a - q * b


def spark_interval(months, days, micros, style):
    if style == "ym":
        if days or micros:
            return None
        sign = "-" if months < 0 else ""
        return f"{sign}{abs(months) // 12}-{abs(months) % 12}"
    if style == "dt":
        if months:
            return None
        total = days * 86_400_000_000 + micros
        sign = "-" if total < 0 else ""
        t = abs(total)
        d, t = divmod(t, 86_400_000_000)
        h, t = divmod(t, 3_600_000_000)
        mi, t = divmod(t, 60_000_000)
        se, us = divmod(t, 1_000_000)
        return f"{sign}{d} {h:02d}:{mi:02d}:{se:02d}.{us:06d}000"
    # CalendarInterval.toString
    if months == 0 and days == 0 and micros == 0:
        return "0 seconds"
    parts = []
    if months:
        y, mo = _jdiv(months, 12)
        parts += [f"{y} years"] if y else []
        parts += [f"{mo} months"] if mo else []
    if days:
        parts.append(f"{days} days")
    if micros:
        h, rest = _jdiv(micros, 3_600_000_000)
        mi, rest = _jdiv(rest, 60_000_000)
        parts += [f"{h} hours"] if h else []
        parts += [f"{mi} minutes"] if mi else []
        if rest:
            sec = decimal.Decimal(rest).scaleb(-6).normalize()
            parts.append(f"{sec:f} seconds")
    return " ".join(parts)


def interval_style(stype, expected):
    if isinstance(stype, str) and stype.startswith("interval"):
        if stype == "interval":
            return "cal"
        return "ym" if re.match(r"interval (year|month)", stype) else "dt"
    if re.fullmatch(r"-?\d+-\d+", expected):
        return "ym"
    if re.fullmatch(r"-?\d+ \d{2}:\d{2}:\d{2}\.\d{9}", expected):
        return "dt"
    return "cal"


def to_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def floats_equal(a, b, f32=False):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    if f32:
        try:
            return struct.pack("<f", a) == struct.pack("<f", b)
        except OverflowError:
            return False
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)


def leaf_equal(got, oid, exp, stype):
    """One scalar: Lakegres' text `got` (None: NULL) of Postgres type `oid`
    against Spark's text `exp` (None: null) of Spark type `stype`."""
    if got is None or exp is None:
        return got is None and exp is None
    if got == exp:
        return True
    if oid == 16:
        return {"t": "true", "f": "false"}.get(got, got) == exp
    sfloat = isinstance(stype, str) and stype in ("double", "float")
    if oid in (700, 701) or sfloat:
        a, b = to_float(got), to_float(exp)
        if a is not None and b is not None:
            return floats_equal(a, b, f32=(oid == 700 or stype == "float"))
        return False
    if oid in (20, 21, 23, 1700):
        if "e" in got.lower() or "e" in exp.lower():
            try:
                return decimal.Decimal(got) == decimal.Decimal(exp)
            except decimal.InvalidOperation:
                return False
        return False
    if oid == 1114:
        return trim_fraction(got) == exp
    if oid == 1184:
        return timestamptz_to_session(got) == exp
    if oid == 1186:
        try:
            return spark_interval(*parse_pg_interval(got), interval_style(stype, exp)) == exp
        except ValueError:
            return False
    if oid == 17 and got.startswith("\\x"):
        # Spark prints BINARY as its bytes read as UTF-8 (the default
        # spark.sql.binaryOutputStyle), or, in some files, as [1, -2, ...].
        bs = bytes.fromhex(got[2:])
        return (bs.decode("utf-8", "replace") == exp
                or "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bs) + "]" == exp)
    return False


def tree_equal(pg, sp, elem_oid, stype):
    """A parsed Postgres array against a parsed Spark value."""
    if pg is None or sp is None:
        return pg is None and sp is None
    if isinstance(pg, list):
        if sp[0] != "array" or len(pg) != len(sp[1]):
            return False
        et = stype[1] if is_complex(stype) else None
        return all(tree_equal(a, b, elem_oid, et) for a, b in zip(pg, sp[1]))
    if sp[0] != "leaf":
        return False
    return leaf_equal(pg, elem_oid, sp[1], stype)


def cell_equal(got, oid, exp, stype):
    """A top-level cell. `exp` is Spark's text (`NULL` for null)."""
    if got is None:
        return exp == "NULL"
    if got == exp:
        return True
    if oid in PG_ARRAY_ELEM or (is_complex(stype) and oid in (25, 1043)):
        if not is_complex(stype) or exp == "NULL":
            return False
        try:
            sp = parse_hive(exp, stype)
        except (ValueError, IndexError):
            return False
        if oid in PG_ARRAY_ELEM:
            try:
                pg = parse_pg_array(got)
            except (ValueError, IndexError):
                return False
            return tree_equal(pg, sp, PG_ARRAY_ELEM[oid], stype)
        return render_cast_string(sp) == got
    return leaf_equal(got, oid, exp, stype)


def normal_text(got, oid):
    """A readable Spark-ish text of a Lakegres cell (for sorting and reports)."""
    if got is None:
        return "NULL"
    if oid == 16:
        return {"t": "true", "f": "false"}.get(got, got)
    if oid == 1114:
        return trim_fraction(got)
    if oid == 1184:
        return timestamptz_to_session(got)
    if oid == 17 and got.startswith("\\x"):
        try:
            return bytes.fromhex(got[2:]).decode("utf-8", "replace")
        except ValueError:
            return got
    return got


# ---------------------------------------------------------------------------
# Comparing results


def has_outer_order_by(sql):
    s = re.sub(r"--[^\n]*", " ", sql)
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    s = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", "''", s)
    depth = 0
    flat = []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        flat.append(ch if depth == 0 else " ")
    return re.search(r"(?i)\border\s+by\b", "".join(flat)) is not None


def rows_match(exp_row, got_row, oids, types, last_line):
    if len(exp_row) != len(got_row):
        # SQLQueryTestSuite strips trailing whitespace: the last line may
        # have lost trailing empty cells.
        if not (last_line and len(exp_row) < len(got_row)):
            return False
        exp_row = exp_row + [""] * (len(got_row) - len(exp_row))
    for i, (e, g) in enumerate(zip(exp_row, got_row)):
        oid = oids[i] if i < len(oids) else 25
        t = types[i] if types and i < len(types) else None
        if last_line and i == len(got_row) - 1 and g is not None:
            if cell_equal(jrstrip(g), oid, e, t):
                continue
        if not cell_equal(g, oid, e, t):
            return False
    return True


def compare(golden, got_rows, oids, ordered):
    """(equal, note). Matches Spark's lines with Lakegres' rows."""
    exp_lines = golden.output.split("\n") if golden.output != "" else []
    types = golden.types if golden.types is not None and len(golden.types) == len(oids) else None
    if not exp_lines:
        if not got_rows:
            return True, ""
        if len(got_rows) == 1 and all(c is not None and jrstrip(normal_text(c, o)) == ""
                                      for c, o in zip(got_rows[0], oids)):
            return True, ""
        return False, f"expected no rows, got {len(got_rows)}"
    exp_rows = [ln.split("\t") for ln in exp_lines]
    if len(exp_rows) != len(got_rows):
        # A value holding a newline spans lines: compare the whole text.
        text = jrstrip("\n".join("\t".join(normal_text(c, o) for c, o in zip(r, oids)) for r in got_rows))
        if text == golden.output or sorted(text.split("\n")) == sorted(exp_lines):
            return True, ""
        return False, f"row count: expected {len(exp_rows)}, got {len(got_rows)}"
    n = len(exp_rows)
    if ordered:
        if all(rows_match(e, g, oids, types, i == n - 1) for i, (e, g) in enumerate(zip(exp_rows, got_rows))):
            return True, ""
    # Multiset: exact normalised text first, then cell by cell.
    pool = collections.defaultdict(list)
    for j, g in enumerate(got_rows):
        pool["\t".join(normal_text(c, o) for c, o in zip(g, oids))].append(j)
    used = [False] * len(got_rows)
    unmatched = []
    for i, e in enumerate(exp_rows):
        cand = pool.get(exp_lines[i])
        if cand:
            used[cand.pop()] = True
        else:
            unmatched.append(i)
    for i in unmatched:
        for j, g in enumerate(got_rows):
            if not used[j] and rows_match(exp_rows[i], g, oids, types, i == n - 1):
                used[j] = True
                break
        else:
            return False, ""
    return (False, "same rows, different order") if ordered else (True, "")


# ---------------------------------------------------------------------------
# The server


def server_binary():
    if os.environ.get("LAKEGRES_BIN"):
        return os.environ["LAKEGRES_BIN"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    return os.path.join(target, "debug", "lakegres")


class Server:
    def __init__(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="lakegres-golden-"))
        self.proc = subprocess.Popen(
            [server_binary(), "--listen", "127.0.0.1:0", "--warehouse", str(self.dir / "warehouse")],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn,lakegres=info"), "NO_COLOR": "1"},
            text=True,
            errors="replace",
        )
        self.port = None
        self.log_tail = collections.deque(maxlen=50)
        for line in self.proc.stderr:
            self.log_tail.append(line)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+),", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.wait()
            raise RuntimeError("the server did not start:\n" + "".join(self.log_tail))
        threading.Thread(target=self._drain, daemon=True).start()
        self.conn = psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=tester dbname=lakegres",
            autocommit=True, connect_timeout=30)

    def _drain(self):
        for line in self.proc.stderr:
            self.log_tail.append(line)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Outcome:
    __slots__ = ("rows", "oids", "error", "sqlstate", "seconds")

    def __init__(self):
        self.rows = None
        self.oids = []
        self.error = None
        self.sqlstate = None
        self.seconds = 0.0


def run_one(server, sql, timeout):
    out = Outcome()
    fired = threading.Event()
    done = threading.Event()
    killed = threading.Event()

    def on_timeout():
        fired.set()

        def cancel():
            try:
                server.conn.cancel_safe(timeout=3)
            except Exception:  # noqa: BLE001
                pass

        threading.Thread(target=cancel, daemon=True).start()
        # Not answered 5 s after the cancel request: kill the server (the
        # runner starts another one).
        if not done.wait(5) and server.proc.poll() is None:
            killed.set()
            server.proc.kill()

    timer = threading.Timer(timeout, on_timeout)
    timer.daemon = True
    start = time.monotonic()
    timer.start()
    try:
        cur = server.conn.cursor()
        cur.execute(sql, prepare=False)
        res = cur.pgresult
        if cur.description is not None and res is not None:
            out.oids = [d.type_code for d in cur.description]
            rows = []
            for i in range(res.ntuples):
                row = []
                for j in range(res.nfields):
                    v = res.get_value(i, j)
                    row.append(None if v is None else bytes(v).decode("utf-8", "replace"))
                rows.append(row)
            out.rows = rows
        else:
            out.rows = []
        cur.close()
    except psycopg.Error as e:
        out.sqlstate = e.sqlstate or ("TIMEOUT" if fired.is_set() else "CONNECTION")
        msg = (e.diag.message_primary if e.diag and e.diag.message_primary else str(e)) or type(e).__name__
        out.error = msg
        if fired.is_set():
            out.sqlstate = "TIMEOUT"
            how = "server killed" if killed.is_set() else "cancelled"
            out.error = f"no answer in {timeout:g} s ({how}): " + msg
    finally:
        done.set()
        timer.cancel()
        out.seconds = time.monotonic() - start
    return out


# ---------------------------------------------------------------------------
# Running a file


def is_spark_config(sql):
    s = re.sub(r"--[^\n]*", " ", sql).strip().lower()
    return bool(re.match(r"(set\s+spark\.|reset\b)", s))


# Configurations whose change does not change a query's answer.
INERT_CONFIGS = ("spark.sql.optimizer.excludedrules", "spark.sql.codegen.",
                 "spark.sql.optimizer.windowgrouplimitthreshold")


# Configurations that change the answer of few queries (they are counted,
# with a note): spark.sql.groupByAliases=false only rejects GROUP BY <alias>.
NARROW_CONFIGS = {"spark.sql.groupbyaliases"}


class SparkConfig:
    """Which non-default Spark configurations a file has set: the first value
    a file sets for a key is taken as not the default, a different later
    value as restoring it (the golden files set and then unset)."""

    def __init__(self):
        self.first = {}
        self.active = set()

    def see(self, sql):
        s = re.sub(r"--[^\n]*", " ", sql).strip().rstrip(";").strip()
        if re.match(r"(?i)reset\b", s):
            self.active.clear()
            return
        m = re.match(r"(?is)set\s+(spark\.[\w.]+)\s*=\s*(.*)", s)
        if not m:
            return
        key, value = m.group(1).lower(), m.group(2).strip().lower()
        if key.startswith(INERT_CONFIGS):
            return
        self.first.setdefault(key, value)
        if value == self.first[key]:
            self.active.add(key)
        else:
            self.active.discard(key)


NONDETERMINISTIC = re.compile(
    r"(?i)\b(rand|randn|random|uuid|shuffle|now|current_timestamp|current_date|localtimestamp|"
    r"current_time|curdate|unix_timestamp|monotonically_increasing_id)\s*\(")


def first_line(s):
    return (s or "").strip().split("\n")[0][:300]


class Result:
    def __init__(self, file, golden, status, outcome, note=""):
        self.file = file
        self.golden = golden
        self.status = status
        self.outcome = outcome
        self.note = note


def start_server(setup_replay):
    srv = Server()
    try:
        srv.conn.execute(f"SET TIME ZONE '{SESSION_ZONE}'", prepare=False)
    except psycopg.Error:
        pass
    for sql in setup_replay:
        try:
            srv.conn.execute(sql, prepare=False)
        except psycopg.Error:
            pass
    return srv


def run_file(name, goldens, timeout, progress):
    results = []
    replay = []  # commands that succeeded, replayed after a restart
    failed_setup = False
    config = SparkConfig()
    srv = start_server([])
    try:
        for g in goldens:
            if not srv.alive():
                srv.stop()
                srv = start_server(replay)
            o = run_one(srv, g.sql, timeout)
            if o.error is not None and not srv.alive():
                o.error = (o.error or "") + " [server exited]"
                if o.sqlstate not in ("TIMEOUT",):
                    tail = "".join(list(srv.log_tail)[-5:]).strip()
                    o.error += (" log: " + tail[-400:]) if tail else ""
            elif o.error is not None and srv.conn.closed:
                pass
            if srv.conn.closed or not srv.alive():
                srv.stop()
                srv = start_server(replay)

            note = ""
            if is_spark_config(g.sql):
                config.see(g.sql)
                status = "skip"
                if o.error is None and g.schema == "struct<>":
                    replay.append(g.sql)
            elif config.active - NARROW_CONFIGS:
                status = "skip"
                note = "under " + ", ".join(sorted(config.active))
                if o.error is None and g.schema == "struct<>" and g.output == "":
                    replay.append(g.sql)
            elif g.is_error:
                status = "pass" if o.error is not None else "unexpected_rows"
            elif g.schema == "struct<>" and g.output == "":
                if o.error is None:
                    status = "pass"
                    replay.append(g.sql)
                else:
                    status = "error"
                    failed_setup = True
            elif o.error is not None:
                status = "error"
                if failed_setup and re.search(r"(?i)TABLE_OR_VIEW_NOT_FOUND|not found|does not exist", o.error):
                    note = "after a failed setup command"
            else:
                eq, note = compare(g, o.rows, o.oids, has_outer_order_by(g.sql))
                status = "pass" if eq else "wrong"
                if not eq and NONDETERMINISTIC.search(g.sql):
                    note = "; ".join(x for x in [note, "nondeterministic function"] if x)
            if status != "skip" and config.active:
                note = "; ".join(x for x in [note, "under " + ", ".join(sorted(config.active))] if x)
            results.append(Result(name, g, status, o, note))
            progress(g, status, o)
    finally:
        srv.stop()
    return results


# ---------------------------------------------------------------------------
# Reports

STATUSES = ["pass", "wrong", "error", "unexpected_rows", "skip"]


def summarise(files, all_results):
    lines = []
    head = "| file | queries | pass | wrong | error | unexpected_rows | skip | pass % |"
    lines += [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    tot = collections.Counter()
    for f in files:
        rs = all_results.get(f)
        if rs is None:
            lines.append(f"| {f} | (missing) | | | | | | |")
            continue
        c = collections.Counter(r.status for r in rs)
        counted = sum(c[s] for s in STATUSES[:4])
        tot.update(c)
        pct = 100.0 * c["pass"] / counted if counted else 0.0
        lines.append(f"| {f} | {counted} | {c['pass']} | {c['wrong']} | {c['error']} | "
                     f"{c['unexpected_rows']} | {c['skip']} | {pct:.1f} |")
    counted = sum(tot[s] for s in STATUSES[:4])
    pct = 100.0 * tot["pass"] / counted if counted else 0.0
    lines.append(f"| **total** | {counted} | {tot['pass']} | {tot['wrong']} | {tot['error']} | "
                 f"{tot['unexpected_rows']} | {tot['skip']} | {pct:.1f} |")

    flat = [r for f in files for r in all_results.get(f, [])]
    both_err = [r for r in flat if r.golden.is_error and r.status == "pass" and r.golden.error_class]
    full = sum(1 for r in both_err if r.golden.error_class in (r.outcome.error or ""))
    top = sum(1 for r in both_err if r.golden.error_class.split(".")[0] in (r.outcome.error or ""))
    spark_ok_rows = [r for r in flat if not r.golden.is_error and r.golden.schema != "struct<>"]
    lines += [
        "",
        f"Spark error, Lakegres error: {sum(1 for r in flat if r.golden.is_error and r.status == 'pass')} "
        f"(of {sum(1 for r in flat if r.golden.is_error)} Spark errors); with a Spark errorClass: "
        f"{len(both_err)}, of which Lakegres' message names the errorClass: {full} "
        f"(its top-level class: {top}).",
        f"Queries where Spark returns rows: {len(spark_ok_rows)}; same rows: "
        f"{sum(1 for r in spark_ok_rows if r.status == 'pass')}; wrong: "
        f"{sum(1 for r in spark_ok_rows if r.status == 'wrong')}; error: "
        f"{sum(1 for r in spark_ok_rows if r.status == 'error')}.",
        f"Wrong only in row order (outer ORDER BY): {sum(1 for r in flat if r.note.startswith('same rows, different order'))}; "
        f"errors after a failed setup command in the same file: "
        f"{sum(1 for r in flat if r.note.startswith('after a failed setup command'))}; "
        f"timeouts: {sum(1 for r in flat if r.outcome.sqlstate == 'TIMEOUT')}.",
    ]

    # Error causes: SQLSTATE + message with literals masked.
    causes = collections.Counter()
    examples = {}
    for r in flat:
        if r.status != "error" or r.note.startswith("after a failed setup command"):
            continue
        key = f"{r.outcome.sqlstate} {mask(first_line(r.outcome.error))}"
        causes[key] += 1
        examples.setdefault(key, r)
    lines += ["", "Most common Lakegres errors where Spark succeeds (SQLSTATE, message with literals masked; "
              "not counting errors on a table or view a failed setup command of the file should have made):", ""]
    lines += ["| count | error | example |", "|---:|---|---|"]
    for key, n in causes.most_common(40):
        ex = examples[key]
        lines.append(f"| {n} | {md(key[:160])} | {ex.file}#{ex.golden.n}: {md(one_line(ex.golden.sql)[:90])} |")
    return "\n".join(lines)


def mask(s):
    s = re.sub(r"'[^']*'", "'…'", s)
    s = re.sub(r'"[^"]*"', '"…"', s)
    s = re.sub(r"`[^`]*`", "`…`", s)
    s = re.sub(r"\b\d+(\.\d+)?\b", "N", s)
    s = re.sub(r"No field named [\w.]+", "No field named …", s)
    return s


def md(s):
    return s.replace("|", "\\|").replace("\n", " ")


def one_line(s):
    return re.sub(r"\s+", " ", s).strip()


def write_details(path, files, all_results):
    with open(path, "w", encoding="utf-8") as out:
        for f in files:
            for r in all_results.get(f, []):
                if r.status not in ("wrong", "error", "unexpected_rows"):
                    continue
                g, o = r.golden, r.outcome
                out.write(f"=== {f}#{g.n} [{r.status}]" + (f" ({r.note})" if r.note else "") + "\n")
                out.write("query:\n" + indent(g.sql) + "\n")
                if g.is_error:
                    out.write("expected: error " + (g.error_class or first_line(g.output)) + "\n")
                else:
                    out.write(f"expected {g.schema}:\n" + indent(clip(g.output)) + "\n")
                if o.error is not None:
                    out.write(f"got: error {o.sqlstate}: {first_line(o.error)}\n")
                else:
                    out.write("got " + ", ".join(type_name(x) for x in o.oids) + ":\n")
                    text = "\n".join("\t".join(normal_text(c, t) for c, t in zip(row, o.oids)) for row in o.rows)
                    out.write(indent(clip(text)) + "\n")
                out.write("\n")


def write_audit(path, files, all_results):
    with open(path, "w", encoding="utf-8") as out:
        for f in files:
            for r in all_results.get(f, []):
                g, o = r.golden, r.outcome
                if r.status != "pass" or g.is_error or o.error is not None or g.output == "":
                    continue
                text = "\n".join("\t".join(normal_text(c, t) for c, t in zip(row, o.oids)) for row in o.rows)
                if jrstrip(text) == g.output or sorted(jrstrip(text).split("\n")) == sorted(g.output.split("\n")):
                    continue
                out.write(f"=== {f}#{g.n}\nquery:\n{indent(g.sql)}\nexpected {g.schema}:\n"
                          f"{indent(clip(g.output, 10))}\ngot " + ", ".join(type_name(x) for x in o.oids)
                          + f":\n{indent(clip(text, 10))}\n\n")


def indent(s):
    return "\n".join("    " + ln for ln in s.split("\n")) if s else "    (nothing)"


def clip(s, n=40):
    lines = s.split("\n")
    if len(lines) > n:
        lines = lines[:n] + [f"... ({len(lines) - n} more lines)"]
    return "\n".join(ln if len(ln) < 2000 else ln[:2000] + "…" for ln in lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", metavar="FILE", help="golden file names (e.g. string-functions)")
    ap.add_argument("--dir", default=os.environ.get("SPARK_GOLDEN_DIR", str(DEFAULT_DIR)),
                    help="directory holding results/ (or the results directory itself)")
    ap.add_argument("--out", help="write the summary (markdown) here")
    ap.add_argument("--details", help="write every wrong / error / unexpected_rows query here")
    ap.add_argument("--audit", help="write the passes whose text differs from Spark's before "
                    "normalising here (to check the normaliser)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per statement (default 20)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-query progress")
    args = ap.parse_args()

    base = pathlib.Path(args.dir).expanduser()
    results_dir = base / "results" if (base / "results").is_dir() else base
    files = [f[:-len(".sql.out")] if f.endswith(".sql.out") else f for f in (args.files or DEFAULT_FILES)]
    if not shutil.which(server_binary()) and not os.path.exists(server_binary()):
        sys.exit(f"no server binary at {server_binary()} (set LAKEGRES_BIN)")

    all_results = {}
    started = time.monotonic()
    for f in files:
        path = results_dir / f"{f}.sql.out"
        if not path.exists():
            print(f"{f}: no {path}", file=sys.stderr)
            continue
        goldens = read_golden(path)
        t0 = time.monotonic()
        counts = collections.Counter()

        def progress(g, status, o, f=f):
            counts[status] += 1
            if not args.quiet and status in ("wrong", "error", "unexpected_rows"):
                print(f"  {f}#{g.n} {status}: {one_line(g.sql)[:100]}"
                      + (f"  -> {o.sqlstate} {first_line(o.error)[:120]}" if o.error else ""),
                      file=sys.stderr, flush=True)

        all_results[f] = run_file(f, goldens, args.timeout, progress)
        print(f"{f}: {len(goldens)} queries, " + ", ".join(f"{k} {counts[k]}" for k in STATUSES if counts[k])
              + f" ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)

    summary = summarise(files, all_results)
    header = (f"# Lakegres against Spark SQLQueryTestSuite golden files\n\n"
              f"Golden files: {results_dir}; server: {server_binary()}; "
              f"{time.strftime('%Y-%m-%d %H:%M')}; {time.monotonic() - started:.0f} s.\n\n")
    if args.out:
        pathlib.Path(args.out).write_text(header + summary + "\n", encoding="utf-8")
    if args.details:
        write_details(args.details, files, all_results)
    if args.audit:
        write_audit(args.audit, files, all_results)
    print(summary)


if __name__ == "__main__":
    main()
