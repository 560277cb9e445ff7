//! Regular expression functions with Java semantics where they differ from
//! DataFusion's: `regexp_replace` replaces every match and reads `$1` group
//! references, `regexp_extract` takes a group index, `split` keeps
//! trailing empty strings
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#string-and-binary-functions>).
//! A pattern that is a literal is compiled once per batch; a pattern from a
//! column once per distinct consecutive value.

use std::sync::Arc;

use datafusion::arrow::array::{ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};
use regex::Regex;

use super::error::{df, FunctionError};
use super::udf::{
    bool_rows, int_rows, string_rows, Arg, Call, Returns, Strs, Udf, BOOLEAN, INT32, UTF8,
};

use Arg::{Long, Str};

static STRING_ARRAY: std::sync::LazyLock<DataType> = std::sync::LazyLock::new(|| {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
});

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("regexp_replace", &[&[Str, Str, Str], &[Str, Str, Str, Long]], Returns::Fixed(&UTF8), regexp_replace)
            .describe("regexp_replace(str, regexp, rep [, position]) - Replaces all substrings of str that match regexp with rep.")
            .build(),
        Udf::new("regexp_extract", &[&[Str, Str], &[Str, Str, Long]], Returns::Fixed(&UTF8), regexp_extract)
            .describe("regexp_extract(str, regexp [, idx]) - Extracts the first string in str that matches regexp and corresponds to the regex group index.")
            .build(),
        Udf::new("regexp_extract_all", &[&[Str, Str], &[Str, Str, Long]], Returns::Computed(|_, _| Ok(STRING_ARRAY.clone())), regexp_extract_all)
            .describe("regexp_extract_all(str, regexp [, idx]) - Extracts all strings in str that match regexp and correspond to the regex group index.")
            .build(),
        Udf::new("regexp_like", &[&[Str, Str]], Returns::Fixed(&BOOLEAN), regexp_like)
            .aliases(&["rlike", "regexp"])
            .describe("regexp_like(str, regex) - Returns true if str matches regex.")
            .build(),
        Udf::new("regexp_count", &[&[Str, Str]], Returns::Fixed(&INT32), regexp_count)
            .describe("regexp_count(str, regexp) - Returns the number of times str matches regexp.")
            .build(),
        Udf::new("regexp_instr", &[&[Str, Str], &[Str, Str, Long]], Returns::Fixed(&INT32), regexp_instr)
            .describe("regexp_instr(str, regexp [, idx]) - Returns the position of the first substring in str that matches regexp.")
            .build(),
        Udf::new("regexp_substr", &[&[Str, Str]], Returns::Fixed(&UTF8), regexp_substr)
            .describe("regexp_substr(str, regexp) - Returns the first substring in str that matches regexp.")
            .build(),
        Udf::new("split", &[&[Str, Str], &[Str, Str, Long]], Returns::Computed(|_, _| Ok(STRING_ARRAY.clone())), split)
            .describe("split(str, regex [, limit]) - Splits str around occurrences that match regex and returns an array with a length of at most limit.")
            .build(),
    ]
}

/// Java regular expressions as the `regex` crate reads them: the same for
/// what loading jobs write (classes, quantifiers, groups, anchors); Java's
/// possessive quantifiers and look-arounds are refused.
fn compile(pattern: &str) -> std::result::Result<Regex, FunctionError> {
    Regex::new(pattern).map_err(|e| FunctionError::InvalidParameter {
        function: "regexp",
        parameter: "regexp",
        reason: format!("{pattern}: {e}"),
    })
}

/// A pattern argument, compiled once when it is a literal.
pub(crate) struct Patterns<'a> {
    strs: Strs<'a>,
    fixed: Option<Regex>,
    last: std::cell::RefCell<Option<(String, Regex)>>,
}

impl<'a> Patterns<'a> {
    pub fn new(strs: Strs<'a>) -> Result<Self> {
        let fixed = match strs.scalar() {
            Some(Some(p)) => Some(compile(p).map_err(df)?),
            _ => None,
        };
        Ok(Self {
            strs,
            fixed,
            last: std::cell::RefCell::new(None),
        })
    }

    /// The regex of every row, for a literal pattern.
    pub fn fixed(&self) -> Option<&Regex> {
        self.fixed.as_ref()
    }

