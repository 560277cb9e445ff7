//! Casts that can fail, as ANSI mode fails them
//! (<https://docs.databricks.com/sql/language-manual/functions/cast.html>):
//! a number that does not fit its target is `CAST_OVERFLOW` (22003) —
//! `CAST_OVERFLOW_IN_TABLE_INSERT` when it is written to a column — or
//! `NUMERIC_VALUE_OUT_OF_RANGE` (22003) for a decimal; a string that is no
//! number is `CAST_INVALID_INPUT` (22018) — blanks around it are trimmed,
//! and `'1.9'` is no INT (ANSI mode does not truncate strings). A value
//! whose type cannot be cast at all is refused when the statement is
//! planned.
//!
//! Two ways in: an analyzer rule ([`AnsiCasts`], beside the one for casts
//! to STRING) turns the casts of a query that can fail into
//! `lakegres_cast(x, 'Int32')`, and every write path casts each value to its
//! column's type with [`store_assignment`] (`lakegres_cast(x, 'Int32',
//! 'column')`). Widening casts — every cast type coercion adds — stay
//! DataFusion's, so predicate pushdown and pruning see them as before.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{lit, ColumnarValue, Expr, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;

use super::error::{df, FunctionError};
use super::udf::{Arg, Call, Returns, Udf};

/// The function's name (hidden from SHOW FUNCTIONS by its prefix).
pub const NAME: &str = "lakegres_cast";

/// The one instance every store assignment and rewritten cast calls.
static SHARED: std::sync::LazyLock<Arc<ScalarUDF>> = std::sync::LazyLock::new(|| Arc::new(udf()));

/// `lakegres_cast(x, type [, column [, 'varchar(n)']])`: the last names a
/// CHAR / VARCHAR column's limit, which a value may not exceed.
pub(crate) fn udf() -> ScalarUDF {
    Udf::new(
        NAME,
        &[
            &[Arg::Any, Arg::Str],
            &[Arg::Any, Arg::Str, Arg::Str],
            &[Arg::Any, Arg::Str, Arg::Str, Arg::Str],
        ],
        Returns::Computed(target_type),
        kernel,
    )
    .build()
}

/// `value` cast to the type of `column`, as Databricks' store assignment
/// casts it on INSERT, MERGE, UPDATE and COPY.
pub fn store_assignment(value: Expr, to: &DataType, column: &str) -> Expr {
    let (plain, text) = type_text(to);
    let cast = Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::clone(&SHARED),
        vec![value, lit(text), lit(column)],
    ));
    if plain == *to {
        cast
    } else {
        // The column's nested fields carry metadata the text cannot: a
        // plain cast puts it back, as the plan's schema expects.
        Expr::Cast(Cast::new(Box::new(cast), to.clone()))
    }
}

/// A type as the function's literal: nested fields lose their metadata
/// (a STRUCT field's comment), which Arrow's type parser cannot read and
/// values do not need. Returns that plain type and its text.
fn type_text(to: &DataType) -> (DataType, String) {
    fn plain(field: &Field) -> Field {
        Field::new(
            field.name(),
            plain_type(field.data_type()),
            field.is_nullable(),
        )
    }
    fn plain_type(data_type: &DataType) -> DataType {
        match data_type {
            DataType::Struct(fields) => {
                DataType::Struct(fields.iter().map(|f| plain(f)).collect::<Vec<_>>().into())
            }
            DataType::List(f) => DataType::List(Arc::new(plain(f))),
            DataType::LargeList(f) => DataType::LargeList(Arc::new(plain(f))),
            DataType::Map(f, sorted) => DataType::Map(Arc::new(plain(f)), *sorted),
            other => other.clone(),
        }
    }
    let plain = plain_type(to);
    let text = plain.to_string();
    (plain, text)
}

/// [`store_assignment`] into the column whose Arrow field is `to`: a CHAR
/// or VARCHAR column's declared limit (Delta's field metadata, which comes
/// along in the field) is checked too, as MERGE writes through the storage
/// layer, which knows nothing of it.
pub fn store_assignment_into(value: Expr, to: &Field, column: &str) -> Expr {
    let Some(declared) = to
        .metadata()
        .get(lakegres_common::char_varchar::CHAR_VARCHAR_TYPE)
    else {
        return store_assignment(value, to.data_type(), column);
    };
    let (plain, text) = type_text(to.data_type());
    let cast = Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::clone(&SHARED),
        vec![value, lit(text), lit(column), lit(declared.as_str())],
    ));
    if plain == *to.data_type() {
        cast
    } else {
        Expr::Cast(Cast::new(Box::new(cast), to.data_type().clone()))
    }
}

