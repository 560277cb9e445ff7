//! String functions where Databricks differs from DataFusion or that
//! DataFusion lacks (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#string-and-binary-functions>):
//! `locate`/`position`, `left`/`right` (nothing for a length ≤ 0),
//! `replace` with two arguments, `format_number`, `mask`, `startswith`,
//! `endswith`, `ucase`, `lcase`, `len`, `to_binary`, `encode`, `decode`
//! (charset), `substring_index` …
//! datafusion-spark provides `concat` (NULL if any argument is),
//! `concat_ws`, `substring`, `length`, `base64`, `unbase64`, `ascii`,
//! `char`, `elt`, `format_string`, `soundex`, `space`, `luhn_check`;
//! DataFusion `upper`, `lower`, `trim`, `lpad`, `rpad`, `repeat`,
//! `translate`, `initcap`, `instr`, `split_part`, `levenshtein`,
//! `find_in_set`, `contains`.

use std::fmt::Write;

use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{bool_rows, int_rows, string_rows, Arg, Call, Returns, Udf, BOOLEAN, INT32, UTF8};

use Arg::{Any, Long, Str};

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("locate", &[&[Str, Str], &[Str, Str, Long]], Returns::Fixed(&INT32), locate)
            .aliases(&["position"])
            .describe("locate(substr, str [, pos]) - Returns the position of the first occurrence of substr in str after position pos (1-based), or 0.")
            .build(),
        Udf::new("instr", &[&[Str, Str]], Returns::Fixed(&INT32), |c| {
            let (hay, needles) = (c.str(0)?, c.str(1)?);
            int_rows(c.len(), |i| {
                Ok(match (hay.get(i), needles.get(i)) {
                    (Some(h), Some(n)) => Some(h.find(n).map(|b| h[..b].chars().count() as i32 + 1).unwrap_or(0)),
                    _ => None,
                })
            })
        })
        .describe("instr(str, substr) - Returns the (1-based) index of the first occurrence of substr in str, or 0.")
        .build(),
        substring_udf(),
        Udf::new("left", &[&[Str, Long]], Returns::Fixed(&UTF8), |c| side(c, true))
            .describe("left(str, len) - Returns the leftmost len characters from str; an empty string for len <= 0.")
            .build(),
        Udf::new("right", &[&[Str, Long]], Returns::Fixed(&UTF8), |c| side(c, false))
            .describe("right(str, len) - Returns the rightmost len characters from str; an empty string for len <= 0.")
            .build(),
        Udf::new("replace", &[&[Str, Str], &[Str, Str, Str]], Returns::Fixed(&UTF8), replace)
            .describe("replace(str, search [, replace]) - Replaces all occurrences of search with replace (by default, removes them).")
            .build(),
        Udf::new("format_number", &[&[Any, Any]], Returns::Fixed(&UTF8), format_number)
            .describe("format_number(expr, scale) - Formats expr like '#,###,###.##', rounded to scale decimal places; format_number(expr, fmt) with a pattern.")
            .build(),
        Udf::new("mask", &[&[Str], &[Str, Str], &[Str, Str, Str], &[Str, Str, Str, Str], &[Str, Str, Str, Str, Str]], Returns::Fixed(&UTF8), mask)
            .describe("mask(str [, upperChar [, lowerChar [, digitChar [, otherChar]]]]) - Returns a masked version of str.")
            .build(),
        Udf::new("startswith", &[&[Str, Str]], Returns::Fixed(&BOOLEAN), |c| affix(c, true))
            .describe("startswith(expr, startExpr) - Returns true if expr begins with startExpr.")
            .build(),
        Udf::new("endswith", &[&[Str, Str]], Returns::Fixed(&BOOLEAN), |c| affix(c, false))
            .describe("endswith(expr, endExpr) - Returns true if expr ends with endExpr.")
            .build(),
        Udf::new("ucase", &[&[Str]], Returns::Fixed(&UTF8), |c| case(c, true))
            .describe("ucase(expr) - Returns expr with all characters changed to uppercase.")
            .build(),
        Udf::new("lcase", &[&[Str]], Returns::Fixed(&UTF8), |c| case(c, false))
            .describe("lcase(expr) - Returns expr with all characters changed to lowercase.")
            .build(),
        Udf::new("len", &[&[Str]], Returns::Fixed(&INT32), char_length)
            .aliases(&["char_length", "character_length"])
            .describe("len(expr) - Returns the character length of string data.")
            .build(),
        Udf::new("substring_index", &[&[Str, Str, Long]], Returns::Fixed(&UTF8), substring_index)
            .describe("substring_index(expr, delim, count) - Returns the substring of expr before count occurrences of the delimiter delim.")
            .build(),
    ]
}

