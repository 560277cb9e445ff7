//! `INSERT INTO t [(columns)] VALUES (…), …` whose values are all literals,
//! appended without planning a query: the literals become the table's
//! column arrays here, cast by the same store assignment
//! ([`cast_checked`]) the planned path applies, and go to the table's group
//! commit as rows ([`lakegres_delta::append`]).
//!
//! Applications and ingestion services send exactly these statements, one
//! row at a time, with literals or bound parameters (`$1`); planning each
//! cost more than appending its row. Anything
//! this path does not read with certainty — an expression, a typed or
//! escaped literal, a mix of types in one column, a value whose cast would
//! fail, a table whose rows need checks or generated values — leaves the
//! statement to the planned path, which gives every error its usual form.

use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ParamValues, ScalarValue};
use lakegres_delta::Table;
use lakegres_delta::TableName;
use lakegres_functions::ansi_cast::cast_checked;
use sqlparser::ast::{self, Expr, SetExpr, UnaryOperator, Value};

use crate::error::Result;
use crate::parser::Insert;
use crate::statement_context::StatementContext;

/// Appends the rows of the Databricks INSERT `ins` to `table` when they
/// are literals the table takes as they are; `None` (nothing done) leaves
/// the statement to the planned path.
pub(crate) async fn append(
    cx: &StatementContext<'_>,
    name: &TableName,
    table: &Table,
    ins: &Insert,
    params: Option<&ParamValues>,
) -> Result<Option<u64>> {
    if ins.overwrite
        || ins.replace.is_some()
        || ins.by_name
        || ins.schema_evolution
        || !ins.partition.is_empty()
    {
        return Ok(None);
    }
    let columns: Option<Vec<&str>> = ins
        .columns
        .as_ref()
        .map(|list| list.iter().map(|c| c.value.as_str()).collect());
    match literal_rows(&ins.query, params) {
        Some(rows) => append_rows(cx, name, table, columns.as_deref(), &rows).await,
        None => Ok(None),
    }
}

/// [`append`] for a plain SQL `INSERT INTO t [(columns)] VALUES …`.
pub(crate) async fn append_sql(
    cx: &StatementContext<'_>,
    ins: &ast::Insert,
    params: Option<&ParamValues>,
) -> Result<Option<u64>> {
    let plain = !ins.overwrite
        && ins.or.is_none()
        && !ins.ignore
        && ins.table_alias.is_none()
        && ins.assignments.is_empty()
        && ins.partitioned.is_none()
        && ins.after_columns.is_empty()
        && ins.on.is_none()
        && ins.returning.is_none()
        && ins.output.is_none()
        && !ins.replace_into
        && ins.priority.is_none()
        && ins.insert_alias.is_none()
        && ins.settings.is_none()
        && ins.format_clause.is_none()
        && ins.multi_table_insert_type.is_none();
    let (ast::TableObject::TableName(table_name), Some(query)) = (&ins.table, &ins.source) else {
        return Ok(None);
    };
    // Cheap checks first: most statements that are not literals stop here.
    if !plain {
        return Ok(None);
    }
    let Some(rows) = literal_rows(query, params) else {
        return Ok(None);
    };
    fn single(c: &ast::ObjectName) -> Option<&str> {
        match c.0.as_slice() {
            [part] => part.as_ident().map(|i| i.value.as_str()),
            _ => None,
        }
    }
    let columns: Option<Vec<&str>> = if ins.columns.is_empty() {
        None
    } else {
        match ins.columns.iter().map(single).collect() {
            Some(columns) => Some(columns),
            None => return Ok(None),
        }
    };
    // A view, a path or a missing table: the planned path says what it is.
    let Ok(name) = crate::names::table_name(cx, table_name) else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let Ok(table) = cx.catalog().table_to_append(&name).await else {
        return Ok(None);
    };
    tracing::trace!(table = %name, load_us = started.elapsed().as_micros() as u64, "appending literals");
    append_rows(cx, &name, &table, columns.as_deref(), &rows).await
}

async fn append_rows(
    cx: &StatementContext<'_>,
    name: &TableName,
    table: &Table,
    columns: Option<&[&str]>,
    rows: &[Vec<ScalarValue>],
) -> Result<Option<u64>> {
    let Some(appendable) = lakegres_delta::append::appendable(table, cx.committed()) else {
        return Ok(None);
    };
    let Some(batch) = batch_of(&appendable.schema, columns, rows) else {
        return Ok(None);
    };
    Ok(Some(appendable.append(name, batch).await?))
}

/// The rows of a bare `VALUES` list, when every value is a literal or a
/// bound parameter.
fn literal_rows(query: &ast::Query, params: Option<&ParamValues>) -> Option<Vec<Vec<ScalarValue>>> {
    let bare = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && query.locks.is_empty()
        && query.settings.is_none()
        && query.format_clause.is_none()
        && query.pipe_operators.is_empty();
    let SetExpr::Values(values) = query.body.as_ref() else {
        return None;
    };
    if !bare || values.rows.is_empty() {
        return None;
    }
    values
        .rows
        .iter()
        .map(|row| row.content.iter().map(|e| literal(e, params)).collect())
        .collect()
}

