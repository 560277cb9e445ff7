//! Arrow batches → pgwire rows, through arrow-pg (the only caller of it).
//! An error while rows stream becomes a statement error with its SQLSTATE,
//! not arrow-pg's bare XX000.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{Datelike, Timelike};
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Float32Type, Float64Type, IntervalDayTimeType,
    IntervalMonthDayNanoType, IntervalUnit, IntervalYearMonthType, Schema, SchemaRef, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::arrow::error::ArrowError;
use datafusion::common::ParamValues;
use datafusion::execution::SendableRecordBatchStream;
use futures::{stream, StreamExt};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse};
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;

use crate::sqlstate::user_error;

/// Column descriptions for a result schema in the requested formats.
pub fn fields(schema: &Schema, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    let (sent, _) = as_sent(schema);
    arrow_pg::datatypes::arrow_schema_to_pg_fields(&sent, format, None)
}

/// A result column's name as the client sees it: without the mark of a
/// repeated name (`lakegres_sql::REPEATED_NAME_MARK`).
pub fn sent_name(name: &str) -> &str {
    name.split(lakegres_sql::REPEATED_NAME_MARK)
        .next()
        .unwrap_or(name)
}

/// The schema as sent: columns no Postgres type carries (MAP, arrays of
/// arrays) become text, their Databricks text; and which those are. A
/// repeated column name loses its mark (`lakegres_sql::REPEATED_NAME_MARK`).
/// Most results need neither, and are sent as they are.
fn as_sent(schema: &Schema) -> (Cow<'_, Schema>, Vec<usize>) {
    let untyped: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| sent_as_text(f.data_type()))
        .map(|(i, _)| i)
        .collect();
    let marked = schema
        .fields()
        .iter()
        .any(|f| f.name().contains(lakegres_sql::REPEATED_NAME_MARK));
    if untyped.is_empty() && !marked {
        return (Cow::Borrowed(schema), untyped);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = f.as_ref().clone().with_name(sent_name(f.name()));
            if untyped.contains(&i) {
                f.with_data_type(DataType::Utf8)
            } else {
                f
            }
        })
        .collect();
    (Cow::Owned(Schema::new(fields)), untyped)
}

/// Whether a column goes as its Databricks text: no Postgres type carries
/// it (MAP, arrays of arrays), or it holds a STRUCT, which would otherwise
/// go as an anonymous Postgres record (`(Main,123)`) that drivers cannot
/// split without a catalog type.
fn sent_as_text(data_type: &DataType) -> bool {
    fn has_struct(data_type: &DataType) -> bool {
        match data_type {
            DataType::Struct(_) => true,
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                has_struct(f.data_type())
            }
            _ => false,
        }
    }
    has_struct(data_type) || arrow_pg::datatypes::into_pg_type(data_type).is_err()
}

/// The Postgres type of an Arrow type (for parameter descriptions).
pub fn pg_type(data_type: &DataType) -> Type {
    arrow_pg::datatypes::into_pg_type(data_type).unwrap_or(Type::UNKNOWN)
}

/// A portal's parameters as values of the types the plan inferred (where
/// it could), one value for each `$n`. A NULL of no type (neither declared
/// by the client nor inferred) is an untyped NULL, as in Postgres: arrow-pg
/// left it out of the list, which moved every later parameter to the `$n`
/// before it, so it is read here as a text NULL, which arrow-pg keeps in
/// place, and then made untyped. (A type declared `unknown` is no type:
/// see [`crate::extended`]'s Bind.)
pub fn parameters<S: Clone>(
    portal: &Portal<S>,
    types: &[Option<DataType>],
) -> PgWireResult<ParamValues> {
    let declared = &portal.statement.parameter_types;
    let count = portal.parameter_len();
    let untyped_null: Vec<bool> = (0..count)
        .map(|i| {
            portal.parameters.get(i).is_some_and(Option::is_none)
                && declared.get(i).cloned().flatten().is_none()
                && types.get(i).cloned().flatten().is_none()
        })
        .collect();
    let text = DataType::Utf8;
    // A number the client declared float or numeric is read as declared:
    // the statement was planned with `$n` of that type
    // (lakegres_sql::declared_params), and arrow-pg's coercion to another
    // type refuses a float for a DECIMAL and reads a NUMERIC that does not
    // fit an integer as NULL. A declared integer in an integer place is
    // range-checked into it by arrow-pg.
    let inferred: Vec<Option<&DataType>> = (0..count)
        .map(|i| match types.get(i) {
            _ if untyped_null[i] => Some(&text),
            Some(Some(t))
                if declared_number(declared.get(i).cloned().flatten().as_ref())
                    .is_some_and(|d| !widens(&d, t)) =>
            {
                None
            }
            Some(t) => t.as_ref(),
            None => None,
        })
        .collect();
    let values = match plain_numerics(portal) {
        Some(plain) => arrow_pg::datatypes::df::deserialize_parameters(&plain, &inferred)?,
        None => arrow_pg::datatypes::df::deserialize_parameters(portal, &inferred)?,
    };
    fits_precision(&values)?;
    if !untyped_null.contains(&true) {
        return Ok(values);
    }
    let ParamValues::List(values) = values else {
        return Err(PgWireError::ApiError(
            "positional parameters came back named".into(),
        ));
    };
    Ok(ParamValues::List(
        values
            .into_iter()
            .zip(untyped_null)
            .map(|(value, null)| {
                if null {
                    datafusion::common::ScalarValue::Null.into()
                } else {
                    value
                }
            })
            .collect(),
    ))
}