fn locate(c: &Call) -> Result<ColumnarValue> {
    let (needles, hay) = (c.str(0)?, c.str(1)?);
    let starts = if c.args.len() == 3 {
        Some(c.long(2)?)
    } else {
        None
    };
    int_rows(c.len(), |i| {
        let (Some(n), Some(h)) = (needles.get(i), hay.get(i)) else {
            return Ok(None);
        };
        let start = match &starts {
            Some(s) => match s.get(i) {
                Some(s) => s,
                None => return Ok(Some(0)),
            },
            None => 1,
        };
        if start < 1 {
            return Ok(Some(0));
        }
        let Some((byte_start, _)) =
            h.char_indices()
                .nth(start as usize - 1)
                .or((h.chars().count() == start as usize - 1).then_some((h.len(), ' ')))
        else {
            return Ok(Some(0));
        };
        Ok(Some(match h[byte_start..].find(n) {
            Some(b) => (h[..byte_start + b].chars().count() + 1) as i32,
            None => 0,
        }))
    })
}

fn side(c: &Call, left: bool) -> Result<ColumnarValue> {
    let (values, lengths) = (c.str(0)?, c.long(1)?);
    string_rows(c.len(), |i, out| {
        let (Some(s), Some(n)) = (values.get(i), lengths.get(i)) else {
            return Ok(false);
        };
        if n > 0 {
            let count = s.chars().count();
            let n = (n as usize).min(count);
            if left {
                out.extend(s.chars().take(n));
            } else {
                out.extend(s.chars().skip(count - n));
            }
        }
        Ok(true)
    })
}

fn replace(c: &Call) -> Result<ColumnarValue> {
    let (values, searches) = (c.str(0)?, c.str(1)?);
    let replacements = if c.args.len() == 3 {
        Some(c.str(2)?)
    } else {
        None
    };
    string_rows(c.len(), |i, out| {
        let (Some(s), Some(search)) = (values.get(i), searches.get(i)) else {
            return Ok(false);
        };
        let with = match &replacements {
            Some(r) => match r.get(i) {
                Some(r) => r,
                None => return Ok(false),
            },
            None => "",
        };
        if search.is_empty() {
            out.push_str(s);
        } else {
            out.push_str(&s.replace(search, with));
        }
        Ok(true)
    })
}

/// `12332.123456, 4` → `12,332.1235` (HALF_EVEN, as Java's DecimalFormat).
fn format_number(c: &Call) -> Result<ColumnarValue> {
    let values = datafusion::arrow::compute::cast(
        &c.array(0)?,
        &datafusion::arrow::datatypes::DataType::Float64,
    )?;
    let values = datafusion::arrow::array::AsArray::as_primitive::<
        datafusion::arrow::datatypes::Float64Type,
    >(&values)
    .clone();
    let formats = c.array(1)?;
    let scales =
        datafusion::arrow::compute::cast(&formats, &datafusion::arrow::datatypes::DataType::Int64)
            .ok();
    let patterns = super::udf::strs_of(&formats).ok();
    string_rows(values.len(), |i, out| {
        use datafusion::arrow::array::Array;
        if values.is_null(i) || formats.is_null(i) {
            return Ok(false);
        }
        let v = values.value(i);
        let mut grouped = true;
        let decimals = match (&scales, &patterns) {
            (Some(s), _) if formats.data_type().is_integer() => {
                let s = datafusion::arrow::array::AsArray::as_primitive::<
                    datafusion::arrow::datatypes::Int64Type,
                >(s)
                .value(i);
                if s < 0 {
                    return Ok(false);
                }
                s as usize
            }
            (_, Some(p)) => {
                // '#,###.##' style: the digits after the point.
                let p = p.get(i).unwrap_or("");
                if p.is_empty() {
                    let _ = write!(out, "{}", group(&format!("{:.0}", v.trunc()), v < 0.0));
                    return Ok(true);
                }
                grouped = p.contains(',');
                p.split_once('.').map(|(_, f)| f.len()).unwrap_or(0)
            }
            _ => {
                return Err(df(FunctionError::mismatch(
                    "format_number",
                    "the second argument must be an INT or a STRING",
                )))
            }
        };
        let factor = 10f64.powi(decimals as i32);
        let scaled = v * factor;
        let rounded = if (scaled - scaled.trunc()).abs() == 0.5 {
            2.0 * (scaled / 2.0).round()
        } else {
            scaled.round()
        } / factor;
        let text = format!("{:.*}", decimals, rounded.abs());
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        if grouped {
            out.push_str(&group(int, rounded < 0.0));
        } else {
            if rounded < 0.0 {
                out.push('-');
            }
            out.push_str(int);
        }
        if decimals > 0 {
            out.push('.');
            out.push_str(frac);
        }
        Ok(true)
    })
}

fn group(int: &str, negative: bool) -> String {
    let digits = int.trim_start_matches('-');
    let mut out = String::new();
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if negative && out.chars().any(|c| c != '0' && c != ',') {
        format!("-{out}")
    } else {
        out
    }
}