    /// Runs `f` with row `i`'s regex; None for a NULL pattern.
    pub fn with<T>(&self, i: usize, f: impl FnOnce(&Regex) -> T) -> Result<Option<T>> {
        if let Some(r) = &self.fixed {
            return Ok(Some(f(r)));
        }
        let Some(p) = self.strs.get(i) else {
            return Ok(None);
        };
        let mut last = self.last.borrow_mut();
        if last.as_ref().is_none_or(|(text, _)| text != p) {
            *last = Some((p.to_string(), compile(p).map_err(df)?));
        }
        Ok(last.as_ref().map(|(_, r)| f(r)))
    }
}

/// A replacement string: Java's `$n` group references and `\` escapes.
enum Piece {
    Text(String),
    Group(usize),
}

fn replacement(rep: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    text.push(next);
                }
            }
            '$' if chars.peek().is_some_and(|d| d.is_ascii_digit()) => {
                let mut n = 0usize;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    n = n * 10 + d as usize;
                    chars.next();
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Group(n));
            }
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

fn regexp_replace(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns, reps) = (c.str(0)?, Patterns::new(c.str(1)?)?, c.str(2)?);
    let positions = if c.args.len() == 4 {
        Some(c.long(3)?)
    } else {
        None
    };
    let fixed_rep = reps.scalar().flatten().map(replacement);
    string_rows(c.len(), |i, out| {
        let (Some(s), Some(rep)) = (values.get(i), reps.get(i)) else {
            return Ok(false);
        };
        let position = match &positions {
            Some(p) => match p.get(i) {
                Some(p) if p >= 1 => p as usize,
                Some(p) => {
                    return Err(df(FunctionError::InvalidParameter {
                        function: "regexp_replace",
                        parameter: "position",
                        reason: format!("expects a positive position, got {p}"),
                    }))
                }
                None => return Ok(false),
            },
            None => 1,
        };
        let owned;
        let pieces = match &fixed_rep {
            Some(p) => p,
            None => {
                owned = replacement(rep);
                &owned
            }
        };
        let start = s
            .char_indices()
            .nth(position - 1)
            .map(|(b, _)| b)
            .unwrap_or(s.len());
        let literal = match pieces.as_slice() {
            [] => Some(""),
            [Piece::Text(t)] => Some(t.as_str()),
            _ => None,
        };
        let found = patterns.with(i, |re| {
            out.push_str(&s[..start]);
            let mut last = start;
            if let Some(text) = literal {
                // No group references: matches alone, without capture slots.
                for m in re.find_iter(&s[start..]) {
                    out.push_str(&s[last..start + m.start()]);
                    out.push_str(text);
                    last = start + m.end();
                }
                out.push_str(&s[last..]);
                return;
            }
            for caps in re.captures_iter(&s[start..]) {
                let Some(m) = caps.get(0) else { continue };
                out.push_str(&s[last..start + m.start()]);
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Group(g) => {
                            if let Some(g) = caps.get(*g) {
                                out.push_str(g.as_str());
                            }
                        }
                    }
                }
                last = start + m.end();
            }
            out.push_str(&s[last..]);
        })?;
        Ok(found.is_some())
    })
}

fn group_index(idx: Option<i64>, re: &Regex) -> Result<usize> {
    let idx = idx.unwrap_or(1);
    let groups = re.captures_len() - 1;
    if idx < 0 || idx as usize > groups {
        return Err(df(FunctionError::InvalidParameter {
            function: "regexp_extract",
            parameter: "idx",
            reason: format!("expects group index between 0 and {groups}, but got {idx}"),
        }));
    }
    Ok(idx as usize)
}

fn regexp_extract(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    // A literal pattern's capture slots serve every row (slots belong to
    // the regex that made them).
    let shared = std::cell::RefCell::new(patterns.fixed().map(Regex::capture_locations));
    let indexes = if c.args.len() == 3 {
        Some(c.long(2)?)
    } else {
        None
    };
    string_rows(c.len(), |i, out| {
        let Some(s) = values.get(i) else {
            return Ok(false);
        };
        let idx = match &indexes {
            Some(x) => match x.get(i) {
                Some(v) => Some(v),
                None => return Ok(false),
            },
            None => None,
        };
        let r = patterns.with(i, |re| -> Result<()> {
            let g = group_index(idx, re)?;
            let mut shared = shared.borrow_mut();
            let mut own;
            let slots = match shared.as_mut() {
                Some(slots) => slots,
                None => {
                    own = re.capture_locations();
                    &mut own
                }
            };
            if re.captures_read(slots, s).is_some() {
                if let Some((from, to)) = slots.get(g) {
                    out.push_str(&s[from..to]);
                }
            }
            Ok(())
        })?;
        match r {
            Some(r) => r.map(|_| true),
            None => Ok(false),
        }
    })
}

