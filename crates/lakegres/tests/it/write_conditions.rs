//! Write conditions under SQL's three-valued logic (issue #56), generated.
//!
//! Random conditions built from columns, literals, NULL literals, driver
//! parameters (NULL or not, typed by the client or left to the server) and
//! AND / OR / NOT / IS [NOT] NULL / IN / `<=>`, on flat and partitioned
//! tables, with and without deletion vectors, go through every write path
//! that takes one: UPDATE and DELETE WHERE, MERGE's ON and clause
//! conditions (and parameters in its source, SET and INSERT values),
//! REPLACE WHERE / ON / USING, OPTIMIZE WHERE and COPY INTO's SELECT
//! filter. The rows each statement changes must be exactly those an in-test
//! three-valued evaluator selects, its result row must count them, and a
//! statement that changes nothing makes no version.
//!
//! `LAKEGRES_CONDITIONS_SEED` replays a run and `LAKEGRES_CONDITIONS_CASES`
//! sets its size; both are printed, with the statement of a failing case.

use std::cmp::Ordering;
use std::fmt::Write as _;

use bytes::BytesMut;
use tokio_postgres::types::{to_sql_checked, IsNull, Kind, ToSql, Type};

use crate::common::TestServer;

/// SplitMix64: a seeded generator, so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// A value of one of the table's condition columns.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(Option<i32>),
    Str(Option<&'static str>),
    Bool(Option<bool>),
}

impl Val {
    fn is_null(&self) -> bool {
        matches!(self, Val::Int(None) | Val::Str(None) | Val::Bool(None))
    }

    fn sql(&self) -> String {
        match self {
            Val::Int(Some(v)) => v.to_string(),
            Val::Str(Some(s)) => format!("'{s}'"),
            Val::Bool(Some(b)) => b.to_string(),
            Val::Int(None) => "CAST(NULL AS INT)".into(),
            Val::Str(None) => "CAST(NULL AS STRING)".into(),
            Val::Bool(None) => "CAST(NULL AS BOOLEAN)".into(),
        }
    }

    /// SQL's comparison: `None` when either side is NULL.
    fn compare(&self, other: &Val) -> Option<Ordering> {
        match (self, other) {
            (Val::Int(Some(a)), Val::Int(Some(b))) => Some(a.cmp(b)),
            (Val::Str(Some(a)), Val::Str(Some(b))) => Some(a.cmp(b)),
            (Val::Bool(Some(a)), Val::Bool(Some(b))) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// The columns conditions read. `p` is the partition column of the
/// partitioned layouts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    P,
    A,
    B,
    Flag,
}

const COLS: [Col; 4] = [Col::P, Col::A, Col::B, Col::Flag];

impl Col {
    fn name(self) -> &'static str {
        match self {
            Col::P => "p",
            Col::A => "a",
            Col::B => "b",
            Col::Flag => "flag",
        }
    }

    fn random_value(self, rng: &mut Rng, null_percent: u64) -> Val {
        let null = rng.chance(null_percent);
        match self {
            Col::P => Val::Str((!null).then(|| rng.pick(&["x", "y", "z"]))),
            Col::A => Val::Int((!null).then(|| rng.pick(&[1, 2, 3]))),
            Col::B => Val::Str((!null).then(|| rng.pick(&["u", "v"]))),
            Col::Flag => Val::Bool((!null).then(|| rng.pick(&[true, false]))),
        }
    }
}

/// A row of the target table (and of the sources, which have no
/// `touched`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    key: i32,
    p: Option<String>,
    a: Option<i32>,
    b: Option<String>,
    flag: Option<bool>,
    touched: i32,
}

impl Row {
    fn random(rng: &mut Rng, key: i32) -> Row {
        let text = |v: Val| match v {
            Val::Str(s) => s.map(str::to_string),
            _ => None,
        };
        Row {
            key,
            p: text(Col::P.random_value(rng, 25)),
            a: match Col::A.random_value(rng, 30) {
                Val::Int(v) => v,
                _ => None,
            },
            b: text(Col::B.random_value(rng, 30)),
            flag: match Col::Flag.random_value(rng, 30) {
                Val::Bool(v) => v,
                _ => None,
            },
            touched: 0,
        }
    }

    fn get(&self, col: Col) -> Val {
        let text = |s: &Option<String>| {
            Val::Str(s.as_deref().map(|s| match s {
                "x" => "x",
                "y" => "y",
                "z" => "z",
                "u" => "u",
                "v" => "v",
                other => panic!("unexpected value {other}"),
            }))
        };
        match col {
            Col::P => text(&self.p),
            Col::A => Val::Int(self.a),
            Col::B => text(&self.b),
            Col::Flag => Val::Bool(self.flag),
        }
    }

    /// The row as a VALUES tuple, every value typed.
    fn values_sql(&self, with_touched: bool) -> String {
        let mut s = format!(
            "({}, {}, {}, {}, {}",
            self.key,
            self.get(Col::P).sql(),
            self.get(Col::A).sql(),
            self.get(Col::B).sql(),
            self.get(Col::Flag).sql()
        );
        if with_touched {
            let _ = write!(s, ", {}", self.touched);
        }
        s.push(')');
        s
    }
}

/// Which relation a column is read from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    /// The target; written unqualified where the statement reads it alone.
    Target,
    Source,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    NotEq,
    Lt,
    GtEq,
    NullSafeEq,
}

