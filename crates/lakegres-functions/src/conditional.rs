//! Conditional functions DataFusion lacks
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#conditional-functions>):
//! `equal_null`, `isnull`, `isnotnull`, `assert_true`, `raise_error`.
//! datafusion-spark provides `if` (also `iff`); DataFusion `coalesce`,
//! `nullif`, `nvl2`, `greatest`, `least`; `nvl` and `ifnull` are planned as
//! `coalesce` (rewrite.rs); `decode(expr, search, result, …)` is
//! rewritten into CASE (rewrite.rs).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::SortOptions;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{bool_rows, Arg, Call, Returns, Udf, BOOLEAN};

use Arg::{Any, Str};

static NULL: datafusion::arrow::datatypes::DataType = datafusion::arrow::datatypes::DataType::Null;

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("equal_null", &[&[Any, Any]], Returns::Fixed(&BOOLEAN), equal_null)
            .describe("equal_null(expr1, expr2) - Returns true if expr1 equals expr2 or both are NULL, false otherwise.")
            .build(),
        Udf::new("assert_true", &[&[Any], &[Any, Str]], Returns::Fixed(&NULL), assert_true)
            .describe("assert_true(condition [, message]) - Returns NULL if condition is true; raises an error otherwise.")
            .build(),
        Udf::new("isnull", &[&[Any]], Returns::Fixed(&BOOLEAN), |c| null_test(c, true))
            .describe("isnull(expr) - Returns true if expr is NULL, or false otherwise.")
            .build(),
        Udf::new("isnotnull", &[&[Any]], Returns::Fixed(&BOOLEAN), |c| null_test(c, false))
            .describe("isnotnull(expr) - Returns true if expr is not NULL, or false otherwise.")
            .build(),
        Udf::new("raise_error", &[&[Str]], Returns::Fixed(&NULL), raise_error)
            .volatile()
            .describe("raise_error(message) - Raises an error with message.")
            .build(),
        Udf::new(REFUSE, &[&[Str, Str, Str]], Returns::Fixed(&NULL), refuse)
            .volatile()
            .build(),
    ]
}

/// `lakegres_refuse(kind, a, b)`: what the statement rewrite put in place
/// of a form Databricks refuses when it reads the statement (it has no
/// error of its own to raise): `datetime_unit` (function, unit),
/// `numeric_literal` (text, type) and `interval_literal` (text, reason).
pub(crate) const REFUSE: &str = "lakegres_refuse";

fn refuse(c: &Call) -> Result<ColumnarValue> {
    let (kind, a, b) = (c.str(0)?, c.str(1)?, c.str(2)?);
    let text = |s: Option<&str>| s.unwrap_or("NULL").to_string();
    Err(df(match kind.get(0) {
        Some("datetime_unit") => FunctionError::DatetimeUnitString {
            function: text(a.get(0)),
            unit: text(b.get(0)),
        },
        Some("numeric_literal") => FunctionError::NumericLiteralRange {
            value: text(a.get(0)),
            type_name: text(b.get(0)),
        },
        _ => FunctionError::InvalidIntervalLiteral {
            value: text(a.get(0)),
            reason: text(b.get(0)),
        },
    }))
}

fn equal_null(c: &Call) -> Result<ColumnarValue> {
    let (a, b) = (c.array(0)?, c.array(1)?);
    let t = datafusion::logical_expr::type_coercion::binary::comparison_coercion(
        a.data_type(),
        b.data_type(),
    )
    .unwrap_or_else(|| a.data_type().clone());
    let (a, b): (ArrayRef, ArrayRef) = (
        datafusion::arrow::compute::cast(&a, &t)?,
        datafusion::arrow::compute::cast(&b, &t)?,
    );
    let compare =
        datafusion::arrow::array::make_comparator(a.as_ref(), b.as_ref(), SortOptions::default())?;
    bool_rows(a.len(), |i| {
        Ok(Some(match (a.is_null(i), b.is_null(i)) {
            (true, true) => true,
            (false, false) => compare(i, i).is_eq(),
            _ => false,
        }))
    })
}

fn assert_true(c: &Call) -> Result<ColumnarValue> {
    let a = datafusion::arrow::compute::cast(
        &c.array(0)?,
        &datafusion::arrow::datatypes::DataType::Boolean,
    )?;
    let messages = if c.args.len() == 2 {
        Some(c.str(1)?)
    } else {
        None
    };
    let flags = datafusion::arrow::array::AsArray::as_boolean(&a);
    for i in 0..flags.len() {
        if flags.is_null(i) || !flags.value(i) {
            let message = messages
                .as_ref()
                .and_then(|m| m.get(i))
                .map(str::to_string)
                .unwrap_or_else(|| "'condition' is not true!".to_string());
            return Err(df(FunctionError::UserRaised { message }));
        }
    }
    Ok(ColumnarValue::Array(Arc::new(
        datafusion::arrow::array::NullArray::new(a.len()),
    )))
}

fn raise_error(c: &Call) -> Result<ColumnarValue> {
    let messages = c.str(0)?;
    if c.len() > 0 {
        let message = messages.get(0).unwrap_or("NULL").to_string();
        return Err(df(FunctionError::UserRaised { message }));
    }
    Ok(ColumnarValue::Scalar(ScalarValue::Null))
}

fn null_test(c: &Call, is_null: bool) -> Result<ColumnarValue> {
    let values = c.array(0)?;
    let nulls = values.logical_nulls();
    bool_rows(values.len(), |i| {
        Ok(Some(
            nulls.as_ref().is_some_and(|n| n.is_null(i)) == is_null,
        ))
    })
}
