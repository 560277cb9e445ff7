//! String functions where Databricks differs from DataFusion or that
//! DataFusion lacks (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#string-and-binary-functions>):
//! `locate`/`position`, `left`/`right` (nothing for a length ≤ 0),
//! `replace` with two arguments, `format_number`, `mask`, `startswith`,
//! `endswith`, `ucase`, `lcase`, `len`, `to_binary`, `try_to_binary`,
//! `encode`, `decode` (charset), `substring_index`, `sentences`,
//! `validate_utf8`, and `to_number`, `try_to_number`, `to_char` with number
//! formats ([`number_format`]) …
//! datafusion-spark provides `concat` (NULL if any argument is),
//! `concat_ws`, `substring`, `length`, `base64`, `unbase64`, `ascii`,
//! `char`, `elt`, `format_string`, `soundex`, `space`, `luhn_check`;
//! DataFusion `upper`, `lower`, `trim`, `lpad`, `rpad`, `repeat`,
//! `translate`, `initcap`, `instr`, `split_part`, `levenshtein`,
//! `find_in_set`, `contains`.

mod number_format;

use std::fmt::Write;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{
    binary_rows, bool_rows, int_rows, string_rows, Arg, Call, Returns, Udf, BINARY, BOOLEAN, INT32,
    UTF8,
};
use number_format::NumberFormat;

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
        Udf::new("to_number", &[&[Str, Str]], Returns::Computed(to_number_type), |c| to_number(c, false))
            .describe("to_number(expr, fmt) - Returns expr cast to DECIMAL using the format fmt ('S$999,099.99').")
            .build(),
        Udf::new("try_to_number", &[&[Str, Str]], Returns::Computed(to_number_type), |c| to_number(c, true))
            .describe("try_to_number(expr, fmt) - to_number, or NULL where expr does not match fmt.")
            .build(),
        Udf::new("to_char", &[&[Any, Str]], Returns::Fixed(&UTF8), to_char)
            .aliases(&["to_varchar"])
            .describe("to_char(expr, fmt) - A number formatted with fmt ('$99,999.99'), a date or timestamp with a datetime pattern, or a binary as 'base64', 'hex' or 'utf-8'.")
            .build(),
        Udf::new("encode", &[&[Any, Str]], Returns::Computed(encode_type), encode)
            .describe("encode(expr, charset) - Returns the binary representation of the string expr in the character set charset ('UTF-8', 'US-ASCII', 'ISO-8859-1', 'UTF-16BE', 'UTF-16LE', 'UTF-16'); 'hex' and 'base64' give text, as in Postgres.")
            .build(),
        Udf::new("decode", &[&[Any, Str]], Returns::Computed(decode_type), decode)
            .describe("decode(expr, charset) - Translates the binary expr to a string using the character set charset; decode(expr, search, result [, ...]) is a CASE.")
            .build(),
        Udf::new("to_binary", &[&[Str], &[Str, Str]], Returns::Fixed(&BINARY), |c| to_binary(c, false))
            .describe("to_binary(expr [, fmt]) - Converts expr to a binary in the format fmt: 'hex' (the default), 'base64' or 'utf-8'.")
            .build(),
        Udf::new("try_to_binary", &[&[Str], &[Str, Str]], Returns::Fixed(&BINARY), |c| to_binary(c, true))
            .describe("try_to_binary(expr [, fmt]) - to_binary, or NULL where expr is not valid in fmt.")
            .build(),
        Udf::new("validate_utf8", &[&[Str]], Returns::ArgType(0), |c| Ok(c.arg(0)?.clone()))
            .aliases(&["try_validate_utf8"])
            .describe("validate_utf8(str) - Returns str if it is valid UTF-8 (every STRING here is).")
            .build(),
        Udf::new("sentences", &[&[Str], &[Str, Str], &[Str, Str, Str]], Returns::Computed(sentences_type), sentences)
            .describe("sentences(str [, lang, country]) - Splits str into an array of sentences, each an array of words.")
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
        // ASCII text (most keys and codes) is cut by bytes, without
        // counting characters.
        let ascii = s.is_ascii();
        let n = if ascii { s.len() } else { s.chars().count() } as i64;
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
            if ascii {
                out.push_str(&s[start as usize..end as usize]);
            } else {
                out.extend(s.chars().skip(start as usize).take((end - start) as usize));
            }
        }
        Ok(true)
    })
}

