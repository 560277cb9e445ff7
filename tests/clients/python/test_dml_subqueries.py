"""DELETE and UPDATE whose condition holds subqueries (IN, NOT IN, EXISTS,
NOT EXISTS, scalar; correlated or not; under AND / OR / NOT), on partitioned
and unpartitioned tables, on a local warehouse and one in S3 (moto).

For every condition the expected rows are computed here, in Python, with
SQL's three-valued logic (a NULL in a NOT IN list matches nothing), not by
the server: the test then checks that a SELECT with the condition returns
the matched rows, that DELETE / UPDATE report that many rows, that the rest
of the table is untouched, that the statement made exactly one new version
(none when nothing matched), and that `deltalake` reads the same rows.

A fixed sweep covers each form the Databricks reference names (and the
ones it refuses: NOT IN inside an OR, nested subqueries, non-deterministic
conditions, which must fail with 0AKDC and leave no version); a seeded
generator adds random conditions over random small tables."""

import collections
import random

import deltalake
import psycopg
import pytest

from test_security import start

# ---------------------------------------------------------------- conditions
# A condition is a tree; `sql` renders it, `holds` evaluates it on one target
# row (a dict) against the staging rows with NULL as None.


def _and(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a, b):
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _not(a):
    return None if a is None else not a


def _cmp(a, b, op):
    if a is None or b is None:
        return None
    return {"=": a == b, "<": a < b, ">": a > b}[op]


def _in(x, values):
    if not values:
        return False
    if x is None:
        return None
    if any(v == x for v in values if v is not None):
        return True
    return None if any(v is None for v in values) else False


class Atom:
    def __init__(self, sql, fn, subquery=False, not_in=False):
        self.sql_text, self.fn, self.subquery, self.not_in = sql, fn, subquery, not_in

    def sql(self):
        return self.sql_text

    def holds(self, row, staging):
        return self.fn(row, staging)

    def refused_under_or(self):
        return False

    def has_not_in(self):
        return self.not_in


class Op:
    def __init__(self, op, *args):
        self.op, self.args = op, args

    def sql(self):
        if self.op == "NOT":
            return f"NOT ({self.args[0].sql()})"
        return f"({self.args[0].sql()}) {self.op} ({self.args[1].sql()})"

    def holds(self, row, staging):
        vals = [a.holds(row, staging) for a in self.args]
        if self.op == "NOT":
            return _not(vals[0])
        return _and(*vals) if self.op == "AND" else _or(*vals)

    def has_not_in(self):
        return any(a.has_not_in() for a in self.args)

    def refused_under_or(self):
        if self.op == "OR" and self.has_not_in():
            return True
        return any(a.refused_under_or() for a in self.args)


def w_filter(c):
    return (f" WHERE s.w > {c}", lambda s: s["w"] is not None and s["w"] > c) if c is not None else ("", lambda s: True)


def atom_in(c=None, negated=False):
    where, keep = w_filter(c)
    sql = f"t.id {'NOT IN' if negated else 'IN'} (SELECT s.id FROM s{where})"

    def fn(r, st):
        got = _in(r["id"], [s["id"] for s in st if keep(s)])
        return _not(got) if negated else got
    return Atom(sql, fn, subquery=True, not_in=negated)


def atom_exists(correlated=True, c=None, negated=False):
    where, keep = w_filter(c)
    cond = "s.id = t.id" if correlated else "s.k = 'a'"
    where = f" WHERE {cond}" + (where.replace(" WHERE", " AND") if where else "")

    def fn(r, st):
        if correlated:
            found = any(keep(s) and s["id"] is not None and s["id"] == r["id"] for s in st)
        else:
            found = any(keep(s) and s["k"] == "a" for s in st)
        return (not found) if negated else found
    return Atom(f"{'NOT ' if negated else ''}EXISTS (SELECT 1 FROM s{where})", fn, subquery=True)