impl Op {
    fn sql(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::NotEq => "<>",
            Op::Lt => "<",
            Op::GtEq => ">=",
            Op::NullSafeEq => "<=>",
        }
    }

    fn eval(self, l: &Val, r: &Val) -> Option<bool> {
        if self == Op::NullSafeEq {
            return Some(match (l.is_null(), r.is_null()) {
                (true, true) => true,
                (false, false) => l.compare(r) == Some(Ordering::Equal),
                _ => false,
            });
        }
        let order = l.compare(r)?;
        Some(match self {
            Op::Eq => order == Ordering::Equal,
            Op::NotEq => order != Ordering::Equal,
            Op::Lt => order == Ordering::Less,
            Op::GtEq => order != Ordering::Less,
            Op::NullSafeEq => unreachable!(),
        })
    }
}

/// The right side of a comparison.
#[derive(Debug, Clone)]
enum Operand {
    Lit(Val),
    /// The untyped `NULL` literal.
    Null,
    /// `$n`, the n-th (from 1) of the case's parameters.
    Param(usize),
}

/// A generated condition.
#[derive(Debug, Clone)]
enum Cond {
    Cmp(Side, Col, Op, Operand),
    /// `t.c op s.c`.
    Cols(Col, Op),
    IsNull(Side, Col, bool),
    In(Side, Col, Vec<Operand>, bool),
    /// The boolean column itself.
    Flag(Side),
    Lit(Option<bool>),
    /// `1 = 1` / `1 = 0`.
    Const(bool),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

/// How a statement names the target's columns.
#[derive(Debug, Clone, Copy)]
struct Qualifiers {
    target: Option<&'static str>,
    source: &'static str,
}

const UNQUALIFIED: Qualifiers = Qualifiers {
    target: None,
    source: "s",
};
const BOTH: Qualifiers = Qualifiers {
    target: Some("t"),
    source: "s",
};

impl Cond {
    fn sql(&self, q: Qualifiers) -> String {
        let column = |side: Side, col: Col| match (side, q.target) {
            (Side::Target, None) => col.name().to_string(),
            (Side::Target, Some(t)) => format!("{t}.{}", col.name()),
            (Side::Source, _) => format!("{}.{}", q.source, col.name()),
        };
        let operand = |o: &Operand| match o {
            Operand::Lit(v) => v.sql(),
            Operand::Null => "NULL".to_string(),
            Operand::Param(i) => format!("${i}"),
        };
        match self {
            Cond::Cmp(side, col, op, rhs) => {
                format!("{} {} {}", column(*side, *col), op.sql(), operand(rhs))
            }
            Cond::Cols(col, op) => format!(
                "{} {} {}",
                column(Side::Target, *col),
                op.sql(),
                column(Side::Source, *col)
            ),
            Cond::IsNull(side, col, negated) => format!(
                "{} IS {}NULL",
                column(*side, *col),
                if *negated { "NOT " } else { "" }
            ),
            Cond::In(side, col, list, negated) => format!(
                "{} {}IN ({})",
                column(*side, *col),
                if *negated { "NOT " } else { "" },
                list.iter().map(operand).collect::<Vec<_>>().join(", ")
            ),
            Cond::Flag(side) => column(*side, Col::Flag),
            Cond::Lit(Some(b)) => b.to_string(),
            Cond::Lit(None) => "NULL".to_string(),
            Cond::Const(true) => "1 = 1".to_string(),
            Cond::Const(false) => "1 = 0".to_string(),
            Cond::Not(c) => format!("NOT ({})", c.sql(q)),
            Cond::And(l, r) => format!("({}) AND ({})", l.sql(q), r.sql(q)),
            Cond::Or(l, r) => format!("({}) OR ({})", l.sql(q), r.sql(q)),
        }
    }

    /// Three-valued evaluation over a target row and a source row.
    fn eval(&self, target: Option<&Row>, source: Option<&Row>, params: &[Val]) -> Option<bool> {
        let row = |side: Side| match side {
            Side::Target => target.expect("a target row"),
            Side::Source => source.expect("a source row"),
        };
        let value = |o: &Operand, like: &Val| match o {
            Operand::Lit(v) => v.clone(),
            Operand::Null => match like {
                Val::Int(_) => Val::Int(None),
                Val::Str(_) => Val::Str(None),
                Val::Bool(_) => Val::Bool(None),
            },
            Operand::Param(i) => params[i - 1].clone(),
        };
        match self {
            Cond::Cmp(side, col, op, rhs) => {
                let l = row(*side).get(*col);
                let r = value(rhs, &l);
                op.eval(&l, &r)
            }
            Cond::Cols(col, op) => {
                op.eval(&row(Side::Target).get(*col), &row(Side::Source).get(*col))
            }
            Cond::IsNull(side, col, negated) => Some(row(*side).get(*col).is_null() != *negated),
            Cond::In(side, col, list, negated) => {
                let l = row(*side).get(*col);
                let mut result = Some(false);
                for item in list {
                    match Op::Eq.eval(&l, &value(item, &l)) {
                        Some(true) => {
                            result = Some(true);
                            break;
                        }
                        None => result = None,
                        Some(false) => {}
                    }
                }
                if *negated {
                    result.map(|b| !b)
                } else {
                    result
                }
            }
            Cond::Flag(side) => match row(*side).get(Col::Flag) {
                Val::Bool(b) => b,
                _ => unreachable!(),
            },
            Cond::Lit(b) => *b,
            Cond::Const(b) => Some(*b),
            Cond::Not(c) => c.eval(target, source, params).map(|b| !b),
            Cond::And(l, r) => {
                match (
                    l.eval(target, source, params),
                    r.eval(target, source, params),
                ) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }
            }
            Cond::Or(l, r) => {
                match (
                    l.eval(target, source, params),
                    r.eval(target, source, params),
                ) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }
            }
        }
    }
}