/// The format of a `to_number` call, which must be a literal.
fn literal_format(function: &str, scalar: Option<Option<&str>>) -> Result<NumberFormat> {
    let Some(Some(text)) = scalar else {
        return Err(df(FunctionError::mismatch(
            function,
            "the format must be a STRING literal",
        )));
    };
    NumberFormat::parse(text).map_err(|reason| {
        df(FunctionError::InvalidFormat {
            format: text.to_string(),
            reason,
        })
    })
}

fn to_number_type(
    _: &[datafusion::arrow::datatypes::DataType],
    scalars: &[Option<&datafusion::common::ScalarValue>],
) -> Result<datafusion::arrow::datatypes::DataType> {
    use datafusion::common::ScalarValue as S;
    let text = match scalars.get(1) {
        Some(Some(S::Utf8(s) | S::Utf8View(s) | S::LargeUtf8(s))) => Some(s.as_deref()),
        _ => None,
    };
    let format = literal_format("to_number", text)?;
    Ok(datafusion::arrow::datatypes::DataType::Decimal128(
        format.precision.max(1),
        format.scale,
    ))
}

/// `to_number` and `try_to_number`: a DECIMAL of the format's precision.
fn to_number(c: &Call, tolerate: bool) -> Result<ColumnarValue> {
    let values = c.str(0)?;
    let format = literal_format(
        if tolerate {
            "try_to_number"
        } else {
            "to_number"
        },
        c.str(1)?.scalar(),
    )?;
    let mut out = Vec::with_capacity(c.len());
    for i in 0..c.len() {
        let Some(text) = values.get(i) else {
            out.push(None);
            continue;
        };
        match format.parse_number(text) {
            Some(v) => out.push(Some(v)),
            None if tolerate => out.push(None),
            None => {
                return Err(df(FunctionError::FormatMismatch {
                    format: format.text().to_string(),
                    input_type: "STRING",
                    input: text.to_string(),
                }))
            }
        }
    }
    let array = datafusion::arrow::array::Decimal128Array::from(out)
        .with_precision_and_scale(format.precision.max(1), format.scale)?;
    Ok(ColumnarValue::Array(Arc::new(array)))
}

/// `to_char(expr, fmt)`: by the type of expr.
fn to_char(c: &Call) -> Result<ColumnarValue> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::DataType as T;
    let value_type = c.arg(0)?.data_type();
    match value_type {
        T::Date32 | T::Date64 | T::Timestamp(..) => return super::datetime::date_format(c),
        T::Binary | T::LargeBinary | T::BinaryView => {
            let values = datafusion::arrow::compute::cast(&c.array(0)?, &T::Binary)?;
            let values = values.as_binary::<i32>();
            let formats = c.str(1)?;
            return string_rows(c.len(), |i, out| {
                let (false, Some(f)) = (values.is_null(i), formats.get(i)) else {
                    return Ok(false);
                };
                let bytes = values.value(i);
                match f.to_lowercase().as_str() {
                    "hex" => {
                        for b in bytes {
                            let _ = write!(out, "{b:02X}");
                        }
                    }
                    "base64" => base64_into(bytes, out),
                    "utf-8" | "utf8" => out.push_str(&String::from_utf8_lossy(bytes)),
                    _ => {
                        return Err(df(FunctionError::InvalidParameter {
                            function: "to_char",
                            parameter: "format",
                            reason: format!("'{f}' is not one of 'base64', 'hex', 'utf-8'"),
                        }))
                    }
                }
                Ok(true)
            });
        }
        _ => {}
    }
    let decimal_type = match value_type {
        T::Decimal128(..) => value_type.clone(),
        T::Decimal256(_, s) => T::Decimal128(38, s.min(38)),
        t if t.is_integer() => T::Decimal128(20, 0),
        T::Null => T::Decimal128(1, 0),
        t if t.is_floating() => T::Decimal128(30, 15),
        _ => T::Decimal128(38, 18),
    };
    let T::Decimal128(_, scale) = decimal_type else {
        return Err(datafusion::error::DataFusionError::Internal(
            "to_char: not a decimal".into(),
        ));
    };
    let values = datafusion::arrow::compute::cast(&c.array(0)?, &decimal_type)?;
    let values = values.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
    let format = literal_format("to_char", c.str(1)?.scalar())?;
    string_rows(c.len(), |i, out| {
        if values.is_null(i) {
            return Ok(false);
        }
        out.push_str(&format.format_number(values.value(i), scale));
        Ok(true)
    })
}