fn target_type(args: &[DataType], literals: &[Option<&ScalarValue>]) -> Result<DataType> {
    let text = match literals.get(1) {
        Some(Some(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        )) => s,
        _ => {
            return Err(DataFusionError::Plan(format!(
                "{NAME} takes its target type as a literal"
            )))
        }
    };
    let to = text
        .parse::<DataType>()
        .map_err(|e| DataFusionError::Plan(format!("{NAME}: {e}")))?;
    if let Some(from) = args.first() {
        if !datafusion::arrow::compute::can_cast_types(from, &to) {
            let column = match literals.get(2) {
                Some(Some(ScalarValue::Utf8(Some(c)))) => c.clone(),
                _ => String::new(),
            };
            return Err(df(FunctionError::CannotSafelyCast {
                from: sql_type(from),
                to: sql_type(&to),
                column,
            }));
        }
    }
    Ok(to)
}

fn kernel(c: &Call) -> Result<ColumnarValue> {
    let input = c.array(0)?;
    let column = match c.args.get(2) {
        Some(ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        )) => Some(s.as_str()),
        _ => None,
    };
    // Text and unzoned times going into a TIMESTAMP are read in the
    // session's zone.
    let input = match local_zone(c.config)
        .and_then(|zone| in_zone(input.data_type(), c.return_type, &zone))
    {
        Some(local) => cast_with_options(&input, &local, &CastOptions::default())?,
        None => input,
    };
    let cast = cast_checked(&input, c.return_type, column)?;
    let declared = match c.args.get(3) {
        Some(ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        )) => lakegres_common::char_varchar::CharVarchar::parse(s),
        _ => None,
    };
    if let Some(declared) = declared {
        let strings = datafusion::arrow::compute::cast(&cast, &DataType::Utf8)?;
        let too_long = strings
            .as_string::<i32>()
            .iter()
            .any(|s| s.is_some_and(|s| s.chars().count() > declared.length));
        if too_long {
            return Err(df(FunctionError::ExceedLimitLength {
                limit: declared.length,
            }));
        }
    }
    Ok(ColumnarValue::Array(cast))
}

/// The session's time zone when it is not UTC (`SET TIME ZONE`).
pub(crate) fn local_zone(config: &ConfigOptions) -> Option<String> {
    let zone = config.execution.time_zone.as_deref()?;
    (super::udf::session_time_zone(config) != chrono_tz::UTC).then(|| zone.to_string())
}

/// The type a value of type `from` is read as first on its way to `to` in
/// the session's time `zone`: a text or a timestamp without a zone going to
/// a TIMESTAMP (an instant) is a time of day in the session's zone, as
/// Databricks and Postgres read `'2024-01-01 10:00'`; `None` for other
/// casts.
fn in_zone(from: &DataType, to: &DataType, zone: &str) -> Option<DataType> {
    let DataType::Timestamp(unit, Some(target)) = to else {
        return None;
    };
    let unzoned = is_string(from) || matches!(from, DataType::Timestamp(_, None));
    (unzoned && target.as_ref() != zone).then(|| DataType::Timestamp(*unit, Some(zone.into())))
}

/// Casts `input` to `to`, failing on the first value that does not fit or
/// is malformed, with Databricks' error for it.
pub fn cast_checked(input: &ArrayRef, to: &DataType, column: Option<&str>) -> Result<ArrayRef> {
    if input.data_type() == to {
        return Ok(Arc::clone(input));
    }
    if input.data_type() == &DataType::Null {
        return Ok(datafusion::arrow::array::new_null_array(to, input.len()));
    }
    if let (true, DataType::List(element)) = (is_string(input.data_type()), to) {
        return text_arrays(input, element);
    }
    let options = CastOptions {
        safe: true,
        ..Default::default()
    };
    // Spark's interval text; what is none is NULL, as in Spark.
    if is_string(input.data_type()) && matches!(to, DataType::Interval(_)) {
        let strings = cast_with_options(input, &DataType::Utf8, &CastOptions::default())?;
        let texts: StringArray = strings
            .as_string::<i32>()
            .iter()
            .map(|s| s.and_then(|s| super::interval_text::normalized(s, true)))
            .collect();
        return Ok(cast_with_options(
            &(Arc::new(texts) as ArrayRef),
            to,
            &options,
        )?);
    }
    let mut output = cast_with_options(input, to, &options)?;
    // Only strings that fail as they are are read again without blanks.
    if output.null_count() != input.null_count() && is_string(input.data_type()) && to.is_numeric()
    {
        output = cast_with_options(&trimmed(input)?, to, &options)?;
    }
    if output.null_count() == input.null_count() {
        return Ok(output);
    }
    let Some(row) = (0..input.len()).find(|&i| input.is_valid(i) && output.is_null(i)) else {
        return Ok(output);
    };
    let value = ArrayFormatter::try_new(input.as_ref(), &FormatOptions::default())?
        .value(row)
        .to_string();
    let from = sql_type(input.data_type());
    let target = sql_type(to);
    Err(df(if is_string(input.data_type()) {
        FunctionError::CastInvalidInput {
            value,
            from: "STRING",
            to: target,
        }
    } else if let DataType::Decimal128(precision, scale) | DataType::Decimal256(precision, scale) =
        to
    {
        FunctionError::DecimalOutOfRange {
            value,
            precision: *precision,
            scale: *scale,
        }
    } else if let Some(column) = column {
        FunctionError::CastOverflowInTableInsert {
            from,
            to: target,
            column: column.to_string(),
        }
    } else {
        FunctionError::CastOverflow {
            value,
            from,
            to: target,
        }
    }))
}