/// A driver parameter: its value, and the type the client declares for it
/// (`None`: left to the server, as psycopg's and pgjdbc's untyped
/// parameters are).
#[derive(Debug, Clone)]
struct Param {
    value: Val,
    declared: Option<Type>,
}

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.value {
            Val::Int(Some(v)) => match *ty {
                Type::INT2 => (*v as i16).to_sql(ty, out),
                Type::INT4 => v.to_sql(ty, out),
                Type::INT8 => i64::from(*v).to_sql(ty, out),
                _ => v.to_string().as_str().to_sql(&Type::TEXT, out),
            },
            Val::Str(Some(s)) => s.to_sql(&Type::TEXT, out),
            Val::Bool(Some(b)) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                _ => b.to_string().as_str().to_sql(&Type::TEXT, out),
            },
            _ => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// The type oid 0: a parameter the client leaves to the server.
fn unspecified() -> Type {
    Type::new("unspecified".into(), 0, Kind::Pseudo, "pg_catalog".into())
}

/// What one generated case builds while it makes its conditions.
struct Builder<'r> {
    rng: &'r mut Rng,
    params: Vec<Param>,
    /// Whether parameters may appear (COPY INTO, OPTIMIZE take none).
    allow_params: bool,
}

impl Builder<'_> {
    fn operand(&mut self, col: Col) -> Operand {
        match self.rng.below(10) {
            0 => Operand::Null,
            1..=3 if self.allow_params => {
                let value = col.random_value(self.rng, 40);
                let declared = match self.rng.below(3) {
                    0 => None,
                    // `unknown` by name (705) or by leaving it unspecified
                    // (0), as psycopg and pgjdbc send text parameters.
                    1 => Some(self.rng.pick(&[Type::UNKNOWN, unspecified()])),
                    _ => Some(match value {
                        Val::Int(_) => self.rng.pick(&[Type::INT4, Type::INT8]),
                        Val::Str(_) => self.rng.pick(&[Type::TEXT, Type::VARCHAR]),
                        Val::Bool(_) => Type::BOOL,
                    }),
                };
                self.params.push(Param { value, declared });
                Operand::Param(self.params.len())
            }
            // A typed NULL: `CAST(NULL AS INT)`.
            4 => Operand::Lit(col.random_value(self.rng, 100)),
            _ => Operand::Lit(col.random_value(self.rng, 0)),
        }
    }

    /// A condition over `sides` (the first is the one single-sided
    /// conditions read).
    fn cond(&mut self, sides: &[Side], depth: usize) -> Cond {
        let side = self.rng.pick(sides);
        let col = self.rng.pick(&COLS);
        if depth > 0 && self.rng.chance(45) {
            return match self.rng.below(3) {
                0 => Cond::Not(Box::new(self.cond(sides, depth - 1))),
                1 => Cond::And(
                    Box::new(self.cond(sides, depth - 1)),
                    Box::new(self.cond(sides, depth - 1)),
                ),
                _ => Cond::Or(
                    Box::new(self.cond(sides, depth - 1)),
                    Box::new(self.cond(sides, depth - 1)),
                ),
            };
        }
        match self.rng.below(20) {
            0..=7 => {
                let op = if col == Col::Flag {
                    self.rng.pick(&[Op::Eq, Op::NotEq, Op::NullSafeEq])
                } else {
                    self.rng
                        .pick(&[Op::Eq, Op::NotEq, Op::Lt, Op::GtEq, Op::NullSafeEq])
                };
                Cond::Cmp(side, col, op, self.operand(col))
            }
            8 if sides.len() == 2 => Cond::Cols(col, self.rng.pick(&[Op::Eq, Op::NullSafeEq])),
            8..=10 => Cond::IsNull(side, col, self.rng.chance(50)),
            11..=13 => {
                let n = 1 + self.rng.below(3);
                let list = (0..n).map(|_| self.operand(col)).collect();
                Cond::In(side, col, list, self.rng.chance(50))
            }
            14 | 15 => Cond::Flag(side),
            16 | 17 => Cond::Lit(self.rng.pick(&[Some(true), Some(false), None])),
            _ => Cond::Const(self.rng.chance(50)),
        }
    }

    /// A condition on the partition column alone, as OPTIMIZE takes one:
    /// comparisons with literals joined by AND.
    fn partition_cond(&mut self) -> Cond {
        let atom = |b: &mut Self| -> Cond {
            let operand = |b: &mut Self| match b.rng.below(6) {
                0 => Operand::Null,
                _ => Operand::Lit(Col::P.random_value(b.rng, 0)),
            };
            if b.rng.chance(30) {
                let n = 1 + b.rng.below(3);
                let list = (0..n).map(|_| operand(b)).collect();
                Cond::In(Side::Target, Col::P, list, b.rng.chance(40))
            } else {
                let op = b.rng.pick(&[Op::Eq, Op::NotEq, Op::Lt, Op::GtEq]);
                Cond::Cmp(Side::Target, Col::P, op, operand(b))
            }
        };
        let first = atom(self);
        if self.rng.chance(30) {
            Cond::And(Box::new(first), Box::new(atom(self)))
        } else {
            first
        }
    }

    fn values(&self) -> Vec<Val> {
        self.params.iter().map(|p| p.value.clone()).collect()
    }
}

