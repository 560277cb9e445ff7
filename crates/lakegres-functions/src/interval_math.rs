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
    ]
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
