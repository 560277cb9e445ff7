//! Arrow batches → pgwire rows, through arrow-pg (the only caller of it).
//! An error while rows stream becomes a statement error with its SQLSTATE,
//! not arrow-pg's bare XX000.

use std::sync::Arc;

use chrono::{Datelike, Timelike};
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Float32Type, Float64Type, Schema, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::arrow::error::ArrowError;
use datafusion::execution::SendableRecordBatchStream;
use futures::{stream, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse};
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;

use crate::sqlstate::user_error;

/// Column descriptions for a result schema in the requested formats.
pub fn fields(schema: &Schema, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    arrow_pg::datatypes::arrow_schema_to_pg_fields(schema, format, None)
}

/// The Postgres type of an Arrow type (for parameter descriptions).
pub fn pg_type(data_type: &DataType) -> Type {
    arrow_pg::datatypes::into_pg_type(data_type).unwrap_or(Type::UNKNOWN)
}

/// A streaming row response; batches are encoded as the client reads them.
pub fn query_response(
    batches: SendableRecordBatchStream,
    format: &Format,
    tag: &str,
) -> PgWireResult<QueryResponse> {
    let fields = Arc::new(fields(batches.schema().as_ref(), format)?);
    let row_fields = Arc::clone(&fields);
    let text_floats: Vec<usize> = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.format() == FieldFormat::Text
                && matches!(
                    *f.datatype(),
                    Type::FLOAT4 | Type::FLOAT8 | Type::TIMESTAMP | Type::TIMESTAMPTZ | Type::DATE
                )
        })
        .map(|(i, _)| i)
        .collect();
    let rows = batches
        .map(
            move |batch| -> Box<dyn Iterator<Item = PgWireResult<DataRow>> + Send> {
                let batch = batch.and_then(|b| {
                    as_postgres_text(b, &text_floats).map_err(|e| {
                        datafusion::error::DataFusionError::ArrowError(Box::new(e), None)
                    })
                });
                match batch {
                    Ok(batch) => Box::new(arrow_pg::datatypes::encode_recordbatch(
                        Arc::clone(&row_fields),
                        batch,
                    )),
                    Err(e) => Box::new(std::iter::once(Err::<DataRow, PgWireError>(user_error(
                        &lakegres_sql::Error::DataFusion(e),
                    )))),
                }
            },
        )
        .flat_map(stream::iter);
    let mut response = QueryResponse::new(fields, rows);
    response.set_command_tag(tag);
    Ok(response)
}

/// Text-format columns whose Postgres text arrow-pg gets wrong or makes
/// slowly are turned into text here; the column keeps its type in the row
/// description, and binary format is left as it is.
///
/// - floats: Postgres prints `50`, `1e+20`, `Infinity`; arrow-pg `50.0`,
///   `1e20`, `inf`;
/// - timestamps and dates: arrow-pg parses a strftime pattern for every
///   value (a quarter of the time of a `SELECT *`), and prints `.000000`
///   where Postgres prints no fraction.
fn as_postgres_text(batch: RecordBatch, columns: &[usize]) -> Result<RecordBatch, ArrowError> {
    if columns.is_empty() {
        return Ok(batch);
    }
    let mut arrays: Vec<ArrayRef> = batch.columns().to_vec();
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for &i in columns {
        let (Some(array), Some(field)) = (arrays.get(i), fields.get_mut(i)) else {
            continue;
        };
        let text: StringArray = match array.data_type() {
            DataType::Float64 => array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| float_text(v, 15)))
                .collect(),
            DataType::Float32 => array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map(|v| float_text(f64::from(v), 6)))
                .collect(),
            DataType::Date32 => array
                .as_primitive::<Date32Type>()
                .iter()
                .map(|v| v.and_then(date_text))
                .collect(),
            DataType::Timestamp(unit, tz) => {
                let with_zone = tz.is_some();
                let (values, per_second): (Vec<Option<i64>>, i64) = match unit {
                    TimeUnit::Second => (
                        array.as_primitive::<TimestampSecondType>().iter().collect(),
                        1,
                    ),
                    TimeUnit::Millisecond => (
                        array
                            .as_primitive::<TimestampMillisecondType>()
                            .iter()
                            .collect(),
                        1_000,
                    ),
                    TimeUnit::Microsecond => (
                        array
                            .as_primitive::<TimestampMicrosecondType>()
                            .iter()
                            .collect(),
                        1_000_000,
                    ),
                    TimeUnit::Nanosecond => (
                        array
                            .as_primitive::<TimestampNanosecondType>()
                            .iter()
                            .collect(),
                        1_000_000_000,
                    ),
                };
                values
                    .into_iter()
                    .map(|v| v.and_then(|v| timestamp_text(v, per_second, with_zone)))
                    .collect()
            }
            _ => continue,
        };
        arrays[i] = Arc::new(text);
        *field = field.clone().with_data_type(DataType::Utf8);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
}