/// Strings as Spark reads them as numbers: blanks trimmed (`' 12 '` → 12).
fn trimmed(input: &ArrayRef) -> Result<ArrayRef> {
    let strings = cast_with_options(input, &DataType::Utf8, &CastOptions::default())?;
    let out: StringArray = strings
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::trim))
        .collect();
    Ok(Arc::new(out))
}

/// Texts of Postgres arrays (`{1,2,NULL}`, `{"a b","c"}`) as lists of
/// `element`'s type, each element cast as [`cast_checked`] casts; a text
/// that is not one fails (Arrow's cast would make it a list of one NULL).
fn text_arrays(input: &ArrayRef, element: &Arc<Field>) -> Result<ArrayRef> {
    use datafusion::arrow::array::{ListArray, StringBuilder};
    use datafusion::arrow::buffer::OffsetBuffer;
    let texts = cast_with_options(input, &DataType::Utf8, &CastOptions::default())?;
    let texts = texts.as_string::<i32>();
    let mut values = StringBuilder::new();
    let mut lengths = Vec::with_capacity(texts.len());
    for text in texts.iter() {
        let Some(text) = text else {
            lengths.push(0);
            continue;
        };
        let elements = pg_array_elements(text).ok_or_else(|| {
            df(FunctionError::CastInvalidInput {
                value: text.to_string(),
                from: "STRING",
                to: format!("ARRAY<{}>", sql_type(element.data_type())),
            })
        })?;
        lengths.push(elements.len());
        for e in elements {
            values.append_option(e);
        }
    }
    let values: ArrayRef = Arc::new(values.finish());
    let values = cast_checked(&values, element.data_type(), None)?;
    Ok(Arc::new(ListArray::try_new(
        Arc::clone(element),
        OffsetBuffer::from_lengths(lengths),
        values,
        texts.nulls().cloned(),
    )?))
}

/// The elements of a one-dimensional Postgres array's text (`None` for
/// NULL); `None` when the text is not one. (pgwire's array reader takes a
/// quoted `"NULL"` and `""` for NULL, and flattens nested arrays.)
fn pg_array_elements(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Some(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '"' => break,
                    c => value.push(c),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                match c {
                    ',' => break,
                    '{' | '}' | '"' => return None,
                    c => value.push(c),
                }
                chars.next();
            }
            value = value.trim().to_string();
        }
        out.push((quoted || !value.eq_ignore_ascii_case("NULL")).then_some(value));
        match chars.next() {
            None => return Some(out),
            Some(',') => continue,
            Some(_) => return None,
        }
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// A type as Databricks names it in its error messages.
pub(crate) fn sql_type(t: &DataType) -> String {
    match t {
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "STRING".into(),
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("DECIMAL({p},{s})"),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BINARY".into(),
        other => other.to_string().to_uppercase(),
    }
}

/// Whether a cast from `from` to `to` can fail on a value: a string to a
/// number, or a number to a narrower one. Casts to floating point never
/// fail (a value out of range is infinite, as in Spark).
fn can_fail(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return false;
    }
    let digits = |t: &DataType| -> Option<i16> {
        Some(match t {
            DataType::Int8 | DataType::UInt8 => 3,
            DataType::Int16 | DataType::UInt16 => 5,
            DataType::Int32 | DataType::UInt32 => 10,
            DataType::Int64 | DataType::UInt64 => 20,
            DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
                i16::from(*p) - i16::from(*s)
            }
            _ => return None,
        })
    };
    if is_string(from) {
        return to.is_integer()
            || matches!(
                to,
                DataType::Decimal128(..) | DataType::Decimal256(..) | DataType::Interval(_)
            );
    }
    if !(from.is_numeric()) {
        return false;
    }
    match to {
        t if t.is_integer() => match (from.is_integer(), digits(from), digits(t)) {
            (true, Some(f), Some(t)) => f > t || (f == t && from != to),
            _ => true,
        },
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => {
            match (digits(from), digits(to)) {
                (Some(f), Some(t)) => {
                    f > t
                        || matches!(from, DataType::Decimal128(_, fs) | DataType::Decimal256(_, fs) if fs > s)
                }
                _ => true,
            }
        }
        _ => false,
    }
}

