//! JSON on strings: `get_json_object` (and the `s:a.b[0]` operator),
//! `from_json` with DDL schema strings, `to_json`, `schema_of_json`,
//! `json_array_length`, `json_object_keys`
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#json-functions>).
//! datafusion-spark provides `json_tuple`.
//!
//! `get_json_object` walks the text without building a document: it skips
//! what the path does not enter, so a field near the start of a large
//! document costs little. Like Databricks, it answers NULL for a path that
//! is not there; strings come back unquoted, objects and arrays as compact
//! JSON.

use std::fmt::Write;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{int_rows, string_rows, Arg, Call, Returns, Udf, INT32, UTF8};

use Arg::{Any, Str};

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        get_json_object(),
        Udf::new("json_array_length", &[&[Str]], Returns::Fixed(&INT32), json_array_length)
            .describe("json_array_length(jsonArray) - Returns the number of elements in the outermost JSON array.")
            .build(),
        Udf::new("json_object_keys", &[&[Str]], Returns::Computed(|_, _| Ok(string_list())), json_object_keys)
            .describe("json_object_keys(jsonObject) - Returns all the keys of the outermost JSON object as an array.")
            .build(),
        Udf::new("from_json", &[&[Str, Str], &[Str, Str, Any]], Returns::Computed(from_json_type), from_json)
            .describe("from_json(jsonStr, schema [, options]) - Returns a struct value with the given jsonStr and schema (a DDL string).")
            .build(),
        Udf::new("to_json", &[&[Any], &[Any, Any]], Returns::Fixed(&UTF8), to_json)
            .describe("to_json(expr [, options]) - Returns a JSON string with a given struct, map or array value.")
            .build(),
        Udf::new("schema_of_json", &[&[Str], &[Str, Any]], Returns::Fixed(&UTF8), schema_of_json)
            .describe("schema_of_json(json [, options]) - Returns the schema of a JSON string in DDL format.")
            .build(),
    ]
}

fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

/// `get_json_object(json, path)`.
pub(crate) fn get_json_object() -> ScalarUDF {
    Udf::new(
        "get_json_object",
        &[&[Str, Str]],
        Returns::Fixed(&UTF8),
        get_json_object_kernel,
    )
    .describe("get_json_object(expr, path) - Extracts a JSON object from path.")
    .build()
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    Wildcard,
}

/// `$.a.b[0]`, `$['a b'][1]`, `$.a[*].b`; None for a path Databricks refuses
/// (it answers NULL).
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let rest = path.trim().strip_prefix('$')?;
    let bytes = rest.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                let key = &rest[start..end];
                if key.is_empty() {
                    return None;
                }
                steps.push(if key == "*" {
                    Step::Wildcard
                } else {
                    Step::Key(key.to_string())
                });
                i = end;
            }
            b'[' => {
                let close = rest[i..].find(']')? + i;
                let inner = rest[i + 1..close].trim();
                if inner == "*" {
                    steps.push(Step::Wildcard);
                } else if let Some(q) = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\''))
                {
                    steps.push(Step::Key(q.to_string()));
                } else if let Some(q) = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    steps.push(Step::Key(q.to_string()));
                } else {
                    steps.push(Step::Index(inner.parse().ok()?));
                }
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

/// A scanner over JSON text.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\n' | b'\r' | b'\t') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// The raw bytes of a string (without quotes), and whether it has escapes.
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        let mut escaped = false;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'"' => {
                    let s = &self.b[start..self.i];
                    self.i += 1;
                    return Some((s, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                _ => self.i += 1,
            }
        }
        None
    }

    /// Skips one value; its span.
    fn skip(&mut self) -> Option<(usize, usize)> {
        self.ws();
        let start = self.i;
        match self.b.get(self.i)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                while self.i < self.b.len() {
                    match self.b[self.i] {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some((start, self.i));
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                return None;
            }
            _ => {
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'
                    )
                {
                    self.i += 1;
                }
                if self.i == start {
                    return None;
                }
            }
        }
        Some((start, self.i))
    }

    /// Enters the value of `key` in the object here.
    fn key(&mut self, key: &str) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return None;
        }
        loop {
            let (name, escaped) = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            let matches = if escaped {
                unescape(name).as_deref() == Some(key)
            } else {
                name == key.as_bytes()
            };
            if matches {
                return Some(());
            }
            self.skip()?;
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// Enters element `n` of the array here.
    fn index(&mut self, n: usize) -> Option<()> {
        if !self.eat(b'[') || self.peek() == Some(b']') {
            return None;
        }
        for _ in 0..n {
            self.skip()?;
            if !self.eat(b',') {
                return None;
            }
        }
        Some(())
    }
}