/// Standard base64 with padding.
fn base64_into(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

/// A character set `encode` and `decode` know, or Postgres' text forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Charset {
    Utf8,
    Ascii,
    Latin1,
    Utf16Be,
    Utf16Le,
    /// UTF-16 with a byte order mark, big-endian (Java's `UTF-16`).
    Utf16,
    /// `hex`, `base64`: Postgres' `encode`/`decode` (text, not bytes).
    Text(&'static str),
}

fn charset(name: &str) -> Option<Charset> {
    Some(
        match name.trim().to_uppercase().replace('_', "-").as_str() {
            "UTF-8" | "UTF8" => Charset::Utf8,
            "US-ASCII" | "ASCII" => Charset::Ascii,
            "ISO-8859-1" | "LATIN1" => Charset::Latin1,
            "UTF-16BE" => Charset::Utf16Be,
            "UTF-16LE" => Charset::Utf16Le,
            "UTF-16" => Charset::Utf16,
            "HEX" => Charset::Text("hex"),
            "BASE64" => Charset::Text("base64"),
            _ => return None,
        },
    )
}

fn literal_charset(scalars: &[Option<&datafusion::common::ScalarValue>]) -> Option<Charset> {
    use datafusion::common::ScalarValue as S;
    match scalars.get(1) {
        Some(Some(S::Utf8(Some(s)) | S::Utf8View(Some(s)) | S::LargeUtf8(Some(s)))) => charset(s),
        _ => None,
    }
}

fn unknown_charset(function: &'static str, name: &str) -> datafusion::error::DataFusionError {
    df(FunctionError::InvalidParameter {
        function,
        parameter: "charset",
        reason: format!(
            "expects one of the charsets 'US-ASCII', 'ISO-8859-1', 'UTF-8', 'UTF-16BE', 'UTF-16LE', 'UTF-16', but got '{name}'"
        ),
    })
}

fn encode_type(
    _: &[datafusion::arrow::datatypes::DataType],
    scalars: &[Option<&datafusion::common::ScalarValue>],
) -> Result<datafusion::arrow::datatypes::DataType> {
    Ok(match literal_charset(scalars) {
        Some(Charset::Text(_)) => datafusion::arrow::datatypes::DataType::Utf8,
        _ => datafusion::arrow::datatypes::DataType::Binary,
    })
}

fn decode_type(
    _: &[datafusion::arrow::datatypes::DataType],
    scalars: &[Option<&datafusion::common::ScalarValue>],
) -> Result<datafusion::arrow::datatypes::DataType> {
    Ok(match literal_charset(scalars) {
        Some(Charset::Text(_)) => datafusion::arrow::datatypes::DataType::Binary,
        _ => datafusion::arrow::datatypes::DataType::Utf8,
    })
}

/// The bytes of `text` in a character set (unmappable characters as `?`).
fn encode_text(text: &str, set: Charset, out: &mut Vec<u8>) {
    match set {
        Charset::Utf8 | Charset::Text(_) => out.extend_from_slice(text.as_bytes()),
        Charset::Ascii => out.extend(
            text.chars()
                .map(|c| if c.is_ascii() { c as u8 } else { b'?' }),
        ),
        Charset::Latin1 => out.extend(
            text.chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')),
        ),
        Charset::Utf16Be | Charset::Utf16 => {
            if set == Charset::Utf16 {
                out.extend_from_slice(&[0xFE, 0xFF]);
            }
            out.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        }
        Charset::Utf16Le => out.extend(text.encode_utf16().flat_map(u16::to_le_bytes)),
    }
}

/// The text of `bytes` in a character set (invalid sequences as U+FFFD).
fn decode_bytes(bytes: &[u8], set: Charset, out: &mut String) {
    match set {
        Charset::Utf8 | Charset::Text(_) => out.push_str(&String::from_utf8_lossy(bytes)),
        Charset::Ascii => {
            out.extend(
                bytes
                    .iter()
                    .map(|b| if b.is_ascii() { *b as char } else { '\u{FFFD}' }),
            )
        }
        Charset::Latin1 => out.extend(bytes.iter().map(|b| *b as char)),
        Charset::Utf16Be | Charset::Utf16Le | Charset::Utf16 => {
            let (mut bytes, mut little) = (bytes, set == Charset::Utf16Le);
            if set == Charset::Utf16 {
                match bytes {
                    [0xFE, 0xFF, rest @ ..] => bytes = rest,
                    [0xFF, 0xFE, rest @ ..] => {
                        bytes = rest;
                        little = true;
                    }
                    _ => {}
                }
            }
            let units = bytes.chunks(2).map(|p| {
                let pair = [p[0], p.get(1).copied().unwrap_or(0)];
                if little {
                    u16::from_le_bytes(pair)
                } else {
                    u16::from_be_bytes(pair)
                }
            });
            out.extend(char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')));
        }
    }
}

/// `encode(str, charset)`: the string's bytes.
fn encode(c: &Call) -> Result<ColumnarValue> {
    let sets = c.str(1)?;
    if let Some(Some(name)) = sets.scalar() {
        if let Some(Charset::Text(kind)) = charset(name) {
            let bytes = datafusion::arrow::compute::cast(
                &c.array(0)?,
                &datafusion::arrow::datatypes::DataType::Binary,
            )?;
            let bytes = datafusion::arrow::array::AsArray::as_binary::<i32>(&bytes);
            return string_rows(c.len(), |i, out| {
                use datafusion::arrow::array::Array;
                if bytes.is_null(i) {
                    return Ok(false);
                }
                if kind == "hex" {
                    for b in bytes.value(i) {
                        let _ = write!(out, "{b:02x}");
                    }
                } else {
                    base64_into(bytes.value(i), out);
                }
                Ok(true)
            });
        }
    }
    let values = datafusion::arrow::compute::cast(
        &c.array(0)?,
        &datafusion::arrow::datatypes::DataType::Utf8,
    )?;
    let values = super::udf::strs_of(&values)?;
    binary_rows(c.len(), |i, out| {
        let (Some(text), Some(name)) = (values.get(i), sets.get(i)) else {
            return Ok(false);
        };
        let set = charset(name).ok_or_else(|| unknown_charset("encode", name))?;
        encode_text(text, set, out);
        Ok(true)
    })
}

/// `decode(bin, charset)`: the text of the bytes.
fn decode(c: &Call) -> Result<ColumnarValue> {
    use datafusion::arrow::array::Array;
    let sets = c.str(1)?;
    let text_form = match sets.scalar() {
        Some(Some(name)) => match charset(name) {
            Some(Charset::Text(kind)) => Some(kind),
            _ => None,
        },
        _ => None,
    };
    if let Some(kind) = text_form {
        let values = datafusion::arrow::compute::cast(
            &c.array(0)?,
            &datafusion::arrow::datatypes::DataType::Utf8,
        )?;
        let values = super::udf::strs_of(&values)?;
        return binary_rows(c.len(), |i, out| {
            let Some(text) = values.get(i) else {
                return Ok(false);
            };
            let decoded = if kind == "hex" {
                unhex_text(text)
            } else {
                unbase64_text(text)
            };
            match decoded {
                Some(bytes) => {
                    out.extend_from_slice(&bytes);
                    Ok(true)
                }
                None => Err(df(FunctionError::InvalidParameter {
                    function: "decode",
                    parameter: "expr",
                    reason: format!("'{text}' is not valid {kind}"),
                })),
            }
        });
    }
    let bytes = datafusion::arrow::compute::cast(
        &c.array(0)?,
        &datafusion::arrow::datatypes::DataType::Binary,
    )?;
    let bytes = datafusion::arrow::array::AsArray::as_binary::<i32>(&bytes);
    string_rows(c.len(), |i, out| {
        let (false, Some(name)) = (bytes.is_null(i), sets.get(i)) else {
            return Ok(false);
        };
        let set = charset(name).ok_or_else(|| unknown_charset("decode", name))?;
        decode_bytes(bytes.value(i), set, out);
        Ok(true)
    })
}

/// Bytes from hex digits (an odd count starts with a half byte).
fn unhex_text(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .chars()
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(digits.len() / 2 + 1);
    let mut rest = digits.as_slice();
    if rest.len() % 2 == 1 {
        out.push(rest[0]);
        rest = &rest[1..];
    }
    out.extend(rest.chunks(2).map(|p| (p[0] << 4) | p[1]));
    Some(out)
}

/// Bytes from base64 (padding optional, blanks ignored).
fn unbase64_text(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' => 62,
            '/' => 63,
            '=' => break,
            _ => return None,
        };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `to_binary` and `try_to_binary`.
fn to_binary(c: &Call, tolerate: bool) -> Result<ColumnarValue> {
    let values = c.str(0)?;
    let formats = if c.args.len() == 2 {
        Some(c.str(1)?)
    } else {
        None
    };
    let function = if tolerate {
        "try_to_binary"
    } else {
        "to_binary"
    };
    binary_rows(c.len(), |i, out| {
        let Some(text) = values.get(i) else {
            return Ok(false);
        };
        let format = match &formats {
            Some(f) => match f.get(i) {
                Some(f) => f.to_lowercase(),
                None => return Ok(false),
            },
            None => "hex".to_string(),
        };
        let bytes = match format.as_str() {
            "hex" => unhex_text(text),
            "base64" => unbase64_text(text),
            "utf-8" | "utf8" => Some(text.as_bytes().to_vec()),
            _ if tolerate => return Ok(false),
            other => {
                return Err(df(FunctionError::InvalidParameter {
                    function,
                    parameter: "format",
                    reason: format!("expects one of 'hex', 'base64', 'utf-8', but got '{other}'"),
                }))
            }
        };
        match bytes {
            Some(b) => {
                out.extend_from_slice(&b);
                Ok(true)
            }
            None if tolerate => Ok(false),
            None => Err(df(FunctionError::CastInvalidInput {
                value: text.to_string(),
                from: "STRING",
                to: "BINARY".to_string(),
            })),
        }
    })
}

fn sentences_type(
    _: &[datafusion::arrow::datatypes::DataType],
    _: &[Option<&datafusion::common::ScalarValue>],
) -> Result<datafusion::arrow::datatypes::DataType> {
    use datafusion::arrow::datatypes::{DataType, Field};
    let words = DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)));
    Ok(DataType::List(Arc::new(Field::new_list_field(words, true))))
}