fn regexp_extract_all(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    let indexes = if c.args.len() == 3 {
        Some(c.long(2)?)
    } else {
        None
    };
    let mut out = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
        "element",
        DataType::Utf8,
        true,
    )));
    for i in 0..c.len() {
        let Some(s) = values.get(i) else {
            out.append_null();
            continue;
        };
        let idx = match &indexes {
            Some(x) => x.get(i),
            None => None,
        };
        let r = patterns.with(i, |re| -> Result<()> {
            let g = group_index(idx, re)?;
            for caps in re.captures_iter(s) {
                // A group that took part in no match is "" (Java's `group(i)`, as Spark).
                out.values()
                    .append_value(caps.get(g).map_or("", |m| m.as_str()));
            }
            Ok(())
        })?;
        match r {
            Some(r) => {
                r?;
                out.append(true);
            }
            None => out.append_null(),
        }
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

fn regexp_like(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    bool_rows(c.len(), |i| match values.get(i) {
        Some(s) => patterns.with(i, |re| re.is_match(s)),
        None => Ok(None),
    })
}

fn regexp_count(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    int_rows(c.len(), |i| match values.get(i) {
        Some(s) => patterns.with(i, |re| re.find_iter(s).count() as i32),
        None => Ok(None),
    })
}

fn regexp_instr(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    int_rows(c.len(), |i| match values.get(i) {
        Some(s) => patterns.with(i, |re| match re.find(s) {
            Some(m) => s[..m.start()].chars().count() as i32 + 1,
            None => 0,
        }),
        None => Ok(None),
    })
}

fn regexp_substr(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    string_rows(c.len(), |i, out| {
        let Some(s) = values.get(i) else {
            return Ok(false);
        };
        Ok(patterns
            .with(i, |re| match re.find(s) {
                Some(m) => {
                    out.push_str(m.as_str());
                    true
                }
                None => false,
            })?
            .unwrap_or(false))
    })
}

/// Java's `String.split(regex, limit)`: at most `limit` pieces when
/// positive, all of them (trailing empty ones too) otherwise; a match at
/// the very start gives no leading empty piece when it is empty.
pub(crate) fn split_str<'s>(re: &Regex, s: &'s str, limit: i64) -> Vec<&'s str> {
    let mut pieces = Vec::new();
    let mut last = 0;
    for m in re.find_iter(s) {
        if limit > 0 && pieces.len() as i64 == limit - 1 {
            break;
        }
        if m.end() == 0 {
            // A zero-width match at the start splits nothing.
            continue;
        }
        if m.start() == m.end() && m.start() >= s.len() {
            break;
        }
        pieces.push(&s[last..m.start()]);
        last = m.end();
    }
    pieces.push(&s[last..]);
    pieces
}

fn split(c: &Call) -> Result<ColumnarValue> {
    let (values, patterns) = (c.str(0)?, Patterns::new(c.str(1)?)?);
    let limits = if c.args.len() == 3 {
        Some(c.long(2)?)
    } else {
        None
    };
    let mut out = ListBuilder::with_capacity(StringBuilder::new(), c.len())
        .with_field(Arc::new(Field::new("element", DataType::Utf8, true)));
    for i in 0..c.len() {
        let Some(s) = values.get(i) else {
            out.append_null();
            continue;
        };
        let limit = match &limits {
            Some(l) => l.get(i).unwrap_or(-1),
            None => -1,
        };
        let done = patterns.with(i, |re| {
            for piece in split_str(re, s, limit) {
                out.values().append_value(piece);
            }
        })?;
        match done {
            Some(()) => out.append(true),
            None => out.append_null(),
        }
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_javas() {
        let comma = Regex::new(",").unwrap();
        assert_eq!(split_str(&comma, "a,b,", -1), vec!["a", "b", ""]);
        assert_eq!(split_str(&comma, "a,b,c", 2), vec!["a", "b,c"]);
        let any = Regex::new("").unwrap();
        assert_eq!(split_str(&any, "abc", -1), vec!["a", "b", "c"]);
    }

    #[test]
    fn replacement_reads_group_references() {
        let pieces = replacement("$1-\\$");
        assert!(matches!(pieces[0], Piece::Group(1)));
        assert!(matches!(&pieces[1], Piece::Text(t) if t == "-$"));
    }
}