fn unescape(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    serde_json::from_str::<String>(&format!("\"{text}\"")).ok()
}

/// The text Databricks answers for a JSON value: strings unquoted,
/// scalars as written, objects and arrays compact; None for `null`.
fn answer(raw: &[u8], out: &mut String) -> Option<()> {
    match raw.first()? {
        b'"' => {
            let inner = &raw[1..raw.len().checked_sub(1)?];
            if inner.contains(&b'\\') {
                out.push_str(&unescape(inner)?);
            } else {
                out.push_str(std::str::from_utf8(inner).ok()?);
            }
        }
        b'{' | b'[' => {
            let value: serde_json::Value = serde_json::from_slice(raw).ok()?;
            let _ = write!(out, "{value}");
        }
        b'n' => return None,
        _ => out.push_str(std::str::from_utf8(raw).ok()?),
    }
    Some(())
}

/// Follows `steps` in `json`, writing the answer; None for no answer.
fn extract(json: &str, steps: &[Step], out: &mut String) -> Option<()> {
    if steps.contains(&Step::Wildcard) {
        let value: serde_json::Value = serde_json::from_str(json).ok()?;
        let found = walk(&value, steps);
        let value = match found.as_slice() {
            [] => return None,
            [one]
                if !steps.iter().rev().skip(1).any(|s| *s == Step::Wildcard)
                    && steps.last() != Some(&Step::Wildcard) =>
            {
                (*one).clone()
            }
            many => serde_json::Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        };
        return match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => {
                out.push_str(&s);
                Some(())
            }
            other => {
                let _ = write!(out, "{other}");
                Some(())
            }
        };
    }
    let mut scan = Scan {
        b: json.as_bytes(),
        i: 0,
    };
    for step in steps {
        match step {
            Step::Key(k) => scan.key(k)?,
            Step::Index(n) => scan.index(*n)?,
            Step::Wildcard => return None,
        }
    }
    let (start, end) = scan.skip()?;
    answer(&json.as_bytes()[start..end], out)
}

fn walk<'v>(value: &'v serde_json::Value, steps: &[Step]) -> Vec<&'v serde_json::Value> {
    let Some((step, rest)) = steps.split_first() else {
        return vec![value];
    };
    match (step, value) {
        (Step::Key(k), serde_json::Value::Object(m)) => {
            m.get(k).map(|v| walk(v, rest)).unwrap_or_default()
        }
        (Step::Index(n), serde_json::Value::Array(a)) => {
            a.get(*n).map(|v| walk(v, rest)).unwrap_or_default()
        }
        (Step::Wildcard, serde_json::Value::Array(a)) => {
            a.iter().flat_map(|v| walk(v, rest)).collect()
        }
        (Step::Wildcard, serde_json::Value::Object(m)) => {
            m.values().flat_map(|v| walk(v, rest)).collect()
        }
        _ => vec![],
    }
}

fn get_json_object_kernel(c: &Call) -> Result<ColumnarValue> {
    let (docs, paths) = (c.str(0)?, c.str(1)?);
    let fixed = paths.scalar().map(|p| p.and_then(parse_path));
    string_rows(c.len(), |i, out| {
        let Some(doc) = docs.get(i) else {
            return Ok(false);
        };
        let owned;
        let steps = match &fixed {
            Some(Some(s)) => s,
            Some(None) => return Ok(false),
            None => match paths.get(i).and_then(parse_path) {
                Some(s) => {
                    owned = s;
                    &owned
                }
                None => return Ok(false),
            },
        };
        Ok(extract(doc, steps, out).is_some())
    })
}

fn json_array_length(c: &Call) -> Result<ColumnarValue> {
    let docs = c.str(0)?;
    int_rows(c.len(), |i| {
        Ok(docs
            .get(i)
            .and_then(|d| match serde_json::from_str::<serde_json::Value>(d) {
                Ok(serde_json::Value::Array(a)) => Some(a.len() as i32),
                _ => None,
            }))
    })
}