/// `sentences(str)`: sentences end at `.`, `!` or `?` before a blank or the
/// end; words are runs of letters, digits and inner apostrophes.
fn sentences(c: &Call) -> Result<ColumnarValue> {
    use datafusion::arrow::array::{ListBuilder, StringBuilder};
    let values = c.str(0)?;
    let mut out = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
    for i in 0..c.len() {
        let Some(text) = values.get(i) else {
            out.append(false);
            continue;
        };
        let chars: Vec<char> = text.chars().collect();
        let mut word = String::new();
        let mut words: Vec<String> = Vec::new();
        let flush_sentence =
            |words: &mut Vec<String>, out: &mut ListBuilder<ListBuilder<StringBuilder>>| {
                if !words.is_empty() {
                    for w in words.drain(..) {
                        out.values().values().append_value(w);
                    }
                    out.values().append(true);
                }
            };
        for (k, &ch) in chars.iter().enumerate() {
            let inner_apostrophe = ch == '\''
                && !word.is_empty()
                && chars.get(k + 1).is_some_and(|n| n.is_alphanumeric());
            if ch.is_alphanumeric() || inner_apostrophe {
                word.push(ch);
                continue;
            }
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            // A stop before a blank, and not before a lowercase word
            // (`p.m. now`).
            let ends = matches!(ch, '.' | '!' | '?')
                && chars.get(k + 1).is_none_or(|n| n.is_whitespace())
                && chars[k + 1..]
                    .iter()
                    .find(|n| !n.is_whitespace())
                    .is_none_or(|n| !n.is_lowercase());
            if ends {
                flush_sentence(&mut words, &mut out);
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        flush_sentence(&mut words, &mut out);
        out.append(true);
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

/// `lpad` / `rpad` of a BINARY (`lakegres_binary_lpad(b, len [, pad])`):
/// bytes, padded with `pad` (by default `x'00'`) or cut to `len`, as
/// Databricks pads a BINARY; DataFusion's pads read it as UTF-8 text.
pub(crate) fn binary_pad_udfs() -> Vec<ScalarUDF> {
    vec![binary_pad_udf(true), binary_pad_udf(false)]
}

fn binary_pad_udf(left: bool) -> ScalarUDF {
    const ARITIES: &[&[Arg]] = &[&[Any, Long], &[Any, Long, Any]];
    if left {
        Udf::new(
            "lakegres_binary_lpad",
            ARITIES,
            Returns::Fixed(&BINARY),
            |c| binary_pad(c, true),
        )
        .build()
    } else {
        Udf::new(
            "lakegres_binary_rpad",
            ARITIES,
            Returns::Fixed(&BINARY),
            |c| binary_pad(c, false),
        )
        .build()
    }
}

fn binary_pad(c: &Call, left: bool) -> Result<ColumnarValue> {
    let bytes_of = |i: usize| -> Result<datafusion::arrow::array::ArrayRef> {
        Ok(datafusion::arrow::compute::cast(
            &c.array(i)?,
            &datafusion::arrow::datatypes::DataType::Binary,
        )?)
    };
    let values = bytes_of(0)?;
    let values = datafusion::arrow::array::AsArray::as_binary::<i32>(&values);
    let pads = if c.args.len() > 2 {
        Some(bytes_of(2)?)
    } else {
        None
    };
    let pads = pads
        .as_ref()
        .map(datafusion::arrow::array::AsArray::as_binary::<i32>);
    let lengths = c.long(1)?;
    binary_rows(c.len(), |i, out| {
        use datafusion::arrow::array::Array;
        let pad: &[u8] = match pads {
            Some(p) if p.is_null(i) => return Ok(false),
            Some(p) => p.value(i),
            None => &[0],
        };
        let (Some(len), false) = (lengths.get(i), values.is_null(i)) else {
            return Ok(false);
        };
        let value = values.value(i);
        let len = usize::try_from(len.max(0)).unwrap_or(0);
        if value.len() >= len || pad.is_empty() {
            out.extend_from_slice(&value[..value.len().min(len)]);
            return Ok(true);
        }
        let fill = pad.iter().cycle().take(len - value.len());
        if left {
            out.extend(fill);
            out.extend_from_slice(value);
        } else {
            out.extend_from_slice(value);
            out.extend(fill);
        }
        Ok(true)
    })
}

/// The analyzer rule sending `lpad` / `rpad` of a BINARY (which type
/// coercion cast to STRING) to [`binary_pad_udfs`].
#[derive(Debug)]
pub(crate) struct BinaryPads;

impl datafusion::optimizer::AnalyzerRule for BinaryPads {
    fn name(&self) -> &str {
        "binary_pads"
    }

    fn analyze(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _: &datafusion::common::config::ConfigOptions,
    ) -> Result<datafusion::logical_expr::LogicalPlan> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::logical_expr::expr::{Cast, ScalarFunction};
        use datafusion::logical_expr::{Expr, ExprSchemable};
        let (lpad, rpad) = (
            Arc::new(binary_pad_udf(true)),
            Arc::new(binary_pad_udf(false)),
        );
        let unwrapped = |e: &Expr, schema: &datafusion::common::DFSchema| -> Option<Expr> {
            let Expr::Cast(Cast { expr, .. }) = e else {
                return None;
            };
            let binary = matches!(
                expr.get_type(schema).ok()?,
                datafusion::arrow::datatypes::DataType::Binary
                    | datafusion::arrow::datatypes::DataType::LargeBinary
                    | datafusion::arrow::datatypes::DataType::BinaryView
            );
            binary.then(|| expr.as_ref().clone())
        };
        let mut found = false;
        let transformed = plan.transform_up_with_subqueries(|plan| {
            let schema = match plan.inputs().as_slice() {
                [one] => Arc::clone(one.schema()),
                // The plans above one rewritten take its new type.
                _ if found => return plan.recompute_schema().map(Transformed::yes),
                _ => return Ok(Transformed::no(plan)),
            };
            let mapped = plan.map_expressions(|e| {
                e.transform_up(|e| {
                    let Expr::ScalarFunction(f) = &e else {
                        return Ok(Transformed::no(e));
                    };
                    let pad = match f.func.name() {
                        "lpad" => &lpad,
                        "rpad" => &rpad,
                        _ => return Ok(Transformed::no(e)),
                    };
                    let Some(value) = f.args.first().and_then(|a| unwrapped(a, &schema)) else {
                        return Ok(Transformed::no(e));
                    };
                    // A STRING pad makes it a STRING function, as in Spark.
                    let Some(length) = f.args.get(1) else {
                        return Ok(Transformed::no(e));
                    };
                    let mut args = vec![value, length.clone()];
                    if let Some(fill) = f.args.get(2) {
                        let Some(bytes) = unwrapped(fill, &schema) else {
                            return Ok(Transformed::no(e));
                        };
                        args.push(bytes);
                    }
                    found = true;
                    Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(Arc::clone(pad), args),
                    )))
                })
            })?;
            if found {
                mapped.map_data(|plan| plan.recompute_schema())
            } else {
                Ok(mapped)
            }
        })?;
        Ok(transformed.data)
    }
}
