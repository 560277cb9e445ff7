//! `CAST(x AS STRING)` as Databricks writes values
//! (<https://docs.databricks.com/sql/language-manual/functions/cast.html>):
//! timestamps `2024-01-05 10:20:30[.fraction]` in the session time zone,
//! doubles as Java prints them (`1.0`, `1.0E10`), arrays `[1, 2]`, maps
//! `{a -> 1}`, structs `{1, a}`. An analyzer rule, run after DataFusion's
//! type coercion, turns every cast to a string type into [`to_text`],
//! which keeps Arrow's cast for the types whose text is the same.

use std::fmt::Write;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{ColumnarValue, Expr, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;

use super::udf::{string_rows, Arg, Call, Returns, Udf, UTF8};

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new(
            "string",
            &[&[Arg::Any]],
            Returns::Fixed(&UTF8),
            to_text_kernel,
        )
        .describe("string(expr) - Casts the value expr to STRING.")
        .build(),
        Udf::new("typeof", &[&[Arg::Any]], Returns::Fixed(&UTF8), type_of)
            .describe(
                "typeof(expr) - Return DDL-formatted type string for the data type of the input.",
            )
            .build(),
    ]
}

/// `typeof(x)`: the type's name as Databricks writes it (`int`,
/// `decimal(2,1)`, `array<string>`).
fn type_of(c: &Call) -> Result<ColumnarValue> {
    let name = type_text(&c.arg(0)?.data_type());
    Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
}

/// A type's name as `typeof` and DESCRIBE write it.
pub fn type_text(t: &DataType) -> String {
    match t {
        DataType::Null => "void".into(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            format!("array<{}>", type_text(f.data_type()))
        }
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "map<{},{}>",
                type_text(kv[0].data_type()),
                type_text(kv[1].data_type())
            ),
            _ => "map".into(),
        },
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), type_text(f.data_type())))
                .collect::<Vec<_>>()
                .join(",")
        ),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("decimal({p},{s})"),
        other => super::ansi_cast::sql_type(other).to_lowercase(),
    }
}

/// `CAST(x AS STRING)`.
pub(crate) fn to_text() -> ScalarUDF {
    Udf::new(
        "cast_to_string",
        &[&[Arg::Any]],
        Returns::Fixed(&UTF8),
        to_text_kernel,
    )
    .build()
}

/// Whether Databricks' text of a type differs from Arrow's cast.
fn needs_own_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Timestamp(..)
            | DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano)
            | DataType::Float32
            | DataType::Float64
            | DataType::Float16
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..)
            | DataType::Struct(_)
    )
}

/// See the module comment.
#[derive(Debug, Default)]
pub(crate) struct DatabricksCasts;

impl AnalyzerRule for DatabricksCasts {
    fn name(&self) -> &str {
        "databricks_casts_to_string"
    }

    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        let udf = Arc::new(to_text());
        rewrite_casts(plan, |cast, source| {
            let (inner, target) = match cast {
                Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                    (expr, field.data_type())
                }
                _ => return Ok(None),
            };
            if !matches!(
                target,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) || !needs_own_text(source)
            {
                return Ok(None);
            }
            let call = Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(&udf),
                vec![inner.as_ref().clone()],
            ));
            Ok(Some(if target == &DataType::Utf8 {
                call
            } else {
                Expr::Cast(Cast::new(Box::new(call), target.clone()))
            }))
        })
    }
}