/// A literal as the planner types it — an integer is an INT when it fits,
/// else a BIGINT; a number with a point is a DECIMAL of its digits — or a
/// parameter's bound value.
fn literal(e: &Expr, params: Option<&ParamValues>) -> Option<ScalarValue> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Null => Some(ScalarValue::Null),
            Value::Boolean(b) => Some(ScalarValue::Boolean(Some(*b))),
            Value::Number(n, false) => number(n, false),
            // Backslashes are escapes to Databricks: the planned path
            // reads them.
            Value::SingleQuotedString(s) if !s.contains('\\') => {
                Some(ScalarValue::Utf8(Some(s.clone())))
            }
            Value::Placeholder(id) => {
                let value = params?.get_placeholders_with_values(id).ok()?;
                // A value with metadata (an extension type) is the planner's.
                value.metadata.is_none().then_some(value.value)
            }
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, false) => number(n, true),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// Digits with at most one point; anything else (exponents, suffixes)
/// is the planner's to read.
fn number(text: &str, negative: bool) -> Option<ScalarValue> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    if !text.contains('.') {
        let value: i64 = whole.parse().ok()?;
        let value = if negative { -value } else { value };
        return Some(match i32::try_from(value) {
            Ok(small) => ScalarValue::Int32(Some(small)),
            Err(_) => ScalarValue::Int64(Some(value)),
        });
    }
    let all = format!("{whole}{fraction}");
    let unscaled: i128 = all.parse().ok()?;
    let scale = u8::try_from(fraction.len()).ok()?;
    let significant = all.trim_start_matches('0').len().max(1);
    let precision = u8::try_from(significant).ok()?.max(scale);
    if precision > 38 || scale == 0 {
        return None;
    }
    Some(ScalarValue::Decimal128(
        Some(if negative { -unscaled } else { unscaled }),
        precision,
        scale as i8,
    ))
}

/// Whether a value of type `from` goes into a column of type `to` by a
/// plain conversion of its value (numbers into numbers, text into text).
fn assignable(from: &DataType, to: &DataType) -> bool {
    let number_to = matches!(
        to,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
    );
    match from {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => number_to,
        DataType::Float32 | DataType::Float64 => {
            matches!(to, DataType::Float32 | DataType::Float64)
        }
        DataType::Decimal128(..) => matches!(
            to,
            DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
        ),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => matches!(
            to,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ),
        DataType::Boolean => to == &DataType::Boolean,
        // A parameter of the column's own type (a date, a timestamp)
        // needs no conversion at all.
        other => other == to,
    }
}

/// The table's columns from `rows`, in `columns` order (the table's when
/// absent, which must then name every column once).
fn batch_of(
    schema: &datafusion::arrow::datatypes::SchemaRef,
    columns: Option<&[&str]>,
    rows: &[Vec<ScalarValue>],
) -> Option<RecordBatch> {
    let fields = schema.fields();
    // For each table column, the position of its value in a row.
    let positions: Vec<usize> = match columns {
        None => (0..fields.len()).collect(),
        Some(list) => {
            if list.len() != fields.len() {
                return None;
            }
            let mut positions = vec![usize::MAX; fields.len()];
            for (at, column) in list.iter().enumerate() {
                let i = fields
                    .iter()
                    .position(|f| f.name().eq_ignore_ascii_case(column))?;
                if positions[i] != usize::MAX {
                    return None;
                }
                positions[i] = at;
            }
            positions
        }
    };
    if rows.iter().any(|row| row.len() != fields.len()) {
        return None;
    }
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(fields.len());
    for (field, &at) in fields.iter().zip(&positions) {
        let values = rows.iter().map(|row| &row[at]);
        let mut types = values
            .clone()
            .filter(|v| !v.is_null())
            .map(ScalarValue::data_type);
        let Some(from) = types.next() else {
            arrays.push(new_null_array(field.data_type(), rows.len()));
            continue;
        };
        if types.any(|t| t != from) || !assignable(&from, field.data_type()) {
            return None;
        }
        let typed_null = ScalarValue::try_from(&from).ok()?;
        let array = ScalarValue::iter_to_array(values.map(|v| {
            if v.is_null() {
                typed_null.clone()
            } else {
                v.clone()
            }
        }))
        .ok()?;
        // A value the cast refuses: the planned path says so, in its words.
        arrays.push(cast_checked(&array, field.data_type(), Some(field.name())).ok()?);
    }
    RecordBatch::try_new(Arc::clone(schema), arrays).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_typed_as_the_planner_types_them() {
        assert_eq!(number("7", false), Some(ScalarValue::Int32(Some(7))));
        assert_eq!(
            number("3000000000", true),
            Some(ScalarValue::Int64(Some(-3_000_000_000)))
        );
        assert_eq!(
            number("1.50", true),
            Some(ScalarValue::Decimal128(Some(-150), 3, 2))
        );
        assert_eq!(
            number("0.05", false),
            Some(ScalarValue::Decimal128(Some(5), 2, 2))
        );
        // Exponents, suffixes and numbers too long for a BIGINT are left
        // to the planner.
        assert_eq!(number("1e3", false), None);
        assert_eq!(number("99999999999999999999", false), None);
        assert_eq!(number(".5", false), None);
    }

    #[test]
    fn only_plain_conversions_are_taken() {
        assert!(assignable(&DataType::Int32, &DataType::Int64));
        assert!(assignable(&DataType::Decimal128(3, 2), &DataType::Float64));
        assert!(assignable(&DataType::Date32, &DataType::Date32));
        assert!(!assignable(&DataType::Utf8, &DataType::Int32));
        assert!(!assignable(&DataType::Int32, &DataType::Utf8));
        assert!(!assignable(&DataType::Decimal128(3, 2), &DataType::Int32));
        assert!(!assignable(
            &DataType::Float64,
            &DataType::Decimal128(10, 2)
        ));
    }
}