fn json_object_keys(c: &Call) -> Result<ColumnarValue> {
    let docs = c.str(0)?;
    let mut out = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
        "element",
        DataType::Utf8,
        true,
    )));
    for i in 0..c.len() {
        match docs.get(i).map(serde_json::from_str::<serde_json::Value>) {
            Some(Ok(serde_json::Value::Object(m))) => {
                for k in m.keys() {
                    out.values().append_value(k);
                }
                out.append(true);
            }
            _ => out.append_null(),
        }
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

/// Reads a Databricks DDL schema string: `a INT, b ARRAY<STRING>`,
/// `STRUCT<a: INT>`, `ARRAY<MAP<STRING, INT>>`.
pub(crate) fn parse_ddl(text: &str) -> std::result::Result<DataType, FunctionError> {
    let invalid = |reason: &str| FunctionError::InvalidSchema {
        schema: text.to_string(),
        reason: reason.to_string(),
    };
    let tokens = ddl_tokens(text);
    let mut pos = 0;
    // A bare type (ARRAY<…>, MAP<…>, STRUCT<…>) or a field list.
    let single = tokens.len() > 1 && matches!(tokens.get(1).map(String::as_str), Some("<"));
    let t = if single
        && matches!(
            tokens[0].to_uppercase().as_str(),
            "ARRAY" | "MAP" | "STRUCT"
        ) {
        let t = ddl_type(&tokens, &mut pos).ok_or_else(|| invalid("cannot read the type"))?;
        if pos != tokens.len() {
            return Err(invalid("unexpected text after the type"));
        }
        t
    } else {
        let fields = ddl_fields(&tokens, &mut pos, None)
            .ok_or_else(|| invalid("cannot read the columns"))?;
        if pos != tokens.len() {
            return Err(invalid("unexpected text after the columns"));
        }
        DataType::Struct(fields)
    };
    Ok(t)
}

fn ddl_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '`' {
            chars.next();
            let mut name = String::new();
            for ch in chars.by_ref() {
                if ch == '`' {
                    break;
                }
                name.push(ch);
            }
            tokens.push(format!("`{name}"));
        } else if "<>(),:".contains(c) {
            tokens.push(c.to_string());
            chars.next();
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || "<>(),:`".contains(ch) {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            tokens.push(word);
        }
    }
    tokens
}

fn ddl_fields(tokens: &[String], pos: &mut usize, end: Option<&str>) -> Option<Fields> {
    let mut fields = Vec::new();
    loop {
        if end.is_some_and(|e| tokens.get(*pos).map(String::as_str) == Some(e)) {
            break;
        }
        let name = tokens.get(*pos)?;
        let name = name
            .strip_prefix('`')
            .map(str::to_string)
            .unwrap_or_else(|| name.clone());
        *pos += 1;
        if tokens.get(*pos).map(String::as_str) == Some(":") {
            *pos += 1;
        }
        let t = ddl_type(tokens, pos)?;
        // NOT NULL and COMMENT '…' are allowed and ignored.
        while let Some(word) = tokens.get(*pos) {
            match word.to_uppercase().as_str() {
                "NOT" | "NULL" => *pos += 1,
                "COMMENT" => *pos += 2,
                _ => break,
            }
        }
        fields.push(Field::new(name, t, true));
        match tokens.get(*pos).map(String::as_str) {
            Some(",") => *pos += 1,
            _ => break,
        }
    }
    Some(Fields::from(fields))
}