/// Every CAST and TRY_CAST of a plan (its subqueries too) that `rewrite`
/// replaces, given the cast and its operand's type; the plan's column names
/// stay as they were.
pub(crate) fn rewrite_casts(
    plan: LogicalPlan,
    rewrite: impl Fn(&Expr, &DataType) -> Result<Option<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        let schema = datafusion::logical_expr::utils::merge_schema(&node.inputs());
        let schema = if node.inputs().is_empty() {
            node.schema().as_ref().clone()
        } else {
            schema
        };
        let names = datafusion::logical_expr::expr_rewriter::NamePreserver::new(&node);
        node.map_expressions(|e| {
            let name = names.save(&e);
            e.transform_up(|e| {
                let inner = match &e {
                    Expr::Cast(Cast { expr, .. }) | Expr::TryCast(TryCast { expr, .. }) => expr,
                    _ => return Ok(Transformed::no(e)),
                };
                let Ok(source) =
                    datafusion::logical_expr::ExprSchemable::get_type(inner.as_ref(), &schema)
                else {
                    return Ok(Transformed::no(e));
                };
                Ok(match rewrite(&e, &source)? {
                    Some(new) => Transformed::yes(new),
                    None => Transformed::no(e),
                })
            })
            .map(|t| t.update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

fn to_text_kernel(c: &Call) -> Result<ColumnarValue> {
    let a = c.array(0)?;
    if !needs_own_text(a.data_type()) {
        return Ok(ColumnarValue::Array(cast(&a, &DataType::Utf8)?));
    }
    let zone = c.time_zone();
    string_rows(a.len(), |i, out| {
        if a.is_null(i) {
            return Ok(false);
        }
        write_text_in(a.as_ref(), i, out, &zone)?;
        Ok(true)
    })
}

/// A column as Databricks' `CAST(… AS STRING)` writes it, in UTC: how the
/// server sends a column no Postgres type can carry (a MAP, an array of
/// arrays).
pub fn databricks_text(a: &dyn Array) -> Result<datafusion::arrow::array::StringArray> {
    let mut out = datafusion::arrow::array::StringBuilder::new();
    let mut text = String::new();
    for i in 0..a.len() {
        if a.is_null(i) {
            out.append_null();
            continue;
        }
        text.clear();
        write_text(a, i, &mut text)?;
        out.append_value(&text);
    }
    Ok(out.finish())
}

/// Writes row `i` of `a` as Databricks' `CAST(… AS STRING)` does, in UTC.
pub(crate) fn write_text(a: &dyn Array, i: usize, out: &mut String) -> Result<()> {
    write_text_in(a, i, out, &chrono_tz::UTC)
}

/// A double as Java's `Double.toString` writes it.
pub(crate) fn java_double(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        let text = format!("{v}");
        out.push_str(&text);
        if !text.contains('.') {
            out.push_str(".0");
        }
    } else {
        let text = format!("{v:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        out.push_str(mantissa);
        if !mantissa.contains('.') {
            out.push_str(".0");
        }
        out.push('E');
        out.push_str(exponent);
    }
}

fn java_float(v: f32, out: &mut String) {
    if v.is_finite() && v != 0.0 && (1e-3..1e7).contains(&v.abs()) {
        let text = format!("{v}");
        out.push_str(&text);
        if !text.contains('.') {
            out.push_str(".0");
        }
    } else if v.is_finite() && v != 0.0 {
        let text = format!("{v:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        out.push_str(mantissa);
        if !mantissa.contains('.') {
            out.push_str(".0");
        }
        out.push('E');
        out.push_str(exponent);
    } else {
        java_double(v as f64, out)
    }
}

/// `2024-01-05 10:20:30[.123]`: the fraction without trailing zeros.
fn write_local(t: &NaiveDateTime, out: &mut String) {
    let _ = write!(out, "{}", t.format("%Y-%m-%d %H:%M:%S"));
    let nanos = chrono::Timelike::nanosecond(t) % 1_000_000_000;
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        let _ = write!(out, ".{}", fraction.trim_end_matches('0'));
    }
}

fn local_time(a: &dyn Array, i: usize, zone: &chrono_tz::Tz) -> Option<NaiveDateTime> {
    let DataType::Timestamp(unit, tz) = a.data_type() else {
        return None;
    };
    let v = match unit {
        TimeUnit::Second => {
            a.as_primitive::<datafusion::arrow::datatypes::TimestampSecondType>()
                .value(i)
                * 1_000_000_000
        }
        TimeUnit::Millisecond => {
            a.as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
                .value(i)
                * 1_000_000
        }
        TimeUnit::Microsecond => {
            a.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                .value(i)
                * 1_000
        }
        TimeUnit::Nanosecond => a
            .as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>()
            .value(i),
    };
    let utc = DateTime::from_timestamp_nanos(v);
    Some(if tz.is_some() {
        utc.with_timezone(zone).naive_local()
    } else {
        utc.naive_utc()
    })
}

/// A date or timestamp inside `to_json`: ISO with `T` and the zone.
pub(crate) fn write_json_time(a: &dyn Array, i: usize, out: &mut String) -> Result<()> {
    match a.data_type() {
        DataType::Timestamp(_, tz) => {
            if let Some(t) = local_time(a, i, &chrono_tz::UTC) {
                let _ = write!(out, "{}", t.format("%Y-%m-%dT%H:%M:%S%.3f"));
                if tz.is_some() {
                    out.push('Z');
                }
            }
            Ok(())
        }
        _ => write_text(a, i, out),
    }
}

fn write_text_in(a: &dyn Array, i: usize, out: &mut String, zone: &chrono_tz::Tz) -> Result<()> {
    if a.is_null(i) {
        out.push_str("null");
        return Ok(());
    }
    match a.data_type() {
        DataType::Float64 => java_double(
            a.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .value(i),
            out,
        ),
        DataType::Float32 => java_float(
            a.as_primitive::<datafusion::arrow::datatypes::Float32Type>()
                .value(i),
            out,
        ),
        DataType::Timestamp(..) => {
            if let Some(t) = local_time(a, i, zone) {
                write_local(&t, out);
            }
        }
        DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano) => {
            let v = a
                .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
                .value(i);
            write_ansi_interval(v.months, v.days, v.nanoseconds, out);
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
            let list = super::array::as_list(a.slice(i, 1))?;
            let values = list.value(0);
            out.push('[');
            for k in 0..values.len() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_text_in(values.as_ref(), k, out, zone)?;
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
                    out.push_str(", ");
                }
                write_text_in(m.keys().as_ref(), k, out, zone)?;
                out.push_str(" -> ");
                write_text_in(m.values().as_ref(), k, out, zone)?;
            }
            out.push('}');
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            out.push('{');
            for (k, col) in s.columns().iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_text_in(col.as_ref(), i, out, zone)?;
            }
            out.push('}');
        }
        _ => {
            let v = ScalarValue::try_from_array(a, i)?;
            let text = v.cast_to(&DataType::Utf8)?;
            if let ScalarValue::Utf8(Some(t)) = text {
                out.push_str(&t);
            }
        }
    }
    Ok(())
}