/// A table layout.
#[derive(Debug, Clone, Copy)]
struct Layout {
    partitioned: bool,
    deletion_vectors: bool,
}

impl Layout {
    fn ddl(self, table: &str) -> String {
        format!(
            "CREATE TABLE {table} (key INT, p STRING, a INT, b STRING, flag BOOLEAN, touched INT) USING DELTA{}{}",
            if self.partitioned {
                " PARTITIONED BY (p)"
            } else {
                ""
            },
            if self.deletion_vectors {
                " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
            } else {
                ""
            }
        )
    }
}

/// The statement of one case and what it must do.
#[derive(Default)]
struct Case {
    sql: String,
    params: Vec<Param>,
    /// The table after it, and the counts its result row gives
    /// (`None`: a statement whose result is not counted here).
    expected: Vec<Row>,
    /// The result row's columns checked: name and value.
    counts: Vec<(&'static str, i64)>,
    /// Whether the statement changes the table (a new version).
    changes: bool,
    /// The SQLSTATE the statement must fail with instead.
    error: Option<&'static str>,
    /// The keys a query must return (its first column), in any order.
    selected: Option<Vec<i32>>,
    /// OPTIMIZE: the partitions (values of `p`) whose files its commit
    /// must remove, and no other.
    compacted: Option<Vec<Option<String>>>,
    /// COPY INTO: the rows of the file it loads.
    file: Option<Vec<Row>>,
}

const TARGET_COLUMNS: &str = "key, p, a, b, flag, touched";

fn source_sql(rows: &[Row]) -> String {
    format!(
        "(SELECT * FROM (VALUES {}) AS v(key, p, a, b, flag))",
        rows.iter()
            .map(|r| r.values_sql(false))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A query with the condition: the reads every write path starts from.
fn select_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let cond = b.cond(&[Side::Target], 3);
    let params = b.values();
    let selected = rows
        .iter()
        .filter(|r| cond.eval(Some(r), None, &params) == Some(true))
        .map(|r| r.key)
        .collect();
    Case {
        sql: format!("SELECT key FROM {table} WHERE {}", cond.sql(UNQUALIFIED)),
        params: b.params.clone(),
        expected: rows.to_vec(),
        changes: false,
        selected: Some(selected),
        ..Case::default()
    }
}

fn delete_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let cond = b.cond(&[Side::Target], 3);
    let params = b.values();
    let keep: Vec<Row> = rows
        .iter()
        .filter(|r| cond.eval(Some(r), None, &params) != Some(true))
        .cloned()
        .collect();
    let deleted = (rows.len() - keep.len()) as i64;
    Case {
        sql: format!("DELETE FROM {table} WHERE {}", cond.sql(UNQUALIFIED)),
        params: b.params.clone(),
        expected: keep,
        counts: vec![("num_affected_rows", deleted)],
        changes: deleted > 0,
        ..Case::default()
    }
}

fn update_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let cond = b.cond(&[Side::Target], 3);
    // Sometimes the new value is a parameter too.
    let new_b = b.operand(Col::B);
    let params = b.values();
    let new_b_value = match &new_b {
        Operand::Lit(v) => v.clone(),
        Operand::Null => Val::Str(None),
        Operand::Param(i) => params[i - 1].clone(),
    };
    let mut updated = 0;
    let expected = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if cond.eval(Some(&r), None, &params) == Some(true) {
                updated += 1;
                r.touched += 1;
                r.b = match &new_b_value {
                    Val::Str(s) => s.map(str::to_string),
                    _ => unreachable!(),
                };
            }
            r
        })
        .collect();
    let value = match &new_b {
        Operand::Lit(v) => v.sql(),
        Operand::Null => "NULL".to_string(),
        Operand::Param(i) => format!("${i}"),
    };
    Case {
        sql: format!(
            "UPDATE {table} SET touched = touched + 1, b = {value} WHERE {}",
            cond.sql(UNQUALIFIED)
        ),
        params: b.params.clone(),
        expected,
        counts: vec![("num_affected_rows", updated)],
        changes: updated > 0,
        ..Case::default()
    }
}

/// What a MERGE clause does.
#[derive(Debug, Clone)]
enum Action {
    /// `UPDATE SET touched = t.touched + n, a = <operand>`.
    Update(i32, Operand),
    Delete,
    /// `INSERT (…) VALUES (s.key + 100, s.p, <operand>, s.b, s.flag, n)`.
    Insert(i32, Operand),
}

