//! An interval times or divided by a number, as Databricks computes it: a
//! year-month interval (months) and a day-time one (microseconds, days
//! counted as 24 hours) scaled, rounded half up, overflow an error
//! (`INTERVAL_ARITHMETIC_OVERFLOW`), division by zero
//! `INTERVAL_DIVIDED_BY_ZERO` (NULL for `try_multiply` / `try_divide`).
//! DataFusion multiplies no interval. The result is an interval whose days
//! and time hold the microseconds (`3 days` * 1.5 is `4 days 12:00:00`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{Arg, Call, Returns, Udf};

const MICROS_PER_DAY: i128 = 86_400_000_000;

static INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);

/// An interval operand: an interval, or the difference of two timestamps.
pub(crate) fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(_) | DataType::Duration(_))
}

/// A number operand: a number, a string read as one, or NULL.
pub(crate) fn is_scale(t: &DataType) -> bool {
    t.is_numeric()
        || matches!(
            t,
            DataType::Null | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
}

/// `lakegres_interval_multiply(interval, number)`, `lakegres_interval_divide`
/// and their `try_` forms.
pub(crate) fn udf(divide: bool, lenient: bool) -> ScalarUDF {
    const ARGS: &[&[Arg]] = &[&[Arg::Any, Arg::Any]];
    let returns = Returns::Fixed(&INTERVAL);
    match (divide, lenient) {
        (false, false) => Udf::new("lakegres_interval_multiply", ARGS, returns, |c| {
            kernel(c, false, false)
        }),
        (true, false) => Udf::new("lakegres_interval_divide", ARGS, returns, |c| {
            kernel(c, true, false)
        }),
        (false, true) => Udf::new("lakegres_interval_try_multiply", ARGS, returns, |c| {
            kernel(c, false, true)
        }),
        (true, true) => Udf::new("lakegres_interval_try_divide", ARGS, returns, |c| {
            kernel(c, true, true)
        }),
    }
    .build()
}

/// The registered forms.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        udf(false, false),
        udf(true, false),
        udf(false, true),
        udf(true, true),
        Udf::new(
            IN_UNITS,
            &[&[Arg::Any, Arg::Str]],
            Returns::Fixed(&COUNT),
            in_units,
        )
        .build(),
        Udf::new(
            TO_INTERVAL,
            &[&[Arg::Any, Arg::Str, Arg::Str]],
            Returns::Fixed(&INTERVAL),
            to_interval,
        )
        .build(),
        Udf::new(
            "make_ym_interval",
            &[&[], &[Arg::Long], &[Arg::Long, Arg::Long]],
            Returns::Fixed(&INTERVAL),
            make_ym_interval,
        )
        .describe(
            "make_ym_interval([years [, months]]) - Make year-month interval from years, months.",
        )
        .build(),
    ]
}

/// `make_ym_interval(years, months)`: `years * 12 + months` months, an
/// overflow of INT months an error.
fn make_ym_interval(c: &Call) -> Result<ColumnarValue> {
    let n = c.len();
    let part = |i: usize| -> Result<Vec<Option<i64>>> {
        if i >= c.args.len() {
            return Ok(vec![Some(0); n]);
        }
        let longs = c.long(i)?;
        Ok((0..n).map(|r| longs.get(r)).collect())
    };
    let (years, months) = (part(0)?, part(1)?);
    let mut out = Vec::with_capacity(n);
    for (y, m) in years.into_iter().zip(months) {
        let (Some(y), Some(m)) = (y, m) else {
            out.push(None);
            continue;
        };
        let total = i128::from(y) * 12 + i128::from(m);
        let months = i32::try_from(total).map_err(|_| {
            df(FunctionError::IntervalOverflow {
                operation: format!("make_ym_interval({y}, {m})"),
                hint: "make_interval",
            })
        })?;
        out.push(Some(IntervalMonthDayNano::new(months, 0, 0)));
    }
    Ok(ColumnarValue::Array(Arc::new(
        IntervalMonthDayNanoArray::from(out),
    )))
}

/// `lakegres_interval_in_units(interval, unit)`: the interval counted in
/// `unit` (YEAR … SECOND), to 6 decimal places; a cast of an interval
/// literal to a number reads it so (rewrite.rs).
pub(crate) const IN_UNITS: &str = "lakegres_interval_in_units";

/// `lakegres_to_interval(x, from, to)`: `CAST(x AS INTERVAL from TO to)`,
/// a number counting the last field (months rounded half up, time cut to
/// the field), a string in Spark's interval text.
pub(crate) const TO_INTERVAL: &str = "lakegres_to_interval";

static COUNT: DataType = DataType::Decimal128(38, 6);