/// Refuses a NUMERIC parameter arrow-pg rescaled into a DECIMAL place
/// whose precision its digits exceed (Postgres' "numeric field
/// overflow"), which would otherwise be written as another number.
fn fits_precision(values: &ParamValues) -> PgWireResult<()> {
    let ParamValues::List(values) = values else {
        return Ok(());
    };
    for (i, value) in values.iter().enumerate() {
        if let datafusion::common::ScalarValue::Decimal128(Some(v), p, s) = value.value {
            use datafusion::arrow::datatypes::{Decimal128Type, DecimalType};
            if !Decimal128Type::is_valid_decimal_precision(v, p) {
                return Err(PgWireError::UserError(Box::new(crate::sqlstate::info(
                    lakegres_common::SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                    format!(
                        "numeric field overflow: parameter ${} does not fit DECIMAL({p},{s})",
                        i + 1
                    ),
                    None,
                ))));
            }
        }
    }
    Ok(())
}

/// Whether an integer declared `declared` goes into an integer place of
/// type `place` without a range check that could fail.
fn widens(declared: &DataType, place: &DataType) -> bool {
    declared.is_integer()
        && place.is_integer()
        && place.primitive_width() >= declared.primitive_width()
}

/// The portal with its text NUMERIC parameters in exponent notation
/// (`1E+20`, as Python's Decimal writes them; Postgres reads them) written
/// out in plain digits, which arrow-pg's reader takes; `None` when there
/// is none.
fn plain_numerics<S: Clone>(portal: &Portal<S>) -> Option<Portal<S>> {
    let declared = &portal.statement.parameter_types;
    let mut parameters = portal.parameters.clone();
    let mut changed = false;
    for (i, value) in parameters.iter_mut().enumerate() {
        let numeric = declared.get(i).cloned().flatten() == Some(Type::NUMERIC);
        let text = match &portal.parameter_format {
            Format::UnifiedText => true,
            Format::UnifiedBinary => false,
            Format::Individual(codes) => match codes.as_slice() {
                [one] => *one == 0,
                codes => codes.get(i) == Some(&0),
            },
        };
        let Some(bytes) = value.as_ref().filter(|_| numeric && text) else {
            continue;
        };
        let Some(plain) = std::str::from_utf8(bytes).ok().and_then(plain_decimal) else {
            continue;
        };
        *value = Some(plain.into_bytes().into());
        changed = true;
    }
    if !changed {
        return None;
    }
    // Only the parameters are read from the copy.
    let codes = match &portal.parameter_format {
        Format::UnifiedText => Vec::new(),
        Format::UnifiedBinary => vec![1],
        Format::Individual(codes) => codes.clone(),
    };
    let bind =
        pgwire::messages::extendedquery::Bind::new(None, None, codes, parameters, Vec::new());
    Portal::try_new(&bind, Arc::clone(&portal.statement)).ok()
}