/// An interval as Databricks writes an ANSI one: months alone as
/// `INTERVAL '3-1' YEAR TO MONTH`, days and time as
/// `INTERVAL '3 00:00:01.5' DAY TO SECOND`; both (a legacy interval) as
/// `3 mons 1 days …`.
fn write_ansi_interval(months: i32, days: i32, nanos: i64, out: &mut String) {
    if months != 0 && (days != 0 || nanos != 0) {
        let _ = write!(
            out,
            "{months} months {days} days {} microseconds",
            nanos / 1000
        );
        return;
    }
    if months != 0 {
        let sign = if months < 0 { "-" } else { "" };
        let m = i64::from(months).abs();
        let _ = write!(out, "INTERVAL '{sign}{}-{}' YEAR TO MONTH", m / 12, m % 12);
        return;
    }
    let micros = i128::from(days) * 86_400_000_000 + i128::from(nanos / 1000);
    let sign = if micros < 0 { "-" } else { "" };
    let m = micros.abs();
    let (d, rest) = (m / 86_400_000_000, m % 86_400_000_000);
    let (h, rest) = (rest / 3_600_000_000, rest % 3_600_000_000);
    let (min, rest) = (rest / 60_000_000, rest % 60_000_000);
    let (sec, frac) = (rest / 1_000_000, rest % 1_000_000);
    let _ = write!(out, "INTERVAL '{sign}{d} {h:02}:{min:02}:{sec:02}");
    if frac != 0 {
        let digits = format!("{frac:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out.push_str("' DAY TO SECOND");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: f64) -> String {
        let mut s = String::new();
        java_double(v, &mut s);
        s
    }

    #[test]
    fn doubles_print_as_java() {
        assert_eq!(d(1.0), "1.0");
        assert_eq!(d(0.1), "0.1");
        assert_eq!(d(3.5), "3.5");
        assert_eq!(d(1e10), "1.0E10");
        assert_eq!(d(1.234e-5), "1.234E-5");
        assert_eq!(d(1234567.0), "1234567.0");
        assert_eq!(d(f64::NAN), "NaN");
    }
}