/// Microseconds in a day-time field, months in a year-month one
/// (`None`: not a field).
fn field_size(unit: &str) -> Option<(bool, i128)> {
    Some(match unit.to_ascii_uppercase().as_str() {
        "YEAR" | "YEARS" => (true, 12),
        "MONTH" | "MONTHS" => (true, 1),
        "DAY" | "DAYS" => (false, MICROS_PER_DAY),
        "HOUR" | "HOURS" => (false, 3_600_000_000),
        "MINUTE" | "MINUTES" => (false, 60_000_000),
        "SECOND" | "SECONDS" => (false, 1_000_000),
        _ => return None,
    })
}

fn in_units(c: &Call) -> Result<ColumnarValue> {
    let intervals = cast(&c.array(0)?, &INTERVAL)?;
    let intervals = intervals.as_primitive::<IntervalMonthDayNanoType>();
    let units = c.str(1)?;
    let mut out = Vec::with_capacity(intervals.len());
    for i in 0..intervals.len() {
        let (Some((months_field, size)), true) =
            (units.get(i).and_then(field_size), intervals.is_valid(i))
        else {
            out.push(None);
            continue;
        };
        let v = intervals.value(i);
        let scaled = if months_field {
            div_half_up(i128::from(v.months) * 1_000_000, size)
        } else {
            let micros = i128::from(v.days) * MICROS_PER_DAY + i128::from(v.nanoseconds) / 1000;
            div_half_up(micros * 1_000_000, size)
        };
        out.push(scaled);
    }
    Ok(ColumnarValue::Array(Arc::new(
        datafusion::arrow::array::Decimal128Array::from(out).with_precision_and_scale(38, 6)?,
    )))
}

fn to_interval(c: &Call) -> Result<ColumnarValue> {
    let values = c.array(0)?;
    let (from, to) = (c.str(1)?, c.str(2)?);
    let last = to.get(0).or(from.get(0)).and_then(field_size);
    let Some((months_field, size)) = last else {
        return Err(df(FunctionError::mismatch(
            "CAST",
            "an interval type names fields YEAR … SECOND",
        )));
    };
    if is_interval(values.data_type()) || values.data_type() == &DataType::Null {
        return Ok(ColumnarValue::Array(cast(&values, &INTERVAL)?));
    }
    if matches!(
        values.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        // Spark's text: `INTERVAL '3-1' YEAR TO MONTH` or `'3-1'`.
        let strings = cast(&values, &DataType::Utf8)?;
        let texts: datafusion::arrow::array::StringArray = strings
            .as_string::<i32>()
            .iter()
            .map(|s| s.map(|s| interval_text_of(s, from.get(0), to.get(0))))
            .collect();
        let parsed =
            super::ansi_cast::cast_checked(&(Arc::new(texts) as ArrayRef), &INTERVAL, None)?;
        return Ok(ColumnarValue::Array(parsed));
    }
    let counts = scales(&values)?;
    let mut out = Vec::with_capacity(counts.len());
    for by in counts {
        let Some(by) = by else {
            out.push(None);
            continue;
        };
        let value = if months_field {
            scaled(size, by, false)
                .and_then(|m| i32::try_from(m).ok())
                .map(|m| IntervalMonthDayNano::new(m, 0, 0))
        } else {
            // Cut to the field, as Spark does.
            let micros = match by {
                Scale::Exact(v, s) => 10i128
                    .checked_pow(s)
                    .and_then(|ten| v.checked_mul(size).map(|m| m / ten)),
                Scale::Double(v) => {
                    let m = v * size as f64;
                    (m.is_finite() && m.abs() < 9.2e18).then_some(m as i128)
                }
            };
            // (Seconds keep their microseconds.)
            let cut = if size == 1_000_000 { 1 } else { size };
            micros.map(|m| m - m % cut).and_then(|m| {
                let nanos = i64::try_from((m % MICROS_PER_DAY) * 1000).ok()?;
                let days = i32::try_from(m / MICROS_PER_DAY).ok()?;
                Some(IntervalMonthDayNano::new(0, days, nanos))
            })
        };
        match value {
            Some(v) => out.push(Some(v)),
            None => {
                return Err(df(FunctionError::IntervalOverflow {
                    operation: "CAST to an interval".into(),
                    hint: "cast",
                }))
            }
        }
    }
    Ok(ColumnarValue::Array(Arc::new(
        IntervalMonthDayNanoArray::from(out),
    )))
}

/// The text of an interval string cast to `INTERVAL from TO to`: the
/// quoted part of `INTERVAL '3-1' YEAR TO MONTH`, its fields named, in
/// the form Arrow reads (`3 years 1 months`).
fn interval_text_of(s: &str, from: Option<&str>, to: Option<&str>) -> String {
    let mut text = s.trim();
    if let (Some(open), Some(close)) = (text.find('\''), text.rfind('\'')) {
        if open < close {
            text = &text[open + 1..close];
        }
    }
    const NAMES: [&str; 6] = ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"];
    let at = |u: Option<&str>| u.and_then(|u| NAMES.iter().position(|n| n.eq_ignore_ascii_case(u)));
    let (Some(first), Some(last)) = (at(from), at(to).or(at(from))) else {
        return s.to_string();
    };
    match super::interval_text::range_fields(text, first, last) {
        Some((negative, parts)) => super::interval_text::named_fields(negative, &parts, first),
        None => s.to_string(),
    }
}