fn ddl_type(tokens: &[String], pos: &mut usize) -> Option<DataType> {
    let word = tokens.get(*pos)?.to_uppercase();
    *pos += 1;
    let expect = |pos: &mut usize, t: &str| -> Option<()> {
        (tokens.get(*pos).map(String::as_str) == Some(t)).then(|| *pos += 1)
    };
    Some(match word.as_str() {
        "STRING" | "VARCHAR" | "CHAR" | "TEXT" => {
            if tokens.get(*pos).map(String::as_str) == Some("(") {
                *pos += 3;
            }
            DataType::Utf8
        }
        "INT" | "INTEGER" => DataType::Int32,
        "BIGINT" | "LONG" => DataType::Int64,
        "SMALLINT" | "SHORT" => DataType::Int16,
        "TINYINT" | "BYTE" => DataType::Int8,
        "DOUBLE" => DataType::Float64,
        "FLOAT" | "REAL" => DataType::Float32,
        "BOOLEAN" | "BOOL" => DataType::Boolean,
        "DATE" => DataType::Date32,
        "TIMESTAMP" | "TIMESTAMP_LTZ" => {
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        }
        "TIMESTAMP_NTZ" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "BINARY" => DataType::Binary,
        "DECIMAL" | "DEC" | "NUMERIC" => {
            if tokens.get(*pos).map(String::as_str) == Some("(") {
                *pos += 1;
                let p: u8 = tokens.get(*pos)?.parse().ok()?;
                *pos += 1;
                let s: i8 = if tokens.get(*pos).map(String::as_str) == Some(",") {
                    *pos += 1;
                    let s = tokens.get(*pos)?.parse().ok()?;
                    *pos += 1;
                    s
                } else {
                    0
                };
                expect(pos, ")")?;
                DataType::Decimal128(p, s)
            } else {
                DataType::Decimal128(10, 0)
            }
        }
        "ARRAY" => {
            expect(pos, "<")?;
            let element = ddl_type(tokens, pos)?;
            expect(pos, ">")?;
            DataType::List(Arc::new(Field::new_list_field(element, true)))
        }
        "MAP" => {
            expect(pos, "<")?;
            let key = ddl_type(tokens, pos)?;
            expect(pos, ",")?;
            let value = ddl_type(tokens, pos)?;
            expect(pos, ">")?;
            DataType::Map(
                Arc::new(Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![
                        Field::new("key", key, false),
                        Field::new("value", value, true),
                    ])),
                    false,
                )),
                false,
            )
        }
        "STRUCT" => {
            expect(pos, "<")?;
            let fields = ddl_fields(tokens, pos, Some(">"))?;
            expect(pos, ">")?;
            DataType::Struct(fields)
        }
        _ => return None,
    })
}

fn from_json_type(_: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
    match scalars.get(1) {
        Some(Some(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        )) => parse_ddl(s).map_err(df),
        _ => Err(df(FunctionError::mismatch(
            "from_json",
            "the schema must be a constant STRING",
        ))),
    }
}

/// A JSON value as an Arrow value of `t` (Spark's PERMISSIVE parsing: a
/// value of the wrong type is NULL).
fn to_scalar(value: &serde_json::Value, t: &DataType) -> Result<ScalarValue> {
    use serde_json::Value as J;
    let null = ScalarValue::try_from(t)?;
    Ok(match (t, value) {
        (_, J::Null) => null,
        (DataType::Utf8, J::String(s)) => ScalarValue::Utf8(Some(s.clone())),
        (DataType::Utf8, other) => ScalarValue::Utf8(Some(other.to_string())),
        (DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64, J::Number(n)) => {
            match n.as_i64() {
                Some(v) => ScalarValue::Int64(Some(v)).cast_to(t).unwrap_or(null),
                None => null,
            }
        }
        (DataType::Float32 | DataType::Float64, J::Number(n)) => match n.as_f64() {
            Some(v) => ScalarValue::Float64(Some(v)).cast_to(t).unwrap_or(null),
            None => null,
        },
        (DataType::Decimal128(..), J::Number(n)) => ScalarValue::Utf8(Some(n.to_string()))
            .cast_to(t)
            .unwrap_or(null),
        (DataType::Boolean, J::Bool(b)) => ScalarValue::Boolean(Some(*b)),
        (DataType::Date32 | DataType::Timestamp(..), J::String(s)) => {
            let zone = chrono_tz::UTC;
            match (super::datetime::parse_moment(s, &zone), t) {
                (Some(at), DataType::Date32) => {
                    ScalarValue::Date32(Some(super::datetime::date_to_days(at.date())))
                }
                (Some(super::datetime::At::Time(_, Some(m))), DataType::Timestamp(_, tz)) => {
                    ScalarValue::TimestampMicrosecond(Some(m), tz.clone())
                }
                (Some(at), DataType::Timestamp(_, tz)) => ScalarValue::TimestampMicrosecond(
                    super::datetime::instant_of(at.local(), &zone),
                    tz.clone(),
                ),
                _ => null,
            }
        }
        (DataType::List(f), J::Array(items)) => {
            let values: Vec<ScalarValue> = items
                .iter()
                .map(|v| to_scalar(v, f.data_type()))
                .collect::<Result<_>>()?;
            ScalarValue::List(ScalarValue::new_list_nullable(&values, f.data_type()))
        }
        (DataType::Struct(fields), J::Object(m)) => struct_scalar(fields, m)?,
        (DataType::Map(..), J::Object(m)) => {
            let Some(fields) = map_fields(t) else {
                return Ok(null);
            };
            let keys: Vec<ScalarValue> = m
                .keys()
                .map(|k| ScalarValue::Utf8(Some(k.clone())).cast_to(fields[0].data_type()))
                .collect::<Result<_>>()?;
            let values: Vec<ScalarValue> = m
                .values()
                .map(|v| to_scalar(v, fields[1].data_type()))
                .collect::<Result<_>>()?;
            let keys = ScalarValue::iter_to_array(keys.into_iter().chain(std::iter::empty()))
                .or_else(|_| {
                    Ok::<_, DataFusionError>(datafusion::arrow::array::new_empty_array(
                        fields[0].data_type(),
                    ))
                })?;
            let values = if values.is_empty() {
                datafusion::arrow::array::new_empty_array(fields[1].data_type())
            } else {
                ScalarValue::iter_to_array(values)?
            };
            let entries = datafusion::arrow::array::StructArray::try_new(
                fields.clone(),
                vec![keys, values],
                None,
            )?;
            let DataType::Map(entry_field, sorted) = t else {
                return Ok(null);
            };
            let map = datafusion::arrow::array::MapArray::try_new(
                Arc::clone(entry_field),
                datafusion::arrow::buffer::OffsetBuffer::from_lengths([m.len()]),
                entries,
                None,
                *sorted,
            )?;
            ScalarValue::Map(Arc::new(map))
        }
        _ => null,
    })
}