fn merge_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let mut source: Vec<Row> = Vec::new();
    for k in 1..=16 {
        if b.rng.chance(60) {
            source.push(Row::random(b.rng, k));
        }
    }
    if source.is_empty() {
        source.push(Row::random(b.rng, 1));
    }
    // The source as a table of values or a query over them with its own
    // condition (parameters in the source).
    let source_filter = b.rng.chance(30).then(|| b.cond(&[Side::Source], 1));
    let on_extra = b
        .rng
        .chance(75)
        .then(|| b.cond(&[Side::Target, Side::Source], 2));
    let mut clauses: Vec<(u8, Option<Cond>, Action)> = Vec::new();
    // 0: MATCHED, 1: NOT MATCHED [BY TARGET], 2: NOT MATCHED BY SOURCE.
    let matched = b.rng.below(3);
    for i in 0..matched {
        let last = i + 1 == matched;
        let cond = (!last || b.rng.chance(40)).then(|| b.cond(&[Side::Target, Side::Source], 2));
        let action = if b.rng.chance(50) {
            let value = b.operand(Col::A);
            Action::Update(1 + i as i32, value)
        } else {
            Action::Delete
        };
        clauses.push((0, cond, action));
    }
    if b.rng.chance(60) {
        let cond = b.rng.chance(50).then(|| b.cond(&[Side::Source], 2));
        let value = b.operand(Col::A);
        clauses.push((1, cond, Action::Insert(100, value)));
    }
    if b.rng.chance(40) {
        let cond = b.rng.chance(60).then(|| b.cond(&[Side::Target], 2));
        let action = if b.rng.chance(50) {
            Action::Update(1000, Operand::Null)
        } else {
            Action::Delete
        };
        clauses.push((2, cond, action));
    }
    if clauses.is_empty() {
        clauses.push((0, None, Action::Delete));
    }
    let params = b.values();
    let value_of = |o: &Operand| -> Option<i32> {
        match o {
            Operand::Lit(Val::Int(v)) => *v,
            Operand::Null => None,
            Operand::Param(i) => match &params[i - 1] {
                Val::Int(v) => *v,
                _ => unreachable!(),
            },
            Operand::Lit(_) => unreachable!("a value for a is an INT"),
        }
    };

    let source_rows: Vec<&Row> = source
        .iter()
        .filter(|s| {
            source_filter
                .as_ref()
                .is_none_or(|c| c.eval(None, Some(s), &params) == Some(true))
        })
        .collect();
    let on = |t: &Row, s: &Row| {
        t.key == s.key
            && on_extra
                .as_ref()
                .is_none_or(|c| c.eval(Some(t), Some(s), &params) == Some(true))
    };
    let (mut updated, mut deleted, mut inserted) = (0, 0, 0);
    let mut expected = Vec::new();
    for t in rows {
        let m = source_rows.iter().find(|s| on(t, s));
        let kind = if m.is_some() { 0 } else { 2 };
        let clause = clauses.iter().find(|(k, c, _)| {
            *k == kind
                && c.as_ref()
                    .is_none_or(|c| c.eval(Some(t), m.copied(), &params) == Some(true))
        });
        match clause.map(|c| &c.2) {
            Some(Action::Update(n, value)) => {
                updated += 1;
                let mut r = t.clone();
                r.touched += n;
                if kind == 0 {
                    r.a = value_of(value);
                }
                expected.push(r);
            }
            Some(Action::Delete) => deleted += 1,
            _ => expected.push(t.clone()),
        }
    }
    for s in &source_rows {
        if rows.iter().any(|t| on(t, s)) {
            continue;
        }
        let clause = clauses.iter().find(|(k, c, _)| {
            *k == 1
                && c.as_ref()
                    .is_none_or(|c| c.eval(None, Some(s), &params) == Some(true))
        });
        if let Some((_, _, Action::Insert(n, value))) = clause {
            inserted += 1;
            expected.push(Row {
                key: s.key + 100,
                a: value_of(value),
                touched: *n,
                ..(*s).clone()
            });
        }
    }

    let operand = |o: &Operand| match o {
        Operand::Lit(v) => v.sql(),
        Operand::Null => "NULL".to_string(),
        Operand::Param(i) => format!("${i}"),
    };
    let mut sql = format!("MERGE INTO {table} AS t USING ");
    match &source_filter {
        Some(c) => {
            let _ = write!(
                sql,
                "(SELECT * FROM {} AS s WHERE {}) AS s",
                source_sql(&source),
                c.sql(BOTH)
            );
        }
        None => {
            let _ = write!(sql, "{} AS s", source_sql(&source));
        }
    }
    let _ = write!(sql, " ON t.key = s.key");
    if let Some(c) = &on_extra {
        let _ = write!(sql, " AND ({})", c.sql(BOTH));
    }
    for (kind, cond, action) in &clauses {
        sql.push_str(match kind {
            0 => " WHEN MATCHED",
            1 => " WHEN NOT MATCHED",
            _ => " WHEN NOT MATCHED BY SOURCE",
        });
        if let Some(c) = cond {
            let _ = write!(sql, " AND ({})", c.sql(BOTH));
        }
        match action {
            Action::Update(n, value) if *kind == 0 => {
                let _ = write!(
                    sql,
                    " THEN UPDATE SET touched = t.touched + {n}, a = {}",
                    operand(value)
                );
            }
            Action::Update(n, _) => {
                let _ = write!(sql, " THEN UPDATE SET touched = t.touched + {n}");
            }
            Action::Delete => sql.push_str(" THEN DELETE"),
            Action::Insert(n, value) => {
                let _ = write!(
                    sql,
                    " THEN INSERT ({TARGET_COLUMNS}) VALUES (s.key + 100, s.p, {}, s.b, s.flag, {n})",
                    operand(value)
                );
            }
        }
    }
    let affected = updated + deleted + inserted;
    Case {
        sql,
        params: b.params.clone(),
        expected,
        counts: vec![
            ("num_affected_rows", affected),
            ("num_updated_rows", updated),
            ("num_deleted_rows", deleted),
            ("num_inserted_rows", inserted),
        ],
        changes: affected > 0,
        ..Case::default()
    }
}