/// See the module comment.
#[derive(Debug, Default)]
pub(crate) struct AnsiCasts;

impl AnalyzerRule for AnsiCasts {
    fn name(&self) -> &str {
        "databricks_ansi_casts"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let udf = Arc::clone(&SHARED);
        let zone = local_zone(config);
        super::cast::rewrite_casts(plan, |cast, source| {
            let Expr::Cast(Cast { expr, field }) = cast else {
                return Ok(None);
            };
            if let Some(local) = zone
                .as_deref()
                .and_then(|z| in_zone(source, field.data_type(), z))
            {
                let local = Expr::Cast(Cast::new(expr.clone(), local));
                return Ok(Some(Expr::Cast(Cast::new(
                    Box::new(local),
                    field.data_type().clone(),
                ))));
            }
            // ANSI mode casts no number to BINARY.
            if source.is_numeric()
                && matches!(
                    field.data_type(),
                    DataType::Binary | DataType::LargeBinary | DataType::BinaryView
                )
            {
                return Err(df(FunctionError::mismatch(
                    "CAST",
                    format!(
                        "cannot cast {} to BINARY with ANSI mode on",
                        sql_type(source)
                    ),
                )));
            }
            if !can_fail(source, field.data_type()) {
                return Ok(None);
            }
            // A literal is cast now: a value that cannot be cast fails the
            // statement before it reads anything.
            if let Expr::Literal(value, _) = expr.as_ref() {
                let out = cast_checked(&value.to_array()?, field.data_type(), None)?;
                return Ok(Some(Expr::Literal(
                    ScalarValue::try_from_array(&out, 0)?,
                    None,
                )));
            }
            Ok(Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(&udf),
                vec![expr.as_ref().clone(), lit(field.data_type().to_string())],
            ))))
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn postgres_array_texts() {
        use super::pg_array_elements as e;
        let s = |v: &str| Some(v.to_string());
        assert_eq!(e("{1,2, 3}"), Some(vec![s("1"), s("2"), s("3")]));
        assert_eq!(e("{}"), Some(vec![]));
        assert_eq!(
            e("{NULL,\"NULL\",\"a,b\",\"q\\\"x\"}"),
            Some(vec![None, s("NULL"), s("a,b"), s("q\"x")])
        );
        assert_eq!(e("{{1,2},{3,4}}"), None);
        assert_eq!(e("1,2"), None);
    }
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array};

    #[test]
    fn narrowing_and_parsing_can_fail_widening_cannot() {
        assert!(can_fail(&DataType::Int64, &DataType::Int32));
        assert!(can_fail(&DataType::Float64, &DataType::Int64));
        assert!(can_fail(&DataType::Utf8, &DataType::Int32));
        assert!(can_fail(
            &DataType::Decimal128(10, 2),
            &DataType::Decimal128(5, 2)
        ));
        assert!(can_fail(
            &DataType::Decimal128(10, 3),
            &DataType::Decimal128(10, 2)
        ));
        assert!(!can_fail(&DataType::Int32, &DataType::Int64));
        assert!(!can_fail(&DataType::Int32, &DataType::Float64));
        assert!(!can_fail(&DataType::Int32, &DataType::Decimal128(10, 0)));
        assert!(can_fail(&DataType::Int32, &DataType::Decimal128(9, 0)));
        assert!(!can_fail(&DataType::Utf8, &DataType::Date32));
    }

    #[test]
    fn errors_name_the_value_and_the_column() {
        let big: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3_000_000_000)]));
        let e = cast_checked(&big, &DataType::Int32, Some("v")).unwrap_err();
        assert!(
            e.to_string().contains("[CAST_OVERFLOW_IN_TABLE_INSERT]"),
            "{e}"
        );
        let e = cast_checked(&big, &DataType::Int32, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("[CAST_OVERFLOW] The value 3000000000"),
            "{e}"
        );
        let d: ArrayRef = Arc::new(Float64Array::from(vec![12345.0]));
        let e = cast_checked(&d, &DataType::Decimal128(5, 2), Some("d")).unwrap_err();
        assert!(
            e.to_string().contains("[NUMERIC_VALUE_OUT_OF_RANGE]"),
            "{e}"
        );
        let s: ArrayRef = Arc::new(StringArray::from(vec![" 12 ", "1.9"]));
        let e = cast_checked(&s, &DataType::Int32, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("[CAST_INVALID_INPUT] The value '1.9'"),
            "{e}"
        );
        let ok: ArrayRef = Arc::new(StringArray::from(vec![" 12 ", "-3"]));
        let out = cast_checked(&ok, &DataType::Int32, None).unwrap();
        let out = out.as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        assert_eq!(out.values().to_vec(), vec![12, -3]);
    }
}