/// A number as the kernel scales by it: exact (`value / 10^scale`) or
/// a DOUBLE.
#[derive(Clone, Copy)]
enum Scale {
    Exact(i128, u32),
    Double(f64),
}

fn scales(a: &ArrayRef) -> Result<Vec<Option<Scale>>> {
    let t = a.data_type();
    if t.is_integer() {
        let longs = cast(a, &DataType::Int64)?;
        return Ok(longs
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .iter()
            .map(|v| v.map(|v| Scale::Exact(i128::from(v), 0)))
            .collect());
    }
    if let DataType::Decimal128(_, s) = t {
        let scale = u32::try_from(*s).unwrap_or(0);
        return Ok(a
            .as_primitive::<datafusion::arrow::datatypes::Decimal128Type>()
            .iter()
            .map(|v| v.map(|v| Scale::Exact(v, scale)))
            .collect());
    }
    let doubles = super::ansi_cast::cast_checked(a, &DataType::Float64, None)?;
    Ok(doubles
        .as_primitive::<Float64Type>()
        .iter()
        .map(|v| v.map(Scale::Double))
        .collect())
}

/// `n / d` rounded half away from zero.
fn div_half_up(n: i128, d: i128) -> Option<i128> {
    let q = n.checked_div(d)?;
    let r = n.checked_rem(d)?;
    if r.checked_abs()?.checked_mul(2)? >= d.checked_abs()? {
        Some(if (n < 0) != (d < 0) { q - 1 } else { q + 1 })
    } else {
        Some(q)
    }
}

/// `x` times (or divided by) `by`; `None` when out of `i128` or not finite.
fn scaled(x: i128, by: Scale, divide: bool) -> Option<i128> {
    match by {
        Scale::Exact(v, s) => {
            let ten = 10i128.checked_pow(s)?;
            if divide {
                div_half_up(x.checked_mul(ten)?, v)
            } else {
                div_half_up(x.checked_mul(v)?, ten)
            }
        }
        Scale::Double(v) => {
            let r = if divide { x as f64 / v } else { x as f64 * v };
            (r.is_finite() && r.abs() < 1.7e38).then(|| r.round() as i128)
        }
    }
}

fn is_zero(by: Scale) -> bool {
    match by {
        Scale::Exact(v, _) => v == 0,
        Scale::Double(v) => v == 0.0,
    }
}

pub(crate) fn kernel(c: &Call, divide: bool, lenient: bool) -> Result<ColumnarValue> {
    let (mut a, mut b) = (c.array(0)?, c.array(1)?);
    if !is_interval(a.data_type()) {
        std::mem::swap(&mut a, &mut b);
    }
    let intervals = cast(&a, &INTERVAL)?;
    let intervals = intervals.as_primitive::<IntervalMonthDayNanoType>();
    let by = scales(&b)?;
    let hint = if divide { "divide" } else { "multiply" };
    let mut out = Vec::with_capacity(intervals.len());
    for (i, by) in by.into_iter().enumerate() {
        let (Some(by), true) = (by, intervals.is_valid(i)) else {
            out.push(None);
            continue;
        };
        let v = intervals.value(i);
        if divide && is_zero(by) {
            if lenient {
                out.push(None);
                continue;
            }
            return Err(df(FunctionError::IntervalDividedByZero));
        }
        let micros = i128::from(v.days) * MICROS_PER_DAY + i128::from(v.nanoseconds) / 1000;
        let months = scaled(i128::from(v.months), by, divide).and_then(|m| i32::try_from(m).ok());
        let micros = scaled(micros, by, divide).and_then(|m| i64::try_from(m).ok());
        let (Some(months), Some(micros)) = (months, micros) else {
            if lenient {
                out.push(None);
                continue;
            }
            return Err(df(FunctionError::IntervalOverflow {
                operation: format!(
                    "interval {}",
                    if divide { "division" } else { "multiplication" }
                ),
                hint,
            }));
        };
        let micros = i128::from(micros);
        let days = micros / MICROS_PER_DAY;
        let rest = micros % MICROS_PER_DAY;
        out.push(Some(IntervalMonthDayNano::new(
            months,
            i32::try_from(days).unwrap_or(i32::MAX),
            i64::try_from(rest * 1000).unwrap_or(i64::MAX),
        )));
    }
    Ok(ColumnarValue::Array(Arc::new(
        IntervalMonthDayNanoArray::from(out),
    )))
}