/// `YYYY-MM-DD` of days since the epoch.
fn date_text(days: i32) -> Option<String> {
    let date = chrono::NaiveDate::from_num_days_from_ce_opt(days.checked_add(719_163)?)?;
    Some(format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        date.month(),
        date.day()
    ))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff][+00]` of a UTC timestamp, as Postgres
/// prints it with DateStyle ISO and TimeZone UTC: trailing zeros of the
/// fraction dropped, no fraction at all when it is zero.
fn timestamp_text(value: i64, per_second: i64, with_zone: bool) -> Option<String> {
    let seconds = value.div_euclid(per_second);
    let sub = value.rem_euclid(per_second);
    let micros = match per_second {
        1 => 0,
        1_000 => sub * 1_000,
        1_000_000 => sub,
        _ => sub / 1_000,
    };
    let dt = chrono::DateTime::from_timestamp(seconds, 0)?.naive_utc();
    let mut text = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if micros != 0 {
        let fraction = format!("{micros:06}");
        text.push('.');
        text.push_str(fraction.trim_end_matches('0'));
    }
    if with_zone {
        text.push_str("+00");
    }
    Some(text)
}

/// Shortest round-trip digits, in exponent form when the decimal exponent
/// is below -4 or at least `digits` (Postgres' float8out/float4out).
fn float_text(v: f64, digits: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Fast path, most values: whole numbers print as integers.
    if v.fract() == 0.0 && v.abs() < 10f64.powi(digits) {
        return format!("{}", v as i64);
    }
    // `{:e}` gives the shortest round-trip digits: "-1.05e1".
    let sci = format!("{v:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    if exp < -4 || exp >= digits {
        let e_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{e_sign}{:02}", exp.abs());
    }
    let all: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{}", "0".repeat(point.unsigned_abs() as usize), all)
    } else if (point as usize) >= all.len() {
        format!("{}{}", all, "0".repeat(point as usize - all.len()))
    } else {
        format!("{}.{}", &all[..point as usize], &all[point as usize..])
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::float_text;

    #[test]
    fn timestamps_and_dates_print_like_postgres() {
        use super::{date_text, timestamp_text};
        assert_eq!(date_text(0).unwrap(), "1970-01-01");
        assert_eq!(date_text(20468).unwrap(), "2026-01-15");
        assert_eq!(
            timestamp_text(1_768_471_200_000_000, 1_000_000, true).unwrap(),
            "2026-01-15 10:00:00+00"
        );
        assert_eq!(
            timestamp_text(1_768_471_200_250_000, 1_000_000, false).unwrap(),
            "2026-01-15 10:00:00.25"
        );
        assert_eq!(
            timestamp_text(-1, 1_000_000, false).unwrap(),
            "1969-12-31 23:59:59.999999"
        );
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(float_text(50.0, 15), "50");
        assert_eq!(float_text(10.5, 15), "10.5");
        assert_eq!(float_text(-0.25, 15), "-0.25");
        assert_eq!(float_text(0.1 + 0.2, 15), "0.30000000000000004");
        assert_eq!(float_text(1e20, 15), "1e+20");
        assert_eq!(float_text(1.5e-5, 15), "1.5e-05");
        assert_eq!(float_text(0.0001, 15), "0.0001");
        assert_eq!(float_text(123456789012345.0, 15), "123456789012345");
        assert_eq!(float_text(f64::INFINITY, 15), "Infinity");
        assert_eq!(float_text(60000.0, 15), "60000");
    }
}