fn replace_where_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let cond = b.cond(&[Side::Target], 2);
    let params = b.values();
    let candidates: Vec<Row> = (200..204).map(|k| Row::random(b.rng, k)).collect();
    let mut new_rows: Vec<Row> = candidates
        .iter()
        .filter(|r| cond.eval(Some(r), None, &params) == Some(true))
        .cloned()
        .collect();
    // Now and then a new row the condition does not hold for (false or
    // NULL): the statement must fail with 44000 and write nothing.
    let mismatch = candidates
        .iter()
        .find(|r| cond.eval(Some(r), None, &params) != Some(true))
        .filter(|_| b.rng.chance(20));
    if let Some(r) = mismatch {
        new_rows.push(r.clone());
    }
    let query = if new_rows.is_empty() {
        format!("SELECT {TARGET_COLUMNS} FROM {table} LIMIT 0")
    } else {
        format!(
            "SELECT * FROM (VALUES {}) AS v({TARGET_COLUMNS})",
            new_rows
                .iter()
                .map(|r| r.values_sql(true))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut expected: Vec<Row> = rows
        .iter()
        .filter(|r| cond.eval(Some(r), None, &params) != Some(true))
        .cloned()
        .collect();
    expected.extend(new_rows.iter().cloned());
    Case {
        sql: format!(
            "INSERT INTO {table} REPLACE WHERE {} {query}",
            cond.sql(UNQUALIFIED)
        ),
        params: b.params.clone(),
        expected: if mismatch.is_some() {
            rows.to_vec()
        } else {
            expected
        },
        // An INSERT commits a version even when it changes nothing, as
        // Delta's writes do.
        changes: mismatch.is_none(),
        error: mismatch.map(|_| "44000"),
        ..Case::default()
    }
}

fn replace_on_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let mut source: Vec<Row> = Vec::new();
    for k in 1..=14 {
        if b.rng.chance(40) {
            source.push(Row {
                touched: 50,
                ..Row::random(b.rng, k)
            });
        }
    }
    let using = b.rng.chance(25);
    // REPLACE USING has no condition of its own (and so no parameters
    // there): `Lit(TRUE)` stands for it below.
    let cond = if using {
        Cond::Lit(Some(true))
    } else {
        b.cond(&[Side::Target, Side::Source], 2)
    };
    // The new rows' query may filter them by a parameter.
    let filter = b.rng.chance(40).then(|| b.cond(&[Side::Source], 1));
    let params = b.values();
    let new_rows: Vec<Row> = source
        .iter()
        .filter(|s| {
            filter
                .as_ref()
                .is_none_or(|c| c.eval(None, Some(s), &params) == Some(true))
        })
        .cloned()
        .collect();
    let query = if source.is_empty() {
        format!("SELECT {TARGET_COLUMNS} FROM {table} AS s LIMIT 0")
    } else {
        let values = format!(
            "(VALUES {}) AS s({TARGET_COLUMNS})",
            source
                .iter()
                .map(|r| r.values_sql(true))
                .collect::<Vec<_>>()
                .join(", ")
        );
        match &filter {
            Some(c) => format!("SELECT * FROM {values} WHERE {}", c.sql(BOTH)),
            None => format!("SELECT * FROM {values}"),
        }
    };
    let matches =
        |t: &Row, s: &Row| t.key == s.key && cond.eval(Some(t), Some(s), &params) == Some(true);
    let mut expected: Vec<Row> = rows
        .iter()
        .filter(|t| !new_rows.iter().any(|s| matches(t, s)))
        .cloned()
        .collect();
    expected.extend(new_rows.iter().cloned());
    let sql = if using {
        format!("INSERT INTO {table} REPLACE USING (key) {query}")
    } else {
        format!(
            "INSERT INTO {table} AS t REPLACE ON t.key = s.key AND ({}) ({query}) AS s",
            cond.sql(BOTH)
        )
    };
    Case {
        sql,
        params: b.params.clone(),
        expected,
        changes: true,
        ..Case::default()
    }
}