def atom_scalar(correlated=False, op="="):
    if correlated:
        sql = f"t.v {op} (SELECT max(s.w) FROM s WHERE s.k = t.k)"

        def fn(r, st):
            ws = [s["w"] for s in st if s["k"] is not None and s["k"] == r["k"] and s["w"] is not None]
            return _cmp(r["v"], max(ws) if ws else None, op)
    else:
        sql = f"t.v {op} (SELECT max(s.w) FROM s)"

        def fn(r, st):
            ws = [s["w"] for s in st if s["w"] is not None]
            return _cmp(r["v"], max(ws) if ws else None, op)
    return Atom(sql, fn, subquery=True)


def atom_plain(kind, c):
    if kind == "v>":
        return Atom(f"t.v > {c}", lambda r, st: _cmp(r["v"], c, ">"))
    if kind == "k=":
        return Atom(f"t.k = '{c}'", lambda r, st: _cmp(r["k"], c, "="))
    if kind == "p=":
        return Atom(f"t.p = {c}", lambda r, st: _cmp(r["p"], c, "="))
    return Atom("t.id IS NULL", lambda r, st: r["id"] is None)


# ------------------------------------------------------------------ tables
TARGET_ROWS = [  # id, k, v, p — written in three INSERTs, so three files or more
    [(1, "a", 1, 1), (2, "b", 5, 1), (3, "a", 9, 2)],
    [(4, None, 4, 2), (None, "b", 7, 1), (2, "a", None, 2)],
    [(5, "c", 3, 1), (3, "b", 5, 2)],
]
STAGING = [(3, "a", 9), (2, "b", 4), (7, None, 1)]
STAGING_WITH_NULL = STAGING + [(None, "a", 6)]


def literal(v):
    if v is None:
        return "NULL"
    return f"'{v}'" if isinstance(v, str) else str(v)


def as_dicts(rows, names):
    return [dict(zip(names, r)) for r in rows]


class Warehouse:
    """One server; tables named by prefix; where `deltalake` finds them."""

    def __init__(self, dsn, root, options):
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.root, self.options = root, options

    def version(self, table):
        return self.conn.execute(f"DESCRIBE HISTORY {table} LIMIT 1").fetchone()[0]

    def delta_rows(self, table):
        t = deltalake.DeltaTable(f"{self.root}/default/{table}", storage_options=self.options)
        return collections.Counter(tuple(r[c] for c in ("id", "k", "v", "p")) for r in t.to_pyarrow_table().to_pylist())

    def rows(self, table):
        return collections.Counter(self.conn.execute(f"SELECT id, k, v, p FROM {table}").fetchall())

    def setup(self, table, partitioned, target, staging):
        c = self.conn
        c.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(f"CREATE TABLE {table} (id INT, k STRING, v INT, p INT)"
                  + (" PARTITIONED BY (p)" if partitioned else ""))
        for chunk in target:
            if chunk:
                c.execute(f"INSERT INTO {table} VALUES "
                          + ", ".join("(" + ", ".join(literal(x) for x in r) + ")" for r in chunk))
        c.execute(f"DROP TABLE IF EXISTS {table}_s")
        c.execute(f"CREATE TABLE {table}_s (id INT, k STRING, w INT)")
        if staging:
            c.execute(f"INSERT INTO {table}_s VALUES "
                      + ", ".join("(" + ", ".join(literal(x) for x in r) + ")" for r in staging))