fn map_fields(t: &DataType) -> Option<Fields> {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(f) => Some(f.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn struct_scalar(
    fields: &Fields,
    m: &serde_json::Map<String, serde_json::Value>,
) -> Result<ScalarValue> {
    let mut arrays = Vec::with_capacity(fields.len());
    for f in fields {
        // Field names match exactly, then case-insensitively.
        let v = m.get(f.name()).or_else(|| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(f.name()))
                .map(|(_, v)| v)
        });
        let s = match v {
            Some(v) => to_scalar(v, f.data_type())?,
            None => ScalarValue::try_from(f.data_type())?,
        };
        arrays.push(s.to_array_of_size(1)?);
    }
    let s = datafusion::arrow::array::StructArray::try_new(fields.clone(), arrays, None)?;
    Ok(ScalarValue::Struct(Arc::new(s)))
}

fn from_json(c: &Call) -> Result<ColumnarValue> {
    let docs = c.str(0)?;
    let t = c.return_type.clone();
    let mut values = Vec::with_capacity(c.len());
    for i in 0..c.len() {
        let v = match docs.get(i).map(serde_json::from_str::<serde_json::Value>) {
            Some(Ok(doc)) => match (&t, &doc) {
                (DataType::Struct(_), serde_json::Value::Object(_))
                | (DataType::List(_), serde_json::Value::Array(_))
                | (DataType::Map(..), serde_json::Value::Object(_)) => to_scalar(&doc, &t)?,
                _ => ScalarValue::try_from(&t)?,
            },
            _ => ScalarValue::try_from(&t)?,
        };
        values.push(v);
    }
    if values.is_empty() {
        return Ok(ColumnarValue::Array(
            datafusion::arrow::array::new_empty_array(&t),
        ));
    }
    Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
}

/// Writes row `i` of `a` as JSON (Spark's `to_json`).
pub(crate) fn write_json(a: &dyn Array, i: usize, out: &mut String) -> Result<()> {
    if a.is_null(i) {
        out.push_str("null");
        return Ok(());
    }
    match a.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = ScalarValue::try_from_array(a, i)?;
            let text = match &s {
                ScalarValue::Utf8(Some(t))
                | ScalarValue::LargeUtf8(Some(t))
                | ScalarValue::Utf8View(Some(t)) => t.clone(),
                _ => String::new(),
            };
            let _ = write!(out, "{}", serde_json::Value::String(text));
        }
        DataType::Boolean => out.push_str(if a.as_boolean().value(i) {
            "true"
        } else {
            "false"
        }),
        DataType::Struct(fields) => {
            let s = a.as_struct();
            out.push('{');
            let mut first = true;
            for (f, col) in fields.iter().zip(s.columns()) {
                // NULL fields are left out, as Spark does.
                if col.is_null(i) {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                let _ = write!(out, "{}:", serde_json::Value::String(f.name().clone()));
                write_json(col.as_ref(), i, out)?;
            }
            out.push('}');
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
            let list = super::array::as_list(a.slice(i, 1))?;
            let values = list.value(0);
            out.push('[');
            for k in 0..values.len() {
                if k > 0 {
                    out.push(',');
                }
                write_json(values.as_ref(), k, out)?;
            }
            out.push(']');
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let (start, end) = (
                m.value_offsets()[i] as usize,
                m.value_offsets()[i + 1] as usize,
            );
            out.push('{');
            for k in start..end {
                if k > start {
                    out.push(',');
                }
                let mut key = String::new();
                super::cast::write_text(m.keys().as_ref(), k, &mut key)?;
                let _ = write!(out, "{}:", serde_json::Value::String(key));
                write_json(m.values().as_ref(), k, out)?;
            }
            out.push('}');
        }
        DataType::Date32 | DataType::Timestamp(..) => {
            let mut text = String::new();
            super::cast::write_json_time(a, i, &mut text)?;
            let _ = write!(out, "{}", serde_json::Value::String(text));
        }
        t if t.is_numeric() => {
            super::cast::write_text(a, i, out)?;
        }
        _ => {
            let mut text = String::new();
            super::cast::write_text(a, i, &mut text)?;
            let _ = write!(out, "{}", serde_json::Value::String(text));
        }
    }
    Ok(())
}