/// `INSERT OVERWRITE t PARTITION (p = v) query`: the rows whose `p` is `v`
/// (NULL-safe, as Spark's static overwrite has it) give way to the new
/// ones.
fn overwrite_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let value = b.operand(Col::P);
    let params = b.values();
    let v = match &value {
        Operand::Lit(v) => v.clone(),
        Operand::Null => Val::Str(None),
        Operand::Param(i) => params[i - 1].clone(),
    };
    let p = match &v {
        Val::Str(s) => s.map(str::to_string),
        _ => unreachable!(),
    };
    let new_rows: Vec<Row> = (300..300 + b.rng.below(3) as i32)
        .map(|k| Row {
            p: p.clone(),
            touched: 9,
            ..Row::random(b.rng, k)
        })
        .collect();
    let query = if new_rows.is_empty() {
        format!("SELECT key, a, b, flag, touched FROM {table} LIMIT 0")
    } else {
        format!(
            "SELECT * FROM (VALUES {}) AS v(key, a, b, flag, touched)",
            new_rows
                .iter()
                .map(|r| format!(
                    "({}, {}, {}, {}, {})",
                    r.key,
                    r.get(Col::A).sql(),
                    r.get(Col::B).sql(),
                    r.get(Col::Flag).sql(),
                    r.touched
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut expected: Vec<Row> = rows.iter().filter(|r| r.p != p).cloned().collect();
    expected.extend(new_rows);
    let value = match &value {
        Operand::Lit(v) => v.sql(),
        Operand::Null => "NULL".to_string(),
        Operand::Param(i) => format!("${i}"),
    };
    Case {
        sql: format!("INSERT OVERWRITE {table} PARTITION (p = {value}) {query}"),
        params: b.params.clone(),
        expected,
        changes: true,
        ..Case::default()
    }
}

/// `OPTIMIZE t WHERE <partition condition>`: the files of exactly the
/// partitions the condition holds for are compacted (those with two).
fn optimize_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let cond = b.partition_cond();
    let (first, second) = rows.split_at(rows.len() / 2);
    let mut compacted: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.p.clone())
        .filter(|p| {
            first.iter().any(|r| r.p == *p)
                && second.iter().any(|r| r.p == *p)
                && cond.eval(
                    Some(&Row {
                        p: p.clone(),
                        ..rows[0].clone()
                    }),
                    None,
                    &[],
                ) == Some(true)
        })
        .collect();
    compacted.sort();
    compacted.dedup();
    Case {
        sql: format!("OPTIMIZE {table} WHERE {}", cond.sql(UNQUALIFIED)),
        params: Vec::new(),
        expected: rows.to_vec(),
        changes: !compacted.is_empty(),
        compacted: Some(compacted),
        ..Case::default()
    }
}

/// `COPY INTO t FROM (SELECT … FROM 'file' WHERE cond)`: the file's rows
/// the condition holds for are loaded.
fn copy_into_case(b: &mut Builder, table: &str, rows: &[Row]) -> Case {
    let file: Vec<Row> = (400..400 + 2 + b.rng.below(6) as i32)
        .map(|k| Row::random(b.rng, k))
        .collect();
    let cond = b.cond(&[Side::Target], 2);
    let params = b.values();
    let mut expected = rows.to_vec();
    expected.extend(
        file.iter()
            .filter(|r| cond.eval(Some(r), None, &params) == Some(true))
            .cloned(),
    );
    Case {
        sql: format!(
            "COPY INTO {table} FROM (SELECT key, p, a, b, flag, 0 AS touched FROM '{{file}}' WHERE {}) \
             FILEFORMAT = PARQUET",
            cond.sql(UNQUALIFIED)
        ),
        params: b.params.clone(),
        expected,
        changes: true,
        file: Some(file),
        ..Case::default()
    }
}

/// Writes `rows` (without `touched`) as a Parquet file of typed columns.
fn write_parquet(path: &std::path::Path, rows: &[Row]) {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, BooleanArray, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::parquet::arrow::ArrowWriter;

    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Int32, false),
        Field::new("p", DataType::Utf8, true),
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("flag", DataType::Boolean, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.key))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.p.as_deref()))),
        Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.a))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.b.as_deref()))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.flag))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// One generated case: the statement, run on a fresh table of `rows` in