/// `text` (`-1.5E+3`) in plain digits (`-1500`); `None` when it has no
/// exponent or is not a number (left for the reader to refuse), or its
/// exponent is beyond any DECIMAL.
fn plain_decimal(text: &str) -> Option<String> {
    let (mantissa, exponent) = text.trim().split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok().filter(|e: &i64| e.abs() <= 100)?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Where the decimal point goes, counted in digits from the left.
    let point = whole.len() as i64 + exponent;
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    Some(format!("{sign}{plain}"))
}

/// The Arrow type of a number parameter the client declared (`None` for
/// other types, which are read as the plan types them): what
/// [`lakegres_sql::declared_params`] plans `$n` with. A NUMERIC's digits
/// are its value's; this is the type a statement is described with.
pub fn declared_number(declared: Option<&Type>) -> Option<DataType> {
    Some(match declared? {
        t if *t == Type::INT2 => DataType::Int16,
        t if *t == Type::INT4 => DataType::Int32,
        t if *t == Type::INT8 => DataType::Int64,
        t if *t == Type::FLOAT4 => DataType::Float32,
        t if *t == Type::FLOAT8 => DataType::Float64,
        t if *t == Type::NUMERIC => DataType::Decimal128(38, 10),
        _ => return None,
    })
}

/// The declared types of a portal's parameters, as
/// [`lakegres_sql::Session::declare_parameters`] takes them: a NUMERIC
/// declared is the type of the value that came.
pub fn declared_types<S: Clone>(portal: &Portal<S>, values: &ParamValues) -> Vec<Option<DataType>> {
    let ParamValues::List(values) = values else {
        return Vec::new();
    };
    portal
        .statement
        .parameter_types
        .iter()
        .zip(values)
        .map(|(declared, value)| {
            lakegres_sql::declared_params::declared_type(
                declared_number(declared.as_ref()),
                &value.value,
            )
        })
        .collect()
}

/// How a result's columns go out in one set of formats: their
/// descriptions (the RowDescription) and which columns become text before
/// arrow-pg encodes them. A prepared statement keeps its text-format one
/// (extended.rs): it is run again and again with the same columns.
#[derive(Debug)]
pub struct ResultColumns {
    /// The schema it was made for.
    schema: SchemaRef,
    fields: Arc<Vec<FieldInfo>>,
    /// Columns no Postgres type carries, sent as their Databricks text.
    untyped: Arc<[usize]>,
    /// Text-format columns whose text is made here ([`as_postgres_text`]).
    text_floats: Arc<[usize]>,
}

impl ResultColumns {
    pub fn new(schema: SchemaRef, format: &Format) -> PgWireResult<Self> {
        let (sent, untyped) = as_sent(&schema);
        let fields = arrow_pg::datatypes::arrow_schema_to_pg_fields(&sent, format, None)?;
        let text_floats: Vec<usize> = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.format() == FieldFormat::Text
                    && matches!(
                        *f.datatype(),
                        Type::FLOAT4
                            | Type::FLOAT8
                            | Type::TIMESTAMP
                            | Type::TIMESTAMPTZ
                            | Type::DATE
                            | Type::INTERVAL
                            | Type::NUMERIC
                    )
            })
            .map(|(i, _)| i)
            .collect();
        Ok(Self {
            schema,
            fields: Arc::new(fields),
            untyped: untyped.into(),
            text_floats: text_floats.into(),
        })
    }

    /// The column descriptions.
    pub fn fields(&self) -> &[FieldInfo] {
        &self.fields
    }

    /// Whether a result of `schema` goes out as this one does: the same
    /// column names and types.
    pub fn fits(&self, schema: &Schema) -> bool {
        let (ours, theirs) = (self.schema.fields(), schema.fields());
        ours.len() == theirs.len()
            && ours
                .iter()
                .zip(theirs.iter())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type())
    }
}

/// A streaming row response in `format`; batches are encoded as the
/// client reads them. Its command tag is left as it is: the handlers send
/// CommandComplete.
pub fn query_response(
    batches: SendableRecordBatchStream,
    format: &Format,
    zone: Zone,
) -> PgWireResult<QueryResponse> {
    let columns = ResultColumns::new(batches.schema(), format)?;
    Ok(query_response_as(batches, &columns, zone))
}

/// The session's time zone, which TIMESTAMP values are shown in (text
/// format; binary values are instants): `None` for UTC.
pub type Zone = Option<chrono_tz::Tz>;