def run_case(wh, table, op, cond, target, staging, partitioned=False, prepared=False):
    """Checks one DELETE or UPDATE of `cond` against the Python evaluation;
    a `prepared` table (made by `wh.setup`) is restored to its version
    before the statement afterwards, so the next case starts from it."""
    if not prepared:
        wh.setup(table, partitioned, target, staging)
    rows = [r for chunk in target for r in chunk]
    target_d = as_dicts(rows, ("id", "k", "v", "p"))
    staging_d = as_dicts(staging, ("id", "k", "w"))
    sql_cond = cond.sql().replace(" FROM s", f" FROM {table}_s AS s")
    matched = [r for r, d in zip(rows, target_d) if cond.holds(d, staging_d) is True]
    before = wh.version(table)
    what = f"{op} on {table} WHERE {sql_cond}"

    if cond.refused_under_or():
        stmt = (f"DELETE FROM {table} AS t WHERE {sql_cond}" if op == "DELETE"
                else f"UPDATE {table} AS t SET v = 0 WHERE {sql_cond}")
        with pytest.raises(psycopg.Error) as e:
            wh.conn.execute(stmt)
        assert e.value.sqlstate == "0AKDC", what
        assert "DELTA_UNSUPPORTED_SUBQUERY" in str(e.value), what
        assert wh.version(table) == before, what
        return

    selected = wh.conn.execute(f"SELECT id, k, v, p FROM {table} AS t WHERE {sql_cond}").fetchall()
    assert collections.Counter(selected) == collections.Counter(matched), f"SELECT of {what}"

    if op == "DELETE":
        cur = wh.conn.execute(f"DELETE FROM {table} AS t WHERE {sql_cond}")
        expected = collections.Counter(rows) - collections.Counter(matched)
    else:
        cur = wh.conn.execute(
            f"UPDATE {table} AS t SET v = t.v + 100, k = 'u' || t.k WHERE {sql_cond}")
        changed = [(i, None if k is None else "u" + k, None if v is None else v + 100, p) for (i, k, v, p) in matched]
        expected = collections.Counter(rows) - collections.Counter(matched) + collections.Counter(changed)
    assert cur.fetchone()[0] == len(matched), what
    assert wh.rows(table) == expected, what
    assert wh.version(table) == before + (1 if matched else 0), what
    assert wh.delta_rows(table) == expected, what
    if prepared and matched:
        wh.conn.execute(f"RESTORE TABLE {table} TO VERSION AS OF {before}")


# The forms the issue and the Databricks reference name.
SWEEP = [
    atom_in(),
    atom_in(negated=True),
    atom_in(c=3),
    atom_in(c=5, negated=True),
    atom_exists(),
    atom_exists(negated=True),
    atom_exists(correlated=False),
    atom_exists(correlated=False, negated=True),
    atom_exists(c=4),
    atom_scalar(),
    atom_scalar(op=">"),
    atom_scalar(correlated=True),
    atom_scalar(correlated=True, op="<"),
    Op("AND", atom_exists(), atom_plain("v>", 0)),
    Op("OR", atom_in(), atom_plain("v>", 6)),
    Op("OR", atom_exists(negated=True), atom_plain("k=", "a")),
    Op("AND", atom_in(negated=True), atom_plain("p=", 1)),
    Op("AND", atom_in(negated=True), Op("OR", atom_plain("k=", "b"), atom_scalar(op=">"))),
    Op("NOT", atom_in()),
    Op("OR", atom_plain("v>", 8), atom_in(negated=True)),  # refused: NOT IN under OR
]


@pytest.fixture(scope="module")
def local(server):
    wh = Warehouse(server.dsn, server.warehouse, None)
    yield wh
    wh.conn.close()