/// `layout`, then checked.
async fn run_case(
    srv: &TestServer,
    db: &tokio_postgres::Client,
    n: usize,
    layout: Layout,
    rows: &[Row],
    case: Case,
) -> Result<(), String> {
    let table = format!("c{n}");
    db.batch_execute(&layout.ddl(&table))
        .await
        .map_err(|e| format!("creating {table}: {e}"))?;
    // Two INSERTs: two files in each partition.
    let (first, second) = rows.split_at(rows.len() / 2);
    for part in [first, second] {
        if part.is_empty() {
            continue;
        }
        let values: Vec<String> = part.iter().map(|r| r.values_sql(true)).collect();
        db.batch_execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
            .await
            .map_err(|e| format!("loading {table}: {e}"))?;
    }
    let before = srv.delta_versions("default", &table).len();
    let mut sql = case.sql.replace("{table}", &table);
    if let Some(file) = &case.file {
        let dir = srv.ingest();
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let path = dir.join(format!("{table}.parquet"));
        write_parquet(&path, file);
        sql = sql.replace("{file}", &path.display().to_string());
    }

    let declared: Vec<Type> = case
        .params
        .iter()
        .map(|p| p.declared.clone().unwrap_or(Type::UNKNOWN))
        .collect();
    let statement = if case.params.iter().all(|p| p.declared.is_none()) {
        db.prepare(&sql).await
    } else {
        db.prepare_typed(&sql, &declared).await
    };
    let refs: Vec<&(dyn ToSql + Sync)> = case
        .params
        .iter()
        .map(|p| p as &(dyn ToSql + Sync))
        .collect();
    let result = match statement {
        Ok(statement) => db.query(&statement, &refs).await,
        Err(e) => Err(e),
    };
    match (&result, case.error) {
        (Err(e), Some(code)) if e.code().map(|c| c.code()) == Some(code) => {}
        (Err(e), _) => {
            return Err(format!(
                "failed: {} ({})",
                e.as_db_error().map(|d| d.message()).unwrap_or_default(),
                e.code().map(|c| c.code()).unwrap_or("no SQLSTATE")
            ))
        }
        (Ok(_), Some(code)) => return Err(format!("succeeded where {code} was expected")),
        (Ok(result), None) => {
            if let Some(want) = &case.selected {
                let mut got: Vec<i32> = result.iter().map(|r| r.get(0)).collect();
                got.sort();
                let mut want = want.clone();
                want.sort();
                if got != want {
                    return Err(format!("selected keys {got:?}, expected {want:?}"));
                }
            }
            for (column, want) in &case.counts {
                let got: Option<i64> = result.first().and_then(|r| r.try_get(*column).ok());
                if got != Some(*want) {
                    return Err(format!("{column} is {got:?}, expected {want}"));
                }
            }
        }
    }

    let after = srv.delta_versions("default", &table).len();
    let want = before + usize::from(case.changes);
    if after != want {
        return Err(format!(
            "{} new version(s), expected {}",
            after - before,
            want - before
        ));
    }
    if let Some(want) = &case.compacted {
        let mut removed: Vec<Option<String>> = if after > before {
            srv.log_entry(&table, (after - 1) as u64)
                .iter()
                .filter_map(|a| a.get("remove"))
                .map(|r| r["partitionValues"]["p"].as_str().map(str::to_string))
                .collect()
        } else {
            Vec::new()
        };
        removed.sort();
        removed.dedup();
        if removed != *want {
            return Err(format!(
                "compacted the partitions {removed:?}, expected {want:?}"
            ));
        }
    }
    let mut got: Vec<Row> = db
        .query(&format!("SELECT {TARGET_COLUMNS} FROM {table}"), &[])
        .await
        .map_err(|e| format!("reading {table}: {e}"))?
        .iter()
        .map(|r| Row {
            key: r.get(0),
            p: r.get(1),
            a: r.get(2),
            b: r.get(3),
            flag: r.get(4),
            touched: r.get(5),
        })
        .collect();
    got.sort();
    let mut expected = case.expected;
    expected.sort();
    if got != expected {
        return Err(format!(
            "rows differ:\n  got      {got:?}\n  expected {expected:?}"
        ));
    }
    Ok(())
}

fn seed() -> u64 {
    match std::env::var("LAKEGRES_CONDITIONS_SEED") {
        Ok(s) => s.parse().expect("LAKEGRES_CONDITIONS_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(56),
    }
}

#[tokio::test]
async fn every_write_path_changes_exactly_the_rows_its_condition_holds_for() {
    let seed = seed();
    let cases: usize = std::env::var("LAKEGRES_CONDITIONS_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(240);
    eprintln!("write conditions: seed {seed}, {cases} cases (LAKEGRES_CONDITIONS_SEED={seed} replays them)");
    let mut rng = Rng(seed);
    let srv = TestServer::start();
    let db = srv.connect().await;
    let mut failures = Vec::new();
    let mut by_path = std::collections::BTreeMap::<&str, usize>::new();
    for n in 0..cases {
        let layout = Layout {
            partitioned: rng.chance(50),
            deletion_vectors: rng.chance(50),
        };
        let count = 4 + rng.below(9);
        let rows: Vec<Row> = (1..=count as i32)
            .map(|k| Row::random(&mut rng, k))
            .collect();
        let mut builder = Builder {
            rng: &mut rng,
            params: Vec::new(),
            allow_params: true,
        };
        let table = "{table}";
        let pick = builder.rng.below(10);
        let (path, case) = match pick {
            7 if layout.partitioned => (
                "OVERWRITE PARTITION",
                overwrite_case(&mut builder, table, &rows),
            ),
            8 if layout.partitioned => ("OPTIMIZE", optimize_case(&mut builder, table, &rows)),
            9 => ("COPY INTO", copy_into_case(&mut builder, table, &rows)),
            6..=8 => ("SELECT", select_case(&mut builder, table, &rows)),
            0 => ("DELETE", delete_case(&mut builder, table, &rows)),
            1 => ("UPDATE", update_case(&mut builder, table, &rows)),
            2 | 3 => ("MERGE", merge_case(&mut builder, table, &rows)),
            4 => (
                "REPLACE WHERE",
                replace_where_case(&mut builder, table, &rows),
            ),
            _ => (
                "REPLACE ON / USING",
                replace_on_case(&mut builder, table, &rows),
            ),
        };
        *by_path.entry(path).or_default() += 1;
        let sql = case.sql.replace("{table}", &format!("c{n}"));
        let params: Vec<Val> = case.params.iter().map(|p| p.value.clone()).collect();
        let declared: Vec<Option<Type>> = case.params.iter().map(|p| p.declared.clone()).collect();
        if let Err(e) = run_case(&srv, &db, n, layout, &rows, case).await {
            failures.push(format!(
                "case {n} ({path}, {layout:?}): {e}\n  {sql}\n  params {params:?} declared {declared:?}\n  rows {rows:?}"
            ));
        }
    }
    eprintln!("write conditions: {by_path:?}");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