/// The zone named by a session's `TimeZone` setting (`None`: UTC or a
/// name that is no zone).
pub fn zone(setting: Option<&str>) -> Zone {
    let tz: chrono_tz::Tz = setting?.trim().parse().ok()?;
    (tz != chrono_tz::UTC).then_some(tz)
}

/// The zone a result of `schema` is shown in: the session's (`setting`,
/// asked only when a column holds instants).
pub fn zone_for(schema: &Schema, setting: impl FnOnce() -> Option<String>) -> Zone {
    let instants = schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Timestamp(_, Some(_))));
    if instants {
        zone(setting().as_deref())
    } else {
        None
    }
}

/// A streaming row response whose columns go out as `columns` says (which
/// must [`ResultColumns::fits`] the batches).
pub fn query_response_as(
    batches: SendableRecordBatchStream,
    columns: &ResultColumns,
    zone: Zone,
) -> QueryResponse {
    let row_fields = Arc::clone(&columns.fields);
    let untyped = Arc::clone(&columns.untyped);
    let text_floats = Arc::clone(&columns.text_floats);
    let rows = batches
        .map(
            move |batch| -> Box<dyn Iterator<Item = PgWireResult<DataRow>> + Send> {
                let batch = batch
                    .and_then(|b| as_databricks_text(b, &untyped))
                    .and_then(|b| {
                        as_postgres_text(b, &text_floats, zone).map_err(|e| {
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
    QueryResponse::new(Arc::clone(&columns.fields), rows)
}

/// `columns` of `batch` as their Databricks text (see [`query_response`]).
fn as_databricks_text(
    batch: RecordBatch,
    columns: &[usize],
) -> datafusion::error::Result<RecordBatch> {
    with_text_columns(batch, columns, |a| {
        lakegres_sql::databricks_text(a.as_ref()).map(Some)
    })
}

/// Text-format columns whose Postgres text arrow-pg gets wrong or makes
/// slowly are turned into text here; the column keeps its type in the row
/// description, and binary format is left as it is.
///
/// - floats: Postgres prints `50`, `1e+20`, `Infinity`; arrow-pg `50.0`,
///   `1e20`, `inf`;
/// - timestamps and dates: arrow-pg parses a strftime pattern for every
///   value (a quarter of the time of a `SELECT *`), and prints `.000000`
///   where Postgres prints no fraction;
/// - decimals of more than 28 digits (or scale): arrow-pg's numeric holds
///   28 and refused them.
fn as_postgres_text(
    batch: RecordBatch,
    columns: &[usize],
    zone: Zone,
) -> Result<RecordBatch, ArrowError> {
    with_text_columns(batch, columns, |a| Ok(postgres_text(a, zone)))
}

/// `columns` of `batch` replaced by the text `text` makes of them (None:
/// left as they are).
fn with_text_columns<E: From<ArrowError>>(
    batch: RecordBatch,
    columns: &[usize],
    text: impl Fn(&ArrayRef) -> Result<Option<StringArray>, E>,
) -> Result<RecordBatch, E> {
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
        let Some(text) = text(array)? else {
            continue;
        };
        arrays[i] = Arc::new(text);
        *field = field.clone().with_data_type(DataType::Utf8);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// The Postgres text of a float, date or timestamp column (see
/// [`as_postgres_text`]); `None` for other types.
fn postgres_text(array: &ArrayRef, zone: Zone) -> Option<StringArray> {
    Some(match array.data_type() {
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
        DataType::Date32 => text_array(array.as_primitive::<Date32Type>().iter(), write_date),
        // arrow-pg's numeric holds 28 digits: DECIMAL(38, 34) failed.
        DataType::Decimal128(precision, scale) if *precision > 28 || *scale > 28 => {
            let text = cast(array, &DataType::Utf8).ok()?;
            text.as_string::<i32>().clone()
        }
        // arrow-pg sends a NULL interval as `00:00:00`.
        DataType::Interval(IntervalUnit::MonthDayNano) => array
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|v| {
                v.map(|v| {
                    let (months, days, nanos) = IntervalMonthDayNanoType::to_parts(v);
                    pg_interval::Interval::new(months, days, nanos / 1000).to_postgres()
                })
            })
            .collect(),
        DataType::Interval(IntervalUnit::YearMonth) => array
            .as_primitive::<IntervalYearMonthType>()
            .iter()
            .map(|v| v.map(|months| pg_interval::Interval::new(months, 0, 0).to_postgres()))
            .collect(),
        DataType::Interval(IntervalUnit::DayTime) => array
            .as_primitive::<IntervalDayTimeType>()
            .iter()
            .map(|v| {
                v.map(|v| {
                    let (days, millis) = IntervalDayTimeType::to_parts(v);
                    pg_interval::Interval::new(0, days, i64::from(millis) * 1000).to_postgres()
                })
            })
            .collect(),
        DataType::Timestamp(unit, tz) => {
            // An instant is shown in the session's zone, with its offset;
            // a time without a zone as it is.
            let with_zone = tz.is_some().then_some(zone);
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
            text_array(values.into_iter(), |out, v| {
                write_timestamp(out, v, per_second, with_zone)
            })
        }
        _ => return None,
    })
}

/// Whether [`copy_text_columns`] renders every column of `schema`.
pub fn copy_text_supported(schema: &Schema) -> bool {
    schema.fields().iter().all(|f| {
        matches!(
            f.data_type(),
            DataType::Boolean
                | DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal128(..)
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Date32
                | DataType::Timestamp(..)
        )
    })
}

/// Every column of a batch as its Postgres text (the text SELECT sends),
/// for COPY TO to write straight from, without building DataRows (instants
/// in UTC).
pub fn copy_text_columns(batch: &RecordBatch) -> Result<Vec<StringArray>, ArrowError> {
    batch
        .columns()
        .iter()
        .map(|array| {
            if let Some(text) = postgres_text(array, None) {
                return Ok(text);
            }
            match array.data_type() {
                DataType::Boolean => Ok(array
                    .as_boolean()
                    .iter()
                    .map(|v| v.map(|v| if v { "t" } else { "f" }))
                    .collect()),
                DataType::Utf8 => Ok(array.as_string::<i32>().clone()),
                _ => {
                    let text = cast(array, &DataType::Utf8)?;
                    Ok(text.as_string::<i32>().clone())
                }
            }
        })
        .collect()
}

/// A string column built from values by `write`, which appends one value's
/// text to a reused buffer (or says the value has none: NULL).
fn text_array<T>(
    values: impl Iterator<Item = Option<T>>,
    mut write: impl FnMut(&mut String, T) -> bool,
) -> StringArray {
    let mut builder = StringBuilder::new();
    let mut text = String::with_capacity(40);
    for value in values {
        text.clear();
        match value {
            Some(v) => {
                if write(&mut text, v) {
                    builder.append_value(&text)
                } else {
                    builder.append_null()
                }
            }
            None => builder.append_null(),
        }
    }
    builder.finish()
}

/// `value` in decimal, zero-padded to `width` digits; without `format!`,
/// which was most of the time of a COPY TO of a timestamp column.
fn push_digits(out: &mut String, value: u32, width: usize) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut v = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for _ in (digits.len() - at)..width {
        out.push('0');
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// `YYYY-MM-DD`; false for a date outside years 0–9999.
fn push_date(out: &mut String, date: chrono::NaiveDate) -> bool {
    let Ok(year) = u32::try_from(date.year()) else {
        return false;
    };
    if year > 9999 {
        return false;
    }
    push_digits(out, year, 4);
    out.push('-');
    push_digits(out, date.month(), 2);
    out.push('-');
    push_digits(out, date.day(), 2);
    true
}

/// `YYYY-MM-DD` of days since the epoch.
fn write_date(out: &mut String, days: i32) -> bool {
    let Some(date) = days
        .checked_add(719_163)
        .and_then(chrono::NaiveDate::from_num_days_from_ce_opt)
    else {
        return false;
    };
    if !push_date(out, date) {
        out.push_str(&format!(
            "{:04}-{:02}-{:02}",
            date.year(),
            date.month(),
            date.day()
        ));
    }
    true
}

#[cfg(test)]
fn date_text(days: i32) -> Option<String> {
    let mut text = String::new();
    write_date(&mut text, days).then_some(text)
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff][+00]` of a UTC timestamp, as Postgres
/// prints it with DateStyle ISO and TimeZone UTC: trailing zeros of the
/// fraction dropped, no fraction at all when it is zero.
fn write_timestamp(out: &mut String, value: i64, per_second: i64, with_zone: Option<Zone>) -> bool {
    let seconds = value.div_euclid(per_second);
    // The offset from UTC of the instant in the session's zone.
    let offset: i32 = match with_zone {
        Some(Some(tz)) => chrono::DateTime::from_timestamp(seconds, 0).map_or(0, |t| {
            use chrono::{Offset, TimeZone};
            tz.offset_from_utc_datetime(&t.naive_utc())
                .fix()
                .local_minus_utc()
        }),
        _ => 0,
    };
    let seconds = seconds + i64::from(offset);
    let sub = value.rem_euclid(per_second);
    let micros = match per_second {
        1 => 0,
        1_000 => sub * 1_000,
        1_000_000 => sub,
        _ => sub / 1_000,
    };
    let Some(dt) = chrono::DateTime::from_timestamp(seconds, 0).map(|t| t.naive_utc()) else {
        return false;
    };
    if !push_date(out, dt.date()) {
        out.push_str(&format!(
            "{:04}-{:02}-{:02}",
            dt.year(),
            dt.month(),
            dt.day()
        ));
    }
    out.push(' ');
    push_digits(out, dt.hour(), 2);
    out.push(':');
    push_digits(out, dt.minute(), 2);
    out.push(':');
    push_digits(out, dt.second(), 2);
    if micros != 0 {
        out.push('.');
        let mut fraction = micros as u32;
        let mut width = 6;
        while fraction.is_multiple_of(10) {
            fraction /= 10;
            width -= 1;
        }
        push_digits(out, fraction, width);
    }
    if with_zone.is_some() {
        // Postgres' form: `+00`, `-05`, `+05:30`, `-07:52:58` (a local
        // mean time of old dates).
        out.push(if offset < 0 { '-' } else { '+' });
        let offset = offset.unsigned_abs();
        push_digits(out, offset / 3600, 2);
        if !offset.is_multiple_of(3600) {
            out.push(':');
            push_digits(out, offset / 60 % 60, 2);
        }
        if !offset.is_multiple_of(60) {
            out.push(':');
            push_digits(out, offset % 60, 2);
        }
    }
    true
}

#[cfg(test)]
fn timestamp_text(value: i64, per_second: i64, with_zone: bool) -> Option<String> {
    let mut text = String::new();
    write_timestamp(&mut text, value, per_second, with_zone.then_some(None)).then_some(text)
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
    #[test]
    fn numerics_in_exponent_notation_are_written_out() {
        use super::plain_decimal;
        assert_eq!(
            plain_decimal("1E+20").as_deref(),
            Some("100000000000000000000")
        );
        assert_eq!(plain_decimal("-1.5e3").as_deref(), Some("-1500"));
        assert_eq!(plain_decimal("1.25E+1").as_deref(), Some("12.5"));
        assert_eq!(plain_decimal("12E-3").as_deref(), Some("0.012"));
        assert_eq!(plain_decimal("1.5"), None);
        assert_eq!(plain_decimal("1E+999"), None);
        assert_eq!(plain_decimal("xE1"), None);
    }
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
        assert_eq!(
            timestamp_text(1_500, 1_000, false).unwrap(),
            "1970-01-01 00:00:01.5"
        );
        assert_eq!(
            timestamp_text(1_000_010_000, 1_000_000_000, false).unwrap(),
            "1970-01-01 00:00:01.00001"
        );
        // Past year 9999 the year takes more digits.
        assert_eq!(date_text(2_932_897).unwrap(), "10000-01-01");
    }

    #[test]
    fn instants_print_in_the_session_zone() {
        let text = |seconds: i64, zone: &str| {
            let mut out = String::new();
            let zone = super::zone(Some(zone));
            super::write_timestamp(&mut out, seconds, 1, Some(zone)).then_some(out)
        };
        // 2024-01-01 15:00 UTC.
        assert_eq!(
            text(1_704_121_200, "America/New_York").unwrap(),
            "2024-01-01 10:00:00-05"
        );
        assert_eq!(
            text(1_704_121_200, "Asia/Kolkata").unwrap(),
            "2024-01-01 20:30:00+05:30"
        );
        assert_eq!(
            text(1_704_121_200, "UTC").unwrap(),
            "2024-01-01 15:00:00+00"
        );
        // Year 1 in Los Angeles: local mean time, -07:52:58.
        assert_eq!(
            text(-62_135_596_800, "America/Los_Angeles").unwrap(),
            "0000-12-31 16:07:02-07:52:58"
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
