//! Arrow batches → pgwire rows, through arrow-pg (the only caller of it).
//! An error while rows stream becomes a statement error with its SQLSTATE,
//! not arrow-pg's bare XX000.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float32Array, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
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
            f.format() == FieldFormat::Text && matches!(*f.datatype(), Type::FLOAT4 | Type::FLOAT8)
        })
        .map(|(i, _)| i)
        .collect();
    let rows = batches
        .map(
            move |batch| -> Box<dyn Iterator<Item = PgWireResult<DataRow>> + Send> {
                let batch = batch.and_then(|b| {
                    floats_as_postgres_text(b, &text_floats).map_err(|e| {
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

/// Postgres prints floats in text format as `50`, `1e+20`, `Infinity`;
/// arrow-pg prints `50.0`, `1e20`, `inf`. Text-format float columns are
/// turned into their Postgres text here (the column keeps its float type in
/// the row description; binary format is left as it is).
fn floats_as_postgres_text(
    batch: RecordBatch,
    columns: &[usize],
) -> Result<RecordBatch, ArrowError> {
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
        let text: StringArray = if let Some(a) = array.as_any().downcast_ref::<Float64Array>() {
            a.iter().map(|v| v.map(|v| float_text(v, 15))).collect()
        } else if let Some(a) = array.as_any().downcast_ref::<Float32Array>() {
            a.iter()
                .map(|v| v.map(|v| float_text(f64::from(v), 6)))
                .collect()
        } else {
            continue;
        };
        arrays[i] = Arc::new(text);
        *field = field.clone().with_data_type(DataType::Utf8);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
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