fn to_json(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    string_rows(a.len(), |i, out| {
        if a.is_null(i) {
            return Ok(false);
        }
        write_json(a.as_ref(), i, out)?;
        Ok(true)
    })
}

/// The schema Spark infers for a JSON value, in DDL form.
fn infer(value: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match value {
        J::Null => "STRING".into(),
        J::Bool(_) => "BOOLEAN".into(),
        J::Number(n) => {
            if n.is_i64() || n.is_u64() {
                "BIGINT".into()
            } else {
                "DOUBLE".into()
            }
        }
        J::String(_) => "STRING".into(),
        J::Array(items) => {
            let element = items
                .iter()
                .filter(|v| !v.is_null())
                .map(infer)
                .fold(None::<String>, |acc, t| match acc {
                    None => Some(t),
                    Some(a) if a == t => Some(a),
                    Some(a)
                        if (a == "BIGINT" && t == "DOUBLE") || (a == "DOUBLE" && t == "BIGINT") =>
                    {
                        Some("DOUBLE".into())
                    }
                    Some(_) => Some("STRING".into()),
                })
                .unwrap_or_else(|| "STRING".into());
            format!("ARRAY<{element}>")
        }
        J::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}: {}", quote_name(k), infer(&m[k])))
                .collect();
            format!("STRUCT<{}>", fields.join(", "))
        }
    }
}

fn quote_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

fn schema_of_json(c: &Call) -> Result<ColumnarValue> {
    let docs = c.str(0)?;
    string_rows(c.len(), |i, out| {
        let Some(doc) = docs.get(i) else {
            return Ok(false);
        };
        let value: serde_json::Value = serde_json::from_str(doc).map_err(|_| {
            df(FunctionError::MalformedRecord {
                record: doc.to_string(),
            })
        })?;
        out.push_str(&infer(&value));
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(doc: &str, path: &str) -> Option<String> {
        let mut out = String::new();
        extract(doc, &parse_path(path)?, &mut out).map(|_| out)
    }

    #[test]
    fn paths_follow_databricks() {
        let doc = r#"{"a":{"b":[1,{"c":"x\"y"}]},"s":"t","n":null}"#;
        assert_eq!(get(doc, "$.a.b[0]").as_deref(), Some("1"));
        assert_eq!(get(doc, "$.a.b[1].c").as_deref(), Some("x\"y"));
        assert_eq!(get(doc, "$.a.b[1]").as_deref(), Some(r#"{"c":"x\"y"}"#));
        assert_eq!(get(doc, "$['s']").as_deref(), Some("t"));
        assert_eq!(get(doc, "$.n"), None);
        assert_eq!(get(doc, "$.missing"), None);
        assert_eq!(
            get(r#"[{"a":1},{"a":2}]"#, "$[*].a").as_deref(),
            Some("[1,2]")
        );
    }

    #[test]
    fn ddl_schemas_parse() {
        let t = parse_ddl("a INT, b ARRAY<STRING>, c STRUCT<d: DOUBLE>").unwrap();
        let DataType::Struct(fields) = t else {
            panic!()
        };
        assert_eq!(fields.len(), 3);
        assert!(parse_ddl("ARRAY<INT>").is_ok());
        assert!(parse_ddl("a WHAT").is_err());
    }

    #[test]
    fn schemas_are_inferred() {
        let v: serde_json::Value = serde_json::from_str(r#"{"b":[1,2.5],"a":"x"}"#).unwrap();
        assert_eq!(infer(&v), "STRUCT<a: STRING, b: ARRAY<DOUBLE>>");
    }
}