@pytest.fixture(scope="module")
def s3(moto, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dml_s3")
    proc, port, log = start(moto.config(folder, "dml"))
    assert port, "".join(log)
    wh = Warehouse(f"host=127.0.0.1 port={port} dbname=lakegres user=tester",
                   f"s3://{moto.bucket}/wh", moto.storage_options)
    yield wh
    wh.conn.close()
    proc.terminate()
    proc.wait(timeout=30)


def sweep(wh, prefix, op, partitioned, stagings):
    for n, staging in enumerate(stagings):
        table = f"{prefix}_{op[0].lower()}{int(partitioned)}{n}"
        wh.setup(table, partitioned, TARGET_ROWS, staging)
        for cond in SWEEP:
            run_case(wh, table, op, cond, TARGET_ROWS, staging, partitioned, prepared=True)


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize("op", ["DELETE", "UPDATE"])
def test_subquery_sweep_local(local, op, partitioned):
    sweep(local, "sq", op, partitioned, (STAGING, STAGING_WITH_NULL))


# On S3 the partitioned table only: the flat one runs the same file rewrite
# as locally, and the S3 sweeps are the suite's slowest tests.
@pytest.mark.parametrize("op", ["DELETE", "UPDATE"])
def test_subquery_sweep_s3(s3, op):
    sweep(s3, "sq3", op, True, (STAGING_WITH_NULL,))


def random_condition(rng, depth=0):
    if depth >= 2 or rng.random() < 0.4:
        choice = rng.randrange(9)
        if choice == 0:
            return atom_in(c=rng.choice([None, 2, 5]))
        if choice == 1:
            return atom_in(c=rng.choice([None, 2, 5]), negated=True)
        if choice == 2:
            return atom_exists(correlated=rng.random() < 0.7, c=rng.choice([None, 3]), negated=rng.random() < 0.5)
        if choice == 3:
            return atom_scalar(correlated=rng.random() < 0.5, op=rng.choice(["=", "<", ">"]))
        if choice == 4:
            return atom_plain("v>", rng.randrange(0, 10))
        if choice == 5:
            return atom_plain("k=", rng.choice(["a", "b"]))
        if choice == 6:
            return atom_plain("p=", rng.choice([1, 2]))
        if choice == 7:
            return atom_plain("null", None)
        return atom_in(negated=rng.random() < 0.5)
    if rng.random() < 0.2:
        return Op("NOT", random_condition(rng, depth + 1))
    return Op(rng.choice(["AND", "OR"]), random_condition(rng, depth + 1), random_condition(rng, depth + 1))


def random_rows(rng, n, width):
    def value(col):
        if rng.random() < 0.15:
            return None
        return {"id": rng.randrange(1, 6), "k": rng.choice("abc"), "v": rng.randrange(0, 10),
                "w": rng.randrange(0, 10), "p": rng.randrange(1, 3)}[col]
    return [tuple(value(c) if c != "p" else rng.randrange(1, 3) for c in width) for _ in range(n)]


def test_random_conditions_match_select(local):
    rng = random.Random(18)
    for case in range(60):
        cond = random_condition(rng)
        target = [random_rows(rng, rng.randrange(0, 5), ("id", "k", "v", "p")) for _ in range(3)]
        staging = random_rows(rng, rng.randrange(0, 5), ("id", "k", "w"))
        op = rng.choice(["DELETE", "UPDATE"])
        run_case(local, f"sqr_{case}", op, cond, target, staging, partitioned=rng.random() < 0.5)


def test_refused_conditions_leave_no_version(local):
    local.setup("sq_refused", False, TARGET_ROWS, STAGING)
    c = local.conn
    before = local.version("sq_refused")
    for stmt, cls in [
        ("DELETE FROM sq_refused AS t WHERE t.id IN (SELECT s.id FROM sq_refused_s AS s "
         "WHERE s.w IN (SELECT w FROM sq_refused_s))", "DELTA_UNSUPPORTED_SUBQUERY"),
        ("UPDATE sq_refused AS t SET v = 0 WHERE EXISTS (SELECT 1 FROM sq_refused_s AS s "
         "WHERE s.id = t.id AND s.w > (SELECT min(w) FROM sq_refused_s))", "DELTA_UNSUPPORTED_SUBQUERY"),
        ("DELETE FROM sq_refused WHERE random() < 0.5", "DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED"),
        ("UPDATE sq_refused SET v = 1 WHERE v > random() * 10", "DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED"),
    ]:
        with pytest.raises(psycopg.Error) as e:
            c.execute(stmt)
        assert e.value.sqlstate == "0AKDC", stmt
        assert cls in str(e.value), stmt
    assert local.version("sq_refused") == before
    assert local.rows("sq_refused") == collections.Counter(r for chunk in TARGET_ROWS for r in chunk)


def test_explain_names_the_route_and_the_whole_condition(local):
    local.setup("sq_explain", True, TARGET_ROWS, STAGING)
    plans = dict(local.conn.execute(
        "EXPLAIN DELETE FROM sq_explain WHERE id IN (SELECT id FROM sq_explain_s)").fetchall())
    for kind in ("logical_plan", "physical_plan"):
        assert "DeltaDelete: table=default.sq_explain route=rewrite" in plans[kind], plans
        assert "predicate=sq_explain.id IN (<subquery>)" in plans[kind], plans
    plans = dict(local.conn.execute("EXPLAIN UPDATE sq_explain SET v = 1 WHERE p = 2").fetchall())
    assert "DeltaUpdate: table=default.sq_explain route=delta-rs" in plans["physical_plan"], plans
    assert "predicate=sq_explain.p = Int32(2)" in plans["physical_plan"], plans