fn mask(c: &Call) -> Result<ColumnarValue> {
    let values = c.str(0)?;
    let chars: Vec<_> = (1..c.args.len()).map(|i| c.str(i)).collect::<Result<_>>()?;
    let pick = |k: usize, i: usize, default: Option<char>| -> Result<Option<char>> {
        match chars.get(k) {
            None => Ok(default),
            Some(s) => match s.get(i) {
                None => Ok(None),
                Some(v) => {
                    let mut it = v.chars();
                    match (it.next(), it.next()) {
                        (Some(ch), None) => Ok(Some(ch)),
                        _ => Err(df(FunctionError::InvalidParameter {
                            function: "mask",
                            parameter: "replacement",
                            reason: format!("'{v}' must be a single character"),
                        })),
                    }
                }
            },
        }
    };
    string_rows(c.len(), |i, out| {
        let Some(s) = values.get(i) else {
            return Ok(false);
        };
        let (upper, lower, digit, other) = (
            pick(0, i, Some('X'))?,
            pick(1, i, Some('x'))?,
            pick(2, i, Some('n'))?,
            pick(3, i, None)?,
        );
        for ch in s.chars() {
            let replaced = if ch.is_uppercase() {
                upper
            } else if ch.is_lowercase() {
                lower
            } else if ch.is_ascii_digit() {
                digit
            } else {
                other
            };
            out.push(replaced.unwrap_or(ch));
        }
        Ok(true)
    })
}

fn affix(c: &Call, start: bool) -> Result<ColumnarValue> {
    let (values, parts) = (c.str(0)?, c.str(1)?);
    bool_rows(c.len(), |i| {
        Ok(match (values.get(i), parts.get(i)) {
            (Some(s), Some(p)) => Some(if start {
                s.starts_with(p)
            } else {
                s.ends_with(p)
            }),
            _ => None,
        })
    })
}

fn case(c: &Call, upper: bool) -> Result<ColumnarValue> {
    let values = c.str(0)?;
    string_rows(c.len(), |i, out| match values.get(i) {
        Some(s) => {
            out.push_str(&if upper {
                s.to_uppercase()
            } else {
                s.to_lowercase()
            });
            Ok(true)
        }
        None => Ok(false),
    })
}

fn char_length(c: &Call) -> Result<ColumnarValue> {
    let values = c.str(0)?;
    int_rows(c.len(), |i| {
        Ok(values.get(i).map(|s| s.chars().count() as i32))
    })
}

fn substring_index(c: &Call) -> Result<ColumnarValue> {
    let (values, delims, counts) = (c.str(0)?, c.str(1)?, c.long(2)?);
    string_rows(c.len(), |i, out| {
        let (Some(s), Some(d), Some(n)) = (values.get(i), delims.get(i), counts.get(i)) else {
            return Ok(false);
        };
        if d.is_empty() || n == 0 {
            return Ok(true);
        }
        if n > 0 {
            match s.match_indices(d).nth(n as usize - 1) {
                Some((at, _)) => out.push_str(&s[..at]),
                None => out.push_str(s),
            }
        } else {
            match s.rmatch_indices(d).nth((-n) as usize - 1) {
                Some((at, _)) => out.push_str(&s[at + d.len()..]),
                None => out.push_str(s),
            }
        }
        Ok(true)
    })
}

/// `substring` (also `substr`).
pub(crate) fn substring_udf() -> ScalarUDF {
    Udf::new("substring", &[&[Str, Long], &[Str, Long, Long]], Returns::Fixed(&UTF8), substring)
        .aliases(&["substr"])
        .describe("substring(expr, pos [, len]) - Returns the substring of expr that starts at pos (1-based, negative from the end) and is of length len.")
        .build()
}

/// Spark's `substringSQL`: the end is computed before a start before the
/// string is moved to its beginning.
fn substring(c: &Call) -> Result<ColumnarValue> {
    let (values, positions) = (c.str(0)?, c.long(1)?);
    let lengths = if c.args.len() == 3 {
        Some(c.long(2)?)
    } else {
        None
    };
    string_rows(c.len(), |i, out| {
        let (Some(s), Some(pos)) = (values.get(i), positions.get(i)) else {
            return Ok(false);
        };
        let length = match &lengths {
            Some(l) => match l.get(i) {
                Some(l) => Some(l),
                None => return Ok(false),
            },
            None => None,
        };
        let n = s.chars().count() as i64;
        let start = if pos > 0 {
            pos - 1
        } else if pos < 0 {
            n + pos
        } else {
            0
        };
        let end = match length {
            Some(l) => start.saturating_add(l),
            None => n,
        };
        let start = start.max(0);
        let end = end.min(n);
        if start < end {
            out.extend(s.chars().skip(start as usize).take((end - start) as usize));
        }
        Ok(true)
    })
}
